// What the simulator's production service holds: a database that looks like a Tiger Cloud
// customer's, so that a fork's preparation meets what it meets there. With TimescaleDB (every Tiger
// Cloud service runs it):
//  - personal data in an ordinary table (customers: e-mail, name, API token);
//  - the same people's e-mail addresses in a hypertable of page views (events), one chunk a day,
//    the chunks older than two days compressed: more compressed rows than TimescaleDB lets one
//    transaction's UPDATE decompress (timescaledb.max_tuples_decompressed_per_dml_transaction);
//  - a continuous aggregate that groups by that e-mail column (events_daily), materialized;
//  - policies (compression, retention, the aggregate's refresh) and a user-defined action that runs
//    every 10 s and leaves a row per run in partner_notifications, so its runs can be seen;
//  - statistics analysed (pg_stats holds production values, as on a real service).
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
/** Its chunks older than this are compressed: 12 of its 14 days, about 120,000 rows. */
export const EVENTS_COMPRESSED_AFTER = "2 days";
/** The continuous aggregate over events, grouped by day and customer_email. */
export const EVENTS_DAILY = "events_daily";
/** Where the user-defined action leaves a row per run. */
export const NOTIFICATIONS_TABLE = "partner_notifications";

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

/** The TimescaleDB part, run as tsdbadmin in tsdb (a statement a line: psql runs each on its own, as a refresh needs). */
function timescaleObjects(): string[] {
  return [
    `CREATE TABLE ${EVENTS_TABLE} (time timestamptz NOT NULL, customer_id integer, customer_email text, path text, duration_ms integer);`,
    `SELECT create_hypertable('${EVENTS_TABLE}', by_range('time', interval '1 day'));`,
    `INSERT INTO ${EVENTS_TABLE} SELECT now() - interval '14 days' + g * (interval '14 days' / ${EVENTS_ROWS}), 1 + g % ${PERSONAL_ROWS}, ` +
      `'customer' || (1 + g % ${PERSONAL_ROWS}) || '@prod-customers.example.com', '/page/' || (g % 20), g % 997 FROM generate_series(0, ${EVENTS_ROWS - 1}) g;`,
    `ALTER TABLE ${EVENTS_TABLE} SET (timescaledb.compress, timescaledb.compress_segmentby = 'path', timescaledb.compress_orderby = 'time DESC');`,
    `SELECT count(compress_chunk(c)) FROM show_chunks('${EVENTS_TABLE}', older_than => interval '${EVENTS_COMPRESSED_AFTER}') c;`,
    `CREATE MATERIALIZED VIEW ${EVENTS_DAILY} WITH (timescaledb.continuous) AS SELECT time_bucket('1 day', time) AS day, customer_email, ` +
      `count(*) AS views, avg(duration_ms) AS avg_duration_ms FROM ${EVENTS_TABLE} GROUP BY 1, 2 WITH NO DATA;`,
    `CALL refresh_continuous_aggregate('${EVENTS_DAILY}', NULL, NULL);`,
    `SELECT add_continuous_aggregate_policy('${EVENTS_DAILY}', start_offset => interval '30 days', end_offset => interval '1 hour', schedule_interval => interval '1 hour');`,
    `SELECT add_compression_policy('${EVENTS_TABLE}', compress_after => interval '${EVENTS_COMPRESSED_AFTER}');`,
    `SELECT add_retention_policy('${EVENTS_TABLE}', drop_after => interval '1 year');`,
    `CREATE TABLE ${NOTIFICATIONS_TABLE} (at timestamptz NOT NULL DEFAULT now(), job_id integer NOT NULL, customers bigint);`,
    `CREATE PROCEDURE notify_partner(job_id integer, config jsonb) LANGUAGE plpgsql AS $$ BEGIN ` +
      `INSERT INTO ${NOTIFICATIONS_TABLE} (job_id, customers) SELECT job_id, count(*) FROM ${PERSONAL_TABLE}; END $$;`,
    `SELECT add_job('notify_partner', interval '10 seconds', config => '{"webhook": "https://partner.example.com/hook"}');`,
  ];
}

/** Production's database, as tsdbadmin, after EXTENSION_SQL where TimescaleDB is there. */
export function productionSql(timescaledb: boolean): string[] {
  return [...ordinaryTables(), ...(timescaledb ? timescaleObjects() : [])];
}
