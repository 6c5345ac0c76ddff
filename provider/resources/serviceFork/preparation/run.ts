// A fork's preparation, run on the fork as tsdbadmin once it accepts logins and before its
// connection strings are published (usable.ts runs it as an owed step, like the login). Its promise
// is about what the URL holder can read: no production value of a masked column, in the table or
// any chunk (compressed or not), in statistics, in materialized views or continuous aggregates, nor
// through a way back to production; and a fork never acts on production (its replication). In order:
//  0. the session's settings set back to PostgreSQL's own (production's role and database settings
//     are the fork's too), then each subscription disabled and detached from production's slot;
//  1. pauseJobs: the fork's TimescaleDB jobs paused, in a transaction of its own, and those already
//     running waited for;
//  2. (masking) transactions prepared in production rolled back: committed on the fork they would
//     write production's rows back;
//  3. one transaction: the user's SQL; (masking) foreign servers dropped, the masked tables'
//     triggers and rules held off, compressed chunks decompressed, one UPDATE per table, the chunks
//     analysed and compressed again; sqlAfter; triggers and rules back as they were, statistics
//     made again, and every masked column and statistic checked;
//  4. (masking) the space of the old rows given back (VACUUM FULL of the masked tables and their
//     chunks), materialized views refreshed and continuous aggregates emptied then refreshed whole
//     (neither possible inside a transaction), each checked.
// A failure names the step and PostgreSQL's SQLSTATE and objects, never its text (which may quote
// a row), and says truly what was kept.
import * as crypto from "crypto";
import { secretRedactor } from "../../../api/redaction";
import type { CallContext } from "../../../context/context";
import { failureOf, openSession, type ServiceDatabase, type Session } from "../../../database/session";
import { TigerCloudError } from "../../../errors";
import type { Limit } from "../../../rules/inputSchemas";
import { printable } from "../../../text";
import { sleep } from "../../../time";
import { describeFailure } from "./failures";
import { type MaskRule, type Preparation, preparationDigest, type Prepared } from "./schema";
import { type Aggregate, type Reader, type Refresh, toRefresh } from "./derived";
import { markParameters, markStatements } from "./mark";
import * as sql from "./statements";
import { ident, shownName, type Table, tableName } from "./statements";

/** TimescaleDB's own jobs (telemetry, its job-history retention) have IDs below this; a user's and a policy's, from it on. */
const FIRST_USER_JOB = 1000;

export interface PrepareTarget {
  serviceId: string;
  host: string | undefined;
  port: number | undefined;
  password: string | undefined;
  /** The service the fork was made from: named in the mark a masking preparation leaves (mark.ts). */
  sourceServiceId?: string;
  /** When the fork's data was taken from its source (RFC 3339): its creation, or a PITR fork's targetTime. */
  dataTakenAt?: string | undefined;
}

/** A refusal of ours: its message is said as it is (it names objects, never values). */
class Refusal extends Error {}

/** Where a failure leaves the fork: what the message says was kept. */
type Stage = "jobs" | "before" | "transaction" | "committed";

/** A masked table: the rule's table as PostgreSQL reads it, what is under it, and its rules. */
interface MaskedTable extends Table {
  label: string;
  rules: { rule: MaskRule; index: number; column: string; type: string }[];
  tree: Table[];
  hypertable: boolean;
}

export async function prepareFork(
  ctx: CallContext,
  target: PrepareTarget,
  p: Preparation,
  limit: Limit,
  open: (db: ServiceDatabase, timeoutMs: number) => Promise<Session> = openSession,
): Promise<Prepared> {
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
  let step = "connecting";
  let stage: Stage = "jobs";
  let statement: string | undefined;
  const jobsPaused: number[] = [];
  const fail = (err: unknown): never => {
    const why = err instanceof Refusal ? err.message : describeFailure(failureOf(err), statement);
    throw new TigerCloudError(redact(`Preparing fork ${serviceId} failed at ${step}: ${why}. ${kept(stage, p, jobsPaused)}`));
  };
  const session = await open({ host, port, password }, left()).catch(fail);
  const q = <Row extends object = Record<string, unknown>>(text: string, params?: readonly unknown[]) =>
    session.query<Row>(text, params).catch(fail);
  const inTransaction = async () => (await q<{ id: string }>("SELECT pg_catalog.txid_current()::text AS id"))[0]?.id;
  try {
    ctx.progress(`fork ${serviceId}: preparing it (${describe(p)}) before its connection strings are published`);
    // The role's own settings and search_path, for the user's SQL; the preparation's own statements run with PostgreSQL's.
    step = "reading the settings production gave the role (pg_settings)";
    let userPath = (await q<{ path: string }>(sql.SEARCH_PATH))[0]?.path ?? "";
    const roleSettings = await q<{ name: string; setting: string }>(sql.ROLE_SETTINGS);
    const ts = (await q<{ schema: string }>(sql.TIMESCALEDB_SCHEMA))[0]?.schema;
    const timescaledb = ts !== undefined;
    // Set again after anything of the user's has run (their sql, a view's refresh).
    const pin = async () => {
      await q(sql.RESET_SETTINGS);
      await q(sql.PIN_SETTINGS, sql.pinnedParameters());
      if (timescaledb) await q(sql.TIMESCALEDB_OWN_DEFAULTS);
    };
    await pin();
    // Before anything else: production's replication is production's alone.
    step = "detaching the fork from production's replication (pg_subscription)";
    await detachSubscriptions(ctx, serviceId, q);
    if (p.pauseJobs) {
      step = "prepare.pauseJobs";
      if (ts === undefined)
        return fail(new Refusal("the fork has no TimescaleDB (no timescaledb extension in tsdb), so no job to pause; leave pauseJobs out"));
      await q("BEGIN");
      const jobs = await q<{ job_id: number }>(
        `SELECT job_id FROM timescaledb_information.jobs WHERE job_id >= ${FIRST_USER_JOB} AND scheduled ORDER BY job_id`,
      );
      const ids = jobs.map((j) => j.job_id);
      for (const id of ids) {
        step = `prepare.pauseJobs (alter_job(${id}, scheduled => false))`;
        await q(sql.alterJobUnscheduled(ts), [id]);
      }
      step = "prepare.pauseJobs (COMMIT)";
      await q("COMMIT");
      jobsPaused.push(...ids);
      ctx.progress(`fork ${serviceId}: jobs paused: ${ids.length ? ids.join(", ") : "none was scheduled"}`);
      await runningJobsEnded(ctx, serviceId, q, ids, limit.deadline);
    }
    const masking = (p.mask?.length ?? 0) > 0;
    const removed: string[] = [];
    const refreshed: string[] = [];
    stage = "before";
    if (masking) {
      step = "rolling back transactions prepared in production (pg_prepared_xacts)";
      // Named by their place and role, never by their name: an application chooses it, and it may be data.
      for (const [i, { owner, rollback }] of (await q<{ owner: string; rollback: string }>(sql.PREPARED_TRANSACTIONS)).entries()) {
        const which = `transaction ${i + 1} prepared in production (by role ${printable(owner)})`;
        await session
          .query(rollback)
          .catch(() =>
            fail(
              new Refusal(
                `a ${which} is on the fork: committed there it would write production's rows over the masking, and only its role ` +
                  `can roll it back; commit or roll it back in production, then fork again`,
              ),
            ),
          );
        removed.push(which);
      }
    }
    stage = "transaction";
    step = "BEGIN";
    await q("BEGIN");
    // Row-level security would hide rows from the masking (left unmasked, counts looking right): off, pinned.
    // Rows compressed meanwhile by a job not paused are decompressed by the UPDATE itself: no limit then.
    if (timescaledb) await q("SET LOCAL timescaledb.max_tuples_decompressed_per_dml_transaction = 0");
    const begun = await inTransaction();
    const runTexts = async (texts: string[] | undefined, name: "sql" | "sqlAfter") => {
      if (!texts?.length) return;
      await q(sql.USER_SETTINGS, [roleSettings.map((r) => r.name), roleSettings.map((r) => r.setting)]);
      await q(sql.USER_SEARCH_PATH, [userPath]);
      for (const [i, text] of texts.entries()) {
        step = `prepare.${name}[${i}] (${printable(text.trim().split("\n")[0] ?? "").slice(0, 80)})`;
        statement = text;
        await q(text);
        statement = undefined;
        // A text that ends the transaction (COMMIT, ROLLBACK) would leave the rest outside of it.
        if ((await inTransaction()) !== begun)
          fail(new Refusal("it ends the transaction (COMMIT or ROLLBACK): the preparation must stay one transaction"));
      }
      // A path the texts set carries on to the next ones (sql's to sqlAfter), not to the preparation's own.
      step = `prepare.${name} (done)`;
      userPath = (await q<{ path: string }>(sql.SEARCH_PATH))[0]?.path ?? userPath;
      await pin();
    };
    await runTexts(p.sql, "sql");

    let tables: MaskedTable[] = [];
    let counts = new Map<number, number>();
    const samples: Samples = new Map();
    const pseudonyms: sql.Pseudonyms = { key: crypto.randomBytes(16).toString("hex"), tag: crypto.randomBytes(4).toString("hex") };
    let switched: { table: string; kind: "trigger" | "rule"; name: string; mode: string }[] = [];
    let reach: Reach = { written: [], cascaded: [], ancestors: [], hypertables: [] };
    if (masking) {
      tables = await resolveRules(p.mask ?? [], q, (s) => (step = s), timescaledb);
      step = "prepare.mask (foreign servers)";
      const servers = await q<{ name: string; owner: string; ours: boolean; drop: string }>(sql.FOREIGN_SERVERS);
      const theirs = servers.filter((f) => !f.ours);
      if (theirs.length)
        fail(
          new Refusal(
            printable(
              `the foreign server ${theirs.map((f) => `${f.name} (of role ${f.owner})`).join(", ")} leads from the fork to another database ` +
                `(production's, perhaps), and tsdbadmin cannot drop it: only its owner can; drop it in production (or have its owner ` +
                "do so, or make it tsdbadmin's: ALTER SERVER … OWNER TO tsdbadmin), then fork again",
            ).slice(0, 600),
          ),
        );
      for (const { name, drop } of servers) {
        await q(drop);
        removed.push(`foreign server ${printable(name)}`);
      }
      if (removed.some((r) => r.startsWith("foreign server")))
        ctx.progress(
          `fork ${serviceId}: dropped what leads to another database: ${removed.filter((r) => r.startsWith("foreign")).join(", ")}`,
        );
      step = "prepare.mask (what the masking writes: the tables, what is under them, what their keys cascade to)";
      reach = await reachOf(tables, q, timescaledb);
      step = "prepare.mask (what runs on each row written: constraints, indexes, generated columns, domains)";
      const running = await q<{ table: string; what: string; function: string; why: string }>(sql.FUNCTIONS_ON_WRITE, [
        [...reach.written, ...reach.ancestors].map((t) => t.oid),
      ]);
      const [first, ...more] = running;
      if (first)
        fail(
          new Refusal(
            printable(
              `${first.table}'s ${first.what} runs ${first.function}, ${first.why}, on each row the masking writes: ` +
                `it could read the rows not yet masked and copy them elsewhere; drop it in prepare.sql (and make it again in prepare.sqlAfter)` +
                (more.length ? `; so do ${more.length} more: ${more.map((r) => `${r.table}'s ${r.what} (${r.function})`).join(", ")}` : ""),
            ).slice(0, 600),
          ),
        );
      const held = new Map(reach.written.map((t) => [t.oid, tableName(t)]));
      const triggers = await q<{ oid: number; name: string; mode: string }>(sql.TRIGGERS, [[...held.keys()]]);
      const rules = await q<{ oid: number; name: string; mode: string }>(sql.RULES, [[...held.keys()]]);
      switched = [
        ...triggers.map((t) => ({ table: held.get(t.oid) as string, kind: "trigger" as const, name: t.name, mode: t.mode })),
        ...rules.map((r) => ({ table: held.get(r.oid) as string, kind: "rule" as const, name: r.name, mode: r.mode })),
      ];
      for (const s of switched)
        await q(s.kind === "trigger" ? sql.triggerSwitch(s.table, s.name, "D") : sql.ruleSwitch(s.table, s.name, "D"));
      if (switched.length) {
        const names = [
          ...new Set(
            switched.filter((s) => !s.table.startsWith('"_timescaledb_internal"')).map((s) => `${s.kind} ${s.name} on ${s.table}`),
          ),
        ];
        ctx.progress(`fork ${serviceId}: held off during the masking: ${printable(names.join(", ")).slice(0, 400)}`);
      }
      // Production's values, kept only in this process: what no statistic or view may hold afterwards.
      for (const t of tables)
        for (const r of t.rules) {
          step = ruleLabel(t, r);
          const values = await q<{ v: string }>(sql.sampleValues(tableName(t), r.column), [t.tree.map((x) => x.oid), r.column]);
          const of = samples.get(r.column) ?? new Set<string>();
          for (const { v } of values) if (stillProduction(r.rule, v)) of.add(v);
          samples.set(r.column, of);
        }
      counts = await maskTables(tables, pseudonyms, q, (s) => (step = s), ts);
      // A key's cascade rewrote rows out of other hypertables' compressed batches: compressed again.
      for (const h of reach.hypertables) {
        step = `prepare.mask (the chunks of ${shownName(h)} a key's cascade left partly compressed)`;
        for (const { chunk } of await q<{ chunk: string }>(sql.PARTIAL_CHUNKS, [h.schema, h.name])) {
          step = `prepare.mask (compress_chunk(${chunk}), rows a key's cascade rewrote)`;
          // Its statistics from the rows outside its batches, the masked ones: compressed, it keeps what it had.
          await q(`ANALYZE ${chunk}`);
          if (ts) await q(sql.compressChunk(ts), [chunk]);
        }
      }
    }
    if (masking && timescaledb) {
      // Chunk skipping keeps each chunk's minimum and maximum of a column: production's, until set again.
      step = "prepare.mask (chunk skipping's ranges of the written hypertables)";
      const skipping = await q<{ hypertable: string; column: string }>(sql.SKIPPING_COLUMNS, [reach.hypertables.map((h) => h.oid)]);
      // enable_chunk_skipping refuses unless the setting is on (it is off by default).
      if (skipping.length) await q("SET LOCAL timescaledb.enable_chunk_skipping = on");
      for (const c of skipping) {
        await q(sql.disableChunkSkipping(ts), [c.hypertable, c.column]);
        await q(sql.enableChunkSkipping(ts), [c.hypertable, c.column]);
      }
    }
    await runTexts(p.sqlAfter, "sqlAfter");
    if (masking) {
      step = "prepare.mask (triggers and rules back as they were)";
      for (const s of switched)
        await q(s.kind === "trigger" ? sql.triggerSwitch(s.table, s.name, s.mode) : sql.ruleSwitch(s.table, s.name, s.mode));
      await restatisticize(reach, q, (s) => (step = s), timescaledb);
      await checkMasked(
        tables,
        counts,
        pseudonyms,
        reach,
        samples,
        q,
        (s) => (step = s),
        timescaledb,
        (m) => fail(new Refusal(m)),
      );
    }
    step = "COMMIT";
    await q("COMMIT");
    stage = "committed";
    if (masking) {
      // The UPDATE left the old rows behind, dead (unreadable, but on disk: the fork would be
      // twice the size for them); compressed chunks were rewritten whole already. Each table's
      // space given back, one table at a time (VACUUM cannot run inside a transaction).
      for (const t of reach.written.filter((x) => x.kind === "r")) {
        step = `prepare.mask (VACUUM FULL ${shownName(t)})`;
        await q(`VACUUM (FULL) ${tableName(t)}`);
      }
      // What keeps a copy of what the masking wrote, refreshed (outside a transaction, as a
      // continuous aggregate's refresh must be) and checked, each after what it reads.
      step = "prepare.mask (the materialized views and continuous aggregates that read what the masking wrote)";
      const readers = await q<Reader>(sql.READS);
      const aggregates = timescaledb ? await q<Aggregate>(sql.CONTINUOUS_AGGREGATES) : [];
      // A view's query runs as the user wrote it, with the role's search_path (the masking is committed:
      // what it reads is masked); what is read back from it, checked with pg_catalog's names again.
      const asUser = async (text: string) => {
        await q(sql.SESSION_SEARCH_PATH, [userPath]);
        await q(text);
        await pin();
      };
      const plan = toRefresh(new Set([...reach.written, ...reach.ancestors].map((t) => t.oid)), readers, aggregates);
      for (const item of plan) {
        const name = item.kind === "continuous aggregate" ? item.aggregate.view : shownName(item.table);
        step = `prepare.mask (refreshing the ${item.kind} ${name})`;
        ctx.progress(`fork ${serviceId}: refreshing the ${item.kind} ${name} from the masked data`);
        const kept = await refreshDerived(item, q, asUser, ts, (m) => fail(new Refusal(m)));
        if (item.checked) await checkDerived(name, kept, distinctiveOf(samples), q, (m) => fail(new Refusal(m)));
        refreshed.push(name);
      }
    }
    const masked: Prepared["masked"] = tables
      .flatMap((t) =>
        t.rules.map((r) => ({
          index: r.index,
          rule: `${t.schema}.${t.name}.${r.column}`,
          with: r.rule.with,
          rows: counts.get(r.index) ?? 0,
        })),
      )
      .sort((a, b) => a.index - b.index)
      .map(({ index: _i, ...m }) => m);
    const digest = preparationDigest(p);
    if (masking && target.sourceServiceId !== undefined) {
      // Last, once everything above is committed and checked, so that no failed preparation leaves
      // it: the mark a fork of this fork finds in its copy (requireMasking reads it there).
      step = "marking the fork as prepared (_tigercloud.prepared_forks)";
      const params = markParameters(
        serviceId,
        target.sourceServiceId,
        { digest, masked },
        target.dataTakenAt ?? new Date(started).toISOString(),
      );
      await q("BEGIN");
      for (const [text, values] of markStatements(params)) await q(text, values);
      await q("COMMIT");
    }
    const summary = masked.map((m) => `${m.rule} ${m.rows}`).join(", ");
    ctx.progress(
      `fork ${serviceId}: prepared and checked in ${((Date.now() - started) / 1000).toFixed(1)} s` +
        (masked.length ? `; rows masked: ${summary}` : "") +
        (refreshed.length ? `; refreshed: ${refreshed.join(", ")}` : "") +
        (p.pauseJobs ? `; jobs paused: ${jobsPaused.length ? jobsPaused.join(", ") : "none was scheduled"}` : ""),
    );
    return {
      digest,
      at: new Date().toISOString(),
      ...(target.dataTakenAt ? { dataTakenAt: target.dataTakenAt } : {}),
      statements: (p.sql?.length ?? 0) + (p.sqlAfter?.length ?? 0),
      masked,
      jobsPaused,
      ...(refreshed.length ? { refreshed } : {}),
      ...(removed.length ? { removed } : {}),
    };
  } catch (err) {
    if (err instanceof TigerCloudError) throw err;
    return fail(err);
  } finally {
    await session.end();
  }
}

type Query = <Row extends object = Record<string, unknown>>(text: string, params?: readonly unknown[]) => Promise<Row[]>;

const ruleLabel = (t: Pick<MaskedTable, "label">, r: { rule: MaskRule; index: number }) =>
  `prepare.mask[${r.index}] (${t.label}.${r.rule.column}, with ${r.rule.with})`;

/**
 * Each rule's table and column as PostgreSQL reads them (unquoted: lower case), refused when the
 * name as written is another object (a table "Customers" beside customers), when it is not an
 * ordinary table (a foreign table would write production's rows; a view writes to its tables), or
 * when a foreign table is under it.
 */
async function resolveRules(rules: MaskRule[], q: Query, at: (step: string) => void, timescaledb: boolean): Promise<MaskedTable[]> {
  const tables = new Map<number, MaskedTable>();
  for (const [index, rule] of rules.entries()) {
    const [schema, name] = rule.table.includes(".") ? (rule.table.split(".") as [string, string]) : ["public", rule.table];
    const label = `${schema.toLowerCase()}.${name.toLowerCase()}`;
    at(`prepare.mask[${index}] (${rule.table}.${rule.column}, with ${rule.with})`);
    const found = await q<Table & { as_read: boolean }>(sql.FIND_TABLE, [schema.toLowerCase(), name.toLowerCase(), schema, name]);
    const read = found.find((t) => t.as_read);
    const other = found.find((t) => !t.as_read);
    if (other && read)
      throw new Refusal(
        `the table ${rule.table} is read as ${label} (PostgreSQL lowers unquoted names), and ${shownName(other)} is another table: ` +
          `a rule cannot tell them apart; rename one of them, or mask ${shownName(other)} in prepare.sql`,
      );
    if (!read)
      throw new Refusal(
        other
          ? `there is no table ${label} (PostgreSQL reads ${rule.table} unquoted, in lower case); ${shownName(other)} has capitals: ` +
              `rename it to lower case, or mask it in prepare.sql`
          : `there is no table ${label} on the fork (schema.table, as PostgreSQL reads it)`,
      );
    if (read.kind === "f")
      throw new Refusal(
        `${label} is a foreign table: writing it would change another database's rows (production's); a rule masks tables of the fork`,
      );
    if (read.kind !== "r" && read.kind !== "p")
      throw new Refusal(`${label} is not a table (${KINDS[read.kind] ?? read.kind}); name the table that holds the data`);
    let table = tables.get(read.oid);
    if (!table) {
      const tree = await q<Table>(sql.TREE, [read.oid]);
      const foreign = tree.find((t) => t.kind === "f");
      if (foreign)
        throw new Refusal(`${label} holds a foreign table (${shownName(foreign)}): the masking would write another database's rows`);
      const hypertable =
        timescaledb &&
        (
          await q<{ n: number }>(
            "SELECT count(*)::int AS n FROM timescaledb_information.hypertables WHERE hypertable_schema = $1 AND hypertable_name = $2",
            [read.schema, read.name],
          )
        )[0]?.n === 1;
      table = { ...read, label, rules: [], tree, hypertable };
      tables.set(read.oid, table);
    }
    const columns = await q<{ name: string; type: string }>(sql.COLUMNS, [read.oid]);
    const column = columns.find((c) => c.name === rule.column.toLowerCase());
    if (!column) {
      const capital = columns.find((c) => c.name === rule.column);
      throw new Refusal(
        capital
          ? `${label} has no column ${rule.column.toLowerCase()} (PostgreSQL reads ${rule.column} in lower case); its column "${rule.column}" has capitals: rename it, or mask it in prepare.sql`
          : `${label} has no column ${rule.column.toLowerCase()}`,
      );
    }
    const cast = (await q<{ type: string; function: string }>(sql.TEXT_CAST, [read.oid, column.name]))[0];
    if (cast)
      throw new Refusal(
        printable(
          `${label}.${column.name} is of type ${cast.type}, whose conversion to text runs ${cast.function}, a function of the database's own: ` +
            "the masking reads every value as text, through it; drop the cast in prepare.sql, or mask the column there",
        ),
      );
    const partitions = (await q<{ declared: boolean }>(sql.PARTITIONS_BY, [read.oid, column.name]))[0]?.declared === true;
    const dimension =
      table.hypertable && (await q<{ dimension: boolean }>(sql.HYPERTABLE_DIMENSION, [read.oid, column.name]))[0]?.dimension === true;
    if (partitions || dimension)
      throw new Refusal(
        `${label} is partitioned by ${column.name}: its ${dimension ? "chunks' ranges" : "partitions' bounds"} are production's values, ` +
          "which masking its rows cannot change; leave it out, or mask it another way in prepare.sql",
      );
    if (table.rules.some((r) => r.column === column.name))
      throw new Refusal(`${label}.${column.name} is masked by two rules: one rule per column`);
    table.rules.push({ rule, index, column: column.name, type: column.type });
  }
  return [...tables.values()];
}

const KINDS: Record<string, string> = { v: "a view", m: "a materialized view", S: "a sequence", i: "an index", c: "a composite type" };

/** A sampled production value the rule changes: keepFirst keeps short values, a constant its own value. */
function stillProduction(rule: MaskRule, value: string): boolean {
  if (rule.with === "keepFirst") return value.length > (rule.chars ?? 0);
  if (rule.with === "constant") return value !== rule.value;
  return true;
}

/**
 * One UPDATE per table, every rule of that table in it, with the compressed chunks decompressed
 * first and compressed again after (one rewrite each, and no limit on rows decompressed). Returns
 * the rows each rule changed (its column's values that were not NULL), by rule index.
 */
async function maskTables(
  tables: MaskedTable[],
  pseudonyms: sql.Pseudonyms,
  q: Query,
  at: (step: string) => void,
  ts: string | undefined,
): Promise<Map<number, number>> {
  const rows = new Map<number, number>();
  const numbered = tables
    .map((t) => ({ table: tableName(t), columns: t.rules.filter((r) => sql.pseudonymous(r.rule)).map((r) => ident(r.column)) }))
    .filter((t) => t.columns.length);
  if (numbered.length) {
    at("prepare.mask (numbering the distinct values that hash and email rules mask)");
    const { values, param } = sql.parameters(pseudonyms);
    await q(sql.pseudonymTable(numbered, param), values);
    await q(sql.PSEUDONYMS_INDEX);
  }
  for (const t of tables) {
    const labels = t.rules.map((r) => ruleLabel(t, r));
    at(labels.join(", "));
    // The rows each rule changes are its column's values that are not NULL. Every mask but "null"
    // keeps a value non-NULL, so those are counted by the check after the masking, in its one scan;
    // a "null" rule's, here, before.
    const nulled = t.rules.filter((r) => r.rule.with === "null");
    if (nulled.length) {
      const counts = (
        await q<Record<string, string>>(
          `SELECT ${nulled.map((r, n) => `count(${ident(r.column)}) AS c${n}`).join(", ")} FROM ${tableName(t)}`,
        )
      )[0];
      nulled.forEach((r, n) => rows.set(r.index, Number(counts?.[`c${n}`] ?? 0)));
    }
    let chunks: string[] = [];
    if (ts && t.hypertable) {
      chunks = (await q<{ chunk: string }>(sql.COMPRESSED_CHUNKS, [t.schema, t.name])).map((c) => c.chunk);
      for (const chunk of chunks) await q(sql.decompressChunk(ts), [chunk]);
    }
    const { values, param } = sql.parameters(pseudonyms);
    // The row's column by the table's alias: unqualified, a column of the pseudonym table's own name (email) would be taken instead.
    const sets = t.rules.map((r) => `${ident(r.column)} = ${sql.maskExpression(r.rule, `${sql.TARGET}.${ident(r.column)}`, param)}`);
    const changed = t.rules.map((r) => `${ident(r.column)} IS NOT NULL`).join(" OR ");
    await q(`UPDATE ${tableName(t)} AS ${sql.TARGET} SET ${sets.join(", ")} WHERE ${changed}`, values);
    // Each chunk's statistics made from its masked rows while they are in it: once compressed, the
    // chunk is empty, and ANALYZE keeps an empty table's statistics (production's, from when it was active).
    for (const chunk of chunks) {
      await q(`ANALYZE ${chunk}`);
      if (ts) await q(sql.compressChunk(ts), [chunk]);
    }
  }
  // Production's values: gone before anything else runs in this session (the user's sqlAfter).
  if (numbered.length) await q(sql.DROP_PSEUDONYMS);
  return rows;
}

/** What the masking writes and what holds statistics of it. */
interface Reach {
  /** The masked tables, what is under them (partitions, chunks), and what their keys cascade to. */
  written: Table[];
  /** Of those, the ones no rule names: written by a key's ON UPDATE action (and what is under them). */
  cascaded: Table[];
  /** The tables above the masked ones: a partitioned table's statistics of its whole. */
  ancestors: Table[];
  /** The hypertables among what is written. */
  hypertables: Table[];
}

async function reachOf(tables: MaskedTable[], q: Query, timescaledb: boolean): Promise<Reach> {
  const masked = new Set(tables.flatMap((t) => t.tree.map((x) => x.oid)));
  const written = await q<Table>(sql.WRITTEN, [tables.map((t) => t.oid)]);
  const foreign = written.find((t) => t.kind === "f");
  if (foreign) throw new Refusal(`a key's cascade would write the foreign table ${shownName(foreign)}: another database's rows`);
  // Above anything written (a second parent too, or a cascaded partition's table): their statistics of their whole.
  const ancestors = await q<Table>(sql.ANCESTORS, [written.map((t) => t.oid)]);
  const hypertables = timescaledb ? await q<Table>(sql.HYPERTABLES, [written.map((t) => t.oid)]) : [];
  return { written, cascaded: written.filter((t) => !masked.has(t.oid)), ancestors, hypertables };
}

/** A chunk of TimescaleDB's (of a hypertable, or the compressed rows of one): its statistics go with its hypertable's. */
const isChunk = (t: Table) => t.schema === "_timescaledb_internal";

/**
 * Statistics made again from the masked data: ANALYZE of every table written (each chunk too, and
 * the tables holding compressed rows, which a hypertable's ANALYZE leaves), and of the tables above
 * the masked ones. An empty table keeps its old statistics through ANALYZE: its columns' are
 * dropped (a column's type set again does), where PostgreSQL lets that be done; the check says
 * where it did not.
 */
async function restatisticize(reach: Reach, q: Query, at: (step: string) => void, timescaledb: boolean): Promise<void> {
  const compressed = timescaledb ? await compressedTables(reach.hypertables, q) : [];
  for (const t of [...reach.written.filter((x) => x.kind === "r" || x.kind === "p"), ...compressed, ...reach.ancestors]) {
    at(`prepare.mask (ANALYZE ${shownName(t)})`);
    await q(`ANALYZE ${tableName(t)}`);
  }
  for (const t of reach.written.filter((x) => x.kind === "r" && !isChunk(x))) {
    at(`prepare.mask (whether ${shownName(t)} is empty, with statistics ANALYZE would keep)`);
    if ((await q<{ n: number }>(`SELECT count(*)::int AS n FROM (SELECT 1 FROM ${tableName(t)} LIMIT 1) x`))[0]?.n !== 0) continue;
    for (const c of await q<{ name: string; type: string }>(sql.COLUMNS_WITH_STATISTICS, [t.oid])) {
      at(`prepare.mask (the statistics of ${shownName(t)}.${c.name}, an empty table)`);
      await q("SAVEPOINT emptied");
      await q(`ALTER TABLE ONLY ${tableName(t)} ALTER COLUMN ${ident(c.name)} TYPE ${c.type}`).then(
        () => q("RELEASE SAVEPOINT emptied"),
        () => q("ROLLBACK TO SAVEPOINT emptied"),
      );
    }
  }
}

/** The tables holding these hypertables' compressed rows. */
async function compressedTables(hypertables: Table[], q: Query): Promise<Table[]> {
  const all: Table[] = [];
  for (const h of hypertables) all.push(...(await q<Table>(sql.COMPRESSED_TABLES, [h.schema, h.name])));
  return all;
}

/**
 * What the URL holder could read, checked: every masked column holds only what its rule writes
 * (a trigger or rule that undid the masking is caught here), and no statistic of what the masking
 * wrote (the masked columns of the masked tables, their chunks and compressed rows, the tables
 * above them; every column of what a key's cascade wrote; their indexes and extended statistics)
 * holds one of production's sampled values.
 */
async function checkMasked(
  tables: MaskedTable[],
  rows: Map<number, number>,
  pseudonyms: sql.Pseudonyms,
  reach: Reach,
  samples: Samples,
  q: Query,
  at: (step: string) => void,
  timescaledb: boolean,
  refuse: (message: string) => never,
): Promise<void> {
  // One scan per table: each rule's rows the rule did not write, and (but for "null" rules, counted before) its rows changed.
  for (const t of tables) {
    at(`${t.rules.map((r) => ruleLabel(t, r)).join(", ")} (checking every row)`);
    const { values, param } = sql.parameters(pseudonyms);
    const columns = t.rules.map(
      (r, n) =>
        `count(${ident(r.column)})::int AS n${n}, count(*) FILTER (WHERE NOT ${sql.maskedCondition(r.rule, ident(r.column), param)})::int AS bad${n}`,
    );
    const found = (await q<Record<string, number>>(`SELECT ${columns.join(", ")} FROM ${tableName(t)}`, values))[0] ?? {};
    t.rules.forEach((r, n) => {
      const left = found[`bad${n}`];
      if (left)
        refuse(
          `after the masking, ${left} row(s) of ${t.label} still hold a ${r.column} that the rule did not write: something on the ` +
            `table (a trigger, a rule, a policy) kept or wrote other values`,
        );
      if (r.rule.with !== "null") rows.set(r.index, found[`n${n}`] ?? 0);
    });
  }
  at("prepare.mask (checking statistics)");
  const cascaded = new Set(reach.cascaded.map((t) => t.oid));
  const maskedHypertables = reach.hypertables.filter((h) => !cascaded.has(h.oid));
  const cascadedHypertables = reach.hypertables.filter((h) => cascaded.has(h.oid));
  const narrow = [
    ...reach.written.filter((t) => !cascaded.has(t.oid)),
    ...(timescaledb ? await compressedTables(maskedHypertables, q) : []),
  ];
  // What a key cascaded to, and the tables above what was written, hold the masked values under other names: every column.
  const wide = [...reach.cascaded, ...reach.ancestors, ...(timescaledb ? await compressedTables(cascadedHypertables, q) : [])];
  wide.push(...(await q<Table>(sql.INDEXES, [[...narrow, ...wide].map((t) => t.oid)])));
  await refuseFrozenStatistics(
    [...narrow, ...wide].map((t) => t.oid),
    q,
    refuse,
  );
  // A masked column's statistics, against that column's own production values; the rest (which hold
  // the masked values under other names, beside unrelated ones), against the values only a leak puts there.
  const holding: { place: string }[] = [];
  for (const [column, values] of samples)
    holding.push(...(await q<{ place: string }>(sql.STATISTICS_HOLDING, [narrow.map((t) => t.oid), [column], [...values], []])));
  holding.push(...(await q<{ place: string }>(sql.STATISTICS_HOLDING, [[], [], distinctiveOf(samples), wide.map((t) => t.oid)])));
  if (holding.length)
    refuse(
      `statistics still hold values from before the masking: ${printable(holding.map((h) => h.place).join(", ")).slice(0, 300)}; ` +
        `ANALYZE did not replace them (PostgreSQL keeps an empty table's): give such a table a row, or drop its statistics, in prepare.sql`,
    );
}

/**
 * A refresh from the masked data: a materialized view (rewritten whole by PostgreSQL), or a
 * continuous aggregate (refreshed whole; its chunks left empty dropped, as their statistics would
 * stay production's; their space given back). Then its statistics made again. Returns the
 * relations whose statistics hold what it keeps, and the view to read its rows through.
 */
async function refreshDerived(
  item: Refresh,
  q: Query,
  asUser: (text: string) => Promise<void>,
  ts: string | undefined,
  refuse: (message: string) => never,
): Promise<Derived> {
  if (item.kind === "materialized view") {
    const view = tableName(item.table);
    await asUser(sql.refreshMaterializedView(view));
    await q(`ANALYZE ${view}`);
    const empty = (await q<{ n: number }>(`SELECT count(*)::int AS n FROM (SELECT 1 FROM ${view} LIMIT 1) x`))[0]?.n === 0;
    if (item.checked && empty && (await q(sql.COLUMNS_WITH_STATISTICS, [item.table.oid])).length)
      refuse(
        `${shownName(item.table)} is empty once refreshed from the masked data, and PostgreSQL keeps an empty table's old statistics ` +
          `(production's values): drop it in prepare.sql, or give it rows in prepare.sqlAfter`,
      );
    return { view, relations: [item.table] };
  }
  const a = item.aggregate;
  if (ts === undefined) return refuse(`${a.view} is a continuous aggregate on a fork without TimescaleDB`);
  // Emptied first (TimescaleDB lets no trigger or rule of a materialization table be held off, and
  // its refresh deletes the old rows: a trigger would see production's), then refreshed whole from
  // the masked data; its chunks analysed with their rows in them, and compressed again where they were.
  const before = await q<sql.AggregateChunk>(sql.AGGREGATE_CHUNKS, [a.schema, a.name]);
  const compressedAt = new Set(before.filter((c) => c.compressed).map(chunkStart));
  for (const c of before) await q(c.drop);
  await q(sql.SET_REFRESHED, [a.view]);
  await asUser(sql.refreshContinuousAggregate(ts));
  for (const c of await q<sql.AggregateChunk>(sql.AGGREGATE_CHUNKS, [a.schema, a.name])) {
    await q(`ANALYZE ${c.chunk}`);
    if (compressedAt.has(chunkStart(c))) await q(sql.compressChunk(ts), [c.chunk]);
  }
  const tree = await q<Table>(sql.TREE, [a.oid]);
  const compressed = await compressedTables([a], q);
  for (const t of [a, ...compressed]) await q(`ANALYZE ${tableName(t)}`);
  const relations = [...tree, ...compressed];
  return { view: a.view, relations: [...relations, ...(await q<Table>(sql.INDEXES, [relations.map((t) => t.oid)]))] };
}

/** Where a chunk starts: the same range after the refresh as before. */
const chunkStart = (c: sql.AggregateChunk) => c.start ?? c.start_integer ?? "";

interface Derived {
  view: string;
  relations: Table[];
}

/**
 * Statistics ANALYZE does not make again: a column, index column or extended statistics object
 * with a statistics target of 0 keeps what it held, production's (whatever form it took: a value
 * in upper case, a part of it), which no check of literal values can rule out. Refused, naming it.
 */
async function refuseFrozenStatistics(oids: number[], q: Query, refuse: (message: string) => never): Promise<void> {
  const frozen = await q<{ place: string }>(sql.FROZEN_STATISTICS, [oids]);
  if (frozen.length)
    refuse(
      `statistics with a target of 0 keep what production's ANALYZE put there: ${printable(frozen.map((f) => f.place).join(", ")).slice(0, 300)}; ` +
        "set their target back in prepare.sql (ALTER TABLE … ALTER COLUMN … SET STATISTICS -1, ALTER STATISTICS … SET STATISTICS -1)",
    );
}

/** A refreshed view's rows, and the statistics of what holds them, hold no sampled production value. */
async function checkDerived(
  name: string,
  derived: Derived,
  samples: string[],
  q: Query,
  refuse: (message: string) => never,
): Promise<void> {
  const columns = await q<{ name: string }>(
    `SELECT attname AS name FROM pg_attribute WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped`,
    [derived.view],
  );
  const rows = (
    await q<{ n: number }>(
      sql.rowsHolding(
        derived.view,
        columns.map((c) => c.name),
      ),
      [samples],
    )
  )[0]?.n;
  if (rows) refuse(`${name} still holds ${rows} row(s) with values from before the masking, after its refresh`);
  const oids = derived.relations.map((t) => t.oid);
  await refuseFrozenStatistics(oids, q, refuse);
  const holding = await q<{ place: string }>(sql.STATISTICS_HOLDING, [[], [], samples, oids]);
  if (holding.length)
    refuse(
      `statistics of ${name} still hold values from before the masking: ${printable(holding.map((h) => h.place).join(", ")).slice(0, 300)}`,
    );
}

/** Production's values sampled before the masking, by the masked column they were read from. */
type Samples = Map<string, Set<string>>;

/**
 * The sampled values that say something wherever they are found: a number, a date or time, a
 * truth value or a short text is in many columns that never held a masked value (a view's id beside
 * a score set to NULL), so those are looked for only in their own column's statistics.
 */
export function distinctiveOf(samples: Samples): string[] {
  const all = [...samples.values()].flatMap((values) => [...values]).map((v) => v.trim());
  return [...new Set(all.filter((v) => v.length >= 4 && !/^[-+0-9.,:eE T]*$/.test(v) && !/^(true|false)$/i.test(v)))];
}

/**
 * Each logical-replication subscription of the fork, disabled and detached from its slot (its
 * publisher's slot is production's): a fork never streams production's upstream rows, nor takes
 * them from production. One this role may not alter (another database's, or another role's, as
 * PostgreSQL 15 lets only a superuser own one) is refused before anything else runs.
 */
async function detachSubscriptions(ctx: CallContext, serviceId: string, q: Query): Promise<void> {
  const subscriptions = await q<{
    name: string;
    owner: string;
    enabled: boolean;
    slot: boolean;
    here: boolean;
    ours: boolean;
    disable: string;
    detach: string;
  }>(sql.SUBSCRIPTIONS);
  const theirs = subscriptions.filter((s) => s.enabled && !s.ours);
  if (theirs.length)
    throw new Refusal(
      printable(
        `the subscription ${theirs.map((s) => `${s.name} (of role ${s.owner}${s.here ? "" : ", in another database"})`).join(", ")} came with the fork ` +
          "enabled: its apply worker would take production's replication slot whenever production's pauses, and stream the publisher's rows " +
          "into the fork instead of production; tsdbadmin cannot disable it (only its owner can, in its database). In production, make it " +
          "tsdbadmin's (on PostgreSQL 16 and later) or drop it, then fork again",
      ).slice(0, 700),
    );
  for (const s of subscriptions.filter((x) => x.ours)) {
    if (s.enabled) await q(s.disable);
    if (s.slot) await q(s.detach);
  }
  if (subscriptions.length)
    ctx.progress(
      `fork ${serviceId}: subscriptions disabled and detached from production's slots: ${printable(subscriptions.map((s) => s.name).join(", ")).slice(0, 300)}`,
    );
}

/** Jobs already running when they were paused (the fork's scheduler starts at once), waited for: one could still write what the preparation masks. */
async function runningJobsEnded(ctx: CallContext, serviceId: string, q: Query, ids: number[], deadline: number): Promise<void> {
  if (!ids.length) return;
  let said = false;
  for (;;) {
    const running = (
      await q<{ job_id: number }>(
        "SELECT job_id FROM timescaledb_information.job_stats WHERE job_id = ANY($1::int[]) AND job_status = 'Running'",
        [ids],
      )
    ).map((j) => j.job_id);
    if (!running.length) return;
    if (!said) ctx.progress(`fork ${serviceId}: waiting for jobs that were running when paused to end: ${running.join(", ")}`);
    said = true;
    if (Date.now() + 500 > deadline) throw new Refusal(`jobs ${running.join(", ")} were still running when the time ran out`);
    await sleep(500);
  }
}

/** What a failure at `stage` leaves, said truly. */
function kept(stage: Stage, p: Preparation, jobsPaused: number[]): string {
  const jobs = !p.pauseJobs
    ? ""
    : stage === "jobs"
      ? "No job was paused (the pause is one transaction, rolled back). "
      : jobsPaused.length
        ? `The jobs paused first (${jobsPaused.join(", ")}) stay paused. `
        : "No job needed pausing. ";
  const work =
    stage === "committed"
      ? "The masking was committed and checked, but what follows it (space given back, continuous aggregates refreshed and checked) did not finish. "
      : stage === "transaction"
        ? "Nothing of its SQL and masking was kept (one transaction, rolled back). "
        : "";
  return (
    `${work}${jobs}The fork is recorded and its connection strings are not published. ` +
    "Fix prepare and run `pulumi up` again: it prepares the fork then."
  );
}

function describe(p: Preparation): string {
  const parts = [
    p.sql?.length ? `${p.sql.length} SQL text(s)` : "",
    p.mask?.length ? `${p.mask.length} masking rule(s)` : "",
    p.sqlAfter?.length ? `${p.sqlAfter.length} SQL text(s) after the masking` : "",
    p.pauseJobs ? "jobs paused" : "",
  ];
  return parts.filter(Boolean).join(", ");
}
