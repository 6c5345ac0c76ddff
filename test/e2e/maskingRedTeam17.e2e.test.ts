// A seventeenth red team's ways through a masked fork's preparation (docs/masking.md), each read
// through the fork's published URL as its holder reads it, each asserting the safe outcome (so each
// fails on the code it was written against): the fork published with nothing of production's masked
// values readable, or refused naming what it cannot make safe and the fix; a harmless production
// published, its objects as they were. Each leaves production as it found it.
//  1. a continuous aggregate whose query calls a function of the database's own (refreshed last) and
//     groups by a column of a domain of tsdbadmin's whose DEFAULT calls only PostgreSQL's own
//     functions: query_to_xml reading pg_stats of the aggregate's materialization hypertable, kept in
//     a large object by lo_from_bytea. Emptied, the aggregate has its hypertable's statistics made
//     again from a placeholder row (restatisticizeEmptied), written into a table of its columns with
//     its time bucket alone: the domain's DEFAULT fills the column left out, reading the statistics of
//     the whole, production's until then, into a large object readable through the URL;
//  2. likewise an aggregate whose materialization hypertable has a row trigger of tsdbadmin's whose
//     WHEN calls only PostgreSQL's own functions (query_to_xml of the hypertable's and its chunks'
//     statistics, kept in a large object; it is false, so the trigger's function, held off, never
//     runs): nothing it sees while the preparation writes the aggregate may be production's;
//  3. a harmless production: such an aggregate grouping by a column of a NOT NULL domain. The
//     placeholder row's NULL there fails (SQLSTATE 23502), naming no fix;
//  4. a harmless production: such an aggregate whose materialization hypertable has a second (space)
//     dimension (add_dimension lets it while empty): the placeholder, attached as a chunk by its time
//     slice alone, is refused by attach_chunk ("invalid number of hypercube dimensions"), naming no fix;
//  5. a harmless production: a materialized view calling a function of the database's own, owned by an
//     application's role (tsdbadmin a member of it) that may no longer create in public, with an
//     index: made again with no data (remakeEmpty), it must come back with its owner and its index;
//  6. likewise, with an extended statistics object of the owner's in another schema (tsdbadmin's), where
//     neither tsdbadmin nor the owner may create any more: made again, CREATE STATISTICS there is
//     refused (SQLSTATE 42501), every time;
//  7. a materialized view left unpopulated with the statistics of when it was populated (production's
//     addresses), reading a continuous aggregate refreshed last: its statistics are made again while
//     the aggregate is emptied (restatisticizeUnpopulated populates it from none of its rows, and an
//     ANALYZE of an empty view keeps the old), or not at all;
//  8. a materialized view (refreshed: it reads a masked table) joining a table of tsdbadmin's that
//     forces its row security on itself, with a policy letting tsdbadmin read. The forcing is lifted
//     only in the masking's transaction: the refresh, after it, runs with row_security off and
//     PostgreSQL refused it (SQLSTATE 42501), naming nothing. With it on, a policy's expressions would
//     run in the refresh where no check looks (round eighteen's reads pg_stats): refused up front,
//     naming the table and the fix;
//  9. a chain: U, unpopulated with production's statistics, reads W, unpopulated with none, which reads
//     P, a materialized view calling a function of the database's own (made again with no data, and
//     refreshed last). U, found to have statistics, has them made again by populating W first, which
//     reads P, still unpopulated (SQLSTATE 55000); or its statistics are left production's;
// 10. a harmless production: a materialized view calling a function of the database's own whose columns'
//     storage and compression were set (ALTER COLUMN … SET STORAGE / SET COMPRESSION): made again with
//     no data, it must keep them.
import { readThrough as read } from "../support/lab/production";
import {
  PRODUCTION_ADDRESS,
  RULES,
  inLargeObjects,
  inMaterialization,
  onMaterialization,
  opaqueAggregate,
  redTeamLab,
  stashStatisticsOf,
} from "../support/lab/redTeam";

jest.setTimeout(300_000);
const { asSuperuser, cleanups, inProduction, outcome, unlinkLargeObjects } = redTeamLab();

/** How many of the values in pg_stats of c<view>'s materialization hypertable are production's addresses, read in production. */
const productionInMaterialization = (view: string) => inProduction(inMaterialization(view));

/** A materialized view's statistics: how many of their values are production's addresses. */
const productionStatisticsOf = (view: string) =>
  `(SELECT count(*) FROM pg_stats s, unnest(coalesce(s.most_common_vals::text::text[], '{}') || coalesce(s.histogram_bounds::text::text[], '{}')) v
     WHERE s.schemaname = 'public' AND s.tablename = '${view}' AND lower(v) LIKE '${PRODUCTION_ADDRESS}')`;

test("a continuous aggregate refreshed last, grouping by a column of a domain whose DEFAULT reads its materialization hypertable's statistics into a large object, is refused naming the domain", async () => {
  cleanups.push(async () => {
    await inProduction(
      "DROP MATERIALIZED VIEW IF EXISTS public.c171 CASCADE; DROP FUNCTION IF EXISTS public.same171(text); DROP DOMAIN IF EXISTS public.dom171;",
    );
    await unlinkLargeObjects();
  });
  await unlinkLargeObjects();
  await inProduction(`
    -- An address, whose DEFAULT (never used: a refresh writes every column) keeps the aggregate's statistics.
    CREATE DOMAIN public.dom171 AS text DEFAULT (${stashStatisticsOf("c171")}::text);
    ${opaqueAggregate("171", "customer_email::public.dom171")}`);
  // Production's addresses in the statistics of its whole; nothing stashed in production.
  expect(Number(await productionInMaterialization("c171"))).toBeGreaterThan(0);
  expect(await inProduction("SELECT count(*) FROM pg_largeobject_metadata")).toBe("0");
  expect(
    await inProduction("SELECT format_type(atttypid, NULL) FROM pg_attribute WHERE attrelid = 'public.c171'::regclass AND attname = 'e'"),
  ).toBe("dom171");
  const result = await outcome("pr-redteam17-domain-default", { mask: RULES, pauseJobs: true }, inLargeObjects);
  expect(result).toMatch(/^Preparing fork .*domain/);
  expect(result).not.toMatch(/SQLSTATE/);
});

test("a continuous aggregate refreshed last whose materialization hypertable has a trigger whose WHEN reads its statistics into a large object keeps nothing of production's there", async () => {
  cleanups.push(async () => {
    await inProduction(
      "DROP MATERIALIZED VIEW IF EXISTS public.c172 CASCADE; DROP FUNCTION IF EXISTS public.same172(text), public.nothing172();",
    );
    await unlinkLargeObjects();
  });
  await inProduction(`
    ${opaqueAggregate("172", "customer_email")}
    CREATE FUNCTION public.nothing172() RETURNS trigger LANGUAGE plpgsql AS $f$ BEGIN RETURN NEW; END $f$;
    -- Made after production's refresh: its WHEN is false (an oid is never NULL), its function never runs.
    ${onMaterialization("c172", `CREATE TRIGGER t172 BEFORE INSERT ON %s FOR EACH ROW WHEN (${stashStatisticsOf("c172")} IS NULL) EXECUTE FUNCTION public.nothing172()`)}`);
  await unlinkLargeObjects();
  expect(Number(await productionInMaterialization("c172"))).toBeGreaterThan(0);
  expect(await inProduction("SELECT count(*) FROM pg_largeobject_metadata")).toBe("0");
  // The trigger is there, and its WHEN stashes what it sees.
  expect(Number(await inProduction("SELECT count(*) FROM pg_trigger WHERE tgname = 't172'"))).toBeGreaterThan(0);
  const result = await outcome("pr-redteam17-materialization-trigger", { mask: RULES, pauseJobs: true }, inLargeObjects);
  expect(result).toMatch(/^published, copied: 0 of \d+$/);
});

test("a continuous aggregate refreshed last, grouping by a column of a NOT NULL domain, is refused naming the domain and a fix, not by an error of PostgreSQL's", async () => {
  cleanups.push(() =>
    inProduction(
      "DROP MATERIALIZED VIEW IF EXISTS public.c173 CASCADE; DROP FUNCTION IF EXISTS public.same173(text); DROP DOMAIN IF EXISTS public.dom173;",
    ),
  );
  await inProduction(`
    CREATE DOMAIN public.dom173 AS text NOT NULL;
    ${opaqueAggregate("173", "customer_email::public.dom173")}`);
  expect(Number(await productionInMaterialization("c173"))).toBeGreaterThan(0);
  expect(Number(await inProduction("SELECT count(*) FROM public.c173"))).toBeGreaterThan(0);
  const result = await outcome("pr-redteam17-domain-not-null", { mask: RULES, pauseJobs: true }, (uri) =>
    read(uri, "SELECT 'rows ' || count(*) FROM public.c173"),
  );
  expect(result).toMatch(/^Preparing fork .*domain/);
  expect(result).not.toMatch(/SQLSTATE/);
});

test("a continuous aggregate refreshed last whose materialization hypertable has a second dimension is refused naming its dimensions, not by an error of TimescaleDB's", async () => {
  cleanups.push(() => inProduction("DROP MATERIALIZED VIEW IF EXISTS public.c174 CASCADE; DROP FUNCTION IF EXISTS public.same174(text);"));
  await inProduction(opaqueAggregate("174", "customer_email", onMaterialization("c174", "SELECT add_dimension(%L, by_hash('e', 2))")));
  expect(
    await inProduction(`SELECT count(*) FROM timescaledb_information.continuous_aggregates a JOIN timescaledb_information.dimensions d
      ON d.hypertable_schema = a.materialization_hypertable_schema AND d.hypertable_name = a.materialization_hypertable_name WHERE a.view_name = 'c174'`),
  ).toBe("2");
  expect(Number(await productionInMaterialization("c174"))).toBeGreaterThan(0);
  const result = await outcome("pr-redteam17-second-dimension", { mask: RULES, pauseJobs: true }, (uri) =>
    read(uri, "SELECT 'rows ' || count(*) FROM public.c174"),
  );
  expect(result).toMatch(/^Preparing fork .*dimension/);
  expect(result).not.toMatch(/SQLSTATE/);
});

/** SQL run as a superuser: an application's role app<tag> (tsdbadmin a member of it) that may read customers, and once made public.m<tag>, calling public.same<tag>, with `more` (as app<tag>), then may create in public no more. */
const applicationsView = (tag: string, more = "") => `
    CREATE ROLE app${tag} NOLOGIN;
    GRANT app${tag} TO tsdbadmin;
    GRANT SELECT ON public.customers TO app${tag};
    SET ROLE tsdbadmin;
    CREATE FUNCTION public.same${tag}(text) RETURNS text LANGUAGE sql IMMUTABLE AS $f$ SELECT $1 $f$;
    GRANT CREATE ON SCHEMA public TO app${tag};
    SET ROLE app${tag};
    CREATE MATERIALIZED VIEW public.m${tag} AS SELECT id, public.same${tag}(email) AS v FROM public.customers;
    ${more}
    SET ROLE tsdbadmin;
    REVOKE CREATE ON SCHEMA public FROM app${tag};`;

test("a materialized view calling a function of the database's own, owned by an application's role that may no longer create in public, with an index, is published as it was: its owner's, populated, its index there", async () => {
  cleanups.push(async () => {
    await asSuperuser("DROP MATERIALIZED VIEW IF EXISTS public.m175; DROP FUNCTION IF EXISTS public.same175(text);");
    await asSuperuser("DROP OWNED BY app175; DROP ROLE IF EXISTS app175;");
  });
  await asSuperuser(applicationsView("175", "CREATE UNIQUE INDEX i175 ON public.m175 (id);"));
  const shape =
    "SELECT 'owner ' || pg_get_userbyid(c.relowner) || ', populated ' || c.relispopulated::text || ', index ' || " +
    "coalesce((SELECT string_agg(pg_get_indexdef(i.indexrelid), '; ') FROM pg_index i WHERE i.indrelid = c.oid), 'none') " +
    "FROM pg_class c WHERE c.oid = 'public.m175'::regclass";
  const before = await inProduction(shape);
  expect(before).toMatch(/^owner app175, populated true, index CREATE UNIQUE INDEX i175 ON /);
  expect(await inProduction("SELECT has_schema_privilege('app175', 'public', 'CREATE')::text")).toBe("false");
  const result = await outcome("pr-redteam17-owner-index", { mask: RULES, pauseJobs: true }, (uri) => read(uri, shape));
  expect(result).toBe(`published, ${before}`);
});

test("a materialized view calling a function of the database's own, with an extended statistics object in a schema where neither tsdbadmin nor its owner may create any more, is published with it", async () => {
  cleanups.push(async () => {
    await asSuperuser(
      "DROP MATERIALIZED VIEW IF EXISTS public.m176; DROP FUNCTION IF EXISTS public.same176(text); DROP SCHEMA IF EXISTS rep176 CASCADE;",
    );
    await asSuperuser("DROP OWNED BY app176; DROP ROLE IF EXISTS app176;");
  });
  await asSuperuser(`
    SET ROLE tsdbadmin;
    CREATE SCHEMA rep176;
    RESET ROLE;
    ${applicationsView(
      "176",
      `SET ROLE tsdbadmin;
    GRANT USAGE, CREATE ON SCHEMA rep176 TO app176;
    SET ROLE app176;
    CREATE STATISTICS rep176.st176 (ndistinct) ON id, v FROM public.m176;
    ANALYZE public.m176;`,
    )}
    -- Its reports' schema made read-only: for its owner too.
    REVOKE CREATE ON SCHEMA rep176 FROM app176;
    REVOKE CREATE ON SCHEMA rep176 FROM tsdbadmin;`);
  expect(
    await inProduction(
      "SELECT has_schema_privilege('rep176', 'CREATE')::text || ' ' || has_schema_privilege('app176', 'rep176', 'CREATE')::text || ' ' || has_schema_privilege('app176', 'public', 'CREATE')::text",
    ),
  ).toBe("false false false");
  const shape =
    "SELECT 'statistics ' || coalesce((SELECT string_agg(format('%s.%s of %s owned by %s', stxnamespace::regnamespace, stxname, stxrelid::regclass, pg_get_userbyid(stxowner)), '; ') " +
    "FROM pg_statistic_ext WHERE stxname = 'st176'), 'none') || ', populated ' || (SELECT relispopulated FROM pg_class WHERE oid = 'public.m176'::regclass)::text";
  expect(await inProduction(shape)).toBe("statistics rep176.st176 of m176 owned by app176, populated true");
  const result = await outcome("pr-redteam17-statistics-elsewhere", { mask: RULES, pauseJobs: true }, (uri) => read(uri, shape));
  expect(result).toBe("published, statistics rep176.st176 of m176 owned by app176, populated true");
});

test("a materialized view left unpopulated with production's statistics, reading a continuous aggregate refreshed last, keeps none of production's values in its statistics", async () => {
  cleanups.push(() =>
    inProduction(
      "DROP MATERIALIZED VIEW IF EXISTS public.m177u; DROP MATERIALIZED VIEW IF EXISTS public.c177 CASCADE; DROP FUNCTION IF EXISTS public.same177(text);",
    ),
  );
  await inProduction(`
    ${opaqueAggregate("177", "customer_email")}
    -- A report over it, populated once, analysed, then emptied until it is wanted again: its statistics stay.
    CREATE MATERIALIZED VIEW public.m177u AS SELECT e FROM public.c177;
    ANALYZE public.m177u;
    REFRESH MATERIALIZED VIEW public.m177u WITH NO DATA;`);
  expect(Number(await inProduction(`SELECT ${productionStatisticsOf("m177u")}`))).toBeGreaterThan(0);
  expect(await inProduction("SELECT relispopulated::text FROM pg_class WHERE oid = 'public.m177u'::regclass")).toBe("false");
  const result = await outcome("pr-redteam17-unpopulated-over-aggregate", { mask: RULES, pauseJobs: true }, (uri) =>
    read(uri, `SELECT 'm177u statistics holding production ' || ${productionStatisticsOf("m177u")}`),
  );
  expect(result).toBe("published, m177u statistics holding production 0");
});

test("a materialized view reading a masked table and a table of tsdbadmin's that forces its row security on itself is refused before anything is refreshed, naming the table and the fix: its refresh would run no policy (row security off), and fail", async () => {
  cleanups.push(() => inProduction("DROP MATERIALIZED VIEW IF EXISTS public.m178; DROP TABLE IF EXISTS public.tiers178;"));
  await inProduction(`
    CREATE TABLE public.tiers178 (id integer PRIMARY KEY, tier text NOT NULL);
    INSERT INTO public.tiers178 SELECT id, CASE WHEN id % 2 = 0 THEN 'gold' ELSE 'silver' END FROM public.customers;
    CREATE POLICY tiers178_admin ON public.tiers178 FOR SELECT TO tsdbadmin USING (true);
    ALTER TABLE public.tiers178 ENABLE ROW LEVEL SECURITY;
    ALTER TABLE public.tiers178 FORCE ROW LEVEL SECURITY;
    CREATE MATERIALIZED VIEW public.m178 AS SELECT c.email, t.tier FROM public.customers c JOIN public.tiers178 t ON t.id = c.id;`);
  const shape =
    `SELECT 'rows ' || count(*) || ', production ' || count(*) FILTER (WHERE email LIKE '${PRODUCTION_ADDRESS}') || ` +
    "', forced ' || (SELECT relforcerowsecurity FROM pg_class WHERE oid = 'public.tiers178'::regclass)::text FROM public.m178";
  expect(await inProduction(shape)).toBe("rows 100, production 100, forced true");
  const result = await outcome("pr-redteam17-forced-row-security-read", { mask: RULES, pauseJobs: true }, (uri) => read(uri, shape));
  expect(result).toMatch(
    /^Preparing fork .*public\.m178 reads public\.tiers178 as tsdbadmin, whose row security applies to it \(forced on its owner\).*NO FORCE ROW LEVEL SECURITY/,
  );
  expect(result).not.toMatch(/refreshing the materialized view|SQLSTATE/);
});

test("a materialized view left unpopulated with production's statistics, reading one left unpopulated with none, reading one calling a function of the database's own, keeps none of production's values in its statistics", async () => {
  cleanups.push(() =>
    inProduction(
      "DROP MATERIALIZED VIEW IF EXISTS public.m179u, public.m179w, public.m179p; DROP FUNCTION IF EXISTS public.same179(text);",
    ),
  );
  await inProduction(`
    CREATE FUNCTION public.same179(text) RETURNS text LANGUAGE sql IMMUTABLE AS $f$ SELECT $1 $f$;
    CREATE MATERIALIZED VIEW public.m179p AS SELECT id, public.same179(email) AS v FROM public.customers;
    CREATE MATERIALIZED VIEW public.m179w AS SELECT v FROM public.m179p;
    CREATE MATERIALIZED VIEW public.m179u AS SELECT v FROM public.m179w;
    -- The report at the end analysed, then it and the one between emptied until they are wanted again.
    ANALYZE public.m179u;
    REFRESH MATERIALIZED VIEW public.m179u WITH NO DATA;
    REFRESH MATERIALIZED VIEW public.m179w WITH NO DATA;`);
  expect(Number(await inProduction(`SELECT ${productionStatisticsOf("m179u")}`))).toBeGreaterThan(0);
  expect(
    await inProduction(
      "SELECT (SELECT count(*) FROM pg_stats WHERE schemaname = 'public' AND tablename = 'm179w') || ' ' || " +
        "(SELECT string_agg(relname || ' ' || relispopulated::text, ', ' ORDER BY relname) FROM pg_class WHERE relname IN ('m179p', 'm179w', 'm179u'))",
    ),
  ).toBe("0 m179p true, m179u false, m179w false");
  const result = await outcome("pr-redteam17-unpopulated-chain", { mask: RULES, pauseJobs: true }, (uri) =>
    read(
      uri,
      `SELECT 'm179u statistics holding production ' || ${productionStatisticsOf("m179u")} || ', m179p populated ' || ` +
        "(SELECT relispopulated FROM pg_class WHERE oid = 'public.m179p'::regclass)::text",
    ),
  );
  expect(result).toBe("published, m179u statistics holding production 0, m179p populated true");
});

test("a materialized view calling a function of the database's own whose columns' storage and compression were set is published with them as they were", async () => {
  cleanups.push(() => inProduction("DROP MATERIALIZED VIEW IF EXISTS public.m1710; DROP FUNCTION IF EXISTS public.same1710(text);"));
  await inProduction(`
    CREATE FUNCTION public.same1710(text) RETURNS text LANGUAGE sql IMMUTABLE AS $f$ SELECT $1 $f$;
    CREATE MATERIALIZED VIEW public.m1710 AS SELECT id, public.same1710(email) AS v, full_name AS w FROM public.customers;
    ALTER MATERIALIZED VIEW public.m1710 ALTER COLUMN v SET STORAGE EXTERNAL, ALTER COLUMN v SET COMPRESSION lz4, ALTER COLUMN w SET STORAGE MAIN;`);
  const shape =
    "SELECT string_agg(format('%s %s/%s', attname, attstorage, attcompression), ', ' ORDER BY attnum) || ', populated ' || " +
    "(SELECT relispopulated FROM pg_class WHERE oid = 'public.m1710'::regclass)::text FROM pg_attribute WHERE attrelid = 'public.m1710'::regclass AND attnum > 0 AND NOT attisdropped";
  expect(await inProduction(shape)).toBe("id p/, v e/l, w m/, populated true");
  const result = await outcome("pr-redteam17-storage", { mask: RULES, pauseJobs: true }, (uri) => read(uri, shape));
  expect(result).toBe("published, id p/, v e/l, w m/, populated true");
});
