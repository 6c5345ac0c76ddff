// The PR database suites' lab (test/e2e/prDatabase.e2e.test.ts and the two beside it): users'
// repositories holding only examples/pr-fork's workflow and rules file, each job in a fresh clone,
// run by the workflow runner (test/support/gitops/runner.ts) with the action read from this
// checkout, as GitHub fetches it at its ref. The plugin comes from a stand-in of GitHub's releases
// on loopback, fetched by the engine as for users; the simulator has a real PostgreSQL server
// behind every service, its parent holding customers' personal data and TimescaleDB's jobs. Each
// suite calls prDatabaseLab() once: its own simulator, GitHub stand-ins and state, so that jest
// runs the suites side by side, each on a worker. The bindings below (sim, api, ids, work) are set
// by its beforeAll.
import { execFile, execFileSync } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { promisify } from "util";
import { customerRow, PERSONAL_ROWS } from "../../../simulator/databases";
import { NO_DELAYS, Simulator } from "../../../simulator";
import { GitHubApi } from "../gitops/githubApi";
import { type GitHubEvent, type JobRun, type RunnerOptions, runnerPaths, WorkflowRunner } from "../gitops/runner";
import { releaseServer, type ReleaseServer } from "../releaseServer";

const ROOT = path.join(__dirname, "..", "..", "..");
export const EXAMPLE = path.join(ROOT, "examples", "pr-fork");
export const VERSION = (JSON.parse(fs.readFileSync(path.join(ROOT, "package.json"), "utf8")) as { version: string }).version;
export const WORKFLOW = path.join(".github", "workflows", "pr-database.yml");
export const RULES = path.join(".github", "pr-database.yml");
const run = promisify(execFile);

export let sim: Simulator;
export let api: GitHubApi;
let release: ReleaseServer;
export let work: string;
export let ids: ReturnType<Simulator["defaults"]>;
const runners = new Map<string, WorkflowRunner>();
/** Every job the suite's events ran, in order. */
export const ran: JobRun[] = [];

const gitEnv = {
  ...process.env,
  GIT_AUTHOR_NAME: "dev",
  GIT_AUTHOR_EMAIL: "d@example.com",
  GIT_COMMITTER_NAME: "dev",
  GIT_COMMITTER_EMAIL: "d@example.com",
};
/** git in a user's repository. Never without one: git would then work on this checkout (a test run
 *  alone, whose repository an earlier test makes, once left this checkout on a branch of its own). */
export const sh = (cwd: string | undefined, ...args: string[]) => {
  if (!cwd || !cwd.startsWith(work)) throw new Error(`git ${args.join(" ")}: no user repository (${cwd}); an earlier test makes it`);
  return execFileSync("git", args, { cwd, env: gitEnv, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
};

/** What a repository changes in the example's workflow (the action's inputs it adds), by repository. */
export const WITH: Record<string, string[]> = {
  // Forks that expired long ago, so that the night's sweep has one to destroy.
  "acme/ops": ["expires: 2026-01-01T00:00:00Z"],
};
/** What every repository adds: the Tiger Cloud API is the simulator's, not the public one. */
const EVERY_WITH = ["tiger-api-url: ${{ secrets.TIGER_API_URL }}"];
/** SQL files a repository's rules file adds (sqlFiles, beside it), by repository: dollar signs as SQL writes them. */
const SQL_FILES: Record<string, Record<string, string>> = {
  "acme/ops": { "ops.sql": "DO $body$ BEGIN CREATE TABLE dollar_quoted (note text DEFAULT '${kept} $$1'); END $body$;\n" },
};
export const repositories = new Map<string, string>();

/** A user's repository holding the example's two files and nothing else, committed. */
export function userRepository(name: string): string {
  const dir = path.join(work, "repos", name.replace("/", "-"));
  for (const file of [WORKFLOW, RULES]) {
    fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    fs.copyFileSync(path.join(EXAMPLE, file), path.join(dir, file));
  }
  for (const [file, text] of Object.entries(SQL_FILES[name] ?? {})) {
    fs.writeFileSync(path.join(dir, ".github", file), text);
    fs.appendFileSync(path.join(dir, RULES), `sqlFiles: [${file}]\n`);
  }
  repositories.set(name, dir);
  const added = [...EVERY_WITH, ...(WITH[name] ?? [])];
  if (added.length > 0) {
    const workflow = path.join(dir, WORKFLOW);
    fs.writeFileSync(workflow, `${fs.readFileSync(workflow, "utf8").trimEnd()}\n${added.map((l) => `          ${l}`).join("\n")}\n`);
  }
  sh(dir, "init", "--quiet", "--initial-branch=main");
  sh(dir, "add", "-A");
  sh(dir, "commit", "--quiet", "-m", "A database for each pull request");
  return dir;
}

/** A repository's runner; `bare`: GitHub gives its runs no variable and no secret (as for a pull request from another repository). */
export function runnerOf(repository: string, bare = false): WorkflowRunner {
  let runner = runners.get(repository);
  if (runner) return runner;
  const { basePath, pulumiPath } = runnerPaths(ROOT);
  const dir = userRepository(repository);
  api.addRepository(repository, dir);
  const options: RunnerOptions = {
    repository: dir,
    repositoryName: repository,
    secrets: bare
      ? {}
      : {
          TIGER_PUBLIC_KEY: sim.keyPair.publicKey,
          TIGER_SECRET_KEY: sim.keyPair.secretKey,
          TIGER_API_URL: sim.url,
          // No sidecars (docs/pr-databases.md): two runs at once, one reading a sidecar the other is rewriting, read it empty (EOF).
          PULUMI_BACKEND_URL: `file://${path.join(work, "state")}?metadata=skip`,
          PULUMI_CONFIG_PASSPHRASE: "pr-database-e2e",
        },
    vars: bare ? {} : { SOURCE_SERVICE_ID: ids.serviceId },
    githubApiUrl: api.url,
    issueToken: (p) => api.issueToken(p),
    basePath,
    pulumiPath,
    work: path.join(work, "jobs"),
    npmCache: path.join(work, "npm"),
    // GitHub's releases, as the engine and `pulumi plugin install` reach them: here, the stand-in.
    machineEnv: release.githubEnv(),
    // The action, as GitHub fetches tigercloud/pulumi-tigercloud at the ref the workflow names: this checkout.
    actions: { "tigercloud/pulumi-tigercloud": ROOT },
    // The plugin the first job downloaded and installed, as a user's runner does, serves every job after it.
    pluginCache: path.join(work, "plugin-cache"),
  };
  fs.mkdirSync(options.work, { recursive: true });
  fs.mkdirSync(options.npmCache, { recursive: true });
  runner = new WorkflowRunner(options);
  runners.set(repository, runner);
  return runner;
}

/**
 * A pull request's event: its base is main as it is now, its head the branch `branch` (main itself
 * when none is named: a pull request that changes nothing of the two files).
 */
export function pullRequest(
  repository: string,
  number: number,
  action: string,
  { fromFork = false, branch = "main", base = "main" } = {},
): GitHubEvent {
  if (!repositories.has(repository)) runnerOf(repository);
  const dir = repositories.get(repository);
  const shaOf = (ref: string) => (dir ? sh(dir, "rev-parse", ref).trim() : "0000000");
  const head = { ref: `feature-${number}`, sha: shaOf(branch), repo: { full_name: fromFork ? "someone/fork" : repository } };
  return {
    name: "pull_request",
    payload: { action, number, pull_request: { number, head, base: { ref: base, sha: shaOf(base), repo: { full_name: repository } } } },
  };
}

/** A commit on `branch` of the repository (made from main when new) changing its rules file as `change` says. */
export function changeRules(repository: string, branch: string, change: (rules: string) => string, message: string): void {
  const dir = repositories.get(repository) as string;
  sh(dir, "checkout", "--quiet", ...(sh(dir, "branch", "--list", branch).trim() ? [branch] : ["-b", branch]));
  fs.writeFileSync(path.join(dir, RULES), change(fs.readFileSync(path.join(dir, RULES), "utf8")));
  sh(dir, "commit", "--quiet", "--allow-empty", "-am", message);
  sh(dir, "checkout", "--quiet", "main");
}

/** The event in `repository`; its one job, which must end with `status` (its log in the failure otherwise). */
export async function trigger(repository: string, event: GitHubEvent, status = 0): Promise<JobRun> {
  if (event.name === "pull_request") api.pullRequestEvent(repository, event.payload.number, event.payload.action);
  const jobs = (await runnerOf(repository).trigger(event)).filter((j) => j.ran);
  ran.push(...jobs);
  const job = jobs[0];
  if (jobs.length !== 1 || !job || job.status !== status)
    throw new Error(
      `${repository} ${event.name}: wanted one job ending ${status}, got ${jobs.map((j) => `${j.job} ${j.status}`).join(", ")}\n${jobs.map((j) => j.log).join("\n---\n")}`,
    );
  return job;
}

/** The plugin's downloads from the release so far (its archive fetched). */
export const downloads = () => release.requests().filter((r) => r.method === "GET" && r.path.startsWith("/releases/download/"));
/** The release's one archive, by its name. */
export const releasedArchive = () => fs.readdirSync(path.join(work, "release"))[0];
export const forksNamed = (name: string) => sim.services(ids.projectId).filter((s) => s.name === name && s.forked_from);
export const psql = async (uri: string, sql: string) =>
  (await run("psql", [uri, "-X", "-A", "-t", "-c", sql], { timeout: 20_000 })).stdout.trim();
export const PRODUCTION = Array.from({ length: PERSONAL_ROWS }, (_, i) => Object.values(customerRow(i + 1))).flat();

/** The suite's simulator, GitHub's stand-ins and work folder, made before its tests and removed after; `name` in the log of the jobs' steps. */
export function prDatabaseLab(name: string): void {
  beforeAll(async () => {
    sim = new Simulator({
      delays: { ...NO_DELAYS, forkQueuedMs: 200, forkConfiguringMs: 200, stopMs: 200, startMs: 300 },
      databases: "postgres",
    });
    await sim.start();
    ids = sim.defaults();
    api = new GitHubApi();
    await api.start();
    work = fs.mkdtempSync(path.join(os.tmpdir(), "tigercloud-pr-database-"));
    fs.mkdirSync(path.join(work, "state"));
    // The release the action's version names, with this platform's archive.
    const { packPlugin } = require("../../../scripts/pack-plugin") as { packPlugin: () => string };
    const assets = path.join(work, "release");
    fs.mkdirSync(assets);
    const archive = packPlugin();
    fs.copyFileSync(archive, path.join(assets, path.basename(archive)));
    release = await releaseServer(assets, VERSION);
  });

  afterAll(async () => {
    const steps = ran.flatMap((j) => j.steps.map((s) => `${s.title} ${s.seconds.toFixed(1)} s`));
    process.stderr.write(`${name}, the jobs' steps:\n  ${steps.join("\n  ")}\n`);
    await release?.close();
    await api?.stop();
    await sim?.stop();
    if (work) fs.rmSync(work, { recursive: true, force: true });
  });
}

/** A golden repository's golden forks (every generation), those serving (not being deleted), and its night (its one job, ending `status`). */
export function goldenOf(repo: string) {
  const goldenForks = () =>
    sim.services(ids.projectId).filter((s) => /^golden-[0-9-]+\./.test(s.name) && s.name.endsWith(`.${repo.replace("/", ".")}`));
  const serving = () => goldenForks().filter((s) => !/^DELET/.test(s.status));
  const night = (status = 0) => trigger(repo, { name: "schedule", cron: "0 20 * * 1-5" }, status);
  return { goldenForks, serving, night };
}
