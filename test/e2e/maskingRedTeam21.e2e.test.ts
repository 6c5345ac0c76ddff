// A twenty-first red team's ways through a masked fork's preparation (docs/masking.md), each read
// through the fork's published URL as its holder reads it, each asserting the safe outcome (so each
// fails on the code it was written against): the fork published with nothing of production's masked
// values readable, or refused naming what it cannot make safe and the fix, with no bare SQLSTATE.
// Each leaves production as it found it. The attacker has tsdbadmin's SQL in production and the
// URL; the team's prepare.sqlAfter is an ordinary seed (one INSERT of a row), the team's own.
// The ways through prepare.sqlAfter were closed by running it last, once every view is refreshed,
// every statistic made again and every function given back: those seeds are published, copying
// only the masking's values (textQueriesOnWrite, named below, refused them before and is gone).
//  1. a partitioned table prepare.sqlAfter seeds, partitioned BY LIST ((name::public.leak211)):
//     the key expression is a cast to a domain whose CHECK calls only PostgreSQL's own functions
//     (query_to_xml of a materialized view of the addresses, kept in a large object by
//     lo_from_bytea). Tuple routing evaluates the key on each row inserted, running the CHECK while
//     the view still holds production's rows. textQueriesOnWrite reads defaults, column types,
//     CHECKs, indexes, triggers and rules, never pg_partitioned_table.partexprs;
//  2. a table prepare.sqlAfter seeds whose column default is
//     pg_catalog.record_in('(x)', <a composite type's oid, as an oid literal>, -1)::text: record_in
//     runs each field's input function, and the composite's one field is of a domain whose CHECK
//     stashes query_to_xml of a materialized view in a large object. The type is named by an oid
//     constant (consttype 26), which TYPES_NAMED does not follow and pg_depend does not record;
//     record_in is PostgreSQL's, STABLE, and no text query;
//  3. a table prepare.sqlAfter seeds with a rule (DO ALSO INSERT … SELECT) reading a continuous
//     aggregate's materialization hypertable directly: a table (relkind 'r'), not a view, so
//     textQueriesOnWrite's rule branch (reading a 'v' or 'm') passes it; the aggregate is
//     refreshed only after the COMMIT, and holds production's addresses while sqlAfter runs;
//  4. a table a key's ON UPDATE SET DEFAULT writes when the customers' addresses are masked (MATCH
//     SIMPLE, its id's default NULL), whose key column's own default is the record_in call of 2.
//     FUNCTIONS_ON_WRITE reads the default's parsed form (record_in: PostgreSQL's, STABLE, no
//     _to_xml) and its pg_depend types (none: an oid constant), so the domain's CHECK, under a
//     composite named by oid, runs inside the masking's transaction while the view holds
//     production's rows;
//  5. a table prepare.sqlAfter seeds with a trigger whose function (plpgsql, copying a materialized
//     view of the addresses) belongs to a role that is itself a member of tsdbadmin, so it is not
//     held off (the grant would be circular). textQueriesOnWrite follows a trigger's function
//     only to PostgreSQL's text-query functions; for a function left as it is, nothing refuses;
//  6. a materialized view whose query runs record_in of a composite named by its oid, the field's
//     domain CHECK stashing query_to_xml of pg_stats of m_deep_216 (refreshed in the second wave,
//     its statistics production's until then) in a large object. READS takes a view for opaque
//     (refreshed last) when it calls a function of the database's own or a text query: record_in is
//     neither, and no dependency names the type or pg_stats, so it is refreshed in the first wave.
import { EVENTS_TABLE } from "../../simulator/production";
import {
  PRODUCTION_ADDRESS,
  RULES,
  deepViews,
  dropDeepViews,
  inLargeObjects,
  onMaterialization,
  ownedByMemberOfTsdbadmin,
  redTeamLab,
  expectSafe,
  expectPublishedSafe,
  copiedInto,
} from "../support/lab/redTeam";

jest.setTimeout(300_000);
const { asSuperuser, cleanups, inProduction, outcome, unlinkLargeObjects, withCreateRole } = redTeamLab();

/** A domain whose CHECK keeps m_base_<tag>'s rows (production's until its refresh) in a large object: PostgreSQL's own functions only. */
const leakingDomain = (tag: string) => `
    CREATE DOMAIN public.leak${tag} AS text CHECK (pg_catalog.lo_from_bytea(0, pg_catalog.convert_to(
      pg_catalog.query_to_xml('SELECT email FROM public.m_base_${tag}', true, false, '')::text, 'UTF8')) IS NOT NULL);`;

/** An expression running leak<tag>'s CHECK through record_in, its composite named by an oid literal (no type named, no dependency). */
const byOid = (tag: string) => `
    CREATE TYPE public.carrier${tag} AS (v public.leak${tag});`;
const recordIn = (tag: string) =>
  `format('pg_catalog.record_in(%L::pg_catalog.cstring, %s::pg_catalog.oid, -1)::pg_catalog.text', '(x)', 'public.carrier${tag}'::regtype::oid)`;

test("a partitioned table prepare.sqlAfter seeds, whose partition key casts to a domain with a CHECK reading a materialized view into a large object, keeps nothing of production's there", async () => {
  cleanups.push(async () => {
    await inProduction(`DROP TABLE IF EXISTS public.flags211; DROP DOMAIN IF EXISTS public.leak211; ${dropDeepViews("211")}`);
    await unlinkLargeObjects();
  });
  await inProduction(`
    ${deepViews("211")}
    ${leakingDomain("211")}
    -- No function of the database's own, no CHECK, default or index on the table: its key's expression only.
    CREATE TABLE public.flags211 (name text, note text) PARTITION BY LIST ((name::public.leak211));
    CREATE TABLE public.flags211_all PARTITION OF public.flags211 DEFAULT;`);
  await unlinkLargeObjects();
  expect(await inProduction("SELECT count(*) FROM pg_largeobject_metadata")).toBe("0");
  const result = await outcome(
    "pr-redteam21-partition-key-domain",
    { mask: RULES, pauseJobs: true, sqlAfter: ["INSERT INTO public.flags211 (name, note) VALUES ('new-checkout', 'on')"] },
    inLargeObjects,
  );
  // A domain whose CHECK may write is refused wherever it is (a value's input reaches it unnamed), or the fork is published safe.
  expectSafe(result, /^Preparing fork .*the domain public\.leak211's CHECK \w+ runs lo_from_bytea/);
});

test("a table prepare.sqlAfter seeds, whose default runs record_in of a composite named by its oid, its field's domain CHECK reading a materialized view into a large object, keeps nothing of production's there", async () => {
  cleanups.push(async () => {
    await inProduction(
      `DROP TABLE IF EXISTS public.flags212; DROP TYPE IF EXISTS public.carrier212; DROP DOMAIN IF EXISTS public.leak212; ${dropDeepViews("212")}`,
    );
    await unlinkLargeObjects();
  });
  await inProduction(`
    ${deepViews("212")}
    ${leakingDomain("212")}
    ${byOid("212")}
    DO $d$ BEGIN EXECUTE format('CREATE TABLE public.flags212 (name text PRIMARY KEY, note text DEFAULT %s)', ${recordIn("212")}); END $d$;`);
  await unlinkLargeObjects();
  expect(await inProduction("SELECT count(*) FROM pg_largeobject_metadata")).toBe("0");
  const result = await outcome(
    "pr-redteam21-record-in-default",
    { mask: RULES, pauseJobs: true, sqlAfter: ["INSERT INTO public.flags212 (name) VALUES ('new-checkout')"] },
    inLargeObjects,
  );
  // A domain whose CHECK may write is refused wherever it is (a value's input reaches it unnamed), or the fork is published safe.
  expectSafe(result, /^Preparing fork .*the domain public\.leak212's CHECK \w+ runs lo_from_bytea/);
});

test("a table prepare.sqlAfter seeds, with a rule copying a continuous aggregate's materialization hypertable on insert, keeps nothing of production's where the rule writes", async () => {
  cleanups.push(() =>
    inProduction(
      `DROP TABLE IF EXISTS public.flags213; DROP MATERIALIZED VIEW IF EXISTS public.c213; DROP TABLE IF EXISTS public.stolen213;`,
    ),
  );
  await inProduction(`
    CREATE MATERIALIZED VIEW public.c213 WITH (timescaledb.continuous) AS
      SELECT time_bucket('1 day', time) AS day, customer_email AS e, count(*) AS n
        FROM public.${EVENTS_TABLE} WHERE customer_id % 10 = 0 GROUP BY 1, 2;
    CREATE TABLE public.stolen213 (v text);
    CREATE TABLE public.flags213 (name text PRIMARY KEY);
    -- No function, no view: the rule's action reads a table, the aggregate's own, production's until its refresh after the COMMIT.
    ${onMaterialization("c213", "CREATE RULE r213 AS ON INSERT TO public.flags213 DO ALSO INSERT INTO public.stolen213 SELECT m::text FROM %s m")}`);
  expect(await inProduction(`SELECT count(*) FROM public.c213 WHERE e LIKE '${PRODUCTION_ADDRESS}'`)).not.toBe("0");
  const result = await outcome(
    "pr-redteam21-rule-materialization",
    { mask: RULES, pauseJobs: true, sqlAfter: ["INSERT INTO public.flags213 (name) VALUES ('new-checkout')"] },
    copiedInto("public.stolen213", "v"),
  );
  expectPublishedSafe(result);
});

test("a table a key's ON UPDATE SET DEFAULT writes when the customers' addresses are masked, whose key column's default runs record_in of a composite named by its oid, keeps nothing of production's in large objects", async () => {
  cleanups.push(async () => {
    await inProduction(
      `DROP TABLE IF EXISTS public.ref214; DROP TYPE IF EXISTS public.carrier214; DROP DOMAIN IF EXISTS public.leak214; ALTER TABLE public.customers DROP CONSTRAINT IF EXISTS u214; ${dropDeepViews("214")}`,
    );
    await unlinkLargeObjects();
  });
  await inProduction(`
    ${deepViews("214")}
    ${leakingDomain("214")}
    ${byOid("214")}
    ALTER TABLE public.customers ADD CONSTRAINT u214 UNIQUE (id, email);
    -- MATCH SIMPLE: with cid set to its default (NULL), the key is not checked.
    DO $d$ BEGIN EXECUTE format('CREATE TABLE public.ref214 (cid integer, e text DEFAULT %s,
      FOREIGN KEY (cid, e) REFERENCES public.customers (id, email) ON UPDATE SET DEFAULT)', ${recordIn("214")}); END $d$;
    INSERT INTO public.ref214 SELECT id, email FROM public.customers ORDER BY id LIMIT 1;`);
  await unlinkLargeObjects();
  expect(await inProduction("SELECT count(*) FROM pg_largeobject_metadata")).toBe("0");
  const result = await outcome("pr-redteam21-cascade-record-in", { mask: RULES, pauseJobs: true }, inLargeObjects);
  expectSafe(result, /^Preparing fork .*(public\.ref214|the domain public\.leak214's CHECK \w+ runs lo_from_bytea)/);
});

test("a table prepare.sqlAfter seeds, with a trigger whose function belongs to a role that is a member of tsdbadmin (not held off) copying a materialized view, keeps nothing of production's where it writes", async () => {
  await withCreateRole(() =>
    asSuperuser(
      `DROP TABLE IF EXISTS public.flags215, public.stolen215; DROP FUNCTION IF EXISTS public.steal215(); DROP ROLE IF EXISTS ops215; ${dropDeepViews("215")}`,
    ),
  );
  await inProduction(`
    ${deepViews("215")}
    CREATE TABLE public.stolen215 (v text);
    CREATE TABLE public.flags215 (name text PRIMARY KEY);
    CREATE FUNCTION public.steal215() RETURNS trigger LANGUAGE plpgsql AS $f$
      BEGIN INSERT INTO public.stolen215 SELECT email FROM public.m_base_215; RETURN NEW; END $f$;
    CREATE TRIGGER t215 AFTER INSERT ON public.flags215 FOR EACH ROW EXECUTE FUNCTION public.steal215();
    ${ownedByMemberOfTsdbadmin("ops215", "public.steal215()")}`);
  expect(await inProduction("SELECT proowner::regrole::text FROM pg_proc WHERE oid = 'public.steal215()'::regprocedure")).toBe("ops215");
  const result = await outcome(
    "pr-redteam21-trigger-not-held-off",
    { mask: RULES, pauseJobs: true, sqlAfter: ["INSERT INTO public.flags215 (name) VALUES ('new-checkout')"] },
    copiedInto("public.stolen215", "v"),
  );
  expectPublishedSafe(result);
});

test("a materialized view whose query runs record_in of a composite named by its oid, its field's domain CHECK keeping pg_stats of a view refreshed later in a large object, keeps nothing of production's there", async () => {
  cleanups.push(async () => {
    await inProduction(
      `DROP MATERIALIZED VIEW IF EXISTS public.m216; DROP TYPE IF EXISTS public.carrier216; DROP DOMAIN IF EXISTS public.leak216; ${dropDeepViews("216")}`,
    );
    await unlinkLargeObjects();
  });
  await inProduction(`
    ${deepViews("216")}
    -- PostgreSQL's own functions only: m_deep_216's statistics (production's until its refresh, in the second wave) as XML, in a large object.
    CREATE DOMAIN public.leak216 AS text CHECK (pg_catalog.lo_from_bytea(0, pg_catalog.convert_to(pg_catalog.query_to_xml(
      'SELECT s.most_common_vals::text AS m, s.histogram_bounds::text AS h FROM pg_catalog.pg_stats s WHERE s.schemaname = ''public'' AND s.tablename = ''m_deep_216''',
      true, false, '')::text, 'UTF8')) IS NOT NULL);
    ${byOid("216")}
    DO $d$ BEGIN EXECUTE format('CREATE MATERIALIZED VIEW public.m216 AS SELECT %s AS x', ${recordIn("216")}); END $d$;`);
  expect(
    await inProduction(
      `SELECT count(*) FROM pg_largeobject_metadata WHERE lower(convert_from(lo_get(oid), 'UTF8')) LIKE '${PRODUCTION_ADDRESS}'`,
    ),
  ).not.toBe("0");
  await unlinkLargeObjects();
  expect(await inProduction("SELECT count(*) FROM pg_largeobject_metadata")).toBe("0");
  const result = await outcome("pr-redteam21-view-record-in-stats", { mask: RULES, pauseJobs: true }, inLargeObjects);
  expectSafe(result, /^Preparing fork .*(public\.m216|the domain public\.leak216's CHECK \w+ runs lo_from_bytea)/);
});
