// Every workflow under examples/ run as GitHub runs it (test/support/gitops/runner.ts): a user's
// repository laid out by the guide's own copy commands (docs/pr-databases.md) and committed, then
// for each event each job in a fresh clone, with only the environment the workflow declares and
// the `run:` steps of the YAML as committed. Against the simulator with real PostgreSQL behind each
// fork (the PR example waits for a login), a file state backend standing in for S3, and a local
// stand-in of GitHub's API.
import { execFileSync } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { Client } from "pg";
import { GitHubApi } from "../support/gitops/githubApi";
import { type GitHubEvent, type JobRun, type RunnerOptions, WorkflowRunner } from "../support/gitops/runner";
import { NO_DELAYS, Simulator } from "../../simulator";
import { packedTarball } from "../support/lab/harness";

jest.setTimeout(300_000);
const ROOT = path.join(__dirname, "..", "..");
const SDK_VERSION = (JSON.parse(fs.readFileSync(path.join(ROOT, "package.json"), "utf8")) as { devDependencies: Record<string, string> })
  .devDependencies["@pulumi/pulumi"] as string;
const REPOSITORY = "acme/shop";
/** A second repository of the same team, whose pull requests fork the same production service. */
const OTHER_REPOSITORY = "acme/web";

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

/** The guide's copy commands for the PR pipeline, as a user runs them in the root of their repository. */
function readmeCopyCommands(): string {
  const readme = fs.readFileSync(path.join(ROOT, "docs", "pr-databases.md"), "utf8");
  const section = readme.slice(readme.indexOf("## GitOps: a fork for each pull request"));
  return (/```sh\n([\s\S]*?)```/.exec(section) as RegExpExecArray)[1] as string;
}

/** The user's repository after following the README for both pipelines: committed, main checked out. */
function buildRepository(tarball: string): string {
  const dir = path.join(work, "shop");
  fs.mkdirSync(path.join(dir, "vendor"), { recursive: true });
  fs.copyFileSync(tarball, path.join(dir, "vendor", path.basename(tarball)));
  const commands = readmeCopyCommands();
  expect(commands).toMatch(/^\(cd infra\/pr-fork && npm install\)/m);
  for (const example of ["pr-fork", "production"]) {
    // The package is not on the npm registry yet: as the README says, the dependency points at the
    // tarball `npm pack` makes, committed beside the project. The SDK is the version the suite tests.
    const install = `npm install --no-audit --no-fund --loglevel=error ../../vendor/${path.basename(tarball)} @pulumi/pulumi@${SDK_VERSION}`;
    sh(
      dir,
      commands
        .replace(/path\/to\/examples/g, path.join(ROOT, "examples"))
        .replace(/pr-fork/g, example)
        .replace(/npm install\)/, `${install})`),
    );
  }
  fs.writeFileSync(path.join(dir, ".gitignore"), "node_modules/\n");
  sh(
    dir,
    "git init --quiet --initial-branch=main && git add -A && git commit --quiet -m 'infra: PR forks and production, as the README says'",
    gitEnv(),
  );
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

function pullRequest(
  number: number,
  action: string,
  options: { fromFork?: boolean; merged?: boolean; repository?: string } = {},
): GitHubEvent {
  const repository = options.repository ?? REPOSITORY;
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

/** The name of a pull request's stack, and of its fork: pr-<number>.<owner>.<repo>. */
function prName(pr: number, repository = REPOSITORY): string {
  return `pr-${pr}.${repository.replace("/", ".")}`;
}

/** The PR's forks the simulator holds (a deleted one stays listed here with status DELETED). */
function forks(pr: number, repository = REPOSITORY): { id: string; status: string }[] {
  return sim
    .services(ids.projectId)
    .filter((s) => s.name === prName(pr, repository))
    .map((s) => ({ id: s.service_id, status: s.status }));
}

/** Logs in with a job's DATABASE_URL; says which endpoint answered. */
async function logIn(url: string): Promise<string> {
  const client = new Client({ connectionString: `${url}&uselibpqcompat=true` });
  await client.connect();
  try {
    expect((await client.query<{ one: number }>("select 1 as one")).rows).toEqual([{ one: 1 }]);
  } finally {
    await client.end();
  }
  return `${new URL(url).hostname}:${new URL(url).port}`;
}

function endpointOf(serviceId: string | undefined): string {
  const endpoint = sim.service(ids.projectId, serviceId as string)?.endpoint;
  return `${endpoint?.host}:${endpoint?.port}`;
}

function stackExists(name: string): boolean {
  const found: string[] = [];
  const walk = (d: string): void => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      if (e.isDirectory()) walk(path.join(d, e.name));
      else if (e.name === `${name}.json`) found.push(e.name);
    }
  };
  walk(path.join(work, "state", ".pulumi", "stacks"));
  return found.length > 0;
}

beforeAll(async () => {
  sim = new Simulator({
    delays: { ...NO_DELAYS, forkQueuedMs: 200, forkConfiguringMs: 200, stopMs: 200, startMs: 300, setHAMs: 200 },
    databases: "postgres",
  });
  await sim.start();
  ids = sim.defaults();
  api = new GitHubApi();
  await api.start();
  work = fs.mkdtempSync(path.join(os.tmpdir(), "tigercloud-workflows-"));
  fs.mkdirSync(path.join(work, "state"));
  repo = buildRepository(packedTarball());

  // The key pair, as the README tells a pipeline to use; no bearer TIGER_API_KEY, so a workflow that
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
    SOURCE_SERVICE_ID: ids.serviceId,
    PRODUCTION_SERVICE_ID: ids.serviceId,
    PRODUCTION_VPC_ID: ids.vpcId,
  });
  // A runner's PATH: the system's, without the Pulumi CLI (pulumi/actions adds it) or this repository's tools.
  const cliPath = process.env.PULUMI_TIGERCLOUD_CLI_PATH;
  if (!cliPath) throw new Error("run under scripts/with-pulumi.js (npm test), which finds the Pulumi CLI");
  const cliDirs = cliPath.split(path.delimiter);
  const basePath = (process.env.PATH ?? "")
    .split(path.delimiter)
    .filter((d) => d && !cliDirs.includes(d) && !d.startsWith(ROOT) && !fs.existsSync(path.join(d, "pulumi")))
    .join(path.delimiter);
  runnerOptions = {
    repository: repo,
    repositoryName: REPOSITORY,
    secrets,
    vars,
    githubApiUrl: api.url,
    issueToken: (p) => api.issueToken(p),
    basePath,
    pulumiPath: cliPath,
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

test("the repository is laid out by the README's commands: workflows where GitHub reads them, each project with its lock file, committed", () => {
  const files = sh(repo, "git ls-files").split("\n");
  expect(files.filter((f) => f.startsWith(".github/workflows/")).sort()).toEqual([
    ".github/workflows/pr-fork-nightly.yml",
    ".github/workflows/pr-fork.yml",
    ".github/workflows/production-apply.yml",
    ".github/workflows/production-drift.yml",
    ".github/workflows/production-plan.yml",
  ]);
  expect(files).toEqual(
    expect.arrayContaining(["infra/pr-fork/package-lock.json", "infra/pr-fork/pr-stack.sh", "infra/production/package-lock.json"]),
  );
  expect(files.filter((f) => f.startsWith("infra/") && f.includes("/.github/"))).toEqual([]);
  expect(files.filter((f) => /^Pulumi\..+\.yaml$/.test(path.basename(f)) || f.includes("node_modules/"))).toEqual([]);
});

test("PR opened: one fork, READY, a masked DATABASE_URL that logs in; the production plan is one comment. Pushed again: the same fork, the comment edited", async () => {
  const opened = await trigger(pullRequest(7, "opened"));
  expect(ranJobs(opened)).toEqual(["pr-fork.yml:fork", "production-plan.yml:plan"]);
  const fork = job(opened, "pr-fork.yml", "fork");
  const [first] = forks(7);
  expect(forks(7)).toEqual([{ id: first?.id, status: "READY" }]);
  expect(stackExists(prName(7))).toBe(true);
  expect(fork.log).toContain(`##[group]Preview and apply stack ${prName(7)}\n`);
  // The URL reached the next step (`test -n "$DATABASE_URL"` passed) and was masked first.
  const url = fork.exported.DATABASE_URL as string;
  expect(url).toMatch(/^postgresql:\/\/tsdbadmin:[^@]+@/);
  expect(fork.masked).toContain(url);
  const password = decodeURIComponent(new URL(url).password);
  expect(fork.log).not.toContain(password);
  expect(fork.log).toContain("DATABASE_URL is set for the next steps of this job.");
  expect(await logIn(url)).toBe(endpointOf(first?.id));

  const plan = job(opened, "production-plan.yml", "plan");
  expect(plan.permissions).toEqual({ metadata: "read", contents: "read", "pull-requests": "write" });
  const comments = (): string[] => api.comments.filter((c) => c.issue === 7).map((c) => c.body);
  expect(comments()).toHaveLength(1);
  expect(comments()[0]).toMatch(/^<!-- pulumi-tigercloud: plan of stack production -->\n### `pulumi preview` of stack production: planned/);
  expect(comments()[0]).toContain("production-ha");

  const sha = commit("a second push to PR 7");
  const forkRequests = sim.requests("forkService").length;
  const pushed = await trigger(pullRequest(7, "synchronize"));
  // The first run of the PR installed with npm ci and saved node_modules; this one restores them.
  const installs = (run: JobRun) => run.steps.filter((s) => s.title.startsWith("npm ci")).length;
  expect(installs(fork)).toBe(1);
  expect(fork.log).toMatch(/Cache not found for input keys: node-modules-Linux-node20-[0-9a-f]{64}\n/);
  const again = job(pushed, "pr-fork.yml", "fork");
  expect(installs(again)).toBe(0);
  expect(again.log).toMatch(/Cache restored from key: node-modules-Linux-node20-[0-9a-f]{64}\n/);
  job(pushed, "production-plan.yml", "plan");
  expect(sim.requests("forkService")).toHaveLength(forkRequests);
  expect(forks(7)).toEqual([{ id: first?.id, status: "READY" }]);
  expect(comments()).toHaveLength(1);
  expect(comments()[0]).toContain(`At commit ${sha}.`);
  expect(api.requests.filter((r) => r.method === "PATCH" && r.status === 200)).toHaveLength(1);
});

test("the nightly pause and resume, each in a fresh checkout: the fork stops and starts, from its own source even after the variable changed", async () => {
  const [fork] = forks(7);
  // The source the stack was made with stays the fork's source: a changed variable never re-forks at night.
  vars.SOURCE_SERVICE_ID = "svc-elsewhere";
  try {
    const paused = await trigger({ name: "schedule", cron: "0 20 * * 1-5" });
    expect(ranJobs(paused)).toEqual(["pr-fork-nightly.yml:pause-or-resume"]);
    expect(job(paused, "pr-fork-nightly.yml", "pause-or-resume").log).toContain(`== stack ${prName(7)}: pause`);
    expect(forks(7)).toEqual([{ id: fork?.id, status: "PAUSED" }]);

    const resumed = await trigger({ name: "schedule", cron: "0 6 * * 1-5" });
    expect(job(resumed, "pr-fork-nightly.yml", "pause-or-resume").log).toContain(`== stack ${prName(7)}: resume`);
    expect(forks(7)).toEqual([{ id: fork?.id, status: "READY" }]);
  } finally {
    vars.SOURCE_SERVICE_ID = ids.serviceId;
  }
});

test("a manual dispatch pauses every PR's fork; the PR's next push starts it again", async () => {
  const [fork] = forks(7);
  const paused = await trigger({ name: "workflow_dispatch", workflow: "pr-fork-nightly.yml", inputs: { action: "pause" } });
  expect(ranJobs(paused)).toEqual(["pr-fork-nightly.yml:pause-or-resume"]);
  job(paused, "pr-fork-nightly.yml", "pause-or-resume");
  expect(forks(7)).toEqual([{ id: fork?.id, status: "PAUSED" }]);

  commit("a third push to PR 7");
  job(await trigger(pullRequest(7, "synchronize")), "pr-fork.yml", "fork");
  expect(forks(7)).toEqual([{ id: fork?.id, status: "READY" }]);
});

test("two repositories open PR 12, forking the same service: two forks, two stacks, each DATABASE_URL logs in to its own; the nightly pause and a close touch only their repository's", async () => {
  // acme/web: a second repository of the team with the same PR pipeline (a clone of the user's,
  // without the production one), the same secrets and variables, so the same backend and source.
  const webRepo = path.join(work, "web");
  sh(work, `git clone --quiet ${JSON.stringify(repo)} web`);
  sh(
    webRepo,
    "git rm --quiet -r .github/workflows/production-*.yml infra/production && git commit --quiet -m 'the PR pipeline only'",
    gitEnv(),
  );
  const webWork = path.join(work, "web-runner");
  fs.mkdirSync(webWork);
  const web = new WorkflowRunner({ ...runnerOptions, repository: webRepo, repositoryName: OTHER_REPOSITORY, work: webWork });

  const forkRequests = sim.requests("forkService").length;
  const shopJob = job(await trigger(pullRequest(12, "opened")), "pr-fork.yml", "fork");
  const webOpened = await trigger(pullRequest(12, "opened", { repository: OTHER_REPOSITORY }), web);
  expect(ranJobs(webOpened)).toEqual(["pr-fork.yml:fork"]);
  const webJob = job(webOpened, "pr-fork.yml", "fork");
  expect(webJob.log).toContain(`##[group]Preview and apply stack pr-12.acme.web\n`);

  // The second job made a fork of its own: it did not adopt the first's, which would have reset
  // the password the first job's DATABASE_URL holds.
  expect(webJob.log).not.toMatch(/adopting fork|take over/);
  expect(sim.requests("forkService")).toHaveLength(forkRequests + 2);
  expect(sim.requests("updatePassword")).toHaveLength(0);
  // Each job's URL logs in, to a fork of its own; the first still does after the second job ran.
  const shopUrl = shopJob.exported.DATABASE_URL as string;
  const webUrl = webJob.exported.DATABASE_URL as string;
  const [shopAt, webAt] = [await logIn(shopUrl), await logIn(webUrl)];
  expect(shopAt).not.toBe(webAt);
  // Each fork is READY under its repository's name, and each stack has that name too.
  const [shopFork] = forks(12);
  const [webFork] = forks(12, OTHER_REPOSITORY);
  expect(forks(12)).toEqual([{ id: expect.any(String), status: "READY" }]);
  expect(forks(12, OTHER_REPOSITORY)).toEqual([{ id: expect.any(String), status: "READY" }]);
  expect([endpointOf(shopFork?.id), endpointOf(webFork?.id)]).toEqual([shopAt, webAt]);
  expect([stackExists("pr-12.acme.shop"), stackExists("pr-12.acme.web")]).toEqual([true, true]);

  // The user's nightly pause lists the backend's stacks and pauses its own PR's fork only.
  const paused = job(await trigger({ name: "schedule", cron: "0 20 * * 1-5" }), "pr-fork-nightly.yml", "pause-or-resume");
  expect(paused.log).toContain("== stack pr-12.acme.shop: pause");
  expect(paused.log).not.toContain("== stack pr-12.acme.web");
  expect(forks(12)).toEqual([{ id: shopFork?.id, status: "PAUSED" }]);
  expect(forks(12, OTHER_REPOSITORY)).toEqual([{ id: webFork?.id, status: "READY" }]);

  // The user's PR 12 closed: its fork deleted, its stack removed; acme/web's fork runs on, and its
  // URL still logs in.
  const closed = job(await trigger(pullRequest(12, "closed", { merged: true })), "pr-fork.yml", "destroy");
  expect(closed.log).toContain(`fork ${shopFork?.id} is deleted`);
  expect(closed.log).not.toContain(webFork?.id as string);
  expect(forks(12)).toEqual([{ id: shopFork?.id, status: "DELETED" }]);
  expect(forks(12, OTHER_REPOSITORY)).toEqual([{ id: webFork?.id, status: "READY" }]);
  expect([stackExists("pr-12.acme.shop"), stackExists("pr-12.acme.web")]).toEqual([false, true]);
  expect(await logIn(webUrl)).toBe(endpointOf(webFork?.id));
});

test("PR closed while the state backend is broken: the job fails and leaves the fork; that night's sweep destroys the stack and its fork, deletes an old fork no stack holds, and keeps what it must", async () => {
  const [fork] = forks(7);
  const good = secrets.PULUMI_BACKEND_URL as string;
  secrets.PULUMI_BACKEND_URL = "file:///proc/tigercloud-no-backend";
  let broken: JobRun[];
  try {
    broken = await trigger(pullRequest(7, "closed"));
  } finally {
    secrets.PULUMI_BACKEND_URL = good;
  }
  expect(ranJobs(broken)).toEqual(["pr-fork.yml:destroy"]);
  const failed = job(broken, "pr-fork.yml", "destroy", 1);
  expect(failed.log).toContain("the state backend could not list the stacks");
  expect(failed.log).toMatch(/error: .*tigercloud-no-backend|proc/);
  expect(failed.log).not.toContain("nothing to destroy");
  // The fork is left as it was (paused by the last night's run).
  expect(forks(7)).toEqual([fork]);

  // Beside it, forks no pipeline made or will remove: one made by hand this morning and one
  // forgotten ten days ago, both named like the pipeline's; an old one named otherwise; and a
  // standby of production named like a PR's. acme/web's PR 12 fork is held by that repository's stack.
  const tenDaysAgo = new Date(Date.now() - 10 * 86_400_000);
  const young = sim.outOfBand.addFork(ids.projectId, ids.serviceId, { name: prName(90) });
  const forgotten = sim.outOfBand.addFork(ids.projectId, ids.serviceId, { name: prName(91), createdAt: tenDaysAgo });
  const scratch = sim.outOfBand.addFork(ids.projectId, ids.serviceId, { name: "scratch", createdAt: tenDaysAgo });
  const standby = sim.outOfBand.addFork(ids.projectId, ids.serviceId, { name: prName(92), createdAt: tenDaysAgo, standby: true });
  const [webFork] = forks(12, OTHER_REPOSITORY);

  const nightly = job(await trigger({ name: "schedule", cron: "0 20 * * 1-5" }), "pr-fork-nightly.yml", "pause-or-resume");
  // The list: each fork with the stack that holds it and its pull request.
  const row = (id: string | undefined) => (nightly.log.split("\n").find((l) => l.startsWith(`${id} `)) ?? "").split(/\s{2,}/);
  expect(nightly.log).toMatch(/^ID +NAME +SOURCE +STATUS +AGE +COMPUTE +STORAGE +STACK +PR$/m);
  expect(row(fork?.id)).toEqual([
    fork?.id,
    prName(7),
    ids.serviceId,
    "PAUSED",
    expect.stringMatching(/^\d+m$/),
    expect.stringMatching(/CPU\/\d+ GB$/),
    expect.stringMatching(/B$/),
    prName(7),
    "#7 closed",
  ]);
  expect(row(webFork?.id).slice(-2)).toEqual(["pr-12.acme.web", "-"]);
  // The sweep, each decision with its reason, and what it did.
  expect(nightly.log).toContain(
    `DESTROY stack ${prName(7)}: pull request #7 is closed; its forks go as their onDestroy says: ${fork?.id} (onDestroy: delete)`,
  );
  expect(nightly.log).toContain(`fork ${fork?.id} is deleted`);
  expect(nightly.log).toContain(
    `DELETE fork ${forgotten} "${prName(91)}": no stack holds it, it is 10d 0h old, and named like pr-*.acme.shop`,
  );
  expect(nightly.log).toContain(`keep fork ${young} "${prName(90)}": no stack holds it, but it is 0m old, younger than 2d 0h`);
  expect(nightly.log).toContain(`keep fork ${scratch} "scratch": no stack holds it, but it is not named like pr-*.acme.shop`);
  expect(nightly.log).toContain(`keep fork ${webFork?.id} "pr-12.acme.web": held by stack pr-12.acme.web\n`);
  expect(nightly.log).toContain(`keep fork ${fork?.id} "${prName(7)}": held by stack ${prName(7)} (destroyed above`);
  expect(nightly.log).toContain(`1 standby(s) of ${ids.serviceId} left alone`);
  expect(nightly.log).not.toContain(standby);

  expect(forks(7)).toEqual([{ id: fork?.id, status: "DELETED" }]);
  expect(stackExists(prName(7))).toBe(false);
  expect(sim.service(ids.projectId, forgotten)?.status).toMatch(/^DELET/);
  for (const kept of [young, scratch, standby, webFork?.id as string]) expect(sim.service(ids.projectId, kept)?.status).toBe("READY");
  expect(stackExists("pr-12.acme.web")).toBe(true);
  // GitHub was asked with the job's own token, which may read pull requests and write nothing.
  expect(nightly.permissions).toEqual({ metadata: "read", contents: "read", "pull-requests": "read" });
  expect(api.requests).toContainEqual({ method: "GET", path: `/repos/${REPOSITORY}/pulls/7`, status: 200 });
});

test("PR reopened: a new fork; closed again, merged: deleted; closed once more: no stack, nothing to do", async () => {
  const reopened = await trigger(pullRequest(7, "reopened"));
  expect(ranJobs(reopened)).toEqual(["pr-fork.yml:fork", "production-plan.yml:plan"]);
  job(reopened, "pr-fork.yml", "fork");
  const live = forks(7).filter((f) => f.status !== "DELETED");
  expect(live).toEqual([{ id: expect.any(String), status: "READY" }]);

  job(await trigger(pullRequest(7, "closed", { merged: true })), "pr-fork.yml", "destroy");
  expect(forks(7).map((f) => f.status)).toEqual(["DELETED", "DELETED"]);
  expect(stackExists(prName(7))).toBe(false);

  const again = job(await trigger(pullRequest(7, "closed")), "pr-fork.yml", "destroy");
  expect(again.log).toContain(`No stack ${prName(7)}: nothing to destroy.`);
});

test("a PR from a fork repository: no fork and no plan, a notice says why, and nothing fails", async () => {
  const writes = sim.requests().filter((r) => r.method !== "GET").length;
  const comments = api.comments.length;
  const jobs = await trigger(pullRequest(8, "opened", { fromFork: true }));
  expect(ranJobs(jobs)).toEqual(["pr-fork.yml:from-a-fork-repository", "production-plan.yml:from-a-fork-repository"]);
  for (const j of jobs.filter((x) => x.ran)) {
    expect(j.status).toBe(0);
    expect(j.annotations).toEqual([
      expect.objectContaining({ level: "notice", message: expect.stringContaining("comes from a fork repository") }),
    ]);
  }
  expect(sim.requests().filter((r) => r.method !== "GET")).toHaveLength(writes);
  expect(api.comments).toHaveLength(comments);
});

test("production: a push to main applies; a change made in the console is drift the daily check names; a manual apply puts it back", async () => {
  const applied = await trigger({ name: "push", ref: "refs/heads/main" });
  expect(ranJobs(applied)).toEqual(["production-apply.yml:apply"]);
  job(applied, "production-apply.yml", "apply");
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

test("least privilege and queues: only the plan may write to pull requests, only the nightly sweep read them; no later event shares a close's concurrency group", () => {
  for (const j of ran) {
    const may = j.job === "plan" ? "write" : j.workflow === "pr-fork-nightly.yml" ? "read" : undefined;
    expect(j.permissions["pull-requests"]).toBe(may);
  }
  // GitHub keeps concurrency groups per repository.
  const groups = new Map<string, Set<string>>();
  for (const j of ran.filter((x) => x.concurrencyGroup)) {
    const key = `${j.repository} ${j.concurrencyGroup}`;
    const set = groups.get(key) ?? new Set<string>();
    set.add(`${j.workflow}:${j.job}`);
    groups.set(key, set);
  }
  for (const pr of [7, 12]) {
    expect([...(groups.get(`${REPOSITORY} pr-fork-${pr}-close`) ?? [])]).toEqual(["pr-fork.yml:destroy"]);
    expect([...(groups.get(`${REPOSITORY} pr-fork-${pr}`) ?? [])]).toEqual(["pr-fork.yml:fork"]);
  }
  expect([...(groups.get(`${OTHER_REPOSITORY} pr-fork-12`) ?? [])]).toEqual(["pr-fork.yml:fork"]);
});
