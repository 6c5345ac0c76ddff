// A thirty-third red team's ways through a masked fork's preparation (docs/masking.md), each read
// through the fork's published URL as its holder reads it, each asserting the safe outcome (so each
// fails where its way works): the fork published with what production holds, or refused naming what
// it cannot make safe and the fix, with no bare SQLSTATE. Each leaves production as it found it. The
// attacker has tsdbadmin's SQL in production and the URL. The target: the fixes of rounds 31 and 32
// and 92cf0ca (STANDING_ON_DROPPED's generic rule, ROUTINES_ON_CHUNKS, the trigger a chunk's
// hypertable has of the same name), and the chunks the preparation drops, makes, or holds off.
//  1. (STANDING_ON_DROPPED leaves out whatever has an 'a' dependency on a table it drops, as "the
//     table's own", and looks no further: a sequence OWNED BY a column of that table goes with it,
//     and what depends on the sequence blocks the drop) a plain view of tsdbadmin's, public.v331,
//     reading a sequence public.s331 owned by a column of a chunk of a masked hypertable of
//     tsdbadmin's, public.del331 (its chunks in public: associated_schema_name; OWNED BY wants the
//     sequence in its table's schema), emptied in production by a DELETE (its statistics kept by
//     ANALYZE): the preparation drops that chunk;
//  2. (ROUTINES_ON_CHUNKS looks at a routine's dependencies on a chunk's table and row type alone) a
//     function of tsdbadmin's, public.f332, whose SQL-standard body reads public.s332, a sequence owned
//     by a column of such an emptied chunk of public.del332: held off, it is made anew without its
//     dependency, so the chunk's DROP takes the sequence with it, and giving the function back, past
//     the commit, makes its old body again, naming a sequence no longer there;
//  3. (STANDING_ON_DROPPED takes a masked hypertable's compressed chunk as one the masking keeps,
//     whole = false, so its statistics objects, triggers, policies and publication memberships are
//     not looked at; maskTables drops it all the same once it is empty after decompress_chunk) an
//     extended statistics object of tsdbadmin's, public.s333, on a compressed chunk of a masked
//     hypertable of tsdbadmin's, public.dc333, whose rows an erasure's DELETE took in production;
//  4. (92cf0ca: a chunk's trigger is taken for its hypertable's copy by its name alone) a trigger
//     tg334 on a chunk of the materialization hypertable of a continuous aggregate public.c334 the
//     preparation refreshes, made by CREATE OR REPLACE TRIGGER over the copy TimescaleDB made, with
//     the same name as the hypertable's trigger and another function (public.tfb334): the chunk is
//     dropped before the refresh, and the new chunks get the hypertable's tg334 (public.tfa334);
//  5. (holdOff's triggerSwitch: ALTER TABLE ONLY … DISABLE TRIGGER, which TimescaleDB refuses on a
//     hypertable, "ONLY option not supported on hypertable operations", and on a chunk refuses in any
//     form, "operation not supported on chunk tables") an ordinary audit trigger of tsdbadmin's,
//     tg335, on the masked hypertable (TimescaleDB copies it to each chunk).
// As found: way 1 was refused with PostgreSQL's bare SQLSTATE ("failed at prepare.mask (the empty
// chunk public._hyper_8_80_chunk of public.del331, with statistics ANALYZE would keep): SQLSTATE 2BP01
// (dependent_objects_still_exist). Nothing of its SQL and masking was kept"), v331 not named; way 2
// failed past the commit with a bare SQLSTATE ("failed at prepare.mask (the database's own functions
// given back): SQLSTATE 42P01 (undefined_table). The masking was committed and checked, but what
// follows it (space given back, continuous aggregates refreshed and checked) did not finish"), f332
// not named, s332 gone with the chunk; way 3 was published with s333 lost ("published, 0"), named
// nowhere; way 4 was published with the chunk's tg334 (tfb334) lost ("published, 0"), named nowhere;
// way 5 was refused with the bare SQLSTATE ("failed at prepare.mask (triggers and rules held off):
// SQLSTATE 0A000 (feature_not_supported). Nothing of its SQL and masking was kept"), tg335 not named.
import { EVENTS_TABLE } from "../../simulator/production";
import { readThrough as read } from "../support/lab/production";
import { DROP_LEFT_BEHIND, RULES, onFirstAggregateChunk, redTeamLab, expectPublishedOrNamed } from "../support/lab/redTeam";

jest.setTimeout(600_000);
const { cleanups, inProduction, outcome } = redTeamLab();

/** A hypertable of tsdbadmin's, public.<name>, its chunks in public, whose first day a DELETE emptied after ANALYZE (its statistics kept). */
const emptiedInPublic = (name: string) => `
    CREATE TABLE public.${name} (time timestamptz NOT NULL, email text);
    SELECT create_hypertable('public.${name}', 'time', chunk_time_interval => interval '1 day', associated_schema_name => 'public');
    INSERT INTO public.${name} SELECT timestamptz '2026-11-20' + g * interval '10 minutes', '${name}-' || (g % 300) || '@prod-customers.example.com'
      FROM generate_series(0, 800) g;
    ANALYZE public.${name};
    DELETE FROM public.${name} WHERE time < timestamptz '2026-11-21';
    ANALYZE public.${name};`;
/** SQL run as tsdbadmin: `statement` with public.<name>'s first chunk (format('%I.%I')) for %s. */
const onFirstChunk = (name: string, statement: string) => `
    DO $d$ BEGIN
      EXECUTE (SELECT pg_catalog.format('${statement.replace(/'/g, "''")}', pg_catalog.format('%I.%I', chunk_schema, chunk_name))
        FROM timescaledb_information.chunks WHERE hypertable_schema = 'public' AND hypertable_name = '${name}' ORDER BY range_start LIMIT 1);
    END $d$;`;

test("a view of tsdbadmin's reading a sequence owned by a column of a chunk the preparation drops (emptied in production, with statistics): the fork is published with it, or refused naming it, with no bare SQLSTATE", async () => {
  const drop = `DROP VIEW IF EXISTS public.v331; DROP TABLE IF EXISTS public.del331; DROP SEQUENCE IF EXISTS public.s331; ${DROP_LEFT_BEHIND};`;
  cleanups.push(() => inProduction(drop));
  await inProduction(`${drop}
    ${emptiedInPublic("del331")}
    CREATE SEQUENCE public.s331;
    ${onFirstChunk("del331", "ALTER SEQUENCE public.s331 OWNED BY %s.email")}
    CREATE VIEW public.v331 AS SELECT last_value AS n FROM public.s331;`);
  const view = "SELECT count(*)::text FROM pg_views WHERE schemaname = 'public' AND viewname = 'v331'";
  // Owned by the emptied chunk's column, in public; the view depends on the sequence, not on the chunk.
  expect(
    await inProduction(`SELECT (SELECT count(*) FROM pg_views WHERE viewname = 'v331') || ' ' || n.nspname || '.' || c.relname FROM pg_depend d
      JOIN pg_class c ON c.oid = d.refobjid JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE d.classid = 'pg_class'::regclass AND d.objid = 'public.s331'::regclass AND d.deptype = 'a'`),
  ).toMatch(/^1 public\._hyper_\d+_\d+_chunk$/);
  const rules = [...RULES, { table: "del331", column: "email", with: "email" }];
  const result = await outcome("pr-redteam33-view-of-owned-sequence", { mask: rules, pauseJobs: true }, (uri) => read(uri, view));
  expectPublishedOrNamed(result, "published, 1", /v331/);
});

test("a function of tsdbadmin's whose SQL-standard body reads a sequence owned by a column of a chunk the preparation drops: the fork is published with it, or refused naming it, with no bare SQLSTATE", async () => {
  const drop = `DROP FUNCTION IF EXISTS public.f332(); DROP TABLE IF EXISTS public.del332; DROP SEQUENCE IF EXISTS public.s332; ${DROP_LEFT_BEHIND};`;
  cleanups.push(() => inProduction(drop));
  await inProduction(`${drop}
    ${emptiedInPublic("del332")}
    CREATE SEQUENCE public.s332;
    ${onFirstChunk("del332", "ALTER SEQUENCE public.s332 OWNED BY %s.email")}
    CREATE FUNCTION public.f332() RETURNS bigint LANGUAGE sql STABLE BEGIN ATOMIC SELECT last_value FROM public.s332; END;`);
  const fn = "SELECT count(*)::text FROM pg_proc WHERE proname = 'f332'";
  expect(await inProduction(fn)).toBe("1");
  const rules = [...RULES, { table: "del332", column: "email", with: "email" }];
  const result = await outcome("pr-redteam33-atomic-on-owned-sequence", { mask: rules, pauseJobs: true }, (uri) => read(uri, fn));
  expectPublishedOrNamed(result, "published, 1", /f332|s332/);
});

test("an extended statistics object of tsdbadmin's on a compressed chunk of a masked hypertable, its rows deleted in production (the masking drops it, empty): the fork is published with it, or refused naming it", async () => {
  const drop = `DROP TABLE IF EXISTS public.dc333; ${DROP_LEFT_BEHIND};`;
  cleanups.push(() => inProduction(drop));
  await inProduction(`${drop}
    CREATE TABLE public.dc333 (time timestamptz NOT NULL, email text, path text);
    SELECT create_hypertable('public.dc333', by_range('time', interval '1 day'));
    INSERT INTO public.dc333 SELECT timestamptz '2026-11-20' + g * interval '10 minutes', 'dc' || (g % 300) || '@prod-customers.example.com', '/p' || (g % 3)
      FROM generate_series(0, 800) g;
    ALTER TABLE public.dc333 SET (timescaledb.compress, timescaledb.compress_segmentby = 'path');
    SELECT count(compress_chunk(c)) FROM show_chunks('public.dc333') c;
    ANALYZE public.dc333;
    ${onFirstChunk("dc333", "CREATE STATISTICS public.s333 ON email, path FROM %s")}
    DELETE FROM public.dc333 WHERE time < timestamptz '2026-11-21';
    ANALYZE public.dc333;`);
  const statistics = "SELECT count(*)::text FROM pg_statistic_ext WHERE stxname = 's333'";
  // On the first chunk, compressed, holding no row.
  expect(
    await inProduction(`SELECT c.is_compressed::text || ' ' || (SELECT count(*) FROM public.dc333 WHERE time < timestamptz '2026-11-21') || ' ' || (${statistics})
      FROM timescaledb_information.chunks c WHERE c.hypertable_name = 'dc333' ORDER BY c.range_start LIMIT 1`),
  ).toBe("true 0 1");
  const rules = [...RULES, { table: "dc333", column: "email", with: "email" }];
  const result = await outcome("pr-redteam33-statistics-of-emptied-compressed", { mask: rules, pauseJobs: true }, (uri) =>
    read(uri, statistics),
  );
  expectPublishedOrNamed(result, "published, 1", /s333/);
});

test("a trigger on a chunk of a continuous aggregate's materialization hypertable, named as the hypertable's trigger but running another function: the fork is published with it, or refused naming it", async () => {
  const drop = `DROP MATERIALIZED VIEW IF EXISTS public.c334; DROP FUNCTION IF EXISTS public.tfa334(), public.tfb334(); ${DROP_LEFT_BEHIND};`;
  cleanups.push(() => inProduction(drop));
  await inProduction(`${drop}
    CREATE FUNCTION public.tfa334() RETURNS trigger LANGUAGE plpgsql AS $f$ BEGIN RETURN NEW; END $f$;
    CREATE FUNCTION public.tfb334() RETURNS trigger LANGUAGE plpgsql AS $f$ BEGIN RETURN NEW; END $f$;
    CREATE MATERIALIZED VIEW public.c334 WITH (timescaledb.continuous) AS
      SELECT time_bucket('1 day', time) AS day, customer_email AS e, count(*) AS n
        FROM public.${EVENTS_TABLE} WHERE customer_id % 10 = 0 GROUP BY 1, 2 WITH NO DATA;
    CALL refresh_continuous_aggregate('public.c334', NULL, NULL);
    DO $d$ BEGIN
      EXECUTE (SELECT pg_catalog.format('CREATE TRIGGER tg334 BEFORE INSERT ON %I.%I FOR EACH ROW EXECUTE FUNCTION public.tfa334()',
                 materialization_hypertable_schema, materialization_hypertable_name)
        FROM timescaledb_information.continuous_aggregates WHERE view_name = 'c334');
    END $d$;
    ${onFirstAggregateChunk("c334", "CREATE OR REPLACE TRIGGER tg334 BEFORE INSERT ON %s FOR EACH ROW EXECUTE FUNCTION public.tfb334()")}`);
  const trigger = "SELECT count(*)::text FROM pg_trigger WHERE tgname = 'tg334' AND tgfoid = 'public.tfb334()'::regprocedure";
  // One chunk's tg334 runs tfb334; the hypertable's (and the other chunks') tfa334.
  expect(await inProduction(trigger)).toBe("1");
  expect(
    await inProduction("SELECT (count(*) > 2)::text FROM pg_trigger WHERE tgname = 'tg334' AND tgfoid = 'public.tfa334()'::regprocedure"),
  ).toBe("true");
  const result = await outcome("pr-redteam33-trigger-named-as-hypertable", { mask: RULES, pauseJobs: true }, (uri) => read(uri, trigger));
  expectPublishedOrNamed(result, "published, 1", /tg334/);
});

test("a trigger of tsdbadmin's on the masked hypertable (an audit trigger, which TimescaleDB copies to each chunk): the fork is published with it on, on every chunk, and it did not run during the masking", async () => {
  const drop = `DROP TRIGGER IF EXISTS tg335 ON public.${EVENTS_TABLE}; DROP FUNCTION IF EXISTS public.tf335(); DROP TABLE IF EXISTS public.log335;`;
  cleanups.push(() => inProduction(drop));
  await inProduction(`${drop}
    CREATE TABLE public.log335 (old text);
    CREATE FUNCTION public.tf335() RETURNS trigger LANGUAGE plpgsql AS $f$ BEGIN INSERT INTO public.log335 VALUES (OLD.customer_email); RETURN NEW; END $f$;
    CREATE TRIGGER tg335 BEFORE UPDATE ON public.${EVENTS_TABLE} FOR EACH ROW EXECUTE FUNCTION public.tf335();`);
  const trigger = `SELECT count(*) FILTER (WHERE tgenabled = 'O') || ' of ' || count(*) || ' on, logged ' || (SELECT count(*) FROM public.log335) FROM pg_trigger WHERE tgname = 'tg335'`;
  // On the hypertable, and copied to its chunks.
  const atSource = await inProduction(trigger);
  expect(atSource).toMatch(/^(\d+) of \1 on, logged 0$/);
  expect(atSource).not.toMatch(/^1 of/);
  const result = await outcome("pr-redteam33-trigger-on-masked-hypertable", { mask: RULES, pauseJobs: true }, (uri) => read(uri, trigger));
  expect(result).toBe(`published, ${atSource}`);
});

test("a trigger of tsdbadmin's made on a chunk of the masked hypertable (not the hypertable's copy): refused naming it and the fix, before anything is masked", async () => {
  const drop = `DROP FUNCTION IF EXISTS public.tf336() CASCADE; DROP TABLE IF EXISTS public.log336;`;
  cleanups.push(() => inProduction(drop));
  await inProduction(`${drop}
    CREATE TABLE public.log336 (old text);
    CREATE FUNCTION public.tf336() RETURNS trigger LANGUAGE plpgsql AS $f$ BEGIN INSERT INTO public.log336 VALUES (OLD.customer_email); RETURN NEW; END $f$;
    DO $d$ BEGIN
      EXECUTE (SELECT pg_catalog.format('CREATE TRIGGER tg336 BEFORE UPDATE ON %I.%I FOR EACH ROW EXECUTE FUNCTION public.tf336()', chunk_schema, chunk_name)
        FROM timescaledb_information.chunks WHERE hypertable_name = '${EVENTS_TABLE}' ORDER BY range_start LIMIT 1);
    END $d$;`);
  expect(await inProduction("SELECT count(*)::text FROM pg_trigger WHERE tgname = 'tg336'")).toBe("1");
  const result = await outcome("pr-redteam33-trigger-on-chunk", { mask: RULES, pauseJobs: true }, (uri) =>
    read(uri, "SELECT 'logged ' || count(*) FROM public.log336"),
  );
  expect(result).toMatch(/trigger tg336 on _timescaledb_internal\._hyper_\d+_\d+_chunk: a chunk's own .* drop it in prepare\.sql/);
  expect(result).toMatch(/Nothing of its SQL and masking was kept/);
  expect(result).not.toMatch(/SQLSTATE/);
});
