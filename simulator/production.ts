// What the simulator's production service holds: a database that looks like a Tiger Cloud
// customer's, so that a fork's preparation meets what it meets there. With TimescaleDB (every Tiger
// Cloud service runs it):
//  - personal data in an ordinary table (customers: e-mail, name, API token);
//  - the same people's e-mail addresses in a hypertable of page views (events), one chunk a day,
//    compressed segmented by that address: more compressed rows than TimescaleDB lets one
//    transaction's UPDATE decompress (timescaledb.max_tuples_decompressed_per_dml_transaction);
//  - continuous aggregates over it, their chunks compressed too: by day and e-mail address
//    (events_daily, compressed ordered by the address: its compressed chunks' _ts_meta_min/max
//    columns hold addresses), by day and lower(address) (events_by_address, an expression of the
//    address, compressed segmented by it), and by week from events_daily (events_weekly, a
//    hierarchy);
//  - policies (compression, retention, the aggregates' refreshes and compression) and a
//    user-defined action that runs every 10 s and leaves a row per run in partner_notifications,
//    so its runs can be seen.
// It is shaped the way a running service is, not by hand (pageViewsSql): the rows arrive a day at a
// time, oldest first; after each day the chunks just written are analysed (what autovacuum does),
// and then TimescaleDB's own scheduler runs the policies, which compress what is old enough. So, as
// on a real service, statistics hold production's values where nothing analyses again: the chunks
// analysed while they were being written and compressed since (pg_stats of their emptied tables),
// the compressed chunks' tables (_timescaledb_internal.compress_hyper_*), and the aggregates'
// materialization hypertables and their compressed chunks.
// Without TimescaleDB (a user's machine where it is not installed) only the ordinary tables.

/** Every service's database and admin role, as in production. */
export const DATABASE = "tsdb";
export const ROLE = "tsdbadmin";
/** The sample table, and how many rows it holds. */
export const SAMPLE_TABLE = "conditions";
export const SAMPLE_ROWS = 1000;
/** Customers' personal data: e-mail addresses, names and API tokens. */
export const PERSONAL_TABLE = "customers";
export const PERSONAL_ROWS = 100;
/** The hypertable of page views, each with a customer's e-mail address (personal data too). */
export const EVENTS_TABLE = "events";
export const EVENTS_ROWS = 140_000;
/** The days its rows span, up to now: one chunk a day. */
export const EVENTS_DAYS = 14;
/** Its chunks older than this are compressed: 12 of its 15 (14 days from a time of day), 110,000 to 120,000 rows as the day goes on. */
export const EVENTS_COMPRESSED_AFTER = "2 days";
/** The continuous aggregate over events, grouped by day and customer_email. */
export const EVENTS_DAILY = "events_daily";
/** The continuous aggregate over events_daily (a hierarchy), grouped by week and customer_email. */
export const EVENTS_WEEKLY = "events_weekly";
/** The continuous aggregate over events grouped by day and an expression of the address, lower(customer_email) AS address. */
export const EVENTS_BY_ADDRESS = "events_by_address";
/** Where the user-defined action leaves a row per run. */
export const NOTIFICATIONS_TABLE = "partner_notifications";
/** The user-defined action, a procedure of tsdbadmin's (its job is the last one made). */
export const NOTIFY_PROCEDURE = "notify_partner";

/** The production value of a seeded customer's columns, as the parent holds them. */
export const customerRow = (id: number) => ({
  email: `customer${id}@prod-customers.example.com`,
  full_name: `Customer Number${id} Realname`,
  api_token: `tok_live_${(id * 2654435761).toString(16).padStart(8, "0")}`,
});

/** Run by the superuser in `tsdb` before the rest: the extension, as Tiger Cloud installs it. */
export const EXTENSION_SQL = ["CREATE EXTENSION IF NOT EXISTS timescaledb;"];

/** The ordinary tables, run as tsdbadmin in tsdb. */
function ordinaryTables(): string[] {
  return [
    `CREATE TABLE ${SAMPLE_TABLE} (time timestamptz NOT NULL, device text NOT NULL, temperature double precision);`,
    `INSERT INTO ${SAMPLE_TABLE} SELECT timestamptz '2026-01-01' + g * interval '1 minute', 'device-' || (g % 10), 20 + (g % 7) FROM generate_series(1, ${SAMPLE_ROWS}) g;`,
    `CREATE TABLE ${PERSONAL_TABLE} (id integer PRIMARY KEY, email text UNIQUE NOT NULL, full_name text, api_token text, referred_by integer);`,
    `INSERT INTO ${PERSONAL_TABLE} SELECT g, 'customer' || g || '@prod-customers.example.com', 'Customer Number' || g || ' Realname', ` +
      `'tok_live_' || lpad(to_hex(g::bigint * 2654435761), 8, '0'), nullif(g / 2, 0) FROM generate_series(1, ${PERSONAL_ROWS}) g;`,
  ];
}

/** A hypertable of page views and what TimescaleDB keeps from it, as pageViewsSql makes them. */
export interface PageViews {
  /** The hypertable (in public), one chunk a day. */
  table: string;
  /** Its rows, spread evenly over `days` days up to now. */
  rows: number;
  days: number;
  /** Its columns after `time` (with their types), and their values for the row numbered g (from 0), as a SELECT list. */
  columns: string;
  values: string;
  /**
   * The column holding an e-mail address (personal data): the hypertable is compressed ordered by
   * it (its compressed chunks' _ts_meta_min_1/_ts_meta_max_1 hold addresses), the aggregates group
   * by it and are compressed segmented by it (or lower(it)).
   */
  email: string;
  /** The column the hypertable is compressed segmented by (not personal data). */
  segment: string;
  /** A numeric column the daily aggregate averages (as avg_<column>). */
  measure: string;
  /** The continuous aggregates: by day and `email`, by week from the daily one, by day and lower(`email`) AS address. */
  daily: string;
  weekly: string;
  byAddress: string;
  /** The hypertable's chunks older than this are compressed (by its policy). */
  compressAfter: string;
}

/** Production's page views: EVENTS_TABLE and its aggregates. */
export const EVENTS: PageViews = {
  table: EVENTS_TABLE,
  rows: EVENTS_ROWS,
  days: EVENTS_DAYS,
  columns: "customer_id integer, customer_email text, path text, duration_ms integer",
  values:
    `1 + g % ${PERSONAL_ROWS}, 'customer' || (1 + g % ${PERSONAL_ROWS}) || '@prod-customers.example.com', ` +
    `'/page/' || (g % 20), g % 997`,
  email: "customer_email",
  segment: "path",
  measure: "duration_ms",
  daily: EVENTS_DAILY,
  weekly: EVENTS_WEEKLY,
  byAddress: EVENTS_BY_ADDRESS,
  compressAfter: EVENTS_COMPRESSED_AFTER,
};

/** The aggregates' chunks older than this are compressed (after the refresh wrote them: see pageViewsSql). */
const AGGREGATE_COMPRESSED_AFTER = "3 days";

/**
 * A hypertable of page views and its aggregates and policies, shaped the way a running service
 * shapes them; statements a superuser runs in one psql session (the objects are `owner`'s). The
 * rows arrive a day (a chunk) at a time, oldest first, each day in a transaction of its own; then:
 *  1. the chunks just written are analysed: what autovacuum does on a service once enough of a
 *     table changed (autovacuum is off on the simulator's servers, and would analyse at moments
 *     of its own: an explicit ANALYZE stands in for it, at the moment it matters). What it
 *     analyses: every chunk still holding uncompressed rows (the day just written; a
 *     materialization chunk a refresh just wrote) and every compressed chunk's table not analysed
 *     yet (written once, by the compression);
 *  2. TimescaleDB's scheduler runs the policies, one job after the other: the aggregates' refreshes
 *     and the hypertable's compression (which compresses the day just analysed, once older than
 *     `compressAfter`); the chunks written analysed again; then the weekly aggregate's refresh, the
 *     aggregates' compression and the retention. Their windows are TimescaleDB's, counted from the
 *     real now(): the days arrive late (the oldest first, all within a minute), so a day is
 *     refreshed and compressed in its own round, as a service would a few days after it.
 * The jobs are run by the background scheduler itself, not by run_job(): each is made due
 * (alter_job's next_start) and the build waits until job_stats says it ran (total_runs advanced, its
 * last run finished). The scheduler looks at changed jobs only when it wakes (measured: up to 5 s
 * later), so pg_reload_conf() wakes it (its SIGHUP sets the scheduler's latch; the configuration is
 * unchanged): about 30 ms a job. The policies' own schedules (hours) never make them due during the
 * build. A run that fails stops the build, except the failure every job's run ends with on this
 * build of TimescaleDB 2.28.3 for PostgreSQL 15.20 (`cannot drop portal "" while it is being set
 * up`, raised once the job's work is committed: its chunks are compressed, its aggregate refreshed).
 */
export function pageViewsSql(p: PageViews, owner: string = ROLE): string[] {
  // The aggregates' refresh windows reach back past the oldest row, so that every day arriving is refreshed.
  const window = `${p.days + 16} days`;
  const jobs = `pg_temp.${p.table}_jobs`;
  const names = [p.table, p.daily, p.weekly, p.byAddress].map((n) => `'${n}'`).join(", ");
  return [
    `SET ROLE ${owner};`,
    `CREATE TABLE ${p.table} (time timestamptz NOT NULL, ${p.columns});`,
    `SELECT create_hypertable('${p.table}', by_range('time', interval '1 day'));`,
    `ALTER TABLE ${p.table} SET (timescaledb.compress, timescaledb.compress_segmentby = '${p.segment}', timescaledb.compress_orderby = '${p.email}, time DESC');`,
    // Each aggregate's materialization chunks a day long (ten by default): a day is compressed once refreshed whole.
    `CREATE MATERIALIZED VIEW ${p.daily} WITH (timescaledb.continuous) AS SELECT time_bucket('1 day', time) AS day, ${p.email}, ` +
      `count(*) AS views, avg(${p.measure}) AS avg_${p.measure} FROM ${p.table} GROUP BY 1, 2 WITH NO DATA;`,
    `SELECT set_chunk_time_interval('${p.daily}', interval '1 day');`,
    `ALTER MATERIALIZED VIEW ${p.daily} SET (timescaledb.compress, timescaledb.compress_segmentby = '${p.email}', timescaledb.compress_orderby = 'day DESC');`,
    `CREATE MATERIALIZED VIEW ${p.byAddress} WITH (timescaledb.continuous) AS SELECT time_bucket('1 day', time) AS day, lower(${p.email}) AS address, ` +
      `count(*) AS views FROM ${p.table} GROUP BY 1, 2 WITH NO DATA;`,
    `SELECT set_chunk_time_interval('${p.byAddress}', interval '1 day');`,
    `ALTER MATERIALIZED VIEW ${p.byAddress} SET (timescaledb.compress, timescaledb.compress_segmentby = 'address', timescaledb.compress_orderby = 'day DESC');`,
    `CREATE MATERIALIZED VIEW ${p.weekly} WITH (timescaledb.continuous) AS SELECT time_bucket('1 week', day) AS week, ${p.email}, ` +
      `sum(views) AS views FROM ${p.daily} GROUP BY 1, 2 WITH NO DATA;`,
    // The policies, in the order of their rounds; not due before the build makes them due.
    `CREATE TEMP TABLE ${p.table}_jobs (round integer, job integer, n serial);`,
    `INSERT INTO ${jobs} (round, job) VALUES ` +
      [
        `(1, add_continuous_aggregate_policy('${p.daily}', start_offset => interval '${window}', end_offset => interval '1 hour', schedule_interval => interval '1 hour', initial_start => now() + interval '1 day'))`,
        `(1, add_continuous_aggregate_policy('${p.byAddress}', start_offset => interval '${window}', end_offset => interval '1 hour', schedule_interval => interval '1 hour', initial_start => now() + interval '1 day'))`,
        `(1, add_compression_policy('${p.table}', compress_after => interval '${p.compressAfter}', initial_start => now() + interval '1 day'))`,
        `(2, add_continuous_aggregate_policy('${p.weekly}', start_offset => interval '${window}', end_offset => interval '1 day', schedule_interval => interval '1 day', initial_start => now() + interval '1 day'))`,
        `(2, add_compression_policy('${p.daily}', compress_after => interval '${AGGREGATE_COMPRESSED_AFTER}', initial_start => now() + interval '1 day'))`,
        `(2, add_compression_policy('${p.byAddress}', compress_after => interval '${AGGREGATE_COMPRESSED_AFTER}', initial_start => now() + interval '1 day'))`,
        `(2, add_retention_policy('${p.table}', drop_after => interval '1 year', initial_start => now() + interval '1 day'))`,
      ].join(", ") +
      ";",
    "RESET ROLE;",
    ...SHAPING_PROCEDURES,
    `DO $shape$
DECLARE
  t0 timestamptz := now() - interval '${p.days} days';
  step interval := interval '${p.days} days' / ${p.rows};
  seconds float8 := extract(epoch FROM interval '${p.days} days') / ${p.rows};
  hypertables integer[] := pg_temp.hypertables_of(ARRAY[${names}]);
  round1 integer[] := ARRAY(SELECT job FROM ${jobs} WHERE round = 1 ORDER BY n);
  round2 integer[] := ARRAY(SELECT job FROM ${jobs} WHERE round = 2 ORDER BY n);
  since timestamptz;
  lo bigint;
  hi bigint;
BEGIN
  FOR since IN SELECT generate_series(date_trunc('day', t0, 'UTC'), t0 + interval '${p.days} days', interval '24 hours') LOOP
    lo := greatest(0, floor(extract(epoch FROM since - t0) / seconds)::bigint - 1);
    hi := least(${p.rows - 1}, ceil(extract(epoch FROM since + interval '24 hours' - t0) / seconds)::bigint);
    INSERT INTO ${p.table} SELECT t0 + g * step, ${p.values} FROM generate_series(lo, hi) g
      WHERE t0 + g * step >= since AND t0 + g * step < since + interval '24 hours';
    COMMIT;
    CALL pg_temp.analyze_written(hypertables);
    CALL pg_temp.run_jobs(round1);
    CALL pg_temp.analyze_written(hypertables);
    CALL pg_temp.run_jobs(round2);
  END LOOP;
  CALL pg_temp.analyze_written(hypertables);
END $shape$;`,
    `DROP TABLE ${jobs};`,
  ];
}

/** The procedures pageViewsSql's rounds call, for this session only (pg_temp): none is left in the database. */
const SHAPING_PROCEDURES = [
  // The named hypertables and aggregates (in public), their materialization hypertables, and their compressed hypertables.
  `CREATE OR REPLACE FUNCTION pg_temp.hypertables_of(names text[]) RETURNS integer[] LANGUAGE sql AS $$
  WITH named AS (
    SELECT h.id FROM _timescaledb_catalog.hypertable h WHERE h.schema_name = 'public' AND h.table_name = ANY(names)
    UNION SELECT a.mat_hypertable_id FROM _timescaledb_catalog.continuous_agg a WHERE a.user_view_schema = 'public' AND a.user_view_name = ANY(names))
  SELECT array_agg(id) FROM (SELECT id FROM named UNION SELECT h.compressed_hypertable_id FROM _timescaledb_catalog.hypertable h JOIN named USING (id)) ids
  WHERE id IS NOT NULL $$;`,
  // Autovacuum's part: the chunks holding uncompressed rows (status bit 1 unset, or bit 8: partly compressed), and the
  // compressed chunks' tables never analysed (each written once, when its chunk was compressed).
  `CREATE OR REPLACE PROCEDURE pg_temp.analyze_written(hypertables integer[]) LANGUAGE plpgsql AS $$
DECLARE
  chunk regclass;
BEGIN
  FOR chunk IN
    SELECT format('%I.%I', c.schema_name, c.table_name)::regclass
    FROM _timescaledb_catalog.chunk c JOIN _timescaledb_catalog.hypertable h ON h.id = c.hypertable_id
    WHERE h.id = ANY(hypertables) AND (
      (h.compression_state <> 2 AND (c.status & 1 = 0 OR c.status & 8 <> 0))
      OR (h.compression_state = 2 AND NOT EXISTS (
        SELECT FROM pg_statistic s WHERE s.starelid = format('%I.%I', c.schema_name, c.table_name)::regclass)))
    ORDER BY c.id
  LOOP
    EXECUTE format('ANALYZE %s', chunk);
  END LOOP;
END $$;`,
  // Each job in turn, run by the scheduler: made due, the scheduler woken, job_stats polled until its run has finished.
  `CREATE OR REPLACE PROCEDURE pg_temp.run_jobs(jobs integer[]) LANGUAGE plpgsql AS $$
DECLARE
  job integer;
  runs bigint;
  started timestamptz;
  failure text;
BEGIN
  FOREACH job IN ARRAY jobs LOOP
    SELECT coalesce(total_runs, 0) INTO runs FROM timescaledb_information.job_stats WHERE job_id = job;
    started := clock_timestamp();
    PERFORM alter_job(job, next_start => started);
    COMMIT;
    PERFORM pg_reload_conf();
    -- Finished: a run more than before, whose end is after its start (last_run_duration is null while it runs).
    WHILE NOT EXISTS (SELECT FROM timescaledb_information.job_stats s WHERE s.job_id = job AND s.total_runs > runs AND s.last_run_duration IS NOT NULL) LOOP
      IF clock_timestamp() > started + interval '2 minutes' THEN
        RAISE EXCEPTION 'the scheduler did not run job % within 2 minutes', job;
      END IF;
      PERFORM pg_sleep(0.005);
    END LOOP;
    SELECT err_message INTO failure FROM timescaledb_information.job_history
      WHERE job_id = job AND start_time >= started AND NOT succeeded AND err_message NOT LIKE 'cannot drop portal "" while it is being set up%';
    IF failure IS NOT NULL THEN
      RAISE EXCEPTION 'job % failed: %', job, failure;
    END IF;
  END LOOP;
END $$;`,
];

/** The user-defined action and the table it writes, run as tsdbadmin in tsdb; its job is the last one made. */
function userAction(): string[] {
  return [
    `CREATE TABLE ${NOTIFICATIONS_TABLE} (at timestamptz NOT NULL DEFAULT now(), job_id integer NOT NULL, customers bigint);`,
    `CREATE PROCEDURE ${NOTIFY_PROCEDURE}(job_id integer, config jsonb) LANGUAGE plpgsql AS $$ BEGIN ` +
      `INSERT INTO ${NOTIFICATIONS_TABLE} (job_id, customers) SELECT job_id, count(*) FROM ${PERSONAL_TABLE}; END $$;`,
    `SELECT add_job('${NOTIFY_PROCEDURE}', interval '10 seconds', config => '{"webhook": "https://partner.example.com/hook"}');`,
  ];
}

/**
 * Production's database, run by the superuser in tsdb after EXTENSION_SQL where TimescaleDB is
 * there; what it makes is tsdbadmin's. A statement a line: psql runs each on its own (a refresh,
 * the rounds' commits, need it).
 */
export function productionSql(timescaledb: boolean, eventsRows: number = EVENTS_ROWS): string[] {
  const asAdmin = (statements: string[]) => [`SET ROLE ${ROLE};`, ...statements, "RESET ROLE;"];
  if (!timescaledb) return asAdmin(ordinaryTables());
  return [...asAdmin(ordinaryTables()), ...pageViewsSql({ ...EVENTS, rows: eventsRows }), ...asAdmin(userAction())];
}
