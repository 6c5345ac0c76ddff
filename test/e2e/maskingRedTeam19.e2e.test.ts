// A nineteenth red team's ways through a masked fork's preparation (docs/masking.md), each read
// through the fork's published URL as its holder reads it, each asserting the safe outcome (so each
// fails on the code it was written against): the fork published with nothing of production's masked
// values readable, or refused naming what it cannot make safe and the fix. Each leaves production as
// it found it. The attacker has tsdbadmin's SQL in production (CREATEROLE where said, as on Tiger
// Cloud), and the URL.
// The ways through prepare.sqlAfter were closed by running it last, once every view is refreshed,
// every statistic made again and every function given back: those seeds are published, copying
// only the masking's values (textQueriesOnWrite, named below, refused them before and is gone).
//  1. a continuous aggregate that calls nothing of the database's own (refreshed in the first wave,
//     beside m_base_191, while m_deep_191, refreshed in the second, keeps production's statistics),
//     whose materialization hypertable has a row trigger whose WHEN calls only PostgreSQL's own
//     functions (query_to_xml reading m_deep_191's statistics, kept in a large object by
//     lo_from_bytea) and whose function is PostgreSQL's own too
//     (suppress_redundant_updates_trigger, never run: the WHEN is false). CONTINUOUS_AGGREGATES'
//     runsOwn looks for functions of the database's own only, so the aggregate is not refreshed last:
//     its refresh inserts its rows while other views' statistics are production's;
//  2. likewise, with an index on the aggregate (TimescaleDB makes it on its materialization
//     hypertable) on a cast to a domain whose CHECK does the same: MATERIALIZATION_CALLING_OWN and
//     READS look for the database's own functions only, and for a query given as text on a view's
//     indexes only (a materialized view with such an index is refreshed last), not on an aggregate's;
//  3. a harmless production: a continuous aggregate (refreshed: it calls a function of the
//     database's own) over a hypertable of tsdbadmin's whose row security it forces on itself (made
//     after the aggregate: TimescaleDB refuses an aggregate over one with row security, not row
//     security over one with an aggregate). REFRESHES_UNDER_ROW_SECURITY looks at materialized views
//     only: the aggregate's refresh, with row security off, fails on SQLSTATE 42501, naming nothing;
//  4. a harmless production: a materialized view of an application's role reading, through a view of
//     tsdbadmin's made `WITH (security_invoker = t)` (PostgreSQL keeps the option as written: "t"), a
//     table of tsdbadmin's whose row security lets that role read. The guard's pattern knows
//     true|on|yes|1, takes the view for a definer's (tsdbadmin: the table's owner) and refuses
//     nothing; the refresh reads the table as the application's role, and fails on SQLSTATE 42501;
//  5. a harmless production: a materialized view left unpopulated with statistics (populated to be
//     analysed), reading one left unpopulated with none (populated for as long with it), which reads
//     a table forcing its row security on its owner. The guard walks views, not the unpopulated
//     views populated with it: SQLSTATE 42501, naming nothing;
//  6. a harmless production: a materialized view reading a table that forces its row security on its
//     owner through PostgreSQL's query_to_xml (a query given as text: what it reads no dependency
//     records). Refreshed last, it fails on SQLSTATE 42501, naming nothing;
//  7. a table a team's prepare.sqlAfter seeds (an INSERT of a row, as docs/masking.md suggests it for),
//     whose column's DEFAULT calls only PostgreSQL's own functions: query_to_xml reading a
//     materialized view of the customers' addresses. sqlAfter runs before any view is emptied or
//     refreshed (they hold production's rows then) and with functions of the database's own held off,
//     not PostgreSQL's: the default copies production's addresses into a table no rule names and no
//     check reads. The masking refuses such a default on what it writes (a VOLATILE function, an XML
//     export), not on what sqlAfter writes;
//  8. (passes) the temporary GRANT CREATE of VIEWS_MADE_AGAIN_EMPTY: a materialized view calling a
//     function of the database's own, owned by an application's role that may create nowhere, with a
//     statistics object in a schema of tsdbadmin's where neither it nor tsdbadmin may create: made
//     again, both are let create for as long. The fork is published with every schema's privileges
//     exactly as production's (nobody left with a CREATE it did not have).
import { EVENTS_TABLE } from "../../simulator/production";
import { readThrough as read } from "../support/lab/production";
import {
  PRODUCTION_ADDRESS,
  RULES,
  deepViews,
  dropDeepViews,
  inLargeObjects,
  onMaterialization,
  redTeamLab,
  expectSafe,
  expectPublishedSafe,
} from "../support/lab/redTeam";

jest.setTimeout(300_000);
const { asSuperuser, cleanups, inProduction, outcome, unlinkLargeObjects, withCreateRole } = redTeamLab();

/** PostgreSQL's own functions only: m_deep_<tag>'s statistics (production's until its refresh, in the second wave), as XML, kept in a large object; an oid, never NULL. */
const stashDeepStatistics = (tag: string) =>
  `pg_catalog.lo_from_bytea(0, pg_catalog.convert_to(pg_catalog.query_to_xml('SELECT s.attname, s.most_common_vals::text AS m, s.histogram_bounds::text AS h ` +
  `FROM pg_catalog.pg_stats s WHERE s.schemaname = ''public'' AND s.tablename = ''m_deep_${tag}''', true, false, '')::text, 'UTF8'))`;

/** A continuous aggregate c<tag> of production's events by day (its least address beside), calling nothing of the database's own: refreshed in the first wave. */
const plainAggregate = (tag: string) => `
    CREATE MATERIALIZED VIEW public.c${tag} WITH (timescaledb.continuous) AS
      SELECT time_bucket('1 day', time) AS day, min(customer_email) AS e, count(*) AS n FROM public.${EVENTS_TABLE} GROUP BY 1 WITH NO DATA;
    CALL refresh_continuous_aggregate('public.c${tag}', NULL, NULL);`;

test("a continuous aggregate refreshed in the first wave whose materialization hypertable has a trigger of PostgreSQL's own function, whose WHEN reads statistics not yet made again into a large object, keeps nothing of production's there", async () => {
  cleanups.push(async () => {
    await inProduction(`DROP MATERIALIZED VIEW IF EXISTS public.c191 CASCADE; ${dropDeepViews("191")}`);
    await unlinkLargeObjects();
  });
  await inProduction(`
    ${deepViews("191")}
    ${plainAggregate("191")}
    -- Made after production's refresh; its WHEN is false (an oid is never NULL), so its function (PostgreSQL's) never runs.
    ${onMaterialization(
      "c191",
      `CREATE TRIGGER t191 BEFORE INSERT ON %s FOR EACH ROW WHEN (${stashDeepStatistics("191")} IS NULL) EXECUTE FUNCTION pg_catalog.suppress_redundant_updates_trigger()`,
    )}`);
  await unlinkLargeObjects();
  expect(await inProduction("SELECT count(*) FROM pg_largeobject_metadata")).toBe("0");
  expect(Number(await inProduction("SELECT count(*) FROM public.c191"))).toBeGreaterThan(0);
  const result = await outcome("pr-redteam19-first-wave-trigger", { mask: RULES, pauseJobs: true }, inLargeObjects);
  expectSafe(result, /^Preparing fork .*public\.c191/);
});

test("a continuous aggregate refreshed in the first wave with an index on a cast to a domain whose CHECK reads statistics not yet made again into a large object keeps nothing of production's there", async () => {
  cleanups.push(async () => {
    await inProduction(
      `DROP MATERIALIZED VIEW IF EXISTS public.c192 CASCADE; DROP DOMAIN IF EXISTS public.dom192; ${dropDeepViews("192")}`,
    );
    await unlinkLargeObjects();
  });
  await inProduction(`
    ${deepViews("192")}
    ${plainAggregate("192")}
    -- Its CHECK (PostgreSQL's own functions only) runs on every value cast to it: true, an oid is never NULL.
    CREATE DOMAIN public.dom192 AS text CHECK (${stashDeepStatistics("192")} IS NOT NULL);
    CREATE INDEX i192 ON public.c192 ((e::public.dom192));`);
  // Making the index ran the CHECK in production: what it stashed there goes.
  expect(Number(await asSuperuser("SELECT count(*) FROM pg_largeobject_metadata"))).toBeGreaterThan(0);
  await unlinkLargeObjects();
  expect(await inProduction("SELECT count(*) FROM pg_largeobject_metadata")).toBe("0");
  const result = await outcome("pr-redteam19-first-wave-index-domain", { mask: RULES, pauseJobs: true }, inLargeObjects);
  expectSafe(result, /^Preparing fork .*(public\.c192|the domain public\.dom192's CHECK \w+ runs lo_from_bytea)/);
});

test("a continuous aggregate over a hypertable that forces its row security on its owner is refused before anything is emptied, naming the aggregate, the table and the fix, not by SQLSTATE 42501", async () => {
  cleanups.push(() =>
    inProduction(
      "DROP MATERIALIZED VIEW IF EXISTS public.c193 CASCADE; DROP TABLE IF EXISTS public.h193; DROP FUNCTION IF EXISTS public.same193(text);",
    ),
  );
  await inProduction(`
    CREATE FUNCTION public.same193(text) RETURNS text LANGUAGE sql IMMUTABLE AS $f$ SELECT $1 $f$;
    CREATE TABLE public.h193 (time timestamptz NOT NULL, tier text);
    SELECT create_hypertable('public.h193', 'time');
    INSERT INTO public.h193 VALUES (now() - interval '1 day', 'gold'), (now(), 'silver');
    CREATE MATERIALIZED VIEW public.c193 WITH (timescaledb.continuous) AS
      SELECT time_bucket('1 day', time) AS day, public.same193(tier) AS tier, count(*) AS n FROM public.h193 GROUP BY 1, 2 WITH NO DATA;
    CREATE POLICY p193 ON public.h193 USING (true);
    ALTER TABLE public.h193 ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
    CALL refresh_continuous_aggregate('public.c193', NULL, NULL);`);
  const shape = "SELECT 'rows ' || count(*) FROM public.c193";
  expect(await inProduction(shape)).toBe("rows 2");
  const result = await outcome("pr-redteam19-aggregate-row-security", { mask: RULES, pauseJobs: true }, (uri) => read(uri, shape));
  expect(result).toMatch(/^Preparing fork .*public\.c193.*public\.h193/);
  expect(result).not.toMatch(/SQLSTATE/);
});

test("a materialized view reading, through a view made WITH (security_invoker = t), a table whose row security applies to the view's owner is refused naming them, not by SQLSTATE 42501", async () => {
  await withCreateRole(async () => {
    await inProduction("DROP MATERIALIZED VIEW IF EXISTS public.m194; DROP VIEW IF EXISTS public.v194; DROP TABLE IF EXISTS public.t194;");
    await asSuperuser("DROP OWNED BY app194; DROP ROLE IF EXISTS app194;");
  });
  await inProduction(`
    CREATE ROLE app194 NOLOGIN;
    GRANT app194 TO tsdbadmin;
    CREATE TABLE public.t194 (id integer);
    INSERT INTO public.t194 VALUES (1), (2);
    CREATE POLICY p194 ON public.t194 FOR SELECT TO app194 USING (true);
    ALTER TABLE public.t194 ENABLE ROW LEVEL SECURITY;
    -- "t" is true to PostgreSQL, and kept in reloptions as written.
    CREATE VIEW public.v194 WITH (security_invoker = t) AS SELECT id FROM public.t194;
    GRANT SELECT ON public.t194, public.v194 TO app194;
    GRANT CREATE ON SCHEMA public TO app194;
    SET ROLE app194;
    CREATE MATERIALIZED VIEW public.m194 AS SELECT id FROM public.v194;
    SET ROLE tsdbadmin;
    REVOKE CREATE ON SCHEMA public FROM app194;`);
  const shape =
    "SELECT 'rows ' || count(*) || ', ' || (SELECT array_to_string(reloptions, ',') FROM pg_class WHERE oid = 'public.v194'::regclass) FROM public.m194";
  expect(await inProduction(shape)).toBe("rows 2, security_invoker=t");
  const result = await outcome("pr-redteam19-security-invoker-t", { mask: RULES, pauseJobs: true }, (uri) => read(uri, shape));
  expect(result).toMatch(/^Preparing fork .*public\.m194 reads public\.t194 as app194/);
  expect(result).not.toMatch(/SQLSTATE/);
});

test("a materialized view left unpopulated with statistics, reading one left unpopulated reading a table that forces its row security on its owner, is refused naming them, not by SQLSTATE 42501", async () => {
  cleanups.push(() => inProduction("DROP MATERIALIZED VIEW IF EXISTS public.m195u, public.m195w; DROP TABLE IF EXISTS public.t195;"));
  await inProduction(`
    CREATE TABLE public.t195 (id integer, tier text);
    INSERT INTO public.t195 SELECT id, CASE WHEN id % 2 = 0 THEN 'gold' ELSE 'silver' END FROM public.customers;
    CREATE POLICY p195 ON public.t195 USING (true);
    ALTER TABLE public.t195 ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
    CREATE MATERIALIZED VIEW public.m195w AS SELECT id, tier FROM public.t195;
    CREATE MATERIALIZED VIEW public.m195u AS SELECT tier FROM public.m195w;
    ANALYZE public.m195u;
    REFRESH MATERIALIZED VIEW public.m195u WITH NO DATA;
    REFRESH MATERIALIZED VIEW public.m195w WITH NO DATA;`);
  expect(
    await inProduction(
      "SELECT ((SELECT count(*) FROM pg_stats WHERE schemaname = 'public' AND tablename = 'm195u') > 0 AND (SELECT count(*) FROM pg_stats WHERE schemaname = 'public' AND tablename = 'm195w') = 0)::text",
    ),
  ).toBe("true");
  const result = await outcome("pr-redteam19-unpopulated-row-security", { mask: RULES, pauseJobs: true }, (uri) =>
    read(uri, "SELECT 'populated ' || relispopulated::text FROM pg_class WHERE oid = 'public.m195u'::regclass"),
  );
  expect(result).toMatch(/^Preparing fork .*public\.m195[uw].*public\.t195/);
  expect(result).not.toMatch(/SQLSTATE/);
});

test("a materialized view reading a table that forces its row security on its owner through query_to_xml is refused naming them, not by SQLSTATE 42501", async () => {
  cleanups.push(() => inProduction("DROP MATERIALIZED VIEW IF EXISTS public.m196; DROP TABLE IF EXISTS public.t196;"));
  await inProduction(`
    CREATE TABLE public.t196 (id integer);
    INSERT INTO public.t196 VALUES (1), (2);
    CREATE POLICY p196 ON public.t196 USING (true);
    ALTER TABLE public.t196 ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
    CREATE MATERIALIZED VIEW public.m196 AS SELECT query_to_xml('SELECT id FROM public.t196', true, false, '')::text AS x;`);
  const shape = "SELECT 'rows ' || count(*) FROM public.m196";
  expect(await inProduction(shape)).toBe("rows 1");
  const result = await outcome("pr-redteam19-row-security-through-text", { mask: RULES, pauseJobs: true }, (uri) => read(uri, shape));
  expect(result).toMatch(/^Preparing fork .*public\.m196.*public\.t196/);
  expect(result).not.toMatch(/SQLSTATE/);
});

test("a table prepare.sqlAfter seeds, whose column's DEFAULT reads a materialized view through query_to_xml, keeps nothing of production's there", async () => {
  cleanups.push(() => inProduction(`DROP TABLE IF EXISTS public.flags197; ${dropDeepViews("197")}`));
  await inProduction(`
    ${deepViews("197")}
    CREATE TABLE public.flags197 (name text PRIMARY KEY,
      note text DEFAULT pg_catalog.query_to_xml('SELECT email FROM public.m_base_197', true, false, '')::text);`);
  expect(await inProduction(`SELECT count(*) FROM public.m_base_197 WHERE email LIKE '${PRODUCTION_ADDRESS}'`)).not.toBe("0");
  const result = await outcome(
    "pr-redteam19-seed-default",
    { mask: RULES, pauseJobs: true, sqlAfter: ["INSERT INTO public.flags197 (name) VALUES ('new-checkout')"] },
    (uri) =>
      read(
        uri,
        `SELECT 'copied: ' || count(*) FILTER (WHERE lower(note) LIKE '${PRODUCTION_ADDRESS}') || ' of ' || count(*) FROM public.flags197`,
      ),
  );
  expectPublishedSafe(result);
});

test("a materialized view made again with no data, whose owner and tsdbadmin are let CREATE for as long, leaves every schema's privileges as production's", async () => {
  await withCreateRole(async () => {
    await inProduction(
      "DROP MATERIALIZED VIEW IF EXISTS public.m198; DROP FUNCTION IF EXISTS public.same198(text); DROP SCHEMA IF EXISTS rep198 CASCADE;",
    );
    await asSuperuser("DROP OWNED BY app198; DROP ROLE IF EXISTS app198;");
  });
  await inProduction(`
    CREATE ROLE app198 NOLOGIN;
    GRANT app198 TO tsdbadmin;
    GRANT SELECT ON public.customers TO app198;
    CREATE FUNCTION public.same198(text) RETURNS text LANGUAGE sql IMMUTABLE AS $f$ SELECT $1 $f$;
    CREATE SCHEMA rep198;
    GRANT USAGE, CREATE ON SCHEMA rep198 TO app198;
    GRANT CREATE ON SCHEMA public TO app198;
    SET ROLE app198;
    CREATE MATERIALIZED VIEW public.m198 AS SELECT id, public.same198(email) AS v FROM public.customers;
    CREATE STATISTICS rep198.st198 (ndistinct) ON id, v FROM public.m198;
    ANALYZE public.m198;
    SET ROLE tsdbadmin;
    REVOKE CREATE ON SCHEMA public FROM app198;
    REVOKE CREATE ON SCHEMA rep198 FROM app198;
    REVOKE CREATE ON SCHEMA rep198 FROM tsdbadmin;`);
  const shape =
    "SELECT string_agg(n.nspname || ' ' || coalesce(n.nspacl::text, 'default'), '; ' ORDER BY n.nspname) || ', app198 creates in public ' || " +
    "has_schema_privilege('app198', 'public', 'CREATE')::text || ', statistics ' || (SELECT count(*) FROM pg_statistic_ext WHERE stxname = 'st198') || " +
    "', populated ' || (SELECT relispopulated FROM pg_class WHERE oid = 'public.m198'::regclass)::text " +
    "FROM pg_namespace n WHERE n.nspname IN ('public', 'rep198')";
  const before = await inProduction(shape);
  expect(before).toMatch(/app198 creates in public false, statistics 1, populated true$/);
  const result = await outcome("pr-redteam19-create-lent", { mask: RULES, pauseJobs: true }, (uri) => read(uri, shape));
  expect(result).toBe(`published, ${before}`);
});
