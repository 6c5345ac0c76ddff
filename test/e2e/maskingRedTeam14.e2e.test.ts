// A fourteenth red team's ways through a masked fork's preparation (docs/masking.md), each read through
// the fork's published URL as its holder reads it, each asserting the safe outcome (so each fails
// on the code it was written against): the fork published with nothing of production's masked
// values readable (and a harmless production as it was), or refused naming what it cannot see.
// Each leaves production as it found it.
//  1. pg_stats shows an index's statistics to a role with privileges on it: its owner, or a role
//     that INHERITS the owner's privileges. tsdbadmin made a member of the owner through a NOINHERIT
//     role (GRANT owner TO gate, gate NOINHERIT, GRANT gate TO tsdbadmin) is a MEMBER of it
//     (pg_has_role(…, 'MEMBER') is true, SET ROLE owner works) without its privileges. The
//     preparation's lending and HIDDEN_BY_OWNER both ask 'MEMBER', so it lends nothing and refuses
//     nothing, and every check reads pg_stats without the index's statistics (HIDDEN_COLUMNS asks
//     'USAGE' and reads tsdbadmin's own tables alone). A masked table of that owner's, with a partial
//     index on lower(email) only production's rows meet, keeps that index's statistics (ANALYZE, run
//     as the database's owner, samples none for it); KEPT_STATISTICS sees no statistics there. The
//     URL's holder does SET ROLE to the owner and reads production's addresses, lower-cased;
//  2. the memberships the preparation lends itself (CREATEROLE) are taken back by giveBackRoutines,
//     in refreshDerived, before restatisticizeCallingOwn: an index of a table of an application's role
//     (a login role of its own, as applications run their migrations) calling that role's function
//     is dropped while lent (OWN_STATISTICS_OBJECTS finds it "owned"), and made again after the
//     membership is revoked: CREATE INDEX needs the table's owner, "must be owner of table" (42501).
//     A harmless production fails, the index named as not made again (its DROP was committed: a later
//     `up` would find it gone, and so publish a fork without it; not tested here);
//  3. as 2, for a materialized view of that role's whose query calls its function (opaque): it is
//     emptied while lent and refreshed, after everything else, once the membership is revoked:
//     REFRESH needs the owner (42501). A harmless production fails, the view left emptied in the fork
//     (recorded owed: a later preparation would meet the same refresh; not tested here).
import { readThrough as read } from "../support/lab/production";
import { PRODUCTION_ADDRESS, RULES, asApplication, redTeamLab } from "../support/lab/redTeam";

jest.setTimeout(300_000);
const { asSuperuser, inProduction, outcome, withCreateRole } = redTeamLab();

test("a masked table whose owner tsdbadmin is a member of only through a NOINHERIT role, with a partial index whose predicate only production's rows meet, keeps no statistics of production's that the URL's holder can read (SET ROLE to the owner): the checks see them and refuse naming the index", async () => {
  await withCreateRole(async () => {
    await asSuperuser("DROP TABLE IF EXISTS public.leads141; DROP ROLE IF EXISTS gate141; DROP ROLE IF EXISTS ops141;");
  });
  await asSuperuser(`
    CREATE ROLE ops141 NOLOGIN;
    -- A group role that does not inherit: its members may SET ROLE ops141, and hold none of its privileges until they do.
    CREATE ROLE gate141 NOLOGIN NOINHERIT;
    GRANT ops141 TO gate141;
    GRANT gate141 TO tsdbadmin;`);
  await inProduction(`
    -- Leads, taken from the customers; looked up by address in lower case, the production domain's alone.
    CREATE TABLE public.leads141 (id int, email text);
    INSERT INTO public.leads141 SELECT id, email FROM public.customers;
    CREATE INDEX leads141_prod ON public.leads141 (pg_catalog.lower(email)) WHERE email LIKE '%@prod-customers.example.com';
    ANALYZE public.leads141;`);
  await asSuperuser(`
    -- The application's role owns its table; tsdbadmin may read and write it, as it may an application's tables.
    ALTER TABLE public.leads141 OWNER TO ops141;
    GRANT SELECT, UPDATE ON public.leads141 TO tsdbadmin;`);
  expect(await inProduction("SELECT pg_has_role('ops141', 'MEMBER')::text || ' ' || pg_has_role('ops141', 'USAGE')::text")).toBe(
    "true false",
  );
  const production = `SELECT count(*) FROM pg_catalog.pg_stats s, pg_catalog.unnest(s.histogram_bounds::text::text[]) v
    WHERE s.tablename = 'leads141_prod' AND v LIKE '${PRODUCTION_ADDRESS}'`;
  // Hidden from tsdbadmin in production already, seen once it is the owner (SET ROLE: it is a member).
  expect(await inProduction(production)).toBe("0");
  expect(Number((await inProduction(`SET ROLE ops141; ${production}`)).split("\n").pop())).toBeGreaterThan(0);
  const rules = [{ table: "leads141", column: "email", with: "email" }];
  const result = await outcome("pr-redteam14-noinherit-owner", { mask: rules }, async (uri) => {
    // The URL's holder: a member of ops141 (through gate141), it may become it.
    const copied = (await read(uri, `SET ROLE ops141; ${production}`)).split("\n").pop();
    return `copied: ${copied}`;
  });
  expect(result).toMatch(/public\.leads141_\w+: ANALYZE sampled none of its rows/);
});

test("an application's table (of a role tsdbadmin is no member of; CREATEROLE) with an index calling that role's function is made again as it was: the fork is published with the index", async () => {
  await withCreateRole(async () => {
    await asSuperuser("DROP OWNED BY app142; DROP ROLE IF EXISTS app142;");
  });
  await asSuperuser(`
    -- The application's own login role runs its migrations: its objects are its own, tsdbadmin no member of it.
    CREATE ROLE app142 NOLOGIN;
    GRANT CREATE ON SCHEMA public TO app142;
    SET ROLE app142;
    CREATE FUNCTION public.norm142(text) RETURNS text LANGUAGE sql IMMUTABLE AS $f$ SELECT pg_catalog.lower(pg_catalog.btrim($1)) $f$;
    CREATE TABLE public.contacts142 (id int, handle text);
    INSERT INTO public.contacts142 SELECT g, 'Handle ' || g FROM generate_series(1, 50) g;
    CREATE INDEX contacts142_norm ON public.contacts142 (public.norm142(handle));
    ANALYZE public.contacts142;
    RESET ROLE;
    REVOKE CREATE ON SCHEMA public FROM app142;`);
  expect(await inProduction("SELECT pg_has_role('app142', 'MEMBER')::text")).toBe("false");
  const result = await outcome("pr-redteam14-lent-index", { mask: RULES, pauseJobs: true }, (uri) =>
    read(
      uri,
      "SELECT 'index ' || count(*) || ', member ' || pg_has_role('app142', 'MEMBER')::text FROM pg_indexes WHERE indexname = 'contacts142_norm'",
    ),
  );
  // The membership lent for it taken back: tsdbadmin is no member of app142 on the fork, as in production.
  expect(result).toBe("published, index 1, member false");
});

test("an application's materialized view (of a role tsdbadmin is no member of; CREATEROLE) whose query calls that role's function is refreshed from the masked data: the fork is published with it", async () => {
  await withCreateRole(async () => {
    await asSuperuser("DROP OWNED BY app143; DROP ROLE IF EXISTS app143;");
  });
  await asSuperuser(`${asApplication(
    "app143",
    `CREATE FUNCTION public.norm143(text) RETURNS text LANGUAGE sql IMMUTABLE AS $f$ SELECT pg_catalog.lower(pg_catalog.btrim($1)) $f$;
    -- Its mailing list, by normalized address.
    CREATE MATERIALIZED VIEW public.m143 AS SELECT public.norm143(email) AS address FROM public.customers;`,
  )}
    GRANT SELECT ON public.m143 TO tsdbadmin;`);
  expect(await inProduction("SELECT pg_has_role('app143', 'MEMBER')::text")).toBe("false");
  const result = await outcome("pr-redteam14-lent-view", { mask: RULES, pauseJobs: true }, (uri) =>
    read(
      uri,
      `SELECT 'production ' || count(*) FILTER (WHERE address LIKE '${PRODUCTION_ADDRESS}') || ' of ' || count(*) FROM public.m143`,
    ),
  );
  expect(result).toBe("published, production 0 of 100");
});
