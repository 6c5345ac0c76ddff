// A fifteenth red team's ways through a masked fork's preparation (docs/masking.md), each read through
// the fork's published URL as its holder reads it, each asserting the safe outcome (so each fails
// on the code it was written against): the fork published with nothing of production's masked
// values readable, or refused naming a fix that works. Each leaves production as it found it.
//  1. a materialized view whose query calls a function of the database's own is refreshed last,
//     once those functions are given back; every view was emptied before (REFRESH … WITH NO DATA),
//     which keeps its statistics: production's. The function reads pg_stats while its view is
//     refreshed and returns the statistics of two such views (its own among them), reversed:
//     checkDerived compares what it reads with the sampled values as they are, so the reversed
//     addresses pass and stay in the view, readable through the URL;
//  2. a view left unpopulated in production, with the statistics of when it was populated, whose
//     query calls a function of the database's own, has its statistics made again only after the
//     views calling such functions are refreshed (restatisticizeUnpopulated, after giveBackRoutines):
//     an opaque view's function reads them first;
//  3. an application's table (of a role tsdbadmin is no member of; CREATEROLE, so the preparation
//     lends itself the membership) whose owner forces its row security on itself: once lent, the
//     checks' pg_stats hides the table's statistics from the owner tsdbadmin acts as, and HIDDEN_COLUMNS
//     refused it, naming a fix (ALTER TABLE … NO FORCE ROW LEVEL SECURITY in prepare.sql) that fails
//     there: prepare.sql runs before anything is lent;
//  4. a continuous aggregate whose query calls a function of the database's own is emptied (its
//     chunks dropped) and refreshed last; its materialization hypertable keeps the statistics of its
//     whole through ANALYZE with no chunk under it (production's, from a database-wide ANALYZE), and
//     the function reads them, reversed, while the aggregate is refreshed: checkDerived compares
//     values as they are. Compressed too, but for its newest chunks, as a compression policy leaves it.
import { readThrough as read } from "../support/lab/production";
import { PRODUCTION_ADDRESS, RULES, asApplication, redTeamLab } from "../support/lab/redTeam";

jest.setTimeout(300_000);
const { asSuperuser, cleanups, inProduction, outcome, withCreateRole } = redTeamLab();

/** A function of tsdbadmin's returning, reversed, what pg_stats holds of these views: production's until each is made again. */
const reversedStatisticsOf = (fn: string, views: string[]) => `
    CREATE FUNCTION public.${fn}() RETURNS SETOF text LANGUAGE sql VOLATILE AS $f$
      SELECT pg_catalog.reverse(v) FROM pg_catalog.pg_stats s,
             pg_catalog.unnest(coalesce(s.most_common_vals::text::text[], '{}') || coalesce(s.histogram_bounds::text::text[], '{}')) v
       WHERE s.schemaname = 'public' AND s.tablename IN (${views.map((v) => `'${v}'`).join(", ")}) $f$;`;
/** How many reversed production addresses a view holds, through a URL. */
const reversedIn = (view: string) => `(SELECT count(*) FROM public.${view} WHERE lower(reverse(v)) LIKE '${PRODUCTION_ADDRESS}')`;

test("two materialized views whose queries call a function of the database's own reading their statistics (production's while they wait to be refreshed) hold nothing of production's, reversed or not", async () => {
  cleanups.push(() =>
    inProduction("DROP MATERIALIZED VIEW IF EXISTS public.m151a, public.m151b; DROP FUNCTION IF EXISTS public.stats151();"),
  );
  await inProduction(`
    ${reversedStatisticsOf("stats151", ["m151a", "m151b"])}
    -- Two mailing lists, each with what the function returns.
    CREATE MATERIALIZED VIEW public.m151a AS SELECT email AS v FROM public.customers UNION ALL SELECT * FROM public.stats151();
    CREATE MATERIALIZED VIEW public.m151b AS SELECT email AS v FROM public.customers UNION ALL SELECT * FROM public.stats151();
    ANALYZE public.m151a, public.m151b;`);
  const result = await outcome("pr-redteam15-opaque-views", { mask: RULES, pauseJobs: true }, (uri) =>
    read(uri, `SELECT 'reversed ' || ${reversedIn("m151a")} || ' and ' || ${reversedIn("m151b")}`),
  );
  expect(result).toBe("published, reversed 0 and 0");
});

test("a materialized view left unpopulated, whose query calls a function of the database's own, keeps no statistics of production's for another such view's function to read while it is refreshed", async () => {
  cleanups.push(() =>
    inProduction(
      "DROP MATERIALIZED VIEW IF EXISTS public.m152r, public.m152u; DROP FUNCTION IF EXISTS public.stats152(), public.same152(text);",
    ),
  );
  await inProduction(`
    CREATE FUNCTION public.same152(text) RETURNS text LANGUAGE sql IMMUTABLE AS $f$ SELECT $1 $f$;
    -- Populated once, analysed, then emptied in production: its statistics stay.
    CREATE MATERIALIZED VIEW public.m152u AS SELECT public.same152(email) AS v FROM public.customers;
    ANALYZE public.m152u;
    REFRESH MATERIALIZED VIEW public.m152u WITH NO DATA;
    ${reversedStatisticsOf("stats152", ["m152u"])}
    CREATE MATERIALIZED VIEW public.m152r AS SELECT * FROM public.stats152() v;`);
  expect(Number(await inProduction("SELECT count(*) FROM public.m152r"))).toBeGreaterThan(0);
  const result = await outcome("pr-redteam15-unpopulated-opaque", { mask: RULES, pauseJobs: true }, (uri) =>
    read(
      uri,
      `SELECT 'reversed ' || ${reversedIn("m152r")} || ', unpopulated ' || ` +
        "(SELECT NOT relispopulated FROM pg_class WHERE oid = 'public.m152u'::regclass)::text",
    ),
  );
  expect(result).toBe("published, reversed 0, unpopulated true");
});

test("an application's masked table (of a role tsdbadmin is no member of; CREATEROLE) whose owner forces its row security on itself is masked: published with its policy and its forcing as they were, nothing of production's in its rows or statistics", async () => {
  await withCreateRole(async () => {
    await asSuperuser("DROP OWNED BY app153; DROP ROLE IF EXISTS app153;");
  });
  await asSuperuser(`${asApplication(
    "app153",
    `CREATE TABLE public.people153 (id int, email text);
    INSERT INTO public.people153 SELECT id, email FROM public.customers;
    CREATE POLICY people153_all ON public.people153 USING (true);
    ALTER TABLE public.people153 ENABLE ROW LEVEL SECURITY;
    ALTER TABLE public.people153 FORCE ROW LEVEL SECURITY;
    ANALYZE public.people153;`,
  )}
    GRANT SELECT, UPDATE ON public.people153 TO tsdbadmin;`);
  expect(await inProduction("SELECT pg_has_role('app153', 'MEMBER')::text")).toBe("false");
  const rules = [...RULES, { table: "people153", column: "email", with: "email" }];
  const result = await outcome("pr-redteam15-forced-rls", { mask: rules, pauseJobs: true }, async (uri) => {
    // The URL's holder grants itself the owner (CREATEROLE), lifts the forcing, and reads the rows and the statistics.
    const lines = await read(
      uri,
      `GRANT app153 TO tsdbadmin; SET ROLE app153;
       SELECT 'policies ' || (SELECT count(*) FROM pg_policies WHERE tablename = 'people153') ||
              ', forced ' || (SELECT relforcerowsecurity FROM pg_class WHERE oid = 'public.people153'::regclass)::text;
       ALTER TABLE public.people153 NO FORCE ROW LEVEL SECURITY;
       SELECT 'rows ' || (SELECT count(*) FROM public.people153 WHERE email LIKE '${PRODUCTION_ADDRESS}') ||
              ', statistics ' || (SELECT count(*) FROM pg_stats s,
                                         unnest(coalesce(s.most_common_vals::text::text[], '{}') || coalesce(s.histogram_bounds::text::text[], '{}')) v
                                   WHERE s.tablename = 'people153' AND lower(v) LIKE '${PRODUCTION_ADDRESS}')`,
    );
    return lines
      .split("\n")
      .filter((l) => /^(policies|rows) /.test(l))
      .join(", ");
  });
  expect(result).toBe("published, policies 1, forced true, rows 0, statistics 0");
});

/**
 * A continuous aggregate of tsdbadmin's events by the output of a function of its own (IMMUTABLE, as
 * TimescaleDB asks) that returns, reversed, what pg_stats holds of the aggregate's materialization
 * hypertable (and of the hypertable of its compressed rows, should it hold any), else its argument;
 * compressed, all but its newest chunks are.
 */
const statisticsReadingAggregate = (tag: string, compressed: boolean) => `
    CREATE TABLE public.ev${tag} (time timestamptz NOT NULL, email text);
    SELECT create_hypertable('public.ev${tag}', 'time', chunk_time_interval => interval '1 hour');
    INSERT INTO public.ev${tag} SELECT now() - c.id * interval '1 hour', c.email FROM public.customers c;
    CREATE FUNCTION public.f${tag}(text) RETURNS text LANGUAGE plpgsql IMMUTABLE AS $f$
      DECLARE s text;
      BEGIN
        SELECT pg_catalog.string_agg(pg_catalog.reverse(coalesce(st.most_common_vals::text, '') || coalesce(st.histogram_bounds::text, '')), ' ') INTO s
          FROM _timescaledb_catalog.continuous_agg ca JOIN _timescaledb_catalog.hypertable m ON m.id = ca.mat_hypertable_id
          LEFT JOIN _timescaledb_catalog.hypertable ch ON ch.id = m.compressed_hypertable_id
          JOIN pg_catalog.pg_stats st ON st.tablename IN (m.table_name, ch.table_name)
         WHERE ca.user_view_name = 'a${tag}' AND st.attname = 'v';
        RETURN coalesce(s, $1);
      END $f$;
    CREATE MATERIALIZED VIEW public.a${tag} WITH (timescaledb.continuous) AS
      SELECT time_bucket('1 day', time) AS bucket, public.f${tag}(email) AS v, count(*) AS n FROM public.ev${tag} GROUP BY 1, 2 WITH DATA;
    ${compressed ? `ALTER MATERIALIZED VIEW public.a${tag} SET (timescaledb.compress = true); SELECT count(compress_chunk(c)) FROM show_chunks('public.a${tag}', older_than => now() - interval '1 day') c;` : ""}
    -- As a database-wide ANALYZE does: the materialization hypertable's statistics of its whole (of its chunks not compressed).
    DO $d$ DECLARE t text; BEGIN
      FOR t IN SELECT format('%I.%I', h.schema_name, h.table_name) FROM _timescaledb_catalog.continuous_agg ca
                 JOIN _timescaledb_catalog.hypertable m ON m.id = ca.mat_hypertable_id
                 JOIN _timescaledb_catalog.hypertable h ON h.id IN (m.id, m.compressed_hypertable_id) WHERE ca.user_view_name = 'a${tag}'
      LOOP EXECUTE 'ANALYZE ' || t; END LOOP; END $d$;`;

test.each([
  ["154", false],
  ["155", true],
])(
  "a continuous aggregate (%s; compressed: %s) by a function of the database's own reading its materialization hypertable's statistics of its whole (production's after its chunks are dropped) holds nothing of production's, reversed or not",
  async (tag, compressed) => {
    cleanups.push(() =>
      inProduction(
        `DROP MATERIALIZED VIEW IF EXISTS public.a${tag}; DROP TABLE IF EXISTS public.ev${tag}; DROP FUNCTION IF EXISTS public.f${tag}(text);`,
      ),
    );
    await inProduction(statisticsReadingAggregate(tag, compressed));
    // Production's addresses in the statistics of its whole (made from its chunks not compressed).
    expect(
      Number(
        await inProduction(`SELECT count(*) FROM _timescaledb_catalog.continuous_agg ca JOIN _timescaledb_catalog.hypertable m ON m.id = ca.mat_hypertable_id
          JOIN pg_stats st ON st.tablename = m.table_name AND st.attname = 'v'
           AND lower(coalesce(st.most_common_vals::text, '') || coalesce(st.histogram_bounds::text, '')) LIKE '${PRODUCTION_ADDRESS}'
         WHERE ca.user_view_name = 'a${tag}'`),
      ),
    ).toBeGreaterThan(0);
    const result = await outcome(
      `pr-redteam15-aggregate-${tag}`,
      { mask: [...RULES, { table: `ev${tag}`, column: "email", with: "email" }], pauseJobs: true },
      (uri) =>
        read(
          uri,
          `SELECT 'reversed ' || count(*) FILTER (WHERE lower(reverse(v)) LIKE '${PRODUCTION_ADDRESS}') || ' of ' || count(*) FROM public.a${tag}`,
        ),
    );
    expect(result).toMatch(/^published, reversed 0 of [1-9]/);
  },
);
