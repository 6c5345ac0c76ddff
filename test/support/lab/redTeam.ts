// What the red team's suites share (maskingRedTeam*.e2e.test.ts): a production of the same shape at
// a tenth of its size, the rules every way is tried against, and the shapes and reads the ways are
// made of. Each suite calls redTeamLab() once, at its top: the lab's hooks are registered there.
import { EVENTS_TABLE } from "../../../simulator/production";
import { preparedForkProgram, productionSuite, readThrough as read, SHAPED_ROWS } from "./production";

/** The rules every way is tried against: the compressed hypertable's addresses and the customers'. */
export const RULES = [
  { table: EVENTS_TABLE, column: "customer_email", with: "email" },
  { table: "customers", column: "email", with: "email" },
];
/** Every production e-mail address, as a LIKE pattern. */
export const PRODUCTION_ADDRESS = "%prod-customers.example.com%";

/** Tables of chunks TimescaleDB no longer lists (a DROP TABLE of a compressed hypertable keeps its compressed chunks' tables), dropped. */
export const DROP_LEFT_BEHIND = `DO $d$ DECLARE t text; BEGIN FOR t IN SELECT format('%I.%I', n.nspname, c.relname) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
  WHERE n.nspname = '_timescaledb_internal' AND c.relkind = 'r' AND c.relname ~ '^(compress_hyper|_hyper)_[0-9]+_[0-9]+_chunk$'
    AND NOT EXISTS (SELECT 1 FROM _timescaledb_catalog.chunk ch WHERE ch.schema_name = n.nspname AND ch.table_name = c.relname) LOOP EXECUTE 'DROP TABLE ' || t; END LOOP; END $d$`;

/** A failed up's own words: from "Preparing fork" on, one line, as long as a reader needs. */
export function said(message: string): string {
  const line = message.replace(/\s+/g, " ");
  const from = Math.max(0, line.indexOf("Preparing fork"));
  return line.slice(from, from + 700);
}

/** Two materialized views as the earlier rounds made them: m_deep_<tag> is refreshed in the second wave, its statistics production's until then. */
export const deepViews = (tag: string) => `
    CREATE MATERIALIZED VIEW public.m_base_${tag} AS SELECT email FROM public.customers;
    CREATE MATERIALIZED VIEW public.m_deep_${tag} AS SELECT email FROM public.m_base_${tag};
    ANALYZE public.m_deep_${tag};`;
export const dropDeepViews = (tag: string) => `DROP MATERIALIZED VIEW IF EXISTS public.m_deep_${tag}, public.m_base_${tag};`;
/** The SQL text of a function body copying m_deep_<tag>'s statistics (production's until its refresh) into public.stolen_<tag>, once. */
export const copyStats = (tag: string) => `
    IF NOT EXISTS (SELECT 1 FROM public.stolen_${tag}) THEN
      INSERT INTO public.stolen_${tag} SELECT coalesce(s.most_common_vals::text, '') || coalesce(s.histogram_bounds::text, '')
        FROM pg_catalog.pg_stats s WHERE s.schemaname = 'public' AND s.tablename = 'm_deep_${tag}';
    END IF;`;
/** What public.stolen_<tag> holds of production's addresses, read through a URL. */
export const copied = (tag: string) => (uri: string) =>
  read(
    uri,
    `SELECT 'copied: ' || count(*) FILTER (WHERE lower(v) LIKE '${PRODUCTION_ADDRESS}') || ' of ' || count(*) FROM public.stolen_${tag}`,
  );
/** An expression: m_deep_<tag>'s statistics as text (production's until its refresh). */
export const statsOf = (
  tag: string,
) => `coalesce((SELECT pg_catalog.string_agg(coalesce(s.most_common_vals::text, '') || coalesce(s.histogram_bounds::text, ''), ' ')
        FROM pg_catalog.pg_stats s WHERE s.schemaname = 'public' AND s.tablename = 'm_deep_${tag}'), 'none')`;
/** What large objects hold: an IMMUTABLE function cannot INSERT, but PostgreSQL's lo_from_bytea writes all the same. */
export const inLargeObjects = (uri: string) =>
  read(
    uri,
    `SELECT 'copied: ' || count(*) FILTER (WHERE lower(convert_from(lo_get(oid), 'UTF8')) LIKE '${PRODUCTION_ADDRESS}') || ' of ' || count(*) FROM pg_largeobject_metadata`,
  );

/** PostgreSQL's own functions only: what pg_stats holds of c<tag>'s materialization hypertable (and its chunks), as XML, kept in a large object; an oid, never NULL. */
export const stashStatisticsOf = (view: string) =>
  `pg_catalog.lo_from_bytea(0, pg_catalog.convert_to(pg_catalog.query_to_xml('SELECT s.tablename, s.attname, s.most_common_vals::text AS m, s.histogram_bounds::text AS h ` +
  `FROM pg_catalog.pg_stats s JOIN timescaledb_information.continuous_aggregates a ON a.view_name = ''${view}'' AND s.schemaname = a.materialization_hypertable_schema ` +
  `WHERE s.tablename = a.materialization_hypertable_name OR s.tablename IN (SELECT c.chunk_name FROM timescaledb_information.chunks c ` +
  `WHERE c.hypertable_schema = a.materialization_hypertable_schema AND c.hypertable_name = a.materialization_hypertable_name)', true, false, '')::text, 'UTF8'))`;

/** SQL run as tsdbadmin: `statement` with the first compressed chunk's table of the masked hypertable (format('%I.%I')) for %s. */
export const onCompressedTable = (statement: string) => `
    DO $d$ BEGIN
      EXECUTE (SELECT pg_catalog.format('${statement.replace(/'/g, "''")}', pg_catalog.format('%I.%I', cc.schema_name, cc.table_name))
        FROM _timescaledb_catalog.chunk ch JOIN _timescaledb_catalog.chunk cc ON cc.id = ch.compressed_chunk_id
        JOIN _timescaledb_catalog.hypertable h ON h.id = ch.hypertable_id WHERE h.table_name = '${EVENTS_TABLE}' ORDER BY ch.id LIMIT 1);
    END $d$;`;

/**
 * A job of tsdbadmin's, public.proc<tag>, scheduled a day ahead, whose check_config is TimescaleDB's
 * policy_retention_check and whose config's hypertable_id is `id` (SQL, given the SQL of public.h<tag>'s
 * ID): h<tag> an integer hypertable whose integer_now, public.now<tag>, keeps the customers' addresses
 * in a large object when none is there. `drop`, as the superuser, takes it all away.
 */
export const retentionCheckedJob = (tag: string, id: (hypertableId: string) => string) => ({
  drop: `SELECT delete_job(job_id) FROM timescaledb_information.jobs WHERE proc_name = 'proc${tag}';
      DROP PROCEDURE IF EXISTS public.proc${tag}(integer, jsonb); DROP TABLE IF EXISTS public.h${tag}; DROP FUNCTION IF EXISTS public.now${tag}();`,
  make: `
    CREATE FUNCTION public.now${tag}() RETURNS bigint LANGUAGE plpgsql STABLE AS $f$ BEGIN
      IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_largeobject_metadata) THEN
        PERFORM pg_catalog.lo_from_bytea(0, pg_catalog.convert_to((SELECT pg_catalog.string_agg(email, ' ') FROM public.customers), 'UTF8'));
      END IF;
      RETURN 1000000; END $f$;
    CREATE TABLE public.h${tag} (t bigint NOT NULL, v integer);
    SELECT create_hypertable('public.h${tag}', by_range('t', 1000));
    SELECT set_integer_now_func('public.h${tag}', 'public.now${tag}');
    CREATE PROCEDURE public.proc${tag}(job_id integer, config jsonb) LANGUAGE plpgsql AS $p$ BEGIN END $p$;
    SELECT add_job('public.proc${tag}', '1 hour', initial_start => now() + interval '1 day',
      config => jsonb_build_object('hypertable_id', ${id(`(SELECT id FROM _timescaledb_catalog.hypertable WHERE schema_name = 'public' AND table_name = 'h${tag}')`)}, 'drop_after', 5),
      check_config => '_timescaledb_functions.policy_retention_check');`,
});

/** SQL run as tsdbadmin: `statement` with c<view>'s materialization hypertable's name (format('%I.%I')) for %s. */
export const onMaterialization = (view: string, statement: string) => `
    DO $d$ BEGIN EXECUTE (SELECT format('${statement.replace(/'/g, "''")}', format('%I.%I', materialization_hypertable_schema, materialization_hypertable_name))
      FROM timescaledb_information.continuous_aggregates WHERE view_name = '${view}'); END $d$;`;

/** `statement` run on the first chunk (format('%I.%I')) of the continuous aggregate public.<view>'s materialization hypertable, for %s. */
export const onFirstAggregateChunk = (view: string, statement: string) => `
    DO $d$ BEGIN
      EXECUTE (SELECT format('${statement.replace(/'/g, "''")}', format('%I.%I', c.chunk_schema, c.chunk_name))
        FROM timescaledb_information.continuous_aggregates a JOIN timescaledb_information.chunks c
          ON c.hypertable_schema = a.materialization_hypertable_schema AND c.hypertable_name = a.materialization_hypertable_name
       WHERE a.view_name = '${view}' ORDER BY c.range_start LIMIT 1);
    END $d$;`;

/** How many of the values in pg_stats of c<view>'s materialization hypertable (its own, of the whole) are production's addresses. */
export const inMaterialization = (view: string) => `SELECT count(*) FROM timescaledb_information.continuous_aggregates a JOIN pg_stats s
      ON s.schemaname = a.materialization_hypertable_schema AND s.tablename = a.materialization_hypertable_name,
      unnest(coalesce(s.most_common_vals::text::text[], '{}') || coalesce(s.histogram_bounds::text::text[], '{}')) v
     WHERE a.view_name = '${view}' AND lower(v) LIKE '${PRODUCTION_ADDRESS}'`;

/**
 * A continuous aggregate c<tag> of production's events by day, by the address as `column` (an
 * expression of customer_email) and by a function of tsdbadmin's (public.same<tag>, so refreshed
 * last); `between` run after it is made with no data, before its refresh; its materialization
 * hypertable analysed after, as a database-wide ANALYZE does. Of a tenth of the customers: what
 * runs on each of its rows (a stash of statistics) stays quick.
 */
export const opaqueAggregate = (tag: string, column: string, between = "") => `
    CREATE FUNCTION public.same${tag}(text) RETURNS text LANGUAGE sql IMMUTABLE AS $f$ SELECT $1 $f$;
    CREATE MATERIALIZED VIEW public.c${tag} WITH (timescaledb.continuous) AS
      SELECT time_bucket('1 day', time) AS day, ${column} AS e, public.same${tag}(customer_email) AS v, count(*) AS n
        FROM public.${EVENTS_TABLE} WHERE customer_id % 10 = 0 GROUP BY 1, 2, 3 WITH NO DATA;
    ${between}
    CALL refresh_continuous_aggregate('public.c${tag}', NULL, NULL);
    ${onMaterialization(`c${tag}`, "ANALYZE %s")}`;

/** What `table`'s column `column` holds of production's addresses, read through a URL. */
export const copiedInto = (table: string, column: string) => (uri: string) =>
  read(
    uri,
    `SELECT 'copied: ' || count(*) FILTER (WHERE lower(${column}) LIKE '${PRODUCTION_ADDRESS}') || ' of ' || count(*) FROM ${table}`,
  );

/** A safe outcome: published with no production address read ("copied: 0 of N"), or refused naming `named` and no bare SQLSTATE. */
export const expectSafe = (result: string, named: RegExp) => {
  if (result.startsWith("published")) expect(result).toMatch(/^published, copied: 0 of \d+$/);
  else {
    expect(result).toMatch(named);
    expect(result).not.toMatch(/SQLSTATE/);
  }
};

/** A published fork's read matching `published`, or a refusal naming `named` with no bare SQLSTATE. */
export const expectPublishedOrNamed = (result: string, published: string, named: RegExp) => {
  if (result.startsWith("published")) expect(result).toBe(published);
  else {
    expect(result).toMatch(named);
    expect(result).not.toMatch(/SQLSTATE/);
  }
};

/** The fork published (masked, not refused), and nothing of production's where the attack copied to. */
export const expectPublishedSafe = (result: string) => expect(result).toMatch(/^published, copied: 0 of \d+$/);

/**
 * A function made `role`'s, then `role` made a member of tsdbadmin (so tsdbadmin cannot be made a
 * member of it: the grant would be circular). tsdbadmin has CREATEROLE, as on Tiger Cloud.
 */
export const ownedByMemberOfTsdbadmin = (role: string, routine: string) => `
    CREATE ROLE ${role} NOLOGIN;
    GRANT ${role} TO tsdbadmin;
    GRANT CREATE ON SCHEMA public TO ${role};
    ALTER FUNCTION ${routine} OWNER TO ${role};
    REVOKE CREATE ON SCHEMA public FROM ${role};
    REVOKE ${role} FROM tsdbadmin;
    GRANT tsdbadmin TO ${role};`;

/**
 * SQL run as a superuser making `role`, an application's own (tsdbadmin no member of it), which
 * makes its objects with `sql`: it may read customers, and create in public only for as long.
 */
export const asApplication = (role: string, sql: string) => `
    CREATE ROLE ${role} NOLOGIN;
    GRANT CREATE ON SCHEMA public TO ${role};
    GRANT SELECT ON public.customers TO ${role};
    SET ROLE ${role};
    ${sql}
    RESET ROLE;
    REVOKE CREATE ON SCHEMA public FROM ${role};`;

/**
 * A way at the preparation's record, as production's SQL: notes<tag> (copies of the customers'
 * addresses, in a table no rule names) and two materialized views refreshed last (each calls a
 * function of tsdbadmin's), m<tag>a, whose function runs `each` (plpgsql, with each preparation
 * record's schema's name, quoted, as `r.n`, and a record variable `t` of its own) once as it is refreshed, and m<tag>b, reading the
 * customers and notes<tag>, refused past the COMMIT. m<tag>a's name sorts first: it is refreshed first.
 * `drop` is what the test's cleanup runs.
 */
export const atRecordThenRefused = (tag: string, each: string) => ({
  make: `
    CREATE TABLE public.notes${tag} AS SELECT email AS v FROM public.customers;
    CREATE FUNCTION public.same${tag}(text) RETURNS text LANGUAGE sql IMMUTABLE AS $f$ SELECT $1 $f$;
    CREATE FUNCTION public.tamper${tag}(text) RETURNS text LANGUAGE plpgsql VOLATILE AS $f$ DECLARE r record; t record; BEGIN
      FOR r IN SELECT pg_catalog.format('%I', nspname) AS n FROM pg_catalog.pg_namespace WHERE nspname LIKE '\\_tigercloud\\_preparing\\_%' LOOP
        ${each}
      END LOOP;
      RETURN $1; END $f$;
    CREATE MATERIALIZED VIEW public.m${tag}a AS SELECT public.tamper${tag}(email) AS v FROM public.customers;
    CREATE MATERIALIZED VIEW public.m${tag}b AS SELECT public.same${tag}(email) AS v FROM public.customers UNION ALL SELECT v FROM public.notes${tag};`,
  drop: `DROP MATERIALIZED VIEW IF EXISTS public.m${tag}a, public.m${tag}b; DROP TABLE IF EXISTS public.notes${tag};
      DROP FUNCTION IF EXISTS public.tamper${tag}(text), public.same${tag}(text);`,
});

/**
 * A job at the preparation's record, as production's SQL: `job` (a procedure's name, made
 * unscheduled by the test) scheduled to start at once by a function of tsdbadmin's that a view
 * refreshed last (m<tag>a_arm) calls, its config naming the fork's record (found in pg_namespace)
 * and when to stop (`seconds` on); a second (m<tag>a_wait) sleeps 3 s once it is scheduled, so that
 * it runs; and, as atRecordThenRefused's, notes<tag> and m<tag>b, refused past the COMMIT. `drop`
 * is what the test's cleanup runs (its own procedures and jobs aside).
 */
export const jobAtRecordThenRefused = (tag: string, job: string, seconds: number) => ({
  make: `
    CREATE TABLE public.notes${tag} AS SELECT email AS v FROM public.customers;
    CREATE FUNCTION public.same${tag}(text) RETURNS text LANGUAGE sql IMMUTABLE AS $f$ SELECT $1 $f$;
    CREATE FUNCTION public.arm${tag}(text) RETURNS text LANGUAGE plpgsql VOLATILE AS $f$ DECLARE j int; r text; BEGIN
      SELECT job_id INTO j FROM timescaledb_information.jobs WHERE proc_name = '${job}';
      IF j IS NULL OR (SELECT config FROM timescaledb_information.jobs WHERE job_id = j) ? 'record' THEN RETURN $1; END IF;
      SELECT nspname INTO r FROM pg_catalog.pg_namespace WHERE nspname LIKE '\\_tigercloud\\_preparing\\_%' LIMIT 1;
      IF r IS NULL THEN RETURN $1; END IF;
      PERFORM alter_job(j, scheduled => true, next_start => pg_catalog.clock_timestamp(),
        config => pg_catalog.jsonb_build_object('record', r, 'until', pg_catalog.clock_timestamp() + interval '${seconds} seconds'));
      RETURN $1; END $f$;
    CREATE FUNCTION public.wait${tag}() RETURNS int LANGUAGE plpgsql VOLATILE AS $f$ BEGIN
      IF EXISTS (SELECT 1 FROM timescaledb_information.jobs WHERE proc_name = '${job}' AND scheduled) THEN PERFORM pg_catalog.pg_sleep(3); END IF;
      RETURN 1; END $f$;
    CREATE MATERIALIZED VIEW public.m${tag}a_wait AS SELECT public.wait${tag}() AS n FROM (SELECT 1 FROM public.customers LIMIT 1) c;
    CREATE MATERIALIZED VIEW public.m${tag}a_arm AS SELECT public.arm${tag}(email) AS v FROM (SELECT email FROM public.customers LIMIT 1) c;
    CREATE MATERIALIZED VIEW public.m${tag}b AS SELECT public.same${tag}(email) AS v FROM public.customers UNION ALL SELECT v FROM public.notes${tag};`,
  drop: `DROP MATERIALIZED VIEW IF EXISTS public.m${tag}a_arm, public.m${tag}a_wait, public.m${tag}b; DROP TABLE IF EXISTS public.notes${tag};
      DROP FUNCTION IF EXISTS public.arm${tag}(text), public.same${tag}(text), public.wait${tag}();`,
});

/** The lab of a red team's suite, on the shaped production, with what its ways are read by. */
export function redTeamLab() {
  const lab = productionSuite({ forkQueuedMs: 100, forkConfiguringMs: 100 }, { eventsRows: SHAPED_ROWS });
  const unlinkLargeObjects = () => lab.asSuperuser("SELECT count(lo_unlink(oid)) FROM pg_largeobject_metadata;");
  /**
   * tsdbadmin given CREATEROLE, as on Tiger Cloud, for this test: after it, taken back, then
   * `cleanup` run (what the test made of roles and objects dropped).
   */
  const withCreateRole = async (cleanup: () => Promise<unknown>) => {
    lab.cleanups.push(async () => {
      await lab.asSuperuser("ALTER ROLE tsdbadmin NOCREATEROLE;");
      await cleanup();
    });
    await lab.asSuperuser("ALTER ROLE tsdbadmin CREATEROLE;");
  };
  return {
    /** The whole lab (its harness, `h`, is read lazily: only in a test or hook). */
    lab,
    cleanups: lab.cleanups,
    /** `drop` run now and after the test: production as the test found it. */
    dropping: async (drop: string) => {
      await lab.inProduction(drop);
      lab.cleanups.push(() => lab.inProduction(drop));
    },
    asSuperuser: lab.asSuperuser,
    inProduction: lab.inProduction,
    preparedFork: lab.preparedFork,
    refusedFork: lab.refusedFork,
    /** A published fork's `what` read, or the failure's text: what a test of "published with nothing, or refused naming it" matches. */
    outcome: (name: string, prepare: object, what: (uri: string) => Promise<string>) =>
      lab.preparedFork(name, prepare).then(
        async (fork) => `published, ${await what(fork.uri)}`,
        (err: Error) => said(err.message),
      ),
    withCreateRole,
    /**
     * `way` made in production as tsdbadmin (with CREATEROLE), what it made before and every large
     * object gone first, and again after the test.
     */
    madeAfresh: async (way: { drop: string; make: string }) => {
      await withCreateRole(async () => {
        await lab.asSuperuser(way.drop);
        await unlinkLargeObjects();
      });
      await lab.inProduction(way.make);
    },
    /**
     * A fork masked by `rules` whose preparation is refused past its COMMIT for `view`'s rows holding
     * production's addresses (in its column `column`), then `up` again on the same fork, unchanged: refused
     * again, the same way, though what the second run samples is masked.
     */
    refusedTwice: async (name: string, view: string, column: string, rules: object[] = RULES) => {
      const s = await lab.h.stack(name, lab.forkProgram(name, { mask: rules, pauseJobs: true }));
      lab.cleanups.push(() => lab.discard(s));
      const up = () =>
        s.up().then(
          async (r) => `published, ${await copiedInto(view, column)(r.outputs.uri?.value as string)}`,
          (err: Error) => said(err.message),
        );
      const refused = new RegExp(
        `^Preparing fork .*${view.replace(/\./g, "\\.")} still holds \\d+ row\\(s\\) with values from before the masking, after its refresh.*The masking was committed and checked`,
        "s",
      );
      expect(await up()).toMatch(refused);
      // What the next run checks against: digests beside their key, in state as a secret (ciphertext in the file).
      const fork = (await s.exportState()).resources?.find((r) => r.type.endsWith("tigercloud:ServiceFork"));
      const kept = JSON.parse((fork?.outputs?.sampledEarlier as { plaintext: string }).plaintext) as {
        key: string;
        values: { digest: string }[];
      };
      expect(kept.key).toMatch(/^[0-9a-f]{32}$/);
      expect(kept.values.length).toBeGreaterThan(0);
      for (const hidden of [kept.key, kept.values[0]!.digest, "prod-customers"]) expect(s.rawState()).not.toContain(hidden);
      const again = await up();
      expect(again).toMatch(refused);
      expect(again).not.toMatch(/SQLSTATE/);
    },
    /**
     * A fork masked by RULES (and `prepare`) made of the fork `source` whose preparation failed past its
     * COMMIT: refused, naming the first's record (what the first sampled from production is not there to
     * check against), with no bare SQLSTATE; were it published, `view`'s column `column` is what it reads.
     */
    refusedAsForkOf: async (source: string, name: string, view: string, column: string, prepare: object = {}) => {
      const s = await lab.h.stack(
        name,
        preparedForkProgram(lab.h, name, { mask: RULES, pauseJobs: true, ...prepare }, { sourceServiceId: source }),
      );
      // Before the first fork's discard (added by refusedFork): the second is of it.
      lab.cleanups.unshift(() => lab.discard(s));
      const result = await s.up().then(
        async (r) => `published, ${await copiedInto(view, column)(r.outputs.uri?.value as string)}`,
        (err: Error) => said(err.message),
      );
      expect(result).toMatch(
        /^Preparing fork .*the fork holds _tigercloud_preparing_[0-9a-f]{24}, the record of a preparation that did not finish on the fork it was made of: .*fork from production, or from a fork whose preparation finished/,
      );
      expect(result).not.toMatch(/SQLSTATE/);
    },
    /** Every large object of production's gone. */
    unlinkLargeObjects,
    /** Production's large objects gone, and seen gone: what the URL reads of them is only what the fork's preparation made. */
    noLargeObjects: async () => {
      await unlinkLargeObjects();
      expect(await lab.inProduction("SELECT count(*) FROM pg_largeobject_metadata")).toBe("0");
    },
  };
}
