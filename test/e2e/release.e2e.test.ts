// The release, rehearsed as GitHub would run it: this repository as committed, tagged with its
// version and pushed, its .github/workflows/release.yml run by the workflow runner for that tag
// (test/support/gitops/runner.ts), publishing to real registries on loopback: Verdaccio for npm,
// pypiserver for Python, a stand-in for GitHub's releases (the plugin's archives), and the Go
// module's tag pushed to origin. The .NET package is left out (RELEASE_SKIP=nuget): no .NET here.
// The first run meets PyPI down and names it; the second publishes what is missing and nothing
// twice. Then a new user's project in each language installs what was published with its ordinary
// client (npm, pip, go get; YAML names the plugin's download URL) and runs a program against the
// simulator, the plugin fetched by the engine from the release.
import { execFileSync } from "child_process";
import * as crypto from "crypto";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { NO_DELAYS, Simulator } from "../../simulator";
import { type JobRun, WorkflowRunner } from "../support/gitops/runner";
import { shellEnv, succeeds } from "../support/lab/shell";
import { credentialsOf } from "../support/lab/yaml";
import { type Registry, startPypiServer, startVerdaccio, type Verdaccio } from "../support/registries";
import { PLUGIN_DOWNLOAD_URL, releaseServer, type ReleaseServer } from "../support/releaseServer";

jest.setTimeout(900_000);
const ROOT = path.join(__dirname, "..", "..");
const PKG = JSON.parse(fs.readFileSync(path.join(ROOT, "package.json"), "utf8")) as { version: string };
const VERSION = PKG.version;
const TAG = `v${VERSION}`;
const GITHUB_TOKEN = `ghs_release_${crypto.randomBytes(8).toString("hex")}`;
const { PLATFORMS } = require("../../scripts/pack-plugin") as { PLATFORMS: string[] };
const toolchain = require("../../scripts/toolchain") as { main: { sdk: string }; python: { pulumi: string } };
const EXAMPLE = path.join(ROOT, "sdk", "examples", "ServiceFork.for-a-pull-request");

let sim: Simulator;
let work: string;
let origin: string;
let release: ReleaseServer;
let npm: Verdaccio;
let pypi: (Registry & { index: string; packages: string }) | undefined;
let pypiPort: number;
let runner: WorkflowRunner;
const runs: JobRun[] = [];

function sh(cwd: string, command: string, args: string[], env: NodeJS.ProcessEnv = process.env): string {
  return execFileSync(command, args, { cwd, env, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
}

/** The repository as it is now (its files, committed or not, but what git ignores), committed, tagged and "pushed" to a bare origin. */
function repositoryOfThisCheckout(): string {
  const repo = path.join(work, "pulumi-tigercloud");
  fs.mkdirSync(repo);
  const files = sh(ROOT, "git", ["ls-files", "--cached", "--others", "--exclude-standard", "-z"]).split("\0").filter(Boolean);
  for (const file of files) {
    if (!fs.existsSync(path.join(ROOT, file))) continue;
    fs.mkdirSync(path.dirname(path.join(repo, file)), { recursive: true });
    fs.copyFileSync(path.join(ROOT, file), path.join(repo, file));
    fs.chmodSync(path.join(repo, file), fs.statSync(path.join(ROOT, file)).mode);
  }
  const git = (...args: string[]) =>
    sh(repo, "git", args, {
      ...process.env,
      GIT_AUTHOR_NAME: "r",
      GIT_AUTHOR_EMAIL: "r@example.com",
      GIT_COMMITTER_NAME: "r",
      GIT_COMMITTER_EMAIL: "r@example.com",
    });
  git("init", "--quiet", "--initial-branch=main");
  git("add", "-A");
  git("commit", "--quiet", "-m", `Release ${VERSION}`);
  git("tag", TAG);
  const bare = path.join(work, "origin.git");
  sh(work, "git", ["clone", "--quiet", "--bare", repo, bare]);
  return bare;
}

/** GitHub's hashFiles() of one file, as the runner computes it, for a cache's key. */
const hashFile = (file: string) =>
  crypto
    .createHash("sha256")
    .update(crypto.createHash("sha256").update(fs.readFileSync(file)).digest())
    .digest("hex");

/** The tool cache the workflow keeps (.cache/tools): links to what this machine's cache holds already,
 *  the plugin's archives packed from the same inputs among them (scripts/pack-plugin.js keeps them by
 *  their inputs' digest): the six are packed once in a test run, not again in each release job.
 *  Packing anew, and that it makes the same bytes, is archives.e2e's. */
function toolCacheSeed(): string {
  const cache =
    process.env.PULUMI_TIGERCLOUD_CACHE || path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), ".cache"), "pulumi-tigercloud");
  const seed = path.join(work, "tools-seed");
  fs.mkdirSync(seed);
  // A link to it must not dangle: the job's pack-plugin fills it.
  fs.mkdirSync(path.join(cache, "plugin-archives"), { recursive: true });
  const shared = (e: string) => e.startsWith("plugin-node-") || e === "python" || e === "plugin-archives";
  for (const entry of fs.readdirSync(cache).filter(shared)) fs.symlinkSync(path.join(cache, entry), path.join(seed, entry));
  return seed;
}

const releaseRun = async () => {
  const [job, ...others] = await runner.trigger({ name: "push", ref: `refs/tags/${TAG}` });
  expect(others).toEqual([]);
  runs.push(job as JobRun);
  return job as JobRun;
};

/** `check`'s expectations of a job; when one fails, its message carries the job's log (what each target said, and why). */
function ofJob(job: JobRun, check: () => void): void {
  try {
    check();
  } catch (err) {
    if (err instanceof Error)
      err.message += `\n\nthe job's steps: ${job.steps.map((s) => `${s.title} ${s.seconds.toFixed(1)} s`).join("; ")}\nthe job's log:\n${job.log}`;
    throw err;
  }
}

/** The release's summary lines in a job's log, by target: "published", "already published", ... */
function summary(job: JobRun): Record<string, string> {
  const found: Record<string, string> = {};
  for (const m of job.log.matchAll(/^ {2}(github|npm|pypi|nuget|go) +([a-zA-Z ]+?): /gm)) found[m[1] as string] = m[2] as string;
  return found;
}

beforeAll(async () => {
  sim = new Simulator({ delays: { ...NO_DELAYS, forkQueuedMs: 200, forkConfiguringMs: 200 } });
  await sim.start();
  work = fs.mkdtempSync(path.join(os.tmpdir(), "tigercloud-release-"));
  origin = repositoryOfThisCheckout();
  release = await releaseServer(fs.mkdtempSync(path.join(work, "release-")), VERSION, { token: GITHUB_TOKEN });
  npm = await startVerdaccio(work);
  // PyPI's address is known, but nothing answers there until the second run.
  pypiPort = await new Promise<number>((resolve) => {
    const server = require("net").createServer();
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
  const cliDirs = (process.env.PULUMI_TIGERCLOUD_CLI_PATH ?? "").split(path.delimiter);
  // A runner's PATH: this lane's Node.js, then the machine's, without the Pulumi CLI or this repository's tools.
  const basePath = [
    path.dirname(process.execPath),
    ...(process.env.PATH ?? "").split(path.delimiter).filter((d) => d && !cliDirs.includes(d) && !d.startsWith(ROOT)),
  ].join(path.delimiter);
  runner = new WorkflowRunner({
    repository: origin,
    repositoryName: "tigercloud/pulumi-tigercloud",
    secrets: { NPM_TOKEN: npm.token, PYPI_TOKEN: "pypi-token-unused" },
    vars: {
      NPM_REGISTRY: npm.url,
      PYPI_INDEX_URL: `http://127.0.0.1:${pypiPort}/simple/`,
      PYPI_REPOSITORY_URL: `http://127.0.0.1:${pypiPort}/`,
      RELEASE_SKIP: "nuget",
    },
    githubApiUrl: release.url,
    issueToken: () => GITHUB_TOKEN,
    basePath,
    pulumiPath: cliDirs.join(path.delimiter),
    work,
    npmCache: path.join(os.homedir(), ".npm"),
    // GitHub's stand-in speaks HTTPS with a certificate of its own, which this runner trusts.
    machineEnv: { NODE_EXTRA_CA_CERTS: release.certificates },
  });
  // Caches earlier runs on main saved: the node_modules of this lock file, and the tools' cache.
  await runner.seedCache(
    `node-modules-${hashFile(path.join(ROOT, "package-lock.json"))}`,
    "refs/heads/main",
    path.join(ROOT, "node_modules"),
  );
  await runner.seedCache(`release-tools-${hashFile(path.join(ROOT, "scripts", "toolchain.js"))}`, "refs/heads/main", toolCacheSeed());
});

afterAll(async () => {
  for (const job of runs)
    process.stderr.write(`release job steps: ${job.steps.map((s) => `${s.title} ${s.seconds.toFixed(1)} s`).join("; ")}\n`);
  await sim?.stop();
  await release?.close();
  await npm?.stop();
  await pypi?.stop();
  if (work) fs.rmSync(work, { recursive: true, force: true });
});

test("the release workflow on a version tag: with PyPI down, the plugin's release, the npm package and the Go tag are published and PyPI is named; run again, only the wheel is published, nothing twice", async () => {
  const first = await releaseRun();
  expect(first.ran).toBe(true);
  ofJob(first, () => {
    expect(first.status).not.toBe(0);
    expect(summary(first)).toEqual({ github: "published", npm: "published", pypi: "FAILED", nuget: "skipped", go: "published" });
    expect(first.log).toMatch(/Not published: pypi\. Fix the cause and run the same command again/);
  });
  // No secret in the log (which a failure above shows whole).
  for (const secret of [GITHUB_TOKEN, npm.token]) expect(first.log).not.toContain(secret);

  // The GitHub release: an archive for each platform, named as the engine asks, and their checksums.
  const assets = release.assets();
  expect(assets.map((a) => a.name).sort()).toEqual(
    [...PLATFORMS.map((p) => `pulumi-resource-tigercloud-v${VERSION}-${p}.tar.gz`), `pulumi-tigercloud_${VERSION}_checksums.txt`].sort(),
  );
  const checksums = fs.readFileSync(release.assetFile(`pulumi-tigercloud_${VERSION}_checksums.txt`), "utf8");
  expect(checksums.trim().split("\n").sort()).toEqual(
    assets
      .filter((a) => a.name.endsWith(".tar.gz"))
      .map((a) => `${a.sha256}  ${a.name}`)
      .sort(),
  );
  // npm: the package at the version; Go: the module's tag on the released commit.
  const viewed = JSON.parse(
    sh(work, "npm", ["view", `pulumi-tigercloud@${VERSION}`, "version", "dist.integrity", "--json", "--registry", npm.url]),
  ) as {
    version: string;
  };
  expect(viewed.version).toBe(VERSION);
  const tagged = sh(work, "git", ["ls-remote", origin, `refs/tags/sdk/go/${TAG}`, `refs/tags/${TAG}`]);
  const commits = new Set(
    tagged
      .trim()
      .split("\n")
      .map((l) => l.split(/\s+/)[0]),
  );
  expect(tagged).toContain(`refs/tags/sdk/go/${TAG}`);
  expect(commits.size).toBe(1);

  // PyPI comes back; the same job, run again.
  pypi = await startPypiServer(work, pypiPort);
  const uploadsBefore = release.requests().filter((r) => r.method === "POST").length;
  const second = await releaseRun();
  ofJob(second, () => {
    expect(second.status).toBe(0);
    expect(summary(second)).toEqual({
      github: "already published",
      npm: "already published",
      pypi: "published",
      nuget: "skipped",
      go: "already published",
    });
  });
  // Nothing went twice: no release made or file uploaded, the npm version published once, the wheel once.
  expect(release.requests().filter((r) => r.method === "POST").length).toBe(uploadsBefore);
  expect(release.assets()).toEqual(assets);
  expect(npm.log().match(/requested 'PUT \/pulumi-tigercloud'/g) ?? []).toHaveLength(1);
  expect(fs.readdirSync(pypi.packages)).toEqual([`pulumi_tigercloud-${VERSION}-py3-none-any.whl`]);
});

/** A new user's shell: the CLI on PATH, a file backend and PULUMI_HOME of the project's own (no plugin), the simulator's credentials, GitHub's stand-in. */
function userShell(dir: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env = shellEnv(dir, "release-e2e", { ...credentialsOf(sim), ...release.githubEnv(), ...extra });
  // Plugins are fetched as for users (with-pulumi turns that off for the other suites).
  delete env.PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION;
  return env;
}

/** Takes `version` of `module` out of the machine's Go module cache (extracted and downloaded), as if never fetched. */
function forgetModuleVersion(module: string, version: string): void {
  const cache = sh(ROOT, "go", ["env", "GOMODCACHE"]).trim();
  const escaped = module.replace(/[A-Z]/g, (c) => `!${c.toLowerCase()}`);
  const extracted = path.join(cache, `${escaped}@${version}`);
  if (fs.existsSync(extracted)) {
    // The cache's files are read-only.
    sh(ROOT, "chmod", ["-R", "u+w", extracted]);
    fs.rmSync(extracted, { recursive: true, force: true });
  }
  const downloads = path.join(cache, "cache", "download", escaped, "@v");
  for (const file of fs.existsSync(downloads) ? fs.readdirSync(downloads) : [])
    if (file.startsWith(`${version}.`)) fs.rmSync(path.join(downloads, file), { force: true });
  // And go's clone of the repository, whose tags are an earlier rehearsal's (a fetch does not move them).
  const vcs = path.join(cache, "cache", "vcs");
  const repository = module.replace(/\/sdk\/go$/, "");
  for (const entry of fs.existsSync(vcs) ? fs.readdirSync(vcs) : []) {
    const config = path.join(vcs, entry, "config");
    if (!fs.existsSync(config) || !fs.readFileSync(config, "utf8").includes(repository)) continue;
    for (const file of [path.join(vcs, entry), ...[".info", ".lock"].map((ext) => path.join(vcs, `${entry}${ext}`))])
      fs.rmSync(file, { recursive: true, force: true });
  }
}

/** A user's project folder holding `files`. */
function project(name: string, files: Record<string, string>): string {
  const dir = path.join(work, "users", name);
  fs.mkdirSync(path.join(dir, "state"), { recursive: true });
  for (const [file, text] of Object.entries(files)) fs.writeFileSync(path.join(dir, file), text);
  return dir;
}

const forksNamed = (name: string) => sim.services(sim.defaults().projectId).filter((s) => s.name === name && s.forked_from);

test("a new project in each language installs what was published with its ordinary client and runs a program: npm from Verdaccio, pip from pypiserver, go get of the tag, YAML by the download URL; the plugin fetched from the release", async () => {
  expect(runs.at(-1)?.status).toBe(0);
  const { serviceId } = sim.defaults();
  const timings: string[] = [];
  const ok = async (cwd: string, command: string, args: string[], env: NodeJS.ProcessEnv) => {
    const r = await succeeds(cwd, command, args, env);
    timings.push(`${path.basename(cwd)}: ${command} ${args.slice(0, 2).join(" ")} ${r.seconds.toFixed(1)} s`);
    return r.output;
  };
  /** Stack "dev" with the example's config, up (the fork made as the program says), then destroy (the fork deleted). */
  const upAndDestroy = async (dir: string, env: NodeJS.ProcessEnv, prNumber: string) => {
    await ok(dir, "pulumi", ["stack", "init", "dev"], env);
    await ok(dir, "pulumi", ["config", "set", "sourceServiceId", serviceId], env);
    await ok(dir, "pulumi", ["config", "set", "--type", "int", "prNumber", prNumber], env);
    const up = await ok(dir, "pulumi", ["up", "--yes", "--skip-preview"], env);
    expect(up).toMatch(/\+ 2 created/);
    expect(forksNamed(`pr-${prNumber}`).map((s) => s.status)).toEqual(["READY"]);
    await ok(dir, "pulumi", ["destroy", "--yes", "--skip-preview"], env);
    expect(forksNamed(`pr-${prNumber}`).map((s) => s.status)).toEqual(["DELETED"]);
    return up;
  };
  try {
    // TypeScript: the npm package from the registry, as `npm install` gets it; no plugin at all.
    const tsEnv = userShell(path.join(work, "users", "typescript"));
    const ts = project("typescript", {
      "package.json": JSON.stringify({
        name: "pr-database",
        private: true,
        dependencies: { "pulumi-tigercloud": VERSION, "@pulumi/pulumi": toolchain.main.sdk },
      }),
      ".npmrc": `registry=${npm.url}\n`,
      "Pulumi.yaml": "name: pr-database-ts\nruntime: nodejs\n",
      "index.ts": fs.readFileSync(path.join(EXAMPLE, "index.ts"), "utf8"),
    });
    await ok(ts, "npm", ["install", "--no-audit", "--no-fund", "--loglevel=error"], tsEnv);
    expect(JSON.parse(fs.readFileSync(path.join(ts, "node_modules", "pulumi-tigercloud", "package.json"), "utf8")).version).toBe(VERSION);
    await upAndDestroy(ts, tsEnv, "101");

    // Python: the wheel from the index (pulumi and the rest through its fallback), in a new virtual environment.
    const pyDir = path.join(work, "users", "python");
    const venv = path.join(pyDir, "venv");
    const pyEnv = userShell(pyDir, { VIRTUAL_ENV: venv, PIP_DISABLE_PIP_VERSION_CHECK: "1" });
    pyEnv.PATH = `${path.join(venv, "bin")}${path.delimiter}${pyEnv.PATH}`;
    const py = project("python", {
      "Pulumi.yaml": "name: pr-database-py\nruntime: python\n",
      "__main__.py": fs.readFileSync(path.join(EXAMPLE, "__main__.py"), "utf8"),
    });
    await ok(py, "python3", ["-m", "venv", venv], pyEnv);
    await ok(
      py,
      "pip",
      [
        "install",
        "--quiet",
        "--index-url",
        (pypi as { index: string }).index,
        `pulumi-tigercloud==${VERSION}`,
        `pulumi==${toolchain.python.pulumi}`,
      ],
      pyEnv,
    );
    const pyUp = await upAndDestroy(py, pyEnv, "102");
    // The engine fetched the plugin from the release: it was installed nowhere.
    expect(pyUp).toContain(`Downloading plugin tigercloud-${VERSION}`);

    // Go: the module at the tag the release pushed, as `go get` finds it in the repository (git, as for
    // any module outside the proxy); the example's own program, an Automation API one.
    const goDir = path.join(work, "users", "go");
    const sdkModule = "github.com/tigercloud/pulumi-tigercloud/sdk/go";
    fs.mkdirSync(path.join(goDir, "state"), { recursive: true });
    const gitConfig = path.join(goDir, ".gitconfig");
    // github.com/tigercloud/pulumi-tigercloud is this origin, for git.
    fs.writeFileSync(gitConfig, `[url "file://${origin}"]\n\tinsteadOf = https://github.com/tigercloud/pulumi-tigercloud\n`);
    // Every rehearsal tags a new commit v0.1.0, which a real version never is: the machine's module
    // cache must not hand back an earlier rehearsal's copy, so that version of this module alone is
    // taken out of it first (a cache of the user's own would rebuild every dependency, minutes here).
    forgetModuleVersion(sdkModule, TAG);
    const goEnv = userShell(goDir, { GIT_CONFIG_GLOBAL: gitConfig, GOPRIVATE: "github.com/tigercloud", GOFLAGS: "-mod=mod" });
    const goProject = path.join(goDir, "program");
    fs.cpSync(path.join(ROOT, "examples", "go"), goProject, { recursive: true });
    // The example points at this repository's sdk/go; a user's program requires the released module.
    await ok(goProject, "go", ["mod", "edit", `-dropreplace=${sdkModule}`, `-droprequire=${sdkModule}`], goEnv);
    await ok(goProject, "go", ["get", `${sdkModule}@${TAG}`], goEnv);
    // What go get fetched is this release's module, not an older copy.
    const fetched = JSON.parse(sh(goProject, "go", ["list", "-m", "-json", `${sdkModule}`], goEnv)) as { Dir: string; Version: string };
    expect(fetched.Version).toBe(TAG);
    for (const file of ["go.mod", "tigercloud/serviceFork.go"])
      expect(fs.readFileSync(path.join(fetched.Dir, file), "utf8")).toBe(fs.readFileSync(path.join(ROOT, "sdk", "go", file), "utf8"));
    const goUp = await ok(
      goProject,
      "go",
      ["run", ".", "-source-service", serviceId, "-vpc", sim.defaults().vpcId, "-fork-name", "pr-103", "up"],
      goEnv,
    );
    expect(goUp).toMatch(/\+ 4 created/);
    expect(forksNamed("pr-103").map((s) => s.status)).toEqual(["READY"]);
    await ok(goProject, "go", ["run", ".", "destroy"], goEnv);

    // YAML: no SDK; the program names the plugin's download URL.
    const yamlEnv = userShell(path.join(work, "users", "yaml"));
    const yamlProgram = fs
      .readFileSync(path.join(EXAMPLE, "Main.yaml"), "utf8")
      .replace(/^( {4}type: tigercloud:ServiceFork\n)/m, `$1    options:\n      pluginDownloadURL: ${PLUGIN_DOWNLOAD_URL}\n`);
    const yaml = project("yaml", { "Pulumi.yaml": `name: pr-database-yaml\nruntime: yaml\n${yamlProgram}` });
    const yamlUp = await upAndDestroy(yaml, yamlEnv, "104");
    expect(yamlUp).toContain(`Downloading plugin tigercloud-${VERSION}`);
  } finally {
    process.stderr.write(`release.e2e, a new user's projects:\n  ${timings.join("\n  ")}\n`);
  }
});
