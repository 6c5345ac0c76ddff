// The provider plugin as a YAML user gets it who never installed it: no `pulumi plugin install`, an
// empty PULUMI_HOME, automatic plugin acquisition on (as it is for users), and the engine sent to a
// stand-in for this project's GitHub releases (test/support/releaseServer.ts) for this project's
// download URL alone. The program names that URL and nothing else of the plugin: the engine finds
// the latest release, downloads this machine's archive from it, installs it into PULUMI_HOME and
// runs it against the simulator. And when the release is not there, the failure says so, in seconds.
import { type ChildProcess, spawn } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { NO_DELAYS, Simulator } from "../../simulator";
import { shellEnv, runCommand, succeeds } from "../support/lab/shell";
import { credentialsOf } from "../support/lab/yaml";
import { PLUGIN_DOWNLOAD_URL, releaseServer, type ReleaseServer } from "../support/releaseServer";

jest.setTimeout(300_000);
const ROOT = path.join(__dirname, "..", "..");
const VERSION = (JSON.parse(fs.readFileSync(path.join(ROOT, "package.json"), "utf8")) as { version: string }).version;
const { packPlugin } = require("../../scripts/pack-plugin") as { packPlugin: () => string };
const REPO = "/repos/tigercloud/pulumi-tigercloud";

let sim: Simulator;
let work: string;
let archive: string;

/**
 * A user's shell that never installed the plugin, sent to `server` for this project's plugin: the
 * engine may download plugins (with-pulumi, for the other suites, forbids it).
 */
function userEnv(server: ReleaseServer): NodeJS.ProcessEnv {
  const env = shellEnv(work, "download-e2e", { ...credentialsOf(sim), ...server.githubEnv() });
  delete env.PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION;
  return env;
}

/** A project of its own folder whose program is one ServiceFork, its options `options` (YAML lines), and a stack "dev". */
async function forkProject(name: string, options: string[], env: NodeJS.ProcessEnv): Promise<string> {
  const dir = path.join(work, name);
  fs.mkdirSync(dir);
  fs.writeFileSync(
    path.join(dir, "Pulumi.yaml"),
    [
      `name: ${name}`,
      "runtime: yaml",
      "resources:",
      "  fork:",
      "    type: tigercloud:index:ServiceFork",
      "    properties:",
      `      sourceServiceId: ${sim.defaults().serviceId}`,
      "      forkStrategy: NOW",
      `      name: ${name}`,
      "    options:",
      ...options.map((o) => `      ${o}`),
      "",
    ].join("\n"),
  );
  await succeeds(dir, "pulumi", ["stack", "init", "dev"], env);
  return dir;
}

/** A release folder holding `files` (paths), as links. */
function releaseOf(name: string, files: string[]): string {
  const dir = path.join(work, name);
  fs.mkdirSync(dir);
  for (const f of files) fs.symlinkSync(f, path.join(dir, path.basename(f)));
  return dir;
}

beforeAll(async () => {
  sim = new Simulator({ delays: NO_DELAYS });
  await sim.start();
  // Outside the repository, with nothing of the plugin anywhere.
  work = fs.mkdtempSync(path.join(os.tmpdir(), "tigercloud-download-"));
  fs.mkdirSync(path.join(work, "state"));
  archive = packPlugin();
});
afterAll(async () => {
  await sim?.stop();
  if (work) fs.rmSync(work, { recursive: true, force: true });
});

test("a YAML program naming only the plugin's download URL: up downloads this platform's archive from the latest release, installs it in PULUMI_HOME, and creates the fork", async () => {
  const server = await releaseServer(releaseOf("release", [archive]), VERSION);
  try {
    const env = userEnv(server);
    expect(fs.existsSync(path.join(work, "home", "plugins"))).toBe(false);
    const dir = await forkProject("downloaded", [`pluginDownloadURL: ${PLUGIN_DOWNLOAD_URL}`], env);

    const up = await succeeds(dir, "pulumi", ["up", "--yes", "--skip-preview"], env);
    expect(up.output).toContain(`Downloading plugin tigercloud-${VERSION}`);
    expect(up.output).toMatch(/\+ 2 created/);
    // As from GitHub: the latest release's tag, that release's assets, then the asset itself.
    expect(server.requests()).toEqual([
      { method: "GET", path: `${REPO}/releases/latest` },
      { method: "GET", path: `${REPO}/releases/tags/v${VERSION}` },
      { method: "GET", path: `/releases/download/v${VERSION}/${path.basename(archive)}` },
    ]);
    expect(sim.services(sim.defaults().projectId).filter((s) => s.name === "downloaded")).toHaveLength(1);

    const listed = JSON.parse((await succeeds(dir, "pulumi", ["plugin", "ls", "--json"], env)).output) as {
      name: string;
      kind: string;
      version: string;
    }[];
    expect(listed.map(({ name, kind, version }) => ({ name, kind, version }))).toEqual([
      { name: "tigercloud", kind: "resource", version: VERSION },
    ]);
    expect(fs.existsSync(path.join(work, "home", "plugins", `resource-tigercloud-v${VERSION}`, "pulumi-resource-tigercloud"))).toBe(true);
    const onPath = (env.PATH ?? "").split(path.delimiter).filter((d) => fs.existsSync(path.join(d, "pulumi-resource-tigercloud")));
    expect(onPath).toEqual([]);

    // Installed, the plugin is not asked for again: a run needs no release (nor GitHub's rate limit).
    await succeeds(dir, "pulumi", ["preview", "--expect-no-changes"], env);
    expect(server.requests()).toHaveLength(3);
  } finally {
    await server.close();
  }
});

test("with no release to be had, up fails in seconds naming the plugin and the URL it tried: the server down, or no such release", async () => {
  const home = path.join(work, "home-failing");
  const down = await releaseServer(releaseOf("unreachable", [archive]), VERSION);
  const downEnv = { ...userEnv(down), PULUMI_HOME: home };
  await down.close();
  const latest = await forkProject("latest-unreachable", [`pluginDownloadURL: ${PLUGIN_DOWNLOAD_URL}`], downEnv);
  const refused = await runCommand(latest, "pulumi", ["up", "--yes", "--skip-preview"], downEnv);
  expect(refused.status).not.toBe(0);
  expect(refused.output).toContain(`could not find latest version for provider tigercloud: Get "${down.url}${REPO}/releases/latest"`);
  expect(refused.seconds).toBeLessThan(30);

  const server = await releaseServer(releaseOf("other-release", [archive]), VERSION);
  try {
    const env = { ...userEnv(server), PULUMI_HOME: home };
    const pinned = await forkProject("no-such-release", ["version: 9.9.9", `pluginDownloadURL: ${PLUGIN_DOWNLOAD_URL}`], env);
    const missing = await runCommand(pinned, "pulumi", ["up", "--yes", "--skip-preview"], env);
    expect(missing.status).not.toBe(0);
    // The plugin, its version and its real source, to install it by hand; and the URL that failed.
    expect(missing.output).toContain(
      `Could not automatically download and install resource plugin 'pulumi-resource-tigercloud' at version v9.9.9, install the plugin using \`pulumi plugin install resource tigercloud v9.9.9 --server ${PLUGIN_DOWNLOAD_URL}\``,
    );
    expect(missing.output).toContain(`404 HTTP error fetching plugin from ${server.url}${REPO}/releases/tags/v9.9.9`);
    expect(missing.seconds).toBeLessThan(30);
  } finally {
    await server.close();
  }
  expect(sim.services(sim.defaults().projectId).filter((s) => ["latest-unreachable", "no-such-release"].includes(s.name))).toEqual([]);
  expect(fs.existsSync(path.join(home, "plugins"))).toBe(false);
});

test("a YAML user with nothing but the Pulumi CLI: the plugin installed from its releases, the local Tiger Cloud started from it with one command, and a program run against the settings it prints", async () => {
  const server = await releaseServer(releaseOf("simulator-release", [archive]), VERSION);
  const home = path.join(work, "home-simulator");
  // No Node.js, npm or PostgreSQL a user might have: the plugin's archive carries its own Node.js.
  const bare: NodeJS.ProcessEnv = {
    ...userEnv(server),
    PULUMI_HOME: home,
    PATH: [path.dirname(cliPath()), "/usr/bin", "/bin"].join(path.delimiter),
  };
  for (const key of Object.keys(bare)) if (key.startsWith("TIGER_")) delete bare[key];
  let simulator: ChildProcess | undefined;
  try {
    await succeeds(work, "pulumi", ["plugin", "install", "resource", "tigercloud", "--server", PLUGIN_DOWNLOAD_URL], bare);
    // The command the docs give, as a person types it.
    simulator = spawn("pulumi", ["plugin", "run", "--kind", "resource", "tigercloud", "--", "simulator", "--fast"], {
      cwd: work,
      env: bare,
      detached: true,
    });
    const lines = await firstLines(simulator, 2);
    const settings = JSON.parse(lines[0] as string) as Record<string, string>;
    // The export line sets what the README's settings name: the key pair and the project, never a bearer key beside them.
    const exported = /^export (.*)$/.exec(lines[1] as string)?.[1] ?? "";
    const env = Object.fromEntries(exported.split(" ").map((kv) => kv.split("=", 2) as [string, string]));
    expect(Object.keys(env).sort()).toEqual(["TIGER_API_URL", "TIGER_PROJECT_ID", "TIGER_PUBLIC_KEY", "TIGER_SECRET_KEY"]);
    expect(env.TIGER_API_URL).toBe(settings.url);

    const dir = path.join(work, "local-tiger-cloud");
    fs.mkdirSync(dir);
    fs.writeFileSync(
      path.join(dir, "Pulumi.yaml"),
      [
        "name: local-tiger-cloud",
        "runtime: yaml",
        "resources:",
        "  fork:",
        "    type: tigercloud:index:ServiceFork",
        "    properties:",
        `      sourceServiceId: ${settings.serviceId}`,
        "      forkStrategy: NOW",
        "      name: against-the-local-tiger-cloud",
        "      onDestroy: delete",
        "outputs:",
        "  forkId: ${fork.serviceId}",
        "",
      ].join("\n"),
    );
    const withSettings = { ...bare, ...env };
    await succeeds(dir, "pulumi", ["stack", "init", "dev"], withSettings);
    const up = await succeeds(dir, "pulumi", ["up", "--yes", "--skip-preview"], withSettings);
    expect(up.output).toMatch(/\+ 2 created/);
    expect(up.output).toMatch(/forkId: "svc-/);
    const destroyed = await succeeds(dir, "pulumi", ["destroy", "--yes", "--skip-preview"], withSettings);
    expect(destroyed.output).toMatch(/- 2 deleted/);
    // Installed once, by the install command: the program's runs fetched nothing more.
    expect(server.requests().filter((r) => r.path.startsWith("/releases/download/"))).toHaveLength(1);

    // Ctrl-C reaches `pulumi plugin run` (the plugin runs in a process group of its own): the local
    // Tiger Cloud ends with it.
    process.kill(-(simulator.pid as number), "SIGINT");
    const deadline = Date.now() + 10_000;
    let answering = true;
    while (answering && Date.now() < deadline) {
      answering = await fetch(settings.url as string).then(
        () => true,
        () => false,
      );
      if (answering) await new Promise((r) => setTimeout(r, 200));
    }
    expect(answering).toBe(false);
  } finally {
    try {
      if (simulator?.pid) process.kill(-simulator.pid, "SIGKILL");
    } catch {
      // ended already, as it should have
    }
    await server.close();
  }
});

/** The first `n` lines a child writes to stdout; fails with what it wrote if it exits first. */
function firstLines(child: ChildProcess, n: number): Promise<string[]> {
  return new Promise((resolve, reject) => {
    let out = "";
    const take = (chunk: Buffer) => {
      out += chunk.toString();
      const lines = out.split("\n");
      if (lines.length > n) resolve(lines.slice(0, n));
    };
    child.stdout?.on("data", take);
    child.stderr?.on("data", (chunk: Buffer) => (out += chunk.toString()));
    child.once("exit", (code) => reject(new Error(`exited ${code} before ${n} lines:\n${out}`)));
  });
}

/** The `pulumi` this suite runs, as PATH finds it. */
function cliPath(): string {
  for (const dir of (process.env.PATH ?? "").split(path.delimiter))
    if (fs.existsSync(path.join(dir, "pulumi"))) return path.join(dir, "pulumi");
  throw new Error("no pulumi on PATH");
}
