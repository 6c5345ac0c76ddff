// What masking guarantees, read as the URL holder reads it: through the fork's published URL, as
// tsdbadmin (not a superuser), on a production that runs TimescaleDB and looks like a Tiger Cloud
// customer's (simulator/production.ts). Each way production's values were found to get through is
// a test here: compressed chunks, continuous aggregates, statistics of every kind, triggers and
// rules on a masked table, materialized views, a table named in the wrong letter case, an error
// that quotes a row, foreign tables and servers, transactions prepared in production, a masked
// column written back after the masking.
import { customerRow, PERSONAL_ROWS } from "../../simulator/databases";
import { EVENTS_DAILY, EVENTS_TABLE, NOTIFY_PROCEDURE } from "../../simulator/production";
import { maskedCondition, parameters, ident } from "../../provider/resources/serviceFork/preparation/statements";
import { holdsProduction, productionSuite, readThrough as read } from "../support/lab/production";

jest.setTimeout(300_000);
const lab = productionSuite({ forkQueuedMs: 100, forkConfiguringMs: 100 });
const { asSuperuser, cleanups, forkProgram, inProduction, preparedFork, refusedFork } = lab;

const PRODUCTION_EMAILS = Array.from({ length: PERSONAL_ROWS }, (_, i) => customerRow(i + 1).email);

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
    fork = await preparedFork("pr-readme", rules, (destroy) => (afterAllDestroy = destroy));
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
      await read(
        fork.uri,
        `SELECT count(*) FROM ${EVENTS_TABLE} WHERE customer_email !~ '^user-[0-9a-f]{8}-[1-9][0-9]*@example\\.invalid$'`,
      ),
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
    const userJobs = await inProduction(
      "SELECT string_agg(job_id::text, ',' ORDER BY job_id) FROM timescaledb_information.jobs WHERE job_id >= 1000",
    );
    expect(fork.prepared.jobsPaused).toEqual(userJobs.split(",").map(Number));
    expect(
      Number(
        await inProduction(
          `SELECT total_runs FROM timescaledb_information.job_stats JOIN timescaledb_information.jobs USING (job_id) WHERE proc_name = '${NOTIFY_PROCEDURE}'`,
        ),
      ),
    ).toBeGreaterThan(0);
  });
});

test("no function of the database's own can run until everything else is made from the masked data: each one's body is held off (replaced by one that fails) while views are refreshed, then made again as it was, its privileges untouched; prepare.sql and prepare.sqlAfter (last) run them", async () => {
  const acls = `SELECT string_agg(x, '; ' ORDER BY x) FROM (
    SELECT p.proname || ' ' || g.grantee::regrole || ' ' || g.privilege_type || ' ' || g.is_grantable || ' from ' || g.grantor::regrole AS x
      FROM pg_proc p, aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) g WHERE p.proname IN ('probe_own', 'kept_private')) a`;
  cleanups.push(async () => {
    await inProduction(
      "DROP MATERIALIZED VIEW IF EXISTS public.m_probe_own, public.m_calls_own; DROP FUNCTION IF EXISTS public.probe_own(), public.kept_private();",
    );
    await asSuperuser("DROP ROLE IF EXISTS app_reader;");
  });
  await asSuperuser("CREATE ROLE app_reader;");
  await inProduction(`
    CREATE FUNCTION public.probe_own() RETURNS int LANGUAGE sql AS 'SELECT 1';
    CREATE FUNCTION public.kept_private() RETURNS int LANGUAGE sql AS 'SELECT 2';
    REVOKE ALL ON FUNCTION public.kept_private() FROM PUBLIC;
    GRANT EXECUTE ON FUNCTION public.kept_private() TO app_reader WITH GRANT OPTION;
    -- PostgreSQL's functions only: refreshed with the first, it records what probe_own's body was then.
    CREATE MATERIALIZED VIEW public.m_probe_own AS
      SELECT position('held off by the preparation' in pg_get_functiondef('public.probe_own()'::regprocedure)) > 0 AS may, count(*) AS n
        FROM public.customers;
    -- Calls one: refreshed after everything else, once EXECUTE is given back.
    CREATE MATERIALIZED VIEW public.m_calls_own AS SELECT public.probe_own() AS x;`);
  const before = await inProduction(acls);
  const fork = await preparedFork("pr-held-off", {
    sql: ["SELECT public.probe_own()"],
    mask: [{ table: "customers", column: "email", with: "email" }],
    // Last, once everything is the masked data's: the function is given back, as it was, to the seed too.
    sqlAfter: [
      "CREATE TABLE public.after_own AS SELECT public.kept_private() AS x, position('held off by the preparation' in pg_get_functiondef('public.probe_own()'::regprocedure)) > 0 AS held",
    ],
  });
  expect(await read(fork.uri, "SELECT x || ' ' || held FROM public.after_own")).toBe("2 false");
  expect(await read(fork.uri, "SELECT may::text || ' ' || n FROM public.m_probe_own")).toBe("true 100");
  // Made again as it was.
  expect(await read(fork.uri, "SELECT md5(pg_get_functiondef('public.probe_own()'::regprocedure))")).toBe(
    await inProduction("SELECT md5(pg_get_functiondef('public.probe_own()'::regprocedure))"),
  );
  expect(await read(fork.uri, "SELECT x FROM public.m_calls_own")).toBe("1");
  expect(await read(fork.uri, acls)).toBe(before);
  expect(await read(fork.uri, "SELECT count(*) FROM pg_namespace WHERE nspname LIKE '\\_tigercloud\\_preparing\\_%'")).toBe("0");
});

test("the check after the masking passes exactly what the hash and email rules write (the tag, a number with no leading zero), in any column collation", async () => {
  const tag = "0a1b2c3d";
  cleanups.push(() => inProduction("DROP COLLATION IF EXISTS public.case_blind"));
  await inProduction(
    "CREATE COLLATION IF NOT EXISTS public.case_blind (provider = icu, locale = 'und-u-ks-level2', deterministic = false)",
  );
  const shapes = {
    email: { pattern: `^user-${tag}-[1-9][0-9]*@example\\.invalid$`, before: `user-${tag}-`, after: "@example.invalid" },
    hash: { pattern: `^h${tag}-[1-9][0-9]*$`, before: `h${tag}-`, after: "" },
  };
  // What each rule writes, then text near it: a leading zero, no number, not only digits, another tag, another case, more or less.
  const written = (b: string, a: string) => [`${b}1${a}`, `${b}1234567890${a}`];
  const near = (b: string, a: string) =>
    [`${b}01${a}`, `${b}0${a}`, `${b}${a}`, `${b}1x${a}`, `${b}\u0663${a}`, `${b}1\u0663${a}`, `${b}-1${a}`, `${b}1-2${a}`].concat([
      `${b}1${a}`.toUpperCase(),
      `${b}1${a}\n`,
      `${b}1${a} `,
      `x${b}1${a}`,
      `${b.replace(tag, "0a1b2c3e")}1${a}`,
      `${b}1${a}`.slice(0, -1),
    ]);
  for (const [rule, { pattern, before, after }] of Object.entries(shapes)) {
    const { values, param } = parameters({ key: "k", tag });
    const condition = maskedCondition({ table: "t", column: "c", with: rule } as never, ident("c"), param).replace(/\$1\b/g, `'${tag}'`);
    expect(values).toEqual([tag]);
    const ok = written(before, after);
    const candidates = [...ok, ...near(before, after)];
    const rows = candidates
      .map((c, n) => `(${n}, pg_catalog.convert_from(pg_catalog.decode('${Buffer.from(c).toString("hex")}', 'hex'), 'UTF8'))`)
      .join(", ");
    // A case-insensitive collation would make other text equal to ours: the check is byte-wise whatever the column's.
    for (const collation of ["pg_catalog.default", "public.case_blind"]) {
      const passed = await inProduction(
        `SELECT pg_catalog.string_agg(n::text, ',' ORDER BY n) FROM (SELECT n, c::text COLLATE ${collation} AS c FROM (VALUES ${rows}) v(n, c)) x WHERE ${condition}`,
      );
      const regex = await inProduction(
        `SELECT pg_catalog.string_agg(n::text, ',' ORDER BY n) FROM (VALUES ${rows}) v(n, c) WHERE c ~ '${pattern}'`,
      );
      expect(passed).toBe(regex);
      expect(passed).toBe(ok.map((_, n) => n).join(","));
    }
  }
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
    expect(await read(fork.uri, `SELECT count(*) FROM ${table} WHERE email !~ '^h[0-9a-f]{8}-[1-9][0-9]*$'`)).toBe("0");
  // One pseudonym per value across the fork: equal values stay equal from table to table (joins hold), distinct ones distinct.
  expect(await read(fork.uri, "SELECT count(DISTINCT email) FROM t_copy")).toBe("20");
  expect(
    await read(
      fork.uri,
      "SELECT count(*) FROM t_copy a JOIN t_undo b USING (id) JOIN t_also c USING (id) WHERE a.email = b.email AND b.email = c.email",
    ),
  ).toBe("20");
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

test("no function or operator of the database's own stands in for PostgreSQL's: a public.unnest(text[]) and a || of (text, bigint) made in production see no value while the fork is prepared", async () => {
  // Exact matches for the types, chosen over pg_catalog's polymorphic ones wherever public is on the search_path.
  await inProduction(`
    CREATE TABLE t_overloaded (id int, email text, token text);
    INSERT INTO t_overloaded SELECT g, 'customer' || g || '@prod-customers.example.com', 'tok_live_' || g FROM generate_series(1, 20) g;
    ANALYZE t_overloaded;
    CREATE TABLE stolen (value text);
    CREATE FUNCTION public.unnest(a text[]) RETURNS SETOF text LANGUAGE plpgsql AS $f$
      BEGIN INSERT INTO public.stolen SELECT x FROM pg_catalog.unnest(a) x; RETURN QUERY SELECT x FROM pg_catalog.unnest(a) x; END $f$;
    CREATE FUNCTION public.stealing_concat(a text, b bigint) RETURNS text LANGUAGE plpgsql AS $f$
      BEGIN
        IF pg_catalog.to_regclass('pg_temp.tigercloud_pseudonyms') IS NOT NULL THEN
          INSERT INTO public.stolen SELECT p.value FROM pg_temp.tigercloud_pseudonyms p;
        END IF;
        RETURN pg_catalog.textcat(a, b::text);
      END $f$;
    CREATE OPERATOR public.|| (LEFTARG = text, RIGHTARG = bigint, FUNCTION = public.stealing_concat);
    DELETE FROM stolen;`);
  const fork = await preparedFork("pr-overloads", {
    mask: [
      { table: "t_overloaded", column: "email", with: "email" },
      { table: "t_overloaded", column: "token", with: "hash" },
    ],
  }).finally(() =>
    inProduction("DROP OPERATOR public.|| (text, bigint); DROP FUNCTION public.stealing_concat(text, bigint), public.unnest(text[])"),
  );
  expect(await read(fork.uri, "SELECT count(*) FROM t_overloaded WHERE email LIKE '%prod-customers%' OR token LIKE 'tok_live%'")).toBe("0");
  expect(await read(fork.uri, "SELECT count(*) FROM stolen")).toBe("0");
});

test("what runs on each row the masking writes is refused when it calls a function of the database's own: a CHECK constraint's, a domain's, an index's; so is a column whose conversion to text is one", async () => {
  await inProduction(`
    CREATE TABLE copied (value text);
    CREATE FUNCTION copies(v text) RETURNS boolean LANGUAGE plpgsql AS $f$
      BEGIN INSERT INTO public.copied SELECT email FROM public.t_checked; RETURN true; END $f$;
    CREATE TABLE t_checked (id int, email text CHECK (copies(email)));
    INSERT INTO t_checked SELECT g, 'customer' || g || '@prod-customers.example.com' FROM generate_series(1, 5) g;
    CREATE FUNCTION ok(v text) RETURNS boolean LANGUAGE sql IMMUTABLE AS 'SELECT true';
    CREATE DOMAIN checked_mail AS text CHECK (ok(VALUE));
    CREATE TABLE t_domain (id int, email checked_mail); INSERT INTO t_domain VALUES (1, 'customer1@prod-customers.example.com');
    CREATE TABLE t_indexed (id int, email text); CREATE INDEX t_indexed_ok ON t_indexed (ok(email));
    CREATE TABLE t_hyper (time timestamptz NOT NULL, email text); SELECT create_hypertable('t_hyper', by_range('time'));
    INSERT INTO t_hyper VALUES (now(), 'customer1@prod-customers.example.com');
    DO $d$ BEGIN EXECUTE format('ALTER TABLE %s ADD CONSTRAINT t_hyper_chunk_ok CHECK (ok(email))', (SELECT c FROM show_chunks('t_hyper') c LIMIT 1)); END $d$;
    CREATE DOMAIN innocent AS text CHECK (ok(VALUE));
    CREATE TABLE t_cast_check (id int, email text CHECK (email::innocent IS NOT NULL));
    CREATE TABLE t_stats (id int, email text); CREATE STATISTICS t_stats_expr ON (ok(email)), id FROM t_stats;
    CREATE TABLE t_query (id int, email text CHECK (query_to_xml('SELECT 1', true, false, '') IS NOT NULL));
    CREATE TABLE t_export (id int, email text CHECK (table_to_xml('t_checked', true, false, '') IS NOT NULL));
    CREATE FUNCTION fallback() RETURNS text LANGUAGE sql AS 'SELECT NULL::text';
    CREATE TABLE t_parent (email text PRIMARY KEY);
    CREATE TABLE t_child (email text DEFAULT fallback() REFERENCES t_parent (email) ON UPDATE SET DEFAULT);
    CREATE TYPE contact AS (email text);
    CREATE FUNCTION contact_text(c contact) RETURNS text LANGUAGE plpgsql AS $f$
      BEGIN INSERT INTO public.copied VALUES (c.email); RETURN c.email; END $f$;
    CREATE CAST (contact AS text) WITH FUNCTION contact_text(contact);
    CREATE TABLE t_contact (id int, c contact); INSERT INTO t_contact VALUES (1, ROW('customer1@prod-customers.example.com'));
    DELETE FROM copied;`);
  const check = await refusedFork("pr-check", { mask: [{ table: "t_checked", column: "email", with: "hash" }] });
  expect(check.message).toMatch(
    /public\.t_checked's constraint t_checked_email_check runs public\.copies\(text\), a function of the database's own, on each row the masking writes/,
  );
  const domain = await refusedFork("pr-domain", { mask: [{ table: "t_domain", column: "email", with: "email" }] });
  expect(domain.message).toMatch(/public\.t_domain's column email \(its domain public\.checked_mail\) runs public\.ok\(text\)/);
  // A domain an expression casts to, an extended statistics object's expression (ANALYZE runs it), a default a key's SET DEFAULT writes.
  const castCheck = await refusedFork("pr-cast-check", { mask: [{ table: "t_cast_check", column: "email", with: "hash" }] });
  expect(castCheck.message).toMatch(
    /public\.t_cast_check's constraint t_cast_check_email_check \(its domain public\.innocent\) runs public\.ok\(text\)/,
  );
  // PostgreSQL's own functions that run a query given as text, or read a table (whose view may call anything).
  const query = await refusedFork("pr-query", { mask: [{ table: "t_query", column: "email", with: "hash" }] });
  expect(query.message).toMatch(
    /public\.t_query's constraint t_query_check runs query_to_xml\(text,boolean,boolean,text\), a function that may write \(VOLATILE\)/,
  );
  const exported = await refusedFork("pr-export", { mask: [{ table: "t_export", column: "email", with: "hash" }] });
  expect(exported.message).toMatch(
    /public\.t_export's constraint t_export_check runs table_to_xml\(regclass,boolean,boolean,text\), a function that reads tables or runs a query/,
  );
  const statistics = await refusedFork("pr-statistics", { mask: [{ table: "t_stats", column: "email", with: "hash" }] });
  expect(statistics.message).toMatch(/public\.t_stats's statistics t_stats_expr runs public\.ok\(text\)/);
  const setDefault = await refusedFork("pr-set-default", { mask: [{ table: "t_parent", column: "email", with: "hash" }] });
  expect(setDefault.message).toMatch(
    /public\.t_child's default of column email \(a key's ON UPDATE SET DEFAULT\) runs public\.fallback\(\)/,
  );
  const index = await refusedFork("pr-index", { mask: [{ table: "t_indexed", column: "email", with: "null" }] });
  expect(index.message).toMatch(/public\.t_indexed's index t_indexed_ok runs public\.ok\(text\)/);
  // A constraint made on one chunk alone, not on its hypertable.
  const chunk = await refusedFork("pr-chunk-index", { mask: [{ table: "t_hyper", column: "email", with: "email" }] });
  expect(chunk.message).toMatch(/_timescaledb_internal\._hyper_\d+_\d+_chunk's constraint t_hyper_chunk_ok runs public\.ok\(text\)/);
  const cast = await refusedFork("pr-cast", { mask: [{ table: "t_contact", column: "c", with: "null" }] });
  expect(cast.message).toMatch(
    /public\.t_contact\.c is of type public\.contact, whose conversion to text runs public\.contact_text\(public\.contact\)/,
  );
  // Refused before any of it ran: nothing was copied, in production or on the forks.
  expect(await inProduction("SELECT count(*) FROM copied")).toBe("0");
  // Dropped in prepare.sql, the CHECK is no way in; made again in prepare.sqlAfter (last, with tables whose writes run
  // a query given as text beside it), it runs on masked rows only: what it copies is the masking's.
  const fork = await preparedFork("pr-check-dropped", {
    sql: ["ALTER TABLE t_checked DROP CONSTRAINT t_checked_email_check"],
    mask: [{ table: "t_checked", column: "email", with: "hash" }],
    sqlAfter: [
      "ALTER TABLE t_checked ADD CONSTRAINT t_checked_email_check CHECK (copies(email))",
      "INSERT INTO t_query VALUES (1, 'seed')",
    ],
  });
  expect(
    await read(
      fork.uri,
      "SELECT count(*) || ' copied, of production: ' || count(*) FILTER (WHERE value LIKE '%prod-customers%') FROM copied",
    ),
  ).toMatch(/^[1-9]\d* copied, of production: 0$/);
  expect(await read(fork.uri, "SELECT count(*) FROM t_checked WHERE email LIKE '%prod-customers%'")).toBe("0");
  await inProduction("DROP TABLE t_query, t_export");
});

test("a role's setting naming the function that picks a compressed chunk's segmentby is not followed while the fork is prepared", async () => {
  await inProduction(`
    CREATE TABLE taken (value text);
    CREATE FUNCTION public.segmentby_taking(relation regclass) RETURNS jsonb LANGUAGE plpgsql AS $f$
      BEGIN
        IF pg_catalog.to_regclass('pg_temp.tigercloud_pseudonyms') IS NOT NULL THEN
          INSERT INTO public.taken SELECT p.value FROM pg_temp.tigercloud_pseudonyms p;
        END IF;
        RETURN _timescaledb_functions.get_segmentby_defaults(relation);
      END $f$;
    CREATE TABLE t_readings (time timestamptz NOT NULL, email text, v int);
    SELECT create_hypertable('t_readings', by_range('time', interval '1 day'));
    INSERT INTO t_readings SELECT now() - g * interval '1 hour', 'customer' || g || '@prod-customers.example.com', g FROM generate_series(1, 100) g;
    ALTER TABLE t_readings SET (timescaledb.compress); SELECT count(compress_chunk(c)) FROM show_chunks('t_readings') c;
    ALTER ROLE tsdbadmin SET timescaledb.compression_segmentby_default_function = 'public.segmentby_taking';`);
  const fork = await preparedFork("pr-segmentby", { mask: [{ table: "t_readings", column: "email", with: "email" }] }).finally(() =>
    inProduction("ALTER ROLE tsdbadmin RESET timescaledb.compression_segmentby_default_function"),
  );
  expect(await read(fork.uri, "SELECT count(*) FROM t_readings WHERE email LIKE '%prod-customers%'")).toBe("0");
  expect(await read(fork.uri, "SELECT count(*) FROM taken")).toBe("0");
});

test("a masked key that cascades to a masked column: the cascade's pseudonyms are kept, so the join holds and nothing turns NULL", async () => {
  await inProduction(`
    CREATE TABLE t_owner (email text PRIMARY KEY);
    INSERT INTO t_owner SELECT 'customer' || g || '@prod-customers.example.com' FROM generate_series(1, 10) g;
    CREATE TABLE t_owned (id int, owner_email text REFERENCES t_owner (email) ON UPDATE CASCADE);
    INSERT INTO t_owned SELECT g, 'customer' || (g % 10 + 1) || '@prod-customers.example.com' FROM generate_series(1, 30) g;`);
  const fork = await preparedFork("pr-cascade-masked", {
    mask: [
      { table: "t_owner", column: "email", with: "hash" },
      { table: "t_owned", column: "owner_email", with: "hash" },
    ],
  });
  expect(await read(fork.uri, "SELECT count(*) FROM t_owned o JOIN t_owner w ON w.email = o.owner_email")).toBe("30");
  expect(await read(fork.uri, "SELECT count(*) FROM t_owned WHERE owner_email IS NULL OR owner_email LIKE '%prod-customers%'")).toBe("0");
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
  const source = lab.h.sim.service(lab.h.ids.projectId, lab.h.ids.serviceId)!;
  const password = lab.h.sim.databases.password(lab.h.ids.serviceId)!;
  await asSuperuser("CREATE EXTENSION IF NOT EXISTS postgres_fdw; GRANT USAGE ON FOREIGN DATA WRAPPER postgres_fdw TO tsdbadmin;");
  await inProduction(`
    CREATE SERVER production FOREIGN DATA WRAPPER postgres_fdw OPTIONS (host '127.0.0.1', port '${source.endpoint.port}', dbname 'tsdb', sslmode 'require');
    CREATE USER MAPPING FOR tsdbadmin SERVER production OPTIONS (user 'tsdbadmin', password '${password}');
    CREATE FOREIGN TABLE production_customers (id int, email text) SERVER production OPTIONS (table_name 'customers');`);
  try {
    // Reading production through it works, at the source.
    expect(holdsProduction(await inProduction("SELECT email FROM production_customers WHERE id = 1"))).toBe(true);
    const refused = await refusedFork("pr-foreign-rule", { mask: [{ table: "production_customers", column: "email", with: "null" }] });
    expect(refused.message).toMatch(/public\.production_customers is a foreign table: writing it would change another database's rows/);
    const fork = await preparedFork("pr-foreign", { mask: [{ table: "customers", column: "email", with: "email" }] });
    expect(await read(fork.uri, "SELECT count(*) FROM pg_foreign_server")).toBe("0");
    expect(await read(fork.uri, "SELECT count(*) FROM pg_user_mappings")).toBe("0");
    await expect(read(fork.uri, "SELECT email FROM production_customers")).rejects.toThrow(/does not exist/);
    expect(fork.prepared.removed).toEqual(["foreign server production"]);
  } finally {
    // Later forks of this production must not meet it.
    await inProduction("DROP SERVER IF EXISTS production CASCADE;");
  }
});

test("a transaction prepared in production cannot be committed on the fork to write production's rows back", async () => {
  await inProduction("CREATE TABLE t_2pc (id int, email text); INSERT INTO t_2pc VALUES (1, 'customer1@prod-customers.example.com');");
  await inProduction("BEGIN; INSERT INTO t_2pc VALUES (2, 'customer2@prod-customers.example.com'); PREPARE TRANSACTION 'prod-batch-7';");
  try {
    const fork = await preparedFork("pr-2pc", { mask: [{ table: "t_2pc", column: "email", with: "hash" }] });
    expect(await read(fork.uri, "SELECT count(*) FROM pg_prepared_xacts")).toBe("0");
    await expect(read(fork.uri, "COMMIT PREPARED 'prod-batch-7'")).rejects.toThrow(/does not exist/);
    expect(holdsProduction(await read(fork.uri, "SELECT string_agg(email, ',') FROM t_2pc"))).toBe(false);
    expect(fork.prepared.removed).toContain("transaction 1 prepared in production (by role tsdbadmin)");
  } finally {
    await asSuperuser("ROLLBACK PREPARED 'prod-batch-7';");
  }
});

test("prepare.sqlAfter runs last, in a transaction of its own: a seed that fails rolls back its texts alone, and no URL is published", async () => {
  const { message } = await refusedFork("pr-seed-fails", {
    mask: [{ table: "customers", column: "email", with: "email" }],
    sqlAfter: ["UPDATE customers SET email = 'dev@example.com' WHERE id = 1", "SELECT 1 / 0"],
  });
  expect(message).toMatch(/failed at prepare\.sqlAfter\[1\] \(SELECT 1 \/ 0\): .*SQLSTATE 22012/);
  expect(message).toMatch(
    /The masking was committed and checked and every view refreshed from it; prepare\.sqlAfter's own transaction was rolled back\./,
  );
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

// Copies of masked data a red-team found that the first preparation missed, one production holding them all.
const DERIVED_COPIES = `
CREATE TABLE rt_pageviews (time timestamptz NOT NULL, customer_id int);
SELECT create_hypertable('rt_pageviews', by_range('time', interval '1 day'));
INSERT INTO rt_pageviews SELECT now() - interval '3 days' + g * interval '1 minute', 1 + g % 100 FROM generate_series(0, 2000) g;
CREATE MATERIALIZED VIEW rt_views_by_email WITH (timescaledb.continuous) AS SELECT time_bucket('1 day', p.time) AS day, c.email, count(*) AS n FROM rt_pageviews p JOIN customers c ON c.id = p.customer_id GROUP BY 1, 2 WITH NO DATA;
CALL refresh_continuous_aggregate('rt_views_by_email', NULL, NULL);
CREATE TABLE rt_cust2 (email text PRIMARY KEY);
INSERT INTO rt_cust2 SELECT 'c2_' || g || '@prod-rt.example.com' FROM generate_series(1, 20) g;
CREATE TABLE rt_ev2 (time timestamptz NOT NULL, email text REFERENCES rt_cust2 (email) ON UPDATE CASCADE);
SELECT create_hypertable('rt_ev2', by_range('time', interval '1 day'));
INSERT INTO rt_ev2 SELECT now() - interval '5 days' + g * interval '2 minutes', 'c2_' || (1 + g % 20) || '@prod-rt.example.com' FROM generate_series(0, 3000) g;
ALTER TABLE rt_ev2 SET (timescaledb.compress, timescaledb.compress_segmentby = 'email');
SELECT count(compress_chunk(c)) FROM show_chunks('rt_ev2', older_than => interval '1 day') c;
CREATE MATERIALIZED VIEW rt_ev2_daily WITH (timescaledb.continuous) AS SELECT time_bucket('1 day', time) AS d, email, count(*) AS n FROM rt_ev2 GROUP BY 1, 2 WITH NO DATA;
CALL refresh_continuous_aggregate('rt_ev2_daily', NULL, NULL);
CREATE MATERIALIZED VIEW rt_ev2_report AS SELECT email, sum(n) AS total FROM rt_ev2_daily GROUP BY 1;
ALTER MATERIALIZED VIEW rt_ev2_daily SET (timescaledb.compress = true);
SELECT count(compress_chunk(c)) FROM show_chunks('rt_ev2_daily') c;
CREATE FUNCTION rt_emails() RETURNS TABLE (email text) LANGUAGE sql STABLE AS 'SELECT email FROM rt_cust2';
CREATE MATERIALIZED VIEW rt_mailing_list AS SELECT email FROM rt_emails();
CREATE TABLE rt_visits (time timestamptz NOT NULL, email text);
SELECT create_hypertable('rt_visits', by_range('time', interval '1 day'));
INSERT INTO rt_visits SELECT now() - interval '40 days' + g * interval '1 minute', 'oldvisitor' || (g % 30) || '@prod-rt.example.com' FROM generate_series(0, 1000) g;
INSERT INTO rt_visits SELECT now() - interval '5 days' + g * interval '1 minute', 'newvisitor' || (g % 30) || '@prod-rt.example.com' FROM generate_series(0, 1000) g;
CREATE MATERIALIZED VIEW rt_visits_daily WITH (timescaledb.continuous) AS SELECT time_bucket('1 day', time) AS day, email, count(*) AS n FROM rt_visits GROUP BY 1, 2 WITH NO DATA;
CALL refresh_continuous_aggregate('rt_visits_daily', NULL, NULL);
SELECT count(*) FROM drop_chunks('rt_visits', older_than => interval '10 days');
CREATE TABLE rt_orgs (email text PRIMARY KEY);
CREATE TABLE rt_members (org_email text UNIQUE REFERENCES rt_orgs (email) ON UPDATE CASCADE);
CREATE TABLE rt_badges (member_org_email text REFERENCES rt_members (org_email) ON UPDATE CASCADE);
CREATE TABLE rt_audit (old_row text);
CREATE FUNCTION rt_badges_audit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN INSERT INTO rt_audit VALUES (OLD::text); RETURN NEW; END $$;
CREATE TRIGGER rt_badges_audit AFTER UPDATE ON rt_badges FOR EACH ROW EXECUTE FUNCTION rt_badges_audit();
INSERT INTO rt_orgs SELECT 'org' || g || '@prod-rt.example.com' FROM generate_series(1, 10) g;
INSERT INTO rt_members SELECT email FROM rt_orgs;
INSERT INTO rt_badges SELECT email FROM rt_orgs;
CREATE MATERIALIZED VIEW rt_member_list AS SELECT org_email FROM rt_members;
CREATE TABLE rt_accounts (region text, email text) PARTITION BY LIST (region);
CREATE TABLE rt_accounts_eu PARTITION OF rt_accounts FOR VALUES IN ('eu');
CREATE TABLE rt_accounts_us PARTITION OF rt_accounts FOR VALUES IN ('us');
INSERT INTO rt_accounts SELECT 'eu', 'eu' || (g % 20) || '@prod-rt.example.com' FROM generate_series(1, 300) g;
CREATE TABLE rt_leads (email text, email_lower text GENERATED ALWAYS AS (lower(email)) STORED);
INSERT INTO rt_leads (email) SELECT 'lead' || (g % 10) || '@prod-rt.example.com' FROM generate_series(1, 200) g;
ANALYZE rt_leads;
DELETE FROM rt_leads;
`;

test("every copy of what the masking wrote is refreshed or gone: aggregates that join a masked table or read what a key cascaded to, views over aggregates or through functions, compressed and emptied aggregate chunks, cascades two keys down, a partitioned table's own statistics", async () => {
  await inProduction(DERIVED_COPIES);
  await asSuperuser("ANALYZE;");
  // Production's copies are there, at the source.
  expect(holdsProduction(await inProduction("SELECT string_agg(email, ',') FROM rt_views_by_email"))).toBe(true);
  const fork = await preparedFork("pr-copies", {
    mask: [
      { table: "customers", column: "email", with: "email" },
      { table: "rt_cust2", column: "email", with: "hash" },
      { table: "rt_visits", column: "email", with: "hash" },
      { table: "rt_orgs", column: "email", with: "hash" },
      { table: "rt_accounts_eu", column: "email", with: "email" },
    ],
  });
  const rtValues = async (sql: string) => (await read(fork.uri, sql)).includes("@prod-rt.example.com");
  // An aggregate over an unmasked hypertable joining the masked customers: refreshed, and its statistics made again.
  expect(holdsProduction(await read(fork.uri, "SELECT string_agg(email, ',') FROM rt_views_by_email"))).toBe(false);
  const materialized = await read(
    fork.uri,
    "SELECT format('%I.%I', h.schema_name, h.table_name) FROM _timescaledb_catalog.continuous_agg ca JOIN _timescaledb_catalog.hypertable h ON h.id = ca.mat_hypertable_id WHERE ca.user_view_name = 'rt_views_by_email'",
  );
  expect(holdsProduction(await read(fork.uri, `SELECT string_agg(email, ',') FROM ${materialized}`))).toBe(false);
  // Through a key's cascade into a compressed hypertable, its (compressed) aggregate, a view over that, a view through a function.
  for (const view of [
    "rt_ev2",
    "rt_ev2_daily",
    "rt_ev2_report",
    "rt_mailing_list",
    "rt_visits_daily",
    "rt_member_list",
    "rt_badges",
    "rt_accounts",
  ])
    expect([view, await rtValues(`SELECT string_agg(t::text, ',') FROM ${view} t`)]).toEqual([view, false]);
  // The second key's trigger did not run during the masking.
  expect(await read(fork.uri, "SELECT count(*) FROM rt_audit")).toBe("0");
  // No statistic anywhere holds one of these production values: cascaded tables, compressed chunks, emptied aggregate chunks, the partitioned table's own.
  expect(
    await read(
      fork.uri,
      "SELECT string_agg(schemaname || '.' || tablename || '.' || attname, ', ') FROM pg_stats WHERE most_common_vals::text || coalesce(histogram_bounds::text, '') LIKE '%@prod-rt.example.com%' AND tablename NOT LIKE 'rt_leads%'",
    ),
  ).toBe("");
  for (const view of [
    "public.rt_views_by_email",
    "public.rt_ev2_daily",
    "public.rt_ev2_report",
    "public.rt_mailing_list",
    "public.rt_visits_daily",
    "public.rt_member_list",
  ])
    expect(fork.prepared.refreshed).toContain(view);

  // An emptied table whose statistics cannot be dropped (a generated column holds its type): refused, naming it, quoting nothing.
  const { message } = await refusedFork("pr-leads", { mask: [{ table: "rt_leads", column: "email", with: "null" }] });
  expect(message).toMatch(/public\.rt_leads: ANALYZE sampled none of its rows \(an empty table whose statistics could not be dropped/);
  expect(message.includes("@prod-rt.example.com")).toBe(false);
});

// What a second red-team round found: views that run a query given as text, the second parent of a
// table and a cascaded partition's table, chunk skipping's ranges, a prepared transaction's name,
// statistics ANALYZE leaves alone.
test("a view over a query given as text is refreshed; every table above what was written is analysed; chunk skipping forgets production's ranges; a prepared transaction is not named; statistics with a target of 0 are refused", async () => {
  await inProduction(`
    CREATE TABLE r2_clients (id int PRIMARY KEY, email text UNIQUE, email_up text GENERATED ALWAYS AS (upper(email)) STORED);
    INSERT INTO r2_clients (id, email) SELECT g, 'cust' || g || '@prod-customers.example.com' FROM generate_series(1, 100) g;
    CREATE MATERIALIZED VIEW r2_xml AS SELECT query_to_xml('select email from r2_clients', true, false, '') AS x;
    CREATE TABLE r2_people (id int, email text);
    CREATE TABLE r2_contacts (email text);
    CREATE TABLE r2_people_child () INHERITS (r2_people, r2_contacts);
    INSERT INTO r2_people_child SELECT g, 'person' || g || '@prod-customers.example.com' FROM generate_series(1, 100) g;
    CREATE TABLE r2_orders (id int, cust_email text) PARTITION BY RANGE (id);
    CREATE TABLE r2_orders_a PARTITION OF r2_orders FOR VALUES FROM (0) TO (1000000);
    ALTER TABLE r2_orders_a ADD FOREIGN KEY (cust_email) REFERENCES r2_clients (email) ON UPDATE CASCADE;
    INSERT INTO r2_orders SELECT g, 'cust' || (1 + g % 100) || '@prod-customers.example.com' FROM generate_series(1, 300) g;
    SET timescaledb.enable_chunk_skipping = on;
    CREATE TABLE r2_patients (time timestamptz NOT NULL, score int);
    SELECT create_hypertable('r2_patients', by_range('time', interval '1 day'));
    INSERT INTO r2_patients SELECT now() - interval '5 days' + g * interval '10 minutes', 1000 + g % 50 FROM generate_series(0, 600) g;
    SELECT enable_chunk_skipping('r2_patients', 'score');
    ALTER TABLE r2_patients SET (timescaledb.compress, timescaledb.compress_orderby = 'time');
    SELECT count(compress_chunk(c)) FROM show_chunks('r2_patients', older_than => interval '1 day') c;`);
  await asSuperuser("ANALYZE;");
  await inProduction("BEGIN; INSERT INTO r2_people VALUES (0, NULL); PREPARE TRANSACTION 'refund for person7@prod-customers.example.com';");
  try {
    const s = await lab.h.stack(
      "pr-round2",
      forkProgram("pr-round2", {
        mask: [
          { table: "r2_clients", column: "email", with: "hash" },
          { table: "r2_people", column: "email", with: "hash" },
          { table: "r2_patients", column: "score", with: "constant", value: "0" },
        ],
      }),
    );
    cleanups.push(() => lab.discard(s));
    const up = await s.up();
    const uri = up.outputs.uri?.value as string;
    expect(holdsProduction(await read(uri, "SELECT x::text FROM r2_xml"))).toBe(false);
    expect(
      holdsProduction(
        await read(
          uri,
          "SELECT string_agg(most_common_vals::text || coalesce(histogram_bounds::text, ''), ',') FROM pg_stats WHERE tablename LIKE 'r2_%'",
        ),
      ),
    ).toBe(false);
    expect(await read(uri, "SELECT count(*) FROM pg_stats WHERE tablename IN ('r2_contacts', 'r2_orders') AND inherited")).not.toBe("0");
    // No range of the masked column is production's any more.
    expect(
      await read(uri, "SELECT count(*) FROM _timescaledb_catalog.chunk_column_stats WHERE column_name = 'score' AND range_start >= 1000"),
    ).toBe("0");
    // The prepared transaction is named by its place, and its name (an application's text) reaches neither the outputs nor the state.
    expect((up.outputs.prepared?.value as { removed: string[] }).removed).toEqual([
      "transaction 1 prepared in production (by role tsdbadmin)",
    ]);
    expect(holdsProduction(up.stdout) || holdsProduction(s.rawState())).toBe(false);
  } finally {
    await asSuperuser("ROLLBACK PREPARED 'refund for person7@prod-customers.example.com';").catch(() => undefined);
  }

  await inProduction("ALTER TABLE r2_clients ALTER COLUMN email_up SET STATISTICS 0;");
  const { message } = await refusedFork("pr-frozen", { mask: [{ table: "r2_clients", column: "email", with: "hash" }] });
  expect(message).toMatch(/statistics with a target of 0 keep what production's ANALYZE put there: public\.r2_clients \(email_up\)/);
});

// What a third red-team round found: a trigger or function made an extension's member by its owner,
// a materialized view over an operator, a function running query text, or a catalog, and a table
// partitioned by the masked column.
test("every trigger of a written table is held off, an extension's too; every populated materialized view is refreshed, whatever it reads (one reading pg_stats is refused); a table partitioned by a masked column is refused", async () => {
  await inProduction(`
    CREATE TABLE r3_clients (id int PRIMARY KEY, email text);
    INSERT INTO r3_clients SELECT g, 'cust' || g || '@prod-customers.example.com' FROM generate_series(1, 50) g;
    CREATE TABLE r3_log (old_email text);
    CREATE EXTENSION IF NOT EXISTS tablefunc;
    CREATE FUNCTION r3_keep_old() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN INSERT INTO r3_log VALUES (OLD.email); RETURN NEW; END $$;
    CREATE TRIGGER r3_audit BEFORE UPDATE ON r3_clients FOR EACH ROW EXECUTE FUNCTION r3_keep_old();
    ALTER EXTENSION tablefunc ADD FUNCTION r3_keep_old();
    CREATE FUNCTION r3_all() RETURNS text LANGUAGE sql STABLE AS $$ SELECT string_agg(email, ',' ORDER BY id) FROM r3_clients $$;
    ALTER EXTENSION tablefunc ADD FUNCTION r3_all();
    CREATE MATERIALIZED VIEW r3_ext AS SELECT r3_all() AS x;
    CREATE FUNCTION r3_op(int, int) RETURNS text LANGUAGE sql STABLE AS $$ SELECT string_agg(email, ',' ORDER BY id) FROM r3_clients $$;
    CREATE OPERATOR ### (LEFTARG = int, RIGHTARG = int, FUNCTION = r3_op);
    CREATE MATERIALIZED VIEW r3_operator AS SELECT 1 ### 2 AS x;
    CREATE MATERIALIZED VIEW r3_crosstab AS SELECT * FROM crosstab('SELECT 1::text, email, email FROM r3_clients ORDER BY id') AS ct(r text, a text, b text);
    CREATE MATERIALIZED VIEW r3_never AS SELECT email FROM r3_clients WITH NO DATA;
    CREATE TABLE r3_by_mail (email text NOT NULL, v int) PARTITION BY LIST (email);
    CREATE TABLE r3_by_mail_a PARTITION OF r3_by_mail FOR VALUES IN ('vip.alice@prod-customers.example.com');
    CREATE TABLE r3_by_mail_rest PARTITION OF r3_by_mail DEFAULT;`);
  await asSuperuser("ANALYZE;");
  const fork = await preparedFork("pr-round3", { mask: [{ table: "r3_clients", column: "email", with: "hash" }] });
  expect(await read(fork.uri, "SELECT count(*) FROM r3_log")).toBe("0");
  for (const view of ["r3_ext", "r3_operator", "r3_crosstab"])
    expect([view, holdsProduction(await read(fork.uri, `SELECT string_agg(t::text, ',') FROM ${view} t`))]).toEqual([view, false]);
  // One made WITH NO DATA is left so.
  expect(await read(fork.uri, "SELECT relispopulated FROM pg_class WHERE relname = 'r3_never'")).toBe("f");
  const { message } = await refusedFork("pr-by-mail", { mask: [{ table: "r3_by_mail", column: "email", with: "email" }] });
  expect(message).toMatch(/public\.r3_by_mail is partitioned by email: its partitions' bounds are production's values/);
  // One reading pg_stats would copy statistics not yet made again: refused.
  await inProduction(
    "CREATE MATERIALIZED VIEW r3_stats AS SELECT attname, histogram_bounds::text AS hb FROM pg_stats WHERE tablename = 'r3_clients';",
  );
  const stats = await refusedFork("pr-round3-stats", { mask: [{ table: "r3_clients", column: "email", with: "hash" }] });
  expect(stats.message).toMatch(/public\.r3_stats read\(s\) PostgreSQL's statistics/);
});
