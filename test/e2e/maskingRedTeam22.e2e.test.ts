// A twenty-second red team's ways through a masked fork's preparation (docs/masking.md), each read
// through the fork's published URL as its holder reads it, each asserting the safe outcome (so each
// fails on the code it was written against): the fork published with nothing of production's masked
// values readable, or refused naming what it cannot make safe and the fix, with no bare SQLSTATE.
// Each leaves production as it found it. The attacker has tsdbadmin's SQL in production (with
// CREATEROLE, as on Tiger Cloud) and the URL; the team's prepare.sqlAfter is an ordinary seed (one
// INSERT or UPDATE of a row), the team's own.
// The ways through prepare.sqlAfter were closed by running it last, once every view is refreshed,
// every statistic made again and every function given back: those seeds are published, copying
// only the masking's values (textQueriesOnWrite, named below, refused them before and is gone).
//  1. the table prepare.sqlAfter seeds is an automatically updatable view WITH CHECK OPTION over a
//     plain table, its WHERE a sublink keeping a materialized view of the addresses (production's
//     rows until its refresh) in a large object through PostgreSQL's lo_from_bytea. The INSERT
//     checks the new row against the view's WHERE. textQueriesOnWrite reads a view's triggers,
//     defaults and non-SELECT rules, never its own query (its SELECT rule, ev_type '1');
//  2. the same with the seed an UPDATE (`UPDATE … SET v = 'x' WHERE k = 'y'`) of an updatable view
//     with no check option: the view's WHERE runs on each row the UPDATE scans, its sublink keeping
//     pg_stats of m_deep_222 (production's until its refresh) in a large object;
//  3. a hypertable prepare.sqlAfter seeds, with a hash dimension whose partitioning function
//     (plpgsql, IMMUTABLE, keeping a materialized view of the addresses in a large object) belongs
//     to a role that is a member of tsdbadmin, so it is not held off. TimescaleDB routes each row
//     inserted through it. textQueriesOnWrite looks for a function not held off in pg_catalog's
//     trees only, never in _timescaledb_catalog.dimension (PARTITIONED_BY_OWN reads it for the
//     refreshes alone);
//  4. a materialized view refreshed in the first wave (it reads the customers and, with a WHERE, an
//     inheritance parent), the parent's inheritance child (not a partition) with a CHECK calling an
//     IMMUTABLE function of a role that is a member of tsdbadmin (not held off), keeping pg_stats
//     of m_deep_224 (refreshed in the second wave, production's until then) in a large object. The
//     planner folds a child's CHECK (constraint exclusion, `partition`: inheritance children too)
//     as it plans the refresh. READS' read_tree follows partitions only (relispartition), so the
//     view is not opaque, and no guard looks for a function not held off without a sqlAfter.
import {
  RULES,
  deepViews,
  dropDeepViews,
  inLargeObjects,
  ownedByMemberOfTsdbadmin,
  redTeamLab,
  statsOf,
  expectSafe,
  expectPublishedSafe,
} from "../support/lab/redTeam";

jest.setTimeout(300_000);
const { asSuperuser, cleanups, inProduction, outcome, unlinkLargeObjects, noLargeObjects, withCreateRole } = redTeamLab();

/** An expression (PostgreSQL's functions only): `text` kept in a large object, its oid (never NULL while `text` is not). */
const stash = (text: string) => `pg_catalog.lo_from_bytea(0, pg_catalog.convert_to(${text}, 'UTF8'))`;
/** An expression: m_base_<tag>'s addresses (production's rows until its refresh), as one text. */
const baseRows = (tag: string) => `(SELECT pg_catalog.string_agg(email, ',') FROM public.m_base_${tag})`;

test("an updatable view WITH CHECK OPTION prepare.sqlAfter seeds, whose WHERE keeps a materialized view's rows in a large object, keeps nothing of production's there", async () => {
  cleanups.push(async () => {
    await inProduction(`DROP VIEW IF EXISTS public.flags221; DROP TABLE IF EXISTS public.flags_t221; ${dropDeepViews("221")}`);
    await unlinkLargeObjects();
  });
  await inProduction(`
    ${deepViews("221")}
    CREATE TABLE public.flags_t221 (name text PRIMARY KEY);
    -- No function, default, trigger or rule: a view's own query, its WHERE checked on each row inserted through it.
    CREATE VIEW public.flags221 AS SELECT name FROM public.flags_t221
      WHERE ${stash(baseRows("221"))} IS NOT NULL WITH CHECK OPTION;`);
  await noLargeObjects();
  const result = await outcome(
    "pr-redteam22-view-check-option",
    { mask: RULES, pauseJobs: true, sqlAfter: ["INSERT INTO public.flags221 (name) VALUES ('new-checkout')"] },
    inLargeObjects,
  );
  expectPublishedSafe(result);
});

test("an updatable view prepare.sqlAfter updates, whose WHERE keeps a view's statistics in a large object, keeps nothing of production's there", async () => {
  cleanups.push(async () => {
    await inProduction(`DROP VIEW IF EXISTS public.settings222; DROP TABLE IF EXISTS public.settings_t222; ${dropDeepViews("222")}`);
    await unlinkLargeObjects();
  });
  await inProduction(`
    ${deepViews("222")}
    CREATE TABLE public.settings_t222 (k text PRIMARY KEY, v text);
    INSERT INTO public.settings_t222 VALUES ('y', 'z');
    -- The UPDATE's scan runs the view's WHERE on its row: m_deep_222's statistics (production's until the second wave).
    CREATE VIEW public.settings222 AS SELECT k, v FROM public.settings_t222 WHERE ${stash(statsOf("222"))} IS NOT NULL;`);
  await noLargeObjects();
  const result = await outcome(
    "pr-redteam22-view-update-where",
    { mask: RULES, pauseJobs: true, sqlAfter: ["UPDATE public.settings222 SET v = 'x' WHERE k = 'y'"] },
    inLargeObjects,
  );
  expectPublishedSafe(result);
});

test("a hypertable prepare.sqlAfter seeds, whose hash dimension's partitioning function belongs to a role that is a member of tsdbadmin (not held off), keeps nothing of production's in large objects", async () => {
  await withCreateRole(async () => {
    await asSuperuser(
      `DROP TABLE IF EXISTS public.flags223; DROP FUNCTION IF EXISTS public.part223(text); DROP ROLE IF EXISTS ops223; ${dropDeepViews("223")}`,
    );
    await unlinkLargeObjects();
  });
  await inProduction(`
    ${deepViews("223")}
    CREATE FUNCTION public.part223(text) RETURNS integer LANGUAGE plpgsql IMMUTABLE AS $f$
      BEGIN PERFORM ${stash(baseRows("223"))}; RETURN pg_catalog.length($1); END $f$;
    CREATE TABLE public.flags223 (at timestamptz NOT NULL DEFAULT '2024-01-01', name text);
    SELECT create_hypertable('public.flags223', 'at', chunk_time_interval => interval '1 year');
    SELECT add_dimension('public.flags223', 'name', number_partitions => 2, partitioning_func => 'public.part223');
    ${ownedByMemberOfTsdbadmin("ops223", "public.part223(text)")}`);
  expect(await inProduction("SELECT proowner::regrole::text FROM pg_proc WHERE oid = 'public.part223(text)'::regprocedure")).toBe("ops223");
  await noLargeObjects();
  const result = await outcome(
    "pr-redteam22-dimension-not-held-off",
    { mask: RULES, pauseJobs: true, sqlAfter: ["INSERT INTO public.flags223 (name) VALUES ('new-checkout')"] },
    inLargeObjects,
  );
  expectPublishedSafe(result);
});

test("a materialized view refreshed first, reading an inheritance parent whose child's CHECK calls a function of a member of tsdbadmin (not held off) keeping a later view's statistics, keeps nothing of production's in large objects", async () => {
  await withCreateRole(async () => {
    await asSuperuser(
      `DROP MATERIALIZED VIEW IF EXISTS public.m224; DROP TABLE IF EXISTS public.child224, public.parent224;
       DROP FUNCTION IF EXISTS public.stash224(); DROP ROLE IF EXISTS ops224; ${dropDeepViews("224")}`,
    );
    await unlinkLargeObjects();
  });
  await inProduction(`
    ${deepViews("224")}
    -- IMMUTABLE, no argument: the planner folds it wherever it plans the CHECK (constraint exclusion).
    CREATE FUNCTION public.stash224() RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $f$
      BEGIN RETURN ${stash(statsOf("224"))} IS NOT NULL; END $f$;
    CREATE TABLE public.parent224 (v text);
    CREATE TABLE public.child224 (CHECK (public.stash224())) INHERITS (public.parent224);
    CREATE MATERIALIZED VIEW public.m224 AS
      SELECT email FROM public.customers UNION ALL SELECT v FROM public.parent224 WHERE v = 'x';
    ${ownedByMemberOfTsdbadmin("ops224", "public.stash224()")}`);
  expect(await inProduction("SELECT proowner::regrole::text FROM pg_proc WHERE oid = 'public.stash224()'::regprocedure")).toBe("ops224");
  await noLargeObjects();
  const result = await outcome("pr-redteam22-inheritance-check-first-wave", { mask: RULES, pauseJobs: true }, inLargeObjects);
  expectSafe(result, /^Preparing fork .*public\.(m224|child224|parent224|stash224)/);
});
