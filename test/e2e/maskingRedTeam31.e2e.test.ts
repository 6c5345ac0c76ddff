// A thirty-first red team's ways through a masked fork's preparation (docs/masking.md), each read
// through the fork's published URL as its holder reads it, each asserting the safe outcome (so each
// fails where its way works): the fork published with nothing of production's masked values
// readable, or refused naming what it cannot make safe and the fix, with no bare SQLSTATE. Each
// leaves production as it found it. The attacker has tsdbadmin's SQL in production (with
// CREATEROLE, as on Tiger Cloud) and the URL. The targets: the newest changes (a job's config's
// hypertable_id/mat_hypertable_id counted for the integer_now alter_job's check runs; statistics
// objects on chunks dropped and made again last) and what the preparation does to chunks' tables
// beside them: the compressed chunks' tables decompress_chunk drops and compress_chunk makes anew,
// and the continuous aggregates' chunks dropped before their refresh.
//  1. (JOBS_CHECKED_BY_OWN reads a config's hypertable_id only where its text is digits alone,
//     ^[0-9]{1,9}$; TimescaleDB reads its text as an int4, which also takes a sign (tried here),
//     white space, leading zeros and, from PostgreSQL 16, underscores and 0x/0o/0b) a job of
//     tsdbadmin's, public.proc311, whose check_config is TimescaleDB's policy_retention_check and
//     whose config names the integer hypertable public.h311 as the JSON string '+<id>'; h311's
//     integer_now is public.now311, a function of tsdbadmin's. alter_job(id, scheduled => false)
//     runs the check, and now311, before anything is held off or masked: now311 keeps the
//     customers' addresses in a large object;
//  2. (the masking's decompress_chunk: TimescaleDB drops the compressed chunk's table, RESTRICT) a
//     plain view of tsdbadmin's, public.v312, reading a compressed chunk's table of the masked
//     hypertable (_timescaledb_internal.compress_hyper_*, which tsdbadmin owns): nothing looks for
//     what depends on that table;
//  3. (emptyAggregate's DROP TABLE of each chunk of an aggregate refreshed, past the commit) a plain
//     view of tsdbadmin's, public.v313, reading a chunk of events_daily's materialization hypertable;
//  4. (decompress_chunk and compress_chunk again: the compressed chunk's table is a new one) an
//     extended statistics object of tsdbadmin's, public.s314, on a compressed chunk's table of the
//     masked hypertable, calling no function of the database's own (so not among those made again).
// As found: way 1 leaked (the published fork's large object held production's addresses: "published,
// copied: 1 of 1"); way 2 was refused with PostgreSQL's bare SQLSTATE inside the masking's
// transaction ("failed at prepare.mask[0] (public.events.customer_email, with email): SQLSTATE 2BP01
// (dependent_objects_still_exist)"), v312 not named; way 3 the same past the commit ("failed at
// prepare.mask (emptying the continuous aggregate public.events_daily before anything is
// refreshed): SQLSTATE 2BP01 (dependent_objects_still_exist). The masking was committed …"), the
// aggregate's chunks dropped so far left dropped, v313 not named; way 4 was published with s314
// lost ("published, 0"), named nowhere.
import { EVENTS_DAILY } from "../../simulator/production";
import { readThrough as read } from "../support/lab/production";
import {
  RULES,
  redTeamLab,
  inLargeObjects,
  expectSafe,
  expectPublishedOrNamed,
  onCompressedTable,
  retentionCheckedJob,
} from "../support/lab/redTeam";

jest.setTimeout(600_000);
const { dropping, inProduction, outcome, madeAfresh, noLargeObjects } = redTeamLab();

test("a job whose check_config is TimescaleDB's policy_retention_check, its config naming an integer hypertable as '+<id>' whose integer_now is a function of tsdbadmin's: pausing it keeps nothing of production's in large objects", async () => {
  // The hypertable's ID as a JSON string with a sign.
  const job = retentionCheckedJob("311", (id) => `'+' || ${id}`);
  await madeAfresh(job);
  // Scheduled, its config's hypertable_id a string that is not digits alone, and add_job's check ran now311 (its large object).
  expect(
    await inProduction(
      "SELECT coalesce(hypertable_name::text, 'none') || ' ' || (config ->> 'hypertable_id' ~ '^[0-9]{1,9}$')::text || ' ' || scheduled::text || ' ' || (SELECT count(*) FROM pg_largeobject_metadata) FROM timescaledb_information.jobs WHERE proc_name = 'proc311'",
    ),
  ).toBe("none false true 1");
  await noLargeObjects();
  const result = await outcome("pr-redteam31-job-config-sign", { mask: RULES, pauseJobs: true }, inLargeObjects);
  expectSafe(result, /proc311|now311|h311|policy_retention_check|job \d+/);
});

test("a view of tsdbadmin's reading a compressed chunk's table of the masked hypertable: the fork is published with it, or refused naming it, with no bare SQLSTATE", async () => {
  await dropping("DROP VIEW IF EXISTS public.v312;");
  await inProduction(onCompressedTable("CREATE VIEW public.v312 AS SELECT _ts_meta_count AS n FROM %s"));
  const view = "SELECT count(*)::text FROM pg_views WHERE schemaname = 'public' AND viewname = 'v312'";
  expect(await inProduction(view)).toBe("1");
  const result = await outcome("pr-redteam31-view-of-compressed", { mask: RULES, pauseJobs: true }, (uri) => read(uri, view));
  expectPublishedOrNamed(result, "published, 1", /v312/);
});

test("a view of tsdbadmin's reading a chunk of a continuous aggregate the preparation refreshes: the fork is published with it, or refused naming it, with no bare SQLSTATE", async () => {
  await dropping("DROP VIEW IF EXISTS public.v313;");
  await inProduction(`
    DO $d$ BEGIN
      EXECUTE (SELECT pg_catalog.format('CREATE VIEW public.v313 AS SELECT count(*) AS n FROM %I.%I', c.chunk_schema, c.chunk_name)
        FROM timescaledb_information.continuous_aggregates a JOIN timescaledb_information.chunks c
          ON c.hypertable_schema = a.materialization_hypertable_schema AND c.hypertable_name = a.materialization_hypertable_name
       WHERE a.view_name = '${EVENTS_DAILY}' ORDER BY c.range_start DESC LIMIT 1);
    END $d$;`);
  const view = "SELECT count(*)::text FROM pg_views WHERE schemaname = 'public' AND viewname = 'v313'";
  expect(await inProduction(view)).toBe("1");
  const result = await outcome("pr-redteam31-view-of-aggregate-chunk", { mask: RULES, pauseJobs: true }, (uri) => read(uri, view));
  expectPublishedOrNamed(result, "published, 1", /v313/);
});

test("an extended statistics object of tsdbadmin's on a compressed chunk's table of the masked hypertable: the fork is published with it, or refused naming it", async () => {
  await dropping("DROP STATISTICS IF EXISTS public.s314;");
  await inProduction(onCompressedTable("CREATE STATISTICS public.s314 ON (_ts_meta_count * 2) FROM %s"));
  const statistics = "SELECT count(*)::text FROM pg_statistic_ext WHERE stxname = 's314'";
  expect(await inProduction(statistics)).toBe("1");
  const result = await outcome("pr-redteam31-statistics-of-compressed", { mask: RULES, pauseJobs: true }, (uri) => read(uri, statistics));
  expectPublishedOrNamed(result, "published, 1", /s314/);
});
