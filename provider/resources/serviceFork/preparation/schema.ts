// What a fork's preparation is, as a program declares it (checked at preview), and what it did, as
// the fork's outputs say it (never data). The runner is run.ts; the SQL it sends, statements.ts.
import * as crypto from "crypto";
import { z } from "zod";
import { booleanSchema, textSchema } from "../../../rules/inputSchemas";

/** A PostgreSQL identifier as written unquoted: what a rule may name, so that nothing else is ever spliced into SQL. */
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_$]{0,62}$/;
const identifierProblem = (s: string) =>
  IDENTIFIER.test(s)
    ? undefined
    : "must be a plain SQL identifier: a letter or _, then letters, digits, _ or $, at most 63 characters (no quotes, spaces or dots)";
const tableProblem = (s: string) => {
  const parts = s.split(".");
  if (parts.length > 2 || parts.some((p) => !IDENTIFIER.test(p)))
    return 'must be a table as "name" or "schema.name", each a plain SQL identifier (a letter or _, then letters, digits, _ or $)';
  return undefined;
};

/** The masking functions; their type, Mask, is declared once, with the program's classes (program/resources.ts). */
export const MASKS = ["null", "constant", "hash", "email", "keepFirst"] as const;
/** keepFirst keeps at most this many characters. */
export const MAX_KEEP = 1000;

const MaskRuleSchema = z
  .strictObject({
    table: textSchema(tableProblem).describe('The table, "name" (schema public) or "schema.name".'),
    column: textSchema(identifierProblem).describe("The column to mask."),
    with: z
      .enum(MASKS, { error: `must be one of ${MASKS.join(", ")}` })
      .meta({
        typeName: "Mask",
        typeDescription: "What a masking rule writes in place of each value.",
        values: {
          null: "NULL in place of every value.",
          constant: "The rule's value, the same in every row.",
          hash: "A pseudonym, h<tag>-<n> (text columns): n numbers the distinct values in the order of a keyed hash, so equal values stay equal and distinct ones distinct (joins and uniqueness hold); key and tag are new for each fork.",
          email:
            "A fake e-mail address, user-<tag>-<n>@example.invalid, with the same numbering as hash (text columns): unique where the values were.",
          keepFirst: "The value's first `chars` characters (text columns).",
        },
      })
      .describe('The masking function: "null", "constant" (with value), "hash", "email" or "keepFirst" (with chars). NULLs stay NULL.'),
    value: z.string({ error: "must be a string" }).optional().describe('The value "constant" writes; only with "constant".'),
    chars: z
      .number({ error: "must be a whole number" })
      .int({ error: "must be a whole number" })
      .min(1, { error: `must be 1 to ${MAX_KEEP}` })
      .max(MAX_KEEP, { error: `must be 1 to ${MAX_KEEP}` })
      .optional()
      .describe(`How many characters "keepFirst" keeps, 1 to ${MAX_KEEP}; only with "keepFirst".`),
  })
  .superRefine((rule, ctx) => {
    const label = `(${rule.table}.${rule.column}, with ${rule.with})`;
    if (rule.with === "constant" && rule.value === undefined)
      ctx.addIssue({ code: "custom", path: ["value"], message: `is required with "constant" ${label}` });
    if (rule.with !== "constant" && rule.value !== undefined)
      ctx.addIssue({ code: "custom", path: ["value"], message: `is allowed only with "constant" ${label}` });
    if (rule.with === "keepFirst" && rule.chars === undefined)
      ctx.addIssue({ code: "custom", path: ["chars"], message: `is required with "keepFirst" ${label}` });
    if (rule.with !== "keepFirst" && rule.chars !== undefined)
      ctx.addIssue({ code: "custom", path: ["chars"], message: `is allowed only with "keepFirst" ${label}` });
  })
  .meta({ typeName: "ServiceForkMaskRule", typeDescription: "A masking rule: one column of one table, and what replaces its values." });
export type MaskRule = z.output<typeof MaskRuleSchema>;

export const PreparationSchema = z
  .strictObject({
    sql: z
      .array(z.string({ error: "must be a string of SQL" }).min(1, { error: "must not be empty" }), {
        error: "must be a list of SQL texts",
      })
      .optional()
      .describe(
        "SQL to run first, in order, each text one or more statements (a file's content, as the program reads it: `fn::readFile` in YAML).",
      ),
    mask: z
      .array(MaskRuleSchema, { error: "must be a list of masking rules" })
      .optional()
      .describe(
        "Masking rules, run after the SQL in the same transaction: each replaces every value of one column (in every chunk, " +
          "compressed or not), with the table's triggers and rules held off; then what is kept from those columns (statistics, " +
          "materialized views, continuous aggregates) is brought up to date and checked before the connection strings are published.",
      ),
    sqlAfter: z
      .array(z.string({ error: "must be a string of SQL" }).min(1, { error: "must not be empty" }), {
        error: "must be a list of SQL texts",
      })
      .optional()
      .describe("SQL to run after the masking, in the same transaction, on the masked data: a seed, your own views refreshed."),
    pauseJobs: booleanSchema
      .default(false)
      .describe(
        "Pause the fork's TimescaleDB background jobs (retention, compression, refreshes, user-defined actions; not TimescaleDB's own, " +
          "job_id below 1000) with alter_job(job_id, scheduled => false), first, committed on its own. Default false.",
      ),
  })
  .superRefine((p, ctx) => {
    if ((p.sql?.length ?? 0) + (p.mask?.length ?? 0) + (p.sqlAfter?.length ?? 0) === 0 && !p.pauseJobs)
      ctx.addIssue({
        code: "custom",
        message: "declares nothing to do: give sql, mask, sqlAfter or pauseJobs: true, or leave prepare out",
      });
    const seen = new Map<string, number>();
    p.mask?.forEach((rule, i) => {
      const key = `${rule.table.includes(".") ? rule.table : `public.${rule.table}`}.${rule.column}`;
      const earlier = seen.get(key);
      if (earlier !== undefined)
        ctx.addIssue({ code: "custom", path: ["mask", i], message: `masks ${key} again (mask.${earlier} does): one rule per column` });
      seen.set(key, i);
    });
  })
  .meta({
    typeName: "ServiceForkPreparation",
    typeDescription: "What is done to a fork before its connection strings are published: SQL, masking rules, and its jobs paused.",
  });
export type Preparation = z.output<typeof PreparationSchema>;

/**
 * What a preparation that failed past its masking's commit sampled from production, for the next
 * run on the same fork (which samples masked data) to check against: each value as a keyed digest
 * (statements.ts, SAMPLE_DIGESTS), never the value; kept in state, secret, not in the fork, until
 * a preparation of it finishes.
 */
export const SampledEarlierSchema = z.object({
  key: z.string().regex(/^[0-9a-f]{32}$/),
  values: z.array(
    z.object({
      column: z.string(),
      digest: z.string().regex(/^[0-9a-f]{32}$/),
      /** Looked for in every column, not only its own (run.ts, distinctiveOf). */
      distinctive: z.boolean(),
    }),
  ),
});
export type SampledEarlier = z.output<typeof SampledEarlierSchema>;

/** What a preparation did, for the fork's outputs: never any data. */
export const PreparedSchema = z
  .object({
    digest: z.string().describe("sha256 of the preparation as declared (its SQL, rules, sqlAfter and pauseJobs)."),
    at: z.string().describe("When it finished (RFC 3339)."),
    // States written before it was recorded lack it.
    dataTakenAt: z
      .string()
      .optional()
      .describe(
        "When the fork's data was taken from its source (RFC 3339): the fork's creation for NOW and LAST_SNAPSHOT (for LAST_SNAPSHOT the " +
          "snapshot may be older), the target time for PITR.",
      ),
    statements: z.number().int().describe("How many SQL texts ran (sql and sqlAfter)."),
    masked: z
      .array(
        z
          .object({
            rule: z.string().describe('The column masked, "schema.table.column".'),
            with: z.string().describe("The masking function."),
            rows: z.number().int().describe("How many rows had a value that was replaced."),
          })
          .meta({ typeName: "ServiceForkMasked", typeDescription: "What one masking rule changed." }),
      )
      .describe("Per masking rule, in order: the rows changed."),
    jobsPaused: z.array(z.number().int()).describe("The TimescaleDB jobs paused (job_id), when pauseJobs was declared."),
    refreshed: z
      .array(z.string())
      .optional()
      .describe("The materialized views and continuous aggregates over masked tables, refreshed from the masked data."),
    removed: z
      .array(z.string())
      .optional()
      .describe(
        "What was removed because it reaches production or would undo the masking: foreign servers (with their foreign tables " +
          "and user mappings) and transactions prepared in production.",
      ),
  })
  .meta({ typeName: "ServiceForkPrepared", typeDescription: "What a fork's preparation did: counts and a digest, never data." });
export type Prepared = z.output<typeof PreparedSchema>;

/** The digest of a preparation as declared: what state records, so a change of it is seen. */
export function preparationDigest(p: Preparation): string {
  const canonical = JSON.stringify({
    sql: p.sql ?? [],
    mask: (p.mask ?? []).map((r) => [r.table, r.column, r.with, r.value ?? null, r.chars ?? null]),
    pauseJobs: p.pauseJobs,
    // Only when declared: a preparation without it keeps the digest it had.
    ...(p.sqlAfter?.length ? { sqlAfter: p.sqlAfter } : {}),
  });
  return crypto.createHash("sha256").update(canonical).digest("hex");
}
