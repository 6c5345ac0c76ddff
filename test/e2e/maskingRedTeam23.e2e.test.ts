// A twenty-third red team's ways through a masked fork's preparation (docs/masking.md), each read
// through the fork's published URL as its holder reads it, each asserting the safe outcome (so each
// fails where its way works): the fork published with nothing of production's masked
// values readable, or refused naming what it cannot make safe and the fix, with no bare SQLSTATE.
// Each leaves production as it found it. The attacker has tsdbadmin's SQL in production (with
// CREATEROLE, as on Tiger Cloud) and the URL; the team's prepare.sqlAfter, where there is one, is an
// ordinary seed (one INSERT of a row), the team's own.
//  1. a materialized view reading the customers (so refreshed in the first wave) whose query calls
//     tablefunc's crosstab(text), its query given as text reading pg_stats of m_deep_231 (refreshed
//     in the second wave, its statistics production's until then) and keeping them in a large
//     object through PostgreSQL's lo_from_bytea. tablefunc is a trusted extension: tsdbadmin makes
//     it itself, in public, and its functions are the bootstrap superuser's and members of the
//     extension, so OWN_FUNCTIONS leaves them out; TEXT_QUERIES names crosstab and connectby, but
//     only in pg_catalog (pronamespace = 'pg_catalog'), where tablefunc is not. So the view is not
//     opaque (READS), and no dependency names pg_stats (statisticsCopied passes it);
//  2. the same with tablefunc's connectby(text, text, text, text, int), which reads a relation
//     named as text: its key field (written into its query as it is given) reads pg_stats of
//     m_deep_232 into a large object;
//  3. a plain `pulumi up` again after a preparation refused past its COMMIT: the first up is refused
//     (m235, a view reading the customers and a table the rules leave unmasked that holds copies of
//     their addresses, is caught by viewRowsHolding after its refresh, against the values sampled
//     before the masking). The next up runs the whole preparation again on the same fork, as the
//     refusal says to: what it samples is the masked table, so, were the first run's samples gone,
//     nothing would be left to compare the view's rows with and the same fork, the same program,
//     would be published holding what the first run refused. (Any leak only a check of values
//     catches would be published so on a run again.) It is refused again, the same way;
//  4. the new order's own window: a table prepare.sqlAfter seeds with a trigger (a function of
//     tsdbadmin's, given back before the seed) copying pg_stats of m_deep_233 and the rows of
//     m_base_233 and m_deep_233 into public.stolen_233 as the seed runs. Both are the masked
//     data's by then, every view refreshed and every statistic made again (it holds);
//  5. a table prepare.sqlAfter seeds with a trigger copying what the preparation's own session may
//     still hold as the seed runs in it (its settings, its temporary tables) and whatever is left
//     in a _tigercloud* schema (the preparation's record), into public.stolen_234 (it holds: the
//     pseudonyms' table is ON COMMIT DROP, the record is dropped before the seed);
//  6. a prepare.sqlAfter that fails (a team's seed colliding with a row of production's), then fixed
//     and run by the next up on the same fork: the failure comes after every view and statistic is
//     made again, so the run again finds nothing of production's left (it holds).
import {
  RULES,
  copied,
  copyStats,
  deepViews,
  dropDeepViews,
  inLargeObjects,
  redTeamLab,
  statsOf,
  expectSafe,
  expectPublishedSafe,
  copiedInto,
  said,
} from "../support/lab/redTeam";

jest.setTimeout(300_000);
const { lab, cleanups, inProduction, outcome, unlinkLargeObjects, noLargeObjects, refusedTwice } = redTeamLab();

/** An expression (PostgreSQL's functions only): `text` kept in a large object, its oid (never NULL while `text` is not). */
const stash = (text: string) => `pg_catalog.lo_from_bytea(0, pg_catalog.convert_to(${text}, 'UTF8'))`;

test("a materialized view refreshed first whose query calls tablefunc's crosstab, its query given as text reading a later view's statistics, keeps nothing of production's in large objects", async () => {
  cleanups.push(async () => {
    await inProduction(`DROP MATERIALIZED VIEW IF EXISTS public.m231; ${dropDeepViews("231")} DROP EXTENSION IF EXISTS tablefunc;`);
    await unlinkLargeObjects();
  });
  await inProduction(`
    ${deepViews("231")}
    -- Trusted: tsdbadmin makes it, in public; its functions are the bootstrap superuser's, members of the extension.
    CREATE EXTENSION IF NOT EXISTS tablefunc SCHEMA public;
    CREATE MATERIALIZED VIEW public.m231 AS
      SELECT email AS v FROM public.customers
      UNION ALL
      SELECT ${stash("x.v")}::text FROM public.crosstab($q$SELECT 'r'::text, 'c'::text, ${statsOf("231")}::text$q$) AS x(r text, v text);`);
  expect(await inProduction("SELECT proowner::regrole::text FROM pg_proc WHERE oid = 'public.crosstab(text)'::regprocedure")).not.toBe(
    "tsdbadmin",
  );
  await noLargeObjects();
  const result = await outcome("pr-redteam23-crosstab-first-wave", { mask: RULES, pauseJobs: true }, inLargeObjects);
  expectSafe(result, /^Preparing fork .*public\.(m231|crosstab)/);
});

test("a materialized view refreshed first whose query calls tablefunc's connectby over pg_stats, its key field reading a later view's statistics, keeps nothing of production's in large objects", async () => {
  cleanups.push(async () => {
    await inProduction(`DROP MATERIALIZED VIEW IF EXISTS public.m232; ${dropDeepViews("232")} DROP EXTENSION IF EXISTS tablefunc;`);
    await unlinkLargeObjects();
  });
  // connectby writes its key and parent fields into its query as given: SELECT <key>, <parent> FROM <relation> WHERE <parent> = <start> …
  const key = `${stash(statsOf("232"))}::text`;
  await inProduction(`
    ${deepViews("232")}
    CREATE EXTENSION IF NOT EXISTS tablefunc SCHEMA public;
    CREATE MATERIALIZED VIEW public.m232 AS
      SELECT email AS v FROM public.customers
      UNION ALL
      SELECT x.k FROM public.connectby('pg_catalog.pg_class', $k$${key}$k$, 'relname::text', 'pg_class', 1) AS x(k text, p text, l int);`);
  await noLargeObjects();
  const result = await outcome("pr-redteam23-connectby-first-wave", { mask: RULES, pauseJobs: true }, inLargeObjects);
  expectSafe(result, /^Preparing fork .*public\.(m232|connectby)/);
});

test("a table prepare.sqlAfter seeds, with a trigger copying a view's statistics and rows as the seed runs last, copies only the masking's values", async () => {
  cleanups.push(() =>
    inProduction(
      `DROP TABLE IF EXISTS public.flags233, public.stolen_233; DROP FUNCTION IF EXISTS public.copy233(); ${dropDeepViews("233")}`,
    ),
  );
  await inProduction(`
    ${deepViews("233")}
    CREATE TABLE public.stolen_233 (v text);
    CREATE TABLE public.flags233 (name text PRIMARY KEY);
    CREATE FUNCTION public.copy233() RETURNS trigger LANGUAGE plpgsql AS $f$ BEGIN
      ${copyStats("233")}
      INSERT INTO public.stolen_233 SELECT email FROM public.m_base_233;
      INSERT INTO public.stolen_233 SELECT email FROM public.m_deep_233;
      RETURN NEW; END $f$;
    CREATE TRIGGER t233 AFTER INSERT ON public.flags233 FOR EACH ROW EXECUTE FUNCTION public.copy233();`);
  const result = await outcome(
    "pr-redteam23-seed-last-trigger",
    { mask: RULES, pauseJobs: true, sqlAfter: ["INSERT INTO public.flags233 (name) VALUES ('new-checkout')"] },
    copied("233"),
  );
  expectPublishedSafe(result);
});

test("a table prepare.sqlAfter seeds, with a trigger copying the preparation's session and record schema as the seed runs, copies nothing of production's", async () => {
  cleanups.push(() => inProduction(`DROP TABLE IF EXISTS public.flags234, public.stolen_234; DROP FUNCTION IF EXISTS public.copy234();`));
  await inProduction(`
    CREATE TABLE public.stolen_234 (v text);
    CREATE TABLE public.flags234 (name text PRIMARY KEY);
    CREATE FUNCTION public.copy234() RETURNS trigger LANGUAGE plpgsql AS $f$ DECLARE r record; BEGIN
      -- The session's settings, its temporary tables, and every table of a schema the preparation made or left.
      INSERT INTO public.stolen_234 SELECT name || '=' || setting FROM pg_catalog.pg_settings;
      FOR r IN SELECT format('%I.%I', n.nspname, c.relname) AS t FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                WHERE c.relkind IN ('r', 'v', 'm') AND (n.nspname LIKE 'pg_temp%' OR n.nspname LIKE '\\_tigercloud%') LOOP
        EXECUTE format('INSERT INTO public.stolen_234 SELECT t::text FROM %s t', r.t);
      END LOOP;
      INSERT INTO public.stolen_234 SELECT n.nspname FROM pg_namespace n WHERE n.nspname LIKE '\\_tigercloud\\_preparing%';
      RETURN NEW; END $f$;
    CREATE TRIGGER t234 AFTER INSERT ON public.flags234 FOR EACH ROW EXECUTE FUNCTION public.copy234();`);
  const result = await outcome(
    "pr-redteam23-seed-session",
    { mask: RULES, pauseJobs: true, sqlAfter: ["INSERT INTO public.flags234 (name) VALUES ('new-checkout')"] },
    copiedInto("public.stolen_234", "v"),
  );
  expectPublishedSafe(result);
});

test("a preparation refused after its COMMIT (a view's rows caught holding production's addresses), run again by the next up on the same fork unchanged, is refused again: its checks compare with the values the first sampled from production", async () => {
  cleanups.push(() => inProduction("DROP MATERIALIZED VIEW IF EXISTS public.m235; DROP TABLE IF EXISTS public.notes235;"));
  // The rules leave notes235 unmasked; m235 reads the customers (what the masking writes), so its rows are checked after its refresh.
  await inProduction(`
    CREATE TABLE public.notes235 AS SELECT email AS v FROM public.customers;
    CREATE MATERIALIZED VIEW public.m235 AS SELECT email AS v FROM public.customers UNION ALL SELECT v FROM public.notes235;`);
  await refusedTwice("pr-redteam23-retry", "public.m235", "v");
});

test("a prepare.sqlAfter that fails (its own transaction rolled back), fixed and run again by the next up on the same fork, publishes nothing of production's", async () => {
  cleanups.push(() => inProduction(`DROP TABLE IF EXISTS public.flags236; ${dropDeepViews("236")}`));
  await inProduction(`
    ${deepViews("236")}
    CREATE TABLE public.flags236 (name text PRIMARY KEY);
    INSERT INTO public.flags236 VALUES ('checkout');`);
  const name = "pr-redteam23-seed-retry";
  const s = await lab.h.stack(
    name,
    lab.forkProgram(name, { mask: RULES, pauseJobs: true, sqlAfter: ["INSERT INTO public.flags236 VALUES ('checkout')"] }),
  );
  cleanups.push(() => lab.discard(s));
  // The team's seed collides with a row production has: the masking committed, the seed's transaction rolled back.
  expect(
    await s.up().then(
      () => "published",
      (err: Error) => said(err.message),
    ),
  ).toMatch(/failed at prepare\.sqlAfter\[0\].*SQLSTATE 23505/);
  s.setProgram(lab.forkProgram(name, { mask: RULES, pauseJobs: true, sqlAfter: ["INSERT INTO public.flags236 VALUES ('new-checkout')"] }));
  const uri = (await s.up()).outputs.uri?.value as string;
  // Every place of production's addresses the preparation makes again: the table, both views' rows, their statistics.
  const result = `published, ${await copiedInto(
    `(SELECT email AS v FROM public.customers UNION ALL SELECT email FROM public.m_base_236 UNION ALL SELECT email FROM public.m_deep_236
      UNION ALL SELECT v FROM pg_stats s, unnest(coalesce(s.most_common_vals::text::text[], '{}') || coalesce(s.histogram_bounds::text::text[], '{}')) v
       WHERE s.schemaname = 'public' AND s.tablename IN ('customers', 'm_base_236', 'm_deep_236')) x`,
    "v",
  )(uri)}`;
  expectPublishedSafe(result);
});
