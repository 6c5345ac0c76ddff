// The SQL a fork's preparation sends, apart from the runner (run.ts) so that each text can be read
// and tested on its own. Identifiers come from the fork's catalog and are quoted by PostgreSQL
// (format('%I')) or by `ident` below; every value is a parameter.
import type { MaskRule } from "./schema";

/** A parameter's placeholder for `value` ($1, $2, ...): the builder adds it to the statement's parameters. */
export type Param = (value: unknown) => string;

/** Stands for the preparation's hashing key among a rule's parameters. */
export const KEY = Symbol("key");

/** An identifier quoted as PostgreSQL's quote_ident does when needed: always here, so any name is safe. */
export const ident = (name: string) => `"${name.replace(/"/g, '""')}"`;
/** A string literal, for the few statements that take no parameters (CALL, ROLLBACK PREPARED). */
export const literal = (text: string) => `'${text.replace(/'/g, "''")}'`;

/** Parameters collected while a statement is built, the hashing key put in where KEY stands. */
export function parameters(key: string): { values: unknown[]; param: Param } {
  const values: unknown[] = [];
  return {
    values,
    param: (value) => {
      values.push(value === KEY ? key : value);
      return `$${values.length}`;
    },
  };
}

/** The value a rule writes in place of `column`'s (quoted). NULLs stay NULL. */
export function maskExpression(rule: MaskRule, column: string, param: Param): string {
  switch (rule.with) {
    case "null":
      return "NULL";
    case "constant":
      // THEN the column (NULL), so that the parameter takes the column's type, text or not.
      return `CASE WHEN ${column} IS NULL THEN ${column} ELSE ${param(rule.value)} END`;
    case "hash":
      return `'h' || md5(${param(KEY)} || ${column}::text)`;
    case "email":
      return `'user-' || left(md5(${param(KEY)} || ${column}::text), 16) || '@example.invalid'`;
    case "keepFirst":
      return `left(${column}::text, ${param(rule.chars)}::int)`;
  }
}

/** True of a value the rule writes (or NULL): what every row must hold once masked. */
export function maskedCondition(rule: MaskRule, column: string, param: Param): string {
  switch (rule.with) {
    case "null":
      return `${column} IS NULL`;
    case "constant":
      return `(${column} IS NULL OR ${column} IS NOT DISTINCT FROM (CASE WHEN ${column} IS NULL THEN ${column} ELSE ${param(rule.value)} END))`;
    case "hash":
      return `(${column} IS NULL OR ${column}::text ~ '^h[0-9a-f]{32}$')`;
    case "email":
      return `(${column} IS NULL OR ${column}::text ~ '^user-[0-9a-f]{16}@example\\.invalid$')`;
    case "keepFirst":
      return `(${column} IS NULL OR length(${column}::text) <= ${param(rule.chars)}::int)`;
  }
}

/** A table as resolved in the fork's catalog. */
export interface Table {
  oid: number;
  schema: string;
  name: string;
  /** pg_class.relkind: r table, p partitioned, f foreign, v view, m materialized view, ... */
  kind: string;
}
export const tableName = (t: Pick<Table, "schema" | "name">) => `${ident(t.schema)}.${ident(t.name)}`;
/** The same name as a person writes it: quoted only where PostgreSQL would need it. */
export const shownName = (t: Pick<Table, "schema" | "name">) =>
  [t.schema, t.name].map((n) => (/^[a-z_][a-z0-9_$]*$/.test(n) ? n : ident(n))).join(".");

/**
 * The relations a rule's table may mean: as PostgreSQL reads it unquoted ($1.$2, lower case), and as
 * written ($3.$4), which differs when it has capitals: then another table's name.
 */
export const FIND_TABLE = `SELECT c.oid::int AS oid, n.nspname AS schema, c.relname AS name, c.relkind::text AS kind,
       (n.nspname = $1 AND c.relname = $2) AS as_read
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE (n.nspname = $1 AND c.relname = $2) OR (n.nspname = $3 AND c.relname = $4)`;

/** The table's columns and their types. */
export const COLUMNS = `SELECT attname AS name, format_type(atttypid, atttypmod) AS type
  FROM pg_attribute WHERE attrelid = $1 AND attnum > 0 AND NOT attisdropped`;

/** The table and every table under it (partitions, inheritance children, TimescaleDB's chunks), with their kind. */
export const TREE = `WITH RECURSIVE tree(oid) AS (SELECT $1::oid UNION SELECT i.inhrelid FROM pg_inherits i JOIN tree t ON i.inhparent = t.oid)
SELECT c.oid::int AS oid, n.nspname AS schema, c.relname AS name, c.relkind::text AS kind
  FROM tree JOIN pg_class c ON c.oid = tree.oid JOIN pg_namespace n ON n.oid = c.relnamespace`;

/** Tables whose foreign keys reference one of these ($1: oids): an ON UPDATE CASCADE writes them during the masking. */
export const REFERENCING = `SELECT DISTINCT c.oid::int AS oid, n.nspname AS schema, c.relname AS name, c.relkind::text AS kind
  FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE k.contype = 'f' AND k.confrelid = ANY($1::oid[]) AND NOT (k.conrelid = ANY($1::oid[]))`;

/** User triggers of these tables ($1: oids) that run: not PostgreSQL's own (foreign keys) nor an extension's. */
export const TRIGGERS = `SELECT t.tgrelid::int AS oid, t.tgname AS name, t.tgenabled::text AS mode
  FROM pg_trigger t
 WHERE t.tgrelid = ANY($1::oid[]) AND NOT t.tgisinternal AND t.tgenabled <> 'D'
   AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_proc'::regclass AND d.objid = t.tgfoid AND d.deptype = 'e')`;

/** Rules of these tables ($1: oids) that rewrite a write (not a view's own _RETURN), enabled. */
export const RULES = `SELECT r.ev_class::int AS oid, r.rulename AS name, r.ev_enabled::text AS mode
  FROM pg_rewrite r WHERE r.ev_class = ANY($1::oid[]) AND r.rulename <> '_RETURN' AND r.ev_enabled <> 'D'`;

/** A trigger held off and back as it was (O: on, A: always, R: replica), on this table alone. */
export function triggerSwitch(table: string, trigger: string, mode: "D" | string): string {
  const how = mode === "D" ? "DISABLE" : mode === "A" ? "ENABLE ALWAYS" : mode === "R" ? "ENABLE REPLICA" : "ENABLE";
  return `ALTER TABLE ONLY ${table} ${how} TRIGGER ${ident(trigger)}`;
}
export function ruleSwitch(table: string, rule: string, mode: "D" | string): string {
  const how = mode === "D" ? "DISABLE" : mode === "A" ? "ENABLE ALWAYS" : mode === "R" ? "ENABLE REPLICA" : "ENABLE";
  return `ALTER TABLE ${table} ${how} RULE ${ident(rule)}`;
}

/** Foreign servers of the database, and who holds a user mapping on each: a way from the fork to another database. */
export const FOREIGN_SERVERS = `SELECT s.srvname AS name FROM pg_foreign_server s ORDER BY s.srvname`;
export const dropForeignServer = (name: string) => `DROP SERVER ${ident(name)} CASCADE`;

/** Transactions prepared in production, in this database: committing one on the fork would write production's rows. */
export const PREPARED_TRANSACTIONS = `SELECT gid, owner::text AS owner FROM pg_prepared_xacts WHERE database = current_database() ORDER BY prepared`;
export const rollbackPrepared = (gid: string) => `ROLLBACK PREPARED ${literal(gid)}`;

/** Whether TimescaleDB is installed in the fork's database. */
export const HAS_TIMESCALEDB = `SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'timescaledb') AS present`;

/** The compressed chunks of a hypertable ($1 schema, $2 name), if it is one. */
export const COMPRESSED_CHUNKS = `SELECT format('%I.%I', chunk_schema, chunk_name) AS chunk
  FROM timescaledb_information.chunks WHERE hypertable_schema = $1 AND hypertable_name = $2 AND is_compressed ORDER BY range_start`;
export const decompressChunk = `SELECT decompress_chunk($1::regclass)`;
export const compressChunk = `SELECT compress_chunk($1::regclass)`;

/** The tables holding a hypertable's compressed rows ($1 schema, $2 name): their statistics keep segmentby columns' values. */
export const COMPRESSED_TABLES = `SELECT c.oid::int AS oid, cc.schema_name AS schema, cc.table_name AS name, 'r' AS kind
  FROM _timescaledb_catalog.hypertable h
  JOIN _timescaledb_catalog.chunk ch ON ch.hypertable_id = h.id
  JOIN _timescaledb_catalog.chunk cc ON cc.id = ch.compressed_chunk_id
  JOIN pg_class c ON c.oid = format('%I.%I', cc.schema_name, cc.table_name)::regclass
 WHERE h.schema_name = $1 AND h.table_name = $2`;

/**
 * The continuous aggregates over these hypertables ($1 schemas, $2 names, pairwise), and those over
 * them (hierarchical), in the order they are refreshed; each with its materialization hypertable.
 */
export const CONTINUOUS_AGGREGATES = `WITH RECURSIVE over(mat_id, depth) AS (
    SELECT ca.mat_hypertable_id, 1 FROM _timescaledb_catalog.continuous_agg ca
      JOIN _timescaledb_catalog.hypertable h ON h.id = ca.raw_hypertable_id
     WHERE (h.schema_name, h.table_name) IN (SELECT * FROM unnest($1::text[], $2::text[]))
    UNION
    SELECT ca.mat_hypertable_id, o.depth + 1 FROM _timescaledb_catalog.continuous_agg ca JOIN over o ON ca.raw_hypertable_id = o.mat_id)
SELECT format('%I.%I', ca.user_view_schema, ca.user_view_name) AS view, m.schema_name AS mat_schema, m.table_name AS mat_name,
       max(o.depth) AS depth
  FROM over o JOIN _timescaledb_catalog.continuous_agg ca ON ca.mat_hypertable_id = o.mat_id
  JOIN _timescaledb_catalog.hypertable m ON m.id = ca.mat_hypertable_id
 GROUP BY 1, 2, 3 ORDER BY depth, view`;
/** A whole refresh (force: even what it holds as up to date), which cannot run inside a transaction. */
export const refreshContinuousAggregate = (view: string) =>
  `CALL refresh_continuous_aggregate(${literal(view)}, NULL, NULL, force => true)`;

/** The materialized views that read these tables ($1: oids), through views or other materialized views, in the order they are refreshed. */
export const MATERIALIZED_VIEWS = `WITH RECURSIVE reads(oid, depth) AS (
    SELECT DISTINCT r.ev_class, 1 FROM pg_depend d JOIN pg_rewrite r ON r.oid = d.objid
     WHERE d.classid = 'pg_rewrite'::regclass AND d.refclassid = 'pg_class'::regclass AND d.refobjid = ANY($1::oid[]) AND r.ev_class <> d.refobjid
    UNION
    SELECT DISTINCT r.ev_class, x.depth + 1 FROM reads x JOIN pg_depend d ON d.refobjid = x.oid AND d.refclassid = 'pg_class'::regclass
      JOIN pg_rewrite r ON r.oid = d.objid AND d.classid = 'pg_rewrite'::regclass WHERE r.ev_class <> x.oid AND x.depth < 20)
SELECT c.oid::int AS oid, n.nspname AS schema, c.relname AS name, 'm' AS kind, max(x.depth) AS depth
  FROM reads x JOIN pg_class c ON c.oid = x.oid JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE c.relkind = 'm' GROUP BY 1, 2, 3 ORDER BY depth, name`;
export const refreshMaterializedView = (view: string) => `REFRESH MATERIALIZED VIEW ${view}`;

/** Production's values of `column` of `table`, before the masking: a sample of the rows and what its statistics (of the table and its chunks, $1) hold. */
export function sampleValues(table: string, column: string): string {
  // The first rows found, not DISTINCT (which would read the whole table before its LIMIT).
  return `SELECT v FROM (SELECT ${ident(column)}::text AS v FROM ${table} WHERE ${ident(column)} IS NOT NULL LIMIT 500) s
UNION
SELECT v FROM pg_stats s, pg_class c, pg_namespace n,
       unnest(coalesce(s.most_common_vals::text::text[], '{}') || coalesce(s.histogram_bounds::text::text[], '{}')) v
 WHERE n.oid = c.relnamespace AND s.schemaname = n.nspname AND s.tablename = c.relname
   AND c.oid = ANY($1::oid[]) AND s.attname = $2`;
}

/** The indexes of these tables ($1: oids): their expression columns have statistics of their own. */
export const INDEXES = `SELECT i.indexrelid::int AS oid, n.nspname AS schema, c.relname AS name, 'i' AS kind
  FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_namespace n ON n.oid = c.relnamespace WHERE i.indrelid = ANY($1::oid[])`;

/**
 * Statistics that still hold one of production's values ($3): of these columns ($2) of these tables
 * ($1), of every column of these other relations ($4: indexes, materialized views, materialization
 * tables), and extended statistics on the tables. Each row names where.
 */
export const STATISTICS_HOLDING = `SELECT format('%I.%I', s.schemaname, s.tablename) || ' (' || s.attname || ')' AS place
  FROM pg_stats s JOIN pg_namespace n ON n.nspname = s.schemaname JOIN pg_class c ON c.relnamespace = n.oid AND c.relname = s.tablename
 WHERE ((c.oid = ANY($1::oid[]) AND s.attname = ANY($2::text[])) OR c.oid = ANY($4::oid[]))
   AND EXISTS (SELECT 1 FROM unnest(coalesce(s.most_common_vals::text::text[], '{}') || coalesce(s.histogram_bounds::text::text[], '{}')) v
                WHERE v = ANY($3::text[]))
UNION ALL
SELECT format('%I.%I', e.statistics_schemaname, e.statistics_name) AS place
  FROM pg_stats_ext e JOIN pg_namespace n ON n.nspname = e.schemaname JOIN pg_class c ON c.relnamespace = n.oid AND c.relname = e.tablename
 WHERE c.oid = ANY($1::oid[]) AND EXISTS (SELECT 1 FROM unnest(coalesce(e.most_common_vals, '{}')) v WHERE v = ANY($3::text[]))
UNION ALL
SELECT format('%I.%I', x.statistics_schemaname, x.statistics_name) || ' (' || x.expr || ')' AS place
  FROM pg_stats_ext_exprs x JOIN pg_namespace n ON n.nspname = x.schemaname JOIN pg_class c ON c.relnamespace = n.oid AND c.relname = x.tablename
 WHERE c.oid = ANY($1::oid[])
   AND EXISTS (SELECT 1 FROM unnest(coalesce(x.most_common_vals::text::text[], '{}') || coalesce(x.histogram_bounds::text::text[], '{}')) v
                WHERE v = ANY($3::text[]))`;

/** How many rows of `view` hold one of production's values ($1) in a column that reads as text. */
export function rowsHolding(view: string, columns: string[]): string {
  const any = columns.map((c) => `${ident(c)}::text = ANY($1::text[])`).join(" OR ");
  return `SELECT count(*)::int AS n FROM ${view} WHERE ${any || "false"}`;
}
