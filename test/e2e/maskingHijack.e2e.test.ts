// Ways a production's owner (tsdbadmin) or its platform (the superuser) can turn a masked fork's
// preparation against its promise (docs/masking.md), each read through the fork's published URL as
// its holder reads it: statistics that keep production's values under another letter case or in a
// chunk emptied by compression, a trigger on what a refresh writes, catalog names read as SQL under
// standard_conforming_strings = off, a refusal where nothing leaks, and what the preparation cannot
// undo as tsdbadmin (a foreign server or a subscription of the superuser's). Every fork masks
// production's e-mail addresses (RULES) with its jobs paused; each test leaves production as it
// found it, as the next test forks the same production.
import { EVENTS_DAILY, EVENTS_TABLE } from "../../simulator/production";
import { productionSuite, readThrough as read, SHAPED_ROWS } from "../support/lab/production";

jest.setTimeout(300_000);
const lab = productionSuite({ forkQueuedMs: 100, forkConfiguringMs: 100 }, { eventsRows: SHAPED_ROWS });
const { asSuperuser, cleanups, inProduction, preparedFork, refusedFork } = lab;

const RULES = [
  { table: EVENTS_TABLE, column: "customer_email", with: "email" },
  { table: "customers", column: "email", with: "email" },
];
const prepare = (...more: object[]) => ({ mask: [...RULES, ...more], pauseJobs: true });

/** A production e-mail address in any letter case, as a pattern for LIKE on lower(text). */
const PRODUCTION_ADDRESS = "%prod-customers.example.com%";

/** Every statistic of any schema that holds a production address in any letter case, one per line: where. */
const STATISTICS_HOLDING_PRODUCTION = `SELECT place FROM (
  SELECT format('%s.%s (%s)', schemaname, tablename, attname) AS place FROM pg_stats s WHERE lower(s::text) LIKE '${PRODUCTION_ADDRESS}'
  UNION ALL
  SELECT format('%s.%s (statistics %s)', schemaname, tablename, statistics_name) FROM pg_stats_ext s WHERE lower(s::text) LIKE '${PRODUCTION_ADDRESS}'
  UNION ALL
  SELECT format('%s.%s (statistics %s, %s)', schemaname, tablename, statistics_name, expr) FROM pg_stats_ext_exprs s WHERE lower(s::text) LIKE '${PRODUCTION_ADDRESS}'
) p ORDER BY 1`;

/** Tables of chunks TimescaleDB no longer lists (its DROP MATERIALIZED VIEW of a compressed aggregate keeps its compressed chunks' tables), dropped. */
const LEFT_BEHIND = `SELECT format('%I.%I', n.nspname, c.relname) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
  WHERE n.nspname = '_timescaledb_internal' AND c.relkind = 'r' AND c.relname ~ '^(compress_hyper|_hyper)_[0-9]+_[0-9]+_chunk$'
    AND NOT EXISTS (SELECT 1 FROM _timescaledb_catalog.chunk ch WHERE ch.schema_name = n.nspname AND ch.table_name = c.relname) ORDER BY 1`;
const DROP_LEFT_BEHIND = `DO $d$ DECLARE t text; BEGIN FOR t IN ${LEFT_BEHIND} LOOP EXECUTE 'DROP TABLE ' || t; END LOOP; END $d$`;

/** A continuous aggregate's materialization hypertable (schema.table), by the aggregate's name. */
const materializationOf = (view: string) =>
  inProduction(
    "SELECT format('%I.%I', h.schema_name, h.table_name) FROM _timescaledb_catalog.continuous_agg ca " +
      `JOIN _timescaledb_catalog.hypertable h ON h.id = ca.mat_hypertable_id WHERE ca.user_view_name = '${view}'`,
  );

/** Polls `probe` every 250 ms until it gives a value, for `timeoutMs` at most; then fails saying what was awaited. */
async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs / 1000} s waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

describe("one fork of a production with a compressed aggregate over upper(customer_email) and a trigger on events_daily's materialization hypertable", () => {
  let fork: Awaited<ReturnType<typeof preparedFork>>;
  let triggersAtSource = "";
  beforeAll(async () => {
    const materialized = await materializationOf(EVENTS_DAILY);
    await inProduction(`
      CREATE MATERIALIZED VIEW events_upper WITH (timescaledb.continuous) AS
        SELECT time_bucket('1 day', time) AS day, upper(customer_email) AS address, count(*) AS views FROM ${EVENTS_TABLE} GROUP BY 1, 2 WITH NO DATA;
      CALL refresh_continuous_aggregate('events_upper', NULL, NULL);
      ALTER MATERIALIZED VIEW events_upper SET (timescaledb.compress = true, timescaledb.compress_segmentby = 'address');
      SELECT count(compress_chunk(c)) FROM show_chunks('events_upper') c;
      CREATE TABLE public.stolen (v text);
      CREATE FUNCTION public.steal() RETURNS trigger LANGUAGE plpgsql AS $f$
        BEGIN
          IF TG_OP = 'DELETE' THEN INSERT INTO public.stolen VALUES (OLD::text); ELSE INSERT INTO public.stolen VALUES (NEW::text); END IF;
          RETURN NULL;
        END $f$;
      CREATE TRIGGER steal AFTER INSERT OR DELETE ON ${materialized} FOR EACH ROW EXECUTE FUNCTION public.steal();`);
    // As autovacuum would: every table, the aggregate's compressed chunks too.
    await asSuperuser("ANALYZE;");
    triggersAtSource = await inProduction(
      "SELECT string_agg(tgrelid::regclass::text || ':' || tgenabled::text, ',' ORDER BY tgrelid::regclass::text) FROM pg_trigger WHERE tgname = 'steal'",
    );
    // What a fork copies: the compressed chunks' statistics hold production's addresses, in capitals.
    expect(await asSuperuser(STATISTICS_HOLDING_PRODUCTION)).toMatch(/compress_hyper_\d+_\d+_chunk \(address\)/);
    fork = await preparedFork("pr-hijack-shared", prepare(), (destroy) => (afterAllDestroy = destroy));
  });
  let afterAllDestroy: () => Promise<unknown> = async () => undefined;
  afterAll(async () => {
    await afterAllDestroy();
    const materialized = await materializationOf(EVENTS_DAILY);
    await inProduction(
      `DROP MATERIALIZED VIEW IF EXISTS events_upper; DROP TRIGGER IF EXISTS steal ON ${materialized}; DROP FUNCTION IF EXISTS public.steal() CASCADE; DROP TABLE IF EXISTS public.stolen;`,
    );
    await inProduction(DROP_LEFT_BEHIND);
  });

  test("a compressed continuous aggregate grouped by upper() of the masked column: no statistic of any schema, row of the aggregate or of its chunks (compressed ones too) holds a production address in any letter case", async () => {
    expect(await read(fork.uri, STATISTICS_HOLDING_PRODUCTION)).toBe("");
    expect(await read(fork.uri, `SELECT count(*) FROM events_upper WHERE lower(address) LIKE '${PRODUCTION_ADDRESS}'`)).toBe("0");
    const chunks = (
      await read(
        fork.uri,
        "SELECT format('%I.%I', ch.schema_name, ch.table_name) || coalesce(',' || format('%I.%I', cc.schema_name, cc.table_name), '') " +
          "FROM _timescaledb_catalog.continuous_agg ca JOIN _timescaledb_catalog.chunk ch ON ch.hypertable_id = ca.mat_hypertable_id " +
          "LEFT JOIN _timescaledb_catalog.chunk cc ON cc.id = ch.compressed_chunk_id WHERE ca.user_view_name = 'events_upper'",
      )
    )
      .split(/[\n,]/)
      .filter(Boolean);
    for (const chunk of chunks)
      expect([chunk, await read(fork.uri, `SELECT count(*) FROM ${chunk} t WHERE lower(t::text) LIKE '${PRODUCTION_ADDRESS}'`)]).toEqual([
        chunk,
        "0",
      ]);
    expect(fork.prepared.refreshed).toContain("public.events_upper");
  });

  test("a trigger on a continuous aggregate's materialization hypertable copies nothing while the preparation refreshes it, and is back as it was", async () => {
    // Production's own copy was empty when forked: whatever the fork's holds, the preparation wrote.
    expect(await inProduction("SELECT count(*) FROM public.stolen")).toBe("0");
    expect(await read(fork.uri, `SELECT count(*) FROM public.stolen WHERE lower(v) LIKE '${PRODUCTION_ADDRESS}'`)).toBe("0");
    expect(fork.prepared.refreshed).toContain(`public.${EVENTS_DAILY}`);
    expect(triggersAtSource).toMatch(/_materialized_hypertable_\d+:O/);
    // The aggregate's chunks are made anew by its refresh (new names, and today's too): each has the trigger, as it was.
    const modes = (list: string) => [...new Set(list.split(",").map((t) => t.replace(/_hyper_\d+_\d+_chunk/, "<chunk>")))].sort();
    const onFork = await read(
      fork.uri,
      "SELECT string_agg(tgrelid::regclass::text || ':' || tgenabled::text, ',' ORDER BY tgrelid::regclass::text) FROM pg_trigger WHERE tgname = 'steal'",
    );
    expect(modes(onFork)).toEqual(modes(triggersAtSource));
    const materialized = await materializationOf(EVENTS_DAILY);
    expect(onFork.split(",").length - 1).toBe(
      Number(await read(fork.uri, `SELECT count(*) FROM pg_inherits WHERE inhparent = '${materialized}'::regclass`)),
    );
  });
});

test("what TimescaleDB leaves behind when a compressed aggregate is dropped (its compressed chunks' tables, production's rows in them) is gone from the fork", async () => {
  await inProduction(`
    CREATE MATERIALIZED VIEW events_dropped WITH (timescaledb.continuous) AS
      SELECT time_bucket('1 day', time) AS day, customer_email AS address, count(*) AS views FROM ${EVENTS_TABLE} GROUP BY 1, 2 WITH NO DATA;
    CALL refresh_continuous_aggregate('events_dropped', NULL, NULL);
    ALTER MATERIALIZED VIEW events_dropped SET (timescaledb.compress = true, timescaledb.compress_segmentby = 'address');
    SELECT count(compress_chunk(c)) FROM show_chunks('events_dropped') c;
    DROP MATERIALIZED VIEW events_dropped;`);
  cleanups.push(() => inProduction(DROP_LEFT_BEHIND));
  const left = await inProduction(LEFT_BEHIND);
  // TimescaleDB's own doing, not the test's: its catalog forgot tables that still hold production's addresses.
  expect(left).toMatch(/compress_hyper_\d+_\d+_chunk/);
  expect(await inProduction(`SELECT count(*) > 0 FROM ${left.split("\n")[0]} t WHERE t::text LIKE '${PRODUCTION_ADDRESS}'`)).toBe("t");
  await asSuperuser("ANALYZE;");
  const fork = await preparedFork("pr-hijack-left-behind", prepare());
  expect(await read(fork.uri, LEFT_BEHIND)).toBe("");
  expect(await read(fork.uri, STATISTICS_HOLDING_PRODUCTION)).toBe("");
  expect(fork.prepared.removed).toEqual(expect.arrayContaining(left.split("\n").map((t) => `table ${t}, left behind by TimescaleDB`)));
});

test("chunks analysed while active and compressed afterwards: the fork is published, and no statistic of any schema holds a production address", async () => {
  const chunks = (
    await inProduction(
      `SELECT format('%I.%I', chunk_schema, chunk_name) FROM timescaledb_information.chunks WHERE hypertable_name = '${EVENTS_TABLE}' AND is_compressed ORDER BY range_start LIMIT 2`,
    )
  ).split("\n");
  cleanups.push(() => asSuperuser(`DELETE FROM pg_statistic WHERE starelid = ANY (ARRAY['${chunks.join("', '")}']::regclass[])`));
  for (const chunk of chunks)
    await inProduction(`SELECT decompress_chunk('${chunk}'); ANALYZE ${chunk}; SELECT compress_chunk('${chunk}');`);
  // At the source, the emptied chunks' statistics hold production's addresses.
  const atSource = await asSuperuser(STATISTICS_HOLDING_PRODUCTION);
  for (const chunk of chunks) expect(atSource).toContain(`${chunk} (customer_email)`);
  const fork = await preparedFork("pr-hijack-chunk-stats", prepare());
  expect(await read(fork.uri, STATISTICS_HOLDING_PRODUCTION)).toBe("");
});

test("catalog strings are never read as SQL under standard_conforming_strings = off: a prepared transaction's name and continuous aggregates' names that end the literal they are put in", async () => {
  // A name that ends the literal and the statement; one that ends the literal only, calling an operator of the database's own in the same statement.
  const gid = String.raw`x\'; CREATE TABLE public.injected_gid(a int); --`;
  const aggregates = [
    String.raw`agg\'); CREATE TABLE public.injected_agg(a int); --`,
    String.raw`agg\' OPERATOR(public.@) 0, NULL, NULL)--`,
  ];
  cleanups.push(async () => {
    await inProduction("ALTER ROLE tsdbadmin RESET standard_conforming_strings; ALTER DATABASE tsdb RESET standard_conforming_strings;");
    await asSuperuser(`ROLLBACK PREPARED $g$${gid}$g$;`).catch(() => undefined);
    await inProduction(
      `${aggregates.map((a) => `DROP MATERIALIZED VIEW IF EXISTS "${a}";`).join(" ")} DROP OPERATOR IF EXISTS public.@ (text, integer); ` +
        "DROP FUNCTION IF EXISTS public.injecting(text, integer); DROP TABLE IF EXISTS t_hijack_2pc, public.injected_gid, public.injected_agg, public.injected_op;",
    );
  });
  await inProduction(`
    CREATE TABLE t_hijack_2pc (id int);
    CREATE FUNCTION public.injecting(text, integer) RETURNS regclass LANGUAGE plpgsql AS $f$
      BEGIN CREATE TABLE IF NOT EXISTS public.injected_op (a int); RETURN 'public.${EVENTS_DAILY}'::regclass; END $f$;
    CREATE OPERATOR public.@ (LEFTARG = text, RIGHTARG = integer, FUNCTION = public.injecting);`);
  for (const name of aggregates)
    await inProduction(`
      CREATE MATERIALIZED VIEW "${name}" WITH (timescaledb.continuous) AS
        SELECT time_bucket('1 day', time) AS day, customer_email, count(*) AS views FROM ${EVENTS_TABLE} GROUP BY 1, 2 WITH NO DATA;
      CALL refresh_continuous_aggregate($n$public."${name}"$n$, NULL, NULL);`);
  await inProduction(`BEGIN; INSERT INTO t_hijack_2pc VALUES (1); PREPARE TRANSACTION $g$${gid}$g$;`);
  // tsdbadmin may set it for itself and for its database: in its sessions a backslash then escapes in a literal, and \' does not end one.
  await inProduction(
    "ALTER ROLE tsdbadmin SET standard_conforming_strings = off; ALTER DATABASE tsdb SET standard_conforming_strings = off;",
  );
  expect(await asSuperuser("SELECT count(*) FROM pg_db_role_setting WHERE 'standard_conforming_strings=off' = ANY (setconfig)")).toBe("2");
  const fork = await preparedFork("pr-hijack-strings", prepare());
  expect(await read(fork.uri, "SELECT coalesce(string_agg(relname, ','), '') FROM pg_class WHERE relname LIKE 'injected%'")).toBe("");
  expect(await read(fork.uri, "SELECT count(*) FROM pg_prepared_xacts")).toBe("0");
  // Each aggregate refreshed from the masked data: rows, none of them production's.
  for (const name of aggregates)
    expect([
      name,
      await read(fork.uri, `SELECT count(*) || ':' || count(*) FILTER (WHERE customer_email LIKE '${PRODUCTION_ADDRESS}') FROM "${name}"`),
    ]).toEqual([name, expect.stringMatching(/^[1-9][0-9]*:0$/)]);
});

test("a setting only a superuser may change that stops a masked key's cascade (session_replication_role = replica, set by the platform for tsdbadmin): refused, naming it", async () => {
  await asSuperuser("ALTER ROLE tsdbadmin SET session_replication_role = replica;");
  cleanups.push(() => asSuperuser("ALTER ROLE tsdbadmin RESET session_replication_role;"));
  const { message } = await refusedFork("pr-hijack-replica-role", prepare());
  expect(message).toMatch(
    /failed at reading the settings production gave the role \(pg_settings\): session_replication_role is replica .* have it reset in production/,
  );
});

test("a materialized view holding the same numbers as text as a masked integer column is no leak: the fork is published, the column masked", async () => {
  cleanups.push(() => inProduction("DROP MATERIALIZED VIEW IF EXISTS score_ids; DROP TABLE IF EXISTS scores;"));
  await inProduction(`
    CREATE TABLE scores (id int PRIMARY KEY, score int);
    INSERT INTO scores SELECT g, g FROM generate_series(1, 200) g;
    CREATE MATERIALIZED VIEW score_ids AS SELECT id::text AS id FROM scores;
    ANALYZE scores; ANALYZE score_ids;`);
  const fork = await preparedFork("pr-hijack-scores", prepare({ table: "scores", column: "score", with: "null" }));
  expect(await read(fork.uri, "SELECT count(score) || '/' || count(*) FROM scores")).toBe("0/200");
  expect(await read(fork.uri, "SELECT count(*) FROM score_ids")).toBe("200");
});

test("a foreign server of the superuser's, which tsdbadmin may use but not drop: refused, naming it and what to do in production", async () => {
  const source = lab.h.sim.service(lab.h.ids.projectId, lab.h.ids.serviceId)!;
  const password = lab.h.sim.databases.password(lab.h.ids.serviceId)!;
  cleanups.push(() => asSuperuser("DROP SERVER IF EXISTS platform_srv CASCADE; DROP EXTENSION IF EXISTS postgres_fdw;"));
  await asSuperuser(`
    CREATE EXTENSION IF NOT EXISTS postgres_fdw;
    CREATE SERVER platform_srv FOREIGN DATA WRAPPER postgres_fdw OPTIONS (host '127.0.0.1', port '${source.endpoint.port}', dbname 'tsdb', sslmode 'require');
    GRANT USAGE ON FOREIGN SERVER platform_srv TO tsdbadmin;
    CREATE USER MAPPING FOR tsdbadmin SERVER platform_srv OPTIONS (user 'tsdbadmin', password '${password}');`);
  // A way to production's rows for tsdbadmin, wherever the server is copied.
  await inProduction("CREATE FOREIGN TABLE platform_customers (id int, email text) SERVER platform_srv OPTIONS (table_name 'customers');");
  expect(await inProduction("SELECT email FROM platform_customers WHERE id = 1")).toContain("@prod-customers.example.com");
  const { message } = await refusedFork("pr-hijack-foreign", prepare());
  expect(message).toContain("platform_srv");
  expect(message).toContain("production");
});

// Last: it restarts production's server with wal_level = logical (and back), as the platform does when logical replication is enabled.
test("a logical-replication subscription in production: the superuser's refused, naming it; one tsdbadmin may alter disabled and detached from its slot before anything else; the publisher's slot stays production's", async () => {
  const { databases } = lab.h.sim;
  const id = lab.h.ids.serviceId;
  const restart = async () => {
    databases.stopServer(id);
    databases.startServer(id, Date.now());
    expect(await databases.settled(id)).toBeUndefined();
  };
  const port = await asSuperuser("SHOW port");
  // The publisher: a second database of production's server, reached over its socket as the superuser.
  const upstream = `postgresql://postgres@/upstream?host=${encodeURIComponent(databases.directory)}&port=${port}`;
  cleanups.push(async () => {
    await asSuperuser(
      "ALTER SUBSCRIPTION prod_sub DISABLE; ALTER SUBSCRIPTION prod_sub SET (slot_name = NONE); DROP SUBSCRIPTION prod_sub;",
    ).catch(() => undefined);
    await asSuperuser("DROP TABLE IF EXISTS feed;");
    // A fork still running production's subscription may hold the slot a moment longer.
    await until("the publisher's slot is dropped", () =>
      read(
        upstream,
        "SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE active; SELECT pg_drop_replication_slot('prod_sub');",
      ).then(
        () => true,
        (err: Error) => (/does not exist/.test(err.message) ? true : undefined),
      ),
    );
    await asSuperuser("DROP ROLE IF EXISTS subscriber; DROP DATABASE IF EXISTS upstream WITH (FORCE); ALTER SYSTEM RESET wal_level;");
    await restart();
  });
  expect(await asSuperuser("SHOW wal_level")).toBe("replica");
  await asSuperuser("ALTER SYSTEM SET wal_level = logical;");
  await restart();
  expect(await asSuperuser("SHOW wal_level")).toBe("logical");
  await asSuperuser("CREATE DATABASE upstream;");
  await read(
    upstream,
    "CREATE TABLE feed (id int PRIMARY KEY, note text); INSERT INTO feed VALUES (1, 'before the fork'); CREATE PUBLICATION feed_pub FOR TABLE feed;",
  );
  // Made apart: CREATE SUBSCRIPTION making a slot on its own server would wait for itself.
  await read(upstream, "SELECT pg_create_logical_replication_slot('prod_sub', 'pgoutput');");
  await asSuperuser(`
    CREATE TABLE feed (id int PRIMARY KEY, note text); ALTER TABLE feed OWNER TO tsdbadmin;
    CREATE SUBSCRIPTION prod_sub CONNECTION $c$host='${databases.directory}' port=${port} dbname=upstream user=postgres$c$
      PUBLICATION feed_pub WITH (create_slot = false, slot_name = 'prod_sub');`);
  await until("production's subscription has copied the feed", async () =>
    (await asSuperuser("SELECT count(*) FROM feed")) === "1" ? true : undefined,
  );

  const { message } = await refusedFork("pr-hijack-subscription", prepare());
  expect(message).toContain("prod_sub");

  // Production's apply worker, ended: the slot is taken again, by production's subscription, which receives what the publisher writes next.
  const before = {
    worker: await asSuperuser("SELECT pid FROM pg_stat_subscription WHERE subname = 'prod_sub'"),
    sender: await read(upstream, "SELECT active_pid FROM pg_replication_slots WHERE slot_name = 'prod_sub'"),
  };
  expect(before.worker).toMatch(/^\d+$/);
  await asSuperuser("SELECT pg_terminate_backend(pid) FROM pg_stat_subscription WHERE subname = 'prod_sub' AND pid IS NOT NULL;");
  await until("production's subscription has a new apply worker and the slot a new sender", async () => {
    const worker = await asSuperuser("SELECT coalesce(pid::text, '') FROM pg_stat_subscription WHERE subname = 'prod_sub'");
    const sender = await read(upstream, "SELECT coalesce(active_pid::text, '') FROM pg_replication_slots WHERE slot_name = 'prod_sub'");
    return worker && sender && worker !== before.worker && sender !== before.sender ? true : undefined;
  });
  await read(upstream, "INSERT INTO feed VALUES (2, 'after the fork');");
  await until(
    "the row the publisher wrote after the fork arrives in production",
    async () => ((await asSuperuser("SELECT count(*) FROM feed WHERE id = 2")) === "1" ? true : undefined),
    30_000,
  );

  // A subscription tsdbadmin may alter: PostgreSQL 15 lets only a superuser own one, so its owner is a
  // role tsdbadmin is a member of (as PostgreSQL 16's pg_create_subscription lets tsdbadmin own one); it
  // logs in, as PostgreSQL 15's apply worker runs as the subscription's owner.
  await asSuperuser(
    "CREATE ROLE subscriber SUPERUSER LOGIN; GRANT subscriber TO tsdbadmin; ALTER SUBSCRIPTION prod_sub OWNER TO subscriber;",
  );
  const fork = await preparedFork("pr-hijack-subscription-ours", prepare());
  expect(fork.stdout).toContain("subscriptions disabled and detached from production's slots: prod_sub");
  expect(
    await read(fork.uri, "SELECT subenabled || ',' || coalesce(subslotname, 'none') FROM pg_subscription WHERE subname = 'prod_sub'"),
  ).toBe("false,none");
  // Production's subscription is untouched and still streams: what the publisher writes next arrives there, not in the fork.
  expect(await asSuperuser("SELECT subenabled || ',' || subslotname FROM pg_subscription WHERE subname = 'prod_sub'")).toBe(
    "true,prod_sub",
  );
  await read(upstream, "INSERT INTO feed VALUES (3, 'after the second fork');");
  await until(
    "the row the publisher wrote after the second fork arrives in production",
    async () => ((await asSuperuser("SELECT count(*) FROM feed WHERE id = 3")) === "1" ? true : undefined),
    30_000,
  );
  expect(await read(fork.uri, "SELECT count(*) FROM feed WHERE id = 3")).toBe("0");
});
