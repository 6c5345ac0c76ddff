// A fork's preparation: SQL and masking rules run on the fork as tsdbadmin, in one transaction,
// after it accepts logins and before its connection strings are published; and its TimescaleDB
// background jobs paused, so that production's jobs stay in production. The declaration's rules
// (checked at preview) and the run (usable.ts takes it as an owed step, like a login).
import * as crypto from "crypto";
import { z } from "zod";
import { secretRedactor } from "../../api/redaction";
import type { CallContext } from "../../context/context";
import { TigerCloudError } from "../../errors";
import { DATABASE, USERNAME } from "../../policies/connection";
import { booleanSchema, type Limit, textSchema } from "../../rules/inputSchemas";
import { printable } from "../../text";
import { secondsSince } from "../../time";

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

export const MASKS = ["null", "constant", "hash", "email", "keepFirst"] as const;
export type Mask = (typeof MASKS)[number];
/** keepFirst keeps at most this many characters. */
const MAX_KEEP = 1000;

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
          hash: "A keyed hash of the value (text columns): equal values stay equal, so joins and uniqueness hold; the key is new for each fork.",
          email: "A fake e-mail address made from the same keyed hash (text columns): unique where the values were, at example.invalid.",
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
      .describe("Masking rules, run after the SQL in the same transaction: each replaces every value of one column."),
    pauseJobs: booleanSchema
      .default(false)
      .describe(
        "Pause the fork's TimescaleDB background jobs (retention, compression, refreshes, user-defined actions; not TimescaleDB's own, " +
          "job_id below 1000) with alter_job(job_id, scheduled => false), first, committed on its own. Default false.",
      ),
  })
  .superRefine((p, ctx) => {
    if ((p.sql?.length ?? 0) + (p.mask?.length ?? 0) === 0 && !p.pauseJobs)
      ctx.addIssue({ code: "custom", message: "declares nothing to do: give sql, mask or pauseJobs: true, or leave prepare out" });
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

/** What a preparation did, for the fork's outputs: never any data. */
export const PreparedSchema = z
  .object({
    digest: z.string().describe("sha256 of the preparation as declared (its SQL, rules and pauseJobs)."),
    at: z.string().describe("When it finished (RFC 3339)."),
    statements: z.number().int().describe("How many SQL texts ran."),
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
  })
  .meta({ typeName: "ServiceForkPrepared", typeDescription: "What a fork's preparation did: counts and a digest, never data." });
export type Prepared = z.output<typeof PreparedSchema>;

/** The digest of a preparation as declared: what state records, so a change of it is seen. */
export function preparationDigest(p: Preparation): string {
  const canonical = JSON.stringify({
    sql: p.sql ?? [],
    mask: (p.mask ?? []).map((r) => [r.table, r.column, r.with, r.value ?? null, r.chars ?? null]),
    pauseJobs: p.pauseJobs,
  });
  return crypto.createHash("sha256").update(canonical).digest("hex");
}

/** TimescaleDB's own jobs (telemetry, its job-history retention) have IDs below this; a user's and a policy's, from it on. */
const FIRST_USER_JOB = 1000;

/**
 * The value a rule writes in place of `column`'s, as SQL: the identifiers checked, every value a
 * parameter (`param` numbers it). NULLs stay NULL.
 */
function maskExpression(rule: MaskRule, column: string, param: (value: unknown) => string): string {
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
/** Stands for the preparation's hashing key among a rule's parameters. */
const KEY = Symbol("key");

const qualified = (table: string) => (table.includes(".") ? table : `public.${table}`);

export interface PrepareTarget {
  serviceId: string;
  host: string | undefined;
  port: number | undefined;
  password: string | undefined;
}

/**
 * Runs the preparation on the fork, in one transaction: the SQL, the masking rules, the jobs
 * paused. A failure rolls all of it back and names the SQL text or the rule and PostgreSQL's error
 * (its message only: the detail may quote a row), the password redacted.
 */
export async function prepareFork(ctx: CallContext, target: PrepareTarget, p: Preparation, limit: Limit): Promise<Prepared> {
  const { serviceId, host, port, password } = target;
  if (host === undefined || port === undefined)
    throw new TigerCloudError(`Service ${serviceId}: the API gives no endpoint to prepare the fork through (prepare).`);
  if (!password)
    throw new TigerCloudError(
      `Service ${serviceId}: its password is not known (an adopted fork with passwordOnAdopt "keep"), so it cannot be prepared; ` +
        `set passwordOnAdopt: "reset".`,
    );
  const redact = secretRedactor([password, encodeURIComponent(password)]);
  const started = Date.now();
  const left = () => Math.max(1, limit.deadline - Date.now());
  const { Client } = require("pg") as typeof import("pg");
  const client = new Client({
    host,
    port,
    user: USERNAME,
    database: DATABASE,
    password,
    ssl: { rejectUnauthorized: false },
    connectionTimeoutMillis: left(),
    query_timeout: left(),
  });
  client.on("error", () => undefined);
  let step = "connecting";
  const fail = (err: unknown): never => {
    const e = err as { message?: unknown; code?: unknown };
    const why = redact(printable(String(e.message ?? err))).slice(0, 300);
    const code = typeof e.code === "string" ? ` (SQLSTATE ${e.code})` : "";
    throw new TigerCloudError(
      `Preparing fork ${serviceId} failed at ${step}: ${why}${code}. Nothing of its SQL and masking was kept (one transaction, rolled back)` +
        `${jobsPaused.length ? "; the jobs paused stay paused" : ""}; the fork is recorded and its connection strings are not published. ` +
        `Fix prepare and run \`pulumi up\` again: it prepares the fork then.`,
    );
  };
  const jobsPaused: number[] = [];
  try {
    await client.connect().catch(fail);
    ctx.progress(`fork ${serviceId}: preparing it (${describe(p)}) in one transaction, before its connection strings are published`);
    // First, in a transaction of its own: no job of production's runs while the rest is prepared.
    if (p.pauseJobs) {
      step = "prepare.pauseJobs (BEGIN)";
      await client.query("BEGIN").catch(fail);
      step = "prepare.pauseJobs (timescaledb_information.jobs)";
      const jobs = await client
        .query<{ job_id: number }>(
          `SELECT job_id FROM timescaledb_information.jobs WHERE job_id >= ${FIRST_USER_JOB} AND scheduled ORDER BY job_id`,
        )
        .catch((err: { code?: string }) =>
          fail(
            err.code === "42P01" || err.code === "3F000"
              ? new Error(
                  "the fork has no TimescaleDB job catalog (timescaledb_information.jobs): it is not a TimescaleDB service; leave pauseJobs out",
                )
              : err,
          ),
        );
      for (const { job_id } of jobs.rows) {
        step = `prepare.pauseJobs (alter_job(${job_id}, scheduled => false))`;
        await client.query("SELECT alter_job($1, scheduled => false)", [job_id]).catch(fail);
        jobsPaused.push(job_id);
      }
      step = "prepare.pauseJobs (COMMIT)";
      await client.query("COMMIT").catch(fail);
    }
    step = "BEGIN";
    await client.query("BEGIN").catch(fail);
    // Row-level security would hide rows from the masking (left unmasked, counts looking right): off,
    // PostgreSQL then fails where a policy would have filtered.
    await client.query("SET LOCAL row_security = off").catch(fail);
    const transaction = async () => (await client.query<{ id: string }>("SELECT txid_current()::text AS id").catch(fail)).rows[0]?.id;
    const begun = await transaction();
    for (const [i, text] of (p.sql ?? []).entries()) {
      step = `prepare.sql[${i}] (${printable(text.trim().split("\n")[0] ?? "").slice(0, 80)})`;
      await client.query(text).catch(fail);
      // A text that ends the transaction (COMMIT, ROLLBACK) would leave the rest outside of it.
      if ((await transaction()) !== begun)
        fail(new Error("it ends the transaction (COMMIT or ROLLBACK): the preparation must stay one transaction"));
    }
    // One key per preparation: hashes join within the fork, and are not comparable with another fork's.
    const key = crypto.randomBytes(16).toString("hex");
    // One UPDATE per table, every rule of that table in it: the table is rewritten once, not once
    // per rule. The rows each rule changes are its column's values that are not NULL, counted first.
    const rules = (p.mask ?? []).map((rule, i) => ({ rule, i, table: qualified(rule.table) }));
    const rows = new Map<number, number>();
    for (const table of [...new Set(rules.map((r) => r.table))]) {
      const ofTable = rules.filter((r) => r.table === table);
      const params: unknown[] = [];
      const param = (value: unknown) => {
        params.push(value === KEY ? key : value);
        return `$${params.length}`;
      };
      const sets = ofTable.map(({ rule }) => `${rule.column} = ${maskExpression(rule, rule.column, param)}`);
      const labels = ofTable.map(({ rule, i }) => `prepare.mask[${i}] (${table}.${rule.column}, with ${rule.with})`);
      // Each rule's column looked up first, so that a failure names the rule that is wrong.
      step = labels[0] ?? table;
      const columns = await client
        .query<{ attname: string }>("SELECT attname FROM pg_attribute WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped", [
          table,
        ])
        .catch(fail);
      const present = new Set(columns.rows.map((c) => c.attname));
      for (const [n, { rule }] of ofTable.entries()) {
        step = labels[n] ?? table;
        // An unquoted identifier is its lower case, as PostgreSQL reads the SQL below.
        if (!present.has(rule.column.toLowerCase()))
          fail(Object.assign(new Error(`column "${rule.column}" of relation "${table}" does not exist`), { code: "42703" }));
      }
      step = labels.join(", ");
      const counts = await client
        .query<Record<string, string>>(`SELECT ${ofTable.map(({ rule }, n) => `count(${rule.column}) AS c${n}`).join(", ")} FROM ${table}`)
        .catch(fail);
      ofTable.forEach(({ i }, n) => rows.set(i, Number(counts.rows[0]?.[`c${n}`] ?? 0)));
      const changed = ofTable.map(({ rule }) => `${rule.column} IS NOT NULL`).join(" OR ");
      await client.query(`UPDATE ${table} SET ${sets.join(", ")} WHERE ${changed}`, params).catch(fail);
    }
    const masked: Prepared["masked"] = rules.map(({ rule, i, table }) => ({
      rule: `${table}.${rule.column}`,
      with: rule.with,
      rows: rows.get(i) ?? 0,
    }));
    step = "COMMIT";
    await client.query("COMMIT").catch(fail);
    const summary = masked.map((m) => `${m.rule} ${m.rows}`).join(", ");
    ctx.progress(
      `fork ${serviceId}: prepared in ${secondsSince(started)} s` +
        (masked.length ? `; rows masked: ${summary}` : "") +
        (p.pauseJobs ? `; jobs paused: ${jobsPaused.length ? jobsPaused.join(", ") : "none was scheduled"}` : ""),
    );
    return {
      digest: preparationDigest(p),
      at: new Date().toISOString(),
      statements: p.sql?.length ?? 0,
      masked,
      jobsPaused,
    };
  } finally {
    await client.end().catch(() => undefined);
  }
}

function describe(p: Preparation): string {
  const parts = [
    p.sql?.length ? `${p.sql.length} SQL text(s)` : "",
    p.mask?.length ? `${p.mask.length} masking rule(s)` : "",
    p.pauseJobs ? "jobs paused" : "",
  ];
  return parts.filter(Boolean).join(", ");
}
