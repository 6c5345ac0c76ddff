// The PR database action's migration rehearsal (migrate:), as a user's repository uses it (the
// lab: test/support/lab/prDatabase.ts): the example's workflow with golden: true and migrate: added,
// its migration a file of the repository run by psql in the job's workspace. The night masks a
// production grown to PR_REHEARSAL_ROWS customers (CI: 300,000; the issue's scale: 1,000,000) into
// a golden fork; each push starts again from it (a new fork, the previous push's deleted), the
// migration watched; the PR's comment says what each statement did.
import * as fs from "fs";
import * as path from "path";
import { PERSONAL_TABLE } from "../../simulator/databases";
import {
  api,
  forksNamed,
  goldenOf,
  ids,
  prDatabaseLab,
  pullRequest,
  repositories,
  runnerOf,
  sh,
  sim,
  trigger,
  WITH,
} from "../support/lab/prDatabase";

jest.setTimeout(600_000);
prDatabaseLab("pr-rehearsal.e2e");

const REPOSITORY = "acme/rehearsed";
const PR = 3;
// The migration, a file of the repository; every lock that stops writes flagged, however short.
WITH[REPOSITORY] = ["golden: true", "migrate: sh migrate.sh", "lock-threshold: 0ms"];
const ROWS = Number(process.env.PR_REHEARSAL_ROWS ?? 300_000);

/** A push to the PR's branch: migrate.sql as given, and the migrate.sh that runs it (saying whether it sees the action's inputs, and the URL). */
function push(sql: string): void {
  runnerOf(REPOSITORY);
  const dir = repositories.get(REPOSITORY);
  sh(dir, "checkout", "--quiet", ...(sh(dir, "branch", "--list", "feature").trim() ? ["feature"] : ["-b", "feature"]));
  fs.writeFileSync(
    path.join(dir as string, "migrate.sh"),
    'echo "action inputs seen: $(env | grep -c ^INPUT_)"\necho "connecting to $DATABASE_URL"\npsql "$DATABASE_URL" -X -q -v ON_ERROR_STOP=1 -f migrate.sql\n',
  );
  fs.writeFileSync(path.join(dir as string, "migrate.sql"), sql);
  sh(dir, "add", "-A");
  sh(dir, "commit", "--quiet", "--allow-empty", "-m", "a migration");
  sh(dir, "checkout", "--quiet", "main");
}

const pushed = (action: "opened" | "synchronize", status: number) =>
  trigger(REPOSITORY, pullRequest(REPOSITORY, PR, action, { branch: "feature" }), status);

// Production grown to ROWS customers (the simulator's holds 100), each statement then lasting longer
// than the watch's 50 ms look. The hypertable events has compressed chunks (simulator/production.ts).
const GROW =
  `INSERT INTO ${PERSONAL_TABLE} SELECT g, 'customer' || g || '@prod-customers.example.com', 'Customer Number' || g || ' Realname', ` +
  `'tok_live_' || lpad(to_hex(g::bigint * 2654435761), 8, '0'), 1 + g % 100 FROM generate_series(101, ${ROWS}) g; ANALYZE ${PERSONAL_TABLE};`;
const MIGRATION = [
  `ALTER TABLE ${PERSONAL_TABLE} ADD COLUMN score float8 DEFAULT random();`,
  `CREATE INDEX customers_name ON ${PERSONAL_TABLE} (full_name);`,
  `CREATE INDEX CONCURRENTLY customers_token ON ${PERSONAL_TABLE} (api_token);`,
  "ALTER TABLE events ADD COLUMN referrer text;",
  "UPDATE events SET duration_ms = duration_ms + 1 WHERE path = '/page/3';",
  "",
].join("\n");

const comment = () => api.comments.filter((c) => c.repository === REPOSITORY && c.issue === PR && c.user.type === "Bot").map((c) => c.body);
/** The PR's forks not deleted (nor being deleted). */
const liveForks = () => forksNamed(`pr-${PR}.acme.rehearsed`).filter((s) => !["DELETING", "DELETED"].includes(s.status));

test(`the night masks production (${ROWS.toLocaleString("en")} customers, a hypertable with compressed chunks) into a golden fork`, async () => {
  await sim.databases.query(ids.serviceId, GROW);
  const started = Date.now();
  await goldenOf(REPOSITORY).night();
  const [golden] = goldenOf(REPOSITORY).serving();
  expect(golden?.status).toMatch(/^PAUS/);
  process.stdout.write(`golden fork of ${ROWS} customers made in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
});

test("each push rehearses its migration on a new fork of the golden fork: a rewrite under ACCESS EXCLUSIVE and an index build flagged, one built CONCURRENTLY not, a hypertable with compressed chunks altered and written; then a failing one fails the job naming the statement; the migration sees none of the action's inputs, the comment no URL and no value", async () => {
  push(MIGRATION);
  const first = await pushed("opened", 0);
  const [golden] = goldenOf(REPOSITORY).serving();
  expect(first.log).toContain(`a fork of golden fork ${golden?.service_id}`);
  const [report] = comment();
  expect(report).toContain("### Migration rehearsal: **");
  // Each statement's row: its locks, and what it rewrote or built (the index by the statement that made it).
  const row = (n: number) => report?.split("\n").find((line) => line.startsWith(`| ${n} `)) ?? "";
  expect(row(1)).toContain("`ALTER TABLE customers ADD COLUMN score float8 DEFAULT random();`");
  expect(row(1)).toMatch(/\*\*ACCESS EXCLUSIVE\*\* `public\.customers`/);
  expect(row(1)).toMatch(/rewrote `public\.customers` \(\d/);
  expect(row(1)).not.toContain("customers_name");
  expect(row(2)).toContain("`CREATE INDEX customers_name ON customers (full_name);`");
  expect(row(2)).toMatch(/\*\*SHARE\*\* `public\.customers`/);
  expect(row(2)).toContain("built `public.customers_name`");
  // CONCURRENTLY: a lock that lets writes go on, not in bold, not flagged.
  expect(row(3)).toContain("`CREATE INDEX CONCURRENTLY customers_token ON customers (api_token);`");
  expect(row(3)).toContain("SHARE UPDATE EXCLUSIVE `public.customers`");
  expect(row(3)).not.toContain("**");
  expect(row(3)).toContain("built `public.customers_token`");
  expect(report).toMatch(/\+ column public\.customers\.score: double precision/);
  expect(report).toMatch(/\+ column public\.events\.referrer: text/);
  expect(report).toMatch(/Chunks of `public\.events`: (\d+) → \1 compressed, 0 → [1-9]\d* partly/);
  expect(first.log).toMatch(/::warning title=Migration rehearsal::statement 1: AccessExclusive on public\.customers/);
  expect(first.log).toMatch(/::warning title=Migration rehearsal::statement 2: Share on public\.customers/);
  expect(first.log).not.toMatch(/::warning title=Migration rehearsal::statement 3:/);
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
  expect(comment()[0]).toMatch(/rewrote `public\.customers`/);

  // A migration that fails on production's data fails the job, naming the statement and PostgreSQL's error.
  push(
    `CREATE INDEX customers_token ON ${PERSONAL_TABLE} (api_token);\nCREATE UNIQUE INDEX customers_domain ON ${PERSONAL_TABLE} (split_part(email, '@', 2));\n`,
  );
  const third = await pushed("synchronize", 1);
  expect(third.log).toMatch(
    /::error title=The migration failed::statement 2, CREATE UNIQUE INDEX customers_domain ON customers \(split_part\(email, '…', 2\)\);,( or one right after it too short to be seen,)? failed on production's masked copy: .*(could not create unique index "customers_domain"|is duplicated)/,
  );
  expect(comment()[0]).toContain("### Migration rehearsal: **failed**");
  // What the migration printed last is shown, the URL it printed redacted.
  const thirdUrl = third.exported.DATABASE_URL ?? "";
  expect(thirdUrl).toMatch(/^postgres/);
  expect(comment()[0]).toContain("connecting to ***");
  expect(comment()[0]).not.toContain(decodeURIComponent(new URL(thirdUrl).password));
  expect(comment()[0]).toMatch(/\| 2 ❌ \| `CREATE UNIQUE INDEX customers_domain ON customers \(split_part\(email, '…', 2\)\);`/);
});
