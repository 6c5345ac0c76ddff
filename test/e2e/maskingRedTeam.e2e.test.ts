// A red team's ways through a masked fork's preparation (docs/masking.md), each read through the
// fork's published URL as its holder reads it, each asserting what the preparation does about it
// now: the fork published with nothing of production's masked values readable, or refused naming
// what it cannot hold off. Each leaves production as it found it.
//  1. the role's own search_path (public before pg_catalog) is in force for the preparation's first
//     statements (ROLE_SETTINGS, RESET_SETTINGS run before PIN_SETTINGS): an operator of
//     tsdbadmin's stands in for text = text, and copies production's rows before any masking;
//  2. a range type's subtype_diff (tsdbadmin's function) runs on each row the masking UPDATE writes,
//     through a GiST index of a range column (and in ANALYZE): FUNCTIONS_ON_WRITE looks at index
//     expressions, not at the functions of a column's type;
//  3. a materialized view refreshed first, whose query calls tsdbadmin's function, reads another
//     materialized view and a continuous aggregate not yet refreshed (production's rows in them);
//  4. a materialized view emptied by REFRESH … WITH NO DATA keeps its statistics (production's
//     values); the preparation leaves an unpopulated view as it is, and checks none of its statistics;
//  5. a materialized view reading pg_stats (through a view) copies the statistics of what is not yet
//     refreshed (emptied views and aggregates keep theirs until then);
//  6. an aggregate, or a materialized view reading nothing masked, left empty by its refresh keeps
//     production's statistics (ANALYZE keeps an empty table's);
//  7. a routine beside TimescaleDB's in its schema, or a domain named regclass on the role's
//     search_path, runs in place of what the refresh calls.
import { EVENTS_DAILY, EVENTS_TABLE } from "../../simulator/production";
import { readThrough as read } from "../support/lab/production";
import { PRODUCTION_ADDRESS, RULES, redTeamLab } from "../support/lab/redTeam";

jest.setTimeout(300_000);
const { lab, cleanups, inProduction, preparedFork, refusedFork } = redTeamLab();

test("the role's search_path (public, pg_catalog) gives no operator of tsdbadmin's a chance to run before the masking: nothing is copied out of customers", async () => {
  cleanups.push(() =>
    inProduction(
      "ALTER ROLE tsdbadmin RESET search_path; DROP OPERATOR IF EXISTS public.= (text, text); " +
        "DROP FUNCTION IF EXISTS public.hijack_eq(text, text); DROP TABLE IF EXISTS public.stolen_eq;",
    ),
  );
  await inProduction(`
    CREATE TABLE public.stolen_eq (q text, v text);
    CREATE FUNCTION public.hijack_eq(text, text) RETURNS boolean LANGUAGE plpgsql SET search_path = pg_catalog AS $f$
      BEGIN
        IF position('pg_settings' in current_query()) > 0 AND NOT EXISTS (SELECT 1 FROM public.stolen_eq) THEN
          INSERT INTO public.stolen_eq SELECT left(current_query(), 60), email FROM public.customers;
        END IF;
        RETURN texteq($1, $2);
      END $f$;
    CREATE OPERATOR public.= (LEFTARG = text, RIGHTARG = text, FUNCTION = public.hijack_eq);
    ALTER ROLE tsdbadmin SET search_path = public, pg_catalog;`);
  expect(await inProduction("SELECT count(*) FROM public.stolen_eq")).toBe("0");
  const fork = await preparedFork("pr-redteam-search-path", { mask: RULES, pauseJobs: true });
  expect(await read(fork.uri, `SELECT count(*) FROM public.stolen_eq WHERE v LIKE '${PRODUCTION_ADDRESS}'`)).toBe("0");
});

test("a range column's subtype_diff (a function of tsdbadmin's, run by its GiST index on each row the masking writes) copies nothing while the masking runs", async () => {
  cleanups.push(() =>
    inProduction(
      "DROP TABLE IF EXISTS public.t_ranged, public.stolen_range; DROP TYPE IF EXISTS public.spanning; " +
        "DROP FUNCTION IF EXISTS public.spanning_diff(float8, float8), public.copy_ranged();",
    ),
  );
  await inProduction(`
    CREATE TABLE public.stolen_range (q text, v text);
    CREATE FUNCTION public.copy_ranged() RETURNS void LANGUAGE plpgsql AS $f$
      BEGIN
        IF pg_catalog.strpos(pg_catalog.current_query(), 'masked_row') > 0 THEN
          PERFORM pg_catalog.set_config('redteam.copied', 'yes', false);
          INSERT INTO public.stolen_range SELECT pg_catalog.left(pg_catalog.current_query(), 60), email FROM public.t_ranged;
        END IF;
      END $f$;
    -- A range type's subtype_diff must be IMMUTABLE; it may still call a VOLATILE function.
    CREATE FUNCTION public.spanning_diff(float8, float8) RETURNS float8 LANGUAGE plpgsql IMMUTABLE AS $f$
      BEGIN
        IF pg_catalog.current_setting('redteam.copied', true) IS DISTINCT FROM 'yes' THEN PERFORM public.copy_ranged(); END IF;
        RETURN $1 - $2;
      END $f$;
    CREATE TYPE public.spanning AS RANGE (subtype = float8, subtype_diff = public.spanning_diff);
    CREATE TABLE public.t_ranged (id int PRIMARY KEY, email text UNIQUE, span public.spanning);
    INSERT INTO public.t_ranged SELECT g, 'ranged' || g || '@prod-customers.example.com', public.spanning(g, g + 1) FROM generate_series(1, 3000) g;
    CREATE INDEX t_ranged_span ON public.t_ranged USING gist (span);`);
  expect(await inProduction("SELECT count(*) FROM public.stolen_range")).toBe("0");
  // It cannot be held off (an index's support function): refused before the masking, naming it.
  const { message } = await refusedFork("pr-redteam-range", { mask: [{ table: "t_ranged", column: "email", with: "email" }] });
  expect(message).toMatch(
    /public\.t_ranged's column span \(its range type public\.spanning\) runs public\.spanning_diff\(double precision,double precision\), a function of the database's own, on each row the masking writes/,
  );
});

test("a materialized view refreshed first, whose query calls a function of tsdbadmin's, reads no production row of a view or aggregate not yet refreshed", async () => {
  cleanups.push(() =>
    inProduction(
      "DROP MATERIALIZED VIEW IF EXISTS public.a_trap, public.m_emails; DROP FUNCTION IF EXISTS public.trap(); DROP TABLE IF EXISTS public.stolen_mv;",
    ),
  );
  await inProduction(`
    CREATE TABLE public.stolen_mv (q text, v text);
    CREATE MATERIALIZED VIEW public.m_emails AS SELECT email FROM public.customers;
    CREATE FUNCTION public.trap() RETURNS int LANGUAGE plpgsql AS $f$
      BEGIN
        INSERT INTO public.stolen_mv SELECT 'm_emails', email FROM public.m_emails;
        INSERT INTO public.stolen_mv SELECT '${EVENTS_DAILY}', customer_email FROM public.${EVENTS_DAILY};
        RETURN 1;
      END $f$;
    -- Refreshed before the others: by depth (1, as they are), then by name.
    CREATE MATERIALIZED VIEW public.a_trap AS SELECT public.trap() AS x;
    TRUNCATE public.stolen_mv;`);
  const fork = await preparedFork("pr-redteam-matview-order", { mask: RULES, pauseJobs: true });
  expect(await read(fork.uri, `SELECT q, count(*) FROM public.stolen_mv WHERE v LIKE '${PRODUCTION_ADDRESS}' GROUP BY q`)).toBe("");
  // What the function reads was emptied, then refreshed from the masked data, before its own turn.
  const refreshed = fork.prepared.refreshed as string[];
  expect(refreshed.indexOf("public.a_trap")).toBeGreaterThan(refreshed.indexOf("public.m_emails"));
  expect(refreshed.indexOf("public.a_trap")).toBeGreaterThan(refreshed.indexOf(`public.${EVENTS_DAILY}`));
  expect(Number(await read(fork.uri, "SELECT count(*) FROM public.stolen_mv"))).toBeGreaterThan(0);
});

test("a materialized view emptied by REFRESH … WITH NO DATA keeps no statistic of production's addresses in the fork", async () => {
  cleanups.push(() => inProduction("DROP MATERIALIZED VIEW IF EXISTS public.m_nodata;"));
  await inProduction(`
    CREATE MATERIALIZED VIEW public.m_nodata AS SELECT id, email FROM public.customers;
    ANALYZE public.m_nodata;
    REFRESH MATERIALIZED VIEW public.m_nodata WITH NO DATA;`);
  // At the source: the view holds no row, its statistics still hold production's addresses.
  const holding = `SELECT count(*) FROM pg_stats WHERE tablename = 'm_nodata' AND lower(concat_ws(' ', most_common_vals::text, histogram_bounds::text)) LIKE '${PRODUCTION_ADDRESS}'`;
  expect(await inProduction(holding)).toBe("1");
  const fork = await preparedFork("pr-redteam-nodata", { mask: RULES, pauseJobs: true });
  expect(await read(fork.uri, holding)).toBe("0");
  // Left as production has it: unpopulated.
  expect(await read(fork.uri, "SELECT relispopulated FROM pg_class WHERE relname = 'm_nodata'")).toBe("f");
});

test("a materialized view whose query reads pg_stats through a view is refused before anything is refreshed: it would copy statistics not yet made from the masked data", async () => {
  cleanups.push(() => inProduction("DROP MATERIALIZED VIEW IF EXISTS public.a_stats; DROP VIEW IF EXISTS public.v_stats;"));
  await inProduction(`
    CREATE VIEW public.v_stats AS SELECT schemaname, tablename, attname, most_common_vals::text AS v FROM pg_stats;
    -- Refreshed first (by name), while the others' statistics are still production's.
    CREATE MATERIALIZED VIEW public.a_stats AS SELECT * FROM public.v_stats;`);
  const { message } = await refusedFork("pr-redteam-stats-copy", { mask: RULES, pauseJobs: true });
  expect(message).toMatch(
    /public\.a_stats read\(s\) PostgreSQL's statistics \(pg_stats, pg_stats_ext, pg_stats_ext_exprs\): .* make it a plain view, or drop it in prepare\.sql/,
  );
});

test("a continuous aggregate its refresh leaves empty (it kept only production's addresses) is refused: its hypertable's statistics are production's", async () => {
  cleanups.push(() => inProduction("DROP MATERIALIZED VIEW IF EXISTS public.events_prod_only CASCADE;"));
  await inProduction(`
    CREATE MATERIALIZED VIEW public.events_prod_only WITH (timescaledb.continuous) AS
      SELECT time_bucket('1 day', time) AS day, customer_email, count(*) AS n FROM public.${EVENTS_TABLE}
       WHERE customer_email LIKE '${PRODUCTION_ADDRESS}' GROUP BY 1, 2 WITH NO DATA;
    CALL refresh_continuous_aggregate('public.events_prod_only', NULL, NULL);
    DO $d$ BEGIN EXECUTE (SELECT format('ANALYZE %I.%I', materialization_hypertable_schema, materialization_hypertable_name)
      FROM timescaledb_information.continuous_aggregates WHERE view_name = 'events_prod_only'); END $d$;`);
  const { message } = await refusedFork("pr-redteam-empty-aggregate", { mask: RULES, pauseJobs: true });
  expect(message).toMatch(
    /public\.events_prod_only is empty once refreshed from the masked data, and PostgreSQL keeps an empty table's old statistics/,
  );
});

test("a materialized view over unmasked data, empty in production but holding statistics from before, is refused though nothing it reads is masked", async () => {
  cleanups.push(() => inProduction("DROP MATERIALIZED VIEW IF EXISTS public.m_notes; DROP TABLE IF EXISTS public.t_notes;"));
  await inProduction(`
    CREATE TABLE public.t_notes (email text);
    INSERT INTO public.t_notes SELECT 'note' || g || '@prod-customers.example.com' FROM generate_series(1, 50) g;
    CREATE MATERIALIZED VIEW public.m_notes AS SELECT email FROM public.t_notes;
    ANALYZE public.m_notes;
    DELETE FROM public.t_notes;
    REFRESH MATERIALIZED VIEW public.m_notes;`);
  const { message } = await refusedFork("pr-redteam-empty-unchecked", { mask: RULES, pauseJobs: true });
  expect(message).toMatch(/public\.m_notes is empty once refreshed from the masked data/);
});

test("a procedure of tsdbadmin's beside TimescaleDB's refresh_continuous_aggregate, in its schema, is refused before anything runs", async () => {
  cleanups.push(() =>
    inProduction(
      "DROP PROCEDURE IF EXISTS public.refresh_continuous_aggregate(regclass, text, text, boolean); DROP TABLE IF EXISTS public.stolen_call;",
    ),
  );
  await inProduction(`
    CREATE TABLE public.stolen_call (q text);
    CREATE PROCEDURE public.refresh_continuous_aggregate(c regclass, a text, b text, force boolean)
      LANGUAGE sql AS $p$ INSERT INTO public.stolen_call VALUES ('ran') $p$;`);
  const { message } = await refusedFork("pr-redteam-shadowed", { mask: RULES, pauseJobs: true });
  expect(message).toMatch(
    /failed at reading the settings production gave the role \(pg_settings\): public\.refresh_continuous_aggregate\(regclass,text,text,boolean\) \(of role tsdbadmin\) stands beside TimescaleDB's routine/,
  );
});

test("a domain named regclass on the role's search_path (public, pg_catalog) never runs in the aggregates' refresh: the fork is published, the domain's function never called", async () => {
  cleanups.push(() =>
    inProduction(
      "ALTER ROLE tsdbadmin RESET search_path; DROP DOMAIN IF EXISTS public.regclass; DROP FUNCTION IF EXISTS public.note_cast(text); DROP TABLE IF EXISTS public.stolen_cast;",
    ),
  );
  await inProduction(`
    CREATE TABLE public.stolen_cast (q text);
    CREATE FUNCTION public.note_cast(text) RETURNS boolean LANGUAGE plpgsql AS $f$
      BEGIN INSERT INTO public.stolen_cast VALUES ($1); RETURN true; END $f$;
    CREATE DOMAIN public.regclass AS text CHECK (public.note_cast(VALUE));
    ALTER ROLE tsdbadmin SET search_path = public, pg_catalog;`);
  const fork = await preparedFork("pr-redteam-regclass", { mask: RULES, pauseJobs: true });
  expect(fork.prepared.refreshed).toEqual(expect.arrayContaining([`public.${EVENTS_DAILY}`]));
  expect(await read(fork.uri, "SELECT count(*) FROM public.stolen_cast")).toBe("0");
});

test("a partial index of the masked table whose predicate only production's rows met keeps no statistic of them: refused, naming the index", async () => {
  cleanups.push(() => inProduction("DROP INDEX IF EXISTS public.customers_rev_prod;"));
  await inProduction(`
    CREATE INDEX customers_rev_prod ON public.customers (reverse(email)) WHERE email LIKE '${PRODUCTION_ADDRESS}';
    ANALYZE public.customers;`);
  const { message } = await refusedFork("pr-redteam-partial-index", { mask: RULES, pauseJobs: true });
  expect(message).toMatch(
    /public\.customers_rev_prod: ANALYZE sampled none of its rows .* drop the index \(or the statistics\) in prepare\.sql/,
  );
});

test("a parent whose rows are all in its child keeps no statistic of its own from production: refused, naming it and its index", async () => {
  cleanups.push(() => inProduction("DROP TABLE IF EXISTS public.t_kid, public.t_par;"));
  await inProduction(`
    CREATE TABLE public.t_par (id int, email text);
    ALTER TABLE public.t_par ALTER COLUMN email SET STATISTICS 0;
    CREATE INDEX t_par_rev ON public.t_par (reverse(email));
    INSERT INTO public.t_par SELECT g, 'par' || g || '@prod-customers.example.com' FROM generate_series(1, 300) g;
    ANALYZE public.t_par;
    CREATE TABLE public.t_kid () INHERITS (public.t_par);
    INSERT INTO public.t_kid SELECT * FROM ONLY public.t_par;
    DELETE FROM ONLY public.t_par;`);
  const { message } = await refusedFork("pr-redteam-parent", { mask: [...RULES, { table: "t_par", column: "email", with: "email" }] });
  expect(message).toMatch(/public\.t_par, public\.t_par_rev: ANALYZE sampled none of its rows/);
});

test("materialized views left unpopulated holding index statistics only are made again from the masked data; with frozen column or extended statistics, refused naming them", async () => {
  cleanups.push(() => inProduction("DROP MATERIALIZED VIEW IF EXISTS public.u_idx, public.u_rev, public.u_ext;"));
  await inProduction(`
    CREATE MATERIALIZED VIEW public.u_idx AS SELECT email FROM public.customers;
    ALTER MATERIALIZED VIEW public.u_idx ALTER COLUMN email SET STATISTICS 0;
    CREATE INDEX u_idx_lower ON public.u_idx (lower(email));
    ANALYZE public.u_idx;
    REFRESH MATERIALIZED VIEW public.u_idx WITH NO DATA;`);
  const indexed = `SELECT count(*) FROM pg_stats WHERE tablename = 'u_idx_lower' AND lower(histogram_bounds::text) LIKE '${PRODUCTION_ADDRESS}'`;
  expect(await inProduction(indexed)).toBe("1");
  const fork = await preparedFork("pr-redteam-unpopulated-index", { mask: RULES, pauseJobs: true });
  expect(await read(fork.uri, indexed)).toBe("0");

  await inProduction(`
    DROP MATERIALIZED VIEW public.u_idx;
    CREATE MATERIALIZED VIEW public.u_rev AS SELECT reverse(email) AS r FROM public.customers;
    ANALYZE public.u_rev;
    ALTER MATERIALIZED VIEW public.u_rev ALTER COLUMN r SET STATISTICS 0;
    REFRESH MATERIALIZED VIEW public.u_rev WITH NO DATA;
    CREATE MATERIALIZED VIEW public.u_ext AS SELECT email, 1 AS k FROM public.customers;
    CREATE STATISTICS public.u_ext_s ON (reverse(email)) FROM public.u_ext;
    ANALYZE public.u_ext;
    ALTER STATISTICS public.u_ext_s SET STATISTICS 0;
    REFRESH MATERIALIZED VIEW public.u_ext WITH NO DATA;`);
  const { message } = await refusedFork("pr-redteam-unpopulated-frozen", { mask: RULES, pauseJobs: true });
  expect(message).toMatch(/statistics with a target of 0 keep what production's ANALYZE put there: public\.u_ext_s/);
});

test("a materialized view reading nothing masked, whose index statistics are frozen (a function of the database's own reads customers), is published with none of production's: the index is made again, its target of 0 with it", async () => {
  cleanups.push(() => inProduction("DROP MATERIALIZED VIEW IF EXISTS public.m_ids; DROP FUNCTION IF EXISTS public.email_of(int);"));
  await inProduction(`
    CREATE FUNCTION public.email_of(int) RETURNS text LANGUAGE sql IMMUTABLE AS $f$ SELECT email FROM public.customers WHERE id = $1 $f$;
    CREATE MATERIALIZED VIEW public.m_ids AS SELECT g AS id FROM generate_series(1, 100) g;
    CREATE INDEX m_ids_email ON public.m_ids (public.email_of(id));
    ANALYZE public.m_ids;
    ALTER INDEX public.m_ids_email ALTER COLUMN 1 SET STATISTICS 0;`);
  const holding = `SELECT count(*) FROM pg_stats WHERE tablename = 'm_ids_email' AND lower(coalesce(histogram_bounds::text, '') || coalesce(most_common_vals::text, '')) LIKE '${PRODUCTION_ADDRESS}'`;
  expect(await inProduction(holding)).toBe("1");
  const fork = await preparedFork("pr-redteam-frozen-index", { mask: RULES, pauseJobs: true });
  expect(await read(fork.uri, holding)).toBe("0");
  expect(await read(fork.uri, "SELECT attstattarget FROM pg_attribute WHERE attrelid = 'public.m_ids_email'::regclass")).toBe("0");
});

test("what runs a function of the database's own (an index of a materialized view; query_to_xml over pg_stats) runs after everything else is made again: it copies no production statistic", async () => {
  cleanups.push(() =>
    inProduction(
      "DROP MATERIALIZED VIEW IF EXISTS public.u_plain, public.a_xml, public.a_hook; DROP FUNCTION IF EXISTS public.hook_idx(int), public.hook_copy(); DROP TABLE IF EXISTS public.stolen_hook;",
    ),
  );
  await inProduction(`
    CREATE MATERIALIZED VIEW public.u_plain AS SELECT email FROM public.customers;
    ANALYZE public.u_plain;
    REFRESH MATERIALIZED VIEW public.u_plain WITH NO DATA;
    CREATE MATERIALIZED VIEW public.a_xml AS SELECT query_to_xml('SELECT tablename, most_common_vals::text AS m, histogram_bounds::text AS h FROM pg_catalog.pg_stats WHERE schemaname <> ''pg_catalog''', false, false, '')::text AS x;
    CREATE TABLE public.stolen_hook (at text, v text);
    CREATE FUNCTION public.hook_copy() RETURNS void LANGUAGE plpgsql AS $f$ BEGIN
      INSERT INTO public.stolen_hook SELECT s.tablename, x FROM pg_catalog.pg_stats s,
        unnest(coalesce(s.most_common_vals::text::text[], '{}') || coalesce(s.histogram_bounds::text::text[], '{}')) x
       WHERE s.schemaname <> 'pg_catalog'; END $f$;
    CREATE FUNCTION public.hook_idx(int) RETURNS int LANGUAGE plpgsql IMMUTABLE AS $f$ BEGIN PERFORM public.hook_copy(); RETURN $1; END $f$;
    CREATE MATERIALIZED VIEW public.a_hook AS SELECT 1 AS x;
    CREATE INDEX a_hook_i ON public.a_hook (public.hook_idx(x));
    TRUNCATE public.stolen_hook;`);
  const fork = await preparedFork("pr-redteam-runs-own", { mask: RULES, pauseJobs: true });
  expect(await read(fork.uri, `SELECT count(*) FROM public.a_xml WHERE lower(x) LIKE '${PRODUCTION_ADDRESS}'`)).toBe("0");
  expect(await read(fork.uri, `SELECT count(*) FROM public.stolen_hook WHERE lower(v) LIKE '${PRODUCTION_ADDRESS}'`)).toBe("0");
  // They ran: what they copied is the masked data's statistics.
  expect(Number(await read(fork.uri, "SELECT count(*) FROM public.stolen_hook"))).toBeGreaterThan(0);
  const refreshed = fork.prepared.refreshed as string[];
  expect(refreshed.slice(-2).sort()).toEqual(["public.a_hook", "public.a_xml"]);
});

test("a partition or a materialized view of tsdbadmin's whose column it may not read (so pg_stats hides its statistics from the checks) is refused, naming each", async () => {
  cleanups.push(() => inProduction("DROP TABLE IF EXISTS public.rt_part; DROP MATERIALIZED VIEW IF EXISTS public.rt_nodata;"));
  await inProduction(`
    CREATE TABLE public.rt_part (id int NOT NULL, email text) PARTITION BY RANGE (id);
    CREATE TABLE public.rt_part_1 PARTITION OF public.rt_part FOR VALUES FROM (0) TO (1000000);
    INSERT INTO public.rt_part SELECT g, 'part' || g || '@prod-customers.example.com' FROM generate_series(1, 2000) g;
    ANALYZE public.rt_part; ANALYZE public.rt_part_1;
    ALTER TABLE public.rt_part_1 ALTER COLUMN email SET STATISTICS 0;
    REVOKE ALL ON public.rt_part_1 FROM tsdbadmin; GRANT SELECT (id) ON public.rt_part_1 TO tsdbadmin;
    CREATE MATERIALIZED VIEW public.rt_nodata AS SELECT id, email FROM public.customers;
    ANALYZE public.rt_nodata; REFRESH MATERIALIZED VIEW public.rt_nodata WITH NO DATA;
    REVOKE ALL ON public.rt_nodata FROM tsdbadmin;`);
  const { message } = await refusedFork("pr-redteam-hidden", {
    mask: [...RULES, { table: "rt_part", column: "email", with: "email" }],
    pauseJobs: true,
  });
  expect(message).toMatch(
    /public\.rt_nodata \(email\), public\.rt_nodata \(id\), public\.rt_part_1 \(email\): tsdbadmin owns it but may not read it \(or forces its row security on itself\), so its statistics are hidden from the checks/,
  );
});

test("an inheritance parent of tsdbadmin's whose row security it forces on itself (so pg_stats hides its statistics from its owner) is seen by the checks, the forcing lifted for them: the statistics of its own rows, gone to its children since ANALYZE, are refused naming it", async () => {
  cleanups.push(() => inProduction("DROP TABLE IF EXISTS public.e_kid, public.e_par;"));
  await inProduction(`
    CREATE TABLE public.e_par (id int, email text);
    INSERT INTO public.e_par SELECT g, 'epar' || g || '@prod-customers.example.com' FROM generate_series(1, 300) g;
    ANALYZE public.e_par;
    CREATE TABLE public.e_kid () INHERITS (public.e_par);
    INSERT INTO public.e_kid SELECT * FROM ONLY public.e_par;
    DELETE FROM ONLY public.e_par;
    CREATE POLICY rl_all ON public.e_par USING (true);
    ALTER TABLE public.e_par ENABLE ROW LEVEL SECURITY;
    ALTER TABLE public.e_par FORCE ROW LEVEL SECURITY;`);
  const { message } = await refusedFork("pr-redteam-forced-rls", {
    mask: [...RULES, { table: "e_kid", column: "email", with: "email" }],
    pauseJobs: true,
  });
  expect(message).toMatch(/public\.e_par: ANALYZE sampled none of its rows .* kept the statistics it had, production's/);
});

test("a table the masking leaves alone, whose expression index and extended statistics call a function of the database's own reading customers, is analysed again: its statistics hold no production value, reversed or not", async () => {
  cleanups.push(() => inProduction("DROP TABLE IF EXISTS public.t_ids; DROP FUNCTION IF EXISTS public.rev_email_of(integer);"));
  await inProduction(`
    CREATE FUNCTION public.rev_email_of(integer) RETURNS text LANGUAGE sql IMMUTABLE AS $f$ SELECT reverse(email) FROM public.customers WHERE id = $1 $f$;
    CREATE TABLE public.t_ids AS SELECT id FROM public.customers ORDER BY id LIMIT 200;
    CREATE INDEX t_ids_rev ON public.t_ids (public.rev_email_of(id));
    CREATE STATISTICS public.t_ids_s ON (public.rev_email_of(id)) FROM public.t_ids;
    ANALYZE public.t_ids;`);
  const statistics = `SELECT coalesce(most_common_vals::text, '') || coalesce(histogram_bounds::text, '') AS v FROM pg_stats WHERE tablename = 't_ids_rev'
    UNION ALL SELECT coalesce(most_common_vals::text, '') || coalesce(histogram_bounds::text, '') FROM pg_stats_ext_exprs WHERE statistics_name = 't_ids_s'`;
  const holding = `SELECT count(*) FROM (${statistics}) s WHERE lower(reverse(v)) LIKE '${PRODUCTION_ADDRESS}'`;
  expect(await inProduction(holding)).toBe("2");
  const fork = await preparedFork("pr-redteam-untouched-index", { mask: RULES, pauseJobs: true });
  expect(await read(fork.uri, holding)).toBe("0");
  // Made again from the masked rows, not dropped.
  expect(await read(fork.uri, `SELECT count(*) FROM (${statistics}) s WHERE v <> ''`)).toBe("2");
});

test("a table the masking leaves alone with a multirange column, whose range type's subtype_diff (a function of the database's own) ANALYZE calls on each row, is analysed again last as a range column's is", async () => {
  cleanups.push(() =>
    inProduction(
      "DROP TABLE IF EXISTS public.t_multi, public.diff_seen; DROP TYPE IF EXISTS public.mspan; " +
        "DROP FUNCTION IF EXISTS public.mspan_diff(float8, float8), public.note_seen();",
    ),
  );
  // ANALYZE of a multirange column computes its range type's length histogram with subtype_diff
  // (PostgreSQL 17 shows it as pg_stats.range_length_histogram): in production, whatever the
  // function made of what it read. STATISTICS_CALLING_OWN joins pg_range on rngtypid only.
  await inProduction(`
    CREATE TABLE public.diff_seen (v text);
    CREATE FUNCTION public.note_seen() RETURNS void LANGUAGE sql AS $f$ INSERT INTO public.diff_seen SELECT email FROM public.customers WHERE id = 1 $f$;
    CREATE FUNCTION public.mspan_diff(float8, float8) RETURNS float8 LANGUAGE plpgsql IMMUTABLE AS $f$
      BEGIN PERFORM public.note_seen(); RETURN $1 - $2; END $f$;
    CREATE TYPE public.mspan AS RANGE (subtype = float8, subtype_diff = public.mspan_diff);
    CREATE TABLE public.t_multi (id int, m public.mspan_multirange);
    INSERT INTO public.t_multi SELECT g, public.mspan_multirange(public.mspan(g, g + 1)) FROM generate_series(1, 300) g;
    ANALYZE public.t_multi;`);
  expect(Number(await inProduction("SELECT count(*) FROM public.diff_seen"))).toBeGreaterThan(0);
  await inProduction("TRUNCATE public.diff_seen;");
  const fork = await preparedFork("pr-redteam-multirange", { mask: RULES, pauseJobs: true });
  // Analysed again in the fork, its function ran (and saw customer 1's masked address): none ran, its statistics are production's.
  expect(Number(await read(fork.uri, "SELECT count(*) FROM public.diff_seen"))).toBeGreaterThan(0);
  expect(await read(fork.uri, `SELECT count(*) FROM public.diff_seen WHERE v LIKE '${PRODUCTION_ADDRESS}'`)).toBe("0");
});

test("a masked table list-partitioned by an expression of the masked column, or whose partition is itself partitioned by it, is refused as one partitioned by the column is: the partitions' bounds are production's values", async () => {
  cleanups.push(() => inProduction("DROP TABLE IF EXISTS public.t_lowkey, public.t_subkey;"));
  await inProduction(`
    CREATE TABLE public.t_lowkey (id int, email text) PARTITION BY LIST (lower(email));
    CREATE TABLE public.t_lowkey_1 PARTITION OF public.t_lowkey FOR VALUES IN ('customer1@prod-customers.example.com');
    CREATE TABLE public.t_lowkey_rest PARTITION OF public.t_lowkey DEFAULT;
    INSERT INTO public.t_lowkey SELECT g, 'Customer' || g || '@prod-customers.example.com' FROM generate_series(1, 20) g;
    CREATE TABLE public.t_subkey (id int NOT NULL, email text) PARTITION BY RANGE (id);
    CREATE TABLE public.t_subkey_1 PARTITION OF public.t_subkey FOR VALUES FROM (0) TO (1000) PARTITION BY LIST (email);
    CREATE TABLE public.t_subkey_1a PARTITION OF public.t_subkey_1 FOR VALUES IN ('customer1@prod-customers.example.com');
    CREATE TABLE public.t_subkey_1r PARTITION OF public.t_subkey_1 DEFAULT;
    INSERT INTO public.t_subkey SELECT g, 'customer' || g || '@prod-customers.example.com' FROM generate_series(1, 20) g;`);
  const bounds = (table: string) =>
    `SELECT count(*) FROM pg_class WHERE relispartition AND relname LIKE '${table}%' AND lower(pg_get_expr(relpartbound, oid)) LIKE '${PRODUCTION_ADDRESS}'`;
  const outcomes: string[] = [];
  for (const table of ["t_lowkey", "t_subkey"]) {
    expect(await inProduction(bounds(table))).toBe("1");
    outcomes.push(
      await preparedFork(`pr-redteam-key-${table}`, { mask: [{ table, column: "email", with: "email" }] }).then(
        async (fork) => `${table} published, bounds holding production's addresses: ${await read(fork.uri, bounds(table))}`,
        (err: Error) => err.message,
      ),
    );
  }
  expect(outcomes).toEqual([
    expect.stringMatching(/t_lowkey is partitioned by email: its partitions' bounds are production's values/),
    expect.stringMatching(/t_subkey(_1)? is partitioned by email: its partitions' bounds are production's values/),
  ]);
});

test("a materialized view whose query calls a function of the database's own through an operator (pg_depend records the operator, not its function) runs after everything else: it copies no production statistic of a view refreshed after it", async () => {
  cleanups.push(() =>
    inProduction(
      "DROP MATERIALIZED VIEW IF EXISTS public.a_op, public.m_deep, public.m_base; DROP OPERATOR IF EXISTS public.### (text, integer); " +
        "DROP FUNCTION IF EXISTS public.stats_text(text, integer);",
    ),
  );
  await inProduction(`
    CREATE MATERIALIZED VIEW public.m_base AS SELECT email FROM public.customers;
    -- Refreshed in the second wave (it reads m_base): until then its statistics are production's.
    CREATE MATERIALIZED VIEW public.m_deep AS SELECT email FROM public.m_base;
    ANALYZE public.m_deep;
    CREATE FUNCTION public.stats_text(text, integer) RETURNS text LANGUAGE sql STABLE AS $f$
      SELECT string_agg(coalesce(s.most_common_vals::text, '') || coalesce(s.histogram_bounds::text, ''), ' ')
        FROM pg_catalog.pg_stats s WHERE s.schemaname = 'public' AND s.tablename = $1 $f$;
    CREATE OPERATOR public.### (LEFTARG = text, RIGHTARG = integer, FUNCTION = public.stats_text);
    -- Its rule depends on the operator only: neither opaque nor a reader of pg_stats, it is refreshed in the first wave, unchecked.
    CREATE MATERIALIZED VIEW public.a_op AS SELECT 'm_deep'::text OPERATOR(public.###) 0 AS v;`);
  const holding = `SELECT count(*) FROM public.a_op WHERE lower(v) LIKE '${PRODUCTION_ADDRESS}'`;
  expect(await inProduction(holding)).toBe("1");
  const fork = await preparedFork("pr-redteam-operator-view", { mask: RULES, pauseJobs: true });
  expect(await read(fork.uri, holding)).toBe("0");
});

test("a continuous aggregate over a table the masking leaves alone, grouping by an operator whose function reads customers, is refreshed from the masked data as one calling that function is", async () => {
  cleanups.push(() =>
    inProduction(
      "DROP MATERIALIZED VIEW IF EXISTS public.visits_by_email CASCADE; DROP TABLE IF EXISTS public.visits; " +
        "DROP OPERATOR IF EXISTS public.@@@ (integer, integer); DROP FUNCTION IF EXISTS public.email_of_id(integer, integer);",
    ),
  );
  await inProduction(`
    CREATE TABLE public.visits (time timestamptz NOT NULL, customer_id integer);
    SELECT create_hypertable('public.visits', by_range('time'));
    INSERT INTO public.visits SELECT timestamptz '2026-01-01' + g * interval '1 hour', 1 + g % 50 FROM generate_series(1, 500) g;
    CREATE FUNCTION public.email_of_id(integer, integer) RETURNS text LANGUAGE sql IMMUTABLE AS $f$ SELECT email FROM public.customers WHERE id = $1 $f$;
    CREATE OPERATOR public.@@@ (LEFTARG = integer, RIGHTARG = integer, FUNCTION = public.email_of_id);
    -- Its query's rule depends on visits and the operator: not on the function, nor on customers.
    CREATE MATERIALIZED VIEW public.visits_by_email WITH (timescaledb.continuous) AS
      SELECT time_bucket('1 day', time) AS day, customer_id OPERATOR(public.@@@) 0 AS email, count(*) AS n
        FROM public.visits GROUP BY 1, 2 WITH NO DATA;
    CALL refresh_continuous_aggregate('public.visits_by_email', NULL, NULL);`);
  const holding = `SELECT count(*) FROM public.visits_by_email WHERE email LIKE '${PRODUCTION_ADDRESS}'`;
  expect(Number(await inProduction(holding))).toBeGreaterThan(0);
  const fork = await preparedFork("pr-redteam-operator-aggregate", { mask: RULES, pauseJobs: true });
  expect(await read(fork.uri, holding)).toBe("0");
});

test("a materialized view whose query casts to a domain whose CHECK calls a function of the database's own (pg_depend records the domain, not the function) runs after everything else: it copies no production statistic of a view refreshed after it", async () => {
  cleanups.push(() =>
    inProduction(
      "DROP MATERIALIZED VIEW IF EXISTS public.a_dom, public.m_deep2, public.m_base2; DROP DOMAIN IF EXISTS public.dom_copy; " +
        "DROP FUNCTION IF EXISTS public.copy_stats(text); DROP TABLE IF EXISTS public.stolen_dom;",
    ),
  );
  await inProduction(`
    CREATE MATERIALIZED VIEW public.m_base2 AS SELECT email FROM public.customers;
    -- Refreshed in the second wave (it reads m_base2): until then its statistics are production's.
    CREATE MATERIALIZED VIEW public.m_deep2 AS SELECT email FROM public.m_base2;
    ANALYZE public.m_deep2;
    CREATE TABLE public.stolen_dom (v text);
    CREATE FUNCTION public.copy_stats(text) RETURNS boolean LANGUAGE plpgsql AS $f$ BEGIN
      INSERT INTO public.stolen_dom SELECT coalesce(s.most_common_vals::text, '') || coalesce(s.histogram_bounds::text, '')
        FROM pg_catalog.pg_stats s WHERE s.schemaname = 'public' AND s.tablename = $1;
      RETURN true; END $f$;
    CREATE DOMAIN public.dom_copy AS text CHECK (public.copy_stats(VALUE));
    -- Its rule depends on the domain only: neither opaque nor a reader of pg_stats, it is refreshed in the first wave.
    CREATE MATERIALIZED VIEW public.a_dom AS SELECT 'm_deep2'::text::public.dom_copy AS v;
    TRUNCATE public.stolen_dom;`);
  const fork = await preparedFork("pr-redteam-domain-view", { mask: RULES, pauseJobs: true });
  expect(await read(fork.uri, `SELECT count(*) FROM public.stolen_dom WHERE lower(v) LIKE '${PRODUCTION_ADDRESS}'`)).toBe("0");
  // It ran in its refresh: what it copied is the masked data's statistics.
  expect(Number(await read(fork.uri, "SELECT count(*) FROM public.stolen_dom"))).toBeGreaterThan(0);
});

test("a materialized view running a query given as text through an operator over PostgreSQL's ts_rewrite (no function of the database's own, no ts_rewrite( in its definition) copies no production statistic of a view refreshed after it", async () => {
  cleanups.push(() =>
    inProduction(
      "DROP MATERIALIZED VIEW IF EXISTS public.a_tsr, public.m_deep3, public.m_base3; DROP OPERATOR IF EXISTS public.~~~ (tsquery, text);",
    ),
  );
  await inProduction(`
    CREATE MATERIALIZED VIEW public.m_base3 AS SELECT email FROM public.customers;
    -- Refreshed in the second wave (it reads m_base3): until then its statistics are production's.
    CREATE MATERIALIZED VIEW public.m_deep3 AS SELECT email FROM public.m_base3;
    ANALYZE public.m_deep3;
    CREATE OPERATOR public.~~~ (LEFTARG = tsquery, RIGHTARG = text, FUNCTION = pg_catalog.ts_rewrite);
    -- ts_rewrite runs its text as a query; pg_get_viewdef shows the operator, and the rule depends on the operator only.
    CREATE MATERIALIZED VIEW public.a_tsr AS SELECT ('a'::tsquery OPERATOR(public.~~~)
      'SELECT ''a''::pg_catalog.tsquery, (SELECT pg_catalog.string_agg(pg_catalog.quote_literal(v), '' | '')
         FROM pg_catalog.pg_stats s, pg_catalog.unnest(s.histogram_bounds::text::text[]) v
        WHERE s.schemaname = ''public'' AND s.tablename = ''m_deep3'')::pg_catalog.tsquery')::text AS v;`);
  const holding = `SELECT count(*) FROM public.a_tsr WHERE lower(v) LIKE '${PRODUCTION_ADDRESS}'`;
  expect(await inProduction(holding)).toBe("1");
  const fork = await preparedFork("pr-redteam-operator-ts-rewrite", { mask: RULES, pauseJobs: true });
  expect(await read(fork.uri, holding)).toBe("0");
});

test("a table a masked key cascades to, list-partitioned by that key (a partition per production address), is refused as a masked partition key is: its partitions' bounds are production's values", async () => {
  cleanups.push(() => inProduction("DROP TABLE IF EXISTS public.t_vip;"));
  await inProduction(`
    CREATE TABLE public.t_vip (email text REFERENCES public.customers (email) ON UPDATE CASCADE, note text) PARTITION BY LIST (email);
    CREATE TABLE public.t_vip_1 PARTITION OF public.t_vip FOR VALUES IN ('customer1@prod-customers.example.com');
    CREATE TABLE public.t_vip_2 PARTITION OF public.t_vip FOR VALUES IN ('customer2@prod-customers.example.com');
    CREATE TABLE public.t_vip_rest PARTITION OF public.t_vip DEFAULT;
    INSERT INTO public.t_vip VALUES ('customer1@prod-customers.example.com', 'a'), ('customer2@prod-customers.example.com', 'b'), ('customer3@prod-customers.example.com', 'c');`);
  const bounds = `SELECT count(*) FROM pg_class WHERE relispartition AND lower(pg_get_expr(relpartbound, oid)) LIKE '${PRODUCTION_ADDRESS}'`;
  expect(await inProduction(bounds)).toBe("2");
  const outcome = await preparedFork("pr-redteam-cascaded-partition-key", { mask: RULES, pauseJobs: true }).then(
    async (fork) => `published, bounds holding production's addresses: ${await read(fork.uri, bounds)}`,
    (err: Error) => err.message,
  );
  expect(outcome).toMatch(/t_vip is partitioned by email: its partitions' bounds are production's values/);
});

test("a table the masking leaves alone, whose expression index reads its own statistics (production's until its ANALYZE ends), keeps no production value when analysed again last", async () => {
  cleanups.push(() => inProduction("DROP TABLE IF EXISTS public.t_self; DROP FUNCTION IF EXISTS public.self_kept(integer);"));
  await inProduction(`
    -- Returns what the index's own statistics hold (while ANALYZE runs they are still the last ones: production's), else a reversed e-mail.
    CREATE FUNCTION public.self_kept(integer) RETURNS text LANGUAGE plpgsql IMMUTABLE AS $f$
      DECLARE kept text[];
      BEGIN
        SELECT pg_catalog.array_cat(coalesce(s.most_common_vals::text::text[], '{}'), coalesce(s.histogram_bounds::text::text[], '{}')) INTO kept
          FROM pg_catalog.pg_stats s WHERE s.schemaname = 'public' AND s.tablename = 't_self_rev';
        IF pg_catalog.cardinality(kept) > 0 THEN RETURN kept[1 + $1 % pg_catalog.cardinality(kept)]; END IF;
        RETURN (SELECT pg_catalog.reverse(c.email) FROM public.customers c WHERE c.id = $1);
      END $f$;
    CREATE TABLE public.t_self AS SELECT id FROM public.customers ORDER BY id LIMIT 200;
    CREATE INDEX t_self_rev ON public.t_self (public.self_kept(id));
    ANALYZE public.t_self;`);
  const holding = `SELECT count(*) FROM pg_stats WHERE tablename = 't_self_rev'
    AND lower(reverse(coalesce(most_common_vals::text, '') || coalesce(histogram_bounds::text, ''))) LIKE '${PRODUCTION_ADDRESS}'`;
  expect(await inProduction(holding)).toBe("1");
  const fork = await preparedFork("pr-redteam-self-stats", { mask: RULES, pauseJobs: true });
  expect(await read(fork.uri, holding)).toBe("0");
});

test("a materialized view whose function reads the statistics of a table analysed again last (its index calls a function of the database's own) copies no production value in its refresh", async () => {
  cleanups.push(() =>
    inProduction(
      "DROP MATERIALIZED VIEW IF EXISTS public.m_copy; DROP TABLE IF EXISTS public.t_src; DROP FUNCTION IF EXISTS public.stats_of_src(), public.rev_of(integer);",
    ),
  );
  await inProduction(`
    CREATE FUNCTION public.rev_of(integer) RETURNS text LANGUAGE sql IMMUTABLE AS $f$ SELECT reverse(email) FROM public.customers WHERE id = $1 $f$;
    CREATE TABLE public.t_src AS SELECT id FROM public.customers ORDER BY id LIMIT 200;
    CREATE INDEX t_src_rev ON public.t_src (public.rev_of(id));
    ANALYZE public.t_src;
    -- Its query names no catalog: what the function reads cannot be told.
    CREATE FUNCTION public.stats_of_src() RETURNS SETOF text LANGUAGE plpgsql STABLE AS $f$ BEGIN
      RETURN QUERY SELECT coalesce(s.most_common_vals::text, '') || coalesce(s.histogram_bounds::text, '')
        FROM pg_catalog.pg_stats s WHERE s.schemaname = 'public' AND s.tablename = 't_src_rev'; END $f$;
    CREATE MATERIALIZED VIEW public.m_copy AS SELECT public.stats_of_src() AS v;`);
  const holding = `SELECT count(*) FROM public.m_copy WHERE lower(reverse(v)) LIKE '${PRODUCTION_ADDRESS}'`;
  expect(await inProduction(holding)).toBe("1");
  const fork = await preparedFork("pr-redteam-view-of-last", { mask: RULES, pauseJobs: true });
  expect(fork.prepared.refreshed).toEqual(expect.arrayContaining(["public.m_copy"]));
  expect(await read(fork.uri, holding)).toBe("0");
});

test("a materialized view whose expression index reads its own statistics (production's until its ANALYZE ends) keeps no production value once refreshed and analysed", async () => {
  cleanups.push(() => inProduction("DROP MATERIALIZED VIEW IF EXISTS public.m_self; DROP FUNCTION IF EXISTS public.self_kept_m(integer);"));
  await inProduction(`
    CREATE FUNCTION public.self_kept_m(integer) RETURNS text LANGUAGE plpgsql IMMUTABLE AS $f$
      DECLARE kept text[];
      BEGIN
        SELECT pg_catalog.array_cat(coalesce(s.most_common_vals::text::text[], '{}'), coalesce(s.histogram_bounds::text::text[], '{}')) INTO kept
          FROM pg_catalog.pg_stats s WHERE s.schemaname = 'public' AND s.tablename = 'm_self_rev';
        IF pg_catalog.cardinality(kept) > 0 THEN RETURN kept[1 + $1 % pg_catalog.cardinality(kept)]; END IF;
        RETURN (SELECT pg_catalog.reverse(c.email) FROM public.customers c WHERE c.id = $1);
      END $f$;
    CREATE MATERIALIZED VIEW public.m_self AS SELECT id FROM public.customers ORDER BY id LIMIT 200;
    CREATE INDEX m_self_rev ON public.m_self (public.self_kept_m(id));
    ANALYZE public.m_self;`);
  const holding = `SELECT count(*) FROM pg_stats WHERE tablename = 'm_self_rev'
    AND lower(reverse(coalesce(most_common_vals::text, '') || coalesce(histogram_bounds::text, ''))) LIKE '${PRODUCTION_ADDRESS}'`;
  expect(await inProduction(holding)).toBe("1");
  const fork = await preparedFork("pr-redteam-self-stats-view", { mask: RULES, pauseJobs: true });
  expect(fork.prepared.refreshed).toEqual(expect.arrayContaining(["public.m_self"]));
  expect(await read(fork.uri, holding)).toBe("0");
});

test("a table the masking leaves alone, whose expression index and extended statistics call a function of the database's own through an operator (pg_depend records the operator, not its function), keeps no production statistic: it is analysed again last", async () => {
  cleanups.push(() =>
    inProduction(
      "DROP TABLE IF EXISTS public.t_opidx; DROP OPERATOR IF EXISTS public.@@@ (integer, integer); DROP FUNCTION IF EXISTS public.rev_op(integer, integer);",
    ),
  );
  await inProduction(`
    CREATE FUNCTION public.rev_op(integer, integer) RETURNS text LANGUAGE sql IMMUTABLE AS $f$ SELECT reverse(email) FROM public.customers WHERE id = $1 $f$;
    CREATE OPERATOR public.@@@ (LEFTARG = integer, RIGHTARG = integer, FUNCTION = public.rev_op);
    CREATE TABLE public.t_opidx AS SELECT id FROM public.customers ORDER BY id LIMIT 200;
    -- The index and the statistics object depend on the operator only: neither dropped and made again, nor analysed again last.
    CREATE INDEX t_opidx_rev ON public.t_opidx ((id OPERATOR(public.@@@) 0));
    CREATE STATISTICS public.t_opidx_st ON (id OPERATOR(public.@@@) 1) FROM public.t_opidx;
    ANALYZE public.t_opidx;`);
  const holding = `SELECT count(*) FROM (
      SELECT coalesce(most_common_vals::text, '') || coalesce(histogram_bounds::text, '') AS v FROM pg_stats WHERE tablename = 't_opidx_rev'
      UNION ALL
      SELECT coalesce(most_common_vals::text, '') || coalesce(histogram_bounds::text, '') FROM pg_stats_ext_exprs WHERE statistics_name = 't_opidx_st') s
    WHERE lower(reverse(v)) LIKE '${PRODUCTION_ADDRESS}'`;
  expect(await inProduction(holding)).toBe("2");
  const fork = await preparedFork("pr-redteam-operator-index", { mask: RULES, pauseJobs: true });
  expect(await read(fork.uri, holding)).toBe("0");
});

test("a materialized view with a range column whose subtype_diff is a function of the database's own (its ANALYZE calls it, after a first-wave refresh) copies no production statistic of a view refreshed after it", async () => {
  cleanups.push(() =>
    inProduction(
      "DROP MATERIALIZED VIEW IF EXISTS public.m_rng, public.m_deep7, public.m_base7; DROP TABLE IF EXISTS public.stolen_rng; " +
        "DROP TYPE IF EXISTS public.spanr7; DROP FUNCTION IF EXISTS public.spanr7_diff(float8, float8), public.copy_deep7();",
    ),
  );
  await inProduction(`
    CREATE MATERIALIZED VIEW public.m_base7 AS SELECT email FROM public.customers;
    -- Refreshed in the second wave (it reads m_base7): until then its statistics are production's.
    CREATE MATERIALIZED VIEW public.m_deep7 AS SELECT email FROM public.m_base7;
    ANALYZE public.m_deep7;
    CREATE TABLE public.stolen_rng (v text);
    CREATE FUNCTION public.copy_deep7() RETURNS void LANGUAGE plpgsql AS $f$ BEGIN
      INSERT INTO public.stolen_rng SELECT coalesce(s.most_common_vals::text, '') || coalesce(s.histogram_bounds::text, '')
        FROM pg_catalog.pg_stats s WHERE s.schemaname = 'public' AND s.tablename = 'm_deep7'; END $f$;
    CREATE FUNCTION public.spanr7_diff(float8, float8) RETURNS float8 LANGUAGE plpgsql IMMUTABLE AS $f$ BEGIN
      PERFORM public.copy_deep7(); RETURN $1 - $2; END $f$;
    CREATE TYPE public.spanr7 AS RANGE (subtype = float8, subtype_diff = public.spanr7_diff);
    -- A cast from text (range_in, PostgreSQL's): its query calls no function of the database's own; a first-wave refresh.
    CREATE MATERIALIZED VIEW public.m_rng AS SELECT ('[' || g || ',' || (g + 1) || ')')::public.spanr7 AS r FROM generate_series(1, 30) g;
    TRUNCATE public.stolen_rng;`);
  const fork = await preparedFork("pr-redteam-range-view", { mask: RULES, pauseJobs: true });
  expect(fork.prepared.refreshed).toEqual(expect.arrayContaining(["public.m_rng", "public.m_deep7"]));
  // It ran in the fork's ANALYZE of m_rng: what it copied must be the masked data's statistics.
  expect(Number(await read(fork.uri, "SELECT count(*) FROM public.stolen_rng"))).toBeGreaterThan(0);
  expect(await read(fork.uri, `SELECT count(*) FROM public.stolen_rng WHERE lower(v) LIKE '${PRODUCTION_ADDRESS}'`)).toBe("0");
});

test("a materialized view whose query makes a composite value whose field is a domain whose CHECK calls a function of the database's own (pg_depend records the composite type only) runs after everything else: it copies no production statistic of a view refreshed after it", async () => {
  cleanups.push(() =>
    inProduction(
      "DROP MATERIALIZED VIEW IF EXISTS public.a_comp, public.m_deep8, public.m_base8; DROP TABLE IF EXISTS public.stolen_comp; " +
        "DROP TYPE IF EXISTS public.comp8; DROP DOMAIN IF EXISTS public.dom8; DROP FUNCTION IF EXISTS public.copy_stats8(text);",
    ),
  );
  await inProduction(`
    CREATE MATERIALIZED VIEW public.m_base8 AS SELECT email FROM public.customers;
    -- Refreshed in the second wave (it reads m_base8): until then its statistics are production's.
    CREATE MATERIALIZED VIEW public.m_deep8 AS SELECT email FROM public.m_base8;
    ANALYZE public.m_deep8;
    CREATE TABLE public.stolen_comp (v text);
    CREATE FUNCTION public.copy_stats8(text) RETURNS boolean LANGUAGE plpgsql AS $f$ BEGIN
      INSERT INTO public.stolen_comp SELECT coalesce(s.most_common_vals::text, '') || coalesce(s.histogram_bounds::text, '')
        FROM pg_catalog.pg_stats s WHERE s.schemaname = 'public' AND s.tablename = $1;
      RETURN true; END $f$;
    CREATE DOMAIN public.dom8 AS text CHECK (public.copy_stats8(VALUE));
    CREATE TYPE public.comp8 AS (v public.dom8);
    -- record_in checks the field's domain; the rule depends on comp8 alone: neither opaque nor a reader of pg_stats, a first-wave refresh.
    CREATE MATERIALIZED VIEW public.a_comp AS SELECT (('(' || 'm_deep8' || ')')::public.comp8).v::text AS v;
    TRUNCATE public.stolen_comp;`);
  const fork = await preparedFork("pr-redteam-composite-domain-view", { mask: RULES, pauseJobs: true });
  expect(await read(fork.uri, `SELECT count(*) FROM public.stolen_comp WHERE lower(v) LIKE '${PRODUCTION_ADDRESS}'`)).toBe("0");
  // It ran in its refresh: what it copied is the masked data's statistics.
  expect(Number(await read(fork.uri, "SELECT count(*) FROM public.stolen_comp"))).toBeGreaterThan(0);
});

test("a materialized view whose query casts to a domain whose CHECK calls a function of the database's own through an operator (pg_depend records the operator, not its function) runs after everything else: it copies no production statistic of a view refreshed after it", async () => {
  cleanups.push(() =>
    inProduction(
      "DROP MATERIALIZED VIEW IF EXISTS public.a_domop, public.m_deep9, public.m_base9; DROP DOMAIN IF EXISTS public.dom_op9; " +
        "DROP OPERATOR IF EXISTS public.#=# (text, text); DROP FUNCTION IF EXISTS public.copy_stats9(text, text); DROP TABLE IF EXISTS public.stolen_domop;",
    ),
  );
  await inProduction(`
    CREATE MATERIALIZED VIEW public.m_base9 AS SELECT email FROM public.customers;
    -- Refreshed in the second wave (it reads m_base9): until then its statistics are production's.
    CREATE MATERIALIZED VIEW public.m_deep9 AS SELECT email FROM public.m_base9;
    ANALYZE public.m_deep9;
    CREATE TABLE public.stolen_domop (v text);
    CREATE FUNCTION public.copy_stats9(text, text) RETURNS boolean LANGUAGE plpgsql AS $f$ BEGIN
      INSERT INTO public.stolen_domop SELECT coalesce(s.most_common_vals::text, '') || coalesce(s.histogram_bounds::text, '')
        FROM pg_catalog.pg_stats s WHERE s.schemaname = 'public' AND s.tablename = $1;
      RETURN true; END $f$;
    CREATE OPERATOR public.#=# (LEFTARG = text, RIGHTARG = text, FUNCTION = public.copy_stats9);
    -- The CHECK depends on the operator only: READS finds no function of the database's own behind the domain.
    CREATE DOMAIN public.dom_op9 AS text CHECK (VALUE OPERATOR(public.#=#) 'x');
    CREATE MATERIALIZED VIEW public.a_domop AS SELECT 'm_deep9'::text::public.dom_op9 AS v;
    TRUNCATE public.stolen_domop;`);
  const fork = await preparedFork("pr-redteam-domain-operator-view", { mask: RULES, pauseJobs: true });
  expect(await read(fork.uri, `SELECT count(*) FROM public.stolen_domop WHERE lower(v) LIKE '${PRODUCTION_ADDRESS}'`)).toBe("0");
  // It ran in its refresh: what it copied is the masked data's statistics.
  expect(Number(await read(fork.uri, "SELECT count(*) FROM public.stolen_domop"))).toBeGreaterThan(0);
});

test("an index of a table the masking leaves alone, whose function of the database's own names another unqualified (as production's search_path finds it), is not lost when it is dropped and made again under the preparation's search_path", async () => {
  cleanups.push(() =>
    inProduction("DROP TABLE IF EXISTS public.t_path; DROP FUNCTION IF EXISTS public.tagged(integer), public.tag_prefix();"),
  );
  await inProduction(`
    CREATE FUNCTION public.tag_prefix() RETURNS text LANGUAGE sql IMMUTABLE AS $f$ SELECT 'tag-' $f$;
    -- No SET search_path: its body finds tag_prefix() on the caller's path (public), as production's sessions and ANALYZE have it.
    CREATE FUNCTION public.tagged(integer) RETURNS text LANGUAGE sql IMMUTABLE AS $f$ SELECT tag_prefix() || $1 $f$;
    CREATE TABLE public.t_path AS SELECT id FROM public.customers ORDER BY id LIMIT 200;
    CREATE INDEX t_path_tag ON public.t_path (public.tagged(id));
    ANALYZE public.t_path;`);
  const s = await lab.h.stack("pr-redteam-index-path", lab.forkProgram("pr-redteam-index-path", { mask: RULES, pauseJobs: true }));
  cleanups.push(() => lab.discard(s));
  const first = await s.up().then(
    () => "published",
    (err: Error) => err.message,
  );
  const uri = (await s.up()).outputs.uri?.value as string;
  const index = await read(uri, "SELECT count(*) FROM pg_indexes WHERE indexname = 't_path_tag'");
  expect(`${index} index, after: ${said(first)}`).toMatch(/^1 index, after: published/);
});

test("a partitioned table the masking leaves alone, whose index calls a function of the database's own, or a unique index calling one, is refused naming each: dropped and made again, its partitions' indexes or its uniqueness over the masked data could be lost", async () => {
  cleanups.push(() =>
    inProduction(
      "DROP TABLE IF EXISTS public.t_parted, public.t_uniq; DROP FUNCTION IF EXISTS public.lowered(text), public.prefix12(integer);",
    ),
  );
  await inProduction(`
    CREATE FUNCTION public.lowered(text) RETURNS text LANGUAGE sql IMMUTABLE AS $f$ SELECT lower($1) $f$;
    CREATE TABLE public.t_parted (id int, note text) PARTITION BY RANGE (id);
    CREATE TABLE public.t_parted_1 PARTITION OF public.t_parted FOR VALUES FROM (0) TO (1000);
    INSERT INTO public.t_parted SELECT g, 'Note ' || g FROM generate_series(1, 999) g;
    CREATE INDEX t_parted_low ON public.t_parted (public.lowered(note));
    -- Distinct in production (customer1@pr, customer12@p, ...), one value once masked.
    CREATE FUNCTION public.prefix12(integer) RETURNS text LANGUAGE sql IMMUTABLE AS $f$ SELECT left(email, 12) FROM public.customers WHERE id = $1 $f$;
    CREATE TABLE public.t_uniq AS SELECT id FROM public.customers ORDER BY id LIMIT 200;
    CREATE UNIQUE INDEX t_uniq_prefix ON public.t_uniq (public.prefix12(id));`);
  const { message } = await refusedFork("pr-redteam-kept-indexes", { mask: RULES, pauseJobs: true });
  expect(message).toMatch(
    /index public\.t_parted_low of public\.t_parted \(of a partitioned table: its partitions' indexes go with it\), index public\.t_uniq_prefix of public\.t_uniq \(unique: the masked data may not be\): it calls a function of the database's own/,
  );
});

/** A failed up's own words: from "Preparing fork" on, one line, as long as a reader needs. */
function said(message: string): string {
  const line = message.replace(/\s+/g, " ");
  return line.slice(Math.max(0, line.indexOf("Preparing fork")), Math.max(0, line.indexOf("Preparing fork")) + 700);
}

// Round 8.

test("a CHECK of the masked table calling PostgreSQL's to_json of an enum whose cast to json is tsdbadmin's copies nothing while the masking runs", async () => {
  cleanups.push(() =>
    inProduction(
      "ALTER TABLE public.customers DROP CONSTRAINT IF EXISTS customers_kind_json; DROP CAST IF EXISTS (public.kind8 AS json); " +
        "DROP FUNCTION IF EXISTS public.kind8_json(public.kind8); DROP TYPE IF EXISTS public.kind8; DROP TABLE IF EXISTS public.stolen_json;",
    ),
  );
  await inProduction(`
    CREATE TABLE public.stolen_json (q text, v text);
    CREATE TYPE public.kind8 AS ENUM ('retail');
    -- json's own cast for a type of the database's own: to_json calls it (json_categorize_type), no rule or constraint names it.
    CREATE FUNCTION public.kind8_json(public.kind8) RETURNS json LANGUAGE plpgsql AS $f$
      BEGIN
        IF pg_catalog.strpos(pg_catalog.current_query(), 'masked_row') > 0 AND pg_catalog.current_setting('redteam.json', true) IS DISTINCT FROM 'yes' THEN
          PERFORM pg_catalog.set_config('redteam.json', 'yes', false);
          INSERT INTO public.stolen_json SELECT pg_catalog.left(pg_catalog.current_query(), 60), email FROM public.customers;
        END IF;
        RETURN '"retail"'::json;
      END $f$;
    CREATE CAST (public.kind8 AS json) WITH FUNCTION public.kind8_json(public.kind8);
    ALTER TABLE public.customers ADD CONSTRAINT customers_kind_json CHECK (to_json('retail'::public.kind8) IS NOT NULL);`);
  expect(await inProduction("SELECT count(*) FROM public.stolen_json")).toBe("0");
  const outcome = await preparedFork("pr-redteam-json-cast-check", { mask: RULES, pauseJobs: true }).then(
    async (fork) =>
      `published, copied: ${await read(fork.uri, `SELECT count(*) FROM public.stolen_json WHERE v LIKE '${PRODUCTION_ADDRESS}'`)}`,
    (err: Error) => err.message,
  );
  // Safe: published with nothing copied, or refused naming the constraint.
  expect(outcome).toMatch(/^published, copied: 0$|customers_kind_json/);
});

test("a materialized view calling PostgreSQL's to_json of an enum whose cast to json is tsdbadmin's (refreshed first) copies no production statistic of a view refreshed after it", async () => {
  cleanups.push(() =>
    inProduction(
      "DROP MATERIALIZED VIEW IF EXISTS public.a_json, public.m_deep10, public.m_base10; DROP CAST IF EXISTS (public.tab10 AS json); " +
        "DROP FUNCTION IF EXISTS public.tab10_json(public.tab10); DROP TYPE IF EXISTS public.tab10;",
    ),
  );
  await inProduction(`
    CREATE MATERIALIZED VIEW public.m_base10 AS SELECT email FROM public.customers;
    -- Refreshed in the second wave (it reads m_base10): until then its statistics are production's.
    CREATE MATERIALIZED VIEW public.m_deep10 AS SELECT email FROM public.m_base10;
    ANALYZE public.m_deep10;
    CREATE TYPE public.tab10 AS ENUM ('m_deep10');
    CREATE FUNCTION public.tab10_json(public.tab10) RETURNS json LANGUAGE sql STABLE AS $f$
      SELECT pg_catalog.to_json(pg_catalog.string_agg(coalesce(s.most_common_vals::text, '') || coalesce(s.histogram_bounds::text, ''), ' '))
        FROM pg_catalog.pg_stats s WHERE s.schemaname = 'public' AND s.tablename = $1::text $f$;
    CREATE CAST (public.tab10 AS json) WITH FUNCTION public.tab10_json(public.tab10);
    -- Its rule calls to_json (PostgreSQL's) and depends on the enum: neither opaque nor a reader of pg_stats, a first-wave refresh.
    CREATE MATERIALIZED VIEW public.a_json AS SELECT to_json('m_deep10'::public.tab10)::text AS v;`);
  const holding = `SELECT count(*) FROM public.a_json WHERE lower(v) LIKE '${PRODUCTION_ADDRESS}'`;
  expect(await inProduction(holding)).toBe("1");
  const fork = await preparedFork("pr-redteam-json-cast-view", { mask: RULES, pauseJobs: true });
  expect(await read(fork.uri, holding)).toBe("0");
});

test("a trigger of a continuous aggregate's materialization hypertable calling a function of tsdbadmin's runs in that aggregate's refresh, made last, after every view whose statistics it could read and after its own hypertable's are made again: it copies no production statistic", async () => {
  cleanups.push(async () => {
    await inProduction(
      `DO $d$ BEGIN EXECUTE (SELECT format('DROP TRIGGER IF EXISTS mat_copy ON %I.%I', materialization_hypertable_schema, materialization_hypertable_name)
         FROM timescaledb_information.continuous_aggregates WHERE view_name = '${EVENTS_DAILY}'); END $d$;`,
    );
    await inProduction(
      "DROP MATERIALIZED VIEW IF EXISTS public.m_deep11, public.m_base11; DROP FUNCTION IF EXISTS public.mat_copy(); DROP TABLE IF EXISTS public.stolen_mat;",
    );
  });
  await inProduction(`
    CREATE MATERIALIZED VIEW public.m_base11 AS SELECT email FROM public.customers;
    CREATE MATERIALIZED VIEW public.m_deep11 AS SELECT email FROM public.m_base11;
    ANALYZE public.m_deep11;
    CREATE TABLE public.stolen_mat (v text);
    CREATE FUNCTION public.mat_copy() RETURNS trigger LANGUAGE plpgsql AS $f$ BEGIN
      IF NOT EXISTS (SELECT 1 FROM public.stolen_mat) THEN
        -- m_deep11's, and its own materialization hypertable's of its whole (production's until the preparation makes them again).
        INSERT INTO public.stolen_mat SELECT coalesce(s.most_common_vals::text, '') || coalesce(s.histogram_bounds::text, '')
          FROM pg_catalog.pg_stats s WHERE (s.schemaname = 'public' AND s.tablename = 'm_deep11')
            OR s.tablename = (SELECT materialization_hypertable_name FROM timescaledb_information.continuous_aggregates WHERE view_name = '${EVENTS_DAILY}');
      END IF;
      RETURN NULL; END $f$;
    DO $d$ BEGIN EXECUTE (SELECT format('CREATE TRIGGER mat_copy AFTER INSERT ON %I.%I FOR EACH ROW EXECUTE FUNCTION public.mat_copy()',
        materialization_hypertable_schema, materialization_hypertable_name)
      FROM timescaledb_information.continuous_aggregates WHERE view_name = '${EVENTS_DAILY}'); END $d$;`);
  // Its materialization hypertable's statistics of its whole hold production's addresses (the shaped production analysed it).
  expect(
    Number(
      await inProduction(`SELECT count(*) FROM pg_stats s WHERE lower(coalesce(s.most_common_vals::text, '') || coalesce(s.histogram_bounds::text, '')) LIKE '${PRODUCTION_ADDRESS}'
        AND s.tablename = (SELECT materialization_hypertable_name FROM timescaledb_information.continuous_aggregates WHERE view_name = '${EVENTS_DAILY}')`),
    ),
  ).toBeGreaterThan(0);
  const fork = await preparedFork("pr-redteam-mat-trigger", { mask: RULES, pauseJobs: true });
  expect(fork.prepared.refreshed).toEqual(expect.arrayContaining([`public.${EVENTS_DAILY}`, "public.m_deep11"]));
  // Last but for what reads it (events_weekly): after m_deep11, whose statistics its trigger reads.
  const order = fork.prepared.refreshed as string[];
  expect(order.indexOf(`public.${EVENTS_DAILY}`)).toBeGreaterThan(order.indexOf("public.m_deep11"));
  expect(order.slice(order.indexOf(`public.${EVENTS_DAILY}`) + 1)).toEqual(["public.events_weekly"]);
  expect(await read(fork.uri, `SELECT count(*) FROM public.stolen_mat WHERE lower(v) LIKE '${PRODUCTION_ADDRESS}'`)).toBe("0");
});

test("an expression index of a continuous aggregate's materialization hypertable calling a function of tsdbadmin's (made there by a CREATE INDEX on the aggregate, in _timescaledb_internal) is refused, naming it", async () => {
  cleanups.push(async () => {
    await inProduction(
      `DO $d$ BEGIN EXECUTE (SELECT format('DROP INDEX IF EXISTS %I.%I', schemaname, indexname) FROM pg_indexes WHERE indexname = 'mat_hook_idx'); END $d$;`,
    );
    await inProduction(
      "DROP MATERIALIZED VIEW IF EXISTS public.m_deep12, public.m_base12; DROP FUNCTION IF EXISTS public.mat_hook(bigint), public.mat_copy12(); DROP TABLE IF EXISTS public.stolen_idx;",
    );
  });
  await inProduction(`
    CREATE MATERIALIZED VIEW public.m_base12 AS SELECT email FROM public.customers;
    CREATE MATERIALIZED VIEW public.m_deep12 AS SELECT email FROM public.m_base12;
    ANALYZE public.m_deep12;
    CREATE TABLE public.stolen_idx (v text);
    CREATE FUNCTION public.mat_copy12() RETURNS void LANGUAGE plpgsql AS $f$ BEGIN
      IF NOT EXISTS (SELECT 1 FROM public.stolen_idx) THEN
        INSERT INTO public.stolen_idx SELECT coalesce(s.most_common_vals::text, '') || coalesce(s.histogram_bounds::text, '')
          FROM pg_catalog.pg_stats s WHERE s.schemaname = 'public' AND s.tablename = 'm_deep12';
      END IF; END $f$;
    CREATE FUNCTION public.mat_hook(bigint) RETURNS bigint LANGUAGE plpgsql IMMUTABLE AS $f$ BEGIN PERFORM public.mat_copy12(); RETURN $1; END $f$;
    -- TimescaleDB makes it on the aggregate's materialization hypertable, in _timescaledb_internal.
    CREATE INDEX mat_hook_idx ON public.${EVENTS_DAILY} (public.mat_hook(views));
    TRUNCATE public.stolen_idx;`);
  const { message } = await refusedFork("pr-redteam-mat-index", { mask: RULES, pauseJobs: true });
  expect(message).toMatch(
    /index mat_hook_idx of continuous aggregate public\.events_daily: it calls a function of the database's own on the aggregate's materialization hypertable/,
  );
});

test("a refresh that fails once the data is masked makes no index calling a function of the database's own again (views emptied, not yet refreshed, still hold production's statistics): the failure names it and how to have it; the next up refreshes what the failure left emptied and publishes nothing copied", async () => {
  cleanups.push(() =>
    inProduction(
      "DROP MATERIALIZED VIEW IF EXISTS public.zz_after13, public.a_fail13, public.z_deep13; DROP TABLE IF EXISTS public.t_hook13, public.stolen_fail; " +
        "DROP FUNCTION IF EXISTS public.hook13(integer), public.copy13();",
    ),
  );
  await inProduction(`
    -- Refreshed after a_fail13 (by name, in the same wave): emptied, its statistics production's, when a_fail13 fails.
    CREATE MATERIALIZED VIEW public.z_deep13 AS SELECT email FROM public.customers;
    ANALYZE public.z_deep13;
    -- Read from z_deep13: refreshed in the wave after, which the failure never reaches. Never analysed.
    CREATE MATERIALIZED VIEW public.zz_after13 WITH (autovacuum_enabled = false) AS SELECT email FROM public.z_deep13;
    CREATE TABLE public.stolen_fail (v text);
    CREATE FUNCTION public.copy13() RETURNS void LANGUAGE plpgsql AS $f$ BEGIN
      INSERT INTO public.stolen_fail SELECT coalesce(s.most_common_vals::text, '') || coalesce(s.histogram_bounds::text, '')
        FROM pg_catalog.pg_stats s WHERE s.schemaname = 'public' AND s.tablename = 'z_deep13'; END $f$;
    CREATE FUNCTION public.hook13(integer) RETURNS integer LANGUAGE plpgsql IMMUTABLE AS $f$ BEGIN PERFORM public.copy13(); RETURN $1; END $f$;
    CREATE TABLE public.t_hook13 (x integer);
    INSERT INTO public.t_hook13 VALUES (1);
    CREATE INDEX t_hook13_i ON public.t_hook13 (public.hook13(x));
    -- Divides by the production addresses left: none once masked, so its refresh fails (first, by name), on every try.
    CREATE MATERIALIZED VIEW public.a_fail13 WITH (autovacuum_enabled = false) AS
      SELECT 1 / (SELECT count(*) FROM public.customers WHERE email LIKE '${PRODUCTION_ADDRESS}')::int AS x;
    TRUNCATE public.stolen_fail;`);
  const s = await lab.h.stack("pr-redteam-fail-remake", lab.forkProgram("pr-redteam-fail-remake", { mask: RULES, pauseJobs: true }));
  cleanups.push(() => lab.discard(s));
  const first = await s.up().then(
    () => "published",
    (err: Error) => err.message,
  );
  expect(first).toMatch(/refreshing the materialized view public\.a_fail13/);
  // Stopped after its masking was committed: not said to be unmasked.
  expect(first).toContain("The masking was committed and checked");
  expect(first).toContain("was stopped meanwhile (its preparation did not finish)");
  expect(first).toMatch(
    /were not made again: .*index public\.t_hook13_i \(CREATE INDEX t_hook13_i ON public\.t_hook13 .*make them in prepare\.sqlAfter \(it runs once nothing of production.s is left\) to have them/s,
  );
  // The view that cannot be refreshed from masked data is dropped, as a team would; what the failure emptied is refreshed.
  s.setProgram(
    lab.forkProgram("pr-redteam-fail-remake", { mask: RULES, pauseJobs: true, sql: ["DROP MATERIALIZED VIEW public.a_fail13"] }),
  );
  const up = await s.up();
  expect(up.stdout).toMatch(/refreshing too what an earlier preparation emptied and did not refresh: .*public\.zz_after13/);
  const uri = up.outputs.uri?.value as string;
  const copied = await read(uri, `SELECT count(*) FROM public.stolen_fail WHERE lower(v) LIKE '${PRODUCTION_ADDRESS}'`);
  expect(`${copied} copied, after: ${said(first)}`).toMatch(/^0 copied/);
  expect(await read(uri, "SELECT count(*) FROM pg_indexes WHERE indexname = 't_hook13_i'")).toBe("0");
  // Populated in production, so in the fork: every row, masked.
  expect(await read(uri, "SELECT relispopulated FROM pg_class WHERE relname = 'zz_after13'")).toBe("t");
  expect(
    await read(
      uri,
      `SELECT count(*) FILTER (WHERE email LIKE 'user-%@example.invalid'), count(*) FILTER (WHERE email LIKE '${PRODUCTION_ADDRESS}') FROM public.zz_after13`,
    ),
  ).toBe(`${await inProduction("SELECT count(*) FROM public.customers")}|0`);
  // The record of what was emptied is gone with the preparation.
  expect(await read(uri, "SELECT count(*) FROM pg_namespace WHERE nspname LIKE '\\_tigercloud\\_preparing\\_%'")).toBe("0");
});

test("a materialized view left unpopulated holding production's statistics, reading through a view another left unpopulated, is published with its statistics made from the masked data: what it reads populated for as long, both left unpopulated", async () => {
  cleanups.push(() =>
    inProduction(
      "DROP MATERIALIZED VIEW IF EXISTS public.a_over17; DROP VIEW IF EXISTS public.v_mid17; DROP MATERIALIZED VIEW IF EXISTS public.m_base17;",
    ),
  );
  await inProduction(`
    CREATE MATERIALIZED VIEW public.m_base17 WITH (autovacuum_enabled = false) AS SELECT id, email FROM public.customers;
    CREATE VIEW public.v_mid17 AS SELECT email FROM public.m_base17;
    CREATE MATERIALIZED VIEW public.a_over17 WITH (autovacuum_enabled = false) AS SELECT email FROM public.v_mid17;
    ANALYZE public.a_over17;
    REFRESH MATERIALIZED VIEW public.a_over17 WITH NO DATA;
    REFRESH MATERIALIZED VIEW public.m_base17 WITH NO DATA;`);
  const holding = `SELECT count(*) FROM pg_stats WHERE tablename = 'a_over17' AND lower(concat_ws(' ', most_common_vals::text, histogram_bounds::text)) LIKE '${PRODUCTION_ADDRESS}'`;
  expect(await inProduction(holding)).toBe("1");
  const outcome = await preparedFork("pr-redteam-unpopulated-chain", { mask: RULES, pauseJobs: true }).then(
    async (fork) =>
      `published: ${await read(fork.uri, holding)} holding, populated: ${await read(fork.uri, "SELECT string_agg(relispopulated::text, ',' ORDER BY relname) FROM pg_class WHERE relname IN ('a_over17', 'm_base17')")}`,
    (err: Error) => err.message,
  );
  expect(outcome).toBe("published: 0 holding, populated: false,false");
});

test("a continuous aggregate the preparation does not refresh (over a table it leaves alone), whose index calls a function reading customers, keeps no production address in its compressed chunks' index statistics", async () => {
  cleanups.push(() =>
    inProduction(
      "DROP MATERIALIZED VIEW IF EXISTS public.visits14_daily CASCADE; DROP TABLE IF EXISTS public.visits14; DROP FUNCTION IF EXISTS public.email_of14(integer);",
    ),
  );
  await inProduction(`
    CREATE TABLE public.visits14 (time timestamptz NOT NULL, customer_id integer);
    SELECT create_hypertable('public.visits14', by_range('time', interval '1 day'));
    INSERT INTO public.visits14 SELECT timestamptz '2026-01-01' + g * interval '10 minutes', 1 + g % 100 FROM generate_series(1, 1000) g;
    CREATE FUNCTION public.email_of14(integer) RETURNS text LANGUAGE sql IMMUTABLE AS $f$ SELECT email FROM public.customers WHERE id = $1 $f$;
    CREATE MATERIALIZED VIEW public.visits14_daily WITH (timescaledb.continuous) AS
      SELECT time_bucket('1 day', time) AS day, customer_id, count(*) AS n FROM public.visits14 GROUP BY 1, 2 WITH NO DATA;
    SELECT set_chunk_time_interval('public.visits14_daily', interval '1 day');
    -- On the materialization hypertable (in _timescaledb_internal) and each of its chunks: never dropped and made again.
    CREATE INDEX visits14_email ON public.visits14_daily (public.email_of14(customer_id));
    CALL refresh_continuous_aggregate('public.visits14_daily', NULL, NULL);
    DO $d$ DECLARE c regclass; BEGIN FOR c IN SELECT show_chunks('public.visits14_daily') LOOP EXECUTE format('ANALYZE %s', c); END LOOP; END $d$;
    ALTER MATERIALIZED VIEW public.visits14_daily SET (timescaledb.compress, timescaledb.compress_segmentby = 'customer_id');
    SELECT count(compress_chunk(c)) FROM show_chunks('public.visits14_daily') c;`);
  const holding = `SELECT count(*) FROM pg_stats WHERE schemaname = '_timescaledb_internal'
    AND lower(coalesce(most_common_vals::text, '') || coalesce(histogram_bounds::text, '')) LIKE '${PRODUCTION_ADDRESS}'`;
  expect(Number(await inProduction(holding))).toBeGreaterThan(0);
  const outcome = await preparedFork("pr-redteam-aggregate-index-compressed", { mask: RULES, pauseJobs: true }).then(
    async (fork) => `published, holding: ${await read(fork.uri, holding)}`,
    (err: Error) => err.message,
  );
  expect(outcome).toMatch(/^published, holding: 0$|visits14|_hyper_/);
});

test("a CHECK of the masked table casting text to a range type over a domain whose CHECK calls a function of tsdbadmin's (range_in checks each bound's domain) copies nothing while the masking runs", async () => {
  cleanups.push(() =>
    inProduction(
      "ALTER TABLE public.customers DROP CONSTRAINT IF EXISTS customers_span16; DROP TYPE IF EXISTS public.r16; DROP DOMAIN IF EXISTS public.d16; " +
        "DROP FUNCTION IF EXISTS public.copy16(float8); DROP TABLE IF EXISTS public.stolen_r16;",
    ),
  );
  await inProduction(`
    CREATE TABLE public.stolen_r16 (q text, v text);
    CREATE FUNCTION public.copy16(float8) RETURNS boolean LANGUAGE plpgsql AS $f$
      BEGIN
        IF pg_catalog.strpos(pg_catalog.current_query(), 'masked_row') > 0 AND pg_catalog.current_setting('redteam.r16', true) IS DISTINCT FROM 'yes' THEN
          PERFORM pg_catalog.set_config('redteam.r16', 'yes', false);
          INSERT INTO public.stolen_r16 SELECT pg_catalog.left(pg_catalog.current_query(), 60), email FROM public.customers;
        END IF;
        RETURN true;
      END $f$;
    CREATE DOMAIN public.d16 AS float8 CHECK (public.copy16(VALUE));
    -- A range over the domain: INNER_TYPES goes from a multirange to its range, not from a range to its subtype.
    CREATE TYPE public.r16 AS RANGE (subtype = public.d16);
    ALTER TABLE public.customers ADD CONSTRAINT customers_span16 CHECK (('[0,' || length(email) || ')')::public.r16 IS NOT NULL);`);
  expect(await inProduction("SELECT count(*) FROM public.stolen_r16")).toBe("0");
  const outcome = await preparedFork("pr-redteam-range-domain-check", { mask: RULES, pauseJobs: true }).then(
    async (fork) =>
      `published, copied: ${await read(fork.uri, `SELECT count(*) FROM public.stolen_r16 WHERE v LIKE '${PRODUCTION_ADDRESS}'`)}`,
    (err: Error) => err.message,
  );
  expect(outcome).toMatch(/^published, copied: 0$|customers_span16/);
});

test("an aggregate whose materialization hypertable's index calls a function reading customers (its statistics production's until analysed again, read by an index made again before that) is refused, naming the index", async () => {
  cleanups.push(() =>
    inProduction(
      "DROP MATERIALIZED VIEW IF EXISTS public.visits17_daily CASCADE; DROP TABLE IF EXISTS public.visits17, public.t_hook17, public.stolen17; " +
        "DROP FUNCTION IF EXISTS public.email_of17(integer), public.hook17(integer), public.copy17();",
    ),
  );
  await inProduction(`
    CREATE TABLE public.visits17 (time timestamptz NOT NULL, customer_id integer);
    SELECT create_hypertable('public.visits17', by_range('time', interval '1 day'));
    INSERT INTO public.visits17 SELECT timestamptz '2026-01-01' + g * interval '10 minutes', 1 + g % 100 FROM generate_series(1, 1000) g;
    CREATE FUNCTION public.email_of17(integer) RETURNS text LANGUAGE sql IMMUTABLE AS $f$ SELECT email FROM public.customers WHERE id = $1 $f$;
    -- Over a table the masking leaves alone, calling no function of the database's own in its query: not refreshed.
    CREATE MATERIALIZED VIEW public.visits17_daily WITH (timescaledb.continuous) AS
      SELECT time_bucket('1 day', time) AS day, customer_id, count(*) AS n FROM public.visits17 GROUP BY 1, 2 WITH NO DATA;
    -- On its materialization hypertable, in _timescaledb_internal: not dropped and made again, analysed again last.
    CREATE INDEX visits17_email ON public.visits17_daily (public.email_of17(customer_id));
    CALL refresh_continuous_aggregate('public.visits17_daily', NULL, NULL);
    DO $d$ DECLARE c regclass; BEGIN FOR c IN SELECT show_chunks('public.visits17_daily') LOOP EXECUTE format('ANALYZE %s', c); END LOOP; END $d$;
    CREATE TABLE public.stolen17 (at text, v text);
    CREATE FUNCTION public.copy17() RETURNS void LANGUAGE plpgsql AS $f$ BEGIN
      INSERT INTO public.stolen17 SELECT s.tablename, coalesce(s.most_common_vals::text, '') || coalesce(s.histogram_bounds::text, '')
        FROM pg_catalog.pg_stats s WHERE s.schemaname = '_timescaledb_internal'; END $f$;
    CREATE FUNCTION public.hook17(integer) RETURNS integer LANGUAGE plpgsql IMMUTABLE AS $f$ BEGIN PERFORM public.copy17(); RETURN $1; END $f$;
    -- A table the masking leaves alone: its index dropped before the first refresh, made again first in the last step.
    CREATE TABLE public.t_hook17 (x integer);
    INSERT INTO public.t_hook17 VALUES (1);
    CREATE INDEX t_hook17_i ON public.t_hook17 (public.hook17(x));
    TRUNCATE public.stolen17;`);
  const holding = `SELECT count(*) FROM pg_stats WHERE schemaname = '_timescaledb_internal'
    AND lower(coalesce(most_common_vals::text, '') || coalesce(histogram_bounds::text, '')) LIKE '${PRODUCTION_ADDRESS}'`;
  expect(Number(await inProduction(holding))).toBeGreaterThan(0);
  const { message } = await refusedFork("pr-redteam-remake-before-analyse", { mask: RULES, pauseJobs: true });
  expect(message).toMatch(
    /index visits17_email of continuous aggregate public\.visits17_daily: it calls a function of the database's own on the aggregate's materialization hypertable/,
  );
});

test("a trigger of the masked hypertable's compressed hypertable (its compressed chunks are no table the masking writes, so it is not held off) copies nothing while the masking compresses events' chunks again", async () => {
  cleanups.push(async () => {
    await inProduction(
      `DO $d$ BEGIN EXECUTE (SELECT format('DROP TRIGGER IF EXISTS cz_copy ON %I.%I', c.schema_name, c.table_name)
         FROM _timescaledb_catalog.hypertable h JOIN _timescaledb_catalog.hypertable c ON c.id = h.compressed_hypertable_id WHERE h.table_name = '${EVENTS_TABLE}'); END $d$;`,
    );
    await inProduction("DROP FUNCTION IF EXISTS public.cz_copy(); DROP TABLE IF EXISTS public.stolen_cz;");
  });
  await inProduction(`
    CREATE TABLE public.stolen_cz (q text, v text);
    CREATE FUNCTION public.cz_copy() RETURNS trigger LANGUAGE plpgsql AS $f$
      BEGIN
        IF pg_catalog.current_setting('redteam.cz', true) IS DISTINCT FROM 'yes' THEN
          PERFORM pg_catalog.set_config('redteam.cz', 'yes', false);
          INSERT INTO public.stolen_cz SELECT pg_catalog.left(pg_catalog.current_query(), 60), email FROM public.customers;
        END IF;
        RETURN NULL;
      END $f$;
    DO $d$ BEGIN EXECUTE (SELECT format('CREATE TRIGGER cz_copy AFTER INSERT ON %I.%I FOR EACH ROW EXECUTE FUNCTION public.cz_copy()', c.schema_name, c.table_name)
      FROM _timescaledb_catalog.hypertable h JOIN _timescaledb_catalog.hypertable c ON c.id = h.compressed_hypertable_id WHERE h.table_name = '${EVENTS_TABLE}'); END $d$;
    TRUNCATE public.stolen_cz;`);
  const outcome = await preparedFork("pr-redteam-compressed-trigger", { mask: RULES, pauseJobs: true }).then(
    async (fork) =>
      `published, copied: ${await read(fork.uri, `SELECT count(*) FROM public.stolen_cz WHERE v LIKE '${PRODUCTION_ADDRESS}'`)} of ${await read(fork.uri, "SELECT count(*) FROM public.stolen_cz")}`,
    (err: Error) => err.message,
  );
  expect(outcome).toMatch(/^published, copied: 0 of|cz_copy/);
});

test("an aggregate whose materialization hypertable's index calls a function reading customers (its statistics production's until analysed again, read by a view refreshed last) is refused, naming the index", async () => {
  cleanups.push(() =>
    inProduction(
      // One aggregate a statement: TimescaleDB drops none listed beside another relation.
      "DROP MATERIALIZED VIEW IF EXISTS public.z_last18; DROP MATERIALIZED VIEW IF EXISTS public.visits18_daily CASCADE; DROP TABLE IF EXISTS public.visits18; " +
        "DROP FUNCTION IF EXISTS public.email_of18(integer), public.stats18();",
    ),
  );
  await inProduction(`
    CREATE TABLE public.visits18 (time timestamptz NOT NULL, customer_id integer);
    SELECT create_hypertable('public.visits18', by_range('time', interval '1 day'));
    INSERT INTO public.visits18 SELECT timestamptz '2026-01-01' + g * interval '10 minutes', 1 + g % 100 FROM generate_series(1, 1000) g;
    CREATE FUNCTION public.email_of18(integer) RETURNS text LANGUAGE sql IMMUTABLE AS $f$ SELECT email FROM public.customers WHERE id = $1 $f$;
    CREATE MATERIALIZED VIEW public.visits18_daily WITH (timescaledb.continuous) AS
      SELECT time_bucket('1 day', time) AS day, customer_id, count(*) AS n FROM public.visits18 GROUP BY 1, 2 WITH NO DATA;
    CREATE INDEX visits18_email ON public.visits18_daily (public.email_of18(customer_id));
    CALL refresh_continuous_aggregate('public.visits18_daily', NULL, NULL);
    DO $d$ DECLARE c regclass; BEGIN FOR c IN SELECT show_chunks('public.visits18_daily') LOOP EXECUTE format('ANALYZE %s', c); END LOOP; END $d$;
    -- Reversed: no check of values recognizes them.
    CREATE FUNCTION public.stats18() RETURNS SETOF text LANGUAGE sql STABLE AS $f$
      SELECT pg_catalog.reverse(v) FROM pg_catalog.pg_stats s, pg_catalog.unnest(s.histogram_bounds::text::text[]) v
       WHERE s.schemaname = '_timescaledb_internal' AND s.tablename ~ 'visits18_email' $f$;
    CREATE MATERIALIZED VIEW public.z_last18 AS SELECT public.stats18() AS v;`);
  const holding = `SELECT count(*) FROM public.z_last18 WHERE lower(reverse(v)) LIKE '${PRODUCTION_ADDRESS}'`;
  expect(Number(await inProduction(holding))).toBeGreaterThan(0);
  const { message } = await refusedFork("pr-redteam-last-view-aggregate-index", { mask: RULES, pauseJobs: true });
  expect(message).toMatch(
    /index visits18_email of continuous aggregate public\.visits18_daily: it calls a function of the database's own on the aggregate's materialization hypertable/,
  );
});

test("a materialized view casting text to a range type over a domain whose CHECK calls a function of tsdbadmin's (neither opaque nor a reader of pg_stats: refreshed first) copies no production statistic of a view refreshed after it", async () => {
  cleanups.push(() =>
    inProduction(
      "DROP MATERIALIZED VIEW IF EXISTS public.a_rdom, public.m_deep19, public.m_base19; DROP TYPE IF EXISTS public.r19; DROP DOMAIN IF EXISTS public.d19; " +
        "DROP FUNCTION IF EXISTS public.copy19(float8); DROP TABLE IF EXISTS public.stolen19;",
    ),
  );
  await inProduction(`
    CREATE MATERIALIZED VIEW public.m_base19 AS SELECT email FROM public.customers;
    -- Refreshed in the second wave (it reads m_base19): until then its statistics are production's.
    CREATE MATERIALIZED VIEW public.m_deep19 AS SELECT email FROM public.m_base19;
    ANALYZE public.m_deep19;
    CREATE TABLE public.stolen19 (v text);
    CREATE FUNCTION public.copy19(float8) RETURNS boolean LANGUAGE plpgsql AS $f$ BEGIN
      INSERT INTO public.stolen19 SELECT coalesce(s.most_common_vals::text, '') || coalesce(s.histogram_bounds::text, '')
        FROM pg_catalog.pg_stats s WHERE s.schemaname = 'public' AND s.tablename = 'm_deep19';
      RETURN true; END $f$;
    CREATE DOMAIN public.d19 AS float8 CHECK (public.copy19(VALUE));
    CREATE TYPE public.r19 AS RANGE (subtype = public.d19);
    CREATE MATERIALIZED VIEW public.a_rdom AS SELECT ('[' || g || ',' || (g + 1) || ')')::public.r19 AS r FROM generate_series(1, 3) g;
    TRUNCATE public.stolen19;`);
  const fork = await preparedFork("pr-redteam-range-domain-view", { mask: RULES, pauseJobs: true });
  expect(Number(await read(fork.uri, "SELECT count(*) FROM public.stolen19"))).toBeGreaterThan(0);
  expect(await read(fork.uri, `SELECT count(*) FROM public.stolen19 WHERE lower(v) LIKE '${PRODUCTION_ADDRESS}'`)).toBe("0");
});
