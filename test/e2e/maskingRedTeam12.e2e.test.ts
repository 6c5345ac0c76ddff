// A twelfth red team's ways through a masked fork's preparation (docs/masking.md), each read through
// the fork's published URL as its holder reads it, each asserting the safe outcome (so each fails
// on the code it was written against): the fork published with nothing of production's masked
// values readable (and a harmless production as it was), or refused naming what it cannot hold
// off. Each leaves production as it found it.
//  1. holdOffRoutines makes tsdbadmin (CREATEROLE) a member of each owner of a function of the
//     database's own, and takes "invalid_grant_operation" for "cannot": a role tsdbadmin made that is
//     itself made a member of tsdbadmin (GRANT tsdbadmin TO it) cannot be granted back ("role … is a
//     member of role tsdbadmin"), so its functions are not held off. One of them, in an extended
//     statistics object's expression on a table whose foreign key references a masked column (ON
//     UPDATE NO ACTION: checked, not written), runs while the masking's UPDATE of customers is
//     checked: the planner folds the statistics object's expressions (get_relation_statistics) as it
//     plans the key's query of that table. KEY_CHECKED_CALLING_OWN reads only that table's indexes;
//     the function reads the events not yet masked;
//  2. the same key's check plans a partitioned referencing table through its partitions, folding
//     each partition's CHECK (constraint exclusion): KEY_CHECKED_CALLING_OWN reads no CHECK;
//  3. a function of tsdbadmin's in SQL-standard form (BEGIN ATOMIC) reading a table in a schema of
//     its own it took its own USAGE on away: held off (its body swapped for the stub) in the masking's
//     transaction, committed, then its definition (pg_get_functiondef's) cannot be made again (its
//     body is parsed, names and all, whatever check_function_bodies says: "permission denied for
//     schema"): the preparation fails after its commit, the fork keeps the stub, and every later
//     preparation fails first thing (giveBackEarlier), for a harmless production;
//  4. TimescaleDB's planner hashes the key's value through a space dimension's partitioning function to
//     find the chunks the key's check reads, on a hypertable whose foreign key references a masked
//     column: the function (of a role tsdbadmin cannot be made a member of, as in 1) is handed each
//     production value of the masked column itself as it is masked. KEY_CHECKED_CALLING_OWN reads no
//     dimension; PARTITIONED_BY_OWN is read only for what views read.
// And, as 3: a function of tsdbadmin's a superuser made LEAKPROOF, which only a superuser may make so
// again: its stub would have been made, and its definition could not.
import { EVENTS_TABLE } from "../../simulator/production";
import { readThrough as read } from "../support/lab/production";
import { DROP_LEFT_BEHIND, RULES, inLargeObjects, redTeamLab, ownedByMemberOfTsdbadmin } from "../support/lab/redTeam";

jest.setTimeout(300_000);
const { asSuperuser, cleanups, inProduction, outcome, unlinkLargeObjects } = redTeamLab();

/** An IMMUTABLE function (it cannot INSERT; PostgreSQL's lo_from_bytea writes all the same) copying the events' addresses, once, from the masking's UPDATE. */
const copyEvents = (name: string) => `
    CREATE FUNCTION public.${name}() RETURNS text LANGUAGE plpgsql IMMUTABLE AS $f$
      BEGIN
        IF pg_catalog.strpos(pg_catalog.current_query(), 'masked_row') > 0
           AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_largeobject_metadata) THEN
          PERFORM pg_catalog.lo_from_bytea(0, pg_catalog.convert_to(
            (SELECT pg_catalog.string_agg(DISTINCT customer_email, ' ') FROM public.${EVENTS_TABLE}), 'UTF8'));
        END IF;
        RETURN '';
      END $f$;`;

/** The role and tsdbadmin's CREATEROLE as before the test. */
const dropRole = async (role: string, routine: string) => {
  await asSuperuser("ALTER ROLE tsdbadmin NOCREATEROLE;");
  await asSuperuser(`DROP FUNCTION IF EXISTS ${routine}; DROP ROLE IF EXISTS ${role};`);
};

test("a function whose owner tsdbadmin cannot be made a member of (a member of tsdbadmin itself), in an extended statistics object of a table whose foreign key references a masked column (the key's check runs it), is refused naming both: nothing is copied", async () => {
  cleanups.push(async () => {
    await inProduction("DROP TABLE IF EXISTS public.newsletter121;");
    await dropRole("ops121", "public.suffix121()");
    await unlinkLargeObjects();
  });
  await asSuperuser("ALTER ROLE tsdbadmin CREATEROLE;");
  await inProduction(`
    ${copyEvents("suffix121")}
    -- A new table, empty yet, whose key references the customers' addresses (ON UPDATE NO ACTION: checked, not written).
    CREATE TABLE public.newsletter121 (email text REFERENCES public.customers (email), since date);
    -- The planner folds the constant part of a statistics object's expression whenever it plans a query of the table: the key's check, here.
    CREATE STATISTICS public.newsletter121_s ON (email || public.suffix121()) FROM public.newsletter121;
    ${ownedByMemberOfTsdbadmin("ops121", "public.suffix121()")}`);
  expect(await inProduction("SELECT count(*) FROM pg_largeobject_metadata")).toBe("0");
  expect(await inProduction("SELECT proowner::regrole::text FROM pg_proc WHERE oid = 'public.suffix121()'::regprocedure")).toBe("ops121");
  // customers first: masked while events still holds production's addresses.
  const rules = [...RULES].reverse();
  expect(await outcome("pr-redteam12-key-check-statistics", { mask: rules, pauseJobs: true }, inLargeObjects)).toMatch(
    /public\.newsletter121's statistics object newsletter121_s \(public\.suffix121\(\)\): a foreign key of its table references what the masking writes/,
  );
});

test("a partition's CHECK calling a function whose owner tsdbadmin cannot be made a member of, under a partitioned table whose foreign key references a masked column (the key's check runs it), is refused naming both: nothing is copied", async () => {
  cleanups.push(async () => {
    await inProduction("DROP TABLE IF EXISTS public.referrals122;");
    await dropRole("ops122", "public.limit122()");
    await unlinkLargeObjects();
  });
  await asSuperuser("ALTER ROLE tsdbadmin CREATEROLE;");
  await inProduction(`
    ${copyEvents("limit122")}
    -- Referrals by month, each referring a customer by address (ON UPDATE NO ACTION: checked, not written).
    CREATE TABLE public.referrals122 (id int, email text REFERENCES public.customers (email), note text) PARTITION BY RANGE (id);
    CREATE TABLE public.referrals122_a PARTITION OF public.referrals122 FOR VALUES FROM (0) TO (1000);
    -- Constraint exclusion folds a partition's CHECK (its constant part) as the key's query of the partitioned table is planned.
    ALTER TABLE public.referrals122_a ADD CONSTRAINT referrals122_note CHECK (pg_catalog.length(note) < 200 + pg_catalog.length(public.limit122()));
    ${ownedByMemberOfTsdbadmin("ops122", "public.limit122()")}`);
  expect(await inProduction("SELECT count(*) FROM pg_largeobject_metadata")).toBe("0");
  const rules = [...RULES].reverse();
  expect(await outcome("pr-redteam12-key-check-partition", { mask: rules, pauseJobs: true }, inLargeObjects)).toMatch(
    /public\.referrals122_a's constraint referrals122_note \(public\.limit122\(\)\): a foreign key of its table references what the masking writes/,
  );
});

test("a function in SQL-standard form reading a table in a schema whose USAGE tsdbadmin took from itself is made again as it was: the fork is published and the function works", async () => {
  cleanups.push(() => inProduction("DROP FUNCTION IF EXISTS public.archived123(); DROP SCHEMA IF EXISTS arch123 CASCADE;"));
  await inProduction(`
    CREATE SCHEMA arch123;
    CREATE TABLE arch123.signups (id int, at date);
    INSERT INTO arch123.signups SELECT g, current_date - g FROM generate_series(1, 7) g;
    -- A report in SQL-standard form: its body is parsed once, at creation (names resolved then, dependencies recorded).
    CREATE FUNCTION public.archived123() RETURNS bigint LANGUAGE sql STABLE
      BEGIN ATOMIC SELECT pg_catalog.count(*) FROM arch123.signups; END;
    -- The archive is closed to new names: the report, already parsed, still runs.
    REVOKE USAGE ON SCHEMA arch123 FROM tsdbadmin;`);
  expect(await inProduction("SELECT public.archived123()::text")).toBe("7");
  expect(
    await outcome("pr-redteam12-atomic-body", { mask: RULES, pauseJobs: true }, (uri) => read(uri, "SELECT public.archived123()::text")),
  ).toBe("published, 7");
});

test("a hypertable whose foreign key references a masked column, with a space dimension on that column partitioned by a function whose owner tsdbadmin cannot be made a member of (the key's check runs it), is refused naming both: it is handed no production address", async () => {
  cleanups.push(async () => {
    await inProduction(`DROP TABLE IF EXISTS public.visits124; ${DROP_LEFT_BEHIND};`);
    await dropRole("ops124", "public.part124(anyelement)");
    await unlinkLargeObjects();
  });
  await asSuperuser("ALTER ROLE tsdbadmin CREATEROLE;");
  await inProduction(`
    -- TimescaleDB asks a closed dimension's function to be IMMUTABLE (it cannot INSERT); a large object it may write.
    CREATE FUNCTION public.part124(anyelement) RETURNS integer LANGUAGE plpgsql IMMUTABLE AS $f$
      BEGIN
        IF pg_catalog.strpos(pg_catalog.current_query(), 'masked_row') > 0 THEN
          PERFORM pg_catalog.lo_from_bytea(0, pg_catalog.convert_to($1::text, 'UTF8'));
        END IF;
        RETURN 0;
      END $f$;
    -- Visits by customer, spread over two partitions by address; its key references the customers' (ON UPDATE NO ACTION).
    CREATE TABLE public.visits124 (time timestamptz NOT NULL, email text REFERENCES public.customers (email));
    SELECT create_hypertable('public.visits124', by_range('time', interval '1 day'));
    SELECT add_dimension('public.visits124', by_hash('email', 2, partition_func => 'public.part124'));
    ${ownedByMemberOfTsdbadmin("ops124", "public.part124(anyelement)")}`);
  expect(await inProduction("SELECT count(*) FROM pg_largeobject_metadata")).toBe("0");
  // TimescaleDB's planner hashes the key's value to find the chunks its check reads: the value being masked, production's.
  expect(await outcome("pr-redteam12-key-check-dimension", { mask: RULES, pauseJobs: true }, inLargeObjects)).toMatch(
    /public\.visits124's dimension email \(public\.part124\(anyelement\)\): a foreign key of its table references what the masking writes/,
  );
});

test("a function of tsdbadmin's a superuser made LEAKPROOF (only a superuser may make one so again) is left as it was, not held off: the fork is published with it LEAKPROOF and working", async () => {
  cleanups.push(() => inProduction("DROP FUNCTION IF EXISTS public.same125(text, text);"));
  await inProduction("CREATE FUNCTION public.same125(a text, b text) RETURNS boolean LANGUAGE sql IMMUTABLE AS 'SELECT a = b';");
  await asSuperuser("ALTER FUNCTION public.same125(text, text) LEAKPROOF;");
  const leakproof =
    "SELECT p.proleakproof::text || ' ' || public.same125('a', 'a')::text FROM pg_proc p WHERE p.oid = 'public.same125(text, text)'::regprocedure";
  expect(await inProduction(leakproof)).toBe("true true");
  expect(await outcome("pr-redteam12-leakproof", { mask: RULES, pauseJobs: true }, (uri) => read(uri, leakproof))).toBe(
    "published, true true",
  );
});
