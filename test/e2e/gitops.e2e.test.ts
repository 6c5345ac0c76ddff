// The production pipeline (examples/production's workflows) run as GitHub runs it
// (test/support/gitops/runner.ts): a user's repository laid out by the guide's own copy commands
// (docs/production.md) and committed, then for each event each job in a fresh clone, with only the
// environment the workflow declares and the `run:` steps of the YAML as committed. Against the
// simulator, a file state backend standing in for S3, and a local stand-in of GitHub's API. (The PR
// pipeline, the PR database action, has its own suites: prDatabase.e2e.test.ts and the two beside it.)
import { execFileSync } from "child_process";
import * as crypto from "crypto";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { GitHubApi } from "../support/gitops/githubApi";
import { type GitHubEvent, type JobRun, type RunnerOptions, runnerPaths, WorkflowRunner } from "../support/gitops/runner";
import { NO_DELAYS, Simulator } from "../../simulator";
import { packedTarball } from "../support/lab/harness";

jest.setTimeout(300_000);
const ROOT = path.join(__dirname, "..", "..");
/** The SDK a user installs today: the main lane's (scripts/toolchain.js). */
const SDK_VERSION = (require("../../scripts/toolchain") as { main: { sdk: string } }).main.sdk;
const REPOSITORY = "acme/shop";

let sim: Simulator;
let api: GitHubApi;
let work: string;
let repo: string;
let runner: WorkflowRunner;
let runnerOptions: RunnerOptions;
let ids: ReturnType<Simulator["defaults"]>;
const secrets: Record<string, string> = {};
const vars: Record<string, string> = {};
/** Every job that ran in this file, for the concurrency rules. */
const ran: JobRun[] = [];

function sh(cwd: string, script: string, env: NodeJS.ProcessEnv = process.env): string {
  return execFileSync("bash", ["-eo", "pipefail", "-c", script], { cwd, env, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
}

/** The guide's copy commands for the production pipeline, as a user runs them in the root of their repository. */
function guideCopyCommands(): string {
  const guide = fs.readFileSync(path.join(ROOT, "docs", "production.md"), "utf8");
  return (/```sh\n([\s\S]*?)```/.exec(guide) as RegExpExecArray)[1] as string;
}

/** The user's repository after following the guide: committed, main checked out. */
function buildRepository(tarball: string): string {
  const dir = path.join(work, "shop");
  fs.mkdirSync(path.join(dir, "vendor"), { recursive: true });
  fs.copyFileSync(tarball, path.join(dir, "vendor", path.basename(tarball)));
  const commands = guideCopyCommands();
  expect(commands).toMatch(/^\(cd infra\/production && npm install\)/m);
  // The package is not on the npm registry yet: the dependency points at the tarball `npm pack`
  // makes, committed beside the project. The SDK is the version the suite tests.
  const install = `npm install --no-audit --no-fund --loglevel=error ../../vendor/${path.basename(tarball)} @pulumi/pulumi@${SDK_VERSION}`;
  sh(dir, commands.replace(/path\/to\/examples/g, path.join(ROOT, "examples")).replace(/npm install\)/, `${install})`));
  fs.writeFileSync(path.join(dir, ".gitignore"), "node_modules/\n");
  sh(dir, "git init --quiet --initial-branch=main && git add -A && git commit --quiet -m 'infra: production, as the guide says'", gitEnv());
  return dir;
}

function gitEnv(): NodeJS.ProcessEnv {
  return {
    ...process.env,
    GIT_AUTHOR_NAME: "dev",
    GIT_AUTHOR_EMAIL: "dev@example.com",
    GIT_COMMITTER_NAME: "dev",
    GIT_COMMITTER_EMAIL: "dev@example.com",
  };
}

/** A new commit on main: what a push to the pull request brings. */
function commit(message: string): string {
  fs.appendFileSync(path.join(repo, "CHANGES"), `${message}\n`);
  return sh(repo, `git add -A && git commit --quiet -m ${JSON.stringify(message)} && git rev-parse HEAD`, gitEnv()).trim();
}

function pullRequest(number: number, action: string, options: { fromFork?: boolean; merged?: boolean } = {}): GitHubEvent {
  const repository = REPOSITORY;
  const head = { ref: `feature-${number}`, repo: { full_name: options.fromFork ? "someone/shop" : repository } };
  return {
    name: "pull_request",
    payload: {
      action,
      number,
      pull_request: { number, merged: options.merged ?? false, head, base: { ref: "main", repo: { full_name: repository } } },
    },
  };
}

/** Runs the event in a repository: the user's, unless another runner is given. */
async function trigger(event: GitHubEvent, on: WorkflowRunner = runner): Promise<JobRun[]> {
  // GitHub's API then says the pull request is open or closed, whatever the jobs do.
  if (event.name === "pull_request") {
    const base = event.payload.pull_request.base as { repo: { full_name: string } };
    api.pullRequestEvent(base.repo.full_name, event.payload.number, event.payload.action);
  }
  const jobs = await on.trigger(event);
  ran.push(...jobs.filter((j) => j.ran));
  return jobs;
}

/** The one job that ran in this workflow; fails, with every job's log, if that is not so. */
function job(jobs: JobRun[], workflow: string, name: string, status = 0): JobRun {
  const found = jobs.find((j) => j.workflow === workflow && j.job === name);
  const logs = jobs
    .filter((j) => j.ran)
    .map((j) => `--- ${j.workflow} ${j.job}: exit ${j.status}\n${j.log}`)
    .join("\n");
  if (!found?.ran || found.status !== status)
    throw new Error(`${workflow} ${name}: wanted exit ${status}, got ${found?.ran ? found.status : "not run"}\n${logs}`);
  return found;
}

function ranJobs(jobs: JobRun[]): string[] {
  return jobs
    .filter((j) => j.ran)
    .map((j) => `${j.workflow}:${j.job}`)
    .sort();
}

beforeAll(async () => {
  sim = new Simulator({
    delays: { ...NO_DELAYS, setHAMs: 200 },
  });
  await sim.start();
  ids = sim.defaults();
  api = new GitHubApi();
  await api.start();
  work = fs.mkdtempSync(path.join(os.tmpdir(), "tigercloud-workflows-"));
  fs.mkdirSync(path.join(work, "state"));
  repo = buildRepository(packedTarball());

  // The key pair, as the guide tells a pipeline to use; no bearer TIGER_API_KEY, so a workflow that
  // still relied on one would fail here.
  Object.assign(secrets, {
    TIGER_PUBLIC_KEY: sim.keyPair.publicKey,
    TIGER_SECRET_KEY: sim.keyPair.secretKey,
    PULUMI_BACKEND_URL: `file://${path.join(work, "state")}`,
    PULUMI_CONFIG_PASSPHRASE: "gitops-e2e",
  });
  Object.assign(vars, {
    TIGER_API_URL: sim.url,
    TIGER_PROJECT_ID: ids.projectId,
    PRODUCTION_SERVICE_ID: ids.serviceId,
    PRODUCTION_VPC_ID: ids.vpcId,
  });
  const { basePath, pulumiPath } = runnerPaths(ROOT);
  runnerOptions = {
    repository: repo,
    repositoryName: REPOSITORY,
    secrets,
    vars,
    githubApiUrl: api.url,
    issueToken: (p) => api.issueToken(p),
    basePath,
    pulumiPath,
    work,
    npmCache: path.join(os.homedir(), ".npm"),
  };
  runner = new WorkflowRunner(runnerOptions);
});

afterAll(async () => {
  // Where the jobs' time went: every step's total, slowest first (the figures for the closing note).
  const totals = new Map<string, { seconds: number; runs: number }>();
  for (const step of ran.flatMap((j) => j.steps.map((s) => ({ ...s, title: `${j.workflow}: ${s.title}` })))) {
    const t = totals.get(step.title) ?? { seconds: 0, runs: 0 };
    totals.set(step.title, { seconds: t.seconds + step.seconds, runs: t.runs + 1 });
  }
  const lines = [...totals].sort((a, b) => b[1].seconds - a[1].seconds).slice(0, 8);
  process.stdout.write(
    `workflow steps, slowest: ${lines.map(([title, t]) => `\n  ${t.seconds.toFixed(1)} s in ${t.runs} runs: ${title}`).join("")}\n`,
  );
  await sim?.stop();
  await api?.stop();
  if (work) fs.rmSync(work, { recursive: true, force: true });
});

test("the repository is laid out by the guide's commands: workflows where GitHub reads them, the project with its lock file, committed", () => {
  const files = sh(repo, "git ls-files").split("\n");
  expect(files.filter((f) => f.startsWith(".github/workflows/")).sort()).toEqual([
    ".github/workflows/production-apply.yml",
    ".github/workflows/production-drift.yml",
    ".github/workflows/production-plan.yml",
  ]);
  expect(files).toEqual(expect.arrayContaining(["infra/production/package-lock.json", "infra/production/production.sh"]));
  expect(files.filter((f) => f.startsWith("infra/") && f.includes("/.github/"))).toEqual([]);
  expect(files.filter((f) => /^Pulumi\..+\.yaml$/.test(path.basename(f)) || f.includes("node_modules/"))).toEqual([]);
});

test("production: a pull request's plan is one comment; pushed again, the comment is edited and node_modules come from the cache", async () => {
  const opened = await trigger(pullRequest(7, "opened"));
  expect(ranJobs(opened)).toEqual(["production-plan.yml:plan"]);
  const plan = job(opened, "production-plan.yml", "plan");
  expect(plan.permissions).toEqual({ metadata: "read", contents: "read", "pull-requests": "write" });
  const comments = (): string[] => api.comments.filter((c) => c.issue === 7).map((c) => c.body);
  expect(comments()).toHaveLength(1);
  expect(comments()[0]).toMatch(/^<!-- pulumi-tigercloud: plan of stack production -->\n### `pulumi preview` of stack production: planned/);
  expect(comments()[0]).toContain("production-ha");

  const sha = commit("a second push to PR 7");
  const pushed = job(await trigger(pullRequest(7, "synchronize")), "production-plan.yml", "plan");
  // The first run of the PR installed with npm ci and saved node_modules; this one restores them.
  const installs = (run: JobRun) => run.steps.filter((s) => s.title.startsWith("npm ci")).length;
  expect(installs(plan)).toBe(1);
  expect(installs(pushed)).toBe(0);
  expect(pushed.log).toMatch(/Cache restored from key: node-modules-Linux-[^\n]*[0-9a-f]{64}\n/);
  expect(comments()).toHaveLength(1);
  expect(comments()[0]).toContain(`At commit ${sha}.`);
  expect(api.requests.filter((r) => r.method === "PATCH" && r.status === 200)).toHaveLength(1);
});

test("a PR from a fork repository: no plan, a notice says why, and nothing fails", async () => {
  const writes = sim.requests().filter((r) => r.method !== "GET").length;
  const comments = api.comments.length;
  const jobs = await trigger(pullRequest(8, "opened", { fromFork: true }));
  expect(ranJobs(jobs)).toEqual(["production-plan.yml:from-a-fork-repository"]);
  for (const j of jobs.filter((x) => x.ran)) {
    expect(j.status).toBe(0);
    expect(j.annotations).toEqual([
      expect.objectContaining({ level: "notice", message: expect.stringContaining("comes from a fork repository") }),
    ]);
  }
  expect(sim.requests().filter((r) => r.method !== "GET")).toHaveLength(writes);
  expect(api.comments).toHaveLength(comments);
});

/** What an earlier run on main saved under the key the workflows' cache step computes: the project's
 *  node_modules, as `npm ci` of its lock file makes them. Installing and caching is the plan's test. */
async function mainCachedModules(): Promise<void> {
  const lock = fs.readFileSync(path.join(repo, "infra", "production", "package-lock.json"));
  const hash = crypto.createHash("sha256").update(crypto.createHash("sha256").update(lock).digest()).digest("hex");
  await runner.seedCache(`node-modules-Linux-node20-${hash}`, "refs/heads/main", path.join(repo, "infra", "production", "node_modules"));
}

test("production: a push to main applies; a change made in the console is drift the daily check names; a manual apply puts it back", async () => {
  await mainCachedModules();
  const applied = await trigger({ name: "push", ref: "refs/heads/main" });
  expect(ranJobs(applied)).toEqual(["production-apply.yml:apply"]);
  expect(job(applied, "production-apply.yml", "apply").log).toMatch(/Cache restored from key: node-modules-Linux-node20-[0-9a-f]{64}\n/);
  expect(sim.service(ids.projectId, ids.serviceId)?.ha_replicas).toEqual({ replica_count: 2, sync_replica_count: 1 });
  expect(sim.vpc(ids.projectId, ids.vpcId)?.name).toBe("production");

  const drift = { name: "schedule", cron: "0 5 * * *" } as const;
  expect(job(await trigger(drift), "production-drift.yml", "drift").log).toContain("No drift");

  // Someone lowers HA in the console: the API's own setHA.
  const basic = Buffer.from(`${sim.keyPair.publicKey}:${sim.keyPair.secretKey}`).toString("base64");
  const res = await fetch(`${sim.url}/projects/${ids.projectId}/services/${ids.serviceId}/setHA`, {
    method: "POST",
    headers: { authorization: `Basic ${basic}`, "content-type": "application/json" },
    body: JSON.stringify({ replica_count: 1, sync_replica_count: 0 }),
  });
  expect(res.status).toBe(202);
  const drifted = job(await trigger(drift), "production-drift.yml", "drift", 1);
  expect(drifted.annotations).toEqual([
    {
      level: "error",
      title: "Drift in stack production",
      message: "production-ha (ServiceHA): replicaCount: 2 => 1; syncReplicaCount: 1 => 0",
    },
  ]);

  job(await trigger({ name: "workflow_dispatch", workflow: "production-apply.yml" }), "production-apply.yml", "apply");
  expect(sim.service(ids.projectId, ids.serviceId)?.ha_replicas).toEqual({ replica_count: 2, sync_replica_count: 1 });
  expect(job(await trigger(drift), "production-drift.yml", "drift").log).toContain("No drift");
});

test("production: a pull request that removes the HA block, merged: the apply succeeds, the block leaves the stack retained, and production keeps its replicas", async () => {
  // What such a pull request does to infra/production/index.ts: the ServiceHA and its output go.
  const file = path.join(repo, "infra", "production", "index.ts");
  const removed = fs
    .readFileSync(file, "utf8")
    .replace(/\n {2}const ha = new ServiceHA\([\s\S]*?\n {2}\);\n/, "\n")
    .replace("import { ServiceHA, VpcName }", "import { VpcName }")
    .replace(/return \{[^\n]*\};/, "return { vpcName: vpc.name };");
  expect(removed).not.toMatch(/ServiceHA|\bha\./);
  fs.writeFileSync(file, removed);
  commit("production: HA no longer declared here");
  expect(sim.service(ids.projectId, ids.serviceId)?.ha_replicas).toEqual({ replica_count: 2, sync_replica_count: 1 });
  const setHA = sim.requests("setHA").length;

  const applied = job(await trigger({ name: "push", ref: "refs/heads/main" }), "production-apply.yml", "apply");
  expect(sim.service(ids.projectId, ids.serviceId)?.ha_replicas).toEqual({ replica_count: 2, sync_replica_count: 1 });
  expect(sim.requests("setHA")).toHaveLength(setHA);
  // The engine's own word for it: the resource left the stack, retained.
  expect(applied.log).toMatch(/production-ha.*(retained|\[retain\])/);
  expect(sim.vpc(ids.projectId, ids.vpcId)?.name).toBe("production");
  // The last test of production: the repository keeps this commit.
});

test("least privilege: only the plan may write to pull requests, and no other job reads them", () => {
  expect(ran.length).toBeGreaterThan(5);
  for (const j of ran) expect(j.permissions["pull-requests"]).toBe(j.job === "plan" ? "write" : undefined);
});
