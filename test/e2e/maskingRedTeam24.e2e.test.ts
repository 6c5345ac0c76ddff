// A twenty-fourth red team's ways through a masked fork's preparation (docs/masking.md), each read
// through the fork's published URL as its holder reads it, each asserting the safe outcome (so each
// fails where its way works): the fork published with nothing of production's masked values
// readable, or refused naming what it cannot make safe and the fix, with no bare SQLSTATE. Each
// leaves production as it found it. The attacker has tsdbadmin's SQL in production (with
// CREATEROLE, as on Tiger Cloud) and the URL. The target: the preparation's record
// (_tigercloud_preparing_<digest>, tsdbadmin's), which lives until the preparation's last step,
// and the values sampled from production that a run again after a failure past the commit checks
// against. Four of these ways read or erased those values when the record held them; they are now
// digests in the fork's state, never in the fork.
//  1. a materialized view reading the customers whose query calls a function of tsdbadmin's (so
//     refreshed last, alone, once the database's own functions are given back): the function reads
//     every table of every _tigercloud_preparing_* schema (found by name in pg_namespace, read with
//     EXECUTE: no dependency records it) and keeps what it reads in a large object;
//  2. the same from an expression index of a table no rule names, calling a function of
//     tsdbadmin's (IMMUTABLE, as an index's must be): dropped before the first refresh, made again
//     last, before the record is dropped, its build runs the function on each row;
//  3. a fork of a fork whose preparation failed after its COMMIT (a view's refresh divides by zero
//     once the addresses are masked): the first fork's record is copied with its data into the
//     second, masked by the same rules, whose own samples are the first's pseudonyms. It is refused,
//     naming the first's record: what the first sampled from production is not there to check against;
//  4. a plain `pulumi up` again after a preparation refused past its COMMIT, as round 23's third way,
//     with a second materialized view refreshed last (its query calls a function of tsdbadmin's; its
//     name sorts before the refused one's) whose function empties every table of the record as it
//     is refreshed (its refresh commits). The first up is refused (m244b, reading the customers and
//     a table the rules leave unmasked holding copies of their addresses); the next up, which
//     samples only pseudonyms, checks against the first's digests from state, and is refused again;
//  5. not the record: a materialized view refreshed in the first wave (it reads the customers) whose
//     query calls TimescaleDB's _timescaledb_functions.subtract_integer_from_now(regclass, int8), a C
//     function of the extension's, which calls the named hypertable's integer_now function at run
//     time, found in TimescaleDB's catalog: no dependency of the view names it. That function
//     (plpgsql, STABLE) belongs to a role that is a member of tsdbadmin, so it is not held off; it
//     keeps pg_stats of m_deep_245 (refreshed in the second wave) in a large object. TimescaleDB's
//     functions taking a relation by name count as running what no dependency records: the view
//     is refreshed last, after every statistic is made again.
import {
  RULES,
  redTeamLab,
  expectPublishedSafe,
  said,
  atRecordThenRefused,
  deepViews,
  dropDeepViews,
  statsOf,
  ownedByMemberOfTsdbadmin,
  inLargeObjects,
} from "../support/lab/redTeam";
import { readThrough } from "../support/lab/production";

jest.setTimeout(400_000);
const {
  cleanups,
  asSuperuser,
  inProduction,
  outcome,
  unlinkLargeObjects,
  noLargeObjects,
  refusedFork,
  refusedAsForkOf,
  withCreateRole,
  refusedTwice,
} = redTeamLab();

/** The tables of every preparation's record, as a plpgsql loop's query names them. */
const recordTables = `SELECT pg_catalog.format('%I.%I', n.nspname, c.relname) AS t FROM pg_catalog.pg_class c
  JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE c.relkind = 'r' AND n.nspname LIKE '\\_tigercloud\\_preparing\\_%'`;

/** A plpgsql body: every row of every preparation record's tables, as text, kept in one large object (once: none kept yet). */
const stashRecords = `
  DECLARE r record; got text := ''; one text; BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_largeobject_metadata) THEN
      FOR r IN ${recordTables} LOOP
        EXECUTE pg_catalog.format('SELECT pg_catalog.string_agg(x::text, %L) FROM %s x', ' ', r.t) INTO one;
        got := got || ' ' || coalesce(one, '');
      END LOOP;
      PERFORM pg_catalog.lo_from_bytea(0, pg_catalog.convert_to(got, 'UTF8'));
    END IF;
    RETURN $1; END`;

/** How many production addresses the large objects hold, of how many large objects, through a URL. */
const addressesInLargeObjects = (uri: string) =>
  readThrough(
    uri,
    `SELECT 'copied: ' || (SELECT count(*) FROM pg_largeobject_metadata m,
              regexp_matches(lower(convert_from(lo_get(m.oid), 'UTF8')), '[^ ]*@prod-customers[.]example[.]com', 'g') x)
        || ' of ' || (SELECT count(*) FROM pg_largeobject_metadata)`,
  );

test("a materialized view refreshed last, its function of the database's own reading the preparation's record by name, keeps nothing of production's sampled values", async () => {
  cleanups.push(async () => {
    await inProduction("DROP MATERIALIZED VIEW IF EXISTS public.m241; DROP FUNCTION IF EXISTS public.peek241(text);");
    await unlinkLargeObjects();
  });
  await inProduction(`
    CREATE FUNCTION public.peek241(text) RETURNS text LANGUAGE plpgsql VOLATILE AS $f$ ${stashRecords} $f$;
    CREATE MATERIALIZED VIEW public.m241 AS SELECT public.peek241(email) AS v FROM public.customers;`);
  await noLargeObjects();
  const result = await outcome("pr-redteam24-record-last-view", { mask: RULES, pauseJobs: true }, addressesInLargeObjects);
  expectPublishedSafe(result);
});

test("an expression index of a table no rule names, its function of the database's own reading the preparation's record, made again last, keeps nothing of production's sampled values", async () => {
  cleanups.push(async () => {
    await inProduction("DROP TABLE IF EXISTS public.notes242; DROP FUNCTION IF EXISTS public.peek242(text);");
    await unlinkLargeObjects();
  });
  await inProduction(`
    CREATE FUNCTION public.peek242(text) RETURNS text LANGUAGE plpgsql IMMUTABLE AS $f$ ${stashRecords} $f$;
    CREATE TABLE public.notes242 (note text);
    INSERT INTO public.notes242 VALUES ('a note');
    CREATE INDEX notes242_peek ON public.notes242 (public.peek242(note));
    ANALYZE public.notes242;`);
  await noLargeObjects();
  const result = await outcome("pr-redteam24-record-last-index", { mask: RULES, pauseJobs: true }, addressesInLargeObjects);
  expectPublishedSafe(result);
});

test("a fork, masked, of a fork whose preparation failed after its COMMIT is refused, naming the first's record: what it sampled from production is not there to check against", async () => {
  cleanups.push(() => inProduction("DROP MATERIALIZED VIEW IF EXISTS public.m243;"));
  // Refreshed from the masked data, it divides by zero: the first fork's preparation fails past its COMMIT, its record kept.
  await inProduction(`
    CREATE MATERIALIZED VIEW public.m243 AS
      SELECT email, 1 / (CASE WHEN email LIKE '%@prod-customers.example.com' THEN 1 ELSE 0 END) AS ok FROM public.customers;`);
  const first = await refusedFork("pr-redteam24-failed-first", { mask: RULES, pauseJobs: true });
  expect(said(first.message)).toMatch(/public\.m243.*The masking was committed/);
  expect(first.id).toBeDefined();
  // The first fork is stopped now, as a fork whose preparation failed is; Tiger Cloud forks a stopped service as a running one.
  await refusedAsForkOf(first.id as string, "pr-redteam24-fork-of-failed", "public.customers", "email", {
    sql: ["DROP MATERIALIZED VIEW public.m243"],
  });
});

test("a preparation refused after its COMMIT, whose view refreshed last emptied every table of its record, run again by the next up on the same fork, is refused again", async () => {
  // Every table of the record emptied.
  const way = atRecordThenRefused(
    "244",
    `FOR t IN SELECT pg_catalog.format('%I.%I', r.n, c.relname) AS q FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace s ON s.oid = c.relnamespace
        WHERE c.relkind = 'r' AND pg_catalog.format('%I', s.nspname) = r.n LOOP EXECUTE 'DELETE FROM ' || t.q; END LOOP;`,
  );
  cleanups.push(() => inProduction(way.drop));
  await inProduction(way.make);
  await refusedTwice("pr-redteam24-retry-erased", "public.m244b", "v");
});

test("a materialized view refreshed first whose query calls TimescaleDB's subtract_integer_from_now, running a hypertable's integer_now function not held off that keeps a later view's statistics, keeps nothing of production's in large objects", async () => {
  await withCreateRole(async () => {
    await asSuperuser(
      `DROP MATERIALIZED VIEW IF EXISTS public.m245; DROP TABLE IF EXISTS public.h245; DROP FUNCTION IF EXISTS public.now245();
       DROP ROLE IF EXISTS ops245; ${dropDeepViews("245")}`,
    );
    await unlinkLargeObjects();
  });
  await inProduction(`
    ${deepViews("245")}
    CREATE FUNCTION public.now245() RETURNS bigint LANGUAGE plpgsql STABLE AS $f$
      BEGIN PERFORM pg_catalog.lo_from_bytea(0, pg_catalog.convert_to(${statsOf("245")}, 'UTF8')); RETURN 0; END $f$;
    CREATE TABLE public.h245 (t bigint NOT NULL, v int);
    SELECT create_hypertable('public.h245', 't', chunk_time_interval => 1000);
    SELECT set_integer_now_func('public.h245', 'public.now245');
    ${ownedByMemberOfTsdbadmin("ops245", "public.now245()")}
    CREATE MATERIALIZED VIEW public.m245 AS
      SELECT email AS v FROM public.customers
      UNION ALL SELECT _timescaledb_functions.subtract_integer_from_now('public.h245'::regclass, 0)::text;`);
  expect(await inProduction("SELECT proowner::regrole::text FROM pg_proc WHERE oid = 'public.now245()'::regprocedure")).toBe("ops245");
  await noLargeObjects();
  const result = await outcome("pr-redteam24-integer-now-first-wave", { mask: RULES, pauseJobs: true }, inLargeObjects);
  expectPublishedSafe(result);
});
