// An eighteenth red team's ways through a masked fork's preparation (docs/masking.md), each read
// through the fork's published URL as its holder reads it, each asserting the safe outcome (so each
// fails on the code it was written against): the fork published with nothing of production's masked
// values readable, or refused naming what it cannot make safe. Each leaves production as it found it.
//  1. a continuous aggregate whose query calls a function of the database's own (refreshed last),
//     with an index (CREATE INDEX on the aggregate: TimescaleDB makes it on its materialization
//     hypertable) on its address cast to a domain of tsdbadmin's whose CHECK calls only PostgreSQL's
//     own functions: query_to_xml reading pg_stats of the materialization hypertable, kept in a large
//     object by lo_from_bytea. PostgreSQL lets a cast to a domain into an index expression (a
//     domain's constraints are no mutable function to it), and a domain's CHECK runs on NULL too.
//     The hazards of AGGREGATE_ROOT_STATISTICS look at the hypertable's columns' types, not its
//     indexes' expressions: attach_chunk builds the hypertable's indexes on the placeholder (and
//     ANALYZE of it evaluates expression indexes), while the hypertable's statistics are production's;
//  2. a materialized view (refreshed in the first wave: it calls nothing of the database's own) reading
//     a table of tsdbadmin's that forces row security on itself, whose policy's USING has a subquery
//     of pg_stats (PostgreSQL's own: no function of the database's own, nothing READS sees, since a
//     policy is no part of the view's rule) of m_deep_182, refreshed in the second wave (its
//     statistics production's until then), kept in a large object by lo_from_bytea. Were refreshes run
//     with row_security on, the policy would run in the view's refresh, and its large object be read
//     through the URL; with it off (the preparation's), the refresh would fail: refused before it.
import {
  deepViews,
  dropDeepViews,
  inLargeObjects,
  inMaterialization,
  opaqueAggregate,
  RULES,
  redTeamLab,
  stashStatisticsOf,
  statsOf,
} from "../support/lab/redTeam";

jest.setTimeout(300_000);
const { asSuperuser, cleanups, inProduction, outcome, unlinkLargeObjects } = redTeamLab();

test("a continuous aggregate refreshed last whose materialization hypertable has an index on a cast to a domain whose CHECK reads its statistics into a large object keeps nothing of production's there", async () => {
  cleanups.push(async () => {
    await inProduction(
      "DROP MATERIALIZED VIEW IF EXISTS public.c181 CASCADE; DROP FUNCTION IF EXISTS public.same181(text); DROP DOMAIN IF EXISTS public.dom181;",
    );
    await unlinkLargeObjects();
  });
  await inProduction(`
    ${opaqueAggregate("181", "customer_email")}
    -- Its CHECK (PostgreSQL's own functions only) runs on every value cast to it, NULL too: true, an oid is never NULL.
    CREATE DOMAIN public.dom181 AS text CHECK (${stashStatisticsOf("c181")} IS NOT NULL);
    -- An index on the aggregate (TimescaleDB makes it on its materialization hypertable); a cast to a domain is no mutable function to PostgreSQL.
    CREATE INDEX i181 ON public.c181 ((e::public.dom181));`);
  expect(Number(await asSuperuser(inMaterialization("c181")))).toBeGreaterThan(0);
  expect(Number(await asSuperuser("SELECT count(*) FROM pg_largeobject_metadata"))).toBeGreaterThan(0);
  await unlinkLargeObjects();
  expect(await inProduction("SELECT count(*) FROM pg_largeobject_metadata")).toBe("0");
  const result = await outcome("pr-redteam18-index-domain-check", { mask: RULES, pauseJobs: true }, inLargeObjects);
  expect(result).toMatch(
    /^Preparing fork .*(the continuous aggregate public\.c181 .*index \S+ on an expression or with a predicate|the domain public\.dom181's CHECK \w+ runs lo_from_bytea)/,
  );
});

test("a materialized view reading a table that forces row security on itself, whose policy reads statistics not yet made again into a large object, keeps nothing of production's there", async () => {
  cleanups.push(async () => {
    await inProduction(`DROP MATERIALIZED VIEW IF EXISTS public.m182; DROP TABLE IF EXISTS public.t182; ${dropDeepViews("182")}`);
    await unlinkLargeObjects();
  });
  await inProduction(`
    ${deepViews("182")}
    CREATE TABLE public.t182 (id integer);
    INSERT INTO public.t182 VALUES (1);
    -- PostgreSQL's own only: a subquery of pg_stats, kept in a large object (an oid, never NULL: every row passes).
    CREATE POLICY p182 ON public.t182 USING (pg_catalog.lo_from_bytea(0, pg_catalog.convert_to(${statsOf("182")}, 'UTF8')) IS NOT NULL);
    ALTER TABLE public.t182 ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
    CREATE MATERIALIZED VIEW public.m182 AS SELECT id FROM public.t182;`);
  // Making it ran the policy in production: what it stashed there goes.
  expect(Number(await asSuperuser("SELECT count(*) FROM pg_largeobject_metadata"))).toBeGreaterThan(0);
  await unlinkLargeObjects();
  expect(await inProduction("SELECT count(*) FROM pg_largeobject_metadata")).toBe("0");
  expect(await inProduction("SELECT count(*) FROM public.m182")).toBe("1");
  const result = await outcome("pr-redteam18-policy-statistics", { mask: RULES, pauseJobs: true }, inLargeObjects);
  expect(result).toMatch(
    /^Preparing fork .*public\.m182 reads public\.t182 as tsdbadmin, whose row security applies to it \(forced on its owner\)/,
  );
  expect(result).not.toMatch(/refreshing the materialized view|SQLSTATE/);
});
