// A stand-in for TimescaleDB's job catalog, written from TimescaleDB's documentation (2.x): the
// extension is not packaged for the machines this simulator runs on. What a fork's preparation
// touches, with the names, columns and signature TimescaleDB has:
//  - the view timescaledb_information.jobs (its columns, in its order), over a table of the
//    stand-in's own (TimescaleDB keeps jobs in _timescaledb_config.bgw_job; this table has the
//    hypertable's name in place of its ID);
//  - the function alter_job(job_id, schedule_interval, max_runtime, max_retries, retry_period,
//    scheduled, config, next_start, if_exists, check_config, fixed_schedule, initial_start,
//    timezone), each argument defaulting to NULL (if_exists to false), returning the job's row; it
//    refuses an unknown job ("job N not found", 42704, unless if_exists) and a job of another
//    owner (42501), as TimescaleDB does.
// Nothing runs a job: scheduling is TimescaleDB's background worker, which the stand-in lacks.
// The parent's jobs (seeded below) are TimescaleDB's own two (IDs below 1000) and three of a
// user's: a retention and a compression policy on the sample table, and a user-defined action
// that calls a partner's webhook. A fork's server is a copy of its parent's, jobs and all.
/** The SQL that makes the catalog, run as the server's superuser in the service's database; `admin` owns the user's jobs, two of them policies on `table`. */
export function jobCatalogSql(admin: string, table: string): string[] {
  return [
    `CREATE SCHEMA _timescaledb_config;`,
    `CREATE SCHEMA timescaledb_information;`,
    `CREATE TABLE _timescaledb_config.bgw_job (
       id integer PRIMARY KEY, application_name text NOT NULL, schedule_interval interval NOT NULL,
       max_runtime interval NOT NULL, max_retries integer NOT NULL, retry_period interval NOT NULL,
       proc_schema name NOT NULL, proc_name name NOT NULL, owner regrole NOT NULL, scheduled boolean NOT NULL DEFAULT true,
       fixed_schedule boolean NOT NULL DEFAULT true, initial_start timestamptz, next_start timestamptz,
       hypertable_schema name, hypertable_name name, config jsonb, check_schema name, check_name name, timezone text);`,
    `CREATE VIEW timescaledb_information.jobs AS
       SELECT id AS job_id, application_name, schedule_interval, max_runtime, max_retries, retry_period,
              proc_schema::text, proc_name::text, owner::text, scheduled, fixed_schedule, config, next_start, initial_start,
              hypertable_schema::text, hypertable_name::text, check_schema::text, check_name::text
         FROM _timescaledb_config.bgw_job;`,
    `GRANT USAGE ON SCHEMA timescaledb_information TO PUBLIC;`,
    `GRANT SELECT ON timescaledb_information.jobs TO PUBLIC;`,
    // The work, in PL/pgSQL under names of its own (its variables may not share the OUT columns' names).
    `CREATE FUNCTION _timescaledb_config.alter_job_as_owner(
       p_job_id integer, p_schedule_interval interval, p_max_runtime interval, p_max_retries integer,
       p_retry_period interval, p_scheduled boolean, p_config jsonb, p_next_start timestamptz, p_if_exists boolean,
       p_check_config regproc, p_fixed_schedule boolean, p_initial_start timestamptz, p_timezone text)
     RETURNS SETOF _timescaledb_config.bgw_job
     LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
     DECLARE
       job _timescaledb_config.bgw_job;
     BEGIN
       SELECT * INTO job FROM _timescaledb_config.bgw_job j WHERE j.id = p_job_id FOR UPDATE;
       IF NOT FOUND THEN
         IF p_if_exists THEN
           RAISE NOTICE 'job % not found, skipping', p_job_id;
           RETURN;
         END IF;
         RAISE EXCEPTION 'job % not found', p_job_id USING ERRCODE = 'undefined_object';
       END IF;
       IF NOT pg_has_role(session_user, job.owner, 'MEMBER') THEN
         RAISE EXCEPTION 'insufficient permissions to alter job %', p_job_id USING ERRCODE = 'insufficient_privilege';
       END IF;
       UPDATE _timescaledb_config.bgw_job j SET
         schedule_interval = coalesce(p_schedule_interval, j.schedule_interval),
         max_runtime = coalesce(p_max_runtime, j.max_runtime),
         max_retries = coalesce(p_max_retries, j.max_retries),
         retry_period = coalesce(p_retry_period, j.retry_period),
         scheduled = coalesce(p_scheduled, j.scheduled),
         config = coalesce(p_config, j.config),
         next_start = coalesce(p_next_start, j.next_start),
         fixed_schedule = coalesce(p_fixed_schedule, j.fixed_schedule),
         initial_start = coalesce(p_initial_start, j.initial_start),
         timezone = coalesce(p_timezone, j.timezone),
         check_schema = CASE WHEN p_check_config IS NULL THEN j.check_schema ELSE
           (SELECT n.nspname FROM pg_proc f JOIN pg_namespace n ON n.oid = f.pronamespace WHERE f.oid = p_check_config) END,
         check_name = CASE WHEN p_check_config IS NULL THEN j.check_name ELSE
           (SELECT f.proname FROM pg_proc f WHERE f.oid = p_check_config) END
       WHERE j.id = p_job_id
       RETURNING * INTO job;
       RETURN NEXT job;
     END $fn$;`,
    `REVOKE ALL ON FUNCTION _timescaledb_config.alter_job_as_owner FROM PUBLIC;`,
    `GRANT USAGE ON SCHEMA _timescaledb_config TO PUBLIC;`,
    `GRANT EXECUTE ON FUNCTION _timescaledb_config.alter_job_as_owner TO PUBLIC;`,
    // TimescaleDB's signature: an IN and an OUT parameter may share a name (job_id), as its C function's do.
    `CREATE FUNCTION public.alter_job(
       job_id integer, schedule_interval interval = NULL, max_runtime interval = NULL, max_retries integer = NULL,
       retry_period interval = NULL, scheduled boolean = NULL, config jsonb = NULL, next_start timestamptz = NULL,
       if_exists boolean = false, check_config regproc = NULL, fixed_schedule boolean = NULL,
       initial_start timestamptz = NULL, timezone text = NULL)
     RETURNS TABLE (job_id integer, schedule_interval interval, max_runtime interval, max_retries integer,
       retry_period interval, scheduled boolean, config jsonb, next_start timestamptz, check_config text,
       fixed_schedule boolean, initial_start timestamptz, timezone text)
     LANGUAGE sql AS $fn$
       SELECT j.id, j.schedule_interval, j.max_runtime, j.max_retries, j.retry_period, j.scheduled, j.config, j.next_start,
              CASE WHEN j.check_name IS NULL THEN NULL ELSE j.check_schema || '.' || j.check_name END,
              j.fixed_schedule, j.initial_start, j.timezone
         FROM _timescaledb_config.alter_job_as_owner($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) j
     $fn$;`,
    `GRANT EXECUTE ON FUNCTION public.alter_job TO PUBLIC;`,
    `INSERT INTO _timescaledb_config.bgw_job
       (id, application_name, schedule_interval, max_runtime, max_retries, retry_period, proc_schema, proc_name, owner,
        hypertable_schema, hypertable_name, config, next_start) VALUES
       (1, 'Telemetry Reporter [1]', '24 hours', '100 seconds', -1, '1 hour', '_timescaledb_functions', 'policy_telemetry',
        'postgres', NULL, NULL, NULL, now() + interval '1 hour'),
       (3, 'Job History Log Retention Policy [3]', '1 month', '1 hour', -1, '1 hour', '_timescaledb_functions',
        'policy_job_stat_history_retention', 'postgres', NULL, NULL, '{"drop_after": "1 month"}', now() + interval '1 day'),
       (1000, 'Retention Policy [1000]', '1 day', '5 minutes', -1, '5 minutes', '_timescaledb_functions', 'policy_retention',
        '${admin}', 'public', '${table}', '{"drop_after": "30 days", "hypertable_id": 1}', now() + interval '1 day'),
       (1001, 'Compression Policy [1001]', '12 hours', '0', -1, '1 hour', '_timescaledb_functions', 'policy_compression',
        '${admin}', 'public', '${table}', '{"compress_after": "7 days", "hypertable_id": 1}', now() + interval '12 hours'),
       (1002, 'User-Defined Action [1002]', '1 hour', '0', -1, '5 minutes', 'public', 'notify_partner',
        '${admin}', NULL, NULL, '{"webhook": "https://partner.example.com/hook"}', now() + interval '1 hour');`,
  ];
}
