// The PR database action (actions/pr-database), as a user's repository uses it: a fresh repository
// holding only examples/pr-fork's workflow and rules file, each job in a fresh clone, run by the
// workflow runner (test/support/gitops/runner.ts) with the action read from this checkout, as GitHub
// fetches it at its ref. The plugin comes from a stand-in of GitHub's releases on loopback, fetched
// by the engine as for users; the simulator has a real PostgreSQL server behind every service, its
// parent holding customers' personal data and TimescaleDB's jobs. Open, push, a second repository,
// the nightly pause and sweep, close; and each in a fresh repository of its own: a pull request
// that drops a masking rule, one from another repository with no variable and no secret, a closed
// pull request's stack swept at night, a rule naming no column, the pull request's one comment.
import { execFileSync } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { promisify } from "util";
import { execFile } from "child_process";
import { customerRow, PERSONAL_ROWS, PERSONAL_TABLE } from "../../simulator/databases";
import { GitHubApi } from "../support/gitops/githubApi";
import { type GitHubEvent, type JobRun, type RunnerOptions, runnerPaths, WorkflowRunner } from "../support/gitops/runner";
import { releaseServer, type ReleaseServer } from "../support/releaseServer";
import { NO_DELAYS, Simulator } from "../../simulator";

jest.setTimeout(300_000);
const ROOT = path.join(__dirname, "..", "..");
const EXAMPLE = path.join(ROOT, "examples", "pr-fork");
const VERSION = (JSON.parse(fs.readFileSync(path.join(ROOT, "package.json"), "utf8")) as { version: string }).version;
const WORKFLOW = path.join(".github", "workflows", "pr-database.yml");
const RULES = path.join(".github", "pr-database.yml");
const run = promisify(execFile);

let sim: Simulator;
let api: GitHubApi;
let release: ReleaseServer;
let work: string;
let ids: ReturnType<Simulator["defaults"]>;
const runners = new Map<string, WorkflowRunner>();
const ran: JobRun[] = [];

const gitEnv = {
  ...process.env,
  GIT_AUTHOR_NAME: "dev",
  GIT_AUTHOR_EMAIL: "d@example.com",
  GIT_COMMITTER_NAME: "dev",
  GIT_COMMITTER_EMAIL: "d@example.com",
};
/** git in a user's repository. Never without one: git would then work on this checkout (a test run
 *  alone, whose repository an earlier test makes, once left this checkout on a branch of its own). */
const sh = (cwd: string | undefined, ...args: string[]) => {
  if (!cwd || !cwd.startsWith(work)) throw new Error(`git ${args.join(" ")}: no user repository (${cwd}); an earlier test makes it`);
  return execFileSync("git", args, { cwd, env: gitEnv, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
};

/** What a repository changes in the example's workflow (the action's inputs it adds), by repository. */
const WITH: Record<string, string[]> = {
  // Forks that expired long ago, so that the night's sweep has one to destroy.
  "acme/ops": ["expires: 2026-01-01T00:00:00Z"],
};
/** What every repository adds: the Tiger Cloud API is the simulator's, not the public one. */
const EVERY_WITH = ["tiger-api-url: ${{ secrets.TIGER_API_URL }}"];
/** SQL files a repository's rules file adds (sqlFiles, beside it), by repository: dollar signs as SQL writes them. */
const SQL_FILES: Record<string, Record<string, string>> = {
  "acme/ops": { "ops.sql": "DO $body$ BEGIN CREATE TABLE dollar_quoted (note text DEFAULT '${kept} $$1'); END $body$;\n" },
};
const repositories = new Map<string, string>();

/** A user's repository holding the example's two files and nothing else, committed. */
function userRepository(name: string): string {
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
function runnerOf(repository: string, bare = false): WorkflowRunner {
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
          PULUMI_BACKEND_URL: `file://${path.join(work, "state")}`,
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
function pullRequest(
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
function changeRules(repository: string, branch: string, change: (rules: string) => string, message: string): void {
  const dir = repositories.get(repository) as string;
  sh(dir, "checkout", "--quiet", ...(sh(dir, "branch", "--list", branch).trim() ? [branch] : ["-b", branch]));
  fs.writeFileSync(path.join(dir, RULES), change(fs.readFileSync(path.join(dir, RULES), "utf8")));
  sh(dir, "commit", "--quiet", "--allow-empty", "-am", message);
  sh(dir, "checkout", "--quiet", "main");
}

/** The event in `repository`; its one job, which must end with `status` (its log in the failure otherwise). */
async function trigger(repository: string, event: GitHubEvent, status = 0): Promise<JobRun> {
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
const downloads = () => release.requests().filter((r) => r.method === "GET" && r.path.startsWith("/releases/download/"));
const forksNamed = (name: string) => sim.services(ids.projectId).filter((s) => s.name === name && s.forked_from);
const psql = async (uri: string, sql: string) => (await run("psql", [uri, "-X", "-A", "-t", "-c", sql], { timeout: 20_000 })).stdout.trim();
const PRODUCTION = Array.from({ length: PERSONAL_ROWS }, (_, i) => Object.values(customerRow(i + 1))).flat();

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
  const { packPlugin } = require("../../scripts/pack-plugin") as { packPlugin: () => string };
  const assets = path.join(work, "release");
  fs.mkdirSync(assets);
  const archive = packPlugin();
  fs.copyFileSync(archive, path.join(assets, path.basename(archive)));
  release = await releaseServer(assets, VERSION);
});

afterAll(async () => {
  const steps = ran.flatMap((j) => j.steps.map((s) => `${s.title} ${s.seconds.toFixed(1)} s`));
  process.stderr.write(`pr-database.e2e, the jobs' steps:\n  ${steps.join("\n  ")}\n`);
  await release?.close();
  await api?.stop();
  await sim?.stop();
  if (work) fs.rmSync(work, { recursive: true, force: true });
});

test("the user's workflow is at most 20 lines, hands the action no secret it does not need, and the repository holds nothing else but the rules file", () => {
  const text = fs.readFileSync(path.join(EXAMPLE, WORKFLOW), "utf8");
  expect(text.trimEnd().split("\n").length).toBeLessThanOrEqual(20);
  expect(text).not.toMatch(/toJSON\(\s*secrets\s*\)/);
  expect([...text.matchAll(/secrets\.(\w+)/g)].map((m) => m[1]).sort()).toEqual([
    "PULUMI_BACKEND_URL",
    "PULUMI_CONFIG_PASSPHRASE",
    "TIGER_PUBLIC_KEY",
    "TIGER_SECRET_KEY",
  ]);
  expect(sh(userRepository("acme/layout"), "ls-files").trim().split("\n").sort()).toEqual([RULES, WORKFLOW].sort());
});

let shopFork: string;
let shopUrl: string;

test("PR opened: a fork, masked before its URL is handed out (no production value of a masked column), jobs paused; DATABASE_URL masked in the log; pushed again: the same fork", async () => {
  expect(downloads()).toEqual([]);
  const opened = await trigger("acme/shop", pullRequest("acme/shop", 7, "opened"));
  // The first job installed the plugin as a user's runner does: downloaded from the release.
  expect(downloads()).toEqual([{ method: "GET", path: `/releases/download/v${VERSION}/${fs.readdirSync(path.join(work, "release"))[0]}` }]);
  const url = opened.exported.DATABASE_URL ?? "";
  expect(url).toMatch(/^postgresql:\/\/tsdbadmin:.+@.+\/tsdb\?sslmode=require$/);
  const password = decodeURIComponent(new URL(url).password);
  expect(opened.masked).toEqual(expect.arrayContaining([url, password]));
  expect(opened.log).not.toContain(url);
  expect(opened.log).not.toContain(password);
  const made = forksNamed("pr-7.acme.shop");
  expect(made.map((s) => s.status)).toEqual(["READY"]);
  shopFork = made[0]!.service_id;
  shopUrl = url;
  expect(opened.log).toContain(`fork ${shopFork} is ready: DATABASE_URL is set`);
  const values = (await psql(url, `SELECT concat_ws('|', email, full_name, api_token) FROM ${PERSONAL_TABLE}`)).split(/[\n|]/);
  for (const value of PRODUCTION) expect(values).not.toContain(value);
  expect(await psql(url, "SELECT count(*) FROM timescaledb_information.jobs WHERE scheduled AND job_id >= 1000")).toBe("0");
  expect(await psql(url, "SELECT count(*) FROM pr_database")).toBe("0");

  const pushed = await trigger("acme/shop", pullRequest("acme/shop", 7, "synchronize"));
  expect(forksNamed("pr-7.acme.shop").map((s) => s.service_id)).toEqual([shopFork]);
  expect(pushed.exported.DATABASE_URL).toBe(url);
  expect(sim.requests("forkService")).toHaveLength(1);
  // The push's job used the plugin the first installed: no second download.
  expect(downloads()).toHaveLength(1);
});

test("another repository's PR 7, forking the same service: a fork of its own, never the first repository's", async () => {
  const web = await trigger("acme/web", pullRequest("acme/web", 7, "opened"));
  const webForks = forksNamed("pr-7.acme.web");
  expect(webForks).toHaveLength(1);
  expect(webForks[0]!.service_id).not.toBe(shopFork);
  expect(web.exported.DATABASE_URL).not.toBe(shopUrl);
  expect(forksNamed("pr-7.acme.shop").map((s) => s.status)).toEqual(["READY"]);
});

test("nightly: this repository's PR forks paused (the other repository's left running; a PR's own rules kept, though main's differ), then the sweep deletes an old fork no stack holds, named like the pipeline's", async () => {
  const leftBehind = sim.outOfBand.addFork(ids.projectId, ids.serviceId, {
    name: "pr-3.acme.shop",
    createdAt: new Date(Date.now() - 10 * 86_400_000),
  });
  // main's rules now differ from those the PR's fork was prepared with: the night pauses it all the same, never replaces it.
  const repo = repositories.get("acme/shop") as string;
  const rules = fs.readFileSync(path.join(repo, RULES), "utf8");
  fs.writeFileSync(path.join(repo, RULES), rules.replace("chars: 8", "chars: 6"));
  sh(repo, "commit", "--quiet", "-am", "rules changed on main");
  const nightly = await trigger("acme/shop", { name: "schedule", cron: "0 20 * * 1-5" });
  expect(forksNamed("pr-7.acme.shop").map((s) => s.service_id)).toEqual([shopFork]);
  expect(sim.service(ids.projectId, shopFork)?.status).toMatch(/^PAUS/);
  fs.writeFileSync(path.join(repo, RULES), rules);
  sh(repo, "commit", "--quiet", "-am", "rules as the PR has them");
  expect(forksNamed("pr-7.acme.web").map((s) => s.status)).toEqual(["READY"]);
  expect(nightly.log).toContain(`DELETE fork ${leftBehind} "pr-3.acme.shop": no stack holds it`);
  expect(nightly.log).toContain(`keep fork ${shopFork} "pr-7.acme.shop": held by stack pr-7.acme.shop`);
  expect(sim.service(ids.projectId, leftBehind)?.status).toMatch(/^DELET/);
  // The PR's next push starts its fork again.
  await trigger("acme/shop", pullRequest("acme/shop", 7, "synchronize"));
  expect(sim.service(ids.projectId, shopFork)?.status).toBe("READY");
});

test("a fork that has expired: the night's sweep destroys its stack, and with it the fork, though its PR is open", async () => {
  const opened = await trigger("acme/ops", pullRequest("acme/ops", 5, "opened"));
  const [made] = forksNamed("pr-5.acme.ops");
  expect(made?.status).toBe("READY");
  // The SQL file's dollar signs reached the database as written.
  const url = opened.exported.DATABASE_URL ?? "";
  expect(await psql(url, "SELECT column_default FROM information_schema.columns WHERE table_name = 'dollar_quoted'")).toBe(
    "'${kept} $$1'::text",
  );
  const nightly = await trigger("acme/ops", { name: "schedule", cron: "0 20 * * 1-5" });
  expect(nightly.log).toContain(`DESTROY stack pr-5.acme.ops: fork ${made!.service_id} expired at 2026-01-01T00:00:00.000Z`);
  expect(nightly.log).toMatch(/EXPIRED \d+d \d+h ago/);
  expect(sim.service(ids.projectId, made!.service_id)?.status).toMatch(/^DELET/);
  // The other repositories' forks, in the same backend, are theirs to sweep.
  expect(forksNamed("pr-7.acme.web").map((s) => s.status)).toEqual(["READY"]);
});

test("PR closed: its fork deleted and its stack removed; the other repository's untouched; closed again: nothing to do", async () => {
  const closed = await trigger("acme/shop", pullRequest("acme/shop", 7, "closed"));
  expect(closed.log).toContain("pull request #7: its fork deleted, stack pr-7.acme.shop removed");
  expect(api.comments.filter((c) => c.repository === "acme/shop" && c.issue === 7).map((c) => c.body)).toEqual([
    expect.stringContaining("### Database for this pull request: deleted"),
  ]);
  expect(sim.service(ids.projectId, shopFork)?.status).toMatch(/^DELET/);
  expect(forksNamed("pr-7.acme.web").map((s) => s.status)).toEqual(["READY"]);
  const again = await trigger("acme/shop", pullRequest("acme/shop", 7, "closed"));
  expect(again.log).toContain("no stack pr-7.acme.shop: nothing to delete");
  await trigger("acme/web", pullRequest("acme/web", 7, "closed"));
  expect(forksNamed("pr-7.acme.web").map((s) => s.status)).toEqual(["DELETED"]);
});

test("a PR whose head drops a masking rule gets a database masked by its base's rules, and a notice that its rules take effect once merged", async () => {
  const repo = "acme/rules";
  runnerOf(repo);
  changeRules(repo, "drop-email", (rules) => rules.replace(/^ {2}- \{ table: customers, column: email.*\n/m, ""), "email unmasked");
  const job = await trigger(repo, pullRequest(repo, 11, "opened", { branch: "drop-email" }));
  const url = job.exported.DATABASE_URL ?? "";
  const emails = (await psql(url, `SELECT email FROM ${PERSONAL_TABLE}`)).split("\n");
  expect(emails.length).toBe(PERSONAL_ROWS);
  for (const row of Array.from({ length: PERSONAL_ROWS }, (_, i) => customerRow(i + 1))) expect(emails).not.toContain(row.email);
  expect(job.annotations).toContainEqual(
    expect.objectContaining({
      level: "notice",
      title: "The rules file changes",
      message: expect.stringContaining("take effect once it is merged"),
    }),
  );
  expect(job.summary).toContain("This pull request changes .github/pr-database.yml: its rules take effect once it is merged");
  expect(job.summary).toContain("`public.customers.email` (email)");
});

test("a PR from another repository, whose runs GitHub gives no variable and no secret: no database, a notice says why and what a maintainer can do, and the job succeeds", async () => {
  const repo = "acme/public";
  runnerOf(repo, true);
  const before = sim.requests("forkService").length;
  const job = await trigger(repo, pullRequest(repo, 8, "opened", { fromFork: true }));
  const notice = job.annotations.find((a) => a.title === "No database for this pull request");
  expect(notice?.level).toBe("notice");
  expect(notice?.message).toContain("no secrets and no variables");
  expect(notice?.message).toContain("A maintainer can push its branch to this repository");
  expect(job.annotations.filter((a) => a.level === "error")).toEqual([]);
  expect(job.summary).toContain("### No database for this pull request");
  expect(sim.requests("forkService")).toHaveLength(before);
});

test("the nightly sweep destroys a closed PR's stack (its close job never ran), asking GitHub with the job's own token, and its summary says what it kept and destroyed and why", async () => {
  const repo = "acme/closed";
  await trigger(repo, pullRequest(repo, 4, "opened"));
  const [fork] = forksNamed("pr-4.acme.closed");
  // Closed, and its close job lost: the night finds the stack of a closed pull request.
  api.pullRequestEvent(repo, 4, "closed");
  const nightly = await trigger(repo, { name: "schedule", cron: "0 20 * * 1-5" });
  expect(api.requests).toContainEqual({ method: "GET", path: `/repos/${repo}/pulls/4`, status: 200 });
  expect(nightly.log).toContain("DESTROY stack pr-4.acme.closed: pull request #4 is closed");
  expect(sim.service(ids.projectId, fork!.service_id)?.status).toMatch(/^DELET/);
  expect(nightly.summary).toContain("| `pr-4.acme.closed` | paused |");
  expect(nightly.summary).toMatch(
    /\| stack `pr-4\.acme\.closed` \| destroy stack \| pull request #4 is closed.*\| stack pr-4\.acme\.closed destroyed and removed \|/,
  );
  expect(nightly.summary).toMatch(new RegExp(`\\| fork \`${fork!.service_id}\` pr-4\\.acme\\.closed \\| keep \\|`));
});

test("a rule naming no column: no fork left running, an annotation naming the rule and what to fix; the rule fixed on main, the next push prepares the same fork", async () => {
  const repo = "acme/bad";
  runnerOf(repo);
  const bad = '  - { table: customers, column: phone, with: "null" }\n';
  changeRules(repo, "main", (rules) => rules.replace(/^(mask:\n)/m, `$1${bad}`), "phone masked");
  const failed = await trigger(repo, pullRequest(repo, 6, "opened"), 1);
  const [fork] = forksNamed("pr-6.acme.bad");
  expect(sim.service(ids.projectId, fork!.service_id)?.status).toMatch(/^PAUS/);
  expect(failed.exported.DATABASE_URL).toBeUndefined();
  const error = failed.annotations.find((a) => a.level === "error");
  expect(error?.message).toContain("mask[0] of .github/pr-database.yml: prepare.mask[0] (customers.phone, with null)");
  expect(error?.message).toContain("public.customers has no column phone");
  expect(error?.message).toContain("fix it on main");
  const comment = () => api.comments.filter((c) => c.repository === repo && c.issue === 6).map((c) => c.body);
  expect(comment()).toEqual([expect.stringContaining("Its preparation failed: mask[0] of .github/pr-database.yml")]);
  changeRules(repo, "main", (rules) => rules.replace(bad, ""), "phone is not a column");
  const fixed = await trigger(repo, pullRequest(repo, 6, "synchronize"));
  expect(forksNamed("pr-6.acme.bad").map((s) => [s.service_id, s.status])).toEqual([[fork!.service_id, "READY"]]);
  expect(comment()).toEqual([expect.stringContaining("### Database for this pull request: `pr-6.acme.bad`")]);
  const emails = await psql(
    fixed.exported.DATABASE_URL ?? "",
    `SELECT count(*) FROM ${PERSONAL_TABLE} WHERE email LIKE '%@example.invalid'`,
  );
  expect(emails).toBe(String(PERSONAL_ROWS));
});

test("the PR's comment: made once, found again by its marker and updated on the next push (a person's comment left alone), with nothing secret", async () => {
  const repo = "acme/comment";
  runnerOf(repo);
  api.commentAsUser(repo, 21, "Looks good; <!-- tigercloud-pr-database --> quoted");
  changeRules(repo, "feature", (rules) => rules, "first push");
  const opened = await trigger(repo, pullRequest(repo, 21, "opened", { branch: "feature" }));
  const ours = () => api.comments.filter((c) => c.repository === repo && c.issue === 21 && c.user.type === "Bot");
  expect(ours()).toHaveLength(1);
  const first = ours()[0]!.body;
  expect(first).toContain("### Database for this pull request: `pr-21.acme.comment`");
  expect(first).toContain("`public.customers.full_name` (keepFirst):");
  expect(first).toMatch(/\| Jobs paused \| \d+/);
  expect(first).toMatch(/\| Expires \| \d{4}-\d\d-\d\dT/);
  const url = opened.exported.DATABASE_URL ?? "";
  expect(first).not.toContain(url);
  expect(first).not.toContain(decodeURIComponent(new URL(url).password));
  changeRules(repo, "feature", (rules) => rules, "second push");
  const headNow = sh(repositories.get(repo), "rev-parse", "feature").trim();
  await trigger(repo, pullRequest(repo, 21, "synchronize", { branch: "feature" }));
  expect(ours()).toHaveLength(1);
  expect(ours()[0]!.body).toContain(`for ${headNow.slice(0, 7)}`);
  expect(api.requests.filter((r) => r.method === "PATCH" && r.path.startsWith(`/repos/${repo}/`))).toHaveLength(1);
  expect(api.comments.filter((c) => c.repository === repo && c.issue === 21 && c.user.type === "User")[0]?.body).toBe(
    "Looks good; <!-- tigercloud-pr-database --> quoted",
  );
});

describe("golden: true, production masked once a night and every PR's database forked from it", () => {
  const repo = "acme/golden";
  const goldenForks = () => sim.services(ids.projectId).filter((s) => /^golden-[0-9-]+\.acme\.golden$/.test(s.name));
  const serving = () => goldenForks().filter((s) => !/^DELET/.test(s.status));
  const night = (status = 0) => trigger(repo, { name: "schedule", cron: "0 20 * * 1-5" }, status);
  let golden: string;
  let prFork: string;
  let prUrl: string;

  test("the night makes a golden fork of production, masked, checked and stopped (two nights at once take turns); a PR's database is forked from it, masks nothing itself and shows no production value", async () => {
    WITH[repo] = ["golden: true"];
    runnerOf(repo);
    // Two nights at once (a manual run beside the schedule): the stack's lock makes one wait; one golden fork serves after.
    const both = await Promise.all([night(), night()]);
    expect(both.map((n) => n.log).join("\n")).toContain(`another run holds stack golden-${ids.serviceId}.acme.golden`);
    const [made] = serving();
    expect(serving()).toHaveLength(1);
    expect(made?.forked_from?.service_id).toBe(ids.serviceId);
    expect(made?.status).toMatch(/^PAUS/);
    golden = made!.service_id;
    for (const g of goldenForks()) if (g.service_id !== golden) expect(g.status).toMatch(/^DELET/);
    const nightly = both.find((n) => n.summary.includes(`| Serving now | \`${golden}\``)) ?? both[0]!;
    expect(nightly.summary).toContain("### The golden fork: refreshed");
    expect(nightly.summary).toContain(`| Serving now | \`${golden}\``);
    // The sweep lists it, held by its stack: never swept.
    expect(nightly.log).toContain(`keep fork ${golden} "${made!.name}": held by stack golden-${ids.serviceId}.acme.golden`);

    const opened = await trigger(repo, pullRequest(repo, 31, "opened"));
    const [fork] = forksNamed("pr-31.acme.golden");
    expect(fork?.forked_from?.service_id).toBe(golden);
    expect(fork?.status).toBe("READY");
    prFork = fork!.service_id;
    prUrl = opened.exported.DATABASE_URL ?? "";
    expect(opened.log).toContain(`a fork of golden fork ${golden}`);
    expect(opened.summary).toContain(`of golden fork \`${golden}\``);
    expect(opened.summary).toContain("nothing masked in this job");
    expect(opened.summary).toMatch(/its data as of \d{4}-\d\d-\d\dT[^|]+\(0 h \d+ min old\)/);
    const values = (await psql(prUrl, `SELECT concat_ws('|', email, full_name, api_token) FROM ${PERSONAL_TABLE}`)).split(/[\n|]/);
    expect(values.length).toBe(PERSONAL_ROWS * 3);
    for (const value of PRODUCTION) expect(values).not.toContain(value);
    // The golden fork's jobs were paused when it was made: its copies are.
    expect(await psql(prUrl, "SELECT count(*) FROM timescaledb_information.jobs WHERE scheduled AND job_id >= 1000")).toBe("0");
  });

  test("a refresh started by hand on a branch whose rules mask less replaces the golden fork by main's rules (the old one deleted) while the open PR's database keeps working: its next push starts the same fork", async () => {
    const dir = repositories.get(repo) as string;
    const main = sh(dir, "rev-parse", "main").trim();
    sh(dir, "checkout", "--quiet", "-b", "weaker");
    const edit = (file: string, change: (text: string) => string) =>
      fs.writeFileSync(path.join(dir, file), change(fs.readFileSync(path.join(dir, file), "utf8")));
    edit(WORKFLOW, (text) => text.replace(/^on:\n/m, "on:\n  workflow_dispatch: {}\n"));
    edit(RULES, (text) => text.replace(/^ {2}- \{ table: customers, column: email,.*\n/m, ""));
    expect(fs.readFileSync(path.join(dir, RULES), "utf8")).not.toContain("column: email");
    sh(dir, "commit", "--quiet", "-am", "a manual refresh; email unmasked");
    sh(dir, "checkout", "--quiet", "main");
    const nightly = await trigger(repo, { name: "workflow_dispatch", workflow: path.basename(WORKFLOW), branch: "weaker" });
    expect(nightly.annotations).toContainEqual(
      expect.objectContaining({ level: "notice", title: "The golden fork takes the default branch's rules" }),
    );
    expect(nightly.summary).toContain(`at ${main.slice(0, 7)} |`);
    const [fresh] = serving();
    expect(serving()).toHaveLength(1);
    expect(fresh!.service_id).not.toBe(golden);
    expect(sim.service(ids.projectId, golden)?.status).toMatch(/^DELET/);
    expect(nightly.summary).toMatch(new RegExp(`\\| Replaced \\| \`${golden}\`.*deleted`));
    golden = fresh!.service_id;
    const pushed = await trigger(repo, pullRequest(repo, 31, "synchronize"));
    expect(forksNamed("pr-31.acme.golden").map((s) => [s.service_id, s.status])).toEqual([[prFork, "READY"]]);
    expect(pushed.exported.DATABASE_URL).toBe(prUrl);
    expect(await psql(prUrl, `SELECT count(*) FROM ${PERSONAL_TABLE}`)).toBe(String(PERSONAL_ROWS));
    const next = await trigger(repo, pullRequest(repo, 32, "opened"));
    expect(forksNamed("pr-32.acme.golden")[0]?.forked_from?.service_id).toBe(golden);
    expect(next.summary).toContain(`of golden fork \`${golden}\``);
    const url = next.exported.DATABASE_URL ?? "";
    const values = (await psql(url, `SELECT concat_ws('|', email, full_name, api_token) FROM ${PERSONAL_TABLE}`)).split(/[\n|]/);
    expect(values.length).toBe(PERSONAL_ROWS * 3);
    for (const value of PRODUCTION) expect(values).not.toContain(value);
  });

  test("a refresh that fails leaves yesterday's golden fork serving, says so in the job's summary, and leaves nothing running; a PR whose base's rules changed since is forked from production and masked by them, and one whose first up forked nothing gets nothing at night", async () => {
    const dir = repositories.get(repo) as string;
    const good = fs.readFileSync(path.join(dir, RULES), "utf8");
    changeRules(
      repo,
      "main",
      (rules) => rules.replace(/^(mask:\n)/m, '$1  - { table: customers, column: phone, with: "null" }\n'),
      "phone",
    );
    const failed = await night(1);
    expect(failed.summary).toContain("### The golden fork: refresh FAILED");
    expect(failed.summary).toContain(`Yesterday's golden fork \`${golden}\``);
    // The rule and its cause, in the rules file's words, not the engine's last line ("update failed").
    expect(failed.annotations).toContainEqual(
      expect.objectContaining({
        level: "error",
        title: "Golden fork not refreshed",
        message: expect.stringMatching(
          /^mask\[0\] of \S+: prepare\.mask\[0\] \(customers\.phone, with null\): public\.customers has no column phone\./,
        ),
      }),
    );
    expect(failed.summary).toContain("public.customers has no column phone");
    expect(sim.service(ids.projectId, golden)?.status).toMatch(/^PAUS/);
    // The new one that failed its preparation is stopped, not running; the next good night deletes it.
    const others = serving().filter((s) => s.service_id !== golden);
    expect(others.map((s) => s.status)).toEqual([expect.stringMatching(/^PAUS/)]);
    // Yesterday's golden fork lacks today's rule: a new PR's database is production's, masked by the
    // base's rules in its job (which name no column here: it fails, and is stopped).
    const refused = await trigger(repo, pullRequest(repo, 33, "opened"), 1);
    expect(refused.annotations).toContainEqual(
      expect.objectContaining({ level: "notice", title: "The rules changed since the golden fork was made" }),
    );
    expect(refused.annotations).toContainEqual(expect.objectContaining({ level: "error", message: expect.stringContaining("mask[0] of") }));
    expect(forksNamed("pr-33.acme.golden").map((s) => [s.forked_from?.service_id, s.status])).toEqual([
      [ids.serviceId, expect.stringMatching(/^PAUS/)],
    ]);

    // The rules as they were, and a refresh the API refuses: yesterday's still serves new PRs.
    changeRules(repo, "main", () => good, "phone is not a column");
    sim.injectFault("forkService", { kind: "status", status: 400 });
    const refusedNight = await night(1);
    sim.clearFaults();
    expect(refusedNight.summary).toContain(`Yesterday's golden fork \`${golden}\``);
    await trigger(repo, pullRequest(repo, 34, "opened"));
    const [fromGolden] = forksNamed("pr-34.acme.golden");
    expect(fromGolden?.forked_from?.service_id).toBe(golden);

    // A rule changed on main: the next push replaces PR 34's database, forked from production and
    // masked by the new rules (the golden fork has the old ones), as a changed prepare would.
    changeRules(repo, "main", (rules) => rules.replace("with: keepFirst, chars: 8", "with: keepFirst, chars: 4"), "shorter names");
    const replaced = await trigger(repo, pullRequest(repo, 34, "synchronize"));
    expect(replaced.annotations).toContainEqual(
      expect.objectContaining({ level: "notice", title: "The rules changed since this database was made" }),
    );
    expect(sim.service(ids.projectId, fromGolden!.service_id)?.status).toMatch(/^DELET/);
    const live = forksNamed("pr-34.acme.golden").filter((f) => f.status === "READY");
    expect(live.map((f) => f.forked_from?.service_id)).toEqual([ids.serviceId]);
    const names = (await psql(replaced.exported.DATABASE_URL ?? "", `SELECT DISTINCT length(full_name) FROM ${PERSONAL_TABLE}`)).split(
      "\n",
    );
    expect(names).toEqual(["4"]);

    // A PR whose first up failed before forking holds no fork: the night pauses nothing there, and forks nothing.
    sim.injectFault("forkService", { kind: "status", status: 400 });
    await trigger(repo, pullRequest(repo, 35, "opened"), 1);
    sim.clearFaults();
    expect(forksNamed("pr-35.acme.golden")).toEqual([]);

    // A PR into another branch, whose rules anyone who can push it may weaken: the golden fork, masked by main's rules.
    changeRules(repo, "weaker-base", (rules) => rules.replace(/^ {2}- \{ table: customers, column: email,.*\n/m, ""), "email unmasked");
    const intoBranch = await trigger(repo, pullRequest(repo, 36, "opened", { branch: "weaker-base", base: "weaker-base" }));
    expect(forksNamed("pr-36.acme.golden").map((f) => f.forked_from?.service_id)).toEqual([golden]);
    const shown = (await psql(intoBranch.exported.DATABASE_URL ?? "", `SELECT email FROM ${PERSONAL_TABLE}`)).split("\n");
    expect(shown).toHaveLength(PERSONAL_ROWS);
    for (const value of PRODUCTION) expect(shown).not.toContain(value);

    const goodNight = await night();
    expect(goodNight.log).toContain("stack pr-35.acme.golden holds no fork: nothing to pause");
    expect(forksNamed("pr-35.acme.golden")).toEqual([]);
    expect(serving()).toHaveLength(1);
    expect(serving()[0]!.service_id).not.toBe(golden);
    for (const s of others) expect(sim.service(ids.projectId, s.service_id)?.status).toMatch(/^DELET/);
    // PR 33's stack, whose first up failed, kept its source (production) through the night: no new fork.
    expect(forksNamed("pr-33.acme.golden").map((s) => s.forked_from?.service_id)).toEqual([ids.serviceId]);
  });
});

test("every job of the suite ran on the plugin the first job downloaded: one download in all", () => {
  // The suite's last test: every repository's jobs have run, the golden ones too.
  expect(ran.length).toBeGreaterThan(20);
  expect(ran.filter((j) => j.repository === "acme/golden").length).toBeGreaterThan(5);
  expect(downloads()).toHaveLength(1);
});
