// The local Tiger Cloud's command line, run as `tigercloud-simulator` (main.ts: npx
// tigercloud-simulator, or npm run simulator here), and by the provider plugin (`pulumi plugin run
// --kind resource tigercloud -- simulator`) for users with no npm project: serves a local Tiger Cloud
// until stopped. The first line of output is one line of
// JSON (url, apiKey, publicKey, secretKey, projectId, serviceId, vpcId); then an `export` line for a
// shell, then notes.
import * as fs from "fs";
import * as path from "path";
import { NO_DELAYS, REALISTIC_DELAYS, Simulator } from "./index";

const usage = (name: string) => `Usage: ${name} [options]

A local Tiger Cloud on 127.0.0.1 for tests: the API the provider and the official tiger CLI call,
with a PostgreSQL server behind each service where PostgreSQL is installed.

Options:
  --port N             listen on port N (default: any free port)
  --seed FILE          projects, services and VPCs from FILE (JSON, the SeedData format)
  --fast               no status delays (READY at once); default: delays like the real service's
  --api-key KEY        the bearer API key (default: a random one)
  --public-key KEY     the key pair's public key, sent as HTTP Basic (default: a random one)
  --secret-key KEY     the key pair's secret key (default: a random one)
  --stand-in           no PostgreSQL servers: a stand-in behind each service that accepts a login only
  --version            the version of pulumi-tigercloud this simulator comes with
  -h, --help           this text`;

const VALUED = ["--port", "--seed", "--api-key", "--public-key", "--secret-key"];
const FLAGS = ["--fast", "--stand-in", "--help", "--version"];

function parse(argv: string[]): Map<string, string | true> {
  const options = new Map<string, string | true>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === "-h") options.set("--help", true);
    else if (FLAGS.includes(arg)) options.set(arg, true);
    else if (VALUED.includes(arg)) {
      const value = argv[++i];
      if (value === undefined || value.startsWith("--")) throw new Error(`${arg} needs a value`);
      options.set(arg, value);
    } else throw new Error(`unknown option ${JSON.stringify(arg)}`);
  }
  return options;
}

/** The version of the package this file came in: simulator/cli.ts here, dist/simulator/cli.js installed. */
function installedVersion(): string {
  for (const up of ["..", path.join("..", "..")]) {
    try {
      const pkg = JSON.parse(fs.readFileSync(path.join(__dirname, up, "package.json"), "utf8")) as { name?: string; version?: string };
      if (pkg.name === "pulumi-tigercloud" && pkg.version) return pkg.version;
    } catch {
      // not there: one folder further up
    }
  }
  return "unknown";
}

export interface SimulatorCommand {
  /** The command as the person typed it, for usage and messages. */
  name?: string;
  /** The package's version (the plugin, which bundles this file, knows its own). */
  version?: string;
  /**
   * End when the process that started this one ends. `pulumi plugin run` starts the plugin in a
   * process group of its own, so the Ctrl-C that ends it does not reach the simulator.
   */
  endWithParent?: boolean;
}

/** Serves a local Tiger Cloud until SIGINT or SIGTERM (or, with endWithParent, its parent's end). */
export async function runSimulator(argv: string[], command: SimulatorCommand = {}): Promise<void> {
  const { name = "tigercloud-simulator", version = installedVersion() } = command;
  let options: Map<string, string | true>;
  try {
    options = parse(argv);
  } catch (err) {
    console.error(`${name}: ${(err as Error).message}\n\n${usage(name)}`);
    process.exit(2);
  }
  if (options.has("--help")) {
    console.log(usage(name));
    return;
  }
  if (options.has("--version")) {
    console.log(`${name} (pulumi-tigercloud) ${version}`);
    return;
  }
  const value = (name: string) => options.get(name) as string | undefined;
  const port = value("--port");
  if (port !== undefined && !/^\d+$/.test(port)) {
    console.error(`${name}: --port must be a number, got ${JSON.stringify(port)}`);
    process.exit(2);
  }
  const [publicKey, secretKey] = [value("--public-key"), value("--secret-key")];
  if ((publicKey === undefined) !== (secretKey === undefined)) {
    console.error(`${name}: --public-key and --secret-key go together`);
    process.exit(2);
  }
  const seedFile = value("--seed");
  const apiKey = value("--api-key");
  const sim = new Simulator({
    ...(seedFile ? { seed: Simulator.seedFromFile(seedFile) } : {}),
    ...(port ? { port: Number(port) } : {}),
    ...(apiKey ? { apiKey } : {}),
    ...(publicKey && secretKey ? { keyPair: { publicKey, secretKey } } : {}),
    delays: options.has("--fast") ? NO_DELAYS : REALISTIC_DELAYS,
    databases: options.has("--stand-in") ? "stand-in" : "postgres",
  });
  const url = await sim.start();
  const { publicKey: pk, secretKey: sk } = sim.keyPair;
  console.log(JSON.stringify({ url, apiKey: sim.apiKey, publicKey: pk, secretKey: sk, ...sim.defaults(), projectId: sim.keyProjectId }));
  // The key pair only, as the README's settings say: a bearer key beside it would be one more
  // credential for the provider to choose between (the JSON line above has it, for the tiger CLI).
  console.log(`export TIGER_API_URL=${url} TIGER_PUBLIC_KEY=${pk} TIGER_SECRET_KEY=${sk} TIGER_PROJECT_ID=${sim.keyProjectId}`);
  console.log(`Tiger Cloud API simulator listening on ${url} (Ctrl-C to stop)`);
  console.log(`  databases: ${sim.databases.describe()}`);
  console.log("  credentials: the key pair above (TIGER_PUBLIC_KEY, TIGER_SECRET_KEY), or the JSON line's bearer apiKey, of one project");
  const shutdown = () => void sim.stop().then(() => process.exit(0));
  process.on("SIGINT", shutdown);
  process.on("SIGTERM", shutdown);
  if (command.endWithParent) {
    // An ended parent's child is handed to another (init, or a subreaper): its parent changes.
    const parent = process.ppid;
    setInterval(() => {
      if (process.ppid !== parent) shutdown();
    }, 500).unref();
  }
}
