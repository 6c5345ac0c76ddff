// A twenty-fifth red team's ways through a masked fork's preparation (docs/masking.md), each read
// through the fork's published URL as its holder reads it, each asserting the safe outcome (so each
// fails where its way works): the fork published with nothing of production's masked values
// readable, or refused naming what it cannot make safe and the fix, with no bare SQLSTATE. Each
// leaves production as it found it. The attacker has tsdbadmin's SQL in production (with
// CREATEROLE, as on Tiger Cloud) and the URL. The targets: the newest changes (a run again after a
// failure past the commit checks against keyed digests from state; a fork holding another fork's
// record is refused; TimescaleDB's functions taking a relation by name count as running what no
// dependency records). Each failed before its fix: TimescaleDB's functions taking a job's
// configuration (jsonb) or named as policies count as running what no dependency records too, and
// every check (and the digests) compares texts in one normal form, trimmed as trim() trims.
//  1. a materialized view refreshed in the first wave (it reads the customers) whose query calls
//     TimescaleDB's _timescaledb_functions.policy_retention_check(jsonb): a C function of the
//     extension's taking no regclass, name or regproc, only a job's config naming a hypertable by
//     its integer id, which calls that hypertable's integer_now function at run time (to compute the
//     retention boundary). That function (plpgsql, STABLE) belongs to a role that is a member of
//     tsdbadmin, so it is not held off; it keeps pg_stats of m_deep_251 (refreshed in the second
//     wave, its statistics production's until then) in a large object;
//  2. the same through _timescaledb_functions.policy_refresh_continuous_aggregate_check(jsonb), a
//     refresh policy's check: its config's mat_hypertable_id (of an aggregate over an integer
//     hypertable, with no refresh policy: no job names it) and start_offset make it call the
//     integer_now function;
//  3. round 23/24's refused-twice run again, with values that normalize one way for the first run
//     and another for the digests: a masked column whose production values end in a tab (which
//     JavaScript's trim() removes and PostgreSQL's btrim() keeps). The first run compares a view's
//     rows with the values trimmed by JavaScript (distinctiveOf), and refuses a view holding the
//     addresses without their tab; the digests the state keeps are of lower(btrim(value)), the tab
//     kept, so the run again finds nothing of production's in the same view;
//  4. round 24's fork of a failed fork, with a materialized view refreshed last (its query calls a
//     function of tsdbadmin's; its name sorts before the refused one's) whose function drops every
//     _tigercloud_preparing_* schema as it is refreshed (its refresh commits): the first fork kept no
//     record, and the second, sampling only the first's pseudonyms, published the refused view. The
//     record is made again once a failure past the commit is handled, whatever dropped it.
import {
  RULES,
  redTeamLab,
  expectPublishedSafe,
  deepViews,
  dropDeepViews,
  statsOf,
  ownedByMemberOfTsdbadmin,
  inLargeObjects,
  said,
  atRecordThenRefused,
} from "../support/lab/redTeam";

jest.setTimeout(600_000);
const {
  cleanups,
  asSuperuser,
  inProduction,
  outcome,
  unlinkLargeObjects,
  noLargeObjects,
  withCreateRole,
  refusedTwice,
  refusedFork,
  refusedAsForkOf,
} = redTeamLab();

/**
 * An integer hypertable h<tag> whose integer_now function (a member of tsdbadmin's, so not held off)
 * keeps m_deep_<tag>'s statistics in a large object, and a materialized view m<tag> reading the
 * customers whose query calls TimescaleDB's `call` with a jsonb config naming h<tag> by its id
 * (`config`: SQL text of a jsonb_build_object with %s for that id).
 */
async function integerNowThroughConfig(
  tag: string,
  call: string,
  config: string,
  body = `BEGIN PERFORM pg_catalog.lo_from_bytea(0, pg_catalog.convert_to(${statsOf(tag)}, 'UTF8')); RETURN 0; END`,
  /** SQL run after the hypertable is made, and the query of the hypertable id the config names (h<tag>'s by default). */
  between = "",
  idOf = `SELECT h.id FROM _timescaledb_catalog.hypertable h WHERE h.schema_name = 'public' AND h.table_name = 'h${tag}'`,
): Promise<void> {
  await withCreateRole(async () => {
    await asSuperuser(
      `DROP MATERIALIZED VIEW IF EXISTS public.m${tag}, public.c${tag}; DROP TABLE IF EXISTS public.h${tag}; DROP FUNCTION IF EXISTS public.now${tag}();
       DROP ROLE IF EXISTS ops${tag}; ${dropDeepViews(tag)}`,
    );
    await unlinkLargeObjects();
  });
  await inProduction(`
    ${deepViews(tag)}
    CREATE FUNCTION public.now${tag}() RETURNS bigint LANGUAGE plpgsql STABLE AS $f$ ${body} $f$;
    CREATE TABLE public.h${tag} (t bigint NOT NULL, v int);
    SELECT create_hypertable('public.h${tag}', 't', chunk_time_interval => 1000);
    SELECT set_integer_now_func('public.h${tag}', 'public.now${tag}');
    ${between}
    ${ownedByMemberOfTsdbadmin(`ops${tag}`, `public.now${tag}()`)}
    DO $d$ DECLARE hid int; BEGIN
      hid := (${idOf});
      EXECUTE pg_catalog.format($v$CREATE MATERIALIZED VIEW public.m${tag} AS
        SELECT email AS v FROM public.customers
        UNION ALL SELECT ${call}(%L::jsonb)::text$v$, ${config.replace("%s", "hid")});
    END $d$;`);
  expect(await inProduction(`SELECT proowner::regrole::text FROM pg_proc WHERE oid = 'public.now${tag}()'::regprocedure`)).toBe(
    `ops${tag}`,
  );
  // Its query names no relation of TimescaleDB's: the hypertable is an integer in a jsonb.
  expect(
    await inProduction(
      `SELECT count(*) FROM pg_depend d JOIN pg_rewrite w ON w.oid = d.objid WHERE w.ev_class = 'public.m${tag}'::regclass AND d.refobjid = 'public.h${tag}'::regclass`,
    ),
  ).toBe("0");
  await noLargeObjects();
}

test("a materialized view refreshed first whose query calls TimescaleDB's policy_retention_check(jsonb), running a hypertable's integer_now function not held off that keeps a later view's statistics, keeps nothing of production's in large objects", async () => {
  await integerNowThroughConfig(
    "251",
    "_timescaledb_functions.policy_retention_check",
    "pg_catalog.jsonb_build_object('hypertable_id', %s, 'drop_after', 0)",
  );
  const result = await outcome("pr-redteam25-retention-check", { mask: RULES, pauseJobs: true }, inLargeObjects);
  expectPublishedSafe(result);
});

test("a preparation refused after its COMMIT for a view holding a masked column's values without the tab they end with in production, run again by the next up on the same fork, is refused again", async () => {
  cleanups.push(() =>
    inProduction(
      "DROP MATERIALIZED VIEW IF EXISTS public.m254; DROP TABLE IF EXISTS public.people254, public.notes254; DROP FUNCTION IF EXISTS public.same254(text);",
    ),
  );
  await inProduction(`
    CREATE TABLE public.people254 (id int PRIMARY KEY, email text);
    INSERT INTO public.people254 SELECT i, 'person-254-' || i || '@prod-customers.example.com' || E'\\t' FROM generate_series(1, 50) i;
    CREATE TABLE public.notes254 AS SELECT pg_catalog.rtrim(email, E'\\t') AS v FROM public.people254;
    CREATE FUNCTION public.same254(text) RETURNS text LANGUAGE sql IMMUTABLE AS $f$ SELECT $1 $f$;
    CREATE MATERIALIZED VIEW public.m254 AS SELECT public.same254(email) AS v FROM public.people254 UNION ALL SELECT v FROM public.notes254;
    ANALYZE public.people254, public.notes254, public.m254;`);
  expect(await inProduction("SELECT count(*) FROM public.people254 WHERE email LIKE E'%\\t'")).toBe("50");
  const rules = [...RULES, { table: "people254", column: "email", with: "email" }];
  await refusedTwice("pr-redteam25-retry-tab", "public.m254", "v", rules);
});

test("a materialized view refreshed first whose query calls TimescaleDB's policy_refresh_continuous_aggregate_check(jsonb), running a hypertable's integer_now function not held off that keeps a later view's statistics, keeps nothing of production's in large objects", async () => {
  await integerNowThroughConfig(
    "252",
    "_timescaledb_functions.policy_refresh_continuous_aggregate_check",
    "pg_catalog.jsonb_build_object('mat_hypertable_id', %s, 'start_offset', 10, 'end_offset', 0)",
    undefined,
    // Its config must name a continuous aggregate's materialization hypertable: one over h252, whose integer_now it takes.
    `CREATE MATERIALIZED VIEW public.c252 WITH (timescaledb.continuous) AS
       SELECT time_bucket(10::bigint, t) AS b, count(*) AS n FROM public.h252 GROUP BY 1 WITH NO DATA;`,
    "SELECT mat_hypertable_id FROM _timescaledb_catalog.continuous_agg WHERE user_view_schema = 'public' AND user_view_name = 'c252'",
  );
  const result = await outcome("pr-redteam25-refresh-check", { mask: RULES, pauseJobs: true }, inLargeObjects);
  expectPublishedSafe(result);
});

test("a fork, masked, of a fork whose preparation failed after its COMMIT and whose view refreshed last dropped every preparation's record, is refused, naming the first's record", async () => {
  const way = atRecordThenRefused("253", "EXECUTE 'DROP SCHEMA ' || r.n || ' CASCADE';");
  cleanups.push(() => inProduction(way.drop));
  await inProduction(way.make);
  const first = await refusedFork("pr-redteam25-dropped-record", { mask: RULES, pauseJobs: true });
  expect(said(first.message)).toMatch(
    /public\.m253b still holds \d+ row\(s\) with values from before the masking.*The masking was committed/,
  );
  expect(first.id).toBeDefined();
  await refusedAsForkOf(first.id as string, "pr-redteam25-fork-of-dropped", "public.m253b", "v");
});
