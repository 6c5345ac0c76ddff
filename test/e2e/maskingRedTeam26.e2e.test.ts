// A twenty-sixth red team's ways through a masked fork's preparation (docs/masking.md), each read
// through the fork's published URL as its holder reads it, each asserting the safe outcome (so each
// fails where its way works): the fork published with nothing of production's masked values
// readable, or refused naming what it cannot make safe and the fix, with no bare SQLSTATE. Each
// leaves production as it found it. The attacker has tsdbadmin's SQL in production (with
// CREATEROLE, as on Tiger Cloud) and the URL. The targets: the newest changes (a failure past the
// commit makes the preparation's record again, last; a fork holding another fork's record is
// refused; every check compares texts in one normal form, statements.normal(); TimescaleDB's
// functions taking a relation, a function or a job's configuration count as opaque). Each leaked
// before its fix: after a failure, before its record is made again, jobs scheduled since are
// paused again and the fork's other sessions this role may end are ended (1); the checks compare
// each side upper-cased, then lower-cased (2); an owner of functions that is itself a member of
// tsdbadmin has that membership withheld while the preparation holds its functions off, so that
// they are held off too: one run by parse analysis fails the preparation, naming it (3-5).
//  1. round 25's fork of a failed fork, with the record erased AFTER keepRecord made it again: a
//     TimescaleDB job of tsdbadmin's, made in production unscheduled (so pauseJobs, which pauses
//     only scheduled jobs, leaves it alone), is scheduled to start at once by a function of
//     tsdbadmin's that a materialized view refreshed last calls (m261a_arm; its function puts the
//     fork's record's name, found in pg_namespace, in the job's config). The job, a procedure,
//     drops that record, commits, and does so again every millisecond for 20 s (a second view
//     refreshed last, m261a_wait, sleeps 3 s so that the job is surely running): whatever the
//     preparation makes again, in its own transaction, at its very end (keepRecord), is gone a
//     moment after, before the fork is stopped. The first fork is refused (m261b, reading the
//     customers and a table the rules leave unmasked holding copies of their addresses) and says
//     nothing of its record; a fork of it, masked by the same rules, finds no record (the guard
//     unfinishedSource reads pg_namespace once, first), samples only the first's pseudonyms,
//     checks against nothing of production's, and publishes m261b;
//  2. one normal form that is not one: a masked column whose production values hold a dotless ı
//     (U+0131), and a materialized view (refreshed last, checked) holding them upper-cased by ICU
//     (upper(v COLLATE "und-x-icu"): ı becomes I) from a table the rules leave unmasked. Every check
//     compares lower(btrim(…)) of both sides, and lower('I') is 'i', not 'ı': the view's rows,
//     which docs/masking.md says are compared "whatever their letter case", are not found holding
//     production's values, and the fork is published, not refused even once;
//  3. a materialized view refreshed in the first wave (it reads the customers) whose query calls
//     TimescaleDB's _timescaledb_functions.cagg_validate_query(text): a C function of the
//     extension's taking only text (no regclass, name, regproc, oid or jsonb; not a policy_*), so
//     not opaque. It parse-analyses the query it is given, and parse analysis converts a literal to
//     its type there and then: '(x)'::public.comp263 runs record_in, which runs domain_in for the
//     composite's field of the domain public.dom263, which runs the domain's CHECK, which calls
//     public.stash263 (plpgsql, of a role that is a member of tsdbadmin, so not held off). No
//     dependency, type or call of the view names the composite, the domain or the function: they
//     are in a string. The function keeps pg_stats of m_deep_263 (refreshed in the second wave,
//     its statistics production's until then) in a large object;
//  4. the same without TimescaleDB: the view's query calls PostgreSQL's own
//     pg_catalog.fmgr_sql_validator(oid) on a SQL function (public.body265, of another member of
//     tsdbadmin, so not held off: its body is the one it was made with) whose body casts
//     '(x)'::public.comp265. With check_function_bodies on (the preparation pins it on) the
//     validator parse-analyses the body, and so runs record_in, domain_in and the domain's CHECK.
//     The function is named by an oid read from pg_proc (no regprocedure constant, so no
//     dependency); TEXT_QUERIES lists no validator;
//  5. no view at all, inside the masking's own transaction: a CHECK constraint of the masked
//     customers (NOT VALID, so production never runs it) calling fmgr_sql_validator(<oid>) on such
//     a SQL function. The validator is PostgreSQL's and not VOLATILE, and the CHECK's parsed form
//     names only it and an oid constant, so functionsOnWrite lets it be; the masking's UPDATE runs
//     the CHECK on its first row, and the domain's function (not held off) reads the customers as
//     they are before the UPDATE, production's addresses, into a large object that commits with
//     the masking.
import {
  RULES,
  redTeamLab,
  said,
  jobAtRecordThenRefused,
  copiedInto,
  deepViews,
  dropDeepViews,
  statsOf,
  ownedByMemberOfTsdbadmin,
  inLargeObjects,
  expectSafe,
} from "../support/lab/redTeam";
import { readThrough } from "../support/lab/production";

jest.setTimeout(600_000);
/** A function held off that ran all the same, named (a domain's CHECK, run by parse analysis of a text), or a validator run on one. */
const HELD_OFF_RAN =
  /public\.stash26\d\(text\), a function of the database's own, ran where the preparation lets none run|a language's validator \(such as fmgr_sql_validator\) ran on a function of the database's own while the preparation held it off|runs (pg_catalog\.)?fmgr_sql_validator\(oid\), a function [^,]+, on each row the masking writes/;
const { cleanups, asSuperuser, inProduction, outcome, refusedFork, refusedAsForkOf, unlinkLargeObjects, noLargeObjects, withCreateRole } =
  redTeamLab();

/**
 * A composite public.comp<tag> whose field is of a domain public.dom<tag> whose CHECK calls
 * public.stash<tag>(text), running `body` (plpgsql), of a role ops<tag> that is a member of
 * tsdbadmin: a cast of '(x)' to the composite, parsed, runs it.
 */
const domainCheckCalling = (tag: string, body: string) => `
    CREATE FUNCTION public.stash${tag}(text) RETURNS boolean LANGUAGE plpgsql VOLATILE AS $f$ BEGIN
      ${body} RETURN true; END $f$;
    CREATE DOMAIN public.dom${tag} AS text CHECK (public.stash${tag}(VALUE));
    CREATE TYPE public.comp${tag} AS (v public.dom${tag});
    ${ownedByMemberOfTsdbadmin(`ops${tag}`, `public.stash${tag}(text)`)}`;

test("a fork, masked, of a fork whose preparation failed after its COMMIT and whose job (scheduled by a view refreshed last) erased its record after it was made again, is refused, naming the first's record", async () => {
  const way = jobAtRecordThenRefused("261", "erase261", 20);
  cleanups.push(() =>
    inProduction(`${way.drop} SELECT delete_job(job_id) FROM timescaledb_information.jobs WHERE proc_name = 'erase261';
      DROP PROCEDURE IF EXISTS public.erase261(int, jsonb);`),
  );
  await inProduction(`
    CREATE PROCEDURE public.erase261(job_id int, config jsonb) LANGUAGE plpgsql AS $p$ BEGIN
      IF config IS NULL OR NOT config ? 'record' THEN RETURN; END IF;
      LOOP
        EXECUTE pg_catalog.format('DROP SCHEMA IF EXISTS %I CASCADE', config->>'record');
        COMMIT;
        EXIT WHEN pg_catalog.clock_timestamp() > (config->>'until')::timestamptz;
        PERFORM pg_catalog.pg_sleep(0.001);
      END LOOP;
    END $p$;
    SELECT add_job('public.erase261', '1 day', scheduled => false);
    ${way.make}`);
  expect(await inProduction("SELECT scheduled FROM timescaledb_information.jobs WHERE proc_name = 'erase261'")).toBe("f");
  const first = await refusedFork("pr-redteam26-erased-record", { mask: RULES, pauseJobs: true });
  const firstSaid = said(first.message);
  expect(firstSaid).toMatch(/The masking was committed/);
  // It says nothing of a record it could not make again: it made it, and the job erased it after.
  expect(firstSaid).not.toMatch(/could not be made again/);
  expect(first.id).toBeDefined();
  await refusedAsForkOf(first.id as string, "pr-redteam26-fork-of-erased", "public.m261b", "v");
});

test("a materialized view holding a masked column's production values upper-cased by ICU (a dotless ı becomes I), from a table no rule names, is refused for holding production's values", async () => {
  cleanups.push(() =>
    inProduction(
      "DROP MATERIALIZED VIEW IF EXISTS public.m262; DROP TABLE IF EXISTS public.people262, public.notes262; DROP FUNCTION IF EXISTS public.same262(text);",
    ),
  );
  // ICU's upper case of ı is I, whose lower case (the checks') is i.
  expect(await inProduction(`SELECT pg_catalog.lower(pg_catalog.upper('ı' COLLATE "und-x-icu")) = 'ı'`)).toBe("f");
  await inProduction(`
    CREATE TABLE public.people262 (id int PRIMARY KEY, email text);
    INSERT INTO public.people262 SELECT i, 'kadı-262-' || i || '@prod-customers.example.com' FROM generate_series(1, 50) i;
    CREATE TABLE public.notes262 AS SELECT email AS v FROM public.people262;
    CREATE FUNCTION public.same262(text) RETURNS text LANGUAGE sql IMMUTABLE AS $f$ SELECT $1 $f$;
    CREATE MATERIALIZED VIEW public.m262 AS SELECT public.same262(email) AS v FROM public.people262
      UNION ALL SELECT pg_catalog.upper(v COLLATE "und-x-icu") FROM public.notes262;
    ANALYZE public.people262, public.notes262, public.m262;`);
  const rules = [...RULES, { table: "people262", column: "email", with: "email" }];
  const result = await outcome("pr-redteam26-dotless", { mask: rules, pauseJobs: true }, copiedInto("public.m262", "v"));
  expect(result).toMatch(/^Preparing fork .*public\.m262 still holds \d+ row\(s\) with values from before the masking/);
  expect(result).not.toMatch(/SQLSTATE/);
});

test("a materialized view refreshed first whose query calls TimescaleDB's cagg_validate_query(text), whose parse analysis of a composite literal runs a domain CHECK's function not held off that keeps a later view's statistics, keeps nothing of production's in large objects", async () => {
  await withCreateRole(async () => {
    await asSuperuser(
      `DROP MATERIALIZED VIEW IF EXISTS public.m263; DROP TYPE IF EXISTS public.comp263; DROP DOMAIN IF EXISTS public.dom263;
       DROP FUNCTION IF EXISTS public.stash263(text); DROP ROLE IF EXISTS ops263; ${dropDeepViews("263")}`,
    );
    await unlinkLargeObjects();
  });
  await inProduction(`
    ${deepViews("263")}
    ${domainCheckCalling("263", `PERFORM pg_catalog.lo_from_bytea(0, pg_catalog.convert_to(${statsOf("263")}, 'UTF8'));`)}
    CREATE MATERIALIZED VIEW public.m263 AS SELECT email AS v FROM public.customers
      UNION ALL SELECT x::text FROM _timescaledb_functions.cagg_validate_query($q$SELECT '(x)'::public.comp263$q$) x;`);
  expect(await inProduction(`SELECT proowner::regrole::text FROM pg_proc WHERE oid = 'public.stash263(text)'::regprocedure`)).toBe(
    "ops263",
  );
  // Its parse analysis ran the domain's CHECK in production too, as the view was made.
  expect(await inProduction("SELECT count(*) > 0 FROM pg_largeobject_metadata")).toBe("t");
  await noLargeObjects();
  const result = await outcome("pr-redteam26-validate-query", { mask: RULES, pauseJobs: true }, inLargeObjects);
  expectSafe(result, HELD_OFF_RAN);
});

test("a materialized view refreshed first whose query calls PostgreSQL's fmgr_sql_validator(oid) on a SQL function whose body casts a composite literal, running a domain CHECK's function not held off that keeps a later view's statistics, keeps nothing of production's in large objects", async () => {
  await withCreateRole(async () => {
    await asSuperuser(
      `DROP MATERIALIZED VIEW IF EXISTS public.m265; DROP FUNCTION IF EXISTS public.body265(); DROP TYPE IF EXISTS public.comp265;
       DROP DOMAIN IF EXISTS public.dom265; DROP FUNCTION IF EXISTS public.stash265(text); DROP ROLE IF EXISTS ops265, ops265b; ${dropDeepViews("265")}`,
    );
    await unlinkLargeObjects();
  });
  await inProduction(`
    ${deepViews("265")}
    ${domainCheckCalling("265", `PERFORM pg_catalog.lo_from_bytea(0, pg_catalog.convert_to(${statsOf("265")}, 'UTF8'));`)}
    CREATE FUNCTION public.body265() RETURNS text LANGUAGE sql STABLE AS $b$ SELECT ('(x)'::public.comp265)::text $b$;
    ${ownedByMemberOfTsdbadmin("ops265b", "public.body265()")}
    CREATE MATERIALIZED VIEW public.m265 AS SELECT email AS v FROM public.customers
      UNION ALL SELECT pg_catalog.fmgr_sql_validator(p.oid)::text FROM pg_catalog.pg_proc p
       WHERE p.proname = 'body265' AND p.pronamespace = 'public'::regnamespace;`);
  expect(await inProduction(`SELECT proowner::regrole::text FROM pg_proc WHERE oid = 'public.body265()'::regprocedure`)).toBe("ops265b");
  // Its validation ran the domain's CHECK in production too, as the function and the view were made.
  expect(await inProduction("SELECT count(*) > 0 FROM pg_largeobject_metadata")).toBe("t");
  await noLargeObjects();
  const result = await outcome("pr-redteam26-sql-validator", { mask: RULES, pauseJobs: true }, inLargeObjects);
  expectSafe(result, HELD_OFF_RAN);
});

test("a CHECK constraint of the masked customers calling PostgreSQL's fmgr_sql_validator(oid) on a SQL function whose body casts a composite literal, running a domain CHECK's function not held off that reads the customers, keeps nothing of production's in large objects", async () => {
  await withCreateRole(async () => {
    await asSuperuser(
      `ALTER TABLE public.customers DROP CONSTRAINT IF EXISTS c266; DROP FUNCTION IF EXISTS public.body266(); DROP TYPE IF EXISTS public.comp266;
       DROP DOMAIN IF EXISTS public.dom266; DROP FUNCTION IF EXISTS public.stash266(text); DROP ROLE IF EXISTS ops266, ops266b;`,
    );
    await unlinkLargeObjects();
  });
  // PostgreSQL's validator is not VOLATILE: functionsOnWrite lets a CHECK call it.
  expect(await inProduction("SELECT provolatile FROM pg_proc WHERE oid = 'pg_catalog.fmgr_sql_validator(oid)'::regprocedure")).not.toBe(
    "v",
  );
  await inProduction(`
    ${domainCheckCalling(
      "266",
      `IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_largeobject_metadata) THEN
        PERFORM pg_catalog.lo_from_bytea(0, pg_catalog.convert_to((SELECT pg_catalog.string_agg(email, ' ') FROM public.customers), 'UTF8'));
      END IF;`,
    )}
    CREATE FUNCTION public.body266() RETURNS text LANGUAGE sql STABLE AS $b$ SELECT ('(x)'::public.comp266)::text $b$;
    ${ownedByMemberOfTsdbadmin("ops266b", "public.body266()")}
    DO $d$ BEGIN
      EXECUTE pg_catalog.format('ALTER TABLE public.customers ADD CONSTRAINT c266 CHECK ((pg_catalog.fmgr_sql_validator(%s::oid))::text IS NOT NULL) NOT VALID',
        'public.body266()'::regprocedure::oid);
    END $d$;`);
  expect(await inProduction(`SELECT proowner::regrole::text FROM pg_proc WHERE oid = 'public.stash266(text)'::regprocedure`)).toBe(
    "ops266",
  );
  await noLargeObjects();
  const result = await outcome("pr-redteam26-validator-check", { mask: RULES, pauseJobs: true }, inLargeObjects);
  expectSafe(result, HELD_OFF_RAN);
});

test("with pauseJobs, a job that a view's function (refreshed last) schedules during the preparation is paused in the published fork", async () => {
  cleanups.push(() =>
    inProduction(`DROP MATERIALIZED VIEW IF EXISTS public.m267; SELECT delete_job(job_id) FROM timescaledb_information.jobs WHERE proc_name = 'noop267';
      DROP PROCEDURE IF EXISTS public.noop267(int, jsonb); DROP FUNCTION IF EXISTS public.arm267(text);`),
  );
  await inProduction(`
    CREATE PROCEDURE public.noop267(job_id int, config jsonb) LANGUAGE plpgsql AS $p$ BEGIN NULL; END $p$;
    SELECT add_job('public.noop267', '1 day', scheduled => false);
    CREATE FUNCTION public.arm267(text) RETURNS text LANGUAGE plpgsql VOLATILE AS $f$ BEGIN
      PERFORM alter_job(job_id, scheduled => true) FROM timescaledb_information.jobs WHERE proc_name = 'noop267';
      RETURN $1; END $f$;
    CREATE MATERIALIZED VIEW public.m267 AS SELECT public.arm267(email) AS v FROM (SELECT email FROM public.customers LIMIT 1) c;
    -- Made with its data, the view scheduled production's job: unscheduled again, as production had it.
    SELECT alter_job(job_id, scheduled => false) FROM timescaledb_information.jobs WHERE proc_name = 'noop267';`);
  const scheduled = "SELECT string_agg(scheduled::text, ',') FROM timescaledb_information.jobs WHERE proc_name = 'noop267'";
  expect(await inProduction(scheduled)).toBe("false");
  const result = await outcome("pr-redteam26-scheduled-since", { mask: RULES, pauseJobs: true }, (uri) => readThrough(uri, scheduled));
  expect(result).toBe("published, false");
});
