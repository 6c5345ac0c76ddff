// A ninth red team's ways through a masked fork's preparation (docs/masking.md), each read through
// the fork's published URL as its holder reads it, each asserting the safe outcome (so each fails
// on the code it was written against): the fork published with nothing of production's masked
// values readable, or refused naming what it cannot hold off. Each leaves production as it found it.
//  1. the check of a refreshed view's rows casts each column to text: a cast of the database's own
//     (of an enum a view's column has) runs there, in the view's wave, while views not yet
//     refreshed hold production's statistics;
//  2. keepFirst's UPDATE assigns text to the column: a column of a type of the database's own whose
//     assignment cast from text is a function of its own runs it on each row the masking writes;
//  3. the preparation's RESET_SETTINGS (pin) runs right after the user's SQL and each refresh, under
//     the role's search_path (public, pg_catalog): a public.left(text, integer) stands in for
//     PostgreSQL's in it, before the masking (with prepare.sql) and while views are refreshed;
//  4. TimescaleDB's catalog _timescaledb_catalog.chunk_column_stats keeps each chunk's minimum and
//     maximum of a chunk-skipping column: its pg_stats (autovacuum analyses it) keep production's
//     ranges of a masked column, which chunk skipping's reset does not touch;
//  5. a hypertable whose chunks are all compressed, analysed before it was: its own statistics are
//     production's, ANALYZE of it once recompressed samples nothing, and the fork is refused;
//  6. a materialized view calling to_json of a column (not a constant) of an enum whose cast to json
//     is tsdbadmin's: pg_depend records the column, not its type, so READS finds no such cast;
//  7. a trigger of a continuous aggregate's materialization hypertable whose WHEN (not its function)
//     calls a function of tsdbadmin's: the aggregate is not refreshed last;
//  8. an index of a continuous aggregate (its materialization hypertable) casting to a domain whose
//     CHECK calls a function of tsdbadmin's: MATERIALIZATION_CALLING_OWN reads only the functions the
//     index expression names;
//  9. an index of a materialized view casting to such a domain: READS reads only the functions the
//     index expression names, so the view is refreshed first;
// 10. an operator whose function is PostgreSQL's but whose NEGATOR is tsdbadmin's: the planner turns
//     NOT (a OP b) into the negator, in a CHECK of the masked table (on each row the masking writes)
//     and in a materialized view's query; the parsed forms name only the operator's own function;
// 11. a compressed hypertable whose chunks are in a schema of its own (associated_schema_name): its
//     compressed chunks, empty tables outside _timescaledb_internal, are refused as kept statistics;
// 12. a chunk of a masked hypertable emptied by a DELETE in production keeps its statistics through
//     ANALYZE: an empty chunk's are not dropped as an empty table's are, and the fork is refused;
// 13. an inheritance parent above a masked child whose rows are gone keeps its statistics of the
//     whole (inherited) through ANALYZE: KEPT_STATISTICS looks at a relation's own statistics only,
//     and the sample (of the child: none) gives the check nothing to find.
import { EVENTS_DAILY, EVENTS_TABLE } from "../../simulator/production";
import { readThrough as read, SHAPED_ROWS } from "../support/lab/production";
import {
  DROP_LEFT_BEHIND,
  PRODUCTION_ADDRESS,
  RULES,
  copied,
  copyStats,
  deepViews,
  dropDeepViews,
  redTeamLab,
} from "../support/lab/redTeam";

jest.setTimeout(300_000);
const { asSuperuser, cleanups, inProduction, outcome, preparedFork } = redTeamLab();

test("the suite's production is the simulator's at eventsRows: its hypertable holds that many rows, compressed by its policy as the full one is", async () => {
  expect(
    await inProduction(
      `SELECT count(*) || ' ' || (SELECT count(*) FILTER (WHERE is_compressed) > 0 FROM timescaledb_information.chunks WHERE hypertable_name = '${EVENTS_TABLE}') FROM public.${EVENTS_TABLE}`,
    ),
  ).toBe(`${SHAPED_ROWS} true`);
});

test("a materialized view whose column is of an enum with a cast to text of tsdbadmin's: the check of its rows (col::text) runs no function of the database's own while views not yet refreshed hold production's statistics", async () => {
  cleanups.push(() =>
    inProduction(
      `DROP MATERIALIZED VIEW IF EXISTS public.a_cast91; ${dropDeepViews("r91")} DROP CAST IF EXISTS (public.tab91 AS text); ` +
        "DROP FUNCTION IF EXISTS public.tab91_text(public.tab91); DROP TYPE IF EXISTS public.tab91; DROP TABLE IF EXISTS public.stolen_r91;",
    ),
  );
  await inProduction(`
    ${deepViews("r91")}
    CREATE TABLE public.stolen_r91 (v text);
    CREATE TYPE public.tab91 AS ENUM ('retail');
    -- PostgreSQL's explicit cast to text of an enum is its output function, unless the type's owner makes one: then it is this.
    CREATE FUNCTION public.tab91_text(public.tab91) RETURNS text LANGUAGE plpgsql AS $f$ BEGIN ${copyStats("r91")} RETURN 'retail'; END $f$;
    CREATE CAST (public.tab91 AS text) WITH FUNCTION public.tab91_text(public.tab91);
    -- Reads customers (checked), calls nothing of the database's own: refreshed in the first wave, its rows read as text by the check.
    CREATE MATERIALIZED VIEW public.a_cast91 AS SELECT email, 'retail'::public.tab91 AS kind FROM public.customers;
    TRUNCATE public.stolen_r91;`);
  expect(await inProduction("SELECT count(*) FROM public.stolen_r91")).toBe("0");
  expect(await outcome("pr-redteam9-view-text-cast", { mask: RULES, pauseJobs: true }, copied("r91"))).toMatch(/^published, copied: 0 of/);
});

test("a keepFirst column of a composite type whose assignment cast from text is tsdbadmin's: the masking's UPDATE runs no function of the database's own (it would read the rows not yet masked)", async () => {
  cleanups.push(() =>
    inProduction(
      "ALTER TABLE public.customers DROP COLUMN IF EXISTS zip92; DROP CAST IF EXISTS (text AS public.zip92); " +
        "DROP FUNCTION IF EXISTS public.zip92_of(text); DROP TYPE IF EXISTS public.zip92; DROP TABLE IF EXISTS public.stolen_r92;",
    ),
  );
  await inProduction(`
    CREATE TABLE public.stolen_r92 (q text, v text);
    CREATE TYPE public.zip92 AS (v text);
    -- keepFirst writes left(zip92::text, n), text, into the column: PostgreSQL assigns it through this cast.
    CREATE FUNCTION public.zip92_of(text) RETURNS public.zip92 LANGUAGE plpgsql AS $f$
      BEGIN
        IF pg_catalog.current_setting('redteam.r92', true) IS DISTINCT FROM 'yes' THEN
          PERFORM pg_catalog.set_config('redteam.r92', 'yes', false);
          -- The UPDATE's snapshot: every address as production has it.
          INSERT INTO public.stolen_r92 SELECT pg_catalog.left(pg_catalog.current_query(), 60), email FROM public.customers;
        END IF;
        RETURN NULL;
      END $f$;
    CREATE CAST (text AS public.zip92) WITH FUNCTION public.zip92_of(text) AS ASSIGNMENT;
    ALTER TABLE public.customers ADD COLUMN zip92 public.zip92;
    UPDATE public.customers SET zip92 = ROW(lpad(id::text, 5, '0'))::public.zip92;
    TRUNCATE public.stolen_r92;`);
  const rules = [...RULES, { table: "customers", column: "zip92", with: "keepFirst", chars: 3 }];
  expect(
    await outcome("pr-redteam9-assignment-cast", { mask: rules, pauseJobs: true }, (uri) =>
      read(uri, `SELECT 'copied: ' || count(*) FILTER (WHERE v LIKE '${PRODUCTION_ADDRESS}') FROM public.stolen_r92`),
    ),
  ).toMatch(
    /public\.customers\.zip92 is of type public\.zip92, whose conversion from text runs public\.zip92_of\(text\), a function of the database's own/,
  );
});

test("a public.left(text, integer) of tsdbadmin's on the role's search_path (public, pg_catalog) never runs in the preparation's own statements: with prepare.sql, nothing of customers is copied before the masking", async () => {
  cleanups.push(() =>
    inProduction(
      "ALTER ROLE tsdbadmin RESET search_path; DROP FUNCTION IF EXISTS public.left(text, integer); DROP TABLE IF EXISTS public.stolen_r93;",
    ),
  );
  await inProduction(`
    CREATE TABLE public.stolen_r93 (q text, v text);
    -- pg_catalog's left(text, integer) has the same signature: public's, first on the path, is chosen.
    CREATE FUNCTION public.left(text, integer) RETURNS text LANGUAGE plpgsql SET search_path = pg_catalog AS $f$
      BEGIN
        IF strpos(current_query(), 'pg_settings') > 0 AND current_setting('redteam.r93', true) IS DISTINCT FROM statement_timestamp()::text THEN
          PERFORM set_config('redteam.r93', statement_timestamp()::text, false);
          INSERT INTO public.stolen_r93 SELECT left(current_query(), 60), email FROM public.customers;
        END IF;
        RETURN pg_catalog.left($1, $2);
      END $f$;
    ALTER ROLE tsdbadmin SET search_path = public, pg_catalog;`);
  expect(await inProduction("SELECT count(*) FROM public.stolen_r93")).toBe("0");
  // Any prepare.sql: the settings are pinned again after it, with the role's search_path still in force.
  expect(
    await outcome("pr-redteam9-reset-path", { sql: ["SELECT 1"], mask: RULES, pauseJobs: true }, (uri) =>
      read(uri, `SELECT 'copied: ' || count(*) FILTER (WHERE v LIKE '${PRODUCTION_ADDRESS}') FROM public.stolen_r93`),
    ),
  ).toBe("published, copied: 0");
});

test("a public.left(text, integer) of tsdbadmin's on the role's search_path never runs as the settings are pinned again after a refresh: it copies no production statistic of a view not yet refreshed", async () => {
  cleanups.push(() =>
    inProduction(
      `ALTER ROLE tsdbadmin RESET search_path; DROP FUNCTION IF EXISTS public.left(text, integer); ${dropDeepViews("r94")} DROP TABLE IF EXISTS public.stolen_r94;`,
    ),
  );
  await inProduction(`
    ${deepViews("r94")}
    CREATE TABLE public.stolen_r94 (v text);
    CREATE FUNCTION public.left(text, integer) RETURNS text LANGUAGE plpgsql SET search_path = pg_catalog AS $f$
      BEGIN
        IF strpos(current_query(), 'pg_settings') > 0 THEN ${copyStats("r94")} END IF;
        RETURN pg_catalog.left($1, $2);
      END $f$;
    ALTER ROLE tsdbadmin SET search_path = public, pg_catalog;`);
  expect(await outcome("pr-redteam9-reset-path-refresh", { mask: RULES, pauseJobs: true }, copied("r94"))).toMatch(
    /^published, copied: 0 of/,
  );
});

test("chunk skipping's ranges of a masked column are gone from the statistics of TimescaleDB's catalog (_timescaledb_catalog.chunk_column_stats, analysed by autovacuum in production)", async () => {
  cleanups.push(async () => {
    await inProduction(`DROP TABLE IF EXISTS public.pat95; ${DROP_LEFT_BEHIND};`);
    // Its statistics as before the test: none (an empty table keeps them through ANALYZE).
    await asSuperuser("DELETE FROM pg_statistic WHERE starelid = '_timescaledb_catalog.chunk_column_stats'::regclass;");
  });
  await inProduction(`
    SET timescaledb.enable_chunk_skipping = on;
    CREATE TABLE public.pat95 (time timestamptz NOT NULL, score int);
    SELECT create_hypertable('public.pat95', by_range('time', interval '1 day'));
    INSERT INTO public.pat95 SELECT now() - interval '30 days' + g * interval '10 minutes', 1000 + g / 10 FROM generate_series(0, 4000) g;
    SELECT enable_chunk_skipping('public.pat95', 'score');
    ALTER TABLE public.pat95 SET (timescaledb.compress, timescaledb.compress_orderby = 'time');
    SELECT count(compress_chunk(c)) FROM show_chunks('public.pat95', older_than => interval '1 day') c;`);
  // What autovacuum does once enough of the catalog's rows changed.
  await asSuperuser("ANALYZE _timescaledb_catalog.chunk_column_stats;");
  const ranges = `SELECT count(*) FROM pg_stats, unnest(histogram_bounds::text::bigint[]) v
    WHERE schemaname = '_timescaledb_catalog' AND tablename = 'chunk_column_stats' AND attname IN ('range_start', 'range_end') AND v BETWEEN 1000 AND 1500`;
  expect(Number(await inProduction(ranges))).toBeGreaterThan(0);
  const rules = [...RULES, { table: "pat95", column: "score", with: "constant", value: "0" }];
  expect(
    await outcome("pr-redteam9-skipping-stats", { mask: rules, pauseJobs: true }, (uri) => read(uri, ranges).then((n) => `ranges: ${n}`)),
  ).toBe("published, ranges: 0");
});

test("a hypertable whose chunks are all compressed, analysed before they were (as autovacuum leaves an archive), is masked and published: its own statistics made again from the masked rows, not refused", async () => {
  cleanups.push(() => inProduction(`DROP TABLE IF EXISTS public.arch96; ${DROP_LEFT_BEHIND};`));
  await inProduction(`
    CREATE TABLE public.arch96 (time timestamptz NOT NULL, email text, n int);
    SELECT create_hypertable('public.arch96', by_range('time', interval '1 day'));
    INSERT INTO public.arch96 SELECT timestamptz '2025-01-01' + g * interval '10 minutes', 'arch' || (g % 300) || '@prod-customers.example.com', g
      FROM generate_series(0, 1400) g;
    ANALYZE public.arch96;
    ALTER TABLE public.arch96 SET (timescaledb.compress, timescaledb.compress_segmentby = 'n');
    SELECT count(compress_chunk(c)) FROM show_chunks('public.arch96') c;`);
  const holding = `SELECT count(*) FROM pg_stats WHERE tablename = 'arch96'
    AND lower(coalesce(most_common_vals::text, '') || coalesce(histogram_bounds::text, '')) LIKE '${PRODUCTION_ADDRESS}'`;
  expect(Number(await inProduction(holding))).toBeGreaterThan(0);
  const rules = [...RULES, { table: "arch96", column: "email", with: "email" }];
  expect(
    await outcome("pr-redteam9-all-compressed", { mask: rules, pauseJobs: true }, (uri) => read(uri, holding).then((n) => `holding: ${n}`)),
  ).toBe("published, holding: 0");
});

test("a materialized view calling PostgreSQL's to_json of a column of an enum whose cast to json is tsdbadmin's (pg_depend records the column, not its type) copies no production statistic of a view refreshed after it", async () => {
  cleanups.push(() =>
    inProduction(
      `DROP MATERIALIZED VIEW IF EXISTS public.a_json97; ${dropDeepViews("r97")} DROP TABLE IF EXISTS public.t97; ` +
        "DROP CAST IF EXISTS (public.tab97 AS json); DROP FUNCTION IF EXISTS public.tab97_json(public.tab97); DROP TYPE IF EXISTS public.tab97;",
    ),
  );
  await inProduction(`
    ${deepViews("r97")}
    CREATE TYPE public.tab97 AS ENUM ('m_deep_r97');
    CREATE FUNCTION public.tab97_json(public.tab97) RETURNS json LANGUAGE sql STABLE AS $f$
      SELECT pg_catalog.to_json(pg_catalog.string_agg(coalesce(s.most_common_vals::text, '') || coalesce(s.histogram_bounds::text, ''), ' '))
        FROM pg_catalog.pg_stats s WHERE s.schemaname = 'public' AND s.tablename = $1::text $f$;
    CREATE CAST (public.tab97 AS json) WITH FUNCTION public.tab97_json(public.tab97);
    CREATE TABLE public.t97 (k public.tab97);
    INSERT INTO public.t97 VALUES ('m_deep_r97');
    -- Round 8's a_json called to_json of a constant (its type in pg_depend); here of a column: the rule depends on t97.k only.
    CREATE MATERIALIZED VIEW public.a_json97 AS SELECT to_json(k)::text AS v FROM public.t97;`);
  const holding = `SELECT count(*) FROM public.a_json97 WHERE lower(v) LIKE '${PRODUCTION_ADDRESS}'`;
  expect(await inProduction(holding)).toBe("1");
  expect(
    await outcome("pr-redteam9-json-column", { mask: RULES, pauseJobs: true }, (uri) => read(uri, holding).then((n) => `holding: ${n}`)),
  ).toBe("published, holding: 0");
});

test("a trigger of a continuous aggregate's materialization hypertable whose WHEN calls a function of tsdbadmin's (its function PostgreSQL's) runs after every view whose statistics it could read: it copies no production statistic", async () => {
  const onDaily = (sql: string) =>
    `DO $d$ BEGIN EXECUTE (SELECT format('${sql}', materialization_hypertable_schema, materialization_hypertable_name)
       FROM timescaledb_information.continuous_aggregates WHERE view_name = '${EVENTS_DAILY}'); END $d$;`;
  cleanups.push(async () => {
    await inProduction(onDaily("DROP TRIGGER IF EXISTS when98 ON %I.%I"));
    await inProduction(`${dropDeepViews("r98")} DROP FUNCTION IF EXISTS public.when98(text); DROP TABLE IF EXISTS public.stolen_r98;`);
  });
  await inProduction(`
    ${deepViews("r98")}
    CREATE TABLE public.stolen_r98 (v text);
    CREATE FUNCTION public.when98(text) RETURNS boolean LANGUAGE plpgsql AS $f$ BEGIN ${copyStats("r98")} RETURN false; END $f$;
    -- Evaluated on each row the refresh inserts; the trigger's function (PostgreSQL's) never runs, as WHEN is false.
    ${onDaily("CREATE TRIGGER when98 AFTER INSERT ON %I.%I FOR EACH ROW WHEN (public.when98(NEW.customer_email)) EXECUTE FUNCTION pg_catalog.suppress_redundant_updates_trigger()")}
    TRUNCATE public.stolen_r98;`);
  const fork = await preparedFork("pr-redteam9-trigger-when", { mask: RULES, pauseJobs: true });
  const order = fork.prepared.refreshed as string[];
  expect(`${await copied("r98")(fork.uri)}; refreshed: ${order.join(", ")}`).toMatch(/^copied: 0 of/);
});

test("an index of a continuous aggregate casting to a domain whose CHECK calls a function of tsdbadmin's (no function of its own in the index expression) is refused as one calling the function is, naming it", async () => {
  cleanups.push(async () => {
    await inProduction(
      `DO $d$ BEGIN EXECUTE (SELECT format('DROP INDEX IF EXISTS %I.%I', schemaname, indexname) FROM pg_indexes WHERE indexname = 'daily99_dom'); END $d$;`,
    );
    await inProduction(
      `${dropDeepViews("r99")} DROP DOMAIN IF EXISTS public.dom99; DROP FUNCTION IF EXISTS public.chk99(bigint), public.copy99(); DROP TABLE IF EXISTS public.stolen_r99;`,
    );
  });
  await inProduction(`
    ${deepViews("r99")}
    CREATE TABLE public.stolen_r99 (v text);
    CREATE FUNCTION public.copy99() RETURNS void LANGUAGE plpgsql AS $f$ BEGIN ${copyStats("r99")} END $f$;
    -- A domain's CHECK may be declared IMMUTABLE and still call a VOLATILE function.
    CREATE FUNCTION public.chk99(bigint) RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $f$ BEGIN PERFORM public.copy99(); RETURN true; END $f$;
    CREATE DOMAIN public.dom99 AS bigint CHECK (public.chk99(VALUE));
    -- On the materialization hypertable: its expression is a CoerceToDomain, no funcid of tsdbadmin's in it.
    CREATE INDEX daily99_dom ON public.${EVENTS_DAILY} ((views::public.dom99));
    TRUNCATE public.stolen_r99;`);
  expect(await outcome("pr-redteam9-aggregate-index-domain", { mask: RULES, pauseJobs: true }, copied("r99"))).toMatch(
    /index daily99_dom of continuous aggregate public\.events_daily: it calls a function of the database's own/,
  );
});

test("an index of a materialized view casting to a domain whose CHECK calls a function of tsdbadmin's runs after everything else (as one calling the function does): it copies no production statistic of a view refreshed after it", async () => {
  cleanups.push(() =>
    inProduction(
      `DROP MATERIALIZED VIEW IF EXISTS public.a_idx910; ${dropDeepViews("r910")} DROP DOMAIN IF EXISTS public.dom910; ` +
        "DROP FUNCTION IF EXISTS public.chk910(text), public.copy910(); DROP TABLE IF EXISTS public.stolen_r910;",
    ),
  );
  await inProduction(`
    ${deepViews("r910")}
    CREATE TABLE public.stolen_r910 (v text);
    CREATE FUNCTION public.copy910() RETURNS void LANGUAGE plpgsql AS $f$ BEGIN ${copyStats("r910")} END $f$;
    -- A domain's CHECK may be declared IMMUTABLE and still call a VOLATILE function.
    CREATE FUNCTION public.chk910(text) RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $f$ BEGIN PERFORM public.copy910(); RETURN true; END $f$;
    CREATE DOMAIN public.dom910 AS text CHECK (public.chk910(VALUE));
    -- Its query and index name no function of tsdbadmin's: neither opaque nor dropped until the end, refreshed in the first wave.
    CREATE MATERIALIZED VIEW public.a_idx910 AS SELECT email FROM public.customers;
    CREATE INDEX a_idx910_dom ON public.a_idx910 ((email::public.dom910));
    TRUNCATE public.stolen_r910;`);
  expect(await outcome("pr-redteam9-view-index-domain", { mask: RULES, pauseJobs: true }, copied("r910"))).toMatch(
    /^published, copied: 0 of/,
  );
});

test("a CHECK of the masked table, NOT of an operator whose function is PostgreSQL's but whose NEGATOR is tsdbadmin's (the planner runs the negator instead), copies nothing while the masking runs", async () => {
  cleanups.push(() =>
    inProduction(
      "ALTER TABLE public.customers DROP CONSTRAINT IF EXISTS customers_neg911; DROP OPERATOR IF EXISTS public.~~~ (text, text); " +
        "DROP OPERATOR IF EXISTS public.!~~~ (text, text); DROP FUNCTION IF EXISTS public.neg911(text, text), public.copy911(); DROP TABLE IF EXISTS public.stolen_r911;",
    ),
  );
  await inProduction(`
    CREATE TABLE public.stolen_r911 (q text, v text);
    CREATE FUNCTION public.copy911() RETURNS void LANGUAGE plpgsql AS $f$ BEGIN
      IF pg_catalog.current_setting('redteam.r911', true) IS DISTINCT FROM 'yes' THEN
        PERFORM pg_catalog.set_config('redteam.r911', 'yes', false);
        INSERT INTO public.stolen_r911 SELECT pg_catalog.left(pg_catalog.current_query(), 60), email FROM public.customers;
      END IF; END $f$;
    CREATE FUNCTION public.neg911(text, text) RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $f$
      BEGIN PERFORM public.copy911(); RETURN $1 OPERATOR(pg_catalog.<>) $2; END $f$;
    CREATE OPERATOR public.!~~~ (LEFTARG = text, RIGHTARG = text, FUNCTION = public.neg911);
    -- Its function is texteq: the constraint's parsed form names texteq; eval_const_expressions turns NOT (a ~~~ b) into a !~~~ b.
    CREATE OPERATOR public.~~~ (LEFTARG = text, RIGHTARG = text, FUNCTION = pg_catalog.texteq, NEGATOR = OPERATOR(public.!~~~));
    ALTER TABLE public.customers ADD CONSTRAINT customers_neg911 CHECK (NOT (email OPERATOR(public.~~~) 'nobody'));
    TRUNCATE public.stolen_r911;`);
  expect(
    await outcome("pr-redteam9-negator-check", { mask: RULES, pauseJobs: true }, (uri) =>
      read(uri, `SELECT 'copied: ' || count(*) FILTER (WHERE v LIKE '${PRODUCTION_ADDRESS}') FROM public.stolen_r911`),
    ),
  ).toMatch(/constraint customers_neg911 runs public\.neg911\(text,text\), a function of the database's own/);
});

test("a materialized view filtering on NOT of an operator whose NEGATOR is tsdbadmin's (its own function PostgreSQL's) runs after everything else: it copies no production statistic of a view refreshed after it", async () => {
  cleanups.push(() =>
    inProduction(
      `DROP MATERIALIZED VIEW IF EXISTS public.a_neg912; ${dropDeepViews("r912")} DROP OPERATOR IF EXISTS public.~~~~ (text, text); ` +
        "DROP OPERATOR IF EXISTS public.!~~~~ (text, text); DROP FUNCTION IF EXISTS public.neg912(text, text); DROP TABLE IF EXISTS public.stolen_r912;",
    ),
  );
  await inProduction(`
    ${deepViews("r912")}
    CREATE TABLE public.stolen_r912 (v text);
    CREATE FUNCTION public.neg912(text, text) RETURNS boolean LANGUAGE plpgsql AS $f$ BEGIN ${copyStats("r912")} RETURN true; END $f$;
    CREATE OPERATOR public.!~~~~ (LEFTARG = text, RIGHTARG = text, FUNCTION = public.neg912);
    CREATE OPERATOR public.~~~~ (LEFTARG = text, RIGHTARG = text, FUNCTION = pg_catalog.texteq, NEGATOR = OPERATOR(public.!~~~~));
    -- Its rule names texteq and the operator ~~~~: neither opaque nor a reader of pg_stats, refreshed in the first wave.
    CREATE MATERIALIZED VIEW public.a_neg912 AS SELECT email FROM public.customers WHERE NOT (email OPERATOR(public.~~~~) 'x');
    TRUNCATE public.stolen_r912;`);
  expect(await outcome("pr-redteam9-negator-view", { mask: RULES, pauseJobs: true }, copied("r912"))).toMatch(/^published, copied: 0 of/);
});

test("a compressed hypertable whose chunks live in a schema of its own (associated_schema_name) is masked and published: its compressed chunks are chunks, not empty tables whose statistics ANALYZE kept", async () => {
  cleanups.push(() => inProduction(`DROP TABLE IF EXISTS public.ev913; ${DROP_LEFT_BEHIND}; DROP SCHEMA IF EXISTS chunks913 CASCADE;`));
  await inProduction(`
    CREATE SCHEMA chunks913;
    CREATE TABLE public.ev913 (time timestamptz NOT NULL, email text, n int);
    SELECT create_hypertable('public.ev913', 'time', chunk_time_interval => interval '1 day', associated_schema_name => 'chunks913');
    INSERT INTO public.ev913 SELECT now() - interval '5 days' + g * interval '10 minutes', 'ev' || (g % 300) || '@prod-customers.example.com', g % 7
      FROM generate_series(0, 800) g;
    ALTER TABLE public.ev913 SET (timescaledb.compress, timescaledb.compress_segmentby = 'n');
    DO $d$ DECLARE c regclass; BEGIN FOR c IN SELECT show_chunks('public.ev913') LOOP EXECUTE format('ANALYZE %s', c); END LOOP; END $d$;
    SELECT count(compress_chunk(c)) FROM show_chunks('public.ev913', older_than => interval '1 day') c;`);
  const holding = `SELECT count(*) FROM pg_stats WHERE lower(coalesce(most_common_vals::text, '') || coalesce(histogram_bounds::text, '')) LIKE '${PRODUCTION_ADDRESS}'`;
  const rules = [...RULES, { table: "ev913", column: "email", with: "email" }];
  expect(
    await outcome("pr-redteam9-chunk-schema", { mask: rules, pauseJobs: true }, (uri) => read(uri, holding).then((n) => `holding: ${n}`)),
  ).toBe("published, holding: 0");
});

test("a chunk of a masked hypertable emptied in production by a DELETE (its statistics, from before, kept by ANALYZE) is masked and published: an empty chunk's statistics are dropped as an empty table's are, or the chunk, holding nothing, is", async () => {
  cleanups.push(() => inProduction(`DROP TABLE IF EXISTS public.del914; ${DROP_LEFT_BEHIND};`));
  await inProduction(`
    CREATE TABLE public.del914 (time timestamptz NOT NULL, email text);
    SELECT create_hypertable('public.del914', by_range('time', interval '1 day'));
    INSERT INTO public.del914 SELECT timestamptz '2026-11-20' + g * interval '10 minutes', 'del' || (g % 300) || '@prod-customers.example.com'
      FROM generate_series(0, 800) g;
    ANALYZE public.del914;
    -- A person's erasure, say: the first day's rows gone, its chunk left empty; autovacuum's ANALYZE keeps what it had.
    DELETE FROM public.del914 WHERE time < timestamptz '2026-11-21';
    ANALYZE public.del914;`);
  const holding = `SELECT count(*) FROM pg_stats WHERE lower(coalesce(most_common_vals::text, '') || coalesce(histogram_bounds::text, '')) LIKE '${PRODUCTION_ADDRESS}'`;
  const rules = [...RULES, { table: "del914", column: "email", with: "email" }];
  expect(
    await outcome("pr-redteam9-emptied-chunk", { mask: rules, pauseJobs: true }, (uri) => read(uri, holding).then((n) => `holding: ${n}`)),
  ).toBe("published, holding: 0");
});

test("an inheritance parent above a masked child emptied in production (its statistics of the whole, from before, kept by ANALYZE: no row sampled) holds no production address once published", async () => {
  cleanups.push(() => inProduction("DROP TABLE IF EXISTS public.people915_eu, public.people915;"));
  await inProduction(`
    CREATE TABLE public.people915 (id int, email text);
    CREATE TABLE public.people915_eu () INHERITS (public.people915);
    -- Fewer rows than autovacuum's threshold: the child is never analysed on its own; the parent is, by hand (its statistics of the whole).
    INSERT INTO public.people915_eu SELECT g, 'gone' || g || '@prod-customers.example.com' FROM generate_series(1, 30) g;
    ANALYZE public.people915;
    -- Erased since: no row left to sample, in the child or through the parent.
    DELETE FROM public.people915_eu;`);
  const holding = `SELECT count(*) FROM pg_stats WHERE tablename = 'people915'
    AND lower(coalesce(most_common_vals::text, '') || coalesce(histogram_bounds::text, '')) LIKE '${PRODUCTION_ADDRESS}'`;
  expect(await inProduction(holding)).toBe("1");
  const rules = [...RULES, { table: "people915_eu", column: "email", with: "email" }];
  expect(
    await outcome("pr-redteam9-inherited-kept", { mask: rules, pauseJobs: true }, (uri) => read(uri, holding).then((n) => `holding: ${n}`)),
  ).toBe("published, holding: 0");
});
