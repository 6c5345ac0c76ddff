// tigercloud-rehearse, run as a person runs it, on a fork of the simulator's production (real
// PostgreSQL with TimescaleDB: customers, and the events hypertable with compressed chunks and
// continuous aggregates): each migration reported as it happened, flagged or not as the rules say.
import { execFile } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { Databases } from "../../simulator/databases";
import type { Rehearsal } from "../../rehearsal/rehearse";

jest.setTimeout(120_000);
const ROOT = path.join(__dirname, "..", "..");
const dbs = new Databases("postgres");
let forks = 0;
let dir = "";

beforeAll(async () => {
  await dbs.start();
  if (dbs.kind !== "timescaledb") throw new Error(`the rehearsal's tests need TimescaleDB behind the simulator: ${dbs.describe()}`);
  await dbs.seed("production", "production-password");
  // customers as a table production writes is sized: 100 rows are rewritten or indexed in about a
  // millisecond, far less than a look's interval (50 ms), and the rehearsal says a statement shorter
  // than that may be missed. 100,000 rows hold its locks for a few tenths of a second, longer than
  // several looks. Row 1 keeps its NULL referred_by (the failing migration's cause).
  await dbs.query(
    "production",
    "INSERT INTO customers SELECT g, 'customer' || g || '@prod-customers.example.com', 'Customer Number' || g || ' Realname', " +
      "'tok_live_' || lpad(to_hex(g::bigint * 2654435761), 8, '0'), 1 + g % 100 FROM generate_series(101, 100100) g",
  );
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "tigercloud-rehearse-"));
});
afterAll(async () => {
  await dbs.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** A new fork of production, as a push's rehearsal starts from: its URL. `sql`, run on it first (as the superuser). */
async function freshFork(sql?: string): Promise<string> {
  const id = `rehearsal-${++forks}`;
  const { port } = await dbs.fork("production", id, `pw-${id}`, 0);
  await dbs.settled(id);
  // As a prepared fork's are (pauseJobs): the user-defined action, every 10 s, would otherwise write
  // beside a slow migration and count in its rows (docs/rehearsal.md says so).
  await dbs.query(
    id,
    "SELECT count(*) FROM timescaledb_information.jobs j, LATERAL alter_job(j.job_id, scheduled => false) a WHERE j.job_id >= 1000",
  );
  if (sql) await dbs.query(id, sql);
  return `postgresql://tsdbadmin:pw-${id}@127.0.0.1:${port}/tsdb?sslmode=require`;
}

/** The command, its exit code, the report it printed and the one it wrote as JSON. */
function rehearse(
  url: string,
  command: string,
  ...options: string[]
): Promise<{ code: number; stdout: string; stderr: string; report: Rehearsal }> {
  const json = path.join(dir, `report-${forks}.json`);
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      ["-r", "ts-node/register/transpile-only", path.join(ROOT, "rehearsal", "main.ts"), "--command", command, "--json", json, ...options],
      { cwd: ROOT, env: { ...process.env, DATABASE_URL: url }, timeout: 90_000 },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === "number" ? err.code : 1) : 0;
        // No report: the rehearsal itself did not run to its end. Its own words fail the test (a throw
        // here, in execFile's callback, would leave the promise pending until the test's timeout).
        if (!fs.existsSync(json)) {
          reject(new Error(`no report (exit ${code}${err?.signal ? `, ${err.signal}` : ""}):\n${stderr}${stdout}`));
          return;
        }
        resolve({ code, stdout, stderr, report: JSON.parse(fs.readFileSync(json, "utf8")) as Rehearsal });
      },
    );
  });
}

const psql = (sql: string) => `psql "$DATABASE_URL" -X -q -v ON_ERROR_STOP=1 -c ${JSON.stringify(sql)}`;
const locksOf = (r: Rehearsal, relation: string) => r.statements.flatMap((s) => s.locks.filter((l) => l.relation === relation));

test("a column with a volatile default: a rewrite of customers under ACCESS EXCLUSIVE, flagged; the schema's difference shows only the column", async () => {
  const url = await freshFork();
  const { code, stdout, report } = await rehearse(
    url,
    psql("ALTER TABLE customers ADD COLUMN token text DEFAULT md5(random()::text)"),
    "--lock-threshold",
    "0ms",
  );
  expect(code).toBe(0);
  const statement = report.statements.find((s) => s.text.startsWith("ALTER TABLE customers ADD COLUMN token"));
  expect(statement?.locks).toEqual(
    expect.arrayContaining([expect.objectContaining({ relation: "public.customers", mode: "AccessExclusiveLock", blocksWrites: true })]),
  );
  expect(statement?.rewrote).toEqual(expect.arrayContaining([expect.objectContaining({ relation: "public.customers", kind: "rewrote" })]));
  expect(statement?.flags.some((f) => /^AccessExclusive on public\.customers for [0-9.]+ s/.test(f))).toBe(true);
  // No literal of the statement reaches the report.
  expect(statement?.text).toBe("ALTER TABLE customers ADD COLUMN token text DEFAULT md5(random()::text)");
  expect(report.schema).toEqual([{ change: "added", key: "column public.customers.token", after: "text DEFAULT md5((random())::text)" }]);
  expect(stdout).toMatch(/^### Migration rehearsal: \*\*[0-9]+ flagged\*\*/);
});

test("an index built plainly holds SHARE (flagged past the threshold); built CONCURRENTLY, nothing that stops writes", async () => {
  const plain = await rehearse(await freshFork(), psql("CREATE INDEX customers_name ON customers (full_name)"), "--lock-threshold", "0ms");
  const built = plain.report.statements.find((s) => s.text.startsWith("CREATE INDEX customers_name"));
  expect(built?.locks).toEqual(
    expect.arrayContaining([expect.objectContaining({ relation: "public.customers", mode: "ShareLock", blocksWrites: true })]),
  );
  expect(built?.rewrote).toEqual([expect.objectContaining({ relation: "public.customers_name", of: "public.customers", kind: "built" })]);
  expect(built?.flags.some((f) => f.startsWith("Share on public.customers"))).toBe(true);

  const concurrently = await rehearse(
    await freshFork(),
    psql("CREATE INDEX CONCURRENTLY customers_name ON customers (full_name)"),
    "--lock-threshold",
    "0ms",
  );
  expect(concurrently.code).toBe(0);
  const locks = locksOf(concurrently.report, "public.customers");
  expect(locks.map((l) => l.mode)).toContain("ShareUpdateExclusiveLock");
  expect(locks.filter((l) => l.blocksWrites)).toEqual([]);
  expect(concurrently.report.flags).toEqual([]);
  expect(concurrently.report.schema.map((c) => c.key)).toEqual(["index public.customers_name"]);
});

test("an UPDATE of the events hypertable's compressed chunks: rows changed, chunks left partly compressed, the aggregates still refresh", async () => {
  const { code, report } = await rehearse(
    await freshFork(),
    psql("UPDATE events SET duration_ms = duration_ms + 1 WHERE path = '/page/3'"),
  );
  expect(code).toBe(0);
  expect(report.rows).toEqual([expect.objectContaining({ table: "public.events" })]);
  expect(report.rows[0]?.updated).toBeGreaterThan(0);
  const events = report.chunks.find((c) => c.hypertable === "public.events");
  expect(events?.after?.partial).toBeGreaterThan(events?.before?.partial ?? 0);
  expect(report.aggregatesFailing).toEqual([]);
  expect(report.schema).toEqual([]);
  // The statement's literal is not in the report.
  expect(JSON.stringify(report)).not.toContain("/page/3");
});

test("a migration that fails on production's data fails the command, naming the statement and PostgreSQL's error", async () => {
  // The check fails at the first NULL, row 1's, at the start of the table: a few milliseconds, seen by a
  // look only by luck. With a million more rows before it (row 1 written again, at the table's end) the
  // check scans them all first, longer than a look's interval.
  const grown =
    "INSERT INTO customers SELECT g, 'customer' || g || '@prod-customers.example.com', 'Customer Number' || g || ' Realname', " +
    "'tok_live_' || lpad(to_hex(g::bigint * 2654435761), 8, '0'), 1 + g % 100 FROM generate_series(100101, 1100100) g; " +
    "WITH first AS (DELETE FROM customers WHERE id = 1 RETURNING *) INSERT INTO customers SELECT * FROM first;";
  const { code, stdout, report } = await rehearse(
    await freshFork(grown),
    psql("ALTER TABLE customers ALTER COLUMN referred_by SET NOT NULL"),
  );
  expect(code).toBe(1);
  expect(report.exitCode).not.toBe(0);
  const failed = report.statements.filter((s) => s.failed);
  expect(failed.map((s) => s.text)).toEqual(["ALTER TABLE customers ALTER COLUMN referred_by SET NOT NULL"]);
  expect(report.output).toMatch(/column "referred_by" of relation "customers" contains null values/);
  expect(stdout).toMatch(/^### Migration rehearsal: \*\*failed\*\*/);
  expect(report.schema).toEqual([]);
});

test("a lock held for a known time is reported within 0.2 s of it, and what waited for it is reported too", async () => {
  const url = await freshFork();
  const holdAndWait =
    `psql "$DATABASE_URL" -X -q -c "BEGIN; LOCK TABLE customers IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(2); COMMIT;" & ` +
    `sleep 0.5; psql "$DATABASE_URL" -X -q -c "SELECT count(*) FROM customers"; wait`;
  const { code, report } = await rehearse(url, holdAndWait, "--lock-threshold", "1s");
  expect(code).toBe(0);
  const held = locksOf(report, "public.customers").find((l) => l.mode === "AccessExclusiveLock");
  expect(Math.abs((held?.ms ?? 0) - 2000)).toBeLessThanOrEqual(200);
  const waited = report.statements.flatMap((s) => s.waited).find((w) => w.relation === "public.customers");
  expect(waited?.mode).toBe("AccessShareLock");
  expect(waited?.ms).toBeGreaterThan(1000);
  expect(report.flags.some((f) => /AccessExclusive on public\.customers for 2\.[0-2][0-9] s/.test(f))).toBe(true);
});

test("a wrong option is refused naming it, exit 2, nothing run", async () => {
  const { code, stderr } = await new Promise<{ code: number; stderr: string }>((resolve) =>
    execFile(
      process.execPath,
      ["-r", "ts-node/register/transpile-only", path.join(ROOT, "rehearsal", "main.ts"), "--command", "true", "--lock-threshold", "soon"],
      { cwd: ROOT, env: { ...process.env, DATABASE_URL: "postgresql://x@127.0.0.1:9/tsdb" } },
      (err, _stdout, stderr) => resolve({ code: typeof err?.code === "number" ? err.code : 0, stderr }),
    ),
  );
  expect(code).toBe(2);
  expect(stderr).toContain('--lock-threshold is a duration such as "1s" or "250ms" (got "soon")');
});

// Red team: a migration that holds ACCESS EXCLUSIVE on customers (a table production writes) for
// 2 s must be flagged however it hides from the watcher; a migration that failed must fail.
describe("red team", () => {
  const flaggedOnCustomers = (r: Rehearsal) => r.flags.filter((f) => /AccessExclusive on .*customers.* for [0-9.]+ s/.test(f));

  test("renamed first: the lock is on customers, under another name, for 2 s: flagged", async () => {
    const { report, stdout } = await rehearse(
      await freshFork(),
      `psql "$DATABASE_URL" -X -q -v ON_ERROR_STOP=1 -c "ALTER TABLE customers RENAME TO customers_old" ` +
        `-c "BEGIN; LOCK TABLE customers_old IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(2); COMMIT;" ` +
        `-c "ALTER TABLE customers_old RENAME TO customers"`,
    );
    expect(locksOf(report, "public.customers_old").some((l) => l.mode === "AccessExclusiveLock" && l.ms >= 1800)).toBe(true);
    expect(flaggedOnCustomers(report)).not.toEqual([]);
    expect(stdout).not.toMatch(/^### Migration rehearsal: nothing flagged/);
  });

  test("moved into a schema named like TimescaleDB's: the lock on customers for 2 s is seen and flagged", async () => {
    const { report, stdout } = await rehearse(
      await freshFork(),
      `psql "$DATABASE_URL" -X -q -v ON_ERROR_STOP=1 -c "CREATE SCHEMA timescaledb_app" -c "ALTER TABLE customers SET SCHEMA timescaledb_app" ` +
        `-c "BEGIN; LOCK TABLE timescaledb_app.customers IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(2); COMMIT;" ` +
        `-c "ALTER TABLE timescaledb_app.customers SET SCHEMA public" -c "DROP SCHEMA timescaledb_app"`,
    );
    expect(flaggedOnCustomers(report)).not.toEqual([]);
    expect(stdout).not.toMatch(/^### Migration rehearsal: nothing flagged/);
  });

  test("run in the background, the command exiting at once: the lock it held for 2 s is still flagged", async () => {
    const { report, stdout } = await rehearse(
      await freshFork(),
      `(sleep 0.3; psql "$DATABASE_URL" -X -q -c "BEGIN; LOCK TABLE customers IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(2); COMMIT;") >/dev/null 2>&1 &`,
    );
    expect(flaggedOnCustomers(report)).not.toEqual([]);
    expect(stdout).not.toMatch(/^### Migration rehearsal: nothing flagged/);
  });

  test("a statement that failed, its transaction rolled back, while the command exited 0: the rehearsal fails", async () => {
    const { code, stdout, report } = await rehearse(
      await freshFork(),
      `printf 'BEGIN;\\nALTER TABLE customers ADD COLUMN token text;\\nSELECT 1/0;\\n\\\\! sleep 0.5\\nCOMMIT;\\n' | psql "$DATABASE_URL" -X -q`,
    );
    expect(report.statements.some((s) => s.failed)).toBe(true);
    expect(report.schema).toEqual([]);
    expect(code).toBe(1);
    expect(stdout).toMatch(/^### Migration rehearsal: \*\*failed\*\*/);
  });

  test("a session of another login role (made by the migration) holding the lock for 2 s: seen and flagged", async () => {
    // As on Tiger Cloud, the owner may create roles.
    const url = await freshFork("ALTER ROLE tsdbadmin CREATEROLE");
    const { report, stdout } = await rehearse(
      url,
      `psql "$DATABASE_URL" -X -q -v ON_ERROR_STOP=1 -c "CREATE ROLE ghost LOGIN PASSWORD 'ghost-pw'" -c "GRANT tsdbadmin TO ghost" && ` +
        `psql "$(echo "$DATABASE_URL" | sed 's|//tsdbadmin:[^@]*@|//ghost:ghost-pw@|')" -X -q -v ON_ERROR_STOP=1 ` +
        `-c "BEGIN; LOCK TABLE customers IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(2); COMMIT;"`,
    );
    expect(flaggedOnCustomers(report)).not.toEqual([]);
    expect(stdout).not.toMatch(/^### Migration rehearsal: nothing flagged/);
  });

  test("the command's output cannot give the runner a workflow command (GitHub's ##[ form, found anywhere in a line)", async () => {
    const { stderr } = await rehearse(
      await freshFork(),
      `psql "$DATABASE_URL" -X -q -c "DO \\$\\$ BEGIN RAISE NOTICE '##[error]forged by the migration'; END \\$\\$"; echo '##[add-mask]ERROR'; echo '##[set-output name=database-url;]postgresql://attacker.example/x'`,
    );
    // What the command printed: each line after "  | ".
    const printed = stderr.split("\n").filter((l) => l.startsWith("  | "));
    expect(printed.join("\n")).toContain("forged by the migration");
    expect(printed.filter((l) => l.includes("##["))).toEqual([]);
  });

  test("a partitioned table production writes (its rows in its partitions), locked ONLY for 2 s: every write to it waits, flagged", async () => {
    const url = await freshFork(
      "CREATE TABLE readings (at timestamptz NOT NULL, v float8) PARTITION BY RANGE (at); " +
        "CREATE TABLE readings_2026 PARTITION OF readings FOR VALUES FROM ('2026-01-01') TO ('2027-01-01'); " +
        "INSERT INTO readings SELECT '2026-01-01'::timestamptz + g * interval '1 minute', g FROM generate_series(1, 10000) g; " +
        "ALTER TABLE readings OWNER TO tsdbadmin; ALTER TABLE readings_2026 OWNER TO tsdbadmin;",
    );
    const { report } = await rehearse(
      url,
      `psql "$DATABASE_URL" -X -q -v ON_ERROR_STOP=1 -c "BEGIN; LOCK TABLE ONLY readings IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(2); COMMIT;"`,
    );
    expect(locksOf(report, "public.readings").some((l) => l.mode === "AccessExclusiveLock" && l.ms >= 1800)).toBe(true);
    expect(report.flags.filter((f) => /AccessExclusive on public\.readings for/.test(f))).not.toEqual([]);
  });

  test("what the command printed on failure never names the action's secrets (the parent's environment)", async () => {
    const url = await freshFork();
    const json = path.join(dir, "secret.json");
    const { stdout } = await new Promise<{ stdout: string }>((resolve) =>
      execFile(
        process.execPath,
        [
          "-r",
          "ts-node/register/transpile-only",
          "-e",
          `require(${JSON.stringify(path.join(ROOT, "rehearsal", "rehearse"))}).rehearse(process.env.DATABASE_URL, ` +
            `"tr '\\\\0' '\\\\n' < /proc/$PPID/environ | grep ^INPUT_; exit 1", {lockMs: 1000, rewriteBytes: 1e9, intervalMs: 50, ` +
            `env: Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("INPUT_")))})` +
            `.then((r) => require("fs").writeFileSync(${JSON.stringify(json)}, JSON.stringify(r)))`,
        ],
        { cwd: ROOT, env: { ...process.env, DATABASE_URL: url, INPUT_TIGER_SECRET_KEY: "tiger-secret-key-value-1234" } },
        (_err, stdout) => resolve({ stdout }),
      ),
    );
    const report = fs.readFileSync(json, "utf8");
    expect(stdout + report).not.toContain("tiger-secret-key-value-1234");
  });
});
