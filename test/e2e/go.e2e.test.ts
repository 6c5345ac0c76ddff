// The provider plugin as a Go user has it: the generated Go SDK (sdk/go), the plugin installed from
// the archive `npm run plugin:pack` makes into the user's PULUMI_HOME (never found on PATH), and
// examples/go, an Automation API inline program, run as a user runs it: `go run .` in a copy of the
// folder outside the repository, its replace of the SDK pointed at this repository's sdk/go, with
// the committed go.sum (no -mod=mod). Also: the committed SDKs are what scripts/gen-sdks/run makes
// from the schema now.
// The first `go run` compiles the Pulumi SDK: about 100 s on 2 cores with an empty Go build cache.
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { NO_DELAYS, Simulator } from "../../simulator";
import { shellEnv, succeeds } from "../support/lab/shell";

jest.setTimeout(900_000);
const ROOT = path.join(__dirname, "..", "..");
const VERSION = (JSON.parse(fs.readFileSync(path.join(ROOT, "package.json"), "utf8")) as { version: string }).version;
const { packPlugin } = require("../../scripts/pack-plugin") as { packPlugin: () => string };
const SDK_MODULE = "github.com/tigercloud/pulumi-tigercloud/sdk/go";

let sim: Simulator;
let work: string;

/** A Go user's shell: the CLI and Go on PATH, a file backend, a passphrase, the key pair and project. */
function userEnv(): NodeJS.ProcessEnv {
  return shellEnv(work, "go-e2e", {
    // Its own, to see that the example leaves nothing there.
    TMPDIR: path.join(work, "tmp"),
    TIGER_API_URL: sim.url,
    TIGER_PUBLIC_KEY: sim.keyPair.publicKey,
    TIGER_SECRET_KEY: sim.keyPair.secretKey,
    TIGER_PROJECT_ID: sim.defaults().projectId,
  });
}

/** Runs a command without blocking (the simulator answers from this same process); fails unless it exits 0. */
const ok = (cwd: string, command: string, args: string[], env = userEnv()) => succeeds(cwd, command, args, env);

/** The API calls that changed something, as the simulator logged them. */
const changes = () =>
  sim
    .requests()
    .filter((r) => r.method !== "GET")
    .map((r) => r.operation);
const forksOf = (name: string) =>
  sim.services(sim.defaults().projectId).filter((x) => x.name === name && x.forked_from?.service_id === sim.defaults().serviceId);

/** Every file under dir, by its path relative to dir. */
function files(dir: string): Map<string, Buffer> {
  const found = new Map<string, Buffer>();
  const walk = (sub: string) => {
    for (const entry of fs.readdirSync(path.join(dir, sub), { withFileTypes: true })) {
      const rel = path.join(sub, entry.name);
      if (entry.isDirectory()) walk(rel);
      else found.set(rel, fs.readFileSync(path.join(dir, rel)));
    }
  };
  walk("");
  return found;
}

beforeAll(async () => {
  sim = new Simulator({ delays: { ...NO_DELAYS, forkQueuedMs: 300, forkConfiguringMs: 300, stopMs: 300, setHAMs: 300 } });
  await sim.start();
  // Outside the repository: nothing resolves from it but the SDK the replace names.
  work = fs.mkdtempSync(path.join(os.tmpdir(), "tigercloud-go-"));
  fs.mkdirSync(path.join(work, "state"));
  fs.mkdirSync(path.join(work, "tmp"));
  await ok(work, "pulumi", ["plugin", "install", "resource", "tigercloud", VERSION, "--file", packPlugin()]);
});
afterAll(async () => {
  await sim?.stop();
  if (work) fs.rmSync(work, { recursive: true, force: true });
});

test("examples/go, as a user runs it: go run . up (update, a preview with no changes, refresh), the connection secret; go run . destroy deletes the fork", async () => {
  const dir = path.join(work, "go");
  fs.cpSync(path.join(ROOT, "examples", "go"), dir, { recursive: true });
  // What a user who copies the example does: point the replace at the SDK.
  await ok(dir, "go", ["mod", "edit", `-replace=${SDK_MODULE}=${path.join(ROOT, "sdk", "go")}`]);
  const { serviceId, vpcId } = sim.defaults();

  sim.clearLog();
  const up = await ok(dir, "go", ["run", ".", "-source-service", serviceId, "-vpc", vpcId, "up"]);
  process.stderr.write(`go run . up: ${up.seconds.toFixed(1)} s\n`);
  expect(up.output).toMatch(/\+ 4 created/);
  expect(up.output).toContain("previewing, expecting no changes...");
  expect(up.output).toContain("refreshing...");
  expect(up.output).toMatch(/^ {2}connectionUri: \[secret\]$/m);
  expect(up.output).toMatch(/^ {2}vpcName: analytics-vpc$/m);

  const forks = forksOf("go-fork");
  expect(forks).toHaveLength(1);
  const fork = sim.service(sim.defaults().projectId, forks[0]!.service_id)!;
  expect(fork.status).toBe("READY");
  expect(fork.ha_replicas?.replica_count).toBe(1);
  expect(sim.vpc(sim.defaults().projectId, vpcId)?.name).toBe("analytics-vpc");
  expect(up.output).toMatch(new RegExp(`^ {2}forkId: ${fork.service_id}$`, "m"));
  // The one fork, the one HA change and the one rename: the preview and the refresh changed nothing.
  expect(changes().sort()).toEqual(["forkService", "renameVpc", "setHA"]);

  // The connection string is stored as a secret: only ciphertext in the state file.
  const uri = (
    await ok(work, "pulumi", ["stack", "output", "connectionUri", "--show-secrets", "--stack", "organization/tigercloud-go/dev"])
  ).output.trim();
  expect(uri).toMatch(/^postgresql:\/\/tsdbadmin:.+@/);
  const password = decodeURIComponent(new URL(uri).password);
  const state = fs.readFileSync(path.join(work, "state", ".pulumi", "stacks", "tigercloud-go", "dev.json"), "utf8");
  expect(state).not.toContain(password);
  expect(state).not.toContain("postgresql://");
  expect(state).not.toContain(sim.keyPair.secretKey);

  // Run again: the stack is up to date, so nothing is made.
  sim.clearLog();
  const again = await ok(dir, "go", ["run", ".", "-source-service", serviceId, "-vpc", vpcId, "up"]);
  process.stderr.write(`go run . up, again: ${again.seconds.toFixed(1)} s\n`);
  expect(changes()).toEqual([]);
  expect(forksOf("go-fork")).toHaveLength(1);

  const destroyed = await ok(dir, "go", ["run", ".", "destroy"]);
  expect(destroyed.output).toMatch(/- 4 deleted/);
  // The example deletes its fork (onDestroy: delete).
  expect(sim.service(sim.defaults().projectId, fork.service_id)?.status ?? "DELETED").toBe("DELETED");
  // Each run's workspace folder (the project and stack settings) is gone with it. The plugin's
  // book of what a run declares stays for the last run only: each plugin that starts removes the
  // books of engines that have ended.
  const left = fs.readdirSync(path.join(work, "tmp"));
  expect(left.filter((f) => !f.startsWith("pulumi-tigercloud-runs-"))).toEqual([]);
  for (const books of left) expect(fs.readdirSync(path.join(work, "tmp", books)).length).toBeLessThanOrEqual(1);
});

test("the committed SDKs, and the examples in every language, are what scripts/gen-sdks/run makes from the schema now", async () => {
  const out = path.join(work, "sdk");
  const gen = await ok(ROOT, path.join(ROOT, "scripts", "gen-sdks", "run"), [out], { ...process.env });
  process.stderr.write(`scripts/gen-sdks/run: ${gen.seconds.toFixed(1)} s\n`);
  for (const language of ["go", "python", "dotnet", "examples"]) {
    const made = files(path.join(out, language));
    const committed = files(path.join(ROOT, "sdk", language));
    expect([...committed.keys()].sort()).toEqual([...made.keys()].sort());
    const stale = [...made].filter(([file, bytes]) => !committed.get(file)?.equals(bytes)).map(([file]) => file);
    // Regenerate with scripts/gen-sdks/run and commit sdk/.
    expect(stale).toEqual([]);
  }
});

test("every Go example in the resources' documentation builds against the Go SDK", async () => {
  const examples = fs.readdirSync(path.join(ROOT, "sdk", "examples")).sort();
  expect(examples.length).toBeGreaterThanOrEqual(3);
  // One module, each example a command of its own, built at once: the SDK and Pulumi's compile once.
  const dir = path.join(work, "go-examples");
  fs.mkdirSync(dir);
  fs.copyFileSync(path.join(ROOT, "examples", "go", "go.mod"), path.join(dir, "go.mod"));
  fs.copyFileSync(path.join(ROOT, "examples", "go", "go.sum"), path.join(dir, "go.sum"));
  await ok(dir, "go", ["mod", "edit", "-module=examples", `-replace=${SDK_MODULE}=${path.join(ROOT, "sdk", "go")}`]);
  for (const name of examples) {
    fs.mkdirSync(path.join(dir, name));
    fs.copyFileSync(path.join(ROOT, "sdk", "examples", name, "main.go"), path.join(dir, name, "main.go"));
  }
  // -mod=mod: the examples import packages (config) that examples/go does not, whose requirements go adds.
  const built = await ok(dir, "go", ["vet", "-mod=mod", "./..."]);
  process.stderr.write(`go vet of ${examples.length} examples: ${built.seconds.toFixed(1)} s\n`);
});
