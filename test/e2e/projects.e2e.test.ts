// Every example, and the root program, run as a user runs them: the `pulumi` CLI in the project's
// directory, with the package installed from the tarball `npm pack` makes (what npm would serve),
// against the simulator. The PR pipeline's script runs verbatim. The Automation API suites assert
// details; these are the proof that the product works as shipped.
import { spawn } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { NO_DELAYS, Simulator } from "../../simulator";
import { packedTarball } from "../support/lab/harness";
import { type Run, runCommand, shellEnv } from "../support/lab/shell";

jest.setTimeout(600_000);
const ROOT = path.join(__dirname, "..", "..");
/** The SDK a user installs today: the main lane's (scripts/toolchain.js). */
const SDK_VERSION = (require("../../scripts/toolchain") as { main: { sdk: string } }).main.sdk;

let sim: Simulator;
let work: string;
let tarball: string;

beforeAll(async () => {
  sim = new Simulator({
    delays: { ...NO_DELAYS, forkQueuedMs: 300, forkConfiguringMs: 300, stopMs: 300, setHAMs: 300 },
    databases: "postgres",
  });
  await sim.start();
  // Outside the repository, so that nothing resolves from its node_modules.
  work = fs.mkdtempSync(path.join(os.tmpdir(), "tigercloud-projects-"));
  tarball = path.join(work, path.basename(packedTarball()));
  fs.copyFileSync(packedTarball(), tarball);
});
afterAll(async () => {
  await sim?.stop();
  if (work) fs.rmSync(work, { recursive: true, force: true });
});

/** The environment a person's shell would have: the CLI on PATH, a file backend, no TIGER_*. */
const cliEnv = (extra: Record<string, string> = {}) => shellEnv(work, "projects-e2e", extra);

/** Runs a command without blocking: the simulator answers from this same process. `onOutput`
 *  sees the output so far as it grows. */
function run(cwd: string, command: string, args: string[], env = cliEnv(), onOutput?: (output: string) => void): Promise<Run> {
  fs.mkdirSync(path.join(work, "state"), { recursive: true });
  return runCommand(cwd, command, args, env, onOutput);
}

async function ok(cwd: string, command: string, args: string[], env?: NodeJS.ProcessEnv): Promise<string> {
  const r = await run(cwd, command, args, env);
  if (r.status !== 0) throw new Error(`${command} ${args.join(" ")} exited ${r.status}:\n${r.output}`);
  return r.output;
}

let installed: Promise<string> | undefined;
/** node_modules as `npm install` of the tarball and the SDK makes them: every example depends on
 *  exactly these two (the first test says so), so one install serves all, each getting a copy. */
function installOnce(): Promise<string> {
  installed ??= (async () => {
    const dir = path.join(work, "installed");
    fs.mkdirSync(dir);
    fs.writeFileSync(path.join(dir, "package.json"), JSON.stringify({ name: "installed", private: true }));
    await ok(dir, "npm", [
      "install",
      "--prefer-offline",
      "--no-audit",
      "--no-fund",
      "--loglevel=error",
      tarball,
      `@pulumi/pulumi@${SDK_VERSION}`,
    ]);
    return path.join(dir, "node_modules");
  })();
  return installed;
}

/** A copy of examples/<name> with its dependencies installed from the tarball, as a user has it. */
async function installExample(name: string): Promise<string> {
  const dir = path.join(work, name);
  fs.cpSync(path.join(ROOT, "examples", name), dir, { recursive: true });
  const modules = path.join(dir, "node_modules");
  // cp, not fs.cpSync, which holds the event loop, and with it the simulator answering from this
  // process. Hard links: nothing an example runs writes into node_modules, and a full copy of it
  // cost about 5 s of CPU per example.
  if (!fs.existsSync(modules)) await ok(dir, "cp", ["-al", await installOnce(), modules]);
  return dir;
}

const EXAMPLE_CONFIG: Record<string, (ids: ReturnType<Simulator["defaults"]>) => Record<string, string>> = {
  demo: (ids) => ({ sourceServiceId: ids.serviceId, vpcId: ids.vpcId }),
  "pr-fork": (ids) => ({ sourceServiceId: ids.serviceId, prNumber: "1234", repository: "acme/shop" }),
  "pitr-investigation": (ids) => ({ sourceServiceId: ids.serviceId, targetTime: "2026-11-01T03:15:00Z" }),
  production: (ids) => ({ serviceId: ids.serviceId, vpcId: ids.vpcId }),
};

/** What each example's first preview reads: the objects its resources refer to, and, as every
 *  example that forks names its fork, the service list for a running fork `up` would take over. */
const PREVIEW_READS: Record<string, string[]> = {
  demo: ["GET getService", "GET getVpc", "GET listServices"],
  "pr-fork": ["GET getService", "GET listServices"],
  "pitr-investigation": ["GET getService", "GET listServices"],
  production: ["GET getService", "GET getVpc"],
};

/** Examples that carry their own test (`npm test`), run below as their users run it. */
const SELF_TESTED = ["testing"];

/** The examples in other languages, each run by a suite of its own, through the provider plugin. */
const OTHER_LANGUAGES: Record<string, string> = { yaml: "plugin.e2e.test.ts", go: "go.e2e.test.ts", python: "python.e2e.test.ts" };

test("every example is a project: Pulumi.yaml, package.json depending on the package, a test configuration or a test of its own", () => {
  const all = fs.readdirSync(path.join(ROOT, "examples"));
  const dirs = all.filter((d) => !(d in OTHER_LANGUAGES));
  expect(all.sort()).toEqual([...Object.keys(EXAMPLE_CONFIG), ...SELF_TESTED, ...Object.keys(OTHER_LANGUAGES)].sort());
  // Another language's example is run by its own suite.
  for (const [d, suite] of Object.entries(OTHER_LANGUAGES))
    expect(fs.readFileSync(path.join(__dirname, suite), "utf8")).toContain(`path.join(ROOT, "examples", "${d}")`);
  for (const d of dirs) {
    expect(fs.readFileSync(path.join(ROOT, "examples", d, "Pulumi.yaml"), "utf8")).toMatch(/^runtime:\n {2}name: nodejs/m);
    const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, "examples", d, "package.json"), "utf8")) as {
      dependencies: Record<string, string>;
    };
    expect(Object.keys(pkg.dependencies).sort()).toEqual(["@pulumi/pulumi", "pulumi-tigercloud"]);
  }
});

test.each(Object.keys(EXAMPLE_CONFIG))(
  "examples/%s in its directory: stack init, config, preview, up, no changes after, output as [secret], destroy, stack rm; no Node.js warning",
  async (name) => {
    const dir = await installExample(name);
    const { projectId, serviceId } = sim.defaults();
    const stack = `e2e-${name}`;
    const transcript: string[] = [];
    const pulumi = async (...args: string[]) => {
      const out = await ok(dir, "pulumi", [...args, "--non-interactive"]);
      transcript.push(out);
      return out;
    };
    await pulumi("stack", "init", stack);
    // One CLI run for all of the stack's config: each run that touches a secret derives the key.
    const plain = { "tigercloud:apiUrl": sim.url, "tigercloud:projectId": projectId, ...EXAMPLE_CONFIG[name]?.(sim.defaults()) };
    await pulumi(
      "config",
      "set-all",
      "--secret",
      `tigercloud:apiKey=${sim.apiKey}`,
      ...Object.entries(plain).flatMap(([key, value]) => ["--plaintext", `${key}=${value}`]),
    );
    sim.clearLog();

    expect(await pulumi("preview")).toMatch(/\+ \d+ to create/);
    expect(
      sim
        .requests()
        .map((r) => `${r.method} ${r.operation}`)
        .sort(),
    ).toEqual(PREVIEW_READS[name]);

    // The preview above was the plan: the up is one engine run, without a preview of its own.
    await pulumi("up", "--yes", "--skip-preview");
    // Every example forks, but production, which declares the HA and the VPC name it already has.
    const forks = sim.services(projectId).filter((s) => s.forked_from);
    expect(forks).toHaveLength(name === "production" ? 0 : 1);
    const fork = forks[0];
    if (fork) expect(fork.status).toBe("READY");
    else expect(sim.service(projectId, serviceId)?.ha_replicas).toEqual({ replica_count: 2, sync_replica_count: 1 });

    sim.clearLog();
    await pulumi("preview", "--expect-no-changes");
    expect(sim.requests()).toEqual([]);
    await pulumi("refresh", "--expect-no-changes", "--yes", "--skip-preview");
    const outputs = await pulumi("stack", "output");
    expect(outputs).toContain(fork ? fork.service_id : "production");
    if (fork && name !== "pitr-investigation") expect(outputs).toMatch(/\[secret\]/);

    await pulumi("destroy", "--yes", "--skip-preview");
    // The PR's fork goes with the PR (onDestroy: "delete"); the others are stopped, kept.
    if (fork) expect(sim.service(projectId, fork.service_id)?.status).toBe(name === "pr-fork" ? "DELETED" : "PAUSED");
    else {
      // Production's HA is retained (retainOnDelete): its destroy leaves the replicas and sends no setHA.
      expect(sim.service(projectId, serviceId)?.ha_replicas).toEqual({ replica_count: 2, sync_replica_count: 1 });
      expect(sim.requests("setHA")).toEqual([]);
      sim.outOfBand.setHA(projectId, serviceId, 0, 0);
    }
    await pulumi("stack", "rm", "--yes");

    const all = transcript.join("\n");
    if (fork) expect(all).not.toContain(fork.initial_password as string);
    expect(all).not.toContain(sim.apiKey);
    // The host and the plugin sit beside the CLI, as in a normal install.
    expect(all).not.toMatch(/from \$PATH/);
    // No Node.js warning between the plan's lines (the SDK loads node:ffi, experimental on Node.js 26).
    expect(all).not.toMatch(/ExperimentalWarning|\(node:\d+\) /);
    if (fork) sim.outOfBand.deleteService(projectId, fork.service_id);
  },
);

test("examples/testing: its own test (node:test) passes in its directory, from the packed tarball: the simulator from the package, the program previewed, deployed with no projectId anywhere, checked and destroyed", async () => {
  const dir = await installExample("testing");
  // What its devDependencies add for the test (pg, for the login) comes with the package here.
  const pkg = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8")) as { devDependencies: Record<string, string> };
  expect(Object.keys(pkg.devDependencies).sort()).toEqual(["@types/node", "pg", "ts-node", "typescript"]);
  expect(fs.existsSync(path.join(dir, "node_modules", "pg", "package.json"))).toBe(true);
  const r = await run(dir, "npm", ["test"]);
  if (r.status !== 0) throw new Error(`npm test in examples/testing exited ${r.status}:\n${r.output}`);
  // node --test's summary: TAP on Node.js 20 ("# pass 3"), its spec reporter on later ones ("ℹ pass 3").
  expect(r.output).toMatch(/^(# |ℹ )pass 3$/m);
  expect(r.output).toMatch(/^(# |ℹ )fail 0$/m);
});

test("npx tigercloud-simulator, from the installed tarball: its JSON line's key pair is the key GET /auth/info knows; a program's pulumi up against it, with that key pair and no projectId, makes the fork", async () => {
  const dir = await installExample("testing");
  const child = spawn("npx", ["tigercloud-simulator", "--fast", "--stand-in"], { cwd: dir, env: cliEnv(), detached: true });
  try {
    const line = await new Promise<string>((resolve, reject) => {
      let out = "";
      child.stdout.on("data", (c: Buffer) => {
        out += c.toString();
        if (out.includes("\n")) resolve(out.slice(0, out.indexOf("\n")));
      });
      child.on("close", (status) => reject(new Error(`tigercloud-simulator exited ${status}: ${out}`)));
    });
    const info = JSON.parse(line) as { url: string; publicKey: string; secretKey: string; projectId: string };
    const basic = Buffer.from(`${info.publicKey}:${info.secretKey}`).toString("base64");
    const answer = await fetch(`${info.url}/auth/info`, { headers: { Authorization: `Basic ${basic}` } });
    expect(answer.status).toBe(200);
    expect(await answer.json()).toMatchObject({ type: "apiKey", api_key: { public_key: info.publicKey, project: { id: info.projectId } } });

    // The program in that directory, as a person's shell runs it against the simulator: the URL
    // and the key pair it printed, no TIGER_PROJECT_ID (the provider asks the key).
    const env = cliEnv({ TIGER_API_URL: info.url, TIGER_PUBLIC_KEY: info.publicKey, TIGER_SECRET_KEY: info.secretKey });
    const { serviceId, vpcId } = JSON.parse(line) as { serviceId: string; vpcId: string };
    await ok(dir, "pulumi", ["stack", "init", "npx-simulator", "--non-interactive"], env);
    await ok(dir, "pulumi", ["config", "set-all", "--plaintext", `sourceServiceId=${serviceId}`, "--plaintext", `vpcId=${vpcId}`], env);
    const up = await ok(dir, "pulumi", ["up", "--yes", "--non-interactive"], env);
    expect(up).toContain(
      `projectId: ${info.projectId}, the project the credentials from environment variable TIGER_PUBLIC_KEY with environment variable TIGER_SECRET_KEY belong to (GET /auth/info)`,
    );
    const listed = await fetch(`${info.url}/projects/${info.projectId}/services`, { headers: { Authorization: `Basic ${basic}` } });
    const staging = ((await listed.json()) as { name: string; status: string; ha_replicas?: { replica_count: number } }[]).find(
      (s) => s.name === "staging",
    );
    expect(staging).toMatchObject({ status: "READY", ha_replicas: { replica_count: 1 } });
    expect(up).not.toContain(info.secretKey);
  } finally {
    process.kill(-(child.pid as number), "SIGTERM");
  }
});

test("the root Pulumi.yaml previews in the repository, as a person runs it", async () => {
  const configFile = path.join(work, "root-config.yaml");
  const pulumi = (...args: string[]) => ok(ROOT, "pulumi", [...args, "--non-interactive"]);
  await pulumi("stack", "init", "e2e-root");
  try {
    const plain = {
      "tigercloud:apiUrl": sim.url,
      "tigercloud:projectId": sim.defaults().projectId,
      ...EXAMPLE_CONFIG.demo?.(sim.defaults()),
    };
    await pulumi(
      "config",
      "set-all",
      "--config-file",
      configFile,
      "--secret",
      `tigercloud:apiKey=${sim.apiKey}`,
      ...Object.entries(plain).flatMap(([key, value]) => ["--plaintext", `${key}=${value}`]),
    );
    sim.clearLog();
    const preview = await pulumi("preview", "--config-file", configFile);
    expect(preview).toMatch(/\+ 4 to create/);
    expect(preview).not.toMatch(/from \$PATH/);
    expect(preview).not.toMatch(/ExperimentalWarning|\(node:\d+\) /);
    expect(
      sim
        .requests()
        .map((r) => `${r.method} ${r.operation}`)
        .sort(),
    ).toEqual(["GET getService", "GET getVpc", "GET listServices"]);
  } finally {
    await pulumi("stack", "rm", "--yes", "e2e-root");
  }
});
