// The database as a migration may change it, read before and after: its schema (normalized, one
// line per object, so that a diff shows only what changed), each relation's file (a new file of
// the same relation is a rewrite; a new index, a build), each table's row counters, and
// TimescaleDB's chunks and policies. Internal schemas (PostgreSQL's, TimescaleDB's) and chunks
// are left out of the schema: their changes show as the hypertable's.
import { z } from "zod";
import type { Connection } from "./connection";

const USER_SCHEMAS = `n.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast') AND n.nspname NOT LIKE 'pg\\_%'
  AND n.nspname NOT LIKE '\\_timescaledb%' AND n.nspname NOT LIKE 'timescaledb\\_%' AND n.nspname <> 'toolkit_experimental'
  AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_depend d WHERE d.objid = n.oid AND d.deptype = 'e')`;

/** Every object as a key (what it is) and its definition; ordered. */
const OBJECTS = `WITH rels AS (
  SELECT c.oid, c.relkind, format('%I.%I', n.nspname, c.relname) AS name FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
   WHERE ${USER_SCHEMAS} AND c.relkind IN ('r', 'p', 'v', 'm', 'f', 'S'))
SELECT 'table ' || r.name AS key, CASE r.relkind WHEN 'p' THEN 'partitioned table' WHEN 'f' THEN 'foreign table' WHEN 'S' THEN 'sequence' ELSE 'table' END AS definition
  FROM rels r WHERE r.relkind IN ('r', 'p', 'f', 'S')
UNION ALL
SELECT 'column ' || r.name || '.' || quote_ident(a.attname),
       pg_catalog.format_type(a.atttypid, a.atttypmod) || CASE WHEN a.attnotnull THEN ' NOT NULL' ELSE '' END ||
       coalesce(' DEFAULT ' || pg_catalog.pg_get_expr(d.adbin, d.adrelid), '')
  FROM rels r JOIN pg_catalog.pg_attribute a ON a.attrelid = r.oid AND a.attnum > 0 AND NOT a.attisdropped
  LEFT JOIN pg_catalog.pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
 WHERE r.relkind IN ('r', 'p', 'f', 'v', 'm')
UNION ALL
SELECT 'index ' || format('%I.%I', n.nspname, c.relname), pg_catalog.pg_get_indexdef(i.indexrelid) || CASE WHEN i.indisvalid THEN '' ELSE ' (INVALID)' END
  FROM pg_catalog.pg_index i JOIN rels r ON r.oid = i.indrelid JOIN pg_catalog.pg_class c ON c.oid = i.indexrelid
  JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
UNION ALL
SELECT 'constraint ' || r.name || '.' || quote_ident(k.conname), pg_catalog.pg_get_constraintdef(k.oid) || CASE WHEN k.convalidated THEN '' ELSE ' (NOT VALID)' END
  FROM pg_catalog.pg_constraint k JOIN rels r ON r.oid = k.conrelid
UNION ALL
SELECT CASE r.relkind WHEN 'v' THEN 'view ' ELSE 'materialized view ' END || r.name, pg_catalog.pg_get_viewdef(r.oid, true)
  FROM rels r WHERE r.relkind IN ('v', 'm')
UNION ALL
SELECT 'function ' || p.oid::regprocedure::text, 'returns ' || pg_catalog.pg_get_function_result(p.oid) || ', body md5 ' || md5(coalesce(p.prosrc, ''))
  FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace WHERE ${USER_SCHEMAS}
UNION ALL
SELECT 'trigger ' || r.name || '.' || quote_ident(t.tgname), pg_catalog.pg_get_triggerdef(t.oid) || CASE t.tgenabled WHEN 'D' THEN ' (DISABLED)' ELSE '' END
  FROM pg_catalog.pg_trigger t JOIN rels r ON r.oid = t.tgrelid WHERE NOT t.tgisinternal
ORDER BY 1`;

/** TimescaleDB's: hypertables' dimensions and compression settings, continuous aggregates, jobs (policies). */
const TIMESCALEDB_OBJECTS = `SELECT 'hypertable ' || format('%I.%I', h.hypertable_schema, h.hypertable_name) AS key,
       'dimensions ' || (SELECT string_agg(d.column_name || coalesce(' every ' || d.time_interval::text, coalesce(' every ' || d.integer_interval::text, '')), ', ' ORDER BY d.dimension_number)
                           FROM timescaledb_information.dimensions d WHERE d.hypertable_schema = h.hypertable_schema AND d.hypertable_name = h.hypertable_name) ||
       CASE WHEN h.compression_enabled THEN ', compressed: ' || coalesce((SELECT string_agg(s.attname || CASE WHEN s.segmentby_column_index IS NOT NULL THEN ' segmentby' ELSE ' orderby' || CASE WHEN s.orderby_asc THEN '' ELSE ' desc' END END, ', ' ORDER BY coalesce(s.segmentby_column_index, 0), s.orderby_column_index)
                           FROM timescaledb_information.compression_settings s WHERE s.hypertable_schema = h.hypertable_schema AND s.hypertable_name = h.hypertable_name), '') ELSE '' END AS definition
  FROM timescaledb_information.hypertables h
UNION ALL
SELECT 'continuous aggregate ' || format('%I.%I', view_schema, view_name), 'materialized only: ' || materialized_only || ', compressed: ' || compression_enabled
  FROM timescaledb_information.continuous_aggregates
UNION ALL
SELECT 'job ' || j.proc_name || CASE WHEN j.hypertable_name IS NULL THEN '' ELSE ' on ' || format('%I.%I', j.hypertable_schema, j.hypertable_name) END,
       'every ' || j.schedule_interval::text || coalesce(', config ' || j.config::text, '') || CASE WHEN j.scheduled THEN '' ELSE ' (not scheduled)' END
  FROM timescaledb_information.jobs j WHERE j.job_id >= 1000
ORDER BY 1`;

/** Each user relation's file and size; an index's table. */
const FILES = `SELECT c.oid::int AS oid, format('%I.%I', n.nspname, c.relname) AS name, c.relkind::text AS kind, c.relfilenode::int AS file,
       pg_catalog.pg_total_relation_size(c.oid)::float8 AS bytes,
       (SELECT format('%I.%I', tn.nspname, t.relname) FROM pg_catalog.pg_index i JOIN pg_catalog.pg_class t ON t.oid = i.indrelid
          JOIN pg_catalog.pg_namespace tn ON tn.oid = t.relnamespace WHERE i.indexrelid = c.oid) AS "table",
       coalesce(h.relation, format('%I.%I', n.nspname, c.relname)) AS "of",
       (SELECT format('%I.%I', rn.nspname, r.relname) FROM pg_catalog.pg_class r JOIN pg_catalog.pg_namespace rn ON rn.oid = r.relnamespace
         WHERE c.relispartition AND r.oid = pg_catalog.pg_partition_root(c.oid)) AS root
  FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
  LEFT JOIN chunks h ON h.chunk = c.oid
 WHERE c.relkind IN ('r', 'p', 'm', 'i') AND n.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast') AND n.nspname NOT LIKE 'pg\\_%'`;

/** Rows written per user table since the statistics began (a chunk's counted as its hypertable's). Not
 *  counted: TimescaleDB's catalog and compressed chunks, whose rows are its bookkeeping and batches of
 *  rows, not the application's (an UPDATE of compressed rows deletes batches and writes the rows back). */
const COUNTERS = `SELECT coalesce(h.relation, format('%I.%I', s.schemaname, s.relname)) AS "table",
       sum(s.n_tup_ins)::float8 AS inserted, sum(s.n_tup_upd)::float8 AS updated, sum(s.n_tup_del)::float8 AS deleted
  FROM pg_catalog.pg_stat_user_tables s JOIN pg_catalog.pg_class c ON c.oid = s.relid JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
  LEFT JOIN chunks h ON h.chunk = s.relid
 WHERE CASE WHEN h.chunk IS NOT NULL THEN NOT h.compressed ELSE ${USER_SCHEMAS} END
 GROUP BY 1`;

/** Each hypertable's chunks: how many, compressed, and partly (rows written into a compressed chunk). A chunk
 *  counts while its table exists: older TimescaleDB keeps a dropped chunk's row (chunk.dropped, a column
 *  2.28 no longer has), so the table is what tells them apart on every version. */
const CHUNK_STATES = `SELECT format('%I.%I', h.schema_name, h.table_name) AS hypertable, count(*)::int AS chunks,
       count(*) FILTER (WHERE k.status & 1 = 1)::int AS compressed, count(*) FILTER (WHERE k.status & 8 = 8)::int AS partial
  FROM _timescaledb_catalog.chunk k JOIN _timescaledb_catalog.hypertable h ON h.id = k.hypertable_id
 WHERE h.compression_state <> 2
   AND EXISTS (SELECT 1 FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
                WHERE n.nspname = k.schema_name AND c.relname = k.table_name)
 GROUP BY 1 ORDER BY 1`;

/** Each chunk's hypertable, the one the application knows: a compressed chunk's is the hypertable whose
 *  rows it holds, not TimescaleDB's internal one (`compressed` says which it is). Shared with watch.ts. */
export const CHUNK_OWNERS = `SELECT c.oid AS chunk, format('%I.%I', coalesce(p.schema_name, h.schema_name), coalesce(p.table_name, h.table_name)) AS relation,
       p.id IS NOT NULL AS compressed
  FROM _timescaledb_catalog.chunk k JOIN _timescaledb_catalog.hypertable h ON h.id = k.hypertable_id
  LEFT JOIN _timescaledb_catalog.hypertable p ON p.compressed_hypertable_id = h.id
  JOIN pg_catalog.pg_class c ON c.relname = k.table_name JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace AND n.nspname = k.schema_name`;
export const NO_CHUNKS = "SELECT NULL::oid AS chunk, NULL::text AS relation, NULL::boolean AS compressed WHERE false";

const SchemaObject = z.object({ key: z.string(), definition: z.string().nullable() });
const RelationFile = z.object({
  oid: z.number(),
  name: z.string(),
  kind: z.string(),
  file: z.number(),
  bytes: z.number(),
  table: z.string().nullable(),
  of: z.string(),
  /** A partition's partitioned table (its root): writes to that go to the partition. */
  root: z.string().nullable().optional(),
});
const Counter = z.object({ table: z.string(), inserted: z.number(), updated: z.number(), deleted: z.number() });
const ChunkState = z.object({ hypertable: z.string(), chunks: z.number(), compressed: z.number(), partial: z.number() });

export type RelationFile = z.infer<typeof RelationFile>;
export type Counter = z.infer<typeof Counter>;
export type ChunkState = z.infer<typeof ChunkState>;

export interface Snapshot {
  objects: Map<string, string>;
  files: RelationFile[];
  counters: Counter[];
  chunks: ChunkState[];
  timescaledb: boolean;
}

export async function snapshot(db: Connection): Promise<Snapshot> {
  const timescaledb =
    ((await db.query<{ n: number }>("SELECT count(*)::int AS n FROM pg_catalog.pg_extension WHERE extname = 'timescaledb'"))[0]?.n ?? 0) >
    0;
  const chunks = `WITH chunks AS MATERIALIZED (${timescaledb ? CHUNK_OWNERS : NO_CHUNKS}) `;
  const objects = z.array(SchemaObject).parse([...(await db.query(OBJECTS)), ...(timescaledb ? await db.query(TIMESCALEDB_OBJECTS) : [])]);
  return {
    objects: new Map(objects.map((o) => [o.key, o.definition ?? ""])),
    files: z.array(RelationFile).parse(await db.query(chunks + FILES)),
    counters: z.array(Counter).parse(await db.query(chunks + COUNTERS)),
    chunks: timescaledb ? z.array(ChunkState).parse(await db.query(CHUNK_STATES)) : [],
    timescaledb,
  };
}

/** One line of the schema's difference. */
export interface SchemaChange {
  change: "added" | "removed" | "changed";
  key: string;
  before?: string;
  after?: string;
}

export function schemaDiff(before: Snapshot, after: Snapshot): SchemaChange[] {
  const changes: SchemaChange[] = [];
  for (const [key, was] of before.objects) {
    const now = after.objects.get(key);
    if (now === undefined) changes.push({ change: "removed", key, before: was });
    else if (now !== was) changes.push({ change: "changed", key, before: was, after: now });
  }
  for (const [key, now] of after.objects) if (!before.objects.has(key)) changes.push({ change: "added", key, after: now });
  return changes.sort((a, b) => a.key.localeCompare(b.key));
}

/** A relation rewritten (same relation, new file) or built (a new index), and its size after. */
export interface Rewrite {
  relation: string;
  /** The table it belongs to (an index's), or its hypertable (a chunk's). */
  of: string;
  kind: "rewrote" | "built";
  bytes: number;
}

export function rewrites(before: Snapshot, after: Snapshot): Rewrite[] {
  const was = new Map(before.files.map((f) => [f.oid, f]));
  const out: Rewrite[] = [];
  for (const f of after.files) {
    const old = was.get(f.oid);
    if (old && old.file !== f.file && f.file !== 0) out.push({ relation: f.name, of: f.table ?? f.of, kind: "rewrote", bytes: f.bytes });
    if (!old && f.kind === "i") out.push({ relation: f.name, of: f.table ?? f.of, kind: "built", bytes: f.bytes });
  }
  return out;
}

/** Rows inserted, updated and deleted per table between the two snapshots. */
export function rowsChanged(before: Snapshot, after: Snapshot): Counter[] {
  const was = new Map(before.counters.map((c) => [c.table, c]));
  return after.counters
    .map((c) => {
      const old = was.get(c.table) ?? { inserted: 0, updated: 0, deleted: 0 };
      return { table: c.table, inserted: c.inserted - old.inserted, updated: c.updated - old.updated, deleted: c.deleted - old.deleted };
    })
    .filter((c) => c.inserted || c.updated || c.deleted)
    .sort((a, b) => a.table.localeCompare(b.table));
}
