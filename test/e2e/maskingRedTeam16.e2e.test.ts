// A sixteenth red team's ways through a masked fork's preparation (docs/masking.md), each read through
// the fork's published URL as its holder reads it, each asserting the safe outcome (so each fails
// on the code it was written against): the fork published with nothing of production's masked
// values readable, or refused naming a fix that works; a harmless production published, its objects
// as they were. Each leaves production as it found it.
//  1. a continuous aggregate whose query calls a function of the database's own is refreshed last,
//     once those functions are given back; it was emptied by dropping its chunks, which keeps its
//     materialization hypertable's own statistics (of the whole: production's addresses, grouped by).
//     Only materialized views are made again with no data (remakeEmpty): the aggregate's function
//     reads its own hypertable's statistics while the aggregate is refreshed and returns them
//     reversed; checkDerived compares what it holds with the sampled values as they are, so the
//     reversed addresses pass and stay in the aggregate, readable through the URL;
//  2. a harmless production: a materialized view calling a function of the database's own, owned by
//     an application's role tsdbadmin is a member of, which made it when it could create in public
//     and may not any more. remakeEmpty makes it again as tsdbadmin and gives it back to its owner
//     (ALTER … OWNER TO), which PostgreSQL refuses: the owner may not create in its schema. The
//     preparation fails (SQLSTATE 42501) naming no fix, and fails again on every `pulumi up`;
//  3. likewise, a materialized view of tsdbadmin's calling one, in a schema of tsdbadmin's own it
//     took its own CREATE on away (made read-only once its views were made): remakeEmpty's CREATE
//     there is refused (SQLSTATE 42501), every time;
//  4. a harmless production: a materialized view calling a function of the database's own (populated),
//     and one reading it, left unpopulated with the statistics of when it was populated. remakeEmpty
//     makes the first again with no data, and the second with it (it reads it); the second, found
//     before as unpopulated with statistics and calling none, is then populated to make its
//     statistics again (restatisticizeUnpopulated), reading the first, now unpopulated until its
//     refresh after the functions are given back: PostgreSQL refuses (SQLSTATE 55000). (By the code, a second `pulumi up`
//     finds the second view with no statistics any more, and publishes the fork.)
import { EVENTS_TABLE } from "../../simulator/production";
import { readThrough as read } from "../support/lab/production";
import { PRODUCTION_ADDRESS, RULES, redTeamLab } from "../support/lab/redTeam";

jest.setTimeout(300_000);
const { asSuperuser, cleanups, inProduction, outcome } = redTeamLab();

test("a continuous aggregate whose query calls a function of the database's own, reading its own materialization hypertable's statistics (production's while it waits to be refreshed), holds nothing of production's, reversed or not", async () => {
  cleanups.push(() => inProduction("DROP MATERIALIZED VIEW IF EXISTS public.c161 CASCADE; DROP FUNCTION IF EXISTS public.stats161();"));
  await inProduction(`
    -- What pg_stats holds of the aggregate's materialization hypertable, reversed: production's until an ANALYZE finds rows.
    CREATE FUNCTION public.stats161() RETURNS text LANGUAGE plpgsql IMMUTABLE AS $f$
      BEGIN
        RETURN (SELECT pg_catalog.string_agg(pg_catalog.reverse(v), ' ')
                  FROM timescaledb_information.continuous_aggregates a, pg_catalog.pg_stats s,
                       pg_catalog.unnest(coalesce(s.most_common_vals::text::text[], '{}') || coalesce(s.histogram_bounds::text::text[], '{}')) v
                 WHERE a.view_name = 'c161' AND s.schemaname = a.materialization_hypertable_schema
                   AND s.tablename = a.materialization_hypertable_name);
      END $f$;
    CREATE MATERIALIZED VIEW public.c161 WITH (timescaledb.continuous) AS
      SELECT time_bucket('1 day', time) AS day, customer_email, public.stats161() AS note, count(*) AS n
        FROM public.${EVENTS_TABLE} GROUP BY 1, 2, 3 WITH NO DATA;
    CALL refresh_continuous_aggregate('public.c161', NULL, NULL);
    DO $d$ BEGIN EXECUTE (SELECT format('ANALYZE %I.%I', materialization_hypertable_schema, materialization_hypertable_name)
      FROM timescaledb_information.continuous_aggregates WHERE view_name = 'c161'); END $d$;`);
  // Production's rows: nothing reversed (its statistics were made after its refresh).
  expect(await inProduction(`SELECT count(*) FROM public.c161 WHERE lower(reverse(note)) LIKE '${PRODUCTION_ADDRESS}'`)).toBe("0");
  const result = await outcome("pr-redteam16-opaque-aggregate", { mask: RULES, pauseJobs: true }, (uri) =>
    read(
      uri,
      `SELECT 'reversed ' || count(*) FILTER (WHERE lower(reverse(note)) LIKE '${PRODUCTION_ADDRESS}') || ', clear ' || ` +
        `count(*) FILTER (WHERE lower(customer_email) LIKE '${PRODUCTION_ADDRESS}') FROM public.c161`,
    ),
  );
  expect(result).toBe("published, reversed 0, clear 0");
});

test("a materialized view calling a function of the database's own, owned by an application's role (tsdbadmin a member of it) that may no longer create in public, is published as it was: its owner's, populated", async () => {
  cleanups.push(async () => {
    await asSuperuser("DROP MATERIALIZED VIEW IF EXISTS public.m162; DROP FUNCTION IF EXISTS public.same162(text);");
    await asSuperuser("DROP OWNED BY app162; DROP ROLE IF EXISTS app162;");
  });
  await asSuperuser(`
    CREATE ROLE app162 NOLOGIN;
    GRANT app162 TO tsdbadmin;
    GRANT SELECT ON public.customers TO app162;
    SET ROLE tsdbadmin;
    CREATE FUNCTION public.same162(text) RETURNS text LANGUAGE sql IMMUTABLE AS $f$ SELECT $1 $f$;
    -- The application's own report, made by its migration while it could create in public.
    GRANT CREATE ON SCHEMA public TO app162;
    CREATE MATERIALIZED VIEW public.m162 AS SELECT id, public.same162(email) AS v FROM public.customers;
    ALTER MATERIALIZED VIEW public.m162 OWNER TO app162;
    REVOKE CREATE ON SCHEMA public FROM app162;`);
  const result = await outcome("pr-redteam16-owner-cannot-create", { mask: RULES, pauseJobs: true }, (uri) =>
    read(
      uri,
      "SELECT 'owner ' || pg_get_userbyid(relowner) || ', populated ' || relispopulated::text FROM pg_class WHERE oid = 'public.m162'::regclass",
    ),
  );
  expect(result).toBe("published, owner app162, populated true");
});

test("a materialized view of tsdbadmin's calling a function of the database's own, in a schema of tsdbadmin's own it took its own CREATE on away, is published as it was: populated", async () => {
  cleanups.push(() => inProduction("DROP SCHEMA IF EXISTS reports163 CASCADE; DROP FUNCTION IF EXISTS public.same163(text);"));
  await inProduction(`
    CREATE FUNCTION public.same163(text) RETURNS text LANGUAGE sql IMMUTABLE AS $f$ SELECT $1 $f$;
    CREATE SCHEMA reports163;
    CREATE MATERIALIZED VIEW reports163.m163 AS SELECT id, public.same163(email) AS v FROM public.customers;
    -- Its reports made, the schema is made read-only, its owner's CREATE taken away too.
    REVOKE CREATE ON SCHEMA reports163 FROM tsdbadmin;`);
  const result = await outcome("pr-redteam16-schema-read-only", { mask: RULES, pauseJobs: true }, (uri) =>
    read(uri, "SELECT 'populated ' || relispopulated::text FROM pg_class WHERE oid = 'reports163.m163'::regclass"),
  );
  expect(result).toBe("published, populated true");
});

test("a materialized view left unpopulated (with the statistics of when it was populated) reading one that calls a function of the database's own is published as it was: unpopulated, with no statistics, what it reads populated", async () => {
  cleanups.push(() =>
    inProduction("DROP MATERIALIZED VIEW IF EXISTS public.m164u, public.m164p; DROP FUNCTION IF EXISTS public.same164(text);"),
  );
  await inProduction(`
    CREATE FUNCTION public.same164(text) RETURNS text LANGUAGE sql IMMUTABLE AS $f$ SELECT $1 $f$;
    CREATE MATERIALIZED VIEW public.m164p AS SELECT id, public.same164(email) AS v FROM public.customers;
    -- A report over it, populated once, analysed, then emptied until it is wanted again: its statistics stay.
    CREATE MATERIALIZED VIEW public.m164u AS SELECT v FROM public.m164p;
    ANALYZE public.m164u;
    REFRESH MATERIALIZED VIEW public.m164u WITH NO DATA;`);
  const result = await outcome("pr-redteam16-unpopulated-reader", { mask: RULES, pauseJobs: true }, (uri) =>
    read(
      uri,
      "SELECT 'm164p populated ' || (SELECT relispopulated FROM pg_class WHERE oid = 'public.m164p'::regclass)::text || " +
        "', m164u populated ' || (SELECT relispopulated FROM pg_class WHERE oid = 'public.m164u'::regclass)::text || " +
        "', m164u statistics ' || (SELECT count(*) FROM pg_stats WHERE tablename = 'm164u')",
    ),
  );
  expect(result).toBe("published, m164p populated true, m164u populated false, m164u statistics 0");
});
