// A thirty-second red team's ways through a masked fork's preparation (docs/masking.md), each read
// through the fork's published URL as its holder reads it, each asserting the safe outcome (so each
// fails where its way works): the fork published with what production holds, or refused naming what
// it cannot make safe and the fix, with no bare SQLSTATE. Each leaves production as it found it. The
// attacker has tsdbadmin's SQL in production and the URL. The target: the newest guard,
// STANDING_ON_DROPPED (what stands on the tables the preparation drops or makes anew: views, rules,
// child tables, foreign keys, statistics objects), and what else stands on those tables, or on a
// chunk it drops that the guard does not look at.
//  1. (STANDING_ON_DROPPED looks at pg_rewrite, pg_inherits, pg_constraint and pg_statistic_ext, not
//     at a routine's dependencies) a function of tsdbadmin's, public.f321, whose SQL-standard body
//     (BEGIN ATOMIC) reads a compressed chunk's table of the masked hypertable: holdOffRoutines
//     makes it anew held off (its dependency gone, so decompress_chunk drops the table), and giving it
//     back, past the commit, makes its old body again, naming a table no longer there;
//  2. (nor at a column's type) a table of tsdbadmin's, public.t322, with a column of a compressed
//     chunk's table's row type: decompress_chunk's DROP of that table (RESTRICT) fails;
//  3. (nor at triggers, which go with their table) a trigger of tsdbadmin's, tg323, on a compressed
//     chunk's table of the masked hypertable: compress_chunk's new table has none;
//  4. (STANDING_ON_DROPPED looks, of a masked hypertable's chunks, only at the compressed ones; the
//     chunks restatisticize drops, EMPTY_CHUNKS_WITH_STATISTICS, are not compressed) a plain view of
//     tsdbadmin's, public.v324, reading a chunk of a masked hypertable of tsdbadmin's, public.del324,
//     emptied in production by a DELETE (its statistics kept by ANALYZE): the preparation drops it.
// As found: way 1 failed past the commit with a bare SQLSTATE ("failed at prepare.mask (the database's
// own functions given back): SQLSTATE 42P01 (undefined_table). The masking was committed and checked,
// but what follows it … did not finish"), f321 not named; way 2 was refused with PostgreSQL's bare
// SQLSTATE inside the masking's transaction ("failed at prepare.mask[0] (public.events.customer_email,
// with email): SQLSTATE 2BP01 (dependent_objects_still_exist)"), t322 not named; way 3 was published
// with tg323 lost ("published, 0"), named nowhere; way 4 was refused with the bare SQLSTATE ("failed
// at prepare.mask (the empty chunk _timescaledb_internal._hyper_8_80_chunk of public.del324, with
// statistics ANALYZE would keep): SQLSTATE 2BP01 (dependent_objects_still_exist)"), v324 not named.
import { readThrough as read } from "../support/lab/production";
import { DROP_LEFT_BEHIND, RULES, redTeamLab, expectPublishedOrNamed, onCompressedTable } from "../support/lab/redTeam";

jest.setTimeout(600_000);
const { cleanups, dropping, inProduction, outcome } = redTeamLab();
test("a function of tsdbadmin's with an SQL-standard body reading a compressed chunk's table of the masked hypertable: the fork is published with it, or refused naming it, with no bare SQLSTATE", async () => {
  await dropping("DROP FUNCTION IF EXISTS public.f321();");
  await inProduction(
    onCompressedTable("CREATE FUNCTION public.f321() RETURNS bigint LANGUAGE sql STABLE BEGIN ATOMIC SELECT count(*) FROM %s; END"),
  );
  const fn = "SELECT count(*)::text FROM pg_proc WHERE proname = 'f321'";
  expect(await inProduction(fn)).toBe("1");
  const result = await outcome("pr-redteam32-atomic-on-compressed", { mask: RULES, pauseJobs: true }, (uri) => read(uri, fn));
  expectPublishedOrNamed(result, "published, 1", /f321/);
});

test("a table of tsdbadmin's with a column of a compressed chunk's table's row type, of the masked hypertable: the fork is published with it, or refused naming it, with no bare SQLSTATE", async () => {
  await dropping("DROP TABLE IF EXISTS public.t322;");
  await inProduction(onCompressedTable("CREATE TABLE public.t322 (id int, r %s)"));
  const table = "SELECT count(*)::text FROM pg_tables WHERE schemaname = 'public' AND tablename = 't322'";
  expect(await inProduction(table)).toBe("1");
  const result = await outcome("pr-redteam32-rowtype-of-compressed", { mask: RULES, pauseJobs: true }, (uri) => read(uri, table));
  expectPublishedOrNamed(result, "published, 1", /t322/);
});

test("a trigger of tsdbadmin's on a compressed chunk's table of the masked hypertable: the fork is published with it, or refused naming it", async () => {
  await dropping("DROP FUNCTION IF EXISTS public.tf323() CASCADE;");
  await inProduction(`CREATE FUNCTION public.tf323() RETURNS trigger LANGUAGE plpgsql AS $f$ BEGIN RETURN NEW; END $f$;
    ${onCompressedTable("CREATE TRIGGER tg323 BEFORE UPDATE ON %s FOR EACH ROW EXECUTE FUNCTION public.tf323()")}`);
  const trigger = "SELECT count(*)::text FROM pg_trigger WHERE tgname = 'tg323'";
  expect(await inProduction(trigger)).toBe("1");
  const result = await outcome("pr-redteam32-trigger-of-compressed", { mask: RULES, pauseJobs: true }, (uri) => read(uri, trigger));
  expectPublishedOrNamed(result, "published, 1", /tg323/);
});

test("a view of tsdbadmin's reading a chunk of a masked hypertable emptied in production by a DELETE, not compressed (the preparation drops it, its statistics production's): the fork is published with it, or refused naming it, with no bare SQLSTATE", async () => {
  cleanups.push(() => inProduction(`DROP VIEW IF EXISTS public.v324; DROP TABLE IF EXISTS public.del324; ${DROP_LEFT_BEHIND};`));
  await inProduction(`DROP VIEW IF EXISTS public.v324; DROP TABLE IF EXISTS public.del324;
    CREATE TABLE public.del324 (time timestamptz NOT NULL, email text);
    SELECT create_hypertable('public.del324', by_range('time', interval '1 day'));
    INSERT INTO public.del324 SELECT timestamptz '2026-11-20' + g * interval '10 minutes', 'del' || (g % 300) || '@prod-customers.example.com'
      FROM generate_series(0, 800) g;
    ANALYZE public.del324;
    DELETE FROM public.del324 WHERE time < timestamptz '2026-11-21';
    ANALYZE public.del324;
    DO $d$ BEGIN
      EXECUTE (SELECT pg_catalog.format('CREATE VIEW public.v324 AS SELECT count(*) AS n FROM %I.%I', chunk_schema, chunk_name)
        FROM timescaledb_information.chunks WHERE hypertable_name = 'del324' ORDER BY range_start LIMIT 1);
    END $d$;`);
  const view = "SELECT count(*)::text FROM pg_views WHERE schemaname = 'public' AND viewname = 'v324'";
  expect(await inProduction(view)).toBe("1");
  const rules = [...RULES, { table: "del324", column: "email", with: "email" }];
  const result = await outcome("pr-redteam32-view-of-emptied-chunk", { mask: rules, pauseJobs: true }, (uri) => read(uri, view));
  expectPublishedOrNamed(result, "published, 1", /v324/);
});
