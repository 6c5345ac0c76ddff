// A twentieth red team's ways through a masked fork's preparation (docs/masking.md), each read
// through the fork's published URL as its holder reads it, each asserting the safe outcome (so each
// fails on the code it was written against): the fork published with nothing of production's masked
// values readable, or refused naming what it cannot make safe and the fix, with no bare SQLSTATE.
// Each leaves production as it found it. The attacker has tsdbadmin's SQL in production and the
// URL; the team's prepare.sqlAfter is an ordinary seed (one INSERT of a row), the team's own.
// The ways through prepare.sqlAfter were closed by running it last, once every view is refreshed,
// every statistic made again and every function given back: those seeds are published, copying
// only the masking's values (textQueriesOnWrite, named below, refused them before and is gone).
//  1. a table prepare.sqlAfter seeds whose column is of a domain whose DEFAULT (not a CHECK) calls
//     only PostgreSQL's own functions: query_to_xml reading a materialized view of the customers'
//     addresses (still production's rows while sqlAfter runs). textQueriesOnWrite follows a
//     column's type to its domain's constraints (pg_constraint.conbin), not to the domain's
//     default (pg_type.typdefaultbin), which PostgreSQL uses for an INSERT naming no such column;
//  2. a table prepare.sqlAfter seeds with a rule (CREATE RULE … DO ALSO INSERT … SELECT FROM a
//     materialized view): no function at all, a plain read of the view, which still holds
//     production's rows. Triggers and rules are held off on what the masking writes only, and
//     textQueriesOnWrite looks for functions running a query given as text, not for rules;
//  3. a partitioned table prepare.sqlAfter seeds whose (default) partition lives in a schema of
//     tsdbadmin's named `_timescaledb_seed`, with a CHECK calling query_to_xml of a materialized
//     view, kept in a large object by lo_from_bytea. textQueriesOnWrite leaves out every schema
//     whose name starts with `_timescaledb_` (TimescaleDB's own), which any role may name one so;
//  4. a harmless production: a materialized view reading, through query_to_xml, a table forcing its
//     row security on its owner, whose name holds a line break. rowSecurityApplied matches
//     PostgreSQL's message with `(.+)`, which crosses no line break: the refusal is the bare
//     SQLSTATE 42501, naming nothing;
//  5. a table referencing the customers by (id, email) with ON UPDATE SET DEFAULT (MATCH SIMPLE: its
//     id's default, NULL, leaves the key unchecked), whose email column has no default of its own but
//     is of a domain whose DEFAULT calls query_to_xml of a materialized view of the addresses. The
//     masking's UPDATE cascades, and SET DEFAULT falls back to the domain's default, run inside the
//     masking's transaction while the view holds production's rows. FUNCTIONS_ON_WRITE reads a SET
//     DEFAULT's pg_attrdef and domains' CHECKs, not a domain's typdefaultbin.
import { readThrough as read } from "../support/lab/production";
import {
  PRODUCTION_ADDRESS,
  RULES,
  deepViews,
  dropDeepViews,
  inLargeObjects,
  redTeamLab,
  expectSafe,
  expectPublishedSafe,
  copiedInto,
} from "../support/lab/redTeam";

jest.setTimeout(300_000);
const { cleanups, inProduction, outcome, unlinkLargeObjects } = redTeamLab();

test("a table prepare.sqlAfter seeds, whose column's domain has a DEFAULT reading a materialized view through query_to_xml, keeps nothing of production's there", async () => {
  cleanups.push(() => inProduction(`DROP TABLE IF EXISTS public.flags201; DROP DOMAIN IF EXISTS public.note201; ${dropDeepViews("201")}`));
  await inProduction(`
    ${deepViews("201")}
    -- A domain's default: PostgreSQL's own functions only, no CHECK, used for a column an INSERT leaves out.
    CREATE DOMAIN public.note201 AS text DEFAULT pg_catalog.query_to_xml('SELECT email FROM public.m_base_201', true, false, '')::text;
    CREATE TABLE public.flags201 (name text PRIMARY KEY, note public.note201);`);
  expect(await inProduction(`SELECT count(*) FROM public.m_base_201 WHERE email LIKE '${PRODUCTION_ADDRESS}'`)).not.toBe("0");
  const result = await outcome(
    "pr-redteam20-domain-default",
    { mask: RULES, pauseJobs: true, sqlAfter: ["INSERT INTO public.flags201 (name) VALUES ('new-checkout')"] },
    copiedInto("public.flags201", "note"),
  );
  expectPublishedSafe(result);
});

test("a table prepare.sqlAfter seeds, with a rule copying a materialized view's rows on insert, keeps nothing of production's where the rule writes", async () => {
  cleanups.push(() => inProduction(`DROP TABLE IF EXISTS public.flags202, public.stolen202; ${dropDeepViews("202")}`));
  await inProduction(`
    ${deepViews("202")}
    CREATE TABLE public.stolen202 (v text);
    CREATE TABLE public.flags202 (name text PRIMARY KEY);
    -- No function at all: the rule's action reads the view, still production's while sqlAfter runs.
    CREATE RULE r202 AS ON INSERT TO public.flags202 DO ALSO INSERT INTO public.stolen202 SELECT email FROM public.m_base_202;`);
  expect(await inProduction(`SELECT count(*) FROM public.m_base_202 WHERE email LIKE '${PRODUCTION_ADDRESS}'`)).not.toBe("0");
  const result = await outcome(
    "pr-redteam20-seed-rule",
    { mask: RULES, pauseJobs: true, sqlAfter: ["INSERT INTO public.flags202 (name) VALUES ('new-checkout')"] },
    copiedInto("public.stolen202", "v"),
  );
  expectPublishedSafe(result);
});

test("a partitioned table prepare.sqlAfter seeds, whose partition in a schema named _timescaledb_seed has a CHECK reading a materialized view into a large object, keeps nothing of production's there", async () => {
  cleanups.push(async () => {
    await inProduction(`DROP TABLE IF EXISTS public.flags203; DROP SCHEMA IF EXISTS _timescaledb_seed203 CASCADE; ${dropDeepViews("203")}`);
    await unlinkLargeObjects();
  });
  await inProduction(`
    ${deepViews("203")}
    -- Any role may name its schema so: TimescaleDB's prefix is no reserved one.
    CREATE SCHEMA _timescaledb_seed203;
    CREATE TABLE public.flags203 (name text, note text) PARTITION BY LIST (name);
    CREATE TABLE _timescaledb_seed203.flags203_all PARTITION OF public.flags203 (
      CONSTRAINT k203 CHECK (pg_catalog.lo_from_bytea(0, pg_catalog.convert_to(
        pg_catalog.query_to_xml('SELECT email FROM public.m_base_203', true, false, '')::text, 'UTF8')) IS NOT NULL)) DEFAULT;`);
  await unlinkLargeObjects();
  expect(await inProduction("SELECT count(*) FROM pg_largeobject_metadata")).toBe("0");
  const result = await outcome(
    "pr-redteam20-timescaledb-named-partition",
    { mask: RULES, pauseJobs: true, sqlAfter: ["INSERT INTO public.flags203 (name, note) VALUES ('new-checkout', 'on')"] },
    inLargeObjects,
  );
  expectPublishedSafe(result);
});

test("a materialized view reading through query_to_xml a table whose name holds a line break and that forces its row security on its owner is refused naming them, not by SQLSTATE 42501", async () => {
  cleanups.push(() => inProduction(`DROP MATERIALIZED VIEW IF EXISTS public.m204; DROP TABLE IF EXISTS public.U&"t\\000a204";`));
  await inProduction(`
    CREATE TABLE public.U&"t\\000a204" (id integer);
    INSERT INTO public.U&"t\\000a204" VALUES (1), (2);
    CREATE POLICY p204 ON public.U&"t\\000a204" USING (true);
    ALTER TABLE public.U&"t\\000a204" ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
    CREATE MATERIALIZED VIEW public.m204 AS SELECT pg_catalog.query_to_xml(E'SELECT id FROM public."t\\n204"', true, false, '')::text AS x;`);
  const shape = "SELECT 'rows ' || count(*) || ', ' || (x LIKE '%<id>2</id>%')::text FROM public.m204 GROUP BY x";
  expect(await inProduction(shape)).toBe("rows 1, true");
  const result = await outcome("pr-redteam20-row-security-line-break", { mask: RULES, pauseJobs: true }, (uri) => read(uri, shape));
  expect(result).toMatch(/^Preparing fork .*public\.m204/);
  expect(result).not.toMatch(/SQLSTATE/);
});

test("a table a key's ON UPDATE SET DEFAULT writes when the customers' addresses are masked, whose key column's domain has a DEFAULT reading a materialized view through query_to_xml, keeps nothing of production's there", async () => {
  cleanups.push(() =>
    inProduction(
      `DROP TABLE IF EXISTS public.ref205; DROP DOMAIN IF EXISTS public.copy205; ALTER TABLE public.customers DROP CONSTRAINT IF EXISTS u205; ${dropDeepViews("205")}`,
    ),
  );
  await inProduction(`
    ${deepViews("205")}
    ALTER TABLE public.customers ADD CONSTRAINT u205 UNIQUE (id, email);
    -- No column default: SET DEFAULT falls back to the domain's, which FUNCTIONS_ON_WRITE does not read.
    CREATE DOMAIN public.copy205 AS text DEFAULT pg_catalog.query_to_xml('SELECT email FROM public.m_base_205', true, false, '')::text;
    -- MATCH SIMPLE: with cid set to its default (NULL), the key is not checked.
    CREATE TABLE public.ref205 (cid integer, e public.copy205,
      FOREIGN KEY (cid, e) REFERENCES public.customers (id, email) ON UPDATE SET DEFAULT);
    INSERT INTO public.ref205 SELECT id, email FROM public.customers ORDER BY id LIMIT 1;`);
  const result = await outcome("pr-redteam20-cascade-domain-default", { mask: RULES, pauseJobs: true }, copiedInto("public.ref205", "e"));
  expectSafe(result, /^Preparing fork .*public\.ref205/);
});
