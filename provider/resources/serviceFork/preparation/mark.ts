// The mark of a prepared fork: a row the preparation writes in the fork's own database once its
// masking is committed and checked, naming the fork, its source, the preparation's digest and the
// columns masked (never a value). A fork of that fork copies it with the data, so the new fork's
// database says whether its source was masked: requireMasking reads it (masking.ts) before the new
// fork's URL is published. The URL holder (tsdbadmin) can write the table too: see docs/masking.md
// for what that can and cannot forge.
import { z } from "zod";
import { MASKS, type Prepared } from "./schema";

/** The schema and table the provider owns in a fork's database. */
export const MARK_SCHEMA = "_tigercloud";
export const MARK_TABLE = "prepared_forks";
const QUALIFIED = `${MARK_SCHEMA}.${MARK_TABLE}`;

/** The statements that write the mark, last, in a transaction of their own: a mark of this fork replaces any earlier one. */
export function markStatements(params: MarkParameters): [string, unknown[]?][] {
  return [
    [`CREATE SCHEMA IF NOT EXISTS ${MARK_SCHEMA}`],
    [
      `CREATE TABLE IF NOT EXISTS ${QUALIFIED} (fork_service_id text PRIMARY KEY, source_service_id text NOT NULL, ` +
        `preparation_digest text NOT NULL, masked_columns jsonb NOT NULL, data_taken_at timestamptz NOT NULL, verified_at timestamptz NOT NULL)`,
    ],
    [
      `COMMENT ON TABLE ${QUALIFIED} IS 'pulumi-tigercloud: forks whose preparation masked and was checked, ` +
        `one row per fork, copied into forks of it; see the package''s docs/masking.md'`,
    ],
    [`DELETE FROM ${QUALIFIED} WHERE fork_service_id = $1`, [params[0]]],
    [
      `INSERT INTO ${QUALIFIED} (fork_service_id, source_service_id, preparation_digest, masked_columns, data_taken_at, verified_at) ` +
        `VALUES ($1, $2, $3, $4::jsonb, $5::timestamptz, now())`,
      params,
    ],
  ];
}

type MarkParameters = [fork: string, source: string, digest: string, columns: string, dataTakenAt: string];

/** What a mark records of one masked column: where, and the rule's kind. */
export interface MarkedColumn {
  table: string;
  column: string;
  with: string;
}

/** The parameters of the INSERT, from what the preparation did. */
export function markParameters(
  forkId: string,
  sourceId: string,
  prepared: Pick<Prepared, "digest" | "masked">,
  dataTakenAt: string,
): MarkParameters {
  const columns: MarkedColumn[] = prepared.masked.map((m) => {
    const at = m.rule.lastIndexOf(".");
    return { table: m.rule.slice(0, at), column: m.rule.slice(at + 1), with: m.with };
  });
  return [forkId, sourceId, prepared.digest, JSON.stringify(columns), dataTakenAt];
}

/** Whether the table is there, and an ordinary table (not a view someone made in its place). */
export const MARK_TABLE_KIND = `SELECT c.relkind::text AS kind FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
  WHERE n.nspname = '${MARK_SCHEMA}' AND c.relname = '${MARK_TABLE}'`;

/** The rows naming one service, every column as text (times as epoch seconds): one small table, no data of the fork's read. */
export const READ_MARK = `SELECT fork_service_id::text AS fork, source_service_id::text AS source, preparation_digest::text AS digest,
  masked_columns::text AS masked, extract(epoch FROM data_taken_at)::float8 AS taken, extract(epoch FROM verified_at)::float8 AS verified
  FROM ${QUALIFIED} WHERE fork_service_id::text = $1 LIMIT 2`;

const IDENTIFIER = /^[a-z_][a-z0-9_$]{0,62}$/;
const SERVICE_ID = /^[A-Za-z0-9_-]{1,64}$/;

/** What the output says of a fork whose source was a verified masked fork: never data. */
export const MaskedSourceSchema = z
  .object({
    serviceId: z.string().describe("The source: the masked fork this fork was made from."),
    sourceServiceId: z.string().describe("The service the masked fork was made from, as its mark says and the API confirms."),
    productionServiceId: z.string().describe("The service tagged PROD its data descends from, as the API reports the chain of forks."),
    digest: z.string().describe("The digest of the masked fork's preparation, as its outputs say it (prepared)."),
    masked: z
      .array(
        z
          .object({
            table: z.string().describe('The table, "schema.table".'),
            column: z.string().describe("The column."),
            with: z.string().describe("The masking function that replaced its values."),
          })
          .meta({
            typeName: "ServiceForkMaskedColumn",
            typeDescription: "A column a preparation masked: where, and with what; never a value.",
          }),
      )
      .describe("The columns the masked fork's preparation masked."),
    dataTakenAt: z.string().describe("When its data was taken from its source (RFC 3339), as the masked fork's preparation recorded it."),
    verifiedAt: z.string().describe("When the masked fork's preparation was checked (RFC 3339)."),
  })
  .meta({
    typeName: "ServiceForkMaskedSource",
    typeDescription: "The verified masked fork a fork was made from, as its mark in the fork's database says: never data.",
  });
export type MaskedSource = z.output<typeof MaskedSourceSchema>;

/** A mark as read: anyone holding a URL of a fork in the chain may have written it, so every field is held to its shape. */
const MarkSchema = z.strictObject({
  serviceId: z.string().regex(SERVICE_ID),
  sourceServiceId: z.string().regex(SERVICE_ID),
  productionServiceId: z.string().regex(SERVICE_ID),
  digest: z.string().regex(/^[0-9a-f]{64}$/),
  masked: z
    .array(
      z.strictObject({
        table: z.string().regex(/^[a-z_][a-z0-9_$]{0,62}\.[a-z_][a-z0-9_$]{0,62}$/),
        column: z.string().regex(IDENTIFIER),
        with: z.enum(MASKS),
      }),
    )
    .min(1)
    .max(1000),
  dataTakenAt: z.iso.datetime(),
  verifiedAt: z.iso.datetime(),
});

/** A row READ_MARK returned. */
export interface MarkRow {
  fork: unknown;
  source: unknown;
  digest: unknown;
  masked: unknown;
  taken: unknown;
  verified: unknown;
}

const epoch = (v: unknown) => (typeof v === "number" && Number.isFinite(v) ? new Date(v * 1000).toISOString() : undefined);

/**
 * The mark of `source` among `rows`, parsed, or why it does not vouch for it: the rows may have
 * been written by anyone holding a URL of a fork in the chain, so each field is checked for its
 * shape, and the mark's own source must be the one the API says the source was forked from.
 */
export function markOf(
  rows: MarkRow[],
  source: { serviceId: string; forkedFrom: string; production: string },
): { mark: MaskedSource } | { problem: string } {
  const named = rows.filter((r) => r.fork === source.serviceId);
  if (named.length === 0) return { problem: `holds no mark of service ${source.serviceId}` };
  if (named.length > 1) return { problem: `holds more than one mark of service ${source.serviceId}` };
  const row = named[0] as MarkRow;
  if (row.source !== source.forkedFrom)
    return {
      problem: `holds a mark of service ${source.serviceId} naming another source than the one the API reports it was forked from (${source.forkedFrom})`,
    };
  let masked: unknown;
  try {
    masked = typeof row.masked === "string" ? JSON.parse(row.masked) : undefined;
  } catch {
    masked = undefined;
  }
  const parsed = MarkSchema.safeParse({
    serviceId: row.fork,
    sourceServiceId: row.source,
    productionServiceId: source.production,
    digest: row.digest,
    masked,
    dataTakenAt: epoch(row.taken),
    verifiedAt: epoch(row.verified),
  });
  if (!parsed.success)
    return {
      problem: `holds a mark of service ${source.serviceId} that is not one the provider writes (${parsed.error.issues.map((i) => i.path.join(".") || "row").join(", ")})`,
    };
  return { mark: parsed.data };
}
