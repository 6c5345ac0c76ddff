// What masking guarantees, read as the URL holder reads it: through the fork's published URL, as
// tsdbadmin (not a superuser), on a production that runs TimescaleDB and looks like a Tiger Cloud
// customer's (simulator/production.ts). Each way production's values were found to get through is
// a test here: compressed chunks, continuous aggregates, statistics of every kind, triggers and
// rules on a masked table, materialized views, a table named in the wrong letter case, an error
// that quotes a row, foreign tables and servers, transactions prepared in production, a masked
// column written back after the masking.
import { execFile } from "child_process";
import { promisify } from "util";
import { customerRow, PERSONAL_ROWS } from "../../simulator/databases";
import { EVENTS_DAILY, EVENTS_TABLE } from "../../simulator/production";
import { type EngineHarness, startEngine, tigercloud } from "../support/lab/harness";

jest.setTimeout(300_000);
const run = promisify(execFile);
let h: EngineHarness;

beforeAll(async () => {
  h = await startEngine({ forkQueuedMs: 100, forkConfiguringMs: 100 }, { databases: "postgres" });
  expect(h.sim.databases.kind).toBe("timescaledb");
});
afterAll(async () => {
  await h?.close();
});

/** What the URL holder reads: psql with the published URL. */
const read = async (uri: string, sql: string) => (await run("psql", [uri, "-X", "-A", "-t", "-c", sql], { timeout: 30_000 })).stdout.trim();
/** Production, as its superuser; the objects a test makes there are tsdbadmin's, as a user's are. */
const inProduction = async (sql: string) => (await h.sim.databases.query(h.ids.serviceId, `SET ROLE tsdbadmin; ${sql}`)).trim();
const asSuperuser = async (sql: string) => (await h.sim.databases.query(h.ids.serviceId, sql)).trim();

const PRODUCTION_EMAILS = Array.from({ length: PERSONAL_ROWS }, (_, i) => customerRow(i + 1).email);
/** Whether a text holds any production e-mail address (they all end so). */
const holdsProduction = (text: string) => text.includes("@prod-customers.example.com");

type Preparation = NonNullable<import("pulumi-tigercloud").ServiceForkArgs["prepare"]>;
const forkProgram = (name: string, prepare: object) => async () => {
  const { ServiceFork } = tigercloud();
  const f = new ServiceFork("f", {
    sourceServiceId: h.ids.serviceId,
    forkStrategy: "NOW",
    name,
    onDestroy: "delete",
    prepare: prepare as Preparation,
  });
  return { id: f.serviceId, uri: f.connectionUri, prepared: f.prepared };
};

/** A fork prepared with `prepare`: its URL and what `prepared` said; destroyed after the test. */
async function preparedFork(name: string, prepare: object): Promise<{ uri: string; prepared: Record<string, unknown>; stdout: string }> {
  const s = await h.stack(name, forkProgram(name, prepare));
  cleanups.push(() => s.destroy());
  const up = await s.up();
  return { uri: up.outputs.uri?.value as string, prepared: up.outputs.prepared?.value as Record<string, unknown>, stdout: up.stdout };
}
/** A fork whose preparation must fail: the failure's text, the state's, and no URL published. */
async function refusedFork(name: string, prepare: object): Promise<{ message: string; state: string }> {
  const s = await h.stack(name, forkProgram(name, prepare));
  cleanups.push(() => s.destroy());
  const message = await s.up().then(
    () => "",
    (err: Error) => err.message,
  );
  const fork = (await s.exportState()).resources?.find((r) => r.type.endsWith("tigercloud:ServiceFork"));
  expect(fork?.outputs?.connectionUri).toBeUndefined();
  expect(fork?.outputs?.preparePending).toBe(true);
  return { message, state: s.rawState() };
}
const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c().catch(() => undefined);
});

describe("the README's rules on a TimescaleDB production (customers, and a compressed hypertable with a continuous aggregate)", () => {
  const rules = {
    mask: [
      { table: "customers", column: "email", with: "email" },
      { table: "customers", column: "full_name", with: "keepFirst", chars: 8 },
      { table: "customers", column: "api_token", with: "hash" },
      { table: EVENTS_TABLE, column: "customer_email", with: "email" },
    ],
    pauseJobs: true,
  };
  let fork: Awaited<ReturnType<typeof preparedFork>>;
  let compressedAtSource = "";
  beforeAll(async () => {
    // Statistics of every kind in production: an expression index and extended statistics too.
    await inProduction(
      "CREATE INDEX IF NOT EXISTS customers_lower_email ON customers (lower(email)); " +
        "CREATE STATISTICS IF NOT EXISTS customers_email_name (mcv) ON email, full_name FROM customers; ANALYZE customers;",
    );
    compressedAtSource = (
      await inProduction(
        `SELECT count(*) FILTER (WHERE is_compressed) || '/' || count(*) FROM timescaledb_information.chunks WHERE hypertable_name = '${EVENTS_TABLE}'`,
      )
    ).trim();
    const s = await h.stack("readme-rules", forkProgram("pr-readme", rules));
    const up = await s.up();
    fork = { uri: up.outputs.uri?.value as string, prepared: up.outputs.prepared?.value as Record<string, unknown>, stdout: up.stdout };
    cleanups.length = 0;
    afterAllDestroy = () => s.destroy();
  });
  let afterAllDestroy: () => Promise<unknown> = async () => undefined;
  afterAll(async () => {
    await afterAllDestroy();
  });

  test("the hypertable: every chunk masked, with more compressed rows than TimescaleDB's UPDATE may decompress; compressed chunks end compressed", async () => {
    expect(
      Number(
        await read(
          fork.uri,
          "SELECT count(*) FROM _timescaledb_catalog.chunk c JOIN _timescaledb_catalog.chunk cc ON cc.id = c.compressed_chunk_id",
        ),
      ),
    ).toBeGreaterThan(10);
    expect(await read(fork.uri, `SELECT count(*) FROM ${EVENTS_TABLE} WHERE customer_email LIKE '%prod-customers%'`)).toBe("0");
    expect(
      await read(fork.uri, `SELECT count(*) FROM ${EVENTS_TABLE} WHERE customer_email !~ '^user-[0-9a-f]{16}@example\\.invalid$'`),
    ).toBe("0");
    // Read chunk by chunk too, as the URL holder may.
    const chunks = (
      await read(
        fork.uri,
        `SELECT format('%I.%I', chunk_schema, chunk_name) FROM timescaledb_information.chunks WHERE hypertable_name = '${EVENTS_TABLE}'`,
      )
    ).split("\n");
    for (const chunk of chunks)
      expect(holdsProduction(await read(fork.uri, `SELECT string_agg(DISTINCT customer_email, ',') FROM ${chunk}`))).toBe(false);
    const compressedOnFork = await read(
      fork.uri,
      `SELECT count(*) FILTER (WHERE is_compressed) || '/' || count(*) FROM timescaledb_information.chunks WHERE hypertable_name = '${EVENTS_TABLE}'`,
    );
    expect(compressedOnFork).toBe(compressedAtSource);
    // None left partly compressed (rows rewritten out of their compressed batches: status bit 8).
    expect(await read(fork.uri, "SELECT count(*) FROM _timescaledb_catalog.chunk WHERE status & 8 <> 0")).toBe("0");
    // The same addresses mask the same way in both tables: joins hold.
    expect(
      await read(
        fork.uri,
        `SELECT count(*) FROM ${EVENTS_TABLE} e JOIN customers c ON c.email = e.customer_email WHERE e.time > now() - interval '1 day'`,
      ),
    ).not.toBe("0");
    expect(fork.prepared.masked).toContainEqual({ rule: "public.events.customer_email", with: "email", rows: 140_000 });
  });

  test("the continuous aggregate grouping by the masked column is refreshed from the masked data", async () => {
    expect(Number(await read(fork.uri, `SELECT count(*) FROM ${EVENTS_DAILY}`))).toBeGreaterThan(100);
    expect(holdsProduction(await read(fork.uri, `SELECT string_agg(customer_email, ',') FROM ${EVENTS_DAILY}`))).toBe(false);
    expect(
      holdsProduction(await read(fork.uri, "SELECT string_agg(customer_email, ',') FROM _timescaledb_internal._materialized_hypertable_3")),
    ).toBe(false);
    expect(fork.prepared.refreshed).toContain(`public.${EVENTS_DAILY}`);
  });

  test("statistics of every kind (columns, chunks, compressed chunks, an expression index, extended statistics) hold no production value", async () => {
    const everything = await read(
      fork.uri,
      "SELECT string_agg(coalesce(most_common_vals::text, '') || coalesce(histogram_bounds::text, ''), ',') FROM pg_stats " +
        "UNION ALL SELECT string_agg(coalesce(most_common_vals::text, ''), ',') FROM pg_stats_ext",
    );
    expect(everything).toContain("example.invalid"); // the masked values are analysed
    expect(holdsProduction(everything)).toBe(false);
    // At the source they are there: this is what a fork copies.
    expect(
      holdsProduction(
        await inProduction(
          "SELECT string_agg(most_common_vals::text, ',') FROM pg_stats WHERE attname IN ('email', 'customer_email', 'lower')",
        ),
      ),
    ).toBe(true);
  });

  test("jobs: paused on the fork and running at the source; the user-defined action's runs seen there", async () => {
    expect(await read(fork.uri, "SELECT count(*) FROM timescaledb_information.jobs WHERE scheduled AND job_id >= 1000")).toBe("0");
    expect(await inProduction("SELECT count(*) FROM timescaledb_information.jobs WHERE NOT scheduled")).toBe("0");
    expect(fork.prepared.jobsPaused).toEqual([1000, 1001, 1002, 1003]);
    expect(Number(await inProduction("SELECT total_runs FROM timescaledb_information.job_stats WHERE job_id = 1003"))).toBeGreaterThan(0);
  });
});

test("triggers and rules on a masked table do not run during the masking: none copies the old values, none undoes it", async () => {
  await inProduction(`
    CREATE TABLE leak_log (value text);
    CREATE TABLE t_copy (id int, email text); INSERT INTO t_copy SELECT g, 'customer' || g || '@prod-customers.example.com' FROM generate_series(1, 20) g;
    CREATE FUNCTION copy_old() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN INSERT INTO leak_log VALUES (OLD.email); RETURN NEW; END $$;
    CREATE TRIGGER copy_old AFTER UPDATE ON t_copy FOR EACH ROW EXECUTE FUNCTION copy_old();
    CREATE TABLE t_undo (id int, email text); INSERT INTO t_undo SELECT * FROM t_copy;
    CREATE FUNCTION keep_old() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN OLD; END $$;
    CREATE TRIGGER keep_old BEFORE UPDATE ON t_undo FOR EACH ROW EXECUTE FUNCTION keep_old();
    CREATE TABLE t_nothing (id int, email text); INSERT INTO t_nothing SELECT * FROM t_copy;
    CREATE RULE nothing AS ON UPDATE TO t_nothing DO INSTEAD NOTHING;
    CREATE TABLE t_also (id int, email text); INSERT INTO t_also SELECT * FROM t_copy;
    CREATE RULE also_log AS ON UPDATE TO t_also DO ALSO INSERT INTO leak_log VALUES (OLD.email);`);
  const fork = await preparedFork("pr-triggers", {
    mask: ["t_copy", "t_undo", "t_nothing", "t_also"].map((table) => ({ table, column: "email", with: "hash" })),
  });
  for (const table of ["t_copy", "t_undo", "t_nothing", "t_also"])
    expect(await read(fork.uri, `SELECT count(*) FROM ${table} WHERE email !~ '^h[0-9a-f]{32}$'`)).toBe("0");
  expect(await read(fork.uri, "SELECT count(*) FROM leak_log")).toBe("0");
  // Back as they were, for the PR's own tests.
  expect(
    await read(
      fork.uri,
      "SELECT string_agg(tgname || ':' || tgenabled::text, ',' ORDER BY tgname) FROM pg_trigger WHERE tgname IN ('copy_old', 'keep_old')",
    ),
  ).toBe("copy_old:O,keep_old:O");
  expect(
    await read(
      fork.uri,
      "SELECT string_agg(rulename || ':' || ev_enabled::text, ',' ORDER BY rulename) FROM pg_rewrite WHERE rulename IN ('nothing', 'also_log')",
    ),
  ).toBe("also_log:O,nothing:O");
});

test("a materialized view over a masked column is refreshed from the masked data", async () => {
  await inProduction("CREATE MATERIALIZED VIEW customer_domains AS SELECT email, split_part(email, '@', 2) AS domain FROM customers;");
  const fork = await preparedFork("pr-matview", { mask: [{ table: "customers", column: "email", with: "email" }] });
  expect(await read(fork.uri, "SELECT count(*) FROM customer_domains")).toBe(String(PERSONAL_ROWS));
  expect(holdsProduction(await read(fork.uri, "SELECT string_agg(email || domain, ',') FROM customer_domains"))).toBe(false);
  expect(fork.prepared.refreshed).toContain("public.customer_domains");
});

test("a table named in another letter case is refused, naming both tables: the rule could mask the wrong one", async () => {
  await inProduction(
    `CREATE TABLE "Accounts" (email text); INSERT INTO "Accounts" VALUES ('customer1@prod-customers.example.com'); CREATE TABLE accounts (email text);`,
  );
  const { message } = await refusedFork("pr-case", { mask: [{ table: "Accounts", column: "email", with: "null" }] });
  expect(message).toMatch(/the table Accounts is read as public\.accounts .*public\."Accounts" is another table/);
});

test("an error from inside the preparation quotes no row: a trigger's message carrying a production value is said by its SQLSTATE", async () => {
  await inProduction(`
    CREATE TABLE t_loud (id int, email text); INSERT INTO t_loud VALUES (1, 'customer1@prod-customers.example.com');
    CREATE FUNCTION loud() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'cannot change %', OLD.email; END $$;
    CREATE TRIGGER loud BEFORE UPDATE ON t_loud FOR EACH ROW EXECUTE FUNCTION loud();`);
  const { message, state } = await refusedFork("pr-loud", {
    sql: ["UPDATE t_loud SET id = 2"],
    mask: [{ table: "t_loud", column: "email", with: "null" }],
  });
  expect(message).toMatch(/failed at prepare\.sql\[0\] \(UPDATE t_loud SET id = 2\): SQLSTATE P0001 \(raise_exception\)/);
  expect(holdsProduction(message)).toBe(false);
  expect(holdsProduction(state)).toBe(false);
});

test("foreign tables: a rule on one is refused; on the fork no foreign server or user mapping is left, so no way to production", async () => {
  const source = h.sim.service(h.ids.projectId, h.ids.serviceId)!;
  const password = h.sim.databases.password(h.ids.serviceId)!;
  await asSuperuser("CREATE EXTENSION IF NOT EXISTS postgres_fdw; GRANT USAGE ON FOREIGN DATA WRAPPER postgres_fdw TO tsdbadmin;");
  await inProduction(`
    CREATE SERVER production FOREIGN DATA WRAPPER postgres_fdw OPTIONS (host '127.0.0.1', port '${source.endpoint.port}', dbname 'tsdb', sslmode 'require');
    CREATE USER MAPPING FOR tsdbadmin SERVER production OPTIONS (user 'tsdbadmin', password '${password}');
    CREATE FOREIGN TABLE production_customers (id int, email text) SERVER production OPTIONS (table_name 'customers');`);
  // Reading production through it works, at the source.
  expect(holdsProduction(await inProduction("SELECT email FROM production_customers WHERE id = 1"))).toBe(true);
  const refused = await refusedFork("pr-foreign-rule", { mask: [{ table: "production_customers", column: "email", with: "null" }] });
  expect(refused.message).toMatch(/public\.production_customers is a foreign table: writing it would change another database's rows/);
  const fork = await preparedFork("pr-foreign", { mask: [{ table: "customers", column: "email", with: "email" }] });
  expect(await read(fork.uri, "SELECT count(*) FROM pg_foreign_server")).toBe("0");
  expect(await read(fork.uri, "SELECT count(*) FROM pg_user_mappings")).toBe("0");
  await expect(read(fork.uri, "SELECT email FROM production_customers")).rejects.toThrow(/does not exist/);
  expect(fork.prepared.removed).toEqual(["foreign server production"]);
});
afterAll(async () => {
  await inProduction("DROP SERVER IF EXISTS production CASCADE;").catch(() => undefined);
});

test("a transaction prepared in production cannot be committed on the fork to write production's rows back", async () => {
  await inProduction("CREATE TABLE t_2pc (id int, email text); INSERT INTO t_2pc VALUES (1, 'customer1@prod-customers.example.com');");
  await inProduction("BEGIN; INSERT INTO t_2pc VALUES (2, 'customer2@prod-customers.example.com'); PREPARE TRANSACTION 'prod-batch-7';");
  try {
    const fork = await preparedFork("pr-2pc", { mask: [{ table: "t_2pc", column: "email", with: "hash" }] });
    expect(await read(fork.uri, "SELECT count(*) FROM pg_prepared_xacts")).toBe("0");
    await expect(read(fork.uri, "COMMIT PREPARED 'prod-batch-7'")).rejects.toThrow(/does not exist/);
    expect(holdsProduction(await read(fork.uri, "SELECT string_agg(email, ',') FROM t_2pc"))).toBe(false);
    expect(fork.prepared.removed).toContain('prepared transaction "prod-batch-7"');
  } finally {
    await asSuperuser("ROLLBACK PREPARED 'prod-batch-7';");
  }
});

test("after the masking, every masked column is checked: SQL that writes production values back fails the preparation, and no URL is published", async () => {
  const { message } = await refusedFork("pr-written-back", {
    mask: [{ table: "customers", column: "email", with: "email" }],
    sqlAfter: [`UPDATE customers SET email = 'customer' || id || '@prod-customers.example.com' WHERE id <= 3`],
  });
  expect(message).toMatch(/after the masking, 3 row\(s\) of public\.customers still hold a email that the rule did not write/);
  expect(message).toMatch(/Nothing of its SQL and masking was kept \(one transaction, rolled back\)/);
  expect(PRODUCTION_EMAILS.some((e) => message.includes(e))).toBe(false);
});

test("what else the masking reaches: an empty table's statistics (which ANALYZE keeps), a cascading key's trigger held off; a view is refused as a rule's table", async () => {
  await inProduction(`
    CREATE TABLE t_emptied (email text); INSERT INTO t_emptied SELECT 'customer' || (g % 10) || '@prod-customers.example.com' FROM generate_series(1, 500) g;
    ANALYZE t_emptied; DELETE FROM t_emptied; ANALYZE t_emptied;
    CREATE TABLE t_people (email text PRIMARY KEY); INSERT INTO t_people SELECT 'customer' || g || '@prod-customers.example.com' FROM generate_series(1, 10) g;
    CREATE TABLE t_orders (id int, email text REFERENCES t_people (email) ON UPDATE CASCADE); INSERT INTO t_orders SELECT g, email FROM t_people, generate_series(1, 2) g;
    CREATE TABLE t_order_log (old text);
    CREATE FUNCTION log_order() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN INSERT INTO t_order_log VALUES (OLD.email); RETURN NEW; END $$;
    CREATE TRIGGER log_order AFTER UPDATE ON t_orders FOR EACH ROW EXECUTE FUNCTION log_order();
    CREATE VIEW v_people AS SELECT * FROM t_people;`);
  // At the source the emptied table's statistics still hold production's addresses.
  expect(holdsProduction(await inProduction("SELECT most_common_vals::text FROM pg_stats WHERE tablename = 't_emptied'"))).toBe(true);
  const fork = await preparedFork("pr-reaches", {
    mask: [
      { table: "t_emptied", column: "email", with: "null" },
      { table: "t_people", column: "email", with: "hash" },
    ],
  });
  expect(await read(fork.uri, "SELECT count(*) FROM pg_stats WHERE tablename = 't_emptied' AND most_common_vals IS NOT NULL")).toBe("0");
  // The key cascaded: the orders follow the masked addresses, and the orders' trigger did not copy the old ones.
  expect(await read(fork.uri, "SELECT count(*) FROM t_orders o JOIN t_people p ON p.email = o.email")).toBe("20");
  expect(holdsProduction(await read(fork.uri, "SELECT string_agg(email, ',') FROM t_orders"))).toBe(false);
  expect(await read(fork.uri, "SELECT count(*) FROM t_order_log")).toBe("0");
  const { message } = await refusedFork("pr-view-rule", { mask: [{ table: "v_people", column: "email", with: "null" }] });
  expect(message).toMatch(/public\.v_people is not a table \(a view\); name the table that holds the data/);
});
