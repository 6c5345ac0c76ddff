// A twenty-ninth red team's ways through a masked fork's preparation (docs/masking.md), each read
// through the fork's published URL as its holder reads it, each asserting the safe outcome (so each
// fails where its way works): the fork published with nothing of production's masked values
// readable, or refused naming what it cannot make safe and the fix, with no bare SQLSTATE. Each
// leaves production as it found it. The attacker has tsdbadmin's SQL in production (with
// CREATEROLE, as on Tiger Cloud) and the URL. The targets: the newest changes (a language's
// validator and cagg_validate_query counted among the functions running a query given as text; an
// index on a table of an owner lent as 'cycle' refused; a lent role dropped meanwhile skipped) and
// the root they close one door of: a type's input run at run time, named by no catalog entry,
// whose domain's CHECK runs what no check of the preparation sees.
//  1. a domain whose CHECK calls PostgreSQL's builtins alone (query_to_xml of the customers into
//     lo_from_bytea), so no function of the database's own is involved and nothing is held off,
//     reached through TimescaleDB's compressed_data type: its input (compressed_data_in, base64 of
//     its binary form) reads an array-compressed value whose element type is written in the bytes
//     by schema and name (binary_string_get_type), public.dom291, and runs that type's receive
//     function on each element: domain_recv, so the domain's CHECK. A NOT VALID CHECK of the masked
//     customers, (('<base64>'::text)::_timescaledb_internal.compressed_data) IS NOT NULL, names in its
//     parsed form no function (a CoerceViaIO has no funcid) and only the type compressed_data (no
//     domain inside it): FUNCTIONS_ON_WRITE lets it be; the masking's UPDATE runs it, and
//     query_to_xml reads the customers as they are before the UPDATE into a large object that
//     commits with the masking;
//  2. the same compressed_data literal in a materialized view reading the customers (so refreshed
//     in the first wave: its query calls no function of the database's own nor one TEXT_QUERIES
//     lists), whose domain's CHECK (builtins alone) keeps in a large object, through query_to_xml,
//     pg_stats of m_deep_292, refreshed in the second wave, its statistics production's until then;
//  3. (the give-back's order, a continuous aggregate) a continuous aggregate c293 owned by ops293, a
//     role that is a member of tsdbadmin (so lent as 'cycle'), whose query calls a function of
//     tsdbadmin's (so refreshed last). It is emptied (its chunks dropped, as ops293) before the first
//     refresh; giveBackRoutines then takes 'cycle' back with the routines, and its refresh, after,
//     runs as tsdbadmin, no longer ops293's member: TimescaleDB's "must be owner of view", a bare
//     SQLSTATE 42501, the masking committed and the aggregate left emptied;
//  4. (what is made again after the views refreshed last) an index public.i294 calling a function of
//     tsdbadmin's on a table public.t294 the masking does not write: dropped before the first
//     refresh, made again last from pg_get_indexdef's text. A materialized view refreshed last (its
//     query calls a function of tsdbadmin's) renames the table on the fork alone (when the
//     preparation's record is there), as round 28's fifth way dropped a lent role: the index's
//     CREATE INDEX then names a table that is no longer there.
// As found: ways 1 and 2 leaked (a large object of the published fork held production's addresses:
// the customers themselves, and m_deep_292's statistics); ways 3 and 4 were refused with
// PostgreSQL's bare SQLSTATE (42501 at the aggregate's refresh, 42P01 at the index made again).
// Fixed: a domain's CHECK anywhere that calls a function not held off, one running a query given as
// text or one that may write is refused before anything is masked (GUARDS.domainChecksThatMayWrite:
// a value's input reaches a domain no catalog entry names, so following what expressions name cannot
// be complete); a view or aggregate refreshed last of an owner lent as 'cycle' is refused before
// anything is emptied (GUARDS.refreshedLastThroughCycle); an object that cannot be made again as
// production had it is named, with its statement, to make in sqlAfter.
import { readThrough as read } from "../support/lab/production";
import { RULES, redTeamLab, inLargeObjects, expectSafe, deepViews, dropDeepViews, expectPublishedOrNamed } from "../support/lab/redTeam";

jest.setTimeout(600_000);
const { asSuperuser, inProduction, outcome, noLargeObjects, unlinkLargeObjects, withCreateRole } = redTeamLab();

/**
 * An SQL expression: the text form (base64) of a TimescaleDB compressed_data value, array-compressed,
 * of one element 'x' in binary form, whose element type is public.<domain> (named in its bytes).
 */
const compressedOf = (domain: string) =>
  `pg_catalog.encode('\\x0100'::bytea || pg_catalog.convert_to('public', 'UTF8') || '\\x00'::bytea || pg_catalog.convert_to('${domain}', 'UTF8')` +
  ` || '\\x000001000000010000000178'::bytea, 'base64')`;

test("a NOT VALID CHECK of the masked customers casting a text to TimescaleDB's compressed_data, whose bytes name a domain with a CHECK of PostgreSQL's builtins alone (query_to_xml into a large object), keeps nothing of production's in large objects", async () => {
  await withCreateRole(async () => {
    await asSuperuser(`ALTER TABLE public.customers DROP CONSTRAINT IF EXISTS c291; DROP DOMAIN IF EXISTS public.dom291;`);
    await unlinkLargeObjects();
  });
  await inProduction(`
    CREATE DOMAIN public.dom291 AS text CHECK (pg_catalog.lo_from_bytea(0, pg_catalog.convert_to(pg_catalog.query_to_xml(
      'SELECT pg_catalog.string_agg(email, '' '') AS e FROM public.customers', true, false, '')::text, 'UTF8')) IS NOT NULL);
    DO $d$ BEGIN
      EXECUTE pg_catalog.format('ALTER TABLE public.customers ADD CONSTRAINT c291 CHECK (((%L::text)::_timescaledb_internal.compressed_data) IS NOT NULL) NOT VALID',
        ${compressedOf("dom291")});
    END $d$;`);
  // The CHECK's parsed form names no function, and no domain.
  expect(
    await inProduction(`SELECT (pg_get_constraintdef(oid) LIKE '%compressed_data%')::text || ' ' || (conbin::text ~ ':funcid')::text
      FROM pg_constraint WHERE conname = 'c291'`),
  ).toBe("true false");
  await noLargeObjects();
  const result = await outcome("pr-redteam29-compressed-check", { mask: RULES, pauseJobs: true }, inLargeObjects);
  expectSafe(result, /c291|dom291|compressed_data/);
});

test("a materialized view refreshed first casting a text to TimescaleDB's compressed_data, whose bytes name a domain whose CHECK (builtins alone) keeps a later view's statistics in a large object, keeps nothing of production's in large objects", async () => {
  await withCreateRole(async () => {
    await asSuperuser(`DROP MATERIALIZED VIEW IF EXISTS public.m292; DROP DOMAIN IF EXISTS public.dom292; ${dropDeepViews("292")}`);
    await unlinkLargeObjects();
  });
  await inProduction(`
    ${deepViews("292")}
    CREATE DOMAIN public.dom292 AS text CHECK (pg_catalog.lo_from_bytea(0, pg_catalog.convert_to(pg_catalog.query_to_xml(
      'SELECT s.most_common_vals::text AS m, s.histogram_bounds::text AS h FROM pg_catalog.pg_stats s WHERE s.schemaname = ''public'' AND s.tablename = ''m_deep_292''',
      true, false, '')::text, 'UTF8')) IS NOT NULL);
    DO $d$ BEGIN
      EXECUTE pg_catalog.format('CREATE MATERIALIZED VIEW public.m292 AS SELECT email AS v FROM public.customers
        UNION ALL SELECT ((%L::text)::_timescaledb_internal.compressed_data)::text', ${compressedOf("dom292")});
    END $d$;`);
  await noLargeObjects();
  const result = await outcome("pr-redteam29-compressed-view", { mask: RULES, pauseJobs: true }, inLargeObjects);
  expectSafe(result, /m292|dom292|compressed_data/);
});

test("a continuous aggregate of a role that is a member of tsdbadmin, calling a function of tsdbadmin's (refreshed last): the fork is published with it refreshed, or refused naming it and the fix, with no bare SQLSTATE", async () => {
  await withCreateRole(() =>
    asSuperuser(`DROP MATERIALIZED VIEW IF EXISTS public.c293; DROP FUNCTION IF EXISTS public.same293(text);
      DROP OWNED BY ops293; DROP ROLE IF EXISTS ops293;`).catch(() =>
      asSuperuser(
        `DROP MATERIALIZED VIEW IF EXISTS public.c293; DROP FUNCTION IF EXISTS public.same293(text); DROP ROLE IF EXISTS ops293;`,
      ),
    ),
  );
  await inProduction(`
    CREATE FUNCTION public.same293(text) RETURNS text LANGUAGE sql IMMUTABLE AS $f$ SELECT $1 $f$;
    CREATE ROLE ops293 NOLOGIN;
    GRANT ops293 TO tsdbadmin;
    GRANT CREATE ON SCHEMA public TO ops293;
    GRANT SELECT ON public.events TO ops293;
    SET ROLE ops293;
    CREATE MATERIALIZED VIEW public.c293 WITH (timescaledb.continuous) AS
      SELECT time_bucket('1 day', time) AS day, public.same293(customer_email) AS v, count(*) AS n
        FROM public.events WHERE customer_id % 10 = 0 GROUP BY 1, 2 WITH NO DATA;
    CALL refresh_continuous_aggregate('public.c293', NULL, NULL);
    SET ROLE tsdbadmin;
    REVOKE CREATE ON SCHEMA public FROM ops293;
    REVOKE ops293 FROM tsdbadmin;
    GRANT tsdbadmin TO ops293;`);
  const rows = `SELECT count(*) FILTER (WHERE lower(v) LIKE '%prod-customers.example.com%')::text || ' of ' || (count(*) > 0)::text FROM public.c293`;
  expect(await inProduction("SELECT view_owner::text FROM timescaledb_information.continuous_aggregates WHERE view_name = 'c293'")).toBe(
    "ops293",
  );
  const result = await outcome("pr-redteam29-cycle-aggregate", { mask: RULES, pauseJobs: true }, (uri) => read(uri, rows));
  expectPublishedOrNamed(result, "published, 0 of true", /c293.*(drop it in prepare\.sql|make it tsdbadmin's|in production)/);
});

test("an index calling a function of tsdbadmin's on a table the masking does not write, the table renamed on the fork by a view refreshed last: the fork is published with the index made again, or refused naming it and the fix, with no bare SQLSTATE", async () => {
  await withCreateRole(() =>
    asSuperuser(`DROP MATERIALIZED VIEW IF EXISTS public.m294; DROP FUNCTION IF EXISTS public.move294(text);
      DROP TABLE IF EXISTS public.t294, public.t294_moved; DROP FUNCTION IF EXISTS public.f294(text);`),
  );
  await inProduction(`
    CREATE FUNCTION public.f294(text) RETURNS text LANGUAGE sql IMMUTABLE AS $f$ SELECT pg_catalog.lower($1) $f$;
    CREATE TABLE public.t294 (v text);
    INSERT INTO public.t294 SELECT 'Note ' || i FROM generate_series(1, 50) i;
    CREATE INDEX i294 ON public.t294 (public.f294(v));
    ANALYZE public.t294;
    -- On the fork alone (its record there): the index's table renamed.
    CREATE FUNCTION public.move294(text) RETURNS text LANGUAGE plpgsql VOLATILE AS $f$ BEGIN
      IF EXISTS (SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname LIKE '\\_tigercloud\\_preparing\\_%')
         AND EXISTS (SELECT 1 FROM pg_catalog.pg_tables WHERE schemaname = 'public' AND tablename = 't294') THEN
        ALTER TABLE public.t294 RENAME TO t294_moved;
      END IF;
      RETURN $1; END $f$;
    CREATE MATERIALIZED VIEW public.m294 AS SELECT public.move294(email) AS v FROM (SELECT email FROM public.customers LIMIT 1) c;`);
  const index = "SELECT count(*)::text FROM pg_indexes WHERE indexname = 'i294'";
  expect(await inProduction(index)).toBe("1");
  const result = await outcome("pr-redteam29-renamed-table", { mask: RULES, pauseJobs: true }, (uri) => read(uri, index));
  expectPublishedOrNamed(result, "published, 1", /i294/);
});
