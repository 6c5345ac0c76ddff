// The PR database action's migration rehearsal (migrate:), as a user's repository uses it: the
// example's workflow with migrate: added, its migration a file of the repository run by psql in the
// job's workspace, each job in a fresh clone run by the workflow runner, the plugin fetched from a
// stand-in of GitHub's releases. Each push starts again from production's masked state (a new fork,
// the previous push's deleted), the migration watched; the PR's comment says what each statement did.
import { execFileSync } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { PERSONAL_TABLE } from "../../simulator/databases";
import { GitHubApi } from "../support/gitops/githubApi";
import { type GitHubEvent, type JobRun, runnerPaths, WorkflowRunner } from "../support/gitops/runner";
import { releaseServer, type ReleaseServer } from "../support/releaseServer";
import { NO_DELAYS, Simulator } from "../../simulator";

jest.setTimeout(300_000);
const ROOT = path.join(__dirname, "..", "..");
const EXAMPLE = path.join(ROOT, "examples", "pr-fork");
const VERSION = (JSON.parse(fs.readFileSync(path.join(ROOT, "package.json"), "utf8")) as { version: string }).version;
const WORKFLOW = path.join(".github", "workflows", "pr-database.yml");
const RULES = path.join(".github", "pr-database.yml");
const REPOSITORY = "acme/rehearsed";
const PR = 3;

let sim: Simulator;
let api: GitHubApi;
let release: ReleaseServer;
let work: string;
let repo: string;
let runner: WorkflowRunner;

const git = (...args: string[]) =>
  execFileSync("git", args, {
    cwd: repo,
    encoding: "utf8",
    env: {
      ...process.env,
      GIT_AUTHOR_NAME: "dev",
      GIT_AUTHOR_EMAIL: "d@example.com",
      GIT_COMMITTER_NAME: "dev",
      GIT_COMMITTER_EMAIL: "d@example.com",
    },
  });

/** The migration at the PR's head: a new commit of migrate.sql, and the migrate.sh that runs it (it says whether it sees the action's secrets). */
function push(sql: string): string {
  fs.writeFileSync(path.join(repo, "migrate.sql"), sql);
  git("add", "-A");
  git("commit", "--quiet", "--allow-empty", "-m", "a migration");
  return git("rev-parse", "HEAD").trim();
}

async function pushed(action: "opened" | "synchronize", status: number): Promise<JobRun> {
  const head = git("rev-parse", "HEAD").trim();
  const base = git("rev-parse", "main").trim();
  api.pullRequestEvent(REPOSITORY, PR, action);
  const event: GitHubEvent = {
    name: "pull_request",
    payload: {
      action,
      number: PR,
      pull_request: {
        number: PR,
        head: { ref: "feature", sha: head, repo: { full_name: REPOSITORY } },
        base: { ref: "main", sha: base, repo: { full_name: REPOSITORY } },
      },
    },
  };
  const jobs = (await runner.trigger(event)).filter((j) => j.ran);
  const job = jobs[0];
  if (jobs.length !== 1 || !job || job.status !== status)
    throw new Error(
      `wanted one job ending ${status}, got ${jobs.map((j) => `${j.job} ${j.status}`).join(", ")}\n${jobs.map((j) => j.log).join("\n---\n")}`,
    );
  return job;
}

// The simulator's production holds 100 customers: a data migration first makes the table large
// enough for each statement after it to last longer than the watch's 50 ms look.
const GROW = `INSERT INTO ${PERSONAL_TABLE} (id, email) SELECT g, 'm' || g || '@example.com' FROM generate_series(1000, 300000) g;\n`;
const MIGRATION = `${GROW}ALTER TABLE ${PERSONAL_TABLE} ADD COLUMN score float8 DEFAULT random();\nCREATE INDEX customers_name ON ${PERSONAL_TABLE} (full_name);\n`;

const comment = () => api.comments.filter((c) => c.repository === REPOSITORY && c.issue === PR && c.user.type === "Bot").map((c) => c.body);
/** The PR's forks not deleted (nor being deleted). */
const liveForks = () =>
  sim
    .services(sim.defaults().projectId)
    .filter((s) => s.name === `pr-${PR}.acme.rehearsed` && s.forked_from && !["DELETING", "DELETED"].includes(s.status));

beforeAll(async () => {
  sim = new Simulator({ delays: { ...NO_DELAYS, forkQueuedMs: 100, forkConfiguringMs: 100 }, databases: "postgres" });
  await sim.start();
  api = new GitHubApi();
  await api.start();
  work = fs.mkdtempSync(path.join(os.tmpdir(), "tigercloud-pr-rehearsal-"));
  const assets = path.join(work, "release");
  fs.mkdirSync(assets);
  const { packPlugin } = require("../../scripts/pack-plugin") as { packPlugin: () => string };
  const archive = packPlugin();
  fs.copyFileSync(archive, path.join(assets, path.basename(archive)));
  release = await releaseServer(assets, VERSION);

  // A user's repository: the example's two files, the workflow rehearsing its migration.
  repo = path.join(work, "repo");
  for (const file of [WORKFLOW, RULES]) {
    fs.mkdirSync(path.dirname(path.join(repo, file)), { recursive: true });
    fs.copyFileSync(path.join(EXAMPLE, file), path.join(repo, file));
  }
  const workflow = path.join(repo, WORKFLOW);
  const added = [
    "tiger-api-url: ${{ secrets.TIGER_API_URL }}",
    "migrate: sh migrate.sh",
    // Every lock that stops writes is flagged here: the simulator's tables are small.
    "lock-threshold: 0ms",
  ];
  fs.writeFileSync(workflow, `${fs.readFileSync(workflow, "utf8").trimEnd()}\n${added.map((l) => `          ${l}`).join("\n")}\n`);
  fs.writeFileSync(
    path.join(repo, "migrate.sh"),
    'echo "action inputs seen: $(env | grep -c ^INPUT_)"\necho "connecting to $DATABASE_URL"\npsql "$DATABASE_URL" -X -q -v ON_ERROR_STOP=1 -f migrate.sql\n',
  );
  fs.writeFileSync(path.join(repo, "migrate.sql"), "SELECT 1;\n");
  execFileSync("git", ["init", "--quiet", "--initial-branch=main", repo]);
  git("add", "-A");
  git("commit", "--quiet", "-m", "A database for each pull request, its migration rehearsed");
  git("checkout", "--quiet", "-b", "feature");
  api.addRepository(REPOSITORY, repo);

  const { basePath, pulumiPath } = runnerPaths(ROOT);
  fs.mkdirSync(path.join(work, "jobs"));
  fs.mkdirSync(path.join(work, "npm"));
  runner = new WorkflowRunner({
    repository: repo,
    repositoryName: REPOSITORY,
    secrets: {
      TIGER_PUBLIC_KEY: sim.keyPair.publicKey,
      TIGER_SECRET_KEY: sim.keyPair.secretKey,
      TIGER_API_URL: sim.url,
      PULUMI_BACKEND_URL: `file://${fs.mkdtempSync(path.join(work, "state-"))}`,
      PULUMI_CONFIG_PASSPHRASE: "pr-rehearsal-e2e",
    },
    vars: { SOURCE_SERVICE_ID: sim.defaults().serviceId },
    githubApiUrl: api.url,
    issueToken: (p) => api.issueToken(p),
    basePath,
    pulumiPath,
    work: path.join(work, "jobs"),
    npmCache: path.join(work, "npm"),
    machineEnv: release.githubEnv(),
    actions: { "tigercloud/pulumi-tigercloud": ROOT },
    pluginCache: path.join(work, "plugin-cache"),
  });
});

afterAll(async () => {
  await release?.close();
  await api?.stop();
  await sim?.stop();
  if (work) fs.rmSync(work, { recursive: true, force: true });
});

test("each push rehearses its migration on a new fork of production's masked state: a rewrite under ACCESS EXCLUSIVE and an index build reported and flagged, then a failing one fails the job naming the statement; the migration sees none of the action's inputs, the comment no URL and no value", async () => {
  push(MIGRATION);
  const first = await pushed("opened", 0);
  const [report] = comment();
  expect(report).toContain("### Migration rehearsal: **");
  expect(report).toMatch(
    /`ALTER TABLE customers ADD COLUMN score float8 DEFAULT random\(\);` \| [0-9.]+ s \| \*\*ACCESS EXCLUSIVE\*\* public\.customers/,
  );
  expect(report).toMatch(/rewrote public\.customers/);
  expect(report).toMatch(/`CREATE INDEX customers_name ON customers \(full_name\);` \| [0-9.]+ s \| \*\*SHARE\*\* public\.customers/);
  expect(report).toMatch(/\+ column public\.customers\.score: double precision/);
  expect(first.log).toMatch(/::warning title=Migration rehearsal::statement 2: AccessExclusive on public\.customers/);
  expect(first.log).toContain("action inputs seen: 0");
  // The migration printed the URL: neither it nor its password reaches the comment.
  const url = first.exported.DATABASE_URL ?? "";
  expect(report).not.toContain(url);
  expect(report).not.toContain(decodeURIComponent(new URL(url).password));
  expect(report).not.toMatch(/@prod-customers\.example\.com/);
  const firstFork = first.exported.DATABASE_URL;

  // The same migration again: it runs on production's state, not on the first push's result (the column would exist).
  push(MIGRATION);
  const second = await pushed("synchronize", 0);
  expect(second.log).toContain("the previous push's fork is deleted first");
  expect(second.exported.DATABASE_URL).not.toBe(firstFork);
  expect(liveForks()).toHaveLength(1);
  expect(comment()).toHaveLength(1);

  // A migration that fails on production's data fails the job, naming the statement and PostgreSQL's error.
  push(
    `${GROW}CREATE INDEX customers_token ON ${PERSONAL_TABLE} (api_token);\nCREATE UNIQUE INDEX customers_domain ON ${PERSONAL_TABLE} (split_part(email, '@', 2));\n`,
  );
  const third = await pushed("synchronize", 1);
  expect(third.log).toMatch(
    /::error title=The migration failed::statement 3, CREATE UNIQUE INDEX customers_domain ON customers \(split_part\(email, '…', 2\)\);,( or one right after it too short to be seen,)? failed on production's masked copy: .*(could not create unique index "customers_domain"|is duplicated)/,
  );
  expect(comment()[0]).toContain("### Migration rehearsal: **failed**");
  // What the migration printed last is shown, the URL it printed redacted.
  const thirdUrl = third.exported.DATABASE_URL ?? "";
  expect(thirdUrl).toMatch(/^postgres/);
  expect(comment()[0]).toContain("connecting to ***");
  expect(comment()[0]).not.toContain(decodeURIComponent(new URL(thirdUrl).password));
  expect(comment()[0]).toMatch(/\| 3 ❌ \| `CREATE UNIQUE INDEX customers_domain ON customers \(split_part\(email, '…', 2\)\);`/);
});
