// The SQL a fork's preparation sends, apart from the runner (run.ts) so that each text can be read
// and tested on its own. Identifiers come from the fork's catalog, quoted by PostgreSQL (format's
// %I, quote_ident: the `quoted` of each row, of type Quoted); every value is a parameter. The two statements that take no
// parameters (ROLLBACK PREPARED, the CALL of a refresh) get theirs quoted by the server, or read
// from a setting the parameter set: no text the database holds is ever spliced in by hand.
import type { MaskRule } from "./schema";

/** A parameter's placeholder for `value` ($1, $2, ...): the builder adds it to the statement's parameters. */
export type Param = (value: unknown) => string;

/** Stands for the preparation's hashing key among a rule's parameters. */
export const KEY = Symbol("key");
/** Stands for the preparation's tag among a rule's parameters. */
export const TAG = Symbol("tag");

/**
 * What a preparation's pseudonyms are made of, new for each preparation: the key of the hash that
 * orders the values (a parameter, never in a statement's text), and the tag every pseudonym carries
 * (so that the check after the masking cannot take a production value for one).
 */
export interface Pseudonyms {
  key: string;
  tag: string;
}

declare const quotedName: unique symbol;
/**
 * A name as SQL reads it: quoted by the server (format's %I, quote_ident). Every builder below
 * takes names of this type, so a raw name (a string) cannot reach SQL unquoted.
 */
export type Quoted = string & { readonly [quotedName]: true };
declare const serverStatement: unique symbol;
/** A statement the server wrote (format's %I and %L), whole: run as it is. */
export type ServerStatement = string & { readonly [serverStatement]: true };

/** An identifier quoted as PostgreSQL's quote_ident does, always: for names the preparation says (shownName) and the tests build. */
export const ident = (name: string) => `"${name.replace(/"/g, '""')}"` as Quoted;

export const BEGIN = "BEGIN";
export const ROLLBACK = "ROLLBACK";
/**
 * Which of the objects a failure named ($1 schema, $2 table, $3 column, $4 constraint, $5 type)
 * the catalog has: only those are said (a RAISE can name anything).
 */
export const NAMED_OBJECTS = `SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = $1::text) AS schema,
       EXISTS (SELECT 1 FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
                WHERE n.nspname = $1::text AND c.relname = $2::text) AS "table",
       EXISTS (SELECT 1 FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_class c ON c.oid = a.attrelid
                 JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
                WHERE n.nspname = $1::text AND c.relname = $2::text AND a.attname = $3::text AND a.attnum > 0 AND NOT a.attisdropped) AS "column",
       EXISTS (SELECT 1 FROM pg_catalog.pg_constraint WHERE conname = $4::text) AS "constraint",
       EXISTS (SELECT 1 FROM pg_catalog.pg_type WHERE typname = $5::text) AS type`;
export interface NamedObjects {
  schema: boolean;
  table: boolean;
  column: boolean;
  constraint: boolean;
  type: boolean;
}
export const COMMIT = "COMMIT";
/** This transaction's ID: a text of the user's that ends it (COMMIT, ROLLBACK) changes it. */
/** (Run right after the user's SQL, under the role's search_path: every name qualified, a public.text domain cast to none.) */
export const TRANSACTION_ID = "SELECT pg_catalog.txid_current()::pg_catalog.text AS id";

/** Parameters collected while a statement is built, the key and the tag put in where KEY and TAG stand. */
export function parameters(pseudonyms: Pseudonyms = { key: "", tag: "" }): { values: unknown[]; param: Param } {
  const values: unknown[] = [];
  return {
    values,
    param: (value) => {
      values.push(value === KEY ? pseudonyms.key : value === TAG ? pseudonyms.tag : value);
      return `$${values.length}`;
    },
  };
}

/**
 * The preparation's own table of pseudonyms, for as long as the masking runs: every distinct value
 * of the columns that `hash` and `email` rules mask (as text), numbered in the order of its keyed
 * hash, so that the number says nothing of the value. A pseudonym is the tag and that number: as
 * short as production's values, so compressed chunks stay about their size, where 32 hex digits of
 * a hash compress to half again as much; and distinct for distinct values by construction.
 * Temporary (no other session sees it), dropped once the UPDATEs are done, and at COMMIT anyway.
 */
const PSEUDONYMS = "pg_temp.tigercloud_pseudonyms";
export function pseudonymTable(tables: { table: Quoted; columns: Quoted[] }[], param: Param): string {
  // One scan of each table, whatever the number of its columns (a compressed chunk is decompressed to be read).
  const values = tables
    .map((t) => `SELECT unnest(ARRAY[${t.columns.map((c) => `${c}::text`).join(", ")}]) AS value FROM ${t.table}`)
    .join(" UNION ALL ");
  return (
    `CREATE TEMPORARY TABLE ${PSEUDONYMS} ON COMMIT DROP AS ` +
    `SELECT value, 'h' || ${param(TAG)} || '-' || n::text AS hash, 'user-' || ${param(TAG)} || '-' || n::text || '@example.invalid' AS email ` +
    `FROM (SELECT value, row_number() OVER (ORDER BY md5(${param(KEY)} || value), value) AS n ` +
    `FROM (SELECT DISTINCT value FROM (${values}) a WHERE value IS NOT NULL) d) v`
  );
}
export const PSEUDONYMS_INDEX = `CREATE UNIQUE INDEX ON ${PSEUDONYMS} (value)`;
export const DROP_PSEUDONYMS = `DROP TABLE ${PSEUDONYMS}`;
/** The alias of the table the masking's UPDATE writes. */
export const TARGET = "masked_row";
/** The rules whose values come from the pseudonym table. */
export const pseudonymous = (rule: MaskRule) => rule.with === "hash" || rule.with === "email";

/** The value a rule writes in place of `column`'s. NULLs stay NULL. */
export function maskExpression(rule: MaskRule, column: Quoted, param: Param): string {
  switch (rule.with) {
    case "null":
      return "NULL";
    case "constant":
      // THEN the column (NULL), so that the parameter takes the column's type, text or not.
      return `CASE WHEN ${column} IS NULL THEN ${column} ELSE ${param(rule.value)} END`;
    // A value not in the table (written by a key's cascade during the masking: a pseudonym already)
    // is left as it is; the check after the masking refuses anything else.
    case "hash":
    case "email":
      return `COALESCE((SELECT p.${rule.with} FROM ${PSEUDONYMS} p WHERE p.value = ${column}::text), ${column})`;
    case "keepFirst":
      return `left(${column}::text, ${param(rule.chars)}::int)`;
  }
}

/** True of a value the rule writes (or NULL): what every row must hold once masked. */
export function maskedCondition(rule: MaskRule, column: Quoted, param: Param): string {
  switch (rule.with) {
    case "null":
      return `${column} IS NULL`;
    case "constant":
      return `(${column} IS NULL OR ${column} IS NOT DISTINCT FROM (CASE WHEN ${column} IS NULL THEN ${column} ELSE ${param(rule.value)} END))`;
    case "hash":
      return pseudonymShaped(column, `('h' || ${param(TAG)} || '-')`, "");
    case "email":
      return pseudonymShaped(column, `('user-' || ${param(TAG)} || '-')`, "@example.invalid");
    case "keepFirst":
      return `(${column} IS NULL OR length(${column}::text) <= ${param(rule.chars)}::int)`;
  }
}

/**
 * `column` is NULL, or as text is `prefix`, a number with no leading zero, then `suffix`: what
 * `~ '^prefix[1-9][0-9]*suffix$'` says, in a third of a regular expression's time (PostgreSQL makes
 * each value wide characters first: 4 of the 5 s a million-row check took). Byte-wise (COLLATE "C"),
 * so that no column's collation makes other text equal. `prefix` ends in a non-digit; `suffix` is ours.
 */
function pseudonymShaped(column: Quoted, prefix: string, suffix: string): string {
  const text = `(${column}::text COLLATE pg_catalog."C")`;
  const number = `pg_catalog.substr(${text}, pg_catalog.length(${prefix}) + 1, 1)`;
  const withoutSuffix = suffix === "" ? text : `pg_catalog.left(${text}, -${suffix.length})`;
  const endsWithSuffix = suffix === "" ? "" : ` AND pg_catalog.right(${text}, ${suffix.length}) = '${suffix}'`;
  return (
    `(${column} IS NULL OR (pg_catalog.length(${text}) > pg_catalog.length(${prefix}) + ${suffix.length}${endsWithSuffix}` +
    ` AND pg_catalog.rtrim(${withoutSuffix}, '0123456789') = ${prefix} AND ${number} IN ('1', '2', '3', '4', '5', '6', '7', '8', '9')))`
  );
}

/** A table as resolved in the fork's catalog. */
export interface Table {
  oid: number;
  schema: string;
  name: string;
  /** Its name as SQL reads it, quoted by the server (format's %I): what statements are built with. */
  quoted: Quoted;
  /** pg_class.relkind: r table, p partitioned, f foreign, v view, m materialized view, ... */
  kind: string;
}
export const tableName = (t: Pick<Table, "quoted">) => t.quoted;
/** The same name as a person writes it: quoted only where PostgreSQL would need it. */
export const shownName = (t: Pick<Table, "schema" | "name">) =>
  [t.schema, t.name].map((n) => (/^[a-z_][a-z0-9_$]*$/.test(n) ? n : ident(n))).join(".");

/**
 * The relations a rule's table may mean: as PostgreSQL reads it unquoted ($1.$2, lower case), and as
 * written ($3.$4), which differs when it has capitals: then another table's name.
 */
export const FIND_TABLE = `SELECT c.oid::int AS oid, n.nspname AS schema, c.relname AS name, format('%I.%I', n.nspname, c.relname) AS quoted, c.relkind::text AS kind,
       (n.nspname = $1 AND c.relname = $2) AS as_read
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE (n.nspname = $1 AND c.relname = $2) OR (n.nspname = $3 AND c.relname = $4)`;

/**
 * Whether a column ($2) of a table ($1) partitions it or a table above it: the partitions' bounds
 * (or a hypertable's chunks' ranges) are then its values, production's, which no UPDATE changes.
 */
export const PARTITIONS_BY = `SELECT EXISTS (
    SELECT 1 FROM pg_partitioned_table p JOIN pg_attribute a ON a.attrelid = p.partrelid AND a.attnum > 0 AND NOT a.attisdropped
     -- Above it and under it (a partition partitioned again), by the column or an expression of it (lower(email)).
     WHERE p.partrelid IN (SELECT relid FROM pg_partition_ancestors($1) UNION SELECT relid FROM pg_partition_tree($1))
       AND a.attname = $2
       AND (a.attnum = ANY (p.partattrs::int2[]) OR coalesce(p.partexprs::text, '') ~ (':varattno ' || a.attnum || ' '))) AS declared`;
export const HYPERTABLE_DIMENSION = `SELECT EXISTS (
    SELECT 1 FROM _timescaledb_catalog.dimension d JOIN _timescaledb_catalog.hypertable h ON h.id = d.hypertable_id
     WHERE format('%I.%I', h.schema_name, h.table_name)::regclass = $1::oid::regclass AND d.column_name = $2) AS dimension`;

/** The table's columns, quoted by the server too. */
export const COLUMNS = `SELECT attname AS name, quote_ident(attname) AS quoted
  FROM pg_attribute WHERE attrelid = $1 AND attnum > 0 AND NOT attisdropped`;

/** The table and every table under it (partitions, inheritance children, TimescaleDB's chunks), with their kind. */
export const TREE = `WITH RECURSIVE tree(oid) AS (SELECT $1::oid UNION SELECT i.inhrelid FROM pg_inherits i JOIN tree t ON i.inhparent = t.oid)
SELECT c.oid::int AS oid, n.nspname AS schema, c.relname AS name, format('%I.%I', n.nspname, c.relname) AS quoted, c.relkind::text AS kind
  FROM tree JOIN pg_class c ON c.oid = tree.oid JOIN pg_namespace n ON n.oid = c.relnamespace`;

/**
 * Every table the masking writes, from these ($1: the masked tables' oids): each table under one
 * (partitions, inheritance children, chunks) and each table whose foreign key's ON UPDATE action
 * (CASCADE, SET NULL, SET DEFAULT) writes it when a key it references is masked, and so on down.
 */
export const WRITTEN = `WITH RECURSIVE edges(parent, child) AS (
    SELECT inhparent, inhrelid FROM pg_inherits
    UNION ALL
    SELECT confrelid, conrelid FROM pg_constraint WHERE contype = 'f' AND confupdtype IN ('c', 'n', 'd')),
  written(oid) AS (SELECT unnest($1::oid[]) UNION SELECT e.child FROM edges e JOIN written w ON e.parent = w.oid)
SELECT c.oid::int AS oid, n.nspname AS schema, c.relname AS name, format('%I.%I', n.nspname, c.relname) AS quoted, c.relkind::text AS kind
  FROM written JOIN pg_class c ON c.oid = written.oid JOIN pg_namespace n ON n.oid = c.relnamespace`;

/**
 * The columns a key's ON UPDATE action writes, of these tables ($1: oids), when what it references
 * ($2: oids) is written: a cascaded table's own masked columns, which may partition it too.
 */
export const CASCADED_COLUMNS = `SELECT DISTINCT k.conrelid::int AS oid, format('%I.%I', n.nspname, c.relname) AS label, a.attname AS column
  FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid JOIN pg_namespace n ON n.oid = c.relnamespace
  JOIN pg_attribute a ON a.attrelid = k.conrelid AND a.attnum = ANY (k.conkey)
 WHERE k.contype = 'f' AND k.confupdtype IN ('c', 'n', 'd') AND k.conrelid = ANY($1::oid[]) AND k.confrelid = ANY($2::oid[])
 ORDER BY 2, 3`;

/** The tables above these ($1: oids): a partitioned table's statistics of its whole (inherited) hold its partitions' values. */
export const ANCESTORS = `WITH RECURSIVE up(oid) AS (SELECT unnest($1::oid[]) UNION SELECT i.inhparent FROM pg_inherits i JOIN up ON i.inhrelid = up.oid)
SELECT c.oid::int AS oid, n.nspname AS schema, c.relname AS name, format('%I.%I', n.nspname, c.relname) AS quoted, c.relkind::text AS kind
  FROM up JOIN pg_class c ON c.oid = up.oid JOIN pg_namespace n ON n.oid = c.relnamespace WHERE NOT (up.oid = ANY($1::oid[]))`;

/** The hypertables among these ($1: oids). */
export const HYPERTABLES = `SELECT c.oid::int AS oid, h.schema_name AS schema, h.table_name AS name, format('%I.%I', h.schema_name, h.table_name) AS quoted, 'r' AS kind
  FROM _timescaledb_catalog.hypertable h JOIN pg_class c ON c.oid = format('%I.%I', h.schema_name, h.table_name)::regclass
 WHERE c.oid = ANY($1::oid[])`;

/**
 * Compression's rollup (compress_chunk_time_interval) of these hypertables ($1: oids): compress_chunk
 * merges a chunk into a compressed neighbour, whose table then goes (and what stands on it) while the
 * masking still names it. Held off while the masking compresses chunks again, each alone, and set back
 * as it was (the catalog keeps microseconds, and reads the setting as an interval for every dimension).
 */
export interface Rollup {
  hypertable: string;
  hold: ServerStatement;
  restore: ServerStatement;
}
export const ROLLUPS = `SELECT pg_catalog.format('%I.%I', h.schema_name, h.table_name) AS hypertable,
       pg_catalog.format('ALTER TABLE %I.%I SET (timescaledb.compress_chunk_time_interval = %L)', h.schema_name, h.table_name, '0') AS hold,
       pg_catalog.format('ALTER TABLE %I.%I SET (timescaledb.compress_chunk_time_interval = %L)', h.schema_name, h.table_name,
                         d.compress_interval_length::text || ' microseconds') AS restore
  FROM _timescaledb_catalog.hypertable h JOIN _timescaledb_catalog.dimension d ON d.hypertable_id = h.id
 WHERE d.compress_interval_length IS NOT NULL
   AND to_regclass(pg_catalog.format('%I.%I', h.schema_name, h.table_name))::oid = ANY($1::oid[])
 ORDER BY 1`;

/** A hypertable's chunks ($1 schema, $2 name) that hold rows outside their compressed batches (status bit 8): compressed again after the masking. */
export const PARTIAL_CHUNKS = `SELECT format('%I.%I', ch.schema_name, ch.table_name) AS chunk
  FROM _timescaledb_catalog.chunk ch JOIN _timescaledb_catalog.hypertable h ON h.id = ch.hypertable_id
 WHERE h.schema_name = $1 AND h.table_name = $2 AND ch.status & 8 <> 0`;

/**
 * The triggers of these tables ($1: oids) that run, but PostgreSQL's own (foreign keys): an
 * extension's too, as a function can be made an extension's member by whoever owns it.
 */
export const TRIGGERS = `SELECT t.tgrelid::int AS oid, t.tgname AS name, quote_ident(t.tgname) AS quoted, t.tgenabled::text AS mode
  FROM pg_trigger t WHERE t.tgrelid = ANY($1::oid[]) AND NOT t.tgisinternal AND t.tgenabled <> 'D'`;

/** Rules of these tables ($1: oids) that rewrite a write (not a view's own _RETURN), enabled. */
export const RULES = `SELECT r.ev_class::int AS oid, r.rulename AS name, quote_ident(r.rulename) AS quoted, r.ev_enabled::text AS mode
  FROM pg_rewrite r WHERE r.ev_class = ANY($1::oid[]) AND r.rulename <> '_RETURN' AND r.ev_enabled <> 'D'`;

/**
 * A trigger held off and back as it was (O: on, A: always, R: replica), on this table alone; on a
 * hypertable, with its copies on every chunk (TimescaleDB refuses ONLY there, and any switch on a chunk).
 */
export function triggerSwitch(table: Quoted, trigger: Quoted, mode: "D" | string, hypertable = false): string {
  const how = mode === "D" ? "DISABLE" : mode === "A" ? "ENABLE ALWAYS" : mode === "R" ? "ENABLE REPLICA" : "ENABLE";
  return `ALTER TABLE ${hypertable ? "" : "ONLY "}${table} ${how} TRIGGER ${trigger}`;
}

/** What goes with the table `rel` (an oid's SQL) when it is dropped: its 'a' and 'i' dependents (constraints, indexes, triggers, a sequence OWNED BY its column), as (classid, objid). */
const goesWith = (rel: string) =>
  `SELECT o.classid, o.objid FROM pg_depend o WHERE o.refclassid = 'pg_class'::regclass AND o.refobjid = ${rel} AND o.deptype IN ('a', 'i')`;

/**
 * The hypertable's trigger `pt` (a pg_trigger row, joined on `h`, the chunk's pg_inherits row) of
 * which the trigger `tg` on a chunk is the copy TimescaleDB made: the same name and definition, so
 * that the hypertable's switch is its switch, and a new chunk gets it again. A name alone is not
 * enough (CREATE OR REPLACE TRIGGER on a chunk). Its mode may differ: a chunk made after ENABLE
 * ALWAYS, ENABLE REPLICA or DISABLE on the hypertable gets its copy plainly enabled.
 */
const hypertablesCopied = (tg: string) => `pg_inherits h JOIN pg_trigger pt ON pt.tgrelid = h.inhparent AND pt.tgname = ${tg}.tgname
   JOIN _timescaledb_catalog.hypertable ht ON pg_catalog.format('%I.%I', ht.schema_name, ht.table_name)::regclass = h.inhparent
  WHERE h.inhrelid = ${tg}.tgrelid AND pt.tgfoid = ${tg}.tgfoid
    AND pg_catalog.replace(pg_catalog.pg_get_triggerdef(${tg}.oid), ' ON ' || ${tg}.tgrelid::regclass::text || ' ', ' ON ' || pt.tgrelid::regclass::text || ' ')
        = pg_catalog.pg_get_triggerdef(pt.oid)`;
const copyOfHypertables = (tg: string) => `EXISTS (SELECT 1 FROM ${hypertablesCopied(tg)})`;

/**
 * What on these chunks ($1: oids) cannot be held off while the masking writes them: TimescaleDB lets
 * no trigger or rule of a chunk be switched, so a trigger of its own (not its hypertable's copy) or a
 * rule would run on every row the masking writes; and a copy enabled on its chunk of a trigger
 * disabled on its hypertable (`disabledOn`), which the masking does not switch, as it is off.
 */
export const SWITCHLESS_ON_CHUNKS = `SELECT pg_catalog.format('trigger %I', t.tgname) AS what, t.tgrelid::regclass::text AS "on", NULL::text AS "disabledOn"
  FROM pg_trigger t WHERE t.tgrelid = ANY($1::oid[]) AND NOT t.tgisinternal AND NOT ${copyOfHypertables("t")}
UNION ALL SELECT pg_catalog.format('trigger %I', t.tgname), t.tgrelid::regclass::text, pt.tgrelid::regclass::text
  FROM pg_trigger t, LATERAL (SELECT pt.tgrelid, pt.tgenabled FROM ${hypertablesCopied("t")}) pt
 WHERE t.tgrelid = ANY($1::oid[]) AND NOT t.tgisinternal AND pt.tgenabled = 'D' AND t.tgenabled <> 'D'
UNION ALL SELECT pg_catalog.format('rule %I', r.rulename), r.ev_class::regclass::text, NULL
  FROM pg_rewrite r WHERE r.ev_class = ANY($1::oid[]) AND r.rulename <> '_RETURN'
 ORDER BY 2, 1`;
export function ruleSwitch(table: Quoted, rule: Quoted, mode: "D" | string): string {
  const how = mode === "D" ? "DISABLE" : mode === "A" ? "ENABLE ALWAYS" : mode === "R" ? "ENABLE REPLICA" : "ENABLE";
  return `ALTER TABLE ${table} ${how} RULE ${rule}`;
}

/**
 * Foreign servers of the database (a way from the fork to another database), whether this role may
 * drop them (it owns them, or is a member of their owner), and the statement that would.
 */
export const FOREIGN_SERVERS = `SELECT s.srvname AS name, s.srvowner::regrole::text AS owner, pg_has_role(s.srvowner, 'MEMBER') AS ours,
       format('DROP SERVER %I CASCADE', s.srvname) AS "drop"
  FROM pg_foreign_server s ORDER BY s.srvname`;

/**
 * The logical-replication subscriptions of the whole server (pg_subscription is shared): a fork
 * copies them enabled, and its apply worker would take production's replication slot the moment
 * production's pauses, streaming the publisher's rows into the fork and away from production.
 * `ours`: this role may alter it (owner or member, in this database); the statements that disable
 * it and detach it from its slot.
 */
export const SUBSCRIPTIONS = `SELECT s.subname AS name, s.subowner::regrole::text AS owner, s.subenabled AS enabled, s.subslotname IS NOT NULL AS slot,
       d.datname = current_database() AS here, d.datname = current_database() AND pg_has_role(s.subowner, 'MEMBER') AS ours,
       format('ALTER SUBSCRIPTION %I DISABLE', s.subname) AS "disable", format('ALTER SUBSCRIPTION %I SET (slot_name = NONE)', s.subname) AS "detach"
  FROM pg_subscription s JOIN pg_database d ON d.oid = s.subdbid
 WHERE s.subenabled OR s.subslotname IS NOT NULL ORDER BY s.subname`;

/**
 * Transactions prepared in production, in this database: committing one on the fork would write
 * production's rows. ROLLBACK PREPARED takes no parameter: its gid (an application's choice) is
 * quoted by the server (format's %L, whatever standard_conforming_strings says). Only the role that
 * prepared one (or a superuser) may roll it back: `ours`.
 */
export const PREPARED_TRANSACTIONS = `SELECT owner::text AS owner, owner = current_user AS ours, format('ROLLBACK PREPARED %L', gid) AS "rollback"
  FROM pg_prepared_xacts WHERE database = current_database() ORDER BY prepared`;

/** Whether TimescaleDB is installed in the fork's database. */
/** The schema TimescaleDB is installed in, if it is: its functions are called by that name (see PIN_SEARCH_PATH). */
export const TIMESCALEDB_SCHEMA = `SELECT n.nspname AS schema, quote_ident(n.nspname) AS quoted FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'timescaledb'`;

/**
 * The preparation's own statements resolve names in pg_catalog alone (temporary tables in pg_temp,
 * searched last): a function or operator of the database's own with an exact match for the types
 * (a public.unnest(text[]), a || of (text, bigint)) would otherwise be chosen over pg_catalog's
 * polymorphic one, and run with the values being masked. Set for the session, as PostgreSQL 17 sets
 * it for VACUUM and ANALYZE; the user's sql and sqlAfter, and the refreshes of views (after the
 * masking is committed), run with the role's own (USER_SEARCH_PATH, SESSION_SEARCH_PATH), and this
 * is set again after them.
 */
export const SEARCH_PATH = `SELECT pg_catalog.current_setting('search_path') AS path`;
/**
 * The first of the preparation's statements after SEARCH_PATH, before any that resolves an
 * operator or an unqualified function: with the role's own path (public before pg_catalog), an
 * operator of the database's own (a public.= of text) would run in the very statements that read
 * the settings. Both use a qualified function and constants alone.
 */
export const PIN_SEARCH_PATH = `SELECT pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', false)`;
export const USER_SEARCH_PATH = `SELECT pg_catalog.set_config('search_path', $1, true)`;
export const SESSION_SEARCH_PATH = `SELECT pg_catalog.set_config('search_path', $1, false)`;

/**
 * The settings a role's or the database's `ALTER … SET` gave this session (production chose them,
 * and the fork copies them): what the user's SQL runs with (USER_SETTINGS), set back to
 * PostgreSQL's own for the preparation's (PIN_SETTINGS).
 */
export const ROLE_SETTINGS = `SELECT name, setting FROM pg_catalog.pg_settings
 WHERE source IN ('database', 'user', 'database user') AND context = 'user' AND name <> 'search_path' ORDER BY name`;
export const USER_SETTINGS = `SELECT pg_catalog.count(pg_catalog.set_config(s.name, s.value, true))
  FROM ROWS FROM (pg_catalog.unnest($1::pg_catalog.text[]), pg_catalog.unnest($2::pg_catalog.text[])) AS s(name, value)`;

/**
 * What the preparation's own statements run with, whatever a role, the database or the user's SQL
 * set: every setting one may change set back to PostgreSQL's own, then those that change how SQL
 * is read or what it reads fixed. A backslash would otherwise end a quoted string under
 * standard_conforming_strings = off; a role setting could name another role to run as; rows hidden
 * by row-level security would be left unmasked; a timeout would stop the masking halfway.
 */
export const PINNED: Readonly<Record<string, string>> = {
  search_path: "pg_catalog, pg_temp",
  role: "none",
  standard_conforming_strings: "on",
  backslash_quote: "safe_encoding",
  check_function_bodies: "on",
  array_nulls: "on",
  transform_null_equals: "off",
  quote_all_identifiers: "off",
  row_security: "off",
  xmloption: "content",
  DateStyle: "ISO, MDY",
  IntervalStyle: "postgres",
  extra_float_digits: "1",
  bytea_output: "hex",
  statement_timeout: "0",
  lock_timeout: "0",
  idle_in_transaction_session_timeout: "0",
  default_transaction_read_only: "off",
  // The catalog queries' recursive parts are estimated huge: JIT compiled one for 1.2 s that runs in 30 ms without it.
  jit: "off",
};
/**
 * Every setting one may change that a role, the database or this session changed, back to
 * PostgreSQL's own (a transaction's own mode stays: it cannot change halfway; the search_path is
 * PIN_SEARCH_PATH's, set just before). Every name in these two is qualified: they run right after
 * the user's SQL or a view's refresh, which may have left any path, and the role's own would find a
 * public.left(text, integer) or a public.= of text first.
 */
export const RESET_SETTINGS = `SELECT pg_catalog.count(pg_catalog.set_config(s.name, s.boot_val, false)) AS n FROM pg_catalog.pg_settings s
 WHERE s.context OPERATOR(pg_catalog.=) 'user'
   AND s.source OPERATOR(pg_catalog.=) ANY (ARRAY['database', 'user', 'database user', 'session']::pg_catalog.text[])
   AND s.boot_val IS NOT NULL AND s.name OPERATOR(pg_catalog.<>) 'search_path'
   AND NOT pg_catalog.starts_with(s.name, 'transaction_')`;
export const PIN_SETTINGS = `SELECT pg_catalog.count(pg_catalog.set_config(p.name, p.value, false)) AS n FROM ROWS FROM (pg_catalog.unnest($1::pg_catalog.text[]), pg_catalog.unnest($2::pg_catalog.text[])) AS p(name, value)`;
export const pinnedParameters = (): [string[], string[]] => [Object.keys(PINNED), Object.values(PINNED)];
/**
 * TimescaleDB's own functions for a compressed chunk's default segmentby and orderby: a role's or
 * the database's setting may name a function of the database's own instead, which compress_chunk
 * would call while production's values are within reach.
 */
export const TIMESCALEDB_OWN_DEFAULTS =
  "SELECT pg_catalog.set_config('timescaledb.compression_segmentby_default_function', '_timescaledb_functions.get_segmentby_defaults', false), " +
  "pg_catalog.set_config('timescaledb.compression_orderby_default_function', '_timescaledb_functions.get_orderby_defaults', false)";

/**
 * Every table TimescaleDB's catalog lists as a chunk (of a hypertable, or holding one's compressed
 * rows), in whatever schema (a hypertable's associated_schema_name puts its chunks elsewhere than
 * _timescaledb_internal): their statistics go with their hypertable's.
 */
export const CHUNK_TABLES = `SELECT c.oid::int AS oid FROM _timescaledb_catalog.chunk ch
  JOIN pg_namespace n ON n.nspname = ch.schema_name JOIN pg_class c ON c.relnamespace = n.oid AND c.relname = ch.table_name`;
/**
 * What stands on the tables the preparation drops or makes anew, or goes with them: the chunks of
 * these hypertables ($1: oids; the masking decompresses each compressed one, which drops its
 * compressed table, compresses it again into a new one, and drops one left empty), the chunks of
 * these aggregates' materialization hypertables ($2: oids; dropped before the refresh) and these
 * tables ($3: names; left behind by TimescaleDB, or left empty, dropped). Whatever depends on one,
 * or on its row type, makes the drop fail (a view or rule reading it, a table inheriting from it or
 * with a column of its type, a foreign key, a function's SQL-standard body, a policy); what goes
 * with a table dropped whole is lost (an extended statistics object, a trigger or policy of the
 * database's own, a publication's membership). Compressed tables, aggregates' chunks and the tables
 * named are dropped whole; a masked hypertable's chunk only when left empty.
 */
/** An index's definition (`i`, a pg_index row) past its name and table: "USING btree (time DESC)", the same for a chunk's copy as for its hypertable's. */
const indexBody = (i: string) =>
  `pg_catalog.substr(pg_catalog.pg_get_indexdef(${i}.indexrelid), pg_catalog.strpos(pg_catalog.pg_get_indexdef(${i}.indexrelid), ' ON ' || ${i}.indrelid::regclass::text || ' ') + pg_catalog.length(' ON ' || ${i}.indrelid::regclass::text || ' '))`;
export const STANDING_ON_DROPPED = `WITH hypertables(id, whole) AS (
  SELECT h.id, false FROM _timescaledb_catalog.hypertable h
   WHERE to_regclass(format('%I.%I', h.schema_name, h.table_name))::oid = ANY($1::oid[])
  UNION ALL SELECT h.id, true FROM _timescaledb_catalog.hypertable h
   WHERE to_regclass(format('%I.%I', h.schema_name, h.table_name))::oid = ANY($2::oid[])),
dropped(oid, whole, compressed) AS (
  SELECT to_regclass(format('%I.%I', ch.schema_name, ch.table_name))::oid, h.whole, false
    FROM hypertables h JOIN _timescaledb_catalog.chunk ch ON ch.hypertable_id = h.id
   WHERE h.whole OR ch.compressed_chunk_id IS NOT NULL
  UNION ALL SELECT to_regclass(format('%I.%I', cc.schema_name, cc.table_name))::oid, true, true
    FROM hypertables h JOIN _timescaledb_catalog.chunk ch ON ch.hypertable_id = h.id
    JOIN _timescaledb_catalog.chunk cc ON cc.id = ch.compressed_chunk_id
  UNION ALL SELECT to_regclass(t)::oid, true, false FROM unnest($3::text[]) t),
-- Each table, its row type and that type's array type: what a dependent names.
tables(cls, obj, rel) AS (
  SELECT 'pg_class'::regclass::oid, d.oid, d.oid FROM dropped d WHERE d.oid IS NOT NULL
  UNION ALL SELECT 'pg_type'::regclass::oid, c.reltype, c.oid FROM dropped d JOIN pg_class c ON c.oid = d.oid
  UNION ALL SELECT 'pg_type'::regclass::oid, t.typarray, c.oid FROM dropped d JOIN pg_class c ON c.oid = d.oid
    JOIN pg_type t ON t.oid = c.reltype WHERE t.typarray <> 0),
-- What is the table's own and goes with it (its constraints, indexes, defaults, triggers, a sequence OWNED BY its column).
own(cls, obj, rel) AS (SELECT g.classid, g.objid, t.rel FROM tables t, LATERAL (${goesWith("t.obj")}) g WHERE t.cls = 'pg_class'::regclass),
-- What stands on either goes too, or stops the drop.
targets(cls, obj, rel) AS (SELECT * FROM tables UNION ALL SELECT * FROM own),
found AS (
  SELECT CASE WHEN k.classid = 'pg_rewrite'::regclass
              THEN (SELECT CASE v.relkind WHEN 'v' THEN 'view' WHEN 'm' THEN 'materialized view' ELSE 'a rule of' END || format(' %I.%I', vn.nspname, v.relname)
                      FROM pg_rewrite w JOIN pg_class v ON v.oid = w.ev_class JOIN pg_namespace vn ON vn.oid = v.relnamespace WHERE w.oid = k.objid)
              ELSE pg_describe_object(k.classid, k.objid, k.objsubid) END AS what,
         t.rel
    FROM targets t JOIN pg_depend k ON k.refclassid = t.cls AND k.refobjid = t.obj AND k.deptype = 'n'
   -- Not the tables themselves, nor what is the table's own.
   WHERE NOT (k.classid = 'pg_class'::regclass AND k.objid IN (SELECT oid FROM dropped))
     AND NOT EXISTS (SELECT 1 FROM own o WHERE o.cls = k.classid AND o.obj = k.objid AND o.rel = t.rel)
  UNION ALL SELECT format('statistics %I.%I', xn.nspname, x.stxname), x.stxrelid
    FROM pg_statistic_ext x JOIN pg_namespace xn ON xn.oid = x.stxnamespace
   WHERE x.stxrelid IN (SELECT oid FROM dropped WHERE whole)
  -- Not a hypertable's trigger, which TimescaleDB copies to each chunk (a new one too), nor an extension's (TimescaleDB's
  -- invalidation trigger on an aggregate's chunks under another): both are made again.
  UNION ALL SELECT format('trigger %I', tg.tgname), tg.tgrelid FROM pg_trigger tg
   WHERE NOT tg.tgisinternal AND tg.tgrelid IN (SELECT oid FROM dropped WHERE whole)
     AND NOT EXISTS (SELECT 1 FROM pg_depend e WHERE e.classid = 'pg_proc'::regclass AND e.objid = tg.tgfoid AND e.deptype = 'e')
     AND NOT ${copyOfHypertables("tg")}
  UNION ALL SELECT format('rule %I', r.rulename), r.ev_class FROM pg_rewrite r
   WHERE r.ev_class IN (SELECT oid FROM dropped WHERE whole) AND r.rulename <> '_RETURN'
  -- A chunk's index that is not the copy of one of its hypertable's (a compressed chunk's are TimescaleDB's own, made again).
  UNION ALL SELECT format('index %I.%I', xn.nspname, x.relname), i.indrelid
    FROM pg_index i JOIN pg_class x ON x.oid = i.indexrelid JOIN pg_namespace xn ON xn.oid = x.relnamespace
    JOIN pg_inherits h ON h.inhrelid = i.indrelid
    JOIN _timescaledb_catalog.hypertable ht ON format('%I.%I', ht.schema_name, ht.table_name)::regclass = h.inhparent
   WHERE i.indrelid IN (SELECT oid FROM dropped WHERE whole AND NOT compressed)
     AND NOT EXISTS (SELECT 1 FROM pg_index hi WHERE hi.indrelid = h.inhparent
                       AND ${indexBody("i")} = ${indexBody("hi")})
  UNION ALL SELECT format('policy %I', p.polname), p.polrelid FROM pg_policy p WHERE p.polrelid IN (SELECT oid FROM dropped WHERE whole)
  UNION ALL SELECT format('publication %I''s membership', pub.pubname), r.prrelid
    FROM pg_publication_rel r JOIN pg_publication pub ON pub.oid = r.prpubid WHERE r.prrelid IN (SELECT oid FROM dropped WHERE whole))
SELECT DISTINCT f.what, format('%I.%I', n.nspname, c.relname) AS "on"
  FROM found f JOIN pg_class c ON c.oid = f.rel JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE f.what IS NOT NULL
 ORDER BY 2, 1`;

/**
 * The routines whose SQL-standard body (BEGIN ATOMIC, RETURN) reads a chunk's table, names its row
 * type or reads what goes with it (a sequence owned by its column): held off, they are made anew
 * without the dependency, so nothing stops the masking from dropping that table, and they cannot be
 * given back after.
 */
export const ROUTINES_ON_CHUNKS = `SELECT DISTINCT p.oid::regprocedure::text AS routine, format('%I.%I', n.nspname, c.relname) AS "on"
  FROM _timescaledb_catalog.chunk ch JOIN pg_namespace n ON n.nspname = ch.schema_name
  JOIN pg_class c ON c.relnamespace = n.oid AND c.relname = ch.table_name
  JOIN pg_type rt ON rt.oid = c.reltype
  JOIN pg_depend d ON d.deptype = 'n' AND d.classid = 'pg_proc'::regclass
   AND ((d.refclassid = 'pg_class'::regclass AND d.refobjid = c.oid) OR (d.refclassid = 'pg_type'::regclass AND d.refobjid IN (rt.oid, rt.typarray))
        -- or what goes with the table (a sequence OWNED BY its column)
        OR (d.refclassid, d.refobjid) IN (${goesWith("c.oid")}))
  JOIN pg_proc p ON p.oid = d.objid
 ORDER BY 2, 1`;
/** Whether no chunk of a hypertable ($1 schema, $2 name) holds rows outside its compressed batches: then none is left to analyse it by once they are compressed again. */
export const ALL_CHUNKS_COMPRESSED = `SELECT coalesce(bool_and(is_compressed), false) AS all
  FROM timescaledb_information.chunks WHERE hypertable_schema = $1 AND hypertable_name = $2`;
/**
 * The chunks of these hypertables ($1: oids) left empty, not compressed, that hold statistics (an
 * erasure's DELETE emptied them in production, and ANALYZE keeps an empty table's): TimescaleDB lets
 * no chunk's column be retyped, so such a chunk, holding nothing, is dropped. Read after ANALYZE
 * (reltuples 0); each is looked at again before it is dropped.
 */
export interface EmptyChunk {
  oid: number;
  chunk: Quoted;
  hypertable: string;
  drop: ServerStatement;
}
export const EMPTY_CHUNKS_WITH_STATISTICS = `SELECT c.oid::int AS oid, format('%I.%I', ch.chunk_schema, ch.chunk_name) AS chunk,
       format('%I.%I', ch.hypertable_schema, ch.hypertable_name) AS hypertable,
       format('DROP TABLE %I.%I', ch.chunk_schema, ch.chunk_name) AS "drop"
  FROM timescaledb_information.chunks ch
  JOIN pg_namespace n ON n.nspname = ch.chunk_schema JOIN pg_class c ON c.relnamespace = n.oid AND c.relname = ch.chunk_name
 WHERE format('%I.%I', ch.hypertable_schema, ch.hypertable_name)::regclass::oid = ANY($1::oid[]) AND NOT ch.is_compressed AND c.reltuples = 0
   AND EXISTS (SELECT 1 FROM pg_stats s WHERE s.schemaname = ch.chunk_schema AND s.tablename = ch.chunk_name)
 ORDER BY 1`;

/** The compressed chunks of a hypertable ($1 schema, $2 name), if it is one. */
export const COMPRESSED_CHUNKS = `SELECT format('%I.%I', chunk_schema, chunk_name) AS chunk
  FROM timescaledb_information.chunks WHERE hypertable_schema = $1 AND hypertable_name = $2 AND is_compressed ORDER BY range_start`;
/** TimescaleDB's routines the preparation calls, qualified by the extension's schema (where an overload of the database's own would be chosen instead). */
export const TIMESCALEDB_ROUTINES = [
  "alter_job",
  "compress_chunk",
  "decompress_chunk",
  "disable_chunk_skipping",
  "enable_chunk_skipping",
  "refresh_continuous_aggregate",
];
/** Routines named as those ($1) in TimescaleDB's schema that are not the extension's own: a call meant for TimescaleDB's could run one of them. */
export const SHADOWED_ROUTINES = `SELECT p.oid::regprocedure::text AS routine, pg_get_userbyid(p.proowner) AS owner
  FROM pg_proc p JOIN pg_extension e ON e.extname = 'timescaledb' AND p.pronamespace = e.extnamespace
 WHERE p.proname = ANY($1::name[])
   AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid
                     AND d.refclassid = 'pg_extension'::regclass AND d.refobjid = e.oid AND d.deptype = 'e')
 ORDER BY 1`;
export const decompressChunk = (ts: Quoted) => `SELECT ${ts}.decompress_chunk($1::regclass)`;
export const compressChunk = (ts: Quoted) => `SELECT ${ts}.compress_chunk($1::regclass)`;
export const alterJobUnscheduled = (ts: Quoted) => `SELECT ${ts}.alter_job($1, scheduled => false)`;
/**
 * The other sessions on this database whose role this one is a member of (a client's, one a
 * function opened through dblink, a TimescaleDB job's, which runs as its owner under its
 * application_name), ended, each waited for up to 2 s ($1: whether TimescaleDB is there); those
 * whose role it is no member of, counted: after a failure, before the record is made again, what
 * still runs beside the preparation could drop it.
 */
export const endOtherSessions = (timescaledb: boolean) => `WITH others AS (
  SELECT a.pid, pg_has_role(a.usesysid, 'MEMBER') AND NOT r.rolsuper AS ours
    FROM pg_stat_activity a JOIN pg_roles r ON r.oid = a.usesysid
   WHERE a.datname = current_database() AND a.pid <> pg_backend_pid()
     AND (a.backend_type = 'client backend'${
       timescaledb ? " OR a.backend_type IN (SELECT application_name FROM timescaledb_information.jobs)" : ""
     }))
SELECT count(*) FILTER (WHERE ours AND pg_terminate_backend(pid, 2000))::int AS ended, count(*) FILTER (WHERE NOT ours)::int AS left FROM others`;

/** The tables holding a hypertable's compressed rows ($1 schema, $2 name): their statistics keep segmentby columns' values, and a hypertable's ANALYZE leaves them. */
export const COMPRESSED_TABLES = `SELECT c.oid::int AS oid, cc.schema_name AS schema, cc.table_name AS name, format('%I.%I', cc.schema_name, cc.table_name) AS quoted, 'r' AS kind
  FROM _timescaledb_catalog.hypertable h
  JOIN _timescaledb_catalog.chunk ch ON ch.hypertable_id = h.id
  JOIN _timescaledb_catalog.chunk cc ON cc.id = ch.compressed_chunk_id
  JOIN pg_class c ON c.oid = format('%I.%I', cc.schema_name, cc.table_name)::regclass
 WHERE h.schema_name = $1 AND h.table_name = $2`;

/**
 * The functions of the database's own: made by a role that is not a superuser, or made by anyone and
 * no extension's (an extension's functions its owner, a superuser, installed are PostgreSQL's kin).
 */
/** Where a parsed expression (pg_node_tree as text) calls a function: its own, an operator's, an aggregate's or a window function's. */
const CALLED = ":(?:funcid|opfuncid|aggfnoid|winfnoid) ([0-9]+)";
/** Every type inside a type: a domain's base, an array's element, a multirange's range, a composite's fields. */
const INNER_TYPES = `inner_types(outer_type, inner_type) AS (
  SELECT oid, typbasetype FROM pg_type WHERE typtype = 'd'
  UNION ALL SELECT oid, typelem FROM pg_type WHERE typelem <> 0
  UNION ALL SELECT rngmultitypid, rngtypid FROM pg_range
  UNION ALL SELECT rngtypid, rngsubtype FROM pg_range
  UNION ALL SELECT y.oid, a.atttypid FROM pg_type y JOIN pg_attribute a ON a.attrelid = y.typrelid
             WHERE y.typtype = 'c' AND a.attnum > 0 AND NOT a.attisdropped)`;

/** What to_json, to_jsonb and their kin convert a value to through its type's cast, looked up as they run. */
const JSON_TYPES = "('pg_catalog.json'::pg_catalog.regtype, 'pg_catalog.jsonb'::pg_catalog.regtype)";
/**
 * Where a parsed expression names a type: a column's, a constant's or a parameter's, a function's,
 * an operator's or an aggregate's result, a cast's (to a domain, say), a row's, an array's. PostgreSQL's
 * own types (below 16384) hold nothing of the database's own.
 */
const TYPES_NAMED =
  ":(?:vartype|consttype|paramtype|funcresulttype|opresulttype|aggtype|wintype|resulttype|row_typeid|casetype|array_typeid|element_typeid|coalescetype|minmaxtype|type) ([0-9]+)";
/** Where a parsed expression names an operator: the planner may put its negator (NOT a = b) or its commutator in its place. */
const OPERATORS_NAMED = ":opno ([0-9]+)";
/** Each operator and the functions it may run as: its own, its negator's, its commutator's and that one's negator's. */
const OPERATOR_FUNCTIONS = `operator_functions(op, fn) AS (
  SELECT o.oid, f.fn FROM pg_operator o
    LEFT JOIN pg_operator ng ON ng.oid = o.oprnegate LEFT JOIN pg_operator cm ON cm.oid = o.oprcom LEFT JOIN pg_operator cn ON cn.oid = cm.oprnegate,
    unnest(ARRAY[o.oprcode, ng.oprcode, cm.oprcode, cn.oprcode]::oid[]) f(fn)
   WHERE f.fn IS NOT NULL AND f.fn <> 0)`;

/** What a type leads to: the types inside it (INNER_TYPES), and those its domain's CHECK names. */
const TYPE_EDGES = `type_edges(outer_type, inner_type) AS (
  SELECT outer_type, inner_type FROM inner_types
  UNION ALL SELECT k.contypid, m[1]::oid FROM pg_constraint k, regexp_matches(k.conbin::text, '${TYPES_NAMED}', 'g') m
   WHERE k.contypid <> 0 AND m[1]::oid >= 16384)`;

/**
 * What the parsed expressions of trees(key, tree) (given as a query) can run, as calls(key, fn),
 * PostgreSQL's functions among them: the functions they name (their own, an operator's, an
 * aggregate's, a window function's), the operators' negators' and commutators', and what their
 * types run: a domain's CHECK (and what that runs, at any depth: the types it names in turn), a
 * range type's subtype_diff and canonical (ANALYZE and GiST indexes call them), a cast to json
 * (to_json and its kin look it up as they run, so no parsed form names it). A tree may name a type
 * alone, ':vartype <oid>' (a column's). CTEs to follow a WITH RECURSIVE.
 */
const callsOf = (trees: string) => `${INNER_TYPES},
${OPERATOR_FUNCTIONS},
${TYPE_EDGES},
trees(key, tree) AS (${trees}),
tree_types(key, typ) AS (
  SELECT t.key, m[1]::oid FROM trees t, regexp_matches(t.tree, '${TYPES_NAMED}', 'g') m WHERE m[1]::oid >= 16384
  UNION SELECT t.key, e.inner_type FROM tree_types t JOIN type_edges e ON e.outer_type = t.typ),
all_trees(key, tree) AS (
  SELECT key, tree FROM trees
  UNION ALL SELECT t.key, k.conbin::text FROM tree_types t JOIN pg_constraint k ON k.contypid = t.typ),
calls(key, fn) AS (
  SELECT a.key, m[1]::oid FROM all_trees a, regexp_matches(a.tree, '${CALLED}', 'g') m
  UNION SELECT a.key, o.fn FROM all_trees a, regexp_matches(a.tree, '${OPERATORS_NAMED}', 'g') m, operator_functions o WHERE o.op = m[1]::oid
  UNION SELECT t.key, f.fn FROM tree_types t JOIN pg_range g ON g.rngtypid = t.typ, unnest(ARRAY[g.rngsubdiff, g.rngcanonical]::oid[]) f(fn)
   WHERE f.fn <> 0
  UNION SELECT t.key, c.castfunc FROM tree_types t JOIN pg_cast c ON c.castsource = t.typ AND c.casttarget IN ${JSON_TYPES} WHERE c.castfunc <> 0)`;

/**
 * The functions that run what no dependency records: PostgreSQL's that run a query given as text
 * (the XML exports, ts_stat, ts_rewrite) or a type's input named by an oid at run time (record_in,
 * domain_in, array_in, range_in and their binary kin: its domains' CHECKs run), or parse a body
 * named by an oid (a language's validator, fmgr_sql_validator, plpgsql_validator: the parse of a
 * constant such as '(x)'::a_composite runs its domains' CHECKs, and their functions, which the
 * preparation may not have held off); TimescaleDB's cagg_validate_query, which parses a query given
 * as text, likewise; and every function
 * of the extensions whose C library runs a query given as text (tablefunc's crosstab and connectby,
 * which writes its field names into its query as given; dblink's; xml2's xpath_table), in whatever
 * schema the extension was made (tablefunc is trusted: the database's owner makes it, in public);
 * and TimescaleDB's that take a relation or function by name or oid (regclass, name, regproc, oid),
 * a job's or policy's configuration (jsonb, which names a hypertable by its id) or are a policy's:
 * they run what its catalog names at run time (subtract_integer_from_now, show_chunks and
 * policy_retention_check a hypertable's integer_now function, which may be the database's own).
 */
const TEXT_QUERIES = `SELECT p.oid FROM pg_proc p
 WHERE (p.pronamespace = 'pg_catalog'::regnamespace
        AND p.proname ~ '^(.*_to_xml.*|ts_stat|ts_rewrite|crosstab[0-9]*|connectby|dblink.*|xpath_table|(record|domain|array|range|multirange)_(in|recv)|.*_validator)$')
    OR (p.prolang = (SELECT oid FROM pg_language WHERE lanname = 'c') AND p.probin ~ '(^|/)(tablefunc|dblink|pgxml)([.]so)?$')
    OR ((p.proargtypes::oid[] && ARRAY['pg_catalog.regclass'::regtype, 'pg_catalog.name'::regtype, 'pg_catalog.regproc'::regtype,
                                       'pg_catalog.regprocedure'::regtype, 'pg_catalog.oid'::regtype, 'pg_catalog.jsonb'::regtype]::oid[]
         OR p.proname ~ '^(policy_.*|cagg_validate_query)$')
        AND EXISTS (SELECT 1 FROM pg_depend e JOIN pg_extension x ON x.oid = e.refobjid
                     WHERE e.classid = 'pg_proc'::regclass AND e.objid = p.oid AND e.refclassid = 'pg_extension'::regclass
                       AND e.deptype = 'e' AND x.extname = 'timescaledb'))`;

const OWN_FUNCTIONS = `SELECT f.oid FROM pg_proc f JOIN pg_roles r ON r.oid = f.proowner
   WHERE f.oid >= 16384
     AND (NOT r.rolsuper OR NOT EXISTS (SELECT 1 FROM pg_depend e WHERE e.classid = 'pg_proc'::regclass AND e.objid = f.oid AND e.deptype = 'e'))`;

/**
 * What reads what among views, materialized views and continuous aggregates: for each view and
 * materialized view, the relations its query reads and whether it calls a function of the
 * database's own (not PostgreSQL's or an extension's: what it reads cannot be told). A
 * continuous aggregate is its materialization hypertable, which reads what its query (its direct
 * view) reads; `view` is what it is refreshed by.
 */
export const READS = `WITH RECURSIVE own AS (${OWN_FUNCTIONS}),
text_queries AS (${TEXT_QUERIES}),
user_rules AS (SELECT w.oid, w.ev_class, w.ev_action FROM pg_rewrite w JOIN pg_class c ON c.oid = w.ev_class
                WHERE c.relnamespace NOT IN ('pg_catalog'::regnamespace, 'information_schema'::regnamespace)),
-- What a view's query reads, and the partitions and inheritance children under it: the planner evaluates their CHECKs (constraint exclusion).
read_tree(rule, rel) AS (
  SELECT w.oid, d.refobjid FROM user_rules w
    JOIN pg_depend d ON d.classid = 'pg_rewrite'::regclass AND d.objid = w.oid AND d.refclassid = 'pg_class'::regclass
  UNION SELECT t.rule, i.inhrelid FROM read_tree t JOIN pg_inherits i ON i.inhparent = t.rel),
-- What a view's query runs (its rule's parsed form, the types it makes or casts to, its columns'),
-- and what its indexes and extended statistics run (its refresh and ANALYZE run them).
${callsOf(`
  SELECT w.oid, w.ev_action::text FROM user_rules w
  UNION ALL SELECT w.oid, ':vartype ' || d.refobjid FROM pg_depend d JOIN user_rules w ON w.oid = d.objid
   WHERE d.classid = 'pg_rewrite'::regclass AND d.refclassid = 'pg_type'::regclass
  UNION ALL SELECT w.oid, ':vartype ' || a.atttypid FROM user_rules w JOIN pg_attribute a ON a.attrelid = w.ev_class AND a.attnum > 0 AND NOT a.attisdropped
  UNION ALL SELECT w.oid, coalesce(i.indexprs::text, '') || coalesce(i.indpred::text, '') FROM user_rules w JOIN pg_index i ON i.indrelid = w.ev_class
  UNION ALL SELECT w.oid, coalesce(x.stxexprs::text, '') FROM user_rules w JOIN pg_statistic_ext x ON x.stxrelid = w.ev_class
  UNION ALL SELECT t.rule, k.conbin::text FROM read_tree t JOIN pg_constraint k ON k.conrelid = t.rel AND k.contype = 'c'`)}
SELECT w.ev_class::int AS oid, n.nspname AS schema, c.relname AS name, format('%I.%I', n.nspname, c.relname) AS quoted, c.relkind::text AS kind,
       coalesce(array_agg(DISTINCT d.refobjid::int) FILTER (WHERE d.refclassid = 'pg_class'::regclass AND d.refobjid <> w.ev_class), '{}') AS reads,
       -- What it reads cannot be told: it calls a function of the database's own, or one running a query given as text.
       EXISTS (SELECT 1 FROM pg_rewrite r JOIN calls k ON k.key = r.oid
                WHERE r.ev_class = w.ev_class AND (k.fn IN (SELECT oid FROM own) OR k.fn IN (SELECT oid FROM text_queries))) AS opaque,
       c.relkind <> 'm' OR c.relispopulated AS populated,
       -- What ANALYZE keeps, as a reader sees it (the tables under these views only a superuser reads).
       coalesce(bool_or(d.refclassid = 'pg_class'::regclass AND d.refobjid IN (
         'pg_catalog.pg_stats'::regclass, 'pg_catalog.pg_stats_ext'::regclass, 'pg_catalog.pg_stats_ext_exprs'::regclass,
         'pg_catalog.pg_statistic'::regclass, 'pg_catalog.pg_statistic_ext'::regclass, 'pg_catalog.pg_statistic_ext_data'::regclass)), false) AS statistics
  FROM pg_rewrite w JOIN pg_class c ON c.oid = w.ev_class JOIN pg_namespace n ON n.oid = c.relnamespace
  LEFT JOIN pg_depend d ON d.classid = 'pg_rewrite'::regclass AND d.objid = w.oid
 WHERE c.relkind IN ('v', 'm') AND n.nspname NOT IN ('pg_catalog', 'information_schema')
 GROUP BY w.ev_class, n.nspname, c.relname, c.relkind, c.relispopulated`;
export const CONTINUOUS_AGGREGATES = `WITH RECURSIVE own AS (${OWN_FUNCTIONS}),
text_queries AS (${TEXT_QUERIES}),
materialized AS (SELECT ca.*, m.schema_name, m.table_name, format('%I.%I', m.schema_name, m.table_name)::regclass::oid AS mat
                   FROM _timescaledb_catalog.continuous_agg ca JOIN _timescaledb_catalog.hypertable m ON m.id = ca.mat_hypertable_id),
-- A trigger of its materialization hypertable, its function or its WHEN: its refresh runs them.
${callsOf(`
  SELECT t.tgrelid, ':funcid ' || t.tgfoid || ' ' || coalesce(t.tgqual::text, '') FROM pg_trigger t JOIN materialized m ON m.mat = t.tgrelid
   WHERE NOT t.tgisinternal
  -- Its indexes' and extended statistics' expressions (a domain's CHECK through a cast): its refresh and ANALYZE run them.
  UNION ALL SELECT m.mat, coalesce(i.indexprs::text, '') || coalesce(i.indpred::text, '') FROM materialized m JOIN pg_index i ON i.indrelid = m.mat
  UNION ALL SELECT m.mat, coalesce(x.stxexprs::text, '') FROM materialized m JOIN pg_statistic_ext x ON x.stxrelid = m.mat
  -- A dimension added to it, partitioned by a function: each row the refresh inserts is routed through it.
  UNION ALL SELECT m.mat, ':funcid ' || p.oid FROM materialized m JOIN _timescaledb_catalog.dimension d ON d.hypertable_id = m.mat_hypertable_id
    JOIN pg_namespace n ON n.nspname = d.partitioning_func_schema JOIN pg_proc p ON p.pronamespace = n.oid AND p.proname = d.partitioning_func`)}
SELECT format('%I.%I', m.user_view_schema, m.user_view_name) AS view,
       format('%I.%I', m.direct_view_schema, m.direct_view_name)::regclass::oid::int AS direct,
       m.mat::int AS oid, m.schema_name AS schema, m.table_name AS name, format('%I.%I', m.schema_name, m.table_name) AS quoted,
       -- Or a query given as text (PostgreSQL's): what it reads cannot be told, so it is refreshed once every other view is.
       EXISTS (SELECT 1 FROM calls k WHERE k.key = m.mat AND (k.fn IN (SELECT oid FROM own) OR k.fn IN (SELECT oid FROM text_queries))) AS "runsOwn"
  FROM materialized m`;
/**
 * The hypertables a dimension of which is partitioned by a function of the database's own (a space
 * dimension's partitioning_func, or a time dimension's): TimescaleDB's planner calls it, through
 * the function manager (no EXECUTE is checked), when it prunes chunks for a query reading them; so
 * what reads one runs that function.
 */
export const PARTITIONED_BY_OWN = `WITH own AS (${OWN_FUNCTIONS})
SELECT DISTINCT format('%I.%I', h.schema_name, h.table_name)::regclass::oid::int AS oid
  FROM _timescaledb_catalog.dimension d JOIN _timescaledb_catalog.hypertable h ON h.id = d.hypertable_id
  JOIN pg_namespace n ON n.nspname = d.partitioning_func_schema JOIN pg_proc p ON p.pronamespace = n.oid AND p.proname = d.partitioning_func
 WHERE p.oid IN (SELECT oid FROM own)`;
/**
 * A whole refresh (force: even what it holds as up to date), which cannot run inside a transaction
 * nor take a parameter (it commits; a bound CALL may not): the view's name is put in a setting of
 * the session by SET_REFRESHED (a parameter) and read back by the CALL, never written into its text.
 */
export const SET_REFRESHED = `SELECT pg_catalog.set_config('tigercloud.refreshed', $1, false)`;
export const refreshContinuousAggregate = (ts: Quoted) =>
  `CALL ${ts}.refresh_continuous_aggregate(pg_catalog.current_setting('tigercloud.refreshed')::pg_catalog.regclass, NULL, NULL, force => true)`;

/**
 * An aggregate's materialization chunks ($1 schema, $2 name), whether compressed, and the
 * statement that drops each: emptied before its refresh, so that no trigger or rule of its
 * table (TimescaleDB lets none be held off there) ever sees production's rows, and no compressed
 * chunk or statistics of them outlives it. DROP TABLE runs no trigger.
 */
export interface AggregateChunk {
  chunk: Quoted;
  compressed: boolean;
  start: string | null;
  start_integer: string | null;
  drop: ServerStatement;
}
export const AGGREGATE_CHUNKS = `SELECT format('%I.%I', chunk_schema, chunk_name) AS chunk, is_compressed AS compressed, range_start::text AS start,
       range_start_integer::text AS start_integer, format('DROP TABLE %I.%I', chunk_schema, chunk_name) AS "drop"
  FROM timescaledb_information.chunks WHERE hypertable_schema = $1 AND hypertable_name = $2 ORDER BY range_start, range_start_integer`;

/**
 * An emptied continuous aggregate's materialization hypertable ($1 schema, $2 name) keeps the
 * statistics of its whole, made from its chunks' rows outside compressed batches (production's:
 * ANALYZE with no chunk under it keeps them). `held`: it holds some. The placeholder, a table of its
 * columns in the preparation's record ($3) holding a row of its time bucket alone (its other columns
 * NULL), attached as its chunk (`slices`: its range, from the epoch; no trigger runs, as an INSERT's
 * would), gives it, analysed, statistics of nothing of production's. (Compressed chunks are no
 * children of the hypertable of compressed rows: it has none.)
 */
export const AGGREGATE_ROOT_STATISTICS = `SELECT EXISTS (SELECT 1 FROM pg_stats s WHERE s.schemaname = h.schema_name AND s.tablename = h.table_name) AS held,
       format('%I.%I', $3::text, 'placeholder_' || h.id) AS placeholder,
       format('CREATE TABLE %I.%I (LIKE %I.%I)', $3::text, 'placeholder_' || h.id, h.schema_name, h.table_name) AS make,
       format('INSERT INTO %I.%I (%I) VALUES (%L::%s)', $3::text, 'placeholder_' || h.id, d.column_name, CASE WHEN i THEN '0' ELSE 'epoch' END, d.column_type) AS fill,
       jsonb_build_object(d.column_name, CASE WHEN i THEN jsonb_build_array(0, d.interval_length)
         ELSE jsonb_build_array('1970-01-01 00:00:00+00', to_char((timestamptz 'epoch' + d.interval_length * interval '1 microsecond') AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || '+00') END)::text AS slices,
       -- What would run on the placeholder's row, or refuse it: a domain's DEFAULT or constraints (its columns' types or
       -- those under them), a CHECK constraint, an expression of an index or statistics object, a NOT NULL column beside
       -- its time bucket, a dimension but its first.
       ARRAY(SELECT format('column %I of the domain %s', a.attname, a.atttypid::regtype) FROM pg_attribute a
              WHERE a.attrelid = m.oid AND a.attnum > 0 AND NOT a.attisdropped
                AND EXISTS (WITH RECURSIVE under(t) AS (SELECT a.atttypid UNION SELECT y.typbasetype FROM under JOIN pg_type y ON y.oid = under.t WHERE y.typtype = 'd')
                            SELECT 1 FROM under JOIN pg_type y ON y.oid = under.t
                             WHERE y.typtype = 'd' AND (y.typdefaultbin IS NOT NULL OR y.typnotnull OR EXISTS (SELECT 1 FROM pg_constraint k WHERE k.contypid = y.oid)))
             UNION ALL SELECT format('constraint %I', k.conname) FROM pg_constraint k WHERE k.conrelid = m.oid AND k.contype = 'c'
             -- An index's expressions and predicate run as the chunk's index is built, a statistics object's in ANALYZE.
             UNION ALL SELECT format('index %s on an expression or with a predicate', x.indexrelid::regclass) FROM pg_index x
              WHERE x.indrelid = m.oid AND (x.indexprs IS NOT NULL OR x.indpred IS NOT NULL)
             UNION ALL SELECT format('statistics object %I.%I on an expression', (SELECT nspname FROM pg_namespace WHERE oid = e.stxnamespace), e.stxname)
               FROM pg_statistic_ext e WHERE e.stxrelid = m.oid AND e.stxexprs IS NOT NULL
             UNION ALL SELECT format('NOT NULL column %I', a.attname) FROM pg_attribute a
              WHERE a.attrelid = m.oid AND a.attnum > 0 AND NOT a.attisdropped AND a.attnotnull AND a.attname <> d.column_name
             UNION ALL SELECT format('%s dimensions', count(*)) FROM _timescaledb_catalog.dimension x WHERE x.hypertable_id = h.id HAVING count(*) > 1) AS hazards,
       format('DROP TABLE %I.%I', $3::text, 'placeholder_' || h.id) AS "drop"
  FROM _timescaledb_catalog.hypertable h
  JOIN _timescaledb_catalog.dimension d ON d.hypertable_id = h.id AND d.interval_length IS NOT NULL,
  LATERAL (SELECT d.column_type IN ('smallint'::regtype, 'integer'::regtype, 'bigint'::regtype) AS i, format('%I.%I', h.schema_name, h.table_name)::regclass AS oid) m(i, oid)
 WHERE h.schema_name = $1 AND h.table_name = $2
 ORDER BY d.id LIMIT 1`;
export interface AggregateRootStatistics {
  held: boolean;
  /** What would run on its row, or refuse it (a refusal: GUARDS.aggregatePlaceheld). */
  hazards: string[];
  placeholder: Quoted;
  make: ServerStatement;
  fill: ServerStatement;
  slices: string;
  drop: ServerStatement;
}
/** A table attached as a hypertable's chunk ($1 hypertable, $2 table, $3 its slices as jsonb): no row of it is inserted again. */
export const attachChunk = (ts: Quoted) => `CALL ${ts}.attach_chunk($1::regclass, $2::regclass, $3::jsonb)`;

export const refreshMaterializedView = (view: Quoted) => `REFRESH MATERIALIZED VIEW ${view}`;
/** A materialized view emptied (and left unpopulated): its old rows gone before any view is refreshed. */
export const emptyMaterializedView = (view: Quoted) => `REFRESH MATERIALIZED VIEW ${view} WITH NO DATA`;
/**
 * Materialized views left unpopulated (REFRESH … WITH NO DATA, or made so) that hold statistics
 * (their own, their indexes', extended ones): an emptied table keeps its old ones, production's. Their statistics are made again from the
 * masked data (populated, analysed, emptied again).
 */
export const UNPOPULATED_WITH_STATISTICS = `SELECT c.oid::int AS oid, n.nspname AS schema, c.relname AS name, format('%I.%I', n.nspname, c.relname) AS quoted, 'm' AS kind
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE c.relkind = 'm' AND NOT c.relispopulated AND n.nspname NOT IN ('pg_catalog', 'information_schema')
   AND (EXISTS (SELECT 1 FROM pg_stats s JOIN pg_class x ON x.relname = s.tablename AND x.relnamespace = n.oid
                 WHERE s.schemaname = n.nspname AND (x.oid = c.oid OR x.oid IN (SELECT indexrelid FROM pg_index WHERE indrelid = c.oid)))
        OR EXISTS (SELECT 1 FROM pg_stats_ext e WHERE e.schemaname = n.nspname AND e.tablename = c.relname)
        OR EXISTS (SELECT 1 FROM pg_stats_ext_exprs e WHERE e.schemaname = n.nspname AND e.tablename = c.relname))
 ORDER BY 2, 3`;

/** Who may do what with a materialized view ($1: its oid), as one text: the same after it is made again, or it was not made as it was. */
export const VIEW_PRIVILEGES = `SELECT pg_get_userbyid(c.relowner) || ';' ||
       coalesce((SELECT string_agg(e, ',' ORDER BY e) FROM (
                   SELECT format('%s/%s/%s/%s', a.grantor, a.grantee, a.privilege_type, a.is_grantable) AS e
                     FROM aclexplode(coalesce(c.relacl, acldefault('r', c.relowner))) a
                   UNION ALL SELECT format('%s:%s/%s/%s/%s', t.attname, g.grantor, g.grantee, g.privilege_type, g.is_grantable)
                     FROM pg_attribute t, aclexplode(t.attacl) g WHERE t.attrelid = c.oid AND t.attacl IS NOT NULL) x), '') AS privileges
  FROM pg_class c WHERE c.oid = $1::oid`;
/** These relations ($1: oids): their names, and whether each is a materialized view left unpopulated. */
export const RELATIONS = `SELECT c.oid::int AS oid, format('%I.%I', n.nspname, c.relname) AS place, c.relkind = 'm' AND NOT c.relispopulated AS unpopulated
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = ANY($1::oid[])`;
/** A materialized view's oid, by its name as the server quoted it ($1). */
export const VIEW_OID = `SELECT $1::text::regclass::oid::int AS oid`;

/**
 * Materialized views ($1: oids) to be made again WITH NO DATA: the only way, for a role that is not
 * a superuser, to drop the statistics a view keeps through REFRESH … WITH NO DATA and ANALYZE of it
 * empty. `make`: its DROP, then its CREATE from its definition (columns, access method, storage
 * options, tablespace), its owner, its privileges (a table's and its columns'), comments, columns'
 * settings, indexes and extended statistics as they were. `readers`: the relations whose queries
 * read it; `others`: whatever else its DROP would take with it (a function's body, a column of its
 * row type, an extension it belongs to); `grantors`: roles other than its owner that granted on it
 * (a grant made again is its owner's).
 */
export const VIEWS_MADE_AGAIN_EMPTY = `WITH v AS (
  SELECT c.*, n.nspname, format('%I.%I', n.nspname, c.relname) AS q FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
   WHERE c.oid = ANY($1::oid[]) AND c.relkind = 'm'),
-- Who must create in which schema to make it again: tsdbadmin and its owner in its own, tsdbadmin and their owners where its statistics objects are.
creators AS (
  SELECT DISTINCT x.view, x.ns, n.nspname, x.role, has_schema_privilege(x.role, x.ns, 'CREATE') AS may,
         pg_has_role(n.nspowner, 'USAGE') OR has_schema_privilege(x.ns, 'CREATE WITH GRANT OPTION') AS grantable
    FROM (SELECT v.oid, v.relnamespace, r FROM v, unnest(ARRAY[current_user::name, pg_get_userbyid(v.relowner)]) r
          UNION SELECT v.oid, e.stxnamespace, r FROM v JOIN pg_statistic_ext e ON e.stxrelid = v.oid, unnest(ARRAY[current_user::name, pg_get_userbyid(e.stxowner)]) r) x(view, ns, role)
    JOIN pg_namespace n ON n.oid = x.ns)
SELECT v.oid::int AS oid, v.q AS place, pg_has_role(v.relowner, 'USAGE') AS owned,
       -- tsdbadmin and the owners may create where it and its statistics objects are (CREATE and ALTER … OWNER TO ask it), or tsdbadmin may let them for as long.
       NOT EXISTS (SELECT 1 FROM creators c WHERE c.view = v.oid AND NOT c.may AND NOT c.grantable) AS ownable,
       coalesce(ARRAY(SELECT DISTINCT w.ev_class::int FROM pg_depend d JOIN pg_rewrite w ON w.oid = d.objid
                       WHERE d.classid = 'pg_rewrite'::regclass AND w.ev_class <> v.oid
                         AND ((d.refclassid = 'pg_class'::regclass AND d.refobjid = v.oid) OR (d.refclassid = 'pg_type'::regclass AND d.refobjid = v.reltype))),
                '{}') AS readers,
       ARRAY(SELECT DISTINCT pg_describe_object(d.classid, d.objid, d.objsubid) FROM pg_depend d
              WHERE d.classid <> 'pg_rewrite'::regclass AND d.deptype = 'n'
                AND ((d.refclassid = 'pg_class'::regclass AND d.refobjid = v.oid) OR (d.refclassid = 'pg_type'::regclass AND d.refobjid = v.reltype))
             UNION SELECT 'extension ' || quote_ident(e.extname) FROM pg_depend d JOIN pg_extension e ON e.oid = d.refobjid
              WHERE d.classid = 'pg_class'::regclass AND d.objid = v.oid AND d.deptype = 'e') AS others,
       ARRAY(SELECT DISTINCT pg_get_userbyid(a.grantor)::text FROM aclexplode(v.relacl) a WHERE a.grantor <> v.relowner
             UNION SELECT pg_get_userbyid(g.grantor)::text FROM pg_attribute t, aclexplode(t.attacl) g
              WHERE t.attrelid = v.oid AND t.attacl IS NOT NULL AND g.grantor <> v.relowner) AS grantors,
       format('DROP MATERIALIZED VIEW %s', v.q) AS "drop",
       -- What they may not create, let for as long (taken back last).
       ARRAY(SELECT format('GRANT CREATE ON SCHEMA %I TO %I', c.nspname, c.role) FROM creators c WHERE c.view = v.oid AND NOT c.may ORDER BY c.nspname, c.role)
       || array_remove(ARRAY[
         format('CREATE MATERIALIZED VIEW %s (%s) USING %I%s%s AS %s WITH NO DATA', v.q,
                (SELECT string_agg(quote_ident(a.attname), ', ' ORDER BY a.attnum) FROM pg_attribute a WHERE a.attrelid = v.oid AND a.attnum > 0 AND NOT a.attisdropped),
                (SELECT amname FROM pg_am WHERE oid = v.relam),
                coalesce(' WITH (' || (SELECT string_agg(format('%I = %L', split_part(o, '=', 1), substr(o, strpos(o, '=') + 1)), ', ') FROM unnest(v.reloptions) o) || ')', ''),
                CASE WHEN v.reltablespace <> 0 THEN format(' TABLESPACE %I', (SELECT spcname FROM pg_tablespace WHERE oid = v.reltablespace)) ELSE '' END,
                regexp_replace(pg_get_viewdef(v.oid), ';\\s*$', '')),
         format('ALTER MATERIALIZED VIEW %s OWNER TO %I', v.q, pg_get_userbyid(v.relowner)),
         format('REVOKE ALL ON %s FROM PUBLIC', v.q)], NULL)
       -- What its maker's default privileges granted, taken back; then its own grants, as they were.
       || ARRAY(SELECT format('REVOKE ALL ON %s FROM %I', v.q, r) FROM (
                  SELECT pg_get_userbyid(v.relowner) UNION SELECT current_user::text
                  UNION SELECT pg_get_userbyid(g.grantee) FROM pg_default_acl da, aclexplode(da.defaclacl) g
                   WHERE da.defaclrole = (SELECT oid FROM pg_roles WHERE rolname = current_user) AND da.defaclobjtype = 'r'
                     AND da.defaclnamespace IN (0, v.relnamespace) AND g.grantee <> 0) x(r))
       || ARRAY(SELECT format('GRANT %s ON %s TO %s%s', a.privilege_type, v.q, CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE quote_ident(pg_get_userbyid(a.grantee)) END,
                              CASE WHEN a.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END)
                  FROM aclexplode(coalesce(v.relacl, acldefault('r', v.relowner))) a)
       || ARRAY(SELECT format('GRANT %s (%I) ON %s TO %s%s', g.privilege_type, t.attname, v.q, CASE WHEN g.grantee = 0 THEN 'PUBLIC' ELSE quote_ident(pg_get_userbyid(g.grantee)) END,
                              CASE WHEN g.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END)
                  FROM pg_attribute t, aclexplode(t.attacl) g WHERE t.attrelid = v.oid AND t.attacl IS NOT NULL)
       || ARRAY(SELECT format('COMMENT ON MATERIALIZED VIEW %s IS %L', v.q, obj_description(v.oid, 'pg_class')) WHERE obj_description(v.oid, 'pg_class') IS NOT NULL)
       || ARRAY(SELECT x FROM pg_attribute a, LATERAL (VALUES
                  (CASE WHEN col_description(v.oid, a.attnum) IS NOT NULL THEN format('COMMENT ON COLUMN %s.%I IS %L', v.q, a.attname, col_description(v.oid, a.attnum)) END),
                  (CASE WHEN a.attstattarget >= 0 THEN format('ALTER MATERIALIZED VIEW %s ALTER COLUMN %I SET STATISTICS %s', v.q, a.attname, a.attstattarget) END),
                  (CASE WHEN a.attstorage <> (SELECT typstorage FROM pg_type WHERE oid = a.atttypid)
                        THEN format('ALTER MATERIALIZED VIEW %s ALTER COLUMN %I SET STORAGE %s', v.q, a.attname,
                                    CASE a.attstorage WHEN 'p' THEN 'PLAIN' WHEN 'e' THEN 'EXTERNAL' WHEN 'm' THEN 'MAIN' ELSE 'EXTENDED' END) END),
                  (CASE WHEN a.attcompression <> '' THEN format('ALTER MATERIALIZED VIEW %s ALTER COLUMN %I SET COMPRESSION %s', v.q, a.attname,
                                    CASE a.attcompression WHEN 'l' THEN 'lz4' ELSE 'pglz' END) END),
                  ((SELECT format('ALTER MATERIALIZED VIEW %s ALTER COLUMN %I SET (%s)', v.q, a.attname,
                                  string_agg(format('%I = %L', split_part(o, '=', 1), substr(o, strpos(o, '=') + 1)), ', '))
                      FROM unnest(a.attoptions) o WHERE split_part(o, '=', 1) IN ('n_distinct', 'n_distinct_inherited') HAVING count(*) > 0))) s(x)
                  WHERE a.attrelid = v.oid AND a.attnum > 0 AND NOT a.attisdropped AND x IS NOT NULL ORDER BY a.attnum)
       || ARRAY(SELECT x FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid, LATERAL (VALUES
                  (1, pg_get_indexdef(i.indexrelid)),
                  (2, CASE WHEN i.indisclustered THEN format('ALTER MATERIALIZED VIEW %s CLUSTER ON %I', v.q, ic.relname) END),
                  (3, CASE WHEN obj_description(i.indexrelid, 'pg_class') IS NOT NULL
                           THEN format('COMMENT ON INDEX %I.%I IS %L', v.nspname, ic.relname, obj_description(i.indexrelid, 'pg_class')) END)) s(k, x)
                  WHERE i.indrelid = v.oid AND x IS NOT NULL ORDER BY ic.relname, k)
       || ARRAY(SELECT format('ALTER INDEX %I.%I ALTER COLUMN %s SET STATISTICS %s', v.nspname, ic.relname, a.attnum, a.attstattarget)
                  FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid JOIN pg_attribute a ON a.attrelid = i.indexrelid
                 WHERE i.indrelid = v.oid AND a.attstattarget >= 0 ORDER BY ic.relname, a.attnum)
       || ARRAY(SELECT x FROM pg_statistic_ext e JOIN pg_namespace en ON en.oid = e.stxnamespace, LATERAL (VALUES
                  (1, pg_get_statisticsobjdef(e.oid)),
                  (2, format('ALTER STATISTICS %I.%I OWNER TO %I', en.nspname, e.stxname, pg_get_userbyid(e.stxowner))),
                  (3, CASE WHEN e.stxstattarget >= 0 THEN format('ALTER STATISTICS %I.%I SET STATISTICS %s', en.nspname, e.stxname, e.stxstattarget) END),
                  (4, CASE WHEN obj_description(e.oid, 'pg_statistic_ext') IS NOT NULL
                           THEN format('COMMENT ON STATISTICS %I.%I IS %L', en.nspname, e.stxname, obj_description(e.oid, 'pg_statistic_ext')) END)) s(k, x)
                  WHERE e.stxrelid = v.oid AND x IS NOT NULL ORDER BY e.stxname, k)
       -- What they were let for as long (above), taken back: tsdbadmin's own last.
       || ARRAY(SELECT format('REVOKE CREATE ON SCHEMA %I FROM %I', c.nspname, c.role) FROM creators c
                 WHERE c.view = v.oid AND NOT c.may ORDER BY c.role = current_user, c.nspname, c.role) AS make
  FROM v ORDER BY 2`;
export interface ViewMadeAgain {
  oid: number;
  place: string;
  owned: boolean;
  ownable: boolean;
  readers: number[];
  others: string[];
  grantors: string[];
  drop: ServerStatement;
  make: ServerStatement[];
}

/**
 * The preparation's record in the fork's database of what it must undo or finish should it fail
 * halfway: the materialized views it empties until it refreshes them (a failure in between leaves
 * them unpopulated, and the next preparation refreshes them as the populated views they were), and
 * the privileges of the functions of the database's own it holds off (HOLD_OFF_ROUTINES). A schema
 * named after the fork ($1, a digest of its service ID: production cannot have made it, so what it
 * holds is this fork's own preparation's), dropped once all is done.
 */
/** The records of other forks' preparations ($1: this fork's record): a fork made of a fork whose preparation did not finish. */
export const OTHER_RECORDS = `SELECT quote_ident(nspname) AS schema FROM pg_namespace
 WHERE nspname LIKE '\\_tigercloud\\_preparing\\_%' AND nspname <> $1::text ORDER BY 1`;
export const RECORD_PRESENT = `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1::text) AS present`;
export const makeRecord = (schema: Quoted): string[] => [
  `CREATE SCHEMA IF NOT EXISTS ${schema}`,
  `CREATE TABLE IF NOT EXISTS ${schema}.views (view oid PRIMARY KEY)`,
  `CREATE TABLE IF NOT EXISTS ${schema}.routines (routine oid PRIMARY KEY, definition text NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS ${schema}.lent (kind text NOT NULL, object oid NOT NULL, PRIMARY KEY (kind, object))`,
];
/**
 * The privileges on the record ($1: its schema's name) of any role but its owner, as statements
 * revoking each: a default privilege production gave on the preparing role's new objects would
 * otherwise let that role rewrite the definitions the preparation makes again, or the views it owes.
 */
export const RECORD_GRANTS = `SELECT format('REVOKE ALL ON SCHEMA %I FROM %s', n.nspname, who.name) AS revoke
  FROM pg_namespace n CROSS JOIN LATERAL aclexplode(n.nspacl) a
  CROSS JOIN LATERAL (SELECT CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE quote_ident(pg_get_userbyid(a.grantee)) END AS name) who
 WHERE n.nspname = $1::text AND a.grantee <> n.nspowner
 UNION
SELECT format('REVOKE ALL ON TABLE %I.%I FROM %s', n.nspname, c.relname, who.name)
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace CROSS JOIN LATERAL aclexplode(c.relacl) a
  CROSS JOIN LATERAL (SELECT CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE quote_ident(pg_get_userbyid(a.grantee)) END AS name) who
 WHERE n.nspname = $1::text AND a.grantee <> c.relowner`;
export const owedViews = (schema: Quoted) =>
  `SELECT o.view::int AS oid FROM ${schema}.views o JOIN pg_class c ON c.oid = o.view WHERE c.relkind = 'm'`;
export const recordViews = (schema: Quoted) => `INSERT INTO ${schema}.views SELECT unnest($1::oid[]) ON CONFLICT DO NOTHING`;
/** A view owed, made again (VIEWS_MADE_AGAIN_EMPTY): owed by its new oid ($2), not its old ($1). */
export const reowedView = (schema: Quoted) => `UPDATE ${schema}.views SET view = $2::oid WHERE view = $1::oid`;
/** No view owed any more: every one emptied is refreshed. */
export const clearOwedViews = (schema: Quoted) => `DELETE FROM ${schema}.views`;
export const dropRecord = (schema: Quoted) => `DROP SCHEMA IF EXISTS ${schema} CASCADE`;

/** The SQLSTATE of a function held off that ran: the preparation's own, no PostgreSQL condition's. */
export const HELD_OFF_STATE = "TGHLD";

/**
 * The functions of the database's own (OWN_FUNCTIONS; not aggregates, whose support functions are
 * functions of their own), held off: each one's body replaced by one that fails, naming it, with
 * its signature, result, volatility and strictness as they were, so that one run by any way at all
 * (an expression's, a cast's, an operator the planner chose, or the function manager's alone: a
 * trigger's, a range's subtype_diff, TimescaleDB's partitioning and integer_now functions) fails the
 * preparation instead of reading what is not yet masked. Its definition (pg_get_functiondef) is
 * recorded first, once (a second hold off keeps the first's), and made again by giveBackRoutines
 * before what may run it (the views that call one, refreshed last). To replace a function this role
 * must act as its owner and create in its schema: a role it is no member of it becomes one of for
 * as long (CREATEROLE, PostgreSQL 15), a schema of its own it may not use or create in it lends
 * itself USAGE or CREATE for as long; what it lends is recorded, and taken back. An owner that is
 * itself a member of this role (the grant would be circular) has its memberships of this role
 * withheld for as long ('withheld', with their admin option), and this role's lent membership of it
 * recorded as 'cycle': given back first of all, with the routines (giveBackRoutines), so that what
 * runs as that owner after (a view refreshed last, a SECURITY DEFINER function) has its privileges
 * as production gave them. A function reached by no dependency (a domain's CHECK that parse analysis
 * of a text runs) is held off all the same. This role, NOINHERIT (holding no privilege of its
 * memberships), is made INHERIT for as long; the owner of a function's schema it may not create in
 * is lent as a function's owner is. What is left (another role's, with no CREATEROLE; a
 * superuser's membership; one whose definition this role cannot make again as it is) is not held
 * off: the checks of what runs (FUNCTIONS_ON_WRITE, READS, KEY_CHECKED_CALLING_OWN, …) stand for it.
 */
export const holdOffRoutines = (schema: Quoted): string[] => [
  `DO $hold$ DECLARE rec record; prior text; BEGIN
  -- Owners of the database's own functions, and of tables, views and indexes (pg_stats shows their statistics to their
  -- owner alone, so the checks would not see them, and a role CREATEROLE made a member of would), this role is no member
  -- of: made a member of, where CREATEROLE lets it.
  -- A NOINHERIT role holds no privilege of a role it is a member of: made INHERIT for as long, where CREATEROLE lets it.
  IF (SELECT rolcreaterole AND NOT rolinherit FROM pg_catalog.pg_roles WHERE rolname = current_user) THEN
    EXECUTE pg_catalog.format('ALTER ROLE %I INHERIT', current_user);
    INSERT INTO ${schema}.lent VALUES ('noinherit', (SELECT oid FROM pg_catalog.pg_roles WHERE rolname = current_user)) ON CONFLICT DO NOTHING;
  END IF;
  DROP TABLE IF EXISTS pg_temp.owners;
  CREATE TEMPORARY TABLE pg_temp.owners ON COMMIT DROP AS SELECT w.owner FROM (
               SELECT p.proowner AS owner FROM pg_catalog.pg_proc p WHERE p.oid IN (${OWN_FUNCTIONS}) AND p.prokind IN ('f', 'p')
               -- The owners of their schemas where this role may not create in one: a function is replaced in its schema.
               UNION SELECT n.nspowner FROM pg_catalog.pg_namespace n
                WHERE n.oid IN (SELECT p.pronamespace FROM pg_catalog.pg_proc p WHERE p.oid IN (${OWN_FUNCTIONS}) AND p.prokind IN ('f', 'p'))
                  AND NOT (pg_catalog.has_schema_privilege(n.oid, 'USAGE') AND pg_catalog.has_schema_privilege(n.oid, 'CREATE'))
               UNION SELECT c.relowner FROM pg_catalog.pg_class c
                WHERE c.relkind IN ('r', 'p', 'm', 'i', 'I') AND c.relnamespace NOT IN ('pg_catalog'::pg_catalog.regnamespace, 'information_schema'::pg_catalog.regnamespace)) w
              JOIN pg_catalog.pg_roles o ON o.oid = w.owner
            -- Not holding its privileges (no member, or one through a NOINHERIT role only), and no direct member already
            -- (what is lent is revoked after: never a membership production gave).
            WHERE NOT o.rolsuper AND NOT pg_catalog.pg_has_role(w.owner, 'USAGE')
              AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_auth_members m WHERE m.roleid = w.owner
                                 AND m.member = (SELECT oid FROM pg_catalog.pg_roles WHERE rolname = current_user))
              AND (SELECT rolcreaterole FROM pg_catalog.pg_roles WHERE rolname = current_user);
  -- An owner that is a member of this role, itself or through others: each membership of this role that makes it one
  -- withheld (not a superuser's), so that lending it is no circular grant.
  FOR rec IN SELECT DISTINCT m.member, m.admin_option FROM pg_catalog.pg_auth_members m JOIN pg_temp.owners w
               ON m.member = w.owner OR pg_catalog.pg_has_role(w.owner, m.member, 'MEMBER')
             JOIN pg_catalog.pg_roles r ON r.oid = m.member
            WHERE m.roleid = (SELECT oid FROM pg_catalog.pg_roles WHERE rolname = current_user) AND NOT r.rolsuper LOOP
    BEGIN
      EXECUTE pg_catalog.format('REVOKE %I FROM %I', current_user, pg_catalog.pg_get_userbyid(rec.member));
      INSERT INTO ${schema}.lent VALUES (CASE WHEN rec.admin_option THEN 'withheld admin' ELSE 'withheld' END, rec.member) ON CONFLICT DO NOTHING;
    EXCEPTION WHEN insufficient_privilege OR invalid_grant_operation THEN NULL;
    END;
  END LOOP;
  FOR rec IN SELECT w.owner, EXISTS (SELECT 1 FROM ${schema}.lent l WHERE l.kind IN ('withheld', 'withheld admin')
                                       AND (l.object = w.owner OR pg_catalog.pg_has_role(w.owner, l.object, 'MEMBER'))) AS cycle
               FROM pg_temp.owners w LOOP
    BEGIN
      EXECUTE pg_catalog.format('GRANT %I TO %I', pg_catalog.pg_get_userbyid(rec.owner), current_user);
      INSERT INTO ${schema}.lent VALUES (CASE WHEN rec.cycle THEN 'cycle' ELSE 'member' END, rec.owner) ON CONFLICT DO NOTHING;
    EXCEPTION WHEN insufficient_privilege OR invalid_grant_operation THEN NULL;
    END;
  END LOOP;
  DROP TABLE pg_temp.owners;
  -- Their schemas, where this role owns one but may not use it or create in it: lent for as long.
  FOR rec IN SELECT DISTINCT n.oid, n.nspname, x.privilege FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace,
                  pg_catalog.unnest(ARRAY['USAGE', 'CREATE']) x(privilege)
            WHERE p.oid IN (${OWN_FUNCTIONS}) AND p.prokind IN ('f', 'p') AND pg_catalog.pg_has_role(p.proowner, 'MEMBER')
              AND pg_catalog.pg_has_role(n.nspowner, 'MEMBER') AND NOT pg_catalog.has_schema_privilege(n.oid, x.privilege) LOOP
    EXECUTE pg_catalog.format('GRANT %s ON SCHEMA %I TO %I', rec.privilege, rec.nspname, current_user);
    INSERT INTO ${schema}.lent VALUES (pg_catalog.lower(rec.privilege), rec.oid) ON CONFLICT DO NOTHING;
  END LOOP;
  -- Each one's definition made again first, as the give-back will make it: one this role cannot make
  -- so (a body in SQL-standard form naming what it may no longer use, LEAKPROOF or SUPPORT, which a
  -- superuser gave) is left as it is, as another role's is, and never lost halfway.
  prior := pg_catalog.current_setting('check_function_bodies');
  PERFORM pg_catalog.set_config('check_function_bodies', 'off', true);
  FOR rec IN SELECT p.oid, pg_catalog.pg_get_functiondef(p.oid) AS definition FROM pg_catalog.pg_proc p
              WHERE p.oid IN (${OWN_FUNCTIONS}) AND p.prokind IN ('f', 'p') AND pg_catalog.pg_has_role(p.proowner, 'MEMBER')
                AND pg_catalog.has_schema_privilege(p.pronamespace, 'USAGE') AND pg_catalog.has_schema_privilege(p.pronamespace, 'CREATE')
                AND NOT EXISTS (SELECT 1 FROM ${schema}.routines h WHERE h.routine = p.oid) LOOP
    BEGIN
      EXECUTE rec.definition;
      INSERT INTO ${schema}.routines VALUES (rec.oid, rec.definition);
    EXCEPTION WHEN insufficient_privilege THEN NULL;
    END;
  END LOOP;
  PERFORM pg_catalog.set_config('check_function_bodies', prior, true);
  FOR rec IN SELECT p.oid, p.prokind, p.pronamespace, p.proname, p.proisstrict, p.provolatile,
                  pg_catalog.pg_get_function_arguments(p.oid) AS args, pg_catalog.pg_get_function_result(p.oid) AS result
             FROM ${schema}.routines h JOIN pg_catalog.pg_proc p ON p.oid = h.routine LOOP
    EXECUTE pg_catalog.format('CREATE OR REPLACE %s %I.%I(%s) %s LANGUAGE plpgsql %s %s AS %L',
      CASE WHEN rec.prokind = 'p' THEN 'PROCEDURE' ELSE 'FUNCTION' END,
      (SELECT nspname FROM pg_catalog.pg_namespace WHERE oid = rec.pronamespace), rec.proname, rec.args,
      CASE WHEN rec.prokind = 'p' THEN '' ELSE 'RETURNS ' || rec.result END,
      CASE WHEN rec.prokind = 'p' THEN '' WHEN rec.provolatile = 'i' THEN 'IMMUTABLE' WHEN rec.provolatile = 's' THEN 'STABLE' ELSE 'VOLATILE' END,
      CASE WHEN rec.prokind <> 'p' AND rec.proisstrict THEN 'STRICT' ELSE '' END,
      pg_catalog.format('BEGIN RAISE EXCEPTION USING ERRCODE = %L, MESSAGE = %L; END', '${HELD_OFF_STATE}',
                        'held off by the preparation: ' || rec.oid::pg_catalog.regprocedure::pg_catalog.text));
  END LOOP;
END $hold$`,
];
/**
 * The domains whose CHECK runs ($1: the record) a function of the database's own that is not held
 * off, one that runs a query given as text (TEXT_QUERIES), or one of PostgreSQL's or an extension's
 * that may write (VOLATILE: a large object, a sequence), but for those that only read the clock or
 * draw a random number. A value's input runs its domain's CHECK where no catalog entry names the
 * domain (record_in's, TimescaleDB's compressed_data's, which names its elements' type in its bytes,
 * a validator's parse of a cast), so no check of what an expression names can tell what reaches one.
 */
export const domainChecksThatMayWrite = (schema: Quoted) => `WITH RECURSIVE own AS (${OWN_FUNCTIONS}),
text_queries AS (${TEXT_QUERIES}),
${callsOf("SELECT k.oid::text, k.conbin::text FROM pg_constraint k WHERE k.contypid <> 0 AND k.contype = 'c'")}
SELECT DISTINCT format_type(k.contypid, NULL) AS domain, quote_ident(k.conname) AS "constraint", p.oid::regprocedure::text AS function,
       CASE WHEN p.oid IN (SELECT oid FROM own) THEN 'a function of the database''s own the preparation could not hold off'
            WHEN p.oid IN (SELECT oid FROM text_queries) THEN 'a function that runs a query given as text'
            ELSE 'a function that may write (VOLATILE)' END AS why
  FROM calls c JOIN pg_constraint k ON k.oid::text = c.key JOIN pg_proc p ON p.oid = c.fn
 WHERE (p.oid IN (SELECT oid FROM own) AND p.oid NOT IN (SELECT routine FROM ${schema}.routines))
    OR p.oid IN (SELECT oid FROM text_queries)
    OR (p.oid NOT IN (SELECT oid FROM own) AND p.provolatile = 'v'
        AND NOT (p.pronamespace = 'pg_catalog'::regnamespace AND p.proname IN ('clock_timestamp', 'timeofday', 'random', 'setseed', 'gen_random_uuid')))
 ORDER BY 1, 2, 3`;
/** The routines held off, as the record names them. */
export const heldOffRoutines = (schema: Quoted) => `SELECT p.oid::regprocedure::text AS routine
  FROM ${schema}.routines h JOIN pg_proc p ON p.oid = h.routine ORDER BY 1`;
/**
 * Every routine held off made again as recorded (its definition, pg_get_functiondef's, run as it
 * is, its body not checked, for the transaction), then what was lent for it taken back (the schemas' USAGE and CREATE, the memberships), and
 * the record of them emptied.
 */
export const giveBackRoutines = (schema: Quoted, { memberships = true } = {}) => `DO $give$ DECLARE rec record; BEGIN
  -- A body is made again as written, not checked: its names were resolved by production's search_path, not the preparation's.
  PERFORM pg_catalog.set_config('check_function_bodies', 'off', true);
  FOR rec IN SELECT h.definition FROM ${schema}.routines h JOIN pg_catalog.pg_proc p ON p.oid = h.routine LOOP
    EXECUTE rec.definition;
  END LOOP;
  FOR rec IN SELECT n.nspname, pg_catalog.upper(l.kind) AS privilege FROM ${schema}.lent l JOIN pg_catalog.pg_namespace n ON n.oid = l.object
            WHERE l.kind IN ('usage', 'create') LOOP
    EXECUTE pg_catalog.format('REVOKE %s ON SCHEMA %I FROM %I', rec.privilege, rec.nspname, current_user);
  END LOOP;
  ${
    memberships
      ? `FOR rec IN SELECT l.object FROM ${schema}.lent l JOIN pg_catalog.pg_roles r ON r.oid = l.object WHERE l.kind = 'member' LOOP
    EXECUTE pg_catalog.format('REVOKE %I FROM %I', pg_catalog.pg_get_userbyid(rec.object), current_user);
  END LOOP;
  IF EXISTS (SELECT 1 FROM ${schema}.lent WHERE kind = 'noinherit') THEN
    EXECUTE pg_catalog.format('ALTER ROLE %I NOINHERIT', current_user);
  END IF;`
      : "-- The memberships (and INHERIT) stay lent until the last step that needs an owner's privileges (givebackMemberships)."
  }
  -- What a circular grant withheld: the lent membership taken back first, then the owner's membership of this role given back.
  -- (A role dropped meanwhile has nothing to give back, here as above: a view refreshed last may drop one.)
  FOR rec IN SELECT l.object FROM ${schema}.lent l JOIN pg_catalog.pg_roles r ON r.oid = l.object WHERE l.kind = 'cycle' LOOP
    EXECUTE pg_catalog.format('REVOKE %I FROM %I', pg_catalog.pg_get_userbyid(rec.object), current_user);
  END LOOP;
  FOR rec IN SELECT l.object, l.kind FROM ${schema}.lent l JOIN pg_catalog.pg_roles r ON r.oid = l.object
              WHERE l.kind IN ('withheld', 'withheld admin') LOOP
    EXECUTE pg_catalog.format('GRANT %I TO %I%s', current_user, pg_catalog.pg_get_userbyid(rec.object),
                              CASE WHEN rec.kind = 'withheld admin' THEN ' WITH ADMIN OPTION' ELSE '' END);
  END LOOP;
  DELETE FROM ${schema}.routines;
  DELETE FROM ${schema}.lent${memberships ? "" : " WHERE kind NOT IN ('member', 'noinherit')"};
END $give$`;
/** The roles lent as 'cycle' (their memberships of this role withheld), as the record names them. */
export const lentAsCycle = (schema: Quoted) =>
  `SELECT coalesce(array_agg(object), '{}')::pg_catalog.text AS roles FROM ${schema}.lent WHERE kind = 'cycle'`;
/**
 * Of the relations $1, those whose owner this role acts as only through a role lent as 'cycle' ($2,
 * lentAsCycle): given back before the views refreshed last, so what is refreshed then as that owner
 * could not be.
 */
export const OWNED_THROUGH_CYCLE = `SELECT c.oid::int AS oid, format('%I.%I', n.nspname, c.relname) AS name
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE c.oid = ANY($1::oid[]) AND EXISTS (SELECT 1 FROM unnest($2::oid[]) l(role) WHERE pg_has_role(l.role, c.relowner, 'USAGE'))
 ORDER BY 2`;
/** Whether memberships are lent or withheld (the record's), to be given back once no step needs them. */
export const membershipsLent = (schema: Quoted) =>
  `SELECT count(*)::int AS n FROM ${schema}.lent WHERE kind IN ('member', 'cycle', 'withheld', 'withheld admin', 'noinherit')`;
/** Whether the record holds routines held off, or what was lent for them (an earlier preparation failed before giving them back). */
export const routinesHeld = (schema: Quoted) =>
  `SELECT ((SELECT count(*) FROM ${schema}.routines) + (SELECT count(*) FROM ${schema}.lent))::int AS n`;

/** Production's values of `column` of `table`, before the masking: a sample of the rows and what its statistics (of the table and its chunks, $1) hold. */
export function sampleValues(table: Quoted, column: Quoted): string {
  // The first rows found, not DISTINCT (which would read the whole table before its LIMIT).
  return `SELECT v FROM (SELECT ${column}::text AS v FROM ${table} WHERE ${column} IS NOT NULL LIMIT 500) s
UNION
SELECT v FROM pg_stats s, pg_class c, pg_namespace n,
       unnest(coalesce(s.most_common_vals::text::text[], '{}') || coalesce(s.histogram_bounds::text::text[], '{}')) v
 WHERE n.oid = c.relnamespace AND s.schemaname = n.nspname AND s.tablename = c.relname
   AND c.oid = ANY($1::oid[]) AND s.attname = $2`;
}

/**
 * Statistics that ANALYZE leaves as they are, among these relations ($1: oids) and their indexes: a
 * column's or an index column's target of 0, an extended statistics object's, holding statistics.
 */
export const FROZEN_STATISTICS = `SELECT format('%I.%I', n.nspname, c.relname) || ' (' || a.attname || ')' AS place
  FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE (a.attrelid = ANY($1::oid[]) OR a.attrelid IN (SELECT indexrelid FROM pg_index WHERE indrelid = ANY($1::oid[])))
   AND a.attnum > 0 AND NOT a.attisdropped AND a.attstattarget = 0
   AND EXISTS (SELECT 1 FROM pg_stats s WHERE s.schemaname = n.nspname AND s.tablename = c.relname AND s.attname = a.attname)
UNION ALL
SELECT format('%I.%I', x.stxnamespace::regnamespace::text, x.stxname) AS place
  FROM pg_statistic_ext x WHERE x.stxrelid = ANY($1::oid[]) AND x.stxstattarget = 0
   AND EXISTS (SELECT 1 FROM pg_stats_ext e WHERE e.statistics_schemaname = x.stxnamespace::regnamespace::text AND e.statistics_name = x.stxname)`;

/**
 * What of this role's own tables and materialized views pg_stats hides from the checks: columns
 * it may not read, and tables whose row security it forces on itself (pg_stats shows no row of a
 * table row security is active for). The owner may undo either.
 */
export const HIDDEN_COLUMNS = `SELECT format('%I.%I', n.nspname, c.relname) || ' (' || quote_ident(a.attname) || ')' AS place
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
  JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
 WHERE c.relkind IN ('r', 'm', 'p') AND pg_has_role(c.relowner, 'USAGE')
   AND n.nspname NOT IN ('pg_catalog', 'information_schema')
   AND NOT has_column_privilege(c.oid, a.attnum, 'SELECT')
UNION ALL
SELECT format('%I.%I', n.nspname, c.relname) || ' (row security forced)' AS place
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE c.relkind IN ('r', 'm', 'p') AND pg_has_role(c.relowner, 'USAGE') AND c.relrowsecurity AND c.relforcerowsecurity
   AND n.nspname NOT IN ('pg_catalog', 'information_schema')
 ORDER BY 1`;

/**
 * The tables whose owner tsdbadmin acts as (its own, or a role's whose membership it lent itself)
 * and whose row security the owner forces on itself: pg_stats hides their statistics from the
 * owner, and row_security off makes the masking's UPDATE fail there. Lifted in the masking's
 * transaction (`lift`) and forced again before its commit (`force`); a failure rolls both back.
 */
export const FORCED_ROW_SECURITY = `SELECT c.oid::int AS oid, format('%I.%I', n.nspname, c.relname) AS place,
       format('ALTER TABLE %I.%I NO FORCE ROW LEVEL SECURITY', n.nspname, c.relname) AS lift,
       format('ALTER TABLE %I.%I FORCE ROW LEVEL SECURITY', n.nspname, c.relname) AS force
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE c.relkind IN ('r', 'p') AND c.relrowsecurity AND c.relforcerowsecurity AND pg_has_role(c.relowner, 'USAGE')
   AND n.nspname NOT IN ('pg_catalog', 'information_schema')
 ORDER BY 2`;
export interface ForcedRowSecurity {
  oid: number;
  place: string;
  lift: ServerStatement;
  force: ServerStatement;
}

/**
 * Tables, materialized views and their indexes ($1: the tables' oids) whose last ANALYZE sampled
 * no row (reltuples 0) but that hold statistics of their own: ANALYZE keeps the old ones then (a
 * partial index whose predicate no row meets any more, a parent whose rows are all in its children).
 */
export const KEPT_STATISTICS = `SELECT format('%I.%I', n.nspname, c.relname) AS place
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE (c.oid = ANY($1::oid[]) OR c.oid IN (SELECT indexrelid FROM pg_index WHERE indrelid = ANY($1::oid[])))
   AND c.relkind IN ('r', 'm', 'i') AND c.reltuples = 0
   AND (EXISTS (SELECT 1 FROM pg_stats s WHERE s.schemaname = n.nspname AND s.tablename = c.relname AND NOT s.inherited)
        OR EXISTS (SELECT 1 FROM pg_stats_ext e WHERE e.schemaname = n.nspname AND e.tablename = c.relname AND NOT e.inherited)
        OR EXISTS (SELECT 1 FROM pg_stats_ext_exprs e WHERE e.schemaname = n.nspname AND e.tablename = c.relname AND NOT e.inherited))
 ORDER BY 1`;

/**
 * Tables (chunks among them) whose ANALYZE runs a function of the database's own (owned by a role
 * that is not a superuser, or no extension's), which may read what the masking wrote: an index's
 * expression or predicate, an extended statistics object's expression, a column's range type's
 * subtype_diff or canonical function. Their statistics hold what it returned in production. None
 * of those already analysed ($1: oids). analysable: this role may ANALYZE it (it, or a role it is,
 * owns the table or the database).
 */
export const STATISTICS_CALLING_OWN = `WITH RECURSIVE own AS (${OWN_FUNCTIONS}),
${callsOf(`
  SELECT i.indrelid, coalesce(i.indexprs::text, '') || coalesce(i.indpred::text, '') FROM pg_index i
   WHERE i.indexprs IS NOT NULL OR i.indpred IS NOT NULL
  UNION ALL SELECT x.stxrelid, x.stxexprs::text FROM pg_statistic_ext x WHERE x.stxexprs IS NOT NULL`)},
-- A domain's base type, at any depth: a column of a domain over a range is analysed as the range.
bases(typ, base) AS (SELECT oid, oid FROM pg_type
  UNION ALL SELECT b.typ, t.typbasetype FROM bases b JOIN pg_type t ON t.oid = b.base WHERE t.typtype = 'd'),
calling(rel) AS (
  SELECT key FROM calls WHERE fn IN (SELECT oid FROM own)
  UNION
  -- A multirange's ANALYZE computes its range type's length histogram with subtype_diff too.
  SELECT a.attrelid FROM pg_attribute a JOIN bases b ON b.typ = a.atttypid JOIN pg_range g ON b.base IN (g.rngtypid, g.rngmultitypid)
   WHERE a.attnum > 0 AND NOT a.attisdropped AND (g.rngsubdiff IN (SELECT oid FROM own) OR g.rngcanonical IN (SELECT oid FROM own)))
SELECT c.oid::int AS oid, n.nspname AS schema, c.relname AS name, format('%I.%I', n.nspname, c.relname) AS quoted, c.relkind::text AS kind,
       pg_has_role(c.relowner, 'USAGE')
         OR pg_has_role((SELECT datdba FROM pg_database WHERE datname = current_database()), 'USAGE') AS analysable
  FROM calling JOIN pg_class c ON c.oid = calling.rel JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE c.relkind IN ('r', 'p') AND NOT c.oid = ANY($1::oid[])
 ORDER BY n.nspname = '_timescaledb_internal', 2, 3`;

/**
 * The indexes and extended statistics objects of tables and materialized views the masking does not
 * write ($1: the written tables' oids) that call a function of the database's own, and how each is
 * dropped and made again: such a function can read pg_stats (its own statistics among them) while
 * a refresh or ANALYZE runs it, and copy what is still production's, so none is left until every
 * other statistic is made again. A partition's index goes with its parent's, a chunk's with its
 * hypertable's; a statistics object is its table's alone (TimescaleDB copies none to a chunk), so
 * one made on a chunk is listed. owned: this role owns the table and the object (the object's owner drops it,
 * the table's makes it) by a membership
 * that stays until it is made again: not one lent as 'cycle' ($2, lentAsCycle), which goes back
 * before the views refreshed last (the owner's own membership of this role comes back then); kept: why it
 * cannot be dropped and made again (a constraint stands on it; unique, which the masked data may not
 * be; a partitioned table's, whose partitions' indexes would go with it).
 */
export const OWN_STATISTICS_OBJECTS = `WITH RECURSIVE own AS (${OWN_FUNCTIONS}),
${callsOf(`
  SELECT 'i' || i.indexrelid, coalesce(i.indexprs::text, '') || coalesce(i.indpred::text, '') FROM pg_index i
   WHERE i.indexprs IS NOT NULL OR i.indpred IS NOT NULL
  UNION ALL SELECT 's' || x.oid, x.stxexprs::text FROM pg_statistic_ext x WHERE x.stxexprs IS NOT NULL`)},
calling(key) AS (SELECT DISTINCT key FROM calls WHERE fn IN (SELECT oid FROM own))
SELECT format('index %I.%I', n.nspname, x.relname) AS what, t.oid::int AS oid, n.nspname AS schema, t.relname AS name,
       format('%I.%I', n.nspname, t.relname) AS quoted, t.relkind::text AS kind,
       pg_has_role(t.relowner, 'USAGE') AND NOT EXISTS (SELECT 1 FROM unnest($2::oid[]) c(role) WHERE pg_has_role(c.role, t.relowner, 'USAGE')) AS owned,
       CASE WHEN EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = i.indexrelid) THEN 'a constraint stands on it'
            WHEN i.indisunique THEN 'unique: the masked data may not be'
            WHEN t.relkind = 'p' THEN 'of a partitioned table: its partitions'' indexes go with it' END AS kept,
       format('DROP INDEX %I.%I', n.nspname, x.relname) AS "drop", pg_get_indexdef(i.indexrelid) AS make,
       array_remove(ARRAY[
         CASE WHEN i.indisclustered THEN format('ALTER TABLE %I.%I CLUSTER ON %I', n.nspname, t.relname, x.relname) END,
         CASE WHEN obj_description(i.indexrelid, 'pg_class') IS NOT NULL
              THEN format('COMMENT ON INDEX %I.%I IS %L', n.nspname, x.relname, obj_description(i.indexrelid, 'pg_class')) END], NULL)
       || ARRAY(SELECT format('ALTER INDEX %I.%I ALTER COLUMN %s SET STATISTICS %s', n.nspname, x.relname, a.attnum, a.attstattarget)
                  FROM pg_attribute a WHERE a.attrelid = i.indexrelid AND a.attstattarget >= 0 ORDER BY a.attnum) AS after
  FROM pg_index i JOIN pg_class x ON x.oid = i.indexrelid JOIN pg_class t ON t.oid = i.indrelid JOIN pg_namespace n ON n.oid = t.relnamespace
 WHERE t.relkind IN ('r', 'p', 'm') AND n.nspname NOT IN ('pg_catalog', 'information_schema', '_timescaledb_internal')
   AND NOT t.oid = ANY($1::oid[]) AND NOT EXISTS (SELECT 1 FROM pg_inherits h WHERE h.inhrelid = i.indexrelid)
   AND 'i' || i.indexrelid IN (SELECT key FROM calling)
UNION ALL
SELECT format('statistics %I.%I', sn.nspname, s.stxname), t.oid::int, n.nspname, t.relname, format('%I.%I', n.nspname, t.relname), t.relkind::text,
       -- Dropped as the object's owner, made again as the table's.
       pg_has_role(s.stxowner, 'USAGE') AND pg_has_role(t.relowner, 'USAGE')
         AND NOT EXISTS (SELECT 1 FROM unnest($2::oid[]) c(role) WHERE pg_has_role(c.role, s.stxowner, 'USAGE') OR pg_has_role(c.role, t.relowner, 'USAGE')), NULL,
       format('DROP STATISTICS %I.%I', sn.nspname, s.stxname), pg_get_statisticsobjdef(s.oid),
       array_remove(ARRAY[
         CASE WHEN s.stxstattarget >= 0 THEN format('ALTER STATISTICS %I.%I SET STATISTICS %s', sn.nspname, s.stxname, s.stxstattarget) END,
         CASE WHEN obj_description(s.oid, 'pg_statistic_ext') IS NOT NULL
              THEN format('COMMENT ON STATISTICS %I.%I IS %L', sn.nspname, s.stxname, obj_description(s.oid, 'pg_statistic_ext')) END], NULL)
  FROM pg_statistic_ext s JOIN pg_namespace sn ON sn.oid = s.stxnamespace
  JOIN pg_class t ON t.oid = s.stxrelid JOIN pg_namespace n ON n.oid = t.relnamespace
 WHERE t.relkind IN ('r', 'p', 'm') AND n.nspname NOT IN ('pg_catalog', 'information_schema')
   AND NOT t.oid = ANY($1::oid[])
   AND 's' || s.oid IN (SELECT key FROM calling)
 ORDER BY 1`;

/**
 * Continuous aggregates whose materialization hypertable has an index or extended statistics
 * expression calling a function of the database's own (TimescaleDB makes one there from a CREATE
 * INDEX on the aggregate): its statistics hold what it read in production until analysed again, and
 * it runs in the refresh, when other views' statistics may still be production's. (A trigger there
 * only runs: its aggregate is refreshed last, CONTINUOUS_AGGREGATES' runsOwn.)
 */
export const MATERIALIZATION_CALLING_OWN = `WITH RECURSIVE own AS (${OWN_FUNCTIONS}),
materialized AS (SELECT format('%I.%I', ca.user_view_schema, ca.user_view_name) AS view,
                        format('%I.%I', m.schema_name, m.table_name)::regclass AS oid
                   FROM _timescaledb_catalog.continuous_agg ca JOIN _timescaledb_catalog.hypertable m ON m.id = ca.mat_hypertable_id),
${callsOf(`
  SELECT format('%s index %I', m.view, x.relname), coalesce(i.indexprs::text, '') || coalesce(i.indpred::text, '')
    FROM materialized m JOIN pg_index i ON i.indrelid = m.oid JOIN pg_class x ON x.oid = i.indexrelid
  UNION ALL SELECT format('%s statistics %I', m.view, x.stxname), coalesce(x.stxexprs::text, '')
    FROM materialized m JOIN pg_statistic_ext x ON x.stxrelid = m.oid`)}
SELECT m.view, substr(k.key, length(m.view) + 2) AS what FROM materialized m JOIN calls k ON starts_with(k.key, m.view || ' ')
 WHERE k.fn IN (SELECT oid FROM own)
 GROUP BY 1, 2 ORDER BY 1, 2`;

/** The tables with row security enabled, by name and as quoted: what PostgreSQL's refusal of a read under it names. */
export const ROW_SECURED_TABLES = `SELECT c.relname AS name, format('%I.%I', n.nspname, c.relname) AS quoted
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.relrowsecurity ORDER BY 2`;
/**
 * The tables these materialized views or aggregates' direct views ($1: oids) read, through views, whose row security applies to
 * the role their refresh reads them as (the view's owner, or the owner of a view between unless it
 * is security_invoker): forced on their owner, or that role neither owns them nor bypasses row
 * security. With row_security off (the preparation's) PostgreSQL refuses such a read.
 */
export const REFRESHES_UNDER_ROW_SECURITY = `WITH RECURSIVE walk(view, reader, rel) AS (
  SELECT m.oid, m.relowner, d.refobjid FROM pg_class m JOIN pg_rewrite w ON w.ev_class = m.oid
    JOIN pg_depend d ON d.classid = 'pg_rewrite'::regclass AND d.objid = w.oid AND d.refclassid = 'pg_class'::regclass AND d.refobjid <> m.oid
   WHERE m.oid = ANY($1::oid[])
  UNION
  SELECT k.view,
         CASE WHEN EXISTS (SELECT 1 FROM unnest(v.reloptions) o WHERE o ~* '^security_invoker=(t|tr|tru|true|y|ye|yes|on|1)$') THEN k.reader ELSE v.relowner END,
         d.refobjid
    FROM walk k JOIN pg_class v ON v.oid = k.rel AND v.relkind = 'v' JOIN pg_rewrite w ON w.ev_class = v.oid
    JOIN pg_depend d ON d.classid = 'pg_rewrite'::regclass AND d.objid = w.oid AND d.refclassid = 'pg_class'::regclass AND d.refobjid <> v.oid)
SELECT DISTINCT k.view::int AS oid, format('%I.%I', vn.nspname, vc.relname) AS view, format('%I.%I', tn.nspname, t.relname) AS "table",
       r.rolname::text AS reader, t.relforcerowsecurity AS forced
  FROM walk k JOIN pg_class t ON t.oid = k.rel AND t.relkind IN ('r', 'p') AND t.relrowsecurity
  JOIN pg_namespace tn ON tn.oid = t.relnamespace JOIN pg_roles r ON r.oid = k.reader
  JOIN pg_class vc ON vc.oid = k.view JOIN pg_namespace vn ON vn.oid = vc.relnamespace
 WHERE NOT r.rolsuper AND NOT r.rolbypassrls AND (t.relforcerowsecurity OR NOT pg_has_role(k.reader, t.relowner, 'USAGE'))
 ORDER BY 2, 3, 4`;

/** The columns chunk skipping keeps ranges of, on these hypertables ($1: oids). */
export const SKIPPING_COLUMNS = `SELECT DISTINCT format('%I.%I', h.schema_name, h.table_name) AS hypertable, s.column_name::text AS column
  FROM _timescaledb_catalog.chunk_column_stats s JOIN _timescaledb_catalog.hypertable h ON h.id = s.hypertable_id
 WHERE format('%I.%I', h.schema_name, h.table_name)::regclass::oid = ANY($1::oid[])`;
/** Chunk skipping's ranges kept as the refreshes compress an aggregate's chunks again (TimescaleDB records them only with it on). */
export const CHUNK_SKIPPING_SESSION = "SELECT pg_catalog.set_config('timescaledb.enable_chunk_skipping', 'on', false)";
/** TimescaleDB's catalog of chunk skipping's ranges: autovacuum analyses it, and its statistics keep the ranges it held (production's). */
export const ANALYZE_CHUNK_RANGES = "ANALYZE _timescaledb_catalog.chunk_column_stats";
export const disableChunkSkipping = (ts: Quoted) => `SELECT ${ts}.disable_chunk_skipping($1::regclass, $2::name)`;
export const enableChunkSkipping = (ts: Quoted) => `SELECT ${ts}.enable_chunk_skipping($1::regclass, $2::name)`;

/**
 * The columns of a table ($1) that have statistics, and the statement that sets each one's type
 * again (which drops them: an empty table's). $2: with the tables under it (an inheritance parent's
 * column is set again with its children's), or ONLY.
 */
export const COLUMNS_WITH_STATISTICS = `SELECT a.attname AS name,
       format('ALTER TABLE %s%I.%I ALTER COLUMN %I TYPE %s', CASE WHEN $2::boolean THEN '' ELSE 'ONLY ' END,
              n.nspname, c.relname, a.attname, format_type(a.atttypid, a.atttypmod)) AS retype
  FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE a.attrelid = $1 AND a.attnum > 0 AND NOT a.attisdropped
   AND EXISTS (SELECT 1 FROM pg_stats s WHERE s.schemaname = n.nspname AND s.tablename = c.relname AND s.attname = a.attname)`;

/** The indexes of these tables ($1: oids): their expression columns have statistics of their own. */
export const INDEXES = `SELECT i.indexrelid::int AS oid, n.nspname AS schema, c.relname AS name, format('%I.%I', n.nspname, c.relname) AS quoted, 'i' AS kind
  FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_namespace n ON n.oid = c.relnamespace WHERE i.indrelid = ANY($1::oid[])`;

/** What JavaScript's trim() takes off a text's ends (its white space and line terminators), as code points. */
const TRIMMED = [9, 10, 11, 12, 13, 32, 160, 5760, ...Array.from({ length: 11 }, (_, i) => 8192 + i), 8232, 8233, 8239, 8287, 12288, 65279];
/**
 * A text as every check compares it, in one place: upper case then lower (lower alone keeps apart
 * what only upper joins: a dotless ı and the I its upper case is), with what trim() takes off its
 * ends taken off here too (btrim alone takes spaces only: a tab after a masked value kept it apart).
 */
export function normal(text: string): string {
  // The characters made once per statement (concat is not immutable, so not folded): per value, they were half the comparison's time.
  const trimmed = `pg_catalog.btrim(${text}, (SELECT pg_catalog.concat(${TRIMMED.map((c) => `pg_catalog.chr(${c})`).join(", ")})))`;
  return `pg_catalog.lower(pg_catalog.upper(${trimmed}))`;
}
/**
 * A sampled value as the state keeps it for a run again ($1 the key, $2 the values, by position
 * `i`): the first 128 bits of sha256 of the key and the value as the checks compare it (lower,
 * trimmed), never the value. The key and the digests stay out of the fork, where what the
 * preparation runs as its owner could read or erase them.
 */
export const SAMPLE_DIGESTS = `SELECT x.i::int AS i, ${digestOf("$1::text", "x.v")} AS digest FROM unnest($2::text[]) WITH ORDINALITY AS x(v, i)`;
function digestOf(key: string, value: string): string {
  return `pg_catalog.left(pg_catalog.encode(pg_catalog.sha256(pg_catalog.convert_to(${key} || ${normal(value)}, 'UTF8')), 'hex'), 32)`;
}
/**
 * A text ($v) is one of production's by an earlier run's digests ($key,
 * $digests): false, folded away by the planner, when there are none (a first run).
 */
const earlierHolds = (v: string, key: string, digests: string) =>
  `(pg_catalog.cardinality(${digests}::text[]) > 0 AND ${digestOf(key, v)} IN (SELECT d FROM earlier))`;

/**
 * Statistics that still hold one of production's values ($3, or by digest: $5 the key, $6 an
 * earlier run's digests of them), compared as a reader would find them:
 * whatever their case and surrounding spaces (an aggregate of lower(email) holds production's
 * e-mails in other letters). Of these columns ($2) of these tables ($1), of every column of these
 * other relations ($4: what a key cascaded to, indexes, materialized views, aggregates'
 * materialization tables, their chunks and compressed chunks, in whatever schema), and extended
 * statistics on both. Each row names where.
 */
export const STATISTICS_HOLDING = `WITH production(value) AS (SELECT DISTINCT ${normal("x")} FROM unnest($3::text[]) x),
earlier(d) AS (SELECT DISTINCT x FROM unnest($6::text[]) x),
relations AS (SELECT c.oid, n.nspname, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
               WHERE c.oid = ANY($1::oid[]) OR c.oid = ANY($4::oid[])),
-- The relations' statistics first (MATERIALIZED: PostgreSQL would otherwise read every statistic's values before filtering)...
statistics(place, vals) AS MATERIALIZED (
  SELECT format('%I.%I', s.schemaname, s.tablename) || ' (' || s.attname || ')',
         coalesce(s.most_common_vals::text::text[], '{}') || coalesce(s.histogram_bounds::text::text[], '{}')
    FROM pg_stats s JOIN relations r ON r.nspname = s.schemaname AND r.relname = s.tablename
   WHERE (r.oid = ANY($1::oid[]) AND s.attname = ANY($2::text[])) OR r.oid = ANY($4::oid[])
  UNION ALL
  SELECT format('%I.%I', e.statistics_schemaname, e.statistics_name), coalesce(e.most_common_vals, '{}')
    FROM pg_stats_ext e JOIN relations r ON r.nspname = e.schemaname AND r.relname = e.tablename
  UNION ALL
  SELECT format('%I.%I', x.statistics_schemaname, x.statistics_name) || ' (' || x.expr || ')',
         coalesce(x.most_common_vals::text::text[], '{}') || coalesce(x.histogram_bounds::text::text[], '{}')
    FROM pg_stats_ext_exprs x JOIN relations r ON r.nspname = x.schemaname AND r.relname = x.tablename)
-- ...then all their values against production's in one hashed lookup (one per statistic was 10x slower).
SELECT s.place FROM statistics s, unnest(s.vals) v
 WHERE ${normal("v")} IN (SELECT value FROM production) OR ${earlierHolds("v", "$5::text", "$6")}
 GROUP BY s.place ORDER BY s.place`;

/**
 * How many rows of `view` hold one of production's values ($1, or by digest: $2 the key, $3 an earlier
 * run's digests) in a column, read as text whatever its
 * case and surrounding spaces. IN over a subquery: PostgreSQL hashes it (an = ANY over an array
 * not given as a constant it would scan for every row: 8x the preparation's time at 1,000,000 rows).
 */
export function rowsHolding(view: Quoted, columns: Quoted[]): string {
  // Each value as its type's output function writes it (format's %s): a cast to text may be a function of the database's own.
  const any = columns
    .map(
      (c) => `${normal(`format('%s', ${c})`)} IN (SELECT value FROM production) OR ${earlierHolds(`format('%s', ${c})`, "$2::text", "$3")}`,
    )
    .join(" OR ");
  return `WITH production(value) AS (SELECT DISTINCT ${normal("x")} FROM unnest($1::text[]) x),
earlier(d) AS (SELECT DISTINCT x FROM unnest($3::text[]) x)
SELECT count(*)::int AS n FROM ${view} WHERE ${any || "false"}`;
}

/**
 * What runs a function of the database's own (one owned by a role that is not a superuser: not
 * PostgreSQL's, nor an extension's its owner installed), or one of PostgreSQL's that may write
 * (VOLATILE: query_to_xml, lo_from_bytea, set_config) or reads tables (table_to_xml and the other
 * XML exports, STABLE), on each row the masking writes to these
 * tables ($1: oids): a CHECK or exclusion constraint, an index's expression or predicate, a
 * generated column, a default a key's ON UPDATE SET DEFAULT writes (the column's, or its domain's), an extended statistics
 * object's expression (ANALYZE runs it), a CHECK of a domain (a column's, or one an expression
 * casts to), a range type's subtype_diff or canonical function (a column's, or one inside its
 * array, multirange or composite type). Such a function can read the rows not yet masked
 * and write them anywhere; triggers and rules are held off instead (TRIGGERS, RULES). Chunks are
 * among the tables (an index or constraint can be made on one alone), listed after the others: a
 * hypertable's own are copied onto each of its chunks.
 */
export const FUNCTIONS_ON_WRITE = `WITH RECURSIVE written AS (SELECT unnest($1::oid[]) AS oid),
-- A domain's base type, an array's element, a multirange's range, a composite's fields: their types' functions run too.
${INNER_TYPES},
${TYPE_EDGES},
${OPERATOR_FUNCTIONS},
direct(rel, what, classid, objid, tree) AS (
  SELECT c.conrelid, 'constraint ' || quote_ident(c.conname), 'pg_constraint'::regclass, c.oid, c.conbin::text
    FROM pg_constraint c JOIN written w ON c.conrelid = w.oid WHERE c.contype IN ('c', 'x')
  UNION ALL
  SELECT i.indrelid, 'index ' || quote_ident(x.relname), 'pg_class'::regclass, i.indexrelid,
         coalesce(i.indexprs::text, '') || coalesce(i.indpred::text, '')
    FROM pg_index i JOIN written w ON i.indrelid = w.oid JOIN pg_class x ON x.oid = i.indexrelid
  UNION ALL
  SELECT d.adrelid, 'generated column ' || quote_ident(a.attname), 'pg_attrdef'::regclass, d.oid, d.adbin::text
    FROM pg_attrdef d JOIN written w ON d.adrelid = w.oid
    JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum WHERE a.attgenerated <> ''
  UNION ALL
  SELECT d.adrelid, 'default of column ' || quote_ident(a.attname) || ' (a key''s ON UPDATE SET DEFAULT)', 'pg_attrdef'::regclass, d.oid,
         d.adbin::text
    FROM pg_constraint k JOIN written w ON k.conrelid = w.oid
    JOIN pg_attrdef d ON d.adrelid = k.conrelid AND d.adnum = ANY (k.conkey)
    JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum WHERE k.contype = 'f' AND k.confupdtype = 'd'
  UNION ALL
  -- A key column with no default of its own: ON UPDATE SET DEFAULT writes its domain's.
  SELECT k.conrelid, 'default of column ' || quote_ident(a.attname) || ' (its domain''s, a key''s ON UPDATE SET DEFAULT)', 'pg_type'::regclass, y.oid,
         y.typdefaultbin::text
    FROM pg_constraint k JOIN written w ON k.conrelid = w.oid
    JOIN pg_attribute a ON a.attrelid = k.conrelid AND a.attnum = ANY (k.conkey)
    JOIN pg_type y ON y.oid = a.atttypid AND y.typdefaultbin IS NOT NULL
   WHERE k.contype = 'f' AND k.confupdtype = 'd' AND NOT EXISTS (SELECT 1 FROM pg_attrdef d WHERE d.adrelid = a.attrelid AND d.adnum = a.attnum)
  UNION ALL
  SELECT s.stxrelid, 'statistics ' || quote_ident(s.stxname), 'pg_statistic_ext'::regclass, s.oid, coalesce(s.stxexprs::text, '')
    FROM pg_statistic_ext s JOIN written w ON s.stxrelid = w.oid
  UNION ALL
  -- A partitioned table's key: each row written to one of its partitions is checked against the partition's bounds, through it.
  SELECT p.partrelid, 'partition key', 'pg_class'::regclass, p.partrelid, coalesce(p.partexprs::text, '')
    FROM pg_partitioned_table p JOIN written w ON p.partrelid = w.oid),
types(rel, what, typ) AS (
  SELECT a.attrelid, 'column ' || quote_ident(a.attname), a.atttypid
    FROM pg_attribute a JOIN written w ON a.attrelid = w.oid WHERE a.attnum > 0 AND NOT a.attisdropped
  UNION
  SELECT e.rel, e.what, d.refobjid
    FROM direct e JOIN pg_depend d ON d.classid = e.classid AND d.objid = e.objid AND d.refclassid = 'pg_type'::regclass
  UNION
  SELECT e.rel, e.what, m[1]::oid FROM direct e, regexp_matches(e.tree, '${TYPES_NAMED}', 'g') m WHERE m[1]::oid >= 16384
  UNION
  SELECT t.rel, t.what, i.inner_type FROM types t JOIN type_edges i ON i.outer_type = t.typ),
expressions(rel, what, classid, objid, tree) AS (
  SELECT rel, what, classid, objid, tree FROM direct
  UNION ALL
  SELECT t.rel, t.what || ' (its domain ' || format_type(t.typ, NULL) || ')', 'pg_constraint'::regclass, c.oid, c.conbin::text
    FROM types t JOIN pg_constraint c ON c.contypid = t.typ),
-- Every function an expression calls, PostgreSQL's included (pg_depend records none of those: they
-- are pinned), read from its parsed form: a function's or an operator's.
functions AS (
  SELECT e.rel, e.what, m[1]::oid AS fn FROM expressions e, regexp_matches(e.tree, '${CALLED}', 'g') m
  UNION ALL
  -- An operator's negator or commutator, which the planner may put in its place (NOT (a = b) becomes a <> b).
  SELECT e.rel, e.what, o.fn FROM expressions e, regexp_matches(e.tree, '${OPERATORS_NAMED}', 'g') m, operator_functions o WHERE o.op = m[1]::oid
  UNION ALL
  SELECT e.rel, e.what, d.refobjid FROM expressions e
    JOIN pg_depend d ON d.classid = e.classid AND d.objid = e.objid AND d.refclassid = 'pg_proc'::regclass
  UNION ALL
  -- A range type's subtype_diff and canonical functions: its GiST and SP-GiST indexes call them on
  -- each row written, and ANALYZE does; anyone may make a range type.
  SELECT t.rel, t.what || ' (its range type ' || format_type(t.typ, NULL) || ')', f.fn
    FROM types t JOIN pg_range r ON r.rngtypid = t.typ, unnest(ARRAY[r.rngsubdiff, r.rngcanonical]::oid[]) f(fn) WHERE f.fn <> 0
  UNION ALL
  -- A cast of one of its types to json or jsonb: to_json and its kin look it up as they run, so no parsed form names it.
  SELECT t.rel, t.what || ' (the cast of ' || format_type(t.typ, NULL) || ' to ' || format_type(c.casttarget, NULL) || ')', c.castfunc
    FROM types t JOIN pg_cast c ON c.castsource = t.typ AND c.casttarget IN ${JSON_TYPES} WHERE c.castfunc <> 0)
SELECT DISTINCT n.nspname = '_timescaledb_internal' AS chunk, format('%I.%I', n.nspname, c.relname) AS "table", f.what,
       p.oid::regprocedure::text AS function,
       CASE WHEN NOT r.rolsuper THEN 'a function of the database''s own'
            WHEN p.provolatile = 'v' THEN 'a function that may write (VOLATILE)'
            ELSE 'a function that reads tables or runs a query' END AS why
  FROM functions f JOIN pg_proc p ON p.oid = f.fn JOIN pg_roles r ON r.oid = p.proowner
  JOIN pg_class c ON c.oid = f.rel JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE NOT r.rolsuper OR p.provolatile = 'v' OR p.oid IN (${TEXT_QUERIES})
 ORDER BY 1, 2, 3, 4`;

/**
 * A column's conversion to text or from it ($1 table, $2 column), when it runs a function of the
 * database's own: a cast its type's owner made (of the type, or of the base type of its domain).
 * The masking and the sampling read each value as text, through the one; what a rule writes is
 * assigned to the column through the other.
 */
export const TEXT_CAST = `WITH RECURSIVE base(typ) AS (
    SELECT a.atttypid FROM pg_attribute a WHERE a.attrelid = $1 AND a.attname = $2
    UNION SELECT t.typbasetype FROM pg_type t JOIN base b ON t.oid = b.typ WHERE t.typtype = 'd')
SELECT format_type(b.typ, NULL) AS type, c.castfunc::regprocedure::text AS function,
       CASE WHEN c.castsource = b.typ THEN 'to' ELSE 'from' END AS way
  FROM pg_cast c JOIN base b ON b.typ IN (c.castsource, c.casttarget) JOIN pg_proc p ON p.oid = c.castfunc JOIN pg_roles r ON r.oid = p.proowner
 WHERE NOT r.rolsuper
   AND ((c.castsource = b.typ AND c.casttarget = 'text'::regtype)
        -- What a rule writes (text: keepFirst's, hash's, email's) is assigned to the column through a cast from text.
        OR (c.casttarget = b.typ AND c.castsource IN ('text'::regtype, 'varchar'::regtype, 'bpchar'::regtype)))
 ORDER BY 3 DESC, 1, 2`;

/**
 * What calls a function of the database's own in the tables whose foreign key references one of
 * these ($1: the written tables' oids), and in their partitions: the key's check, run on each row the
 * masking writes, plans a query of that table, and planning runs the function then. It folds the
 * constant part of an index's expression or predicate and of an extended statistics object's
 * expressions, and a partition's CHECK (constraint exclusion) and partition key.
 */
export const KEY_CHECKED_CALLING_OWN = `WITH RECURSIVE own AS (${OWN_FUNCTIONS}),
checked(rel) AS (
  SELECT DISTINCT k.conrelid FROM pg_constraint k WHERE k.contype = 'f' AND k.confrelid = ANY($1::oid[]) AND NOT k.conrelid = ANY($1::oid[])
  UNION SELECT i.inhrelid FROM checked c JOIN pg_inherits i ON i.inhparent = c.rel JOIN pg_class p ON p.oid = i.inhrelid AND p.relispartition),
${callsOf(`
  SELECT format('%I.%I''s index %I', n.nspname, t.relname, x.relname), coalesce(i.indexprs::text, '') || coalesce(i.indpred::text, '')
    FROM checked c JOIN pg_index i ON i.indrelid = c.rel JOIN pg_class x ON x.oid = i.indexrelid JOIN pg_class t ON t.oid = c.rel
    JOIN pg_namespace n ON n.oid = t.relnamespace WHERE i.indexprs IS NOT NULL OR i.indpred IS NOT NULL
  UNION ALL
  SELECT format('%I.%I''s statistics object %I', n.nspname, t.relname, x.stxname), x.stxexprs::text
    FROM checked c JOIN pg_statistic_ext x ON x.stxrelid = c.rel JOIN pg_class t ON t.oid = c.rel
    JOIN pg_namespace n ON n.oid = t.relnamespace WHERE x.stxexprs IS NOT NULL
  UNION ALL
  SELECT format('%I.%I''s constraint %I', n.nspname, t.relname, k.conname), k.conbin::text
    FROM checked c JOIN pg_constraint k ON k.conrelid = c.rel AND k.contype = 'c' JOIN pg_class t ON t.oid = c.rel
    JOIN pg_namespace n ON n.oid = t.relnamespace
  UNION ALL
  SELECT format('%I.%I''s partition key', n.nspname, t.relname), pk.partexprs::text
    FROM checked c JOIN pg_partitioned_table pk ON pk.partrelid = c.rel JOIN pg_class t ON t.oid = c.rel
    JOIN pg_namespace n ON n.oid = t.relnamespace WHERE pk.partexprs IS NOT NULL`)}
SELECT k.key AS place, min(p.oid::regprocedure::text) AS function FROM calls k JOIN pg_proc p ON p.oid = k.fn
 WHERE k.fn IN (SELECT oid FROM own) GROUP BY 1 ORDER BY 1`;
/**
 * The hypertables whose foreign key references one of these ($1: the written tables' oids) with a
 * dimension partitioned by a function of the database's own: TimescaleDB's planner runs it on the
 * key's value, to find the chunks the key's check reads, as each row is masked.
 */
export const KEY_CHECKED_PARTITIONED_BY_OWN = `WITH own AS (${OWN_FUNCTIONS})
SELECT DISTINCT format('%I.%I''s dimension %I', h.schema_name, h.table_name, d.column_name) AS place, p.oid::regprocedure::text AS function
  FROM pg_constraint k JOIN pg_class t ON t.oid = k.conrelid JOIN pg_namespace tn ON tn.oid = t.relnamespace
  JOIN _timescaledb_catalog.hypertable h ON h.schema_name = tn.nspname AND h.table_name = t.relname
  JOIN _timescaledb_catalog.dimension d ON d.hypertable_id = h.id
  JOIN pg_namespace n ON n.nspname = d.partitioning_func_schema JOIN pg_proc p ON p.pronamespace = n.oid AND p.proname = d.partitioning_func
 WHERE k.contype = 'f' AND k.confrelid = ANY($1::oid[]) AND NOT k.conrelid = ANY($1::oid[]) AND p.oid IN (SELECT oid FROM own)
   -- A dimension of the key's columns: the check's query constrains those alone.
   AND d.column_name IN (SELECT a.attname FROM pg_attribute a WHERE a.attrelid = k.conrelid AND a.attnum = ANY(k.conkey))
 ORDER BY 1`;

/**
 * The keys referencing one of these ($1: the written tables' oids) whose check or cascade runs a
 * function of the database's own on each row the masking writes: a cast between the key's column
 * and the column it references (either way: the check compares through one, a cascade assigns
 * through the other), or the equality operator it compares them with.
 */
export const KEY_CASTS_CALLING_OWN = `WITH own AS (${OWN_FUNCTIONS}),
columns AS (
  SELECT k.conrelid, k.conname, a.atttypid AS fk_type, b.atttypid AS pk_type, k.conpfeqop || k.conffeqop AS operators
    FROM pg_constraint k CROSS JOIN LATERAL unnest(k.conkey, k.confkey) u(fk, pk)
    JOIN pg_attribute a ON a.attrelid = k.conrelid AND a.attnum = u.fk
    JOIN pg_attribute b ON b.attrelid = k.confrelid AND b.attnum = u.pk
   WHERE k.contype = 'f' AND k.confrelid = ANY($1::oid[])),
runs AS (
  SELECT c.conrelid, c.conname, x.castfunc AS fn FROM columns c
    JOIN pg_cast x ON (x.castsource = c.fk_type AND x.casttarget = c.pk_type) OR (x.castsource = c.pk_type AND x.casttarget = c.fk_type)
  UNION SELECT c.conrelid, c.conname, o.oprcode::oid FROM columns c JOIN pg_operator o ON o.oid = ANY(c.operators))
SELECT DISTINCT format('%I.%I''s key %I', n.nspname, t.relname, r.conname) AS place, r.fn::regprocedure::text AS function
  FROM runs r JOIN pg_class t ON t.oid = r.conrelid JOIN pg_namespace n ON n.oid = t.relnamespace
 WHERE r.fn IN (SELECT oid FROM own)
 ORDER BY 1, 2`;

/**
 * Tables, materialized views and indexes whose owner's privileges this role does not hold, though
 * the URL's holder may take them (a member through a NOINHERIT role alone, by SET ROLE; with
 * CREATEROLE, through a role it makes a member), and the preparation could not lend itself (the
 * owner a member of this role, so the grant would be circular; this role NOINHERIT): their
 * statistics are hidden from the checks (pg_stats shows them to their owner alone).
 */
export const HIDDEN_BY_OWNER = `SELECT format('%I.%I', n.nspname, c.relname) AS place, o.rolname AS owner
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace JOIN pg_roles o ON o.oid = c.relowner
 WHERE c.relkind IN ('r', 'p', 'm', 'i', 'I') AND n.nspname NOT IN ('pg_catalog', 'information_schema')
   AND NOT o.rolsuper AND NOT pg_has_role(c.relowner, 'USAGE')
   -- Whoever holds the URL can take the owner's privileges: a member (SET ROLE), or with CREATEROLE.
   AND (pg_has_role(c.relowner, 'MEMBER') OR (SELECT rolcreaterole FROM pg_roles WHERE rolname = current_user))
 ORDER BY 1`;

/** TimescaleDB's own jobs (telemetry, its job-history retention) have IDs below 1000; a user's and a policy's, from it on: those scheduled. */
export const SCHEDULED_JOBS = "SELECT job_id FROM timescaledb_information.jobs WHERE job_id >= 1000 AND scheduled ORDER BY job_id";
/**
 * The scheduled jobs for which TimescaleDB's alter_job runs a function of the database's own when
 * pauseJobs pauses them, before anything is masked or held off: a job's check_config (run with its
 * config), and the integer_now (a policy's check computes its window from it) of the job's
 * hypertable, of one its config names, or of the hypertable under an aggregate, at any depth of a hierarchy.
 */
export const JOBS_CHECKED_BY_OWN = `WITH RECURSIVE own AS (${OWN_FUNCTIONS}),
-- A policy's hypertable, or its aggregate's (jobs names an aggregate by its view) materialization hypertable.
scheduled AS (SELECT j.job_id, j.check_schema, j.check_name, j.config, coalesce(h.id, ca.mat_hypertable_id) AS hypertable
                FROM timescaledb_information.jobs j
                LEFT JOIN _timescaledb_catalog.hypertable h ON h.schema_name = j.hypertable_schema AND h.table_name = j.hypertable_name
                LEFT JOIN _timescaledb_catalog.continuous_agg ca ON ca.user_view_schema = j.hypertable_schema AND ca.user_view_name = j.hypertable_name
               WHERE j.job_id >= 1000 AND j.scheduled),
-- And whatever hypertable its config names: TimescaleDB's own checks take theirs from there, and add_job's jobs name none above.
under(job_id, hypertable) AS (
  SELECT job_id, hypertable FROM scheduled WHERE hypertable IS NOT NULL
  UNION SELECT s.job_id, (s.config ->> k.key)::int FROM scheduled s, LATERAL (VALUES ('hypertable_id'), ('mat_hypertable_id')) k(key)
         WHERE jsonb_typeof(s.config) = 'object' AND (s.config ->> k.key) ~ '^[0-9]{1,9}$'
  UNION SELECT u.job_id, ca.raw_hypertable_id FROM under u JOIN _timescaledb_catalog.continuous_agg ca ON ca.mat_hypertable_id = u.hypertable)
SELECT s.job_id, 'check_config' AS what, format('%I.%I', s.check_schema, s.check_name) AS "check"
  FROM scheduled s JOIN pg_namespace n ON n.nspname = s.check_schema
  JOIN pg_proc p ON p.pronamespace = n.oid AND p.proname = s.check_name
 WHERE p.oid IN (SELECT oid FROM own)
UNION
SELECT u.job_id, 'integer_now function (of the hypertable it or its config names, or the one under its aggregate)', format('%I.%I', d.integer_now_func_schema, d.integer_now_func)
  FROM under u JOIN _timescaledb_catalog.dimension d ON d.hypertable_id = u.hypertable
  JOIN pg_namespace n ON n.nspname = d.integer_now_func_schema JOIN pg_proc p ON p.pronamespace = n.oid AND p.proname = d.integer_now_func
 WHERE p.oid IN (SELECT oid FROM own)
 ORDER BY 1, 2`;
/**
 * The scheduled jobs with a check_config whose config holds a hypertable_id or mat_hypertable_id
 * that is not an id as TimescaleDB writes one (a JSON number, digits alone): TimescaleDB's checks
 * read it as an int4 from its text, which takes more forms than digits (a sign, white space, and
 * from PostgreSQL 16 underscores and 0x), so which hypertable's integer_now alter_job runs cannot be
 * told (JOBS_CHECKED_BY_OWN follows only ids written as numbers).
 */
export const JOBS_CONFIG_UNREAD = `SELECT j.job_id, k.key
  FROM timescaledb_information.jobs j, LATERAL (VALUES ('hypertable_id'), ('mat_hypertable_id')) k(key)
 WHERE j.job_id >= 1000 AND j.scheduled AND j.check_name IS NOT NULL AND jsonb_typeof(j.config) = 'object'
   AND j.config ? k.key AND jsonb_typeof(j.config -> k.key) <> 'null' AND NOT coalesce(j.config ->> k.key ~ '^[0-9]{1,9}$', false)
 ORDER BY 1, 2`;
/** Which of these jobs ($1) are running now. */
export const RUNNING_JOBS = "SELECT job_id FROM timescaledb_information.job_stats WHERE job_id = ANY($1::int[]) AND job_status = 'Running'";
/** Rows compressed meanwhile by a job not paused are decompressed by the UPDATE itself: no limit then. */
export const NO_DECOMPRESSION_LIMIT = "SET LOCAL timescaledb.max_tuples_decompressed_per_dml_transaction = 0";
/** enable_chunk_skipping refuses unless this is on (it is off by default). */
export const CHUNK_SKIPPING_ON = "SET LOCAL timescaledb.enable_chunk_skipping = on";

/** Whether a table ($1 schema, $2 name) is a hypertable. */
export const IS_HYPERTABLE =
  "SELECT count(*)::int AS n FROM timescaledb_information.hypertables WHERE hypertable_schema = $1 AND hypertable_name = $2";

export const analyze = (table: Quoted) => `ANALYZE ${table}`;
export const dropTable = (table: Quoted) => `DROP TABLE ${table}`;
/** The statistics of the whole (inherited) these tables ($1: oids) hold of these columns ($2: names): a parent's, of every table under it. */
export const INHERITED_STATISTICS = `SELECT DISTINCT format('%I.%I', n.nspname, c.relname) || ' (' || s.attname || ')' AS place
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
  JOIN pg_stats s ON s.schemaname = n.nspname AND s.tablename = c.relname AND s.inherited
 WHERE c.oid = ANY($1::oid[]) AND s.attname = ANY($2::text[]) ORDER BY 1`;
export const vacuumFull = (table: Quoted) => `VACUUM (FULL) ${table}`;
/** Whether a relation holds no row, read without reading it all. */
export const isEmpty = (relation: Quoted) => `SELECT count(*)::int = 0 AS empty FROM (SELECT 1 FROM ${relation} LIMIT 1) x`;

/** A masked table's rows that "null" rules change: their columns' values that are not NULL, counted before (c0, c1, ...). */
export const countNotNull = (table: Quoted, columns: Quoted[]) =>
  `SELECT ${columns.map((c, n) => `count(${c})::int AS c${n}`).join(", ")} FROM ${table}`;

/** One UPDATE of a masked table, every rule of it at once, each column by the table's alias (a column of the pseudonym table's own name, email, would be taken instead). */
export function maskUpdate(table: Quoted, rules: { rule: MaskRule; column: Quoted }[], param: Param): string {
  const sets = rules.map((r) => `${r.column} = ${maskExpression(r.rule, `${TARGET}.${r.column}` as Quoted, param)}`);
  const changed = rules.map((r) => `${r.column} IS NOT NULL`).join(" OR ");
  return `UPDATE ${table} AS ${TARGET} SET ${sets.join(", ")} WHERE ${changed}`;
}

/** One scan of a masked table: each rule's values not NULL (n0, n1, ...) and its rows holding what the rule does not write (bad0, bad1, ...). */
export function maskedRows(table: Quoted, rules: { rule: MaskRule; column: Quoted }[], param: Param): string {
  const columns = rules.map(
    (r, n) => `count(${r.column})::int AS n${n}, count(*) FILTER (WHERE NOT ${maskedCondition(r.rule, r.column, param)})::int AS bad${n}`,
  );
  return `SELECT ${columns.join(", ")} FROM ${table}`;
}

/** An empty table's statistics dropped, one column at a time (setting its type again does), where PostgreSQL lets it. */
export const SAVEPOINT = "SAVEPOINT emptied";
export const RELEASE_SAVEPOINT = "RELEASE SAVEPOINT emptied";
export const ROLLBACK_TO_SAVEPOINT = "ROLLBACK TO SAVEPOINT emptied";

/** A view's columns ($1: its name), quoted by the server. */
export const VIEW_COLUMNS = `SELECT quote_ident(attname) AS "column" FROM pg_attribute WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped`;

/**
 * A materialized view or an aggregate's materialization hypertable ($1 its oid) that its refresh
 * left empty but that holds statistics (ANALYZE keeps an empty table's old ones): a row if so.
 */
export const emptyWithStatistics = (view: Quoted) => `SELECT 1 AS found WHERE NOT EXISTS (SELECT 1 FROM ${view})
   AND EXISTS (SELECT 1 FROM pg_stats s JOIN pg_namespace n ON n.nspname = s.schemaname JOIN pg_class c ON c.relnamespace = n.oid AND c.relname = s.tablename
                WHERE c.oid = $1)`;

/**
 * Chunks TimescaleDB left behind: tables named as its chunks are, in a schema its chunks live in,
 * that its catalog no longer lists (TimescaleDB 2.28's DROP MATERIALIZED VIEW of a compressed
 * aggregate keeps its compressed chunks' tables, production's rows and statistics in them). Whether
 * this role may drop each, and the statement that would.
 */
export const CHUNKS_LEFT_BEHIND = `SELECT format('%I.%I', n.nspname, c.relname) AS "table", c.relowner::regrole::text AS owner,
       pg_has_role(c.relowner, 'MEMBER') AS ours, format('DROP TABLE %I.%I', n.nspname, c.relname) AS "drop"
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE c.relkind = 'r' AND c.relname ~ '^(compress_hyper|_hyper)_[0-9]+_[0-9]+_chunk$'
   AND n.nspname IN (SELECT '_timescaledb_internal' UNION SELECT associated_schema_name FROM _timescaledb_catalog.hypertable)
   AND NOT EXISTS (SELECT 1 FROM _timescaledb_catalog.chunk ch WHERE ch.schema_name = n.nspname AND ch.table_name = c.relname)
   AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype = 'e')
 ORDER BY 1`;

/**
 * Settings only a superuser may change that change what the masking does, when not PostgreSQL's
 * own: under session_replication_role = replica, PostgreSQL's own triggers of foreign keys do not
 * fire (a masked key's cascade would not run) and ENABLE REPLICA triggers do.
 */
export const PLATFORM_SETTINGS = `SELECT name, setting FROM pg_catalog.pg_settings WHERE name = 'session_replication_role' AND setting <> 'origin'`;
