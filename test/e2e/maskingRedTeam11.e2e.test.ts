// An eleventh red team's ways through a masked fork's preparation (docs/masking.md), each read through
// the fork's published URL as its holder reads it, each asserting the safe outcome (so each fails
// on the code it was written against): the fork published with nothing of production's masked
// values readable, or refused naming what it cannot hold off. Each leaves production as it found it.
//  1. prepare.pauseJobs pauses a continuous aggregate's refresh policy with TimescaleDB's alter_job,
//     which checks the policy's offsets against the aggregate's refresh policies
//     (policy_refresh_cagg_check_for_overlaps) and so calls the integer hypertable's integer_now
//     function (tsdbadmin's) through the function manager: before the masking's transaction, in a
//     transaction the preparation commits; JOBS_CHECKED_BY_OWN reads only a job's check_config;
//  2. the planner folds a partition's CHECK constraint (constraint exclusion evaluates an IMMUTABLE
//     function of constant arguments while it plans) in every query reading the partitioned table
//     with a WHERE: a first-wave materialized view's refresh runs it. READS reads only the view's own
//     query, and a function of tsdbadmin's in a schema it took its own USAGE on away is not held off
//     (holdOffRoutines asks has_schema_privilege): it runs, and copies the statistics of a view
//     refreshed after it, production's. Held off, a harmless such function fails the preparation;
//  3. chunk skipping on a continuous aggregate's materialization hypertable (TimescaleDB lets it be
//     enabled there) keeps its chunks' ranges of a column grouped from a masked one in
//     _timescaledb_catalog.chunk_column_stats, whose statistics (autovacuum analyses it) are never
//     made again: ANALYZE_CHUNK_RANGES runs only for written hypertables with such columns, and before
//     the aggregates' chunks are dropped and refreshed;
//  4. an empty partitioned tree above a masked partition with a view over the parent: round 10's
//     retyping of its columns fails ("used by a view"), and a harmless shape is refused;
//  5. a function held off whose grant was made by a role (tsdbadmin a member of it) that may no longer
//     use the function's schema: the give-back's SET ROLE to that grantor cannot name the function,
//     the preparation fails after its commit (SQLSTATE 42501, naming nothing), and so does every later
//     one, first thing (giveBackEarlier);
//  6. a continuous aggregate's materialization hypertable given a space dimension partitioned by a
//     function of tsdbadmin's (add_dimension lets it, while empty): the refresh's INSERT runs it on
//     each row (its chunks' CHECK too), in the first wave; CONTINUOUS_AGGREGATES' runsOwn reads its
//     triggers only, PARTITIONED_BY_OWN only what readers read; and a function one of whose grants a
//     role tsdbadmin made and left made is not held off (its grantor cannot be SET ROLE to);
//  7. a table whose foreign key references a masked column (ON UPDATE NO ACTION: checked, not written)
//     is planned by the key's check as the masking's UPDATE runs: the planner folds the constant part
//     of its index's expression (RelationGetIndexExpressions), calling a function of tsdbadmin's not
//     held off while the rows of a table masked later are production's. FUNCTIONS_ON_WRITE reads only
//     written tables; OWN_STATISTICS_OBJECTS drops such an index only after the commit.
import { EVENTS_TABLE } from "../../simulator/production";
import { readThrough as read } from "../support/lab/production";
import {
  DROP_LEFT_BEHIND,
  PRODUCTION_ADDRESS,
  RULES,
  deepViews,
  dropDeepViews,
  inLargeObjects,
  redTeamLab,
  statsOf,
} from "../support/lab/redTeam";

jest.setTimeout(300_000);
const { asSuperuser, cleanups, inProduction, outcome, unlinkLargeObjects } = redTeamLab();

/**
 * A function of tsdbadmin's made not to be held off: EXECUTE granted to PUBLIC by a role tsdbadmin
 * makes (CREATEROLE, as on Tiger Cloud) and leaves, so that grant cannot be made again as its grantor.
 */
const grantedByRoleLeft = (role: string, routine: string) => `
    CREATE ROLE ${role} NOLOGIN;
    GRANT ${role} TO tsdbadmin;
    GRANT EXECUTE ON FUNCTION ${routine} TO ${role} WITH GRANT OPTION;
    SET ROLE ${role};
    GRANT EXECUTE ON FUNCTION ${routine} TO PUBLIC;
    SET ROLE tsdbadmin;
    REVOKE ${role} FROM tsdbadmin;`;

test("a continuous aggregate's refresh policy on an integer hypertable whose integer_now function is tsdbadmin's (TimescaleDB's alter_job calls it as pauseJobs pauses the policy) copies nothing of customers before the masking", async () => {
  cleanups.push(async () => {
    // Its policy goes with the aggregate.
    await inProduction(
      "DROP MATERIALIZED VIEW IF EXISTS public.ticks111_sum; DROP TABLE IF EXISTS public.ticks111, public.stolen_r111; " +
        "DROP FUNCTION IF EXISTS public.now111(); DROP FUNCTION IF EXISTS public.copy111();",
    );
    await inProduction(DROP_LEFT_BEHIND);
  });
  await inProduction(`
    CREATE TABLE public.stolen_r111 (q text, v text);
    CREATE FUNCTION public.copy111() RETURNS void LANGUAGE plpgsql AS $f$
      BEGIN
        IF NOT EXISTS (SELECT 1 FROM public.stolen_r111) THEN
          INSERT INTO public.stolen_r111 SELECT pg_catalog.left(pg_catalog.current_query(), 60), email FROM public.customers;
        END IF;
      END $f$;
    -- An integer hypertable's "now", as TimescaleDB asks one for a continuous aggregate over it: STABLE, no argument.
    CREATE FUNCTION public.now111() RETURNS bigint LANGUAGE plpgsql STABLE AS $f$
      BEGIN
        IF pg_catalog.strpos(pg_catalog.current_query(), 'scheduled => false') > 0 THEN PERFORM public.copy111(); END IF;
        RETURN 1000;
      END $f$;
    CREATE TABLE public.ticks111 (t bigint NOT NULL, v int);
    SELECT create_hypertable('public.ticks111', by_range('t', 100));
    SELECT set_integer_now_func('public.ticks111', 'public.now111');
    INSERT INTO public.ticks111 SELECT g, g FROM generate_series(1, 900) g;
    CREATE MATERIALIZED VIEW public.ticks111_sum WITH (timescaledb.continuous) AS
      SELECT time_bucket(100, t) AS bucket, sum(v) AS total FROM public.ticks111 GROUP BY 1 WITH NO DATA;
    -- Its refresh policy, not due for a day: production runs nothing of it meanwhile.
    SELECT add_continuous_aggregate_policy('public.ticks111_sum', start_offset => 500, end_offset => 111,
      schedule_interval => interval '1 day', initial_start => now() + interval '1 day');`);
  expect(await inProduction("SELECT count(*) FROM public.stolen_r111")).toBe("0");
  expect(
    await outcome("pr-redteam11-integer-now", { mask: RULES, pauseJobs: true }, (uri) =>
      read(
        uri,
        `SELECT 'copied: ' || count(*) FILTER (WHERE v LIKE '${PRODUCTION_ADDRESS}') || coalesce(', in ' || min(q), '') FROM public.stolen_r111`,
      ),
    ),
  ).toMatch(
    /failed at prepare\.pauseJobs: job \d+'s integer_now function \(of the hypertable it or its config names, or the one under its aggregate\), public\.now111, is a function of the database's own/,
  );
});

test("a partition's CHECK calling a function of tsdbadmin's in a schema it took its own USAGE on away (not held off) runs nothing in a first-wave refresh of a view reading the partitioned table: no production statistic of a view refreshed after it is copied", async () => {
  cleanups.push(async () => {
    await inProduction(
      `DROP MATERIALIZED VIEW IF EXISTS public.a_kiosk112; ${dropDeepViews("r112")} DROP TABLE IF EXISTS public.kiosk112; ` +
        "DROP SCHEMA IF EXISTS hid112 CASCADE;",
    );
    await unlinkLargeObjects();
  });
  await inProduction(`
    ${deepViews("r112")}
    CREATE SCHEMA hid112;
    -- IMMUTABLE, no argument: the planner evaluates it, folding the CHECK for constraint exclusion. It cannot INSERT;
    -- PostgreSQL's lo_from_bytea writes all the same.
    CREATE FUNCTION hid112.capacity() RETURNS integer LANGUAGE plpgsql IMMUTABLE AS $f$
      BEGIN
        IF pg_catalog.strpos(pg_catalog.current_query(), 'REFRESH') > 0 THEN
          PERFORM pg_catalog.lo_from_bytea(0, pg_catalog.convert_to(${statsOf("r112")}, 'UTF8'));
        END IF;
        RETURN 1000000;
      END $f$;
    CREATE TABLE public.kiosk112 (id int, n int) PARTITION BY RANGE (id);
    CREATE TABLE public.kiosk112_a PARTITION OF public.kiosk112 FOR VALUES FROM (0) TO (1000);
    ALTER TABLE public.kiosk112_a ADD CONSTRAINT kiosk112_capacity CHECK (n < hid112.capacity());
    INSERT INTO public.kiosk112 SELECT g, g FROM generate_series(1, 20) g;
    -- Its query names no function of tsdbadmin's and reads nothing masked: refreshed in the first wave.
    CREATE MATERIALIZED VIEW public.a_kiosk112 AS SELECT count(*) AS n FROM public.kiosk112 WHERE id > 0;
    -- The schema's owner gives up its own USAGE: what the catalog already names (the CHECK) still runs its function.
    REVOKE USAGE ON SCHEMA hid112 FROM tsdbadmin;`);
  expect(await inProduction("SELECT count(*) FROM pg_largeobject_metadata")).toBe("0");
  expect(await inProduction("SELECT n::text FROM public.a_kiosk112")).toBe("20");
  expect(await outcome("pr-redteam11-check-folded", { mask: RULES, pauseJobs: true }, inLargeObjects)).toMatch(/^published, copied: 0 of/);
});

test("a partition's CHECK calling a harmless IMMUTABLE function of tsdbadmin's, read with a WHERE by a materialized view, is published: the planner's folding of the CHECK does not fail the preparation", async () => {
  cleanups.push(() =>
    inProduction(
      "DROP MATERIALIZED VIEW IF EXISTS public.a_seats113; DROP TABLE IF EXISTS public.seats113; DROP FUNCTION IF EXISTS public.max_seats113();",
    ),
  );
  await inProduction(`
    CREATE FUNCTION public.max_seats113() RETURNS integer LANGUAGE sql IMMUTABLE AS 'SELECT 500';
    CREATE TABLE public.seats113 (id int, booked int) PARTITION BY RANGE (id);
    CREATE TABLE public.seats113_a PARTITION OF public.seats113 FOR VALUES FROM (0) TO (1000);
    ALTER TABLE public.seats113_a ADD CONSTRAINT seats113_max CHECK (booked <= public.max_seats113());
    INSERT INTO public.seats113 SELECT g, g FROM generate_series(1, 20) g;
    CREATE MATERIALIZED VIEW public.a_seats113 AS SELECT count(*) AS n FROM public.seats113 WHERE id > 0;`);
  expect(
    await outcome("pr-redteam11-check-harmless", { mask: RULES, pauseJobs: true }, (uri) =>
      read(uri, "SELECT n::text FROM public.a_seats113"),
    ),
  ).toBe("published, 20");
});

test("chunk skipping on a continuous aggregate's column grouped from a masked one: TimescaleDB's catalog of chunk ranges (chunk_column_stats) keeps no production value in its statistics", async () => {
  cleanups.push(async () => {
    await inProduction(`DROP MATERIALIZED VIEW IF EXISTS public.pat114_daily; DROP TABLE IF EXISTS public.pat114; ${DROP_LEFT_BEHIND};`);
    // Its statistics as before the test: none (an empty table keeps them through ANALYZE).
    await asSuperuser("DELETE FROM pg_statistic WHERE starelid = '_timescaledb_catalog.chunk_column_stats'::regclass;");
  });
  await inProduction(`
    CREATE TABLE public.pat114 (time timestamptz NOT NULL, score int);
    SELECT create_hypertable('public.pat114', by_range('time', interval '1 day'));
    INSERT INTO public.pat114 SELECT now() - interval '30 days' + g * interval '10 minutes', 1000 + g / 10 FROM generate_series(0, 4000) g;
    CREATE MATERIALIZED VIEW public.pat114_daily WITH (timescaledb.continuous) AS
      SELECT time_bucket('1 day', time) AS day, score, count(*) AS n FROM public.pat114 GROUP BY 1, 2;`);
  // Chunk skipping on the aggregate's own column (its materialization hypertable), compressed by day as a policy would.
  await inProduction(`
    SET timescaledb.enable_chunk_skipping = on;
    SELECT enable_chunk_skipping(format('%I.%I', h.schema_name, h.table_name)::regclass, 'score')
      FROM _timescaledb_catalog.continuous_agg ca JOIN _timescaledb_catalog.hypertable h ON h.id = ca.mat_hypertable_id
     WHERE ca.user_view_name = 'pat114_daily';
    ALTER MATERIALIZED VIEW public.pat114_daily SET (timescaledb.compress);
    SELECT count(compress_chunk(c)) FROM show_chunks('public.pat114_daily') c;`);
  // What autovacuum does once enough of the catalog's rows changed.
  await asSuperuser("ANALYZE _timescaledb_catalog.chunk_column_stats;");
  const ranges = `SELECT count(*) FROM pg_stats, unnest(coalesce(histogram_bounds::text::bigint[], '{}') || coalesce(most_common_vals::text::bigint[], '{}')) v
    WHERE schemaname = '_timescaledb_catalog' AND tablename = 'chunk_column_stats' AND attname IN ('range_start', 'range_end') AND v BETWEEN 1000 AND 1500`;
  expect(Number(await inProduction(ranges))).toBeGreaterThan(0);
  const rules = [...RULES, { table: "pat114", column: "score", with: "constant", value: "0" }];
  expect(
    await outcome("pr-redteam11-skipping-aggregate", { mask: rules, pauseJobs: true }, (uri) =>
      read(uri, ranges).then((n) => `ranges: ${n}`),
    ),
  ).toBe("published, ranges: 0");
});

test("a partitioned table above a masked partition, its tree empty, with a view over it (so its columns cannot be retyped), holds no production address once published, and is not refused", async () => {
  cleanups.push(() => inProduction("DROP VIEW IF EXISTS public.signups115_v; DROP TABLE IF EXISTS public.signups115;"));
  await inProduction(`
    CREATE TABLE public.signups115 (id int, email text) PARTITION BY RANGE (id);
    CREATE TABLE public.signups115_2025 PARTITION OF public.signups115 FOR VALUES FROM (0) TO (1000);
    CREATE TABLE public.signups115_2026 PARTITION OF public.signups115 FOR VALUES FROM (1000) TO (2000);
    INSERT INTO public.signups115 SELECT g, 'signup' || g || '@prod-customers.example.com' FROM generate_series(1, 30) g;
    ANALYZE public.signups115;
    -- Retention: last year's partition dropped; this year's holds nothing yet.
    DROP TABLE public.signups115_2025;
    ANALYZE public.signups115;
    -- What the application reads it through.
    CREATE VIEW public.signups115_v AS SELECT id, email FROM public.signups115;`);
  const holding = `SELECT count(*) FROM pg_stats WHERE tablename = 'signups115'
    AND lower(coalesce(most_common_vals::text, '') || coalesce(histogram_bounds::text, '')) LIKE '${PRODUCTION_ADDRESS}'`;
  expect(await inProduction(holding)).toBe("1");
  const rules = [...RULES, { table: "signups115_2026", column: "email", with: "email" }];
  expect(
    await outcome("pr-redteam11-empty-tree-view", { mask: rules, pauseJobs: true }, (uri) =>
      read(uri, holding).then((n) => `holding: ${n}`),
    ),
  ).toMatch(/statistics of the whole, from before the masking, kept: public\.signups115 \(email\).* drop such a view in prepare\.sql/);
});

test("a function held off whose grant was made by a role tsdbadmin is a member of, that may no longer use the function's schema, is given back as it was: the fork is published with production's privileges", async () => {
  cleanups.push(async () => {
    await inProduction("DROP SCHEMA IF EXISTS rep116 CASCADE;");
    await asSuperuser("DROP ROLE IF EXISTS dev116; DROP ROLE IF EXISTS lead116;");
  });
  await asSuperuser("CREATE ROLE lead116; CREATE ROLE dev116; GRANT lead116 TO tsdbadmin;");
  await inProduction(`
    CREATE SCHEMA rep116;
    GRANT USAGE ON SCHEMA rep116 TO lead116, dev116;
    CREATE FUNCTION rep116.weekly() RETURNS int LANGUAGE sql AS 'SELECT 1';
    REVOKE ALL ON FUNCTION rep116.weekly() FROM PUBLIC;
    GRANT EXECUTE ON FUNCTION rep116.weekly() TO lead116 WITH GRANT OPTION;`);
  // The team lead passes it on to a developer; later the lead moves to another team and loses the schema.
  await asSuperuser("SET ROLE lead116; GRANT EXECUTE ON FUNCTION rep116.weekly() TO dev116;");
  await inProduction("REVOKE USAGE ON SCHEMA rep116 FROM lead116;");
  const acl = "SELECT proacl::text FROM pg_proc WHERE oid = 'rep116.weekly()'::regprocedure";
  const before = await inProduction(acl);
  expect(before).toContain("dev116=X/lead116");
  expect(await outcome("pr-redteam11-grantor-usage", { mask: RULES, pauseJobs: true }, (uri) => read(uri, acl))).toBe(
    `published, ${before}`,
  );
});

test("a continuous aggregate whose materialization hypertable has a space dimension partitioned by a function of tsdbadmin's, one of whose grants a role it made and left made (so it is not held off), copies no production statistic of a view refreshed after it, in its first-wave refresh", async () => {
  cleanups.push(async () => {
    await inProduction(
      `DROP MATERIALIZED VIEW IF EXISTS public.a_path117; ${dropDeepViews("r117")} DROP FUNCTION IF EXISTS public.part117(anyelement); ${DROP_LEFT_BEHIND};`,
    );
    await asSuperuser("DROP ROLE IF EXISTS lead117; ALTER ROLE tsdbadmin NOCREATEROLE;");
    await unlinkLargeObjects();
  });
  await asSuperuser("ALTER ROLE tsdbadmin CREATEROLE;");
  await inProduction(`
    ${deepViews("r117")}
    -- TimescaleDB asks a closed dimension's function to be IMMUTABLE (so it may not INSERT); a large object it may write, once.
    CREATE FUNCTION public.part117(anyelement) RETURNS integer LANGUAGE plpgsql IMMUTABLE AS $f$
      BEGIN
        IF pg_catalog.strpos(pg_catalog.current_query(), 'refresh_continuous_aggregate') > 0
           AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_largeobject_metadata) THEN
          PERFORM pg_catalog.lo_from_bytea(0, pg_catalog.convert_to(${statsOf("r117")}, 'UTF8'));
        END IF;
        RETURN 0;
      END $f$;
    -- Page views by day and path: it reads the masked events, so it is refreshed, in the first wave (it calls no function of its own).
    CREATE MATERIALIZED VIEW public.a_path117 WITH (timescaledb.continuous) AS
      SELECT time_bucket('1 day', time) AS day, path, count(*) AS n FROM public.${EVENTS_TABLE} GROUP BY 1, 2 WITH NO DATA;
    -- Its materialization hypertable, empty, spread over two partitions by path.
    SELECT add_dimension(format('%I.%I', h.schema_name, h.table_name)::regclass, by_hash('path', 2, partition_func => 'public.part117'))
      FROM _timescaledb_catalog.continuous_agg ca JOIN _timescaledb_catalog.hypertable h ON h.id = ca.mat_hypertable_id
     WHERE ca.user_view_name = 'a_path117';
    ${grantedByRoleLeft("lead117", "public.part117(anyelement)")}`);
  expect(await inProduction("SELECT count(*) FROM pg_largeobject_metadata")).toBe("0");
  expect(await inProduction("SELECT proacl::text FROM pg_proc WHERE oid = 'public.part117(anyelement)'::regprocedure")).toContain(
    "=X/lead117",
  );
  expect(await outcome("pr-redteam11-aggregate-dimension", { mask: RULES, pauseJobs: true }, inLargeObjects)).toMatch(
    /^published, copied: 0 of/,
  );
});

test("an expression index of a table whose foreign key references a masked column (its NO ACTION check is planned as the masking writes) calling a function of tsdbadmin's, one of whose grants a role it made and left made (so it is not held off), copies nothing not yet masked", async () => {
  cleanups.push(async () => {
    await inProduction("DROP TABLE IF EXISTS public.newsletter118; DROP FUNCTION IF EXISTS public.suffix118();");
    await asSuperuser("DROP ROLE IF EXISTS lead118; ALTER ROLE tsdbadmin NOCREATEROLE;");
    await unlinkLargeObjects();
  });
  await asSuperuser("ALTER ROLE tsdbadmin CREATEROLE;");
  await inProduction(`
    -- An index's function must be IMMUTABLE (it cannot INSERT); PostgreSQL's lo_from_bytea writes all the same.
    CREATE FUNCTION public.suffix118() RETURNS text LANGUAGE plpgsql IMMUTABLE AS $f$
      BEGIN
        IF pg_catalog.strpos(pg_catalog.current_query(), 'masked_row') > 0 THEN
          PERFORM pg_catalog.lo_from_bytea(0, pg_catalog.convert_to(
            (SELECT pg_catalog.string_agg(DISTINCT customer_email, ' ') FROM public.${EVENTS_TABLE}), 'UTF8'));
        END IF;
        RETURN '';
      END $f$;
    -- A new table, empty yet, whose key references the customers' addresses (ON UPDATE NO ACTION: checked, not written).
    CREATE TABLE public.newsletter118 (email text REFERENCES public.customers (email), since date);
    -- The planner folds the constant part of an index's expression when it plans a query of the table: the key's check, here.
    CREATE INDEX newsletter118_key ON public.newsletter118 ((email || public.suffix118()));
    ${grantedByRoleLeft("lead118", "public.suffix118()")}`);
  expect(await inProduction("SELECT count(*) FROM pg_largeobject_metadata")).toBe("0");
  // customers first: masked while events still holds production's addresses.
  const rules = [...RULES].reverse();
  expect(await outcome("pr-redteam11-key-check-index", { mask: rules, pauseJobs: true }, inLargeObjects)).toMatch(
    /public\.newsletter118's index newsletter118_key \(public\.suffix118\(\)\): a foreign key of its table references what the masking writes/,
  );
});
