// A tenth red team's ways through a masked fork's preparation (docs/masking.md), each read through
// the fork's published URL as its holder reads it, each asserting the safe outcome (so each fails
// on the code it was written against): the fork published with nothing of production's masked
// values readable, or refused naming what it cannot hold off. Each leaves production as it found it.
//  1. prepare.pauseJobs pauses each job with TimescaleDB's alter_job, which runs the job's
//     check_config function (a function of tsdbadmin's) with the job's config: before the masking's
//     transaction and before any function is held off, in a transaction the preparation commits;
//  2. a space-partitioned hypertable's partitioning function (tsdbadmin's) is called by TimescaleDB's
//     planner, through the function manager (no EXECUTE check), when a query restricts the
//     partitioning column: a first-wave materialized view's refresh runs it while a view refreshed
//     after it still holds production's statistics;
//  3. a function of a role tsdbadmin made (CREATEROLE, as Tiger Cloud's tsdbadmin has) and is no
//     longer a member of is not held off (holdOffRoutines takes only the functions of roles
//     tsdbadmin is a member of), and a masked partition's partition constraint (its parent's
//     PARTITION BY expression, which FUNCTIONS_ON_WRITE does not read) runs it on each row the
//     masking writes: it copies customers before they are masked;
//  4. a partitioned table above a masked partition, its whole tree empty (its old partition
//     dropped since it was analysed), keeps its statistics of the whole (inherited) through ANALYZE:
//     round 9's retyping of an empty tree's columns is done for an inheritance parent (relkind r)
//     only, KEPT_STATISTICS looks at relkinds r, m and i, and the sample (of the empty partition:
//     nothing) gives the check nothing to find;
//  5. a compressed chunk of a masked hypertable emptied in production by a DELETE (an erasure)
//     keeps the statistics it had while active: round 9 drops an emptied chunk only when it is not
//     compressed (EMPTY_CHUNKS_WITH_STATISTICS), so the fork is refused for a realistic shape;
//  6. EXECUTE given back after being held off is given by tsdbadmin (the owner) to every grantee,
//     whoever granted it: a grant another role made with its grant option comes back as the
//     owner's, so taking that role's grant option back (CASCADE) no longer takes the grant it made;
//  7. the functions of the database's own are given back for prepare.sqlAfter before the masked
//     tables' statistics are made again (restatisticize runs after it): a column default of
//     tsdbadmin's, run by a seed's INSERT in sqlAfter, copies customers' statistics, production's,
//     and the rows of a continuous aggregate (refreshed only after the commit), production's too;
//  8. after each text of prepare.sql, still under the role's search_path, the preparation reads the
//     transaction's ID with TRANSACTION_ID (txid_current()::text, the type unqualified): a domain
//     public.text with a CHECK of tsdbadmin's is taken for pg_catalog's text, and copies customers,
//     unmasked, in the masking's own transaction (before any function is held off).
import { EVENTS_DAILY } from "../../simulator/production";
import { readThrough as read } from "../support/lab/production";
import {
  DROP_LEFT_BEHIND,
  PRODUCTION_ADDRESS,
  RULES,
  deepViews,
  dropDeepViews,
  inLargeObjects,
  redTeamLab,
  statsOf,
} from "../support/lab/redTeam";

jest.setTimeout(300_000);
const { asSuperuser, cleanups, inProduction, outcome, preparedFork, unlinkLargeObjects } = redTeamLab();

test("a job's check_config function of tsdbadmin's (TimescaleDB's alter_job runs it as pauseJobs pauses the job) copies nothing of customers before the masking", async () => {
  cleanups.push(async () => {
    await inProduction("SELECT count(delete_job(job_id)) FROM timescaledb_information.jobs WHERE proc_name = 'job101';");
    await inProduction(
      "DROP PROCEDURE IF EXISTS public.job101(int, jsonb); DROP FUNCTION IF EXISTS public.check101(jsonb); DROP TABLE IF EXISTS public.stolen_r101;",
    );
  });
  await inProduction(`
    CREATE TABLE public.stolen_r101 (q text, v text);
    CREATE PROCEDURE public.job101(job_id int, config jsonb) LANGUAGE plpgsql AS $p$ BEGIN NULL; END $p$;
    -- TimescaleDB calls it with the job's config from add_job and from every alter_job, pausing included.
    CREATE FUNCTION public.check101(config jsonb) RETURNS void LANGUAGE plpgsql AS $f$
      BEGIN
        IF pg_catalog.strpos(pg_catalog.current_query(), 'scheduled => false') > 0 AND NOT EXISTS (SELECT 1 FROM public.stolen_r101) THEN
          INSERT INTO public.stolen_r101 SELECT pg_catalog.left(pg_catalog.current_query(), 60), email FROM public.customers;
        END IF;
      END $f$;
    -- A job that does nothing, not due for a day: production runs nothing of it meanwhile.
    SELECT add_job('public.job101', '1 day', config => '{}', initial_start => now() + interval '1 day', check_config => 'public.check101');`);
  expect(await inProduction("SELECT count(*) FROM public.stolen_r101")).toBe("0");
  expect(
    await outcome("pr-redteam10-check-config", { mask: RULES, pauseJobs: true }, (uri) =>
      read(uri, `SELECT 'copied: ' || count(*) FILTER (WHERE v LIKE '${PRODUCTION_ADDRESS}') FROM public.stolen_r101`),
    ),
  ).toMatch(/job \d+'s check_config, public\.check101, is a function of the database's own/);
});

test("a space-partitioned hypertable whose partitioning function is tsdbadmin's (TimescaleDB's planner calls it with no EXECUTE check) runs nothing in a first-wave refresh: no production statistic of a view refreshed after it is copied", async () => {
  cleanups.push(async () => {
    await inProduction(
      `DROP MATERIALIZED VIEW IF EXISTS public.a_part102; ${dropDeepViews("r102")} DROP TABLE IF EXISTS public.kiosk102; ` +
        "DROP FUNCTION IF EXISTS public.part102(anyelement);",
    );
    await unlinkLargeObjects();
  });
  await inProduction(`
    ${deepViews("r102")}
    -- TimescaleDB asks a closed dimension's function to be IMMUTABLE (so it may not INSERT); a large object it may write.
    CREATE FUNCTION public.part102(anyelement) RETURNS integer LANGUAGE plpgsql IMMUTABLE AS $f$
      BEGIN
        IF pg_catalog.strpos(pg_catalog.current_query(), 'REFRESH') > 0 THEN
          PERFORM pg_catalog.lo_from_bytea(0, pg_catalog.convert_to(${statsOf("r102")}, 'UTF8'));
        END IF;
        RETURN 0;
      END $f$;
    CREATE TABLE public.kiosk102 (time timestamptz NOT NULL, device text, n int);
    SELECT create_hypertable('public.kiosk102', 'time', 'device', 2, partitioning_func => 'public.part102', chunk_time_interval => interval '1 day');
    -- Its query names no function of tsdbadmin's: refreshed in the first wave; planning it asks part102 which chunks hold 'lobby'.
    CREATE MATERIALIZED VIEW public.a_part102 AS SELECT count(*) AS n FROM public.kiosk102 WHERE device = 'lobby';`);
  expect(await inProduction("SELECT count(*) FROM pg_largeobject_metadata")).toBe("0");
  expect(await outcome("pr-redteam10-partitioning-func", { mask: RULES, pauseJobs: true }, inLargeObjects)).toMatch(
    /^published, copied: 0 of/,
  );
});

/** As Tiger Cloud's tsdbadmin may: make a role, make objects as it, and be no member of it after (PostgreSQL 15's CREATEROLE). */
const asRoleOfItsOwn = (role: string, sql: string) => `
    CREATE ROLE ${role} NOLOGIN;
    GRANT ${role} TO tsdbadmin;
    CREATE SCHEMA ${role} AUTHORIZATION ${role};
    SET ROLE ${role};
    GRANT USAGE ON SCHEMA ${role} TO PUBLIC;
    ${sql}
    RESET ROLE;
    SET ROLE tsdbadmin;
    REVOKE ${role} FROM tsdbadmin;`;
const dropRole = async (role: string) => {
  await asSuperuser(`DROP SCHEMA IF EXISTS ${role} CASCADE;`);
  await asSuperuser(`DROP OWNED BY ${role}; DROP ROLE IF EXISTS ${role};`);
};

test("a masked table partitioned by an expression calling a function of a role tsdbadmin made and left (not held off: tsdbadmin is no member of it) copies nothing of customers while the masking writes it", async () => {
  cleanups.push(async () => {
    await inProduction("DROP TABLE IF EXISTS public.people103, public.stolen_r103;");
    await dropRole("app103");
    await asSuperuser("ALTER ROLE tsdbadmin NOCREATEROLE;");
  });
  await asSuperuser("ALTER ROLE tsdbadmin CREATEROLE;");
  await inProduction(`
    CREATE TABLE public.stolen_r103 (q text, v text);
    ${asRoleOfItsOwn(
      "app103",
      `CREATE FUNCTION app103.copy() RETURNS void LANGUAGE plpgsql AS $f$
        BEGIN
          IF pg_catalog.strpos(pg_catalog.current_query(), 'masked_row') > 0 AND NOT EXISTS (SELECT 1 FROM public.stolen_r103) THEN
            INSERT INTO public.stolen_r103 SELECT pg_catalog.left(pg_catalog.current_query(), 60), email FROM public.customers;
          END IF;
        END $f$;
      -- A partition key's expression must be IMMUTABLE; it may still call a VOLATILE function.
      CREATE FUNCTION app103.region_code(text) RETURNS text LANGUAGE plpgsql IMMUTABLE AS $f$
        BEGIN PERFORM app103.copy(); RETURN pg_catalog.upper($1); END $f$;`,
    )}
    CREATE TABLE public.people103 (id int, region text, email text) PARTITION BY LIST (app103.region_code(region));
    CREATE TABLE public.people103_eu PARTITION OF public.people103 FOR VALUES IN ('EU');
    INSERT INTO public.people103 SELECT g, 'eu', 'p' || g || '@prod-customers.example.com' FROM generate_series(1, 20) g;
    ANALYZE public.people103;`);
  expect(await inProduction("SELECT count(*) FROM public.stolen_r103")).toBe("0");
  expect(await inProduction("SELECT pg_has_role('app103', 'MEMBER')::text")).toBe("false");
  // people103 first: masked before customers, whose rows its function copies.
  const rules = [{ table: "people103", column: "email", with: "email" }, ...RULES];
  expect(
    await outcome("pr-redteam10-other-role", { mask: rules, pauseJobs: true }, (uri) =>
      read(uri, `SELECT 'copied: ' || count(*) FILTER (WHERE v LIKE '${PRODUCTION_ADDRESS}') FROM public.stolen_r103`),
    ),
  ).toMatch(/public\.people103's partition key runs app103\.region_code\(text\), a function of the database's own/);
});

test("a partitioned table above a masked partition, its tree empty (the partition that held its rows dropped since it was analysed), holds no production address once published", async () => {
  cleanups.push(() => inProduction("DROP TABLE IF EXISTS public.signups104;"));
  await inProduction(`
    CREATE TABLE public.signups104 (id int, email text) PARTITION BY RANGE (id);
    CREATE TABLE public.signups104_2025 PARTITION OF public.signups104 FOR VALUES FROM (0) TO (1000);
    CREATE TABLE public.signups104_2026 PARTITION OF public.signups104 FOR VALUES FROM (1000) TO (2000);
    INSERT INTO public.signups104 SELECT g, 'signup' || g || '@prod-customers.example.com' FROM generate_series(1, 30) g;
    -- Autovacuum analyses no partitioned table: by hand, its statistics of the whole (inherited).
    ANALYZE public.signups104;
    -- Retention: last year's partition dropped; this year's holds nothing yet.
    DROP TABLE public.signups104_2025;
    ANALYZE public.signups104;`);
  const holding = `SELECT count(*) FROM pg_stats WHERE tablename = 'signups104'
    AND lower(coalesce(most_common_vals::text, '') || coalesce(histogram_bounds::text, '')) LIKE '${PRODUCTION_ADDRESS}'`;
  expect(await inProduction(holding)).toBe("1");
  const rules = [...RULES, { table: "signups104_2026", column: "email", with: "email" }];
  expect(
    await outcome("pr-redteam10-partitioned-kept", { mask: rules, pauseJobs: true }, (uri) =>
      read(uri, holding).then((n) => `holding: ${n}`),
    ),
  ).toBe("published, holding: 0");
});

test("a compressed chunk of a masked hypertable emptied in production by a DELETE (its statistics, from when it was active, kept) is masked and published: dropped as an emptied uncompressed chunk is", async () => {
  cleanups.push(() => inProduction(`DROP TABLE IF EXISTS public.del105; ${DROP_LEFT_BEHIND};`));
  await inProduction(`
    CREATE TABLE public.del105 (time timestamptz NOT NULL, email text);
    SELECT create_hypertable('public.del105', by_range('time', interval '1 day'));
    INSERT INTO public.del105 SELECT timestamptz '2026-11-20' + g * interval '10 minutes', 'del' || (g % 300) || '@prod-customers.example.com'
      FROM generate_series(0, 800) g;
    -- Analysed while active (autovacuum), then compressed by its policy.
    ANALYZE public.del105;
    ALTER TABLE public.del105 SET (timescaledb.compress, timescaledb.compress_orderby = 'time');
    SELECT count(compress_chunk(c)) FROM show_chunks('public.del105') c;
    -- An erasure: the first day's rows gone, its chunk compressed and empty, its statistics kept.
    DELETE FROM public.del105 WHERE time < timestamptz '2026-11-21';`);
  const holding = `SELECT count(*) FROM pg_stats WHERE lower(coalesce(most_common_vals::text, '') || coalesce(histogram_bounds::text, '')) LIKE '${PRODUCTION_ADDRESS}'`;
  const rules = [...RULES, { table: "del105", column: "email", with: "email" }];
  expect(
    await outcome("pr-redteam10-emptied-compressed", { mask: rules, pauseJobs: true }, (uri) =>
      read(uri, holding).then((n) => `holding: ${n}`),
    ),
  ).toBe("published, holding: 0");
});

test("EXECUTE given back as it was, grantors too: a grant a role made with its grant option still goes when that option is taken back (CASCADE), as in production", async () => {
  cleanups.push(async () => {
    await inProduction("DROP FUNCTION IF EXISTS public.report106();");
    await asSuperuser("DROP ROLE IF EXISTS app_dev106; DROP ROLE IF EXISTS app_lead106;");
  });
  await asSuperuser("CREATE ROLE app_lead106; CREATE ROLE app_dev106;");
  await inProduction(`
    CREATE FUNCTION public.report106() RETURNS int LANGUAGE sql AS 'SELECT 1';
    REVOKE ALL ON FUNCTION public.report106() FROM PUBLIC;
    GRANT EXECUTE ON FUNCTION public.report106() TO app_lead106 WITH GRANT OPTION;`);
  // The team lead passes it on to a developer, with the option the owner gave.
  await asSuperuser("SET ROLE app_lead106; GRANT EXECUTE ON FUNCTION public.report106() TO app_dev106;");
  const acl = "SELECT proacl::text FROM pg_proc WHERE oid = 'public.report106()'::regprocedure";
  const before = await inProduction(acl);
  expect(before).toContain("app_dev106=X/app_lead106");
  // The owner takes the lead's right back: the developer's, which came from it, goes with it.
  const takenBack = async (uri: string) => {
    await read(uri, "REVOKE EXECUTE ON FUNCTION public.report106() FROM app_lead106 CASCADE");
    return read(uri, "SELECT has_function_privilege('app_dev106', 'public.report106()', 'EXECUTE')::text");
  };
  const fork = await preparedFork("pr-redteam10-grantors", { mask: [{ table: "customers", column: "email", with: "email" }] });
  expect(`${await read(fork.uri, acl)}; after taking the lead's back, the developer may: ${await takenBack(fork.uri)}`).toBe(
    `${before}; after taking the lead's back, the developer may: false`,
  );
});

test("a column default of tsdbadmin's run by prepare.sqlAfter's seed INSERT, or the seed itself, copies no production statistic of the masked customers, nor a row of an aggregate: it runs last, with functions given back", async () => {
  cleanups.push(() => inProduction("DROP TABLE IF EXISTS public.flags107, public.stolen_r107; DROP FUNCTION IF EXISTS public.actor107();"));
  await inProduction(`
    CREATE TABLE public.stolen_r107 (v text);
    CREATE FUNCTION public.actor107() RETURNS text LANGUAGE plpgsql AS $f$
      BEGIN
        INSERT INTO public.stolen_r107 SELECT coalesce(s.most_common_vals::text, '') || coalesce(s.histogram_bounds::text, '')
          FROM pg_catalog.pg_stats s WHERE s.schemaname = 'public' AND s.tablename = 'customers' AND s.attname = 'email';
        -- And rows: the continuous aggregates are refreshed after the commit, production's until then.
        INSERT INTO public.stolen_r107 SELECT DISTINCT customer_email FROM public.${EVENTS_DAILY};
        RETURN 'app';
      END $f$;
    -- A table no rule names, which a team seeds in sqlAfter; its default names who set a flag.
    CREATE TABLE public.flags107 (name text PRIMARY KEY, set_by text DEFAULT public.actor107());
    -- What autovacuum does: customers' statistics hold production's addresses.
    ANALYZE public.customers;`);
  expect(
    await inProduction(
      `SELECT count(*) FROM pg_stats WHERE tablename = 'customers' AND attname = 'email' AND histogram_bounds::text LIKE '${PRODUCTION_ADDRESS}'`,
    ),
  ).toBe("1");
  expect(
    await outcome(
      "pr-redteam10-sqlafter-default",
      {
        mask: RULES,
        pauseJobs: true,
        sqlAfter: [
          "INSERT INTO public.flags107 (name) VALUES ('demo')",
          // The seed itself reading the aggregate: it runs last, once the aggregate is refreshed from the masked rows.
          `INSERT INTO public.stolen_r107 SELECT DISTINCT customer_email FROM public.${EVENTS_DAILY}`,
        ],
      },
      (uri) =>
        read(
          uri,
          `SELECT 'copied: ' || count(*) FILTER (WHERE lower(v) LIKE '${PRODUCTION_ADDRESS}') || ' of ' || count(*) FROM public.stolen_r107`,
        ),
    ),
  ).toMatch(/^published, copied: 0 of [1-9]\d*$/);
});

test("the preparation's own statement run after each prepare.sql text, under the role's search_path (public, pg_catalog), takes no domain public.text for pg_catalog's: nothing of customers is copied before the masking", async () => {
  cleanups.push(() =>
    inProduction(
      "ALTER ROLE tsdbadmin RESET search_path; DROP DOMAIN IF EXISTS public.text; DROP FUNCTION IF EXISTS public.seen108(pg_catalog.text); DROP TABLE IF EXISTS public.stolen_r108;",
    ),
  );
  await inProduction(`
    CREATE TABLE public.stolen_r108 (q pg_catalog.text, v pg_catalog.text);
    CREATE FUNCTION public.seen108(pg_catalog.text) RETURNS boolean LANGUAGE plpgsql AS $f$
      BEGIN
        IF pg_catalog.strpos(pg_catalog.current_query(), 'txid_current') > 0 AND NOT EXISTS (SELECT 1 FROM public.stolen_r108) THEN
          INSERT INTO public.stolen_r108 SELECT pg_catalog.left(pg_catalog.current_query(), 60), email FROM public.customers;
        END IF;
        RETURN true;
      END $f$;
    -- With public first on the path, ::text names this domain, not pg_catalog's type.
    CREATE DOMAIN public.text AS pg_catalog.text CHECK (public.seen108(VALUE));
    ALTER ROLE tsdbadmin SET search_path = public, pg_catalog;`);
  expect(await inProduction("SELECT count(*) FROM public.stolen_r108")).toBe("0");
  // Any prepare.sql: its transaction is checked after each text. What copied, and the statement it copied in.
  expect(
    await outcome("pr-redteam10-txid-text", { sql: ["SELECT 1"], mask: RULES, pauseJobs: true }, (uri) =>
      read(
        uri,
        `SELECT 'copied: ' || count(*) FILTER (WHERE v LIKE '${PRODUCTION_ADDRESS}') || coalesce(', in ' || min(q), '') FROM public.stolen_r108`,
      ),
    ),
  ).toBe("published, copied: 0");
});
