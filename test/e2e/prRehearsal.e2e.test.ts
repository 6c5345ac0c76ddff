// The PR database action's migration rehearsal (migrate:), as a user's repository uses it (the
// lab: test/support/lab/prDatabase.ts): the example's workflow with migrate: added, its migration a
// file of the repository run by psql in the job's workspace. Each push starts again from
// production's masked state (a new fork, the previous push's deleted), the migration watched; the
// PR's comment says what each statement did.
import * as fs from "fs";
import * as path from "path";
import { PERSONAL_TABLE } from "../../simulator/databases";
import { api, forksNamed, prDatabaseLab, pullRequest, repositories, runnerOf, sh, trigger, WITH } from "../support/lab/prDatabase";

jest.setTimeout(300_000);
prDatabaseLab("pr-rehearsal.e2e");

const REPOSITORY = "acme/rehearsed";
const PR = 3;
// The migration, a file of the repository; every lock that stops writes flagged (the tables are small).
WITH[REPOSITORY] = ["migrate: sh migrate.sh", "lock-threshold: 0ms"];

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

// The simulator's production holds 100 customers: a data migration first makes the table large
// enough for each statement after it to last longer than the watch's 50 ms look.
const GROW = `INSERT INTO ${PERSONAL_TABLE} (id, email) SELECT g, 'm' || g || '@example.com' FROM generate_series(1000, 300000) g;\n`;
const MIGRATION = `${GROW}ALTER TABLE ${PERSONAL_TABLE} ADD COLUMN score float8 DEFAULT random();\nCREATE INDEX customers_name ON ${PERSONAL_TABLE} (full_name);\n`;

const comment = () => api.comments.filter((c) => c.repository === REPOSITORY && c.issue === PR && c.user.type === "Bot").map((c) => c.body);
/** The PR's forks not deleted (nor being deleted). */
const liveForks = () => forksNamed(`pr-${PR}.acme.rehearsed`).filter((s) => !["DELETING", "DELETED"].includes(s.status));

test("each push rehearses its migration on a new fork of production's masked state: a rewrite under ACCESS EXCLUSIVE and an index build reported and flagged, then a failing one fails the job naming the statement; the migration sees none of the action's inputs, the comment no URL and no value", async () => {
  push(MIGRATION);
  const first = await pushed("opened", 0);
  const [report] = comment();
  expect(report).toContain("### Migration rehearsal: **");
  expect(report).toMatch(
    /`ALTER TABLE customers ADD COLUMN score float8 DEFAULT random\(\);` \| [0-9.]+ s \| \*\*ACCESS EXCLUSIVE\*\* `public\.customers`/,
  );
  expect(report).toMatch(/rewrote `public\.customers`/);
  expect(report).toMatch(/`CREATE INDEX customers_name ON customers \(full_name\);` \| [0-9.]+ s \| \*\*SHARE\*\* `public\.customers`/);
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
