// A thirteenth red team's ways through a masked fork's preparation (docs/masking.md), each read through
// the fork's published URL as its holder reads it, each asserting the safe outcome (so each fails
// on the code it was written against): the fork published with nothing of production's masked
// values readable, or refused naming what it cannot hold off. Each leaves production as it found it.
//  1. a key's check casts each referencing row's value to the referenced column's type: a foreign
//     key whose column is of a type of the database's own (a composite) with an implicit cast to
//     text (CREATE CAST … AS IMPLICIT: PostgreSQL accepts the key through it) makes the key's query
//     `$1 = x.col::text`, which runs the cast's function on every referencing row, for every row the
//     masking's UPDATE writes. The function (of a role tsdbadmin cannot be made a member of: a member
//     of tsdbadmin itself) is not held off; KEY_CHECKED_CALLING_OWN reads the checked table's
//     indexes, statistics objects, CHECKs and partition key, never the casts its key's query runs
//     (TEXT_CAST reads the masked columns' alone). It reads the events not yet masked;
//  2. pg_stats shows an index's statistics only to a role with privileges on it (an index's are
//     its owner's, its table's owner), and every check of statistics reads pg_stats as tsdbadmin: a
//     masked table owned by another role (tsdbadmin granted SELECT and UPDATE on it, as an
//     application's tables are) with a partial index on lower(email) whose predicate only
//     production's rows meet keeps that index's statistics (ANALYZE samples no row for it), and
//     neither KEPT_STATISTICS nor STATISTICS_HOLDING sees them (HIDDEN_COLUMNS reads tsdbadmin's own
//     tables alone). The URL's holder, with CREATEROLE as tsdbadmin has, grants itself the owner
//     and reads them: production's addresses, lower-cased;
//  3. as 1, for a key's ON UPDATE CASCADE: its UPDATE of the referencing table (`SET col = $1 WHERE
//     $2 = col::text`) runs the column's type's cast from text (assignment) and to text on each row,
//     inside the masking's UPDATE. The table is written, and FUNCTIONS_ON_WRITE reads its columns'
//     domains' CHECKs, range functions and casts to json, never the casts the cascade's statement runs.
// And, beside 2: a table's owner that is itself a member of tsdbadmin (the preparation could not be
// made a member of it in turn, the checks could not see its statistics, and the URL's holder could:
// refused until then) has that membership withheld while the preparation acts as it: the table is
// masked, its statistics made again and checked, and the memberships are as production gave them.
import { EVENTS_TABLE } from "../../simulator/production";
import { readThrough as read } from "../support/lab/production";
import { PRODUCTION_ADDRESS, RULES, inLargeObjects, redTeamLab, ownedByMemberOfTsdbadmin } from "../support/lab/redTeam";

jest.setTimeout(300_000);
const { asSuperuser, inProduction, outcome, unlinkLargeObjects, withCreateRole } = redTeamLab();

test("a foreign key referencing a masked column from a column whose type's implicit cast to text is a function whose owner tsdbadmin cannot be made a member of (the key's check casts each referencing row through it) is refused naming both: nothing is copied", async () => {
  await withCreateRole(async () => {
    await asSuperuser("DROP TABLE IF EXISTS public.newsletter131; DROP TYPE IF EXISTS public.addr131 CASCADE; DROP ROLE IF EXISTS ops131;");
    await unlinkLargeObjects();
  });
  await inProduction(`
    -- An address as the newsletter keeps it, and its conversion to text: the address itself.
    CREATE TYPE public.addr131 AS (v text);
    CREATE FUNCTION public.addr131_text(public.addr131) RETURNS text LANGUAGE plpgsql IMMUTABLE AS $f$
      BEGIN
        -- Called from the key's check of the masking's UPDATE: a large object written, once, of the events not yet masked.
        IF pg_catalog.strpos(pg_catalog.current_query(), 'masked_row') > 0
           AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_largeobject_metadata) THEN
          PERFORM pg_catalog.lo_from_bytea(0, pg_catalog.convert_to(
            (SELECT pg_catalog.string_agg(DISTINCT customer_email, ' ') FROM public.${EVENTS_TABLE}), 'UTF8'));
        END IF;
        RETURN ($1).v;
      END $f$;
    -- Implicit: PostgreSQL takes the key through it (the key's query compares the referenced text with each row cast to text).
    CREATE CAST (public.addr131 AS text) WITH FUNCTION public.addr131_text(public.addr131) AS IMPLICIT;
    CREATE TABLE public.newsletter131 (who public.addr131, since date);
    INSERT INTO public.newsletter131 VALUES (ROW('unsubscribed@example.org'), current_date);
    -- Added as migrations add a key on a table with history: NOT VALID (ON UPDATE NO ACTION: checked, not written).
    ALTER TABLE public.newsletter131 ADD CONSTRAINT newsletter131_who FOREIGN KEY (who) REFERENCES public.customers (email) NOT VALID;
    ${ownedByMemberOfTsdbadmin("ops131", "public.addr131_text(public.addr131)")}`);
  expect(await inProduction("SELECT count(*) FROM pg_largeobject_metadata")).toBe("0");
  expect(
    await inProduction("SELECT proowner::regrole::text FROM pg_proc WHERE oid = 'public.addr131_text(public.addr131)'::regprocedure"),
  ).toBe("ops131");
  // customers first: masked while events still holds production's addresses.
  const rules = [...RULES].reverse();
  expect(await outcome("pr-redteam13-key-check-cast", { mask: rules, pauseJobs: true }, inLargeObjects)).toMatch(
    /public\.newsletter131.*public\.addr131_text\(public\.addr131\)/,
  );
});

test("a masked table owned by another role, with a partial index whose predicate only production's rows meet, keeps no statistics of production's that the URL's holder can read: the checks see them, and refuse naming the index", async () => {
  await withCreateRole(async () => {
    await asSuperuser("DROP TABLE IF EXISTS public.leads132; DROP ROLE IF EXISTS ops132;");
  });
  await inProduction(`
    CREATE ROLE ops132 NOLOGIN;
    GRANT ops132 TO tsdbadmin;
    GRANT CREATE ON SCHEMA public TO ops132;
    -- Leads, taken from the customers; looked up by address in lower case, the production domain's alone.
    CREATE TABLE public.leads132 (id int, email text);
    INSERT INTO public.leads132 SELECT id, email FROM public.customers;
    CREATE INDEX leads132_prod ON public.leads132 (pg_catalog.lower(email)) WHERE email LIKE '%@prod-customers.example.com';
    ANALYZE public.leads132;
    -- The application's role owns its table; tsdbadmin may read and write it, as it may an application's tables.
    ALTER TABLE public.leads132 OWNER TO ops132;
    GRANT SELECT, UPDATE ON public.leads132 TO tsdbadmin;
    REVOKE CREATE ON SCHEMA public FROM ops132;
    REVOKE ops132 FROM tsdbadmin;`);
  const production = `SELECT count(*) FROM pg_catalog.pg_stats s, pg_catalog.unnest(s.histogram_bounds::text::text[]) v
    WHERE s.tablename = 'leads132_prod' AND v LIKE '${PRODUCTION_ADDRESS}'`;
  // Hidden from tsdbadmin in production already: only the index's owner (the table's) sees its statistics.
  expect(await inProduction(production)).toBe("0");
  expect(Number(await asSuperuser(production.replace(/\s+/g, " ")).catch(() => "1"))).toBeGreaterThan(0);
  const rules = [{ table: "leads132", column: "email", with: "email" }];
  const result = await outcome("pr-redteam13-hidden-index", { mask: rules }, async (uri) => {
    // The URL's holder: tsdbadmin has CREATEROLE, so it may join any role that is no superuser.
    await read(uri, "GRANT ops132 TO tsdbadmin");
    return `copied: ${await read(uri, production)}`;
  });
  // Seen by the checks (tsdbadmin a member of the owner for as long): refused as tsdbadmin's own such index is.
  expect(result).toMatch(/public\.leads132_prod: ANALYZE sampled none of its rows/);
});

test("a key's ON UPDATE CASCADE into a column whose type's casts from and to text are functions whose owner tsdbadmin cannot be made a member of (the cascade's UPDATE runs them on each row) is refused naming them: nothing is copied", async () => {
  await withCreateRole(async () => {
    await asSuperuser("DROP TABLE IF EXISTS public.subs133; DROP TYPE IF EXISTS public.addr133 CASCADE; DROP ROLE IF EXISTS ops133;");
    await unlinkLargeObjects();
  });
  const copy = `IF pg_catalog.strpos(pg_catalog.current_query(), 'masked_row') > 0
           AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_largeobject_metadata) THEN
          PERFORM pg_catalog.lo_from_bytea(0, pg_catalog.convert_to(
            (SELECT pg_catalog.string_agg(DISTINCT customer_email, ' ') FROM public.${EVENTS_TABLE}), 'UTF8'));
        END IF;`;
  await inProduction(`
    CREATE TYPE public.addr133 AS (v text);
    CREATE FUNCTION public.addr133_text(public.addr133) RETURNS text LANGUAGE plpgsql IMMUTABLE AS $f$
      BEGIN ${copy} RETURN ($1).v; END $f$;
    CREATE FUNCTION public.text_addr133(text) RETURNS public.addr133 LANGUAGE plpgsql IMMUTABLE AS $f$
      BEGIN ${copy} RETURN ROW($1)::public.addr133; END $f$;
    CREATE CAST (public.addr133 AS text) WITH FUNCTION public.addr133_text(public.addr133) AS IMPLICIT;
    CREATE CAST (text AS public.addr133) WITH FUNCTION public.text_addr133(text) AS ASSIGNMENT;
    -- Subscriptions follow their customer's address (ON UPDATE CASCADE: written by the masking).
    CREATE TABLE public.subs133 (who public.addr133 REFERENCES public.customers (email) ON UPDATE CASCADE, since date);
    INSERT INTO public.subs133 SELECT ROW(email)::public.addr133, current_date FROM public.customers ORDER BY id LIMIT 3;
    CREATE ROLE ops133 NOLOGIN;
    GRANT ops133 TO tsdbadmin;
    GRANT CREATE ON SCHEMA public TO ops133;
    ALTER FUNCTION public.addr133_text(public.addr133) OWNER TO ops133;
    ALTER FUNCTION public.text_addr133(text) OWNER TO ops133;
    REVOKE CREATE ON SCHEMA public FROM ops133;
    REVOKE ops133 FROM tsdbadmin;
    GRANT tsdbadmin TO ops133;`);
  expect(await inProduction("SELECT count(*) FROM pg_largeobject_metadata")).toBe("0");
  // customers first: masked while events still holds production's addresses.
  const rules = [...RULES].reverse();
  expect(await outcome("pr-redteam13-cascade-cast", { mask: rules, pauseJobs: true }, inLargeObjects)).toMatch(
    /public\.subs133.*public\.(addr133_text\(public\.addr133\)|text_addr133\(text\))/,
  );
});

test("a table owned by a role that is itself a member of tsdbadmin (so tsdbadmin cannot be made a member of it at once), with CREATEROLE, is masked: its rows and statistics hold nothing of production's for the URL's holder who takes its owner's privileges, and the memberships are as production gave them", async () => {
  await withCreateRole(async () => {
    await asSuperuser("DROP TABLE IF EXISTS public.leads134; DROP ROLE IF EXISTS ops134;");
  });
  await inProduction(`
    CREATE ROLE ops134 NOLOGIN;
    CREATE TABLE public.leads134 (id int, email text);
    INSERT INTO public.leads134 SELECT id, email FROM public.customers;
    CREATE INDEX leads134_lower ON public.leads134 (pg_catalog.lower(email));
    ANALYZE public.leads134;
    GRANT ops134 TO tsdbadmin;
    GRANT CREATE ON SCHEMA public TO ops134;
    ALTER TABLE public.leads134 OWNER TO ops134;
    GRANT SELECT, UPDATE ON public.leads134 TO tsdbadmin;
    REVOKE CREATE ON SCHEMA public FROM ops134;
    REVOKE ops134 FROM tsdbadmin;
    GRANT tsdbadmin TO ops134;`);
  const rules = [{ table: "leads134", column: "email", with: "email" }];
  const what = async (uri: string) => {
    const memberships = await read(
      uri,
      "SELECT pg_has_role('ops134', 'tsdbadmin', 'MEMBER')::text || ',' || pg_has_role('tsdbadmin', 'ops134', 'MEMBER')::text",
    );
    // The URL's holder, with CREATEROLE, takes the owner's privileges as the preparation did.
    await read(uri, "REVOKE tsdbadmin FROM ops134");
    await read(uri, "GRANT ops134 TO tsdbadmin");
    const held = await read(
      uri,
      `SELECT count(*) FROM (SELECT email AS v FROM public.leads134 UNION ALL SELECT v FROM pg_stats s,
         unnest(coalesce(s.most_common_vals::text::text[], '{}') || coalesce(s.histogram_bounds::text::text[], '{}')) v
        WHERE s.tablename IN ('leads134', 'leads134_lower')) x WHERE lower(v) LIKE '${PRODUCTION_ADDRESS}'`,
    );
    return `memberships ${memberships}, production's ${held}`;
  };
  expect(await outcome("pr-redteam13-hidden-owner", { mask: rules }, what)).toBe("published, memberships true,false, production's 0");
});
