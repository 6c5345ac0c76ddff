// A fork's preparation, run on the fork as tsdbadmin once it accepts logins and before its
// connection strings are published (usable.ts runs it as an owed step, like the login). Its promise
// is about what the URL holder can read: no production value of a masked column, in the table or
// any chunk (compressed or not), in statistics, in materialized views or continuous aggregates, nor
// through a way back to production; and a fork never acts on production (its replication).
//
// It is the pipeline STEPS below, each step named as a failure names it, over one state
// (`Preparing`). Its SQL is statements.ts's; its refusals are guards.ts's, each checked at its
// step. A failure names the step and PostgreSQL's SQLSTATE and objects, never its text (which may
// quote a row), and says truly what was kept.
import * as crypto from "crypto";
import { secretRedactor } from "../../../api/redaction";
import type { CallContext } from "../../../context/context";
import { type DatabaseFailure, failureOf, openSession, type ServiceDatabase, type Session } from "../../../database/session";
import { TigerCloudError } from "../../../errors";
import type { Limit } from "../../../rules/inputSchemas";
import { printable } from "../../../text";
import { sleep } from "../../../time";
import { type Aggregate, type Reader, type Refresh, statisticsReaders, toRefresh, unpopulatedInputs } from "./derived";
import { describeFailure } from "./failures";
import {
  AGAIN,
  type Column,
  type ForeignServer,
  type Found,
  GUARDS,
  type OwnStatisticsObject,
  type Guard,
  type LeftBehind,
  type PreparedTransaction,
  type Subscription,
} from "./guards";
import { markParameters, markStatements } from "./mark";
import { type MaskRule, type Preparation, preparationDigest, type Prepared, type SampledEarlier } from "./schema";
import * as sql from "./statements";
import { type AggregateChunk, type Quoted, shownName, type Table, tableName } from "./statements";

export interface PrepareTarget {
  serviceId: string;
  host: string | undefined;
  port: number | undefined;
  password: string | undefined;
  /** The service the fork was made from: named in the mark a masking preparation leaves (mark.ts). */
  sourceServiceId?: string;
  /** When the fork's data was taken from its source (RFC 3339): its creation, or a PITR fork's targetTime. */
  dataTakenAt?: string | undefined;
  /** What an earlier preparation of this fork that failed past its commit sampled from production (state keeps it). */
  sampledEarlier?: SampledEarlier | undefined;
}

/** A preparation's failure, with what the state keeps for a run again: production's values sampled, as digests, once its masking was committed. */
export class PreparationFailed extends TigerCloudError {
  override name = "PreparationFailed";
  constructor(
    message: string,
    readonly sampledEarlier: SampledEarlier | undefined,
  ) {
    super(message);
  }
}

/**
 * PostgreSQL's failure as first said, its objects (schema, table, ...) as the error named them: a
 * RAISE in a function of the database's own can set them to any text (a value it read), so they
 * are said at the end only as far as the catalog has them (confirmedNames).
 */
class NamedFailure extends TigerCloudError {
  constructor(
    message: string,
    readonly named: { said: string; failure: DatabaseFailure; statement: string | undefined },
  ) {
    super(message);
  }
}

/** The failure's objects that the catalog has, the others left out; none when the session cannot tell. */
async function confirmedNames(s: Preparing, failure: DatabaseFailure): Promise<DatabaseFailure> {
  const { schema, table, column, constraint, dataType, ...rest } = failure;
  if ([schema, table, column, constraint, dataType].every((v) => v === undefined)) return failure;
  try {
    await s.session.query(sql.ROLLBACK).catch(() => undefined);
    const [found] = await s.session.query<sql.NamedObjects>(sql.NAMED_OBJECTS, [
      schema ?? null,
      table ?? null,
      column ?? null,
      constraint ?? null,
      dataType ?? null,
    ]);
    return {
      ...rest,
      ...(found?.schema && schema !== undefined ? { schema } : {}),
      ...(found?.table && table !== undefined ? { table } : {}),
      ...(found?.column && column !== undefined ? { column } : {}),
      ...(found?.constraint && constraint !== undefined ? { constraint } : {}),
      ...(found?.type && dataType !== undefined ? { dataType } : {}),
    };
  } catch {
    return rest;
  }
}

/** A refusal of a guard's: its message is said as it is (it names objects, never values). */
class Refusal extends Error {}

/** Where a failure leaves the fork: what the message says was kept. */
type Stage = "jobs" | "before" | "transaction" | "committed" | "seeding";

/** A masked table: the rule's table as PostgreSQL reads it, what is under it, and its rules. */
interface MaskedTable extends Table {
  label: string;
  rules: { rule: MaskRule; index: number; column: string; quoted: Quoted }[];
  tree: Table[];
  hypertable: boolean;
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

/** A trigger or rule held off during the masking, and the mode it goes back to. */
interface Switched {
  table: Quoted;
  kind: "trigger" | "rule";
  name: Quoted;
  mode: string;
  /** Switched on the hypertable with its chunks' copies. */
  hypertable: boolean;
}

/** Production's values sampled before the masking, by the masked column they were read from. */
type Samples = Map<string, Set<string>>;

type Query = <Row extends object = Record<string, unknown>>(text: string, params?: readonly unknown[]) => Promise<Row[]>;

/** The state of one preparation, and what its steps share: the session, the guards, the step's name. */
class Preparing {
  step = "connecting";
  stage: Stage = "jobs";
  /** The user's own SQL text being run: a syntax error points into it. */
  statement: string | undefined;
  readonly started = Date.now();
  /** The schema TimescaleDB is installed in (quoted by the server), if it is: its functions are called by that name. */
  ts: Quoted | undefined;
  /** The role's own settings and search_path, as production gave them: what the user's SQL runs with. */
  userPath = "";
  roleSettings: { name: string; setting: string }[] = [];
  /** The transaction the user's SQL must stay in. */
  begun: string | undefined;
  jobsPaused: number[] = [];
  removed: string[] = [];
  refreshed: string[] = [];
  /** Indexes and extended statistics dropped until everything else is made again: made again last (or after a failure). */
  remakeLast: OwnStatisticsObject[] = [];
  /** Every view and aggregate refreshed from the masked data: no statistic left of production's but those analysed again last. */
  refreshedAll = false;
  /** What was dropped and, after a failure, not made again: it could not be, or making it then was not safe. */
  notRemade: NotRemade = { objects: [], withheld: false };
  /** The time each step (or part of one) spent in its statements: the longest are said at the end, where a slow preparation is looked into. */
  readonly took: Map<string, number>;
  tables: MaskedTable[] = [];
  reach: Reach = { written: [], cascaded: [], ancestors: [], hypertables: [] };
  /** The tables TimescaleDB's catalog lists as chunks: their statistics go with their hypertable's. */
  chunks = new Set<number>();
  /** The functions of the database's own held off (their bodies replaced by a failure) until what may run them: named when one runs all the same. */
  heldOff: string[] = [];
  /** The tables with row security enabled, by name (PostgreSQL's refusal of a read names only that): read before the refreshes. */
  rowSecured = new Map<string, string[]>();
  /** Whether the preparation lent itself memberships (its record's), taken back by its last step. */
  membershipsLent = false;
  /** An aggregate refreshed keeps chunk skipping's ranges of a column: the setting that records them, pinned on. */
  chunkSkipping = false;
  switched: Switched[] = [];
  /** The written hypertables whose compression rolls chunks up: held off until the masking's commit. */
  rollups: sql.Rollup[] = [];
  /** The tables whose owner forces row security on itself: lifted in the masking's transaction, forced again before its commit. */
  forced: sql.ForcedRowSecurity[] = [];
  samples: Samples = new Map();
  /** Every value sampled, this run's and an earlier's, as digests: what the state keeps should this run fail past its commit. */
  digests: SampledEarlier = { key: crypto.randomBytes(16).toString("hex"), values: [] };
  /** The rows each rule changed, by rule index. */
  counts = new Map<number, number>();
  readonly pseudonyms: sql.Pseudonyms = { key: crypto.randomBytes(16).toString("hex"), tag: crypto.randomBytes(4).toString("hex") };

  /** The session on the fork, as tsdbadmin: opened once the state is there to say a failure to open. */
  session!: Session;

  constructor(
    readonly ctx: CallContext,
    readonly target: PrepareTarget,
    readonly p: Preparation,
    readonly limit: Limit,
    readonly redact: (text: string) => string,
    /** Another session on the fork, as the first was opened (refreshes of one wave run side by side). */
    readonly connect: () => Promise<Session>,
    took?: Map<string, number>,
  ) {
    this.took = took ?? new Map();
  }

  /**
   * A second session on the fork, sharing what the steps so far found, its settings pinned as the
   * first's: for work that reads only what is committed (the refreshes). Its own step, for its failures.
   */
  async lane(): Promise<Preparing> {
    const lane = new Preparing(this.ctx, this.target, this.p, this.limit, this.redact, this.connect, this.took);
    lane.stage = this.stage;
    lane.jobsPaused = this.jobsPaused;
    lane.ts = this.ts;
    lane.userPath = this.userPath;
    lane.roleSettings = this.roleSettings;
    lane.samples = this.samples;
    lane.digests = this.digests;
    lane.heldOff = this.heldOff;
    lane.rowSecured = this.rowSecured;
    lane.chunkSkipping = this.chunkSkipping;
    lane.step = `${this.step} (a second session)`;
    lane.session = await this.connect().catch(lane.fail);
    try {
      await lane.pin();
    } catch (err) {
      await lane.session.end();
      throw err;
    }
    return lane;
  }

  /** A failure said: the step, our refusal's words or PostgreSQL's SQLSTATE and objects, and what was kept. */
  fail = (err: unknown): never => {
    if (err instanceof TigerCloudError) throw err;
    const own = err instanceof Refusal ? err.message : (this.heldOffRan(err) ?? this.validatedHeldOff(err) ?? this.rowSecurityApplied(err));
    const failure = failureOf(err);
    const described = own === undefined ? describeFailure(failure, this.statement) : undefined;
    const message = this.redact(
      `Preparing fork ${this.target.serviceId} failed at ${this.step}: ${own ?? described}. ${kept(this.stage, this.p, this.jobsPaused, this.notRemade)}`,
    );
    if (described === undefined) throw new TigerCloudError(message);
    throw new NamedFailure(message, { said: this.redact(described), failure, statement: this.statement });
  };

  /**
   * A function held off that something ran all the same (its body in its place failed, naming it): named from
   * the record, never from PostgreSQL's text, which is only matched against the names held off.
   */
  heldOffRan(err: unknown): string | undefined {
    const failure = failureOf(err);
    if (failure.code !== sql.HELD_OFF_STATE) return undefined;
    const named = /^held off by the preparation: (.+)$/.exec(failure.message ?? "")?.[1];
    const ran = this.heldOff.filter((r) => r === named).map(printable);
    return (
      `${ran.length ? ran.join(" or ") : "a function"}, a function of the database's own, ran where the preparation lets none run (it could read what is not yet masked, ` +
      "or statistics not yet made again from the masked data), by a way the preparation does not recognize; " +
      `drop it, or what calls it, in prepare.sql, and make it again ${AGAIN}`
    );
  }

  /**
   * A language's validator (fmgr_sql_validator, plpgsql_validator) called on a function held off,
   * whose language is then no longer the validator's: what calls it parses a function's body, which
   * can run any function (a domain's CHECK), so it runs nowhere the preparation holds functions off.
   * PostgreSQL's text is only matched (its numbers are oids).
   */
  validatedHeldOff(err: unknown): string | undefined {
    const failure = failureOf(err);
    if (
      failure.code !== "42501" ||
      !/^language validation function \d+ called for language \d+ instead of \d+$/.test(failure.message ?? "")
    )
      return undefined;
    return (
      "a language's validator (such as fmgr_sql_validator) ran on a function of the database's own while the preparation held it off: " +
      "what calls a validator parses a function's body, which can run any function (a domain's CHECK); " +
      `drop what calls it (a view, a CHECK constraint) in prepare.sql, and make it again ${AGAIN}`
    );
  }

  /**
   * A read PostgreSQL refused as row security applies to its role (what a query given as text reads,
   * which no guard sees): the table named from the catalog, PostgreSQL's text only matched against it.
   */
  rowSecurityApplied(err: unknown): string | undefined {
    const failure = failureOf(err);
    if (failure.code !== "42501") return undefined;
    const named = /^query would be affected by row-level security policy for table "([\s\S]+)"$/.exec(failure.message ?? "")?.[1];
    const tables = named === undefined ? [] : (this.rowSecured.get(named) ?? []);
    if (!tables.length) return undefined;
    return (
      `it reads ${printable(tables.join(" or "))} as a role its row security applies to (forced on its owner, or not its owner), ` +
      "through what no dependency records (a query given as text); the preparation reads with row security off (a policy's expression " +
      "could read statistics not yet made from the masked data). In production, have the table's owner own the view and not force row " +
      "security (ALTER TABLE … NO FORCE ROW LEVEL SECURITY), or drop the view in prepare.sql and make it again in prepare.sqlAfter"
    );
  }

  get masking(): boolean {
    return (this.p.mask?.length ?? 0) > 0;
  }
  get timescaledb(): boolean {
    return this.ts !== undefined;
  }
  /** A chunk of TimescaleDB's (of a hypertable, or the compressed rows of one), in whatever schema. */
  isChunk(t: Table): boolean {
    return this.chunks.has(t.oid);
  }
  progress(text: string): void {
    this.ctx.progress(`fork ${this.target.serviceId}: ${text}`);
  }
  q: Query = <Row extends object = Record<string, unknown>>(text: string, params?: readonly unknown[]) => {
    const began = Date.now();
    const step = this.step;
    return this.session
      .query<Row>(text, params)
      .catch(this.fail)
      .finally(() => this.took.set(step, (this.took.get(step) ?? 0) + Date.now() - began));
  };

  /** A guard checked: its rows returned, or the preparation refused in its words. */
  async check<Input, Row>(guard: Guard<Input, Row>, input: Input): Promise<Row[]> {
    const [text, params] = guard.statement?.(input) ?? [undefined, undefined];
    const rows = text === undefined ? [] : await this.q<Row & object>(text, params);
    const refusal = guard.refuse(rows, input);
    if (refusal !== undefined) this.fail(new Refusal(refusal));
    return rows;
  }

  /** The preparation's own settings again, after anything of the user's has run (their SQL, a view's refresh). */
  async pin(): Promise<void> {
    // First: what ran before (the user's SQL, a view's refresh) left the role's path, or one of its own.
    await this.q(sql.PIN_SEARCH_PATH);
    await this.q(sql.RESET_SETTINGS);
    await this.q(sql.PIN_SETTINGS, sql.pinnedParameters());
    if (this.timescaledb) await this.q(sql.TIMESCALEDB_OWN_DEFAULTS);
    if (this.chunkSkipping) await this.q(sql.CHUNK_SKIPPING_SESSION);
  }

  /** The names TimescaleDB's functions are called by. */
  get timescale(): Quoted {
    return this.ts ?? this.fail(new Refusal("the fork has no TimescaleDB"));
  }
}

/** One step of the pipeline: its name (what a failure says it failed at), when it runs, and what it does. */
interface Step {
  name: string;
  when?: (s: Preparing) => boolean;
  /** The stage a failure from this step on leaves the fork at. */
  stage?: Stage;
  run: (s: Preparing) => Promise<void>;
}

const masking = (s: Preparing) => s.masking;

const STEPS: Step[] = [
  { name: "reading the settings production gave the role (pg_settings)", run: readSettings },
  // A preparation of this fork that failed halfway may have left functions held off: theirs again, before any SQL of the user's.
  { name: "giving back what an earlier preparation held off (its record)", run: giveBackEarlier },
  // Before anything else: production's replication is production's alone.
  { name: "detaching the fork from production's replication (pg_subscription)", run: detachSubscriptions },
  { name: "prepare.pauseJobs", when: (s) => s.p.pauseJobs === true, run: pauseJobs },
  { name: "rolling back transactions prepared in production (pg_prepared_xacts)", when: masking, stage: "before", run: rollbackPrepared },
  { name: "BEGIN", stage: "transaction", run: begin },
  { name: "prepare.sql", run: (s) => userSql(s, "sql") },
  // From here until the views that call one are refreshed, no function of the database's own may run.
  { name: "prepare.mask (the database's own functions held off)", when: masking, run: holdOffRoutines },
  {
    name: "prepare.mask (domains whose CHECK may write or run a query)",
    when: masking,
    run: domainChecksThatMayWrite,
  },
  { name: "prepare.mask (row security owners force on themselves, lifted until the commit)", when: masking, run: liftForcedRowSecurity },
  { name: "prepare.mask (the rules' tables and columns)", when: masking, run: resolveRules },
  { name: "prepare.mask (foreign servers)", when: masking, run: dropForeignServers },
  { name: "prepare.mask (chunks TimescaleDB left behind)", when: (s) => s.masking && s.timescaledb, run: dropLeftBehind },
  {
    name: "prepare.mask (what the masking writes: the tables, what is under them, what their keys cascade to)",
    when: masking,
    run: reachOf,
  },
  {
    name: "prepare.mask (what runs on each row written: constraints, indexes, generated columns, domains)",
    when: masking,
    run: functionsOnWrite,
  },
  { name: "prepare.mask (triggers and rules held off)", when: masking, run: holdOff },
  {
    name: "prepare.mask (compression's rollup held off: each chunk compressed again alone)",
    when: (s) => s.masking && s.timescaledb,
    run: holdOffRollups,
  },
  { name: "prepare.mask (sampling production's values)", when: masking, run: sample },
  { name: "prepare.mask", when: masking, run: maskTables },
  { name: "prepare.mask (chunks a key's cascade left partly compressed)", when: masking, run: recompressCascaded },
  {
    name: "prepare.mask (chunk skipping's ranges of the written hypertables)",
    when: (s) => s.masking && s.timescaledb,
    run: resetChunkSkipping,
  },
  // Nothing is masked: in the one transaction, after prepare.sql.
  { name: "prepare.sqlAfter", when: (s) => !s.masking, run: (s) => userSql(s, "sqlAfter") },
  { name: "prepare.mask (triggers, rules and compression's rollup back as they were)", when: masking, run: putBack },
  { name: "prepare.mask (statistics made again)", when: masking, run: restatisticize },
  { name: "prepare.mask (checking every row)", when: masking, run: checkRows },
  { name: "prepare.mask (checking statistics)", when: masking, run: checkStatistics },
  { name: "prepare.mask (row security forced again, as it was)", when: masking, run: forceRowSecurityAgain },
  { name: "COMMIT", run: commit },
  { name: "prepare.mask (space given back)", when: masking, stage: "committed", run: giveSpaceBack },
  {
    name: "prepare.mask (the materialized views and continuous aggregates that read what the masking wrote)",
    when: masking,
    run: refreshDerived,
  },
  {
    name: "prepare.mask (the statistics of tables whose ANALYZE calls a function of the database's own)",
    when: masking,
    run: restatisticizeCallingOwn,
  },
  {
    name: "prepare.mask (the memberships lent for the preparation taken back, its record dropped)",
    when: masking,
    run: giveBackMemberships,
  },
  // Once nothing of production's is left to read (every view refreshed, every statistic made again and checked, every
  // function given back and every membership taken back): what the seed's writes run (a default, a trigger, a rule of
  // production's schema) reads only what the URL's holder could. In a transaction of its own.
  // With pauseJobs the fork runs none: not one a function of the database's own scheduled meanwhile (the seed's are its own).
  {
    name: "prepare.pauseJobs (jobs scheduled since)",
    when: (s) => s.masking && s.p.pauseJobs === true && s.timescaledb,
    run: pauseJobsScheduledSince,
  },
  { name: "prepare.sqlAfter", when: (s) => s.masking && (s.p.sqlAfter?.length ?? 0) > 0, stage: "seeding", run: seed },
  // Last, once everything above is committed and checked, so that no failed preparation leaves it.
  {
    name: "marking the fork as prepared (_tigercloud.prepared_forks)",
    when: (s) => s.masking && s.target.sourceServiceId !== undefined,
    run: mark,
  },
];

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
  const connect = () => open({ host, port, password }, Math.max(1, limit.deadline - Date.now()));
  const s = new Preparing(ctx, target, p, limit, secretRedactor([password, encodeURIComponent(password)]), connect);
  s.session = await connect().catch(s.fail);
  try {
    ctx.progress(`fork ${serviceId}: preparing it (${describe(p)}) before its connection strings are published`);
    for (const step of STEPS) {
      if (step.when && !step.when(s)) continue;
      s.step = step.name;
      if (step.stage) s.stage = step.stage;
      await step.run(s);
    }
    return prepared(s);
  } catch (err) {
    // Whatever making things again meets, the failure is said with its digests (without them a run again would check against nothing).
    // Its objects too only as far as the catalog has them: an index made again may run a function of the database's own that raises.
    const remaking = await remakeAfterFailure(s).then(
      () => "",
      async (e: unknown) => ` Making again what it had dropped failed too: ${describeFailure(await confirmedNames(s, failureOf(e)))}.`,
    );
    // Past the commit the fork's data may be masked already: its record is what refuses a fork of it (unfinishedSource).
    const pastCommit = s.stage === "committed" || s.stage === "seeding" || target.sampledEarlier !== undefined;
    const recorded = pastCommit
      ? await keepRecord(s).catch(
          () => ` Its record ${record(s).name} could not be made again: a fork of this fork would not be refused; fork from production.`,
        )
      : "";
    // A failure already said (ours) says too what was not made again.
    const said =
      err instanceof TigerCloudError && s.notRemade.objects.length
        ? new TigerCloudError(s.redact(`${err.message} ${notRemadeSentence(s.notRemade)}`))
        : caught(() => s.fail(err));
    // Past the commit what is left to sample is masked: the next run checks against these, from state.
    const kept = pastCommit ? s.digests : undefined;
    let message = `${said instanceof Error ? said.message : String(said)}${remaking}${recorded}`;
    const named = err instanceof NamedFailure ? err.named : undefined;
    if (named) message = message.replace(named.said, s.redact(describeFailure(await confirmedNames(s, named.failure), named.statement)));
    throw new PreparationFailed(s.redact(message), kept?.values.length ? kept : undefined);
  } finally {
    await s.session.end();
  }
}

/** What `fail` (which always throws) threw. */
function caught(fail: () => never): unknown {
  try {
    return fail();
  } catch (err) {
    return err;
  }
}

async function readSettings(s: Preparing): Promise<void> {
  s.userPath = (await s.q<{ path: string }>(sql.SEARCH_PATH))[0]?.path ?? "";
  await s.q(sql.PIN_SEARCH_PATH);
  s.roleSettings = await s.q<{ name: string; setting: string }>(sql.ROLE_SETTINGS);
  s.ts = (await s.q<{ quoted: Quoted }>(sql.TIMESCALEDB_SCHEMA))[0]?.quoted;
  await s.pin();
  await s.check(GUARDS.platformSettings, undefined);
  if (s.ts) await s.check(GUARDS.timescaleRoutinesShadowed, undefined);
  await s.check(GUARDS.unfinishedSource, { own: record(s).name });
}

/**
 * Each logical-replication subscription of the fork, disabled and detached from its slot (its
 * publisher's slot is production's): a fork never streams production's upstream rows, nor takes
 * them from production. One this role may not alter is refused (guards.ts).
 */
async function detachSubscriptions(s: Preparing): Promise<void> {
  const subscriptions = await s.check(GUARDS.subscriptionsOfOthers, undefined);
  for (const sub of subscriptions.filter((x: Subscription) => x.ours)) {
    if (sub.enabled) await s.q(sub.disable);
    if (sub.slot) await s.q(sub.detach);
  }
  if (subscriptions.length)
    s.progress(
      `subscriptions disabled and detached from production's slots: ${printable(subscriptions.map((x) => x.name).join(", ")).slice(0, 300)}`,
    );
}

/** The fork's TimescaleDB jobs paused, in a transaction of its own, and those already running waited for. */
async function pauseJobs(s: Preparing): Promise<void> {
  await s.check(GUARDS.pauseJobsWithoutTimescaleDB, { timescaledb: s.timescaledb });
  await s.check(GUARDS.jobsCheckedByOwn, undefined);
  await s.check(GUARDS.jobsConfigUnread, undefined);
  await s.q(sql.BEGIN);
  const ids = (await s.q<{ job_id: number }>(sql.SCHEDULED_JOBS)).map((j) => j.job_id);
  for (const id of ids) {
    s.step = `prepare.pauseJobs (alter_job(${id}, scheduled => false))`;
    await s.q(sql.alterJobUnscheduled(s.timescale), [id]);
  }
  s.step = "prepare.pauseJobs (COMMIT)";
  await s.q(sql.COMMIT);
  s.stage = "before";
  s.jobsPaused.push(...ids);
  s.progress(`jobs paused: ${ids.length ? ids.join(", ") : "none was scheduled"}`);
  // Jobs already running when they were paused (the fork's scheduler starts at once) could still write what is masked.
  let said = false;
  while (ids.length) {
    const running = await s.check(GUARDS.jobsStillRunning, { ids, timeIsUp: Date.now() + 500 > s.limit.deadline });
    if (!running.length) return;
    if (!said) s.progress(`waiting for jobs that were running when paused to end: ${running.map((j) => j.job_id).join(", ")}`);
    said = true;
    await sleep(500);
  }
}

/**
 * The jobs scheduled since pauseJobs paused them, paused too: a function of the database's own (a
 * view's, refreshed last) may schedule one, and with pauseJobs the fork runs none.
 */
async function pauseJobsScheduledSince(s: Preparing): Promise<void> {
  const ids = (await s.q<{ job_id: number }>(sql.SCHEDULED_JOBS)).map((j) => j.job_id);
  for (const id of ids) await s.q(sql.alterJobUnscheduled(s.timescale), [id]);
  if (!ids.length) return;
  s.jobsPaused.push(...ids.filter((id) => !s.jobsPaused.includes(id)));
  s.progress(`jobs paused again, scheduled since by what the preparation ran: ${ids.join(", ")}`);
}

/** Transactions prepared in production, rolled back: committed on the fork they would write production's rows back. */
async function rollbackPrepared(s: Preparing): Promise<void> {
  const prepared: PreparedTransaction[] = await s.check(GUARDS.preparedByAnotherRole, undefined);
  for (const [i, t] of prepared.entries()) {
    await s.q(t.rollback);
    s.removed.push(`transaction ${i + 1} prepared in production (by role ${printable(t.owner)})`);
  }
}

async function begin(s: Preparing): Promise<void> {
  await s.q(sql.BEGIN);
  if (s.timescaledb) await s.q(sql.NO_DECOMPRESSION_LIMIT);
  s.begun = await transactionId(s);
}

const transactionId = async (s: Preparing) => (await s.q<{ id: string }>(sql.TRANSACTION_ID))[0]?.id;

/** The user's SQL, with the role's own settings; a path it sets carries on to the next texts (sql's to sqlAfter), not to the preparation's own. */
async function userSql(s: Preparing, name: "sql" | "sqlAfter"): Promise<void> {
  const texts = s.p[name];
  if (!texts?.length) return;
  await s.q(sql.USER_SETTINGS, [s.roleSettings.map((r) => r.name), s.roleSettings.map((r) => r.setting)]);
  await s.q(sql.USER_SEARCH_PATH, [s.userPath]);
  for (const [i, text] of texts.entries()) {
    s.step = `prepare.${name}[${i}] (${printable(text.trim().split("\n")[0] ?? "").slice(0, 80)})`;
    s.statement = text;
    await s.q(text);
    s.statement = undefined;
    await s.check(GUARDS.sqlEndsTransaction, { begun: s.begun, now: await transactionId(s) });
  }
  s.step = `prepare.${name} (done)`;
  s.userPath = (await s.q<{ path: string }>(sql.SEARCH_PATH))[0]?.path ?? s.userPath;
  await s.pin();
}

/** prepare.sqlAfter on the masked fork, in its own transaction (a failure rolls back its texts alone). */
async function seed(s: Preparing): Promise<void> {
  await s.q(sql.BEGIN);
  s.begun = await transactionId(s);
  await userSql(s, "sqlAfter");
  s.step = "prepare.sqlAfter (COMMIT)";
  await s.q(sql.COMMIT);
  s.stage = "committed";
}

const ruleLabel = (t: Pick<MaskedTable, "label">, r: { rule: MaskRule; index: number }) =>
  `prepare.mask[${r.index}] (${t.label}.${r.rule.column}, with ${r.rule.with})`;

/** Each rule's table and column as PostgreSQL reads them (unquoted: lower case), as the guards allow. */
async function resolveRules(s: Preparing): Promise<void> {
  const tables = new Map<number, MaskedTable>();
  for (const [index, rule] of (s.p.mask ?? []).entries()) {
    const [schema, name] = rule.table.includes(".") ? (rule.table.split(".") as [string, string]) : ["public", rule.table];
    const label = `${schema.toLowerCase()}.${name.toLowerCase()}`;
    s.step = `prepare.mask[${index}] (${rule.table}.${rule.column}, with ${rule.with})`;
    const read = (await s.check(GUARDS.ruleTable, { rule, schema, name, label })).find((t: Found) => t.as_read) as Found;
    let table = tables.get(read.oid);
    if (!table) {
      const tree = await s.check(GUARDS.foreignUnder, { oid: read.oid, label });
      const hypertable = s.timescaledb && (await s.q<{ n: number }>(sql.IS_HYPERTABLE, [read.schema, read.name]))[0]?.n === 1;
      table = {
        oid: read.oid,
        schema: read.schema,
        name: read.name,
        quoted: read.quoted,
        kind: read.kind,
        label,
        rules: [],
        tree,
        hypertable,
      };
      tables.set(read.oid, table);
    }
    const columns: Column[] = await s.check(GUARDS.ruleColumn, { oid: read.oid, label, rule });
    const column = columns.find((c) => c.name === rule.column.toLowerCase()) as Column;
    const of = { oid: read.oid, label, column: column.name };
    await s.check(GUARDS.textCast, of);
    await s.check(GUARDS.partitionKey, of);
    if (table.hypertable) await s.check(GUARDS.hypertableDimension, of);
    await s.check(GUARDS.maskedTwice, { label, column: column.name, masked: table.rules.map((r) => r.column) });
    table.rules.push({ rule, index, column: column.name, quoted: column.quoted });
  }
  s.tables = [...tables.values()];
}

/** Foreign servers dropped: a way from the fork to another database. */
async function dropForeignServers(s: Preparing): Promise<void> {
  const servers: ForeignServer[] = await s.check(GUARDS.foreignServersOfOthers, undefined);
  for (const f of servers) {
    await s.q(f.drop);
    s.removed.push(`foreign server ${printable(f.name)}`);
  }
  if (servers.length)
    s.progress(`dropped what leads to another database: ${servers.map((f) => `foreign server ${printable(f.name)}`).join(", ")}`);
}

/** Tables of chunks TimescaleDB no longer lists (what they belonged to was dropped): production's rows no rule can name, dropped. */
async function dropLeftBehind(s: Preparing): Promise<void> {
  const left: LeftBehind[] = await s.check(GUARDS.chunksLeftBehindOfOthers, undefined);
  await s.check(GUARDS.standingOnDropped, { hypertables: [], aggregates: [], tables: left.map((t) => t.table) });
  for (const t of left) {
    await s.q(t.drop);
    s.removed.push(`table ${printable(t.table)}, left behind by TimescaleDB`);
  }
  if (left.length) s.progress(`dropped what TimescaleDB left behind: ${printable(left.map((t) => t.table).join(", ")).slice(0, 300)}`);
}

async function reachOf(s: Preparing): Promise<void> {
  const masked = new Set(s.tables.flatMap((t) => t.tree.map((x) => x.oid)));
  const written = await s.check(GUARDS.cascadeToForeign, { masked: s.tables.map((t) => t.oid) });
  // Above anything written (a second parent too, or a cascaded partition's table): their statistics of their whole.
  const ancestors = await s.q<Table>(sql.ANCESTORS, [written.map((t) => t.oid)]);
  const hypertables = s.timescaledb ? await s.q<Table>(sql.HYPERTABLES, [written.map((t) => t.oid)]) : [];
  if (s.timescaledb) s.chunks = new Set((await s.q<{ oid: number }>(sql.CHUNK_TABLES)).map((c) => c.oid));
  // Their chunks' compressed tables are dropped and made anew as they are masked.
  if (s.timescaledb) await s.check(GUARDS.standingOnDropped, { hypertables: hypertables.map((h) => h.oid), aggregates: [], tables: [] });
  s.reach = { written, cascaded: written.filter((t) => !masked.has(t.oid)), ancestors, hypertables };
  // What a key's cascade writes may partition its table as a masked column may: refused alike.
  const cascadedOids = s.reach.cascaded.map((t) => t.oid);
  const keys = await s.q<{ oid: number; label: string; column: string }>(sql.CASCADED_COLUMNS, [cascadedOids, written.map((t) => t.oid)]);
  const hypertableOids = new Set(hypertables.map((h) => h.oid));
  for (const key of keys) {
    await s.check(GUARDS.partitionKey, key);
    if (hypertableOids.has(key.oid)) await s.check(GUARDS.hypertableDimension, key);
  }
}

/** Refused: a domain whose CHECK may write or run a query (a value's input runs it unseen by the catalog). */
async function domainChecksThatMayWrite(s: Preparing): Promise<void> {
  await s.check(GUARDS.domainChecksThatMayWrite, { record: record(s).quoted });
}

async function functionsOnWrite(s: Preparing): Promise<void> {
  await s.check(GUARDS.functionsOnWrite, { written: [...s.reach.written, ...s.reach.ancestors].map((t) => t.oid) });
  await s.check(GUARDS.keyCheckedCallingOwn, { written: s.reach.written.map((t) => t.oid) });
  if (s.timescaledb) await s.check(GUARDS.keyCheckedPartitionedByOwn, { written: s.reach.written.map((t) => t.oid) });
  await s.check(GUARDS.keyCastsCallingOwn, { written: s.reach.written.map((t) => t.oid) });
  if (s.timescaledb) await s.check(GUARDS.materializationCallingOwn, undefined);
}

/** Every trigger and rule of every table written, held off: none can copy the old values elsewhere or undo the masking. */
async function holdOff(s: Preparing): Promise<void> {
  // A chunk's triggers are its hypertable's copies, switched with it, or refused: TimescaleDB switches none on a chunk.
  const chunks = s.reach.written.filter((t) => s.isChunk(t)).map((t) => t.oid);
  if (chunks.length) await s.check(GUARDS.switchlessOnChunks, { chunks });
  const hypertables = new Set(s.reach.hypertables.map((h) => h.oid));
  const held = new Map(s.reach.written.filter((t) => !s.isChunk(t)).map((t) => [t.oid, tableName(t)]));
  const switched = (kind: Switched["kind"]) => (x: { oid: number; quoted: Quoted; mode: string }) => ({
    table: held.get(x.oid) as Quoted,
    kind,
    name: x.quoted,
    mode: x.mode,
    hypertable: hypertables.has(x.oid),
  });
  s.switched = [
    ...(await s.q<{ oid: number; quoted: Quoted; mode: string }>(sql.TRIGGERS, [[...held.keys()]])).map(switched("trigger")),
    ...(await s.q<{ oid: number; quoted: Quoted; mode: string }>(sql.RULES, [[...held.keys()]])).map(switched("rule")),
  ];
  for (const x of s.switched)
    await s.q(x.kind === "trigger" ? sql.triggerSwitch(x.table, x.name, "D", x.hypertable) : sql.ruleSwitch(x.table, x.name, "D"));
  const names = new Set(s.switched.map((x) => `${x.kind} ${x.name} on ${x.table}`));
  if (s.switched.length) s.progress(`held off during the masking: ${printable([...names].join(", ")).slice(0, 400)}`);
}

/**
 * Production's values, kept only in this process: what no statistic or view may hold afterwards;
 * and their digests, for the state to keep should this run fail past its commit.
 */
async function sample(s: Preparing): Promise<void> {
  const add = (column: string, v: string) => s.samples.set(column, (s.samples.get(column) ?? new Set<string>()).add(v));
  const earlier = s.target.sampledEarlier;
  // An earlier preparation of this fork whose masking was committed sampled production: what this one samples is masked.
  if (earlier?.values.length) {
    s.digests = { key: earlier.key, values: [...earlier.values] };
    s.progress(`checking against the ${earlier.values.length} value(s) an earlier preparation sampled from production, before its masking`);
  }
  for (const t of s.tables)
    for (const r of t.rules) {
      s.step = ruleLabel(t, r);
      const values = await s.q<{ v: string }>(sql.sampleValues(tableName(t), r.quoted), [t.tree.map((x) => x.oid), r.column]);
      for (const { v } of values) if (stillProduction(r.rule, v)) add(r.column, v);
    }
  s.step = "prepare.mask (the values sampled, as digests for a run again)";
  const kept = [...s.samples].flatMap(([column, values]) => [...values].map((v) => [column, v] as const));
  const distinctive = new Set(distinctiveOf(s.samples));
  const digests = await s.q<{ i: number; digest: string }>(sql.SAMPLE_DIGESTS, [s.digests.key, kept.map(([, v]) => v)]);
  for (const { i, digest } of digests) {
    const [column, v] = kept[i - 1] ?? ["", ""];
    s.digests.values.push({ column, digest, distinctive: distinctive.has(v.trim()) });
  }
}

/** What the checks compare with: this run's values (of `column`, or those that say something anywhere) and an earlier run's digests of them. */
function compared(s: Preparing, column?: string): { values: string[]; key: string; digests: string[] } {
  const earlier = s.target.sampledEarlier;
  const key = earlier?.key ?? s.digests.key;
  const digests = (earlier?.values ?? []).filter((d) => (column === undefined ? d.distinctive : d.column === column)).map((d) => d.digest);
  return { values: column === undefined ? distinctiveOf(s.samples) : [...(s.samples.get(column) ?? [])], key, digests };
}

/** A sampled production value the rule changes: keepFirst keeps short values, a constant its own value. */
function stillProduction(rule: MaskRule, value: string): boolean {
  if (rule.with === "keepFirst") return value.length > (rule.chars ?? 0);
  if (rule.with === "constant") return value !== rule.value;
  return true;
}

/**
 * The sampled values that say something wherever they are found: a number, a date or time, a
 * truth value or a short text is in many columns that never held a masked value (a view's id beside
 * a score set to NULL), so those are looked for only in their own column's statistics.
 */
function distinctiveOf(samples: Samples): string[] {
  const all = [...samples.values()].flatMap((values) => [...values]).map((v) => v.trim());
  return [...new Set(all.filter((v) => v.length >= 4 && !/^[-+0-9.,:eE T]*$/.test(v) && !/^(true|false)$/i.test(v)))];
}

/**
 * One UPDATE per table, every rule of that table in it, with the compressed chunks decompressed
 * first, analysed with their masked rows in them and compressed again after (one rewrite each, and
 * no limit on rows decompressed). Counts the rows each "null" rule changes, before.
 */
async function maskTables(s: Preparing): Promise<void> {
  const numbered = s.tables
    .map((t) => ({ table: tableName(t), columns: t.rules.filter((r) => sql.pseudonymous(r.rule)).map((r) => r.quoted) }))
    .filter((t) => t.columns.length);
  if (numbered.length) {
    s.step = "prepare.mask (numbering the distinct values that hash and email rules mask)";
    const { values, param } = sql.parameters(s.pseudonyms);
    await s.q(sql.pseudonymTable(numbered, param), values);
    await s.q(sql.PSEUDONYMS_INDEX);
  }
  for (const t of s.tables) {
    s.step = t.rules.map((r) => ruleLabel(t, r)).join(", ");
    // Every mask but "null" keeps a value non-NULL: those rows are counted by the check after the masking.
    const nulled = t.rules.filter((r) => r.rule.with === "null");
    if (nulled.length) {
      const counts = (
        await s.q<Record<string, number>>(
          sql.countNotNull(
            tableName(t),
            nulled.map((r) => r.quoted),
          ),
        )
      )[0];
      nulled.forEach((r, n) => s.counts.set(r.index, Number(counts?.[`c${n}`] ?? 0)));
    }
    const chunks =
      s.ts && t.hypertable ? (await s.q<{ chunk: Quoted }>(sql.COMPRESSED_CHUNKS, [t.schema, t.name])).map((c) => c.chunk) : [];
    // Every chunk compressed: once compressed again, none holds a row for the hypertable's own ANALYZE to sample.
    const allCompressed =
      chunks.length > 0 && (await s.q<{ all: boolean }>(sql.ALL_CHUNKS_COMPRESSED, [t.schema, t.name]))[0]?.all === true;
    for (const chunk of chunks) await s.q(sql.decompressChunk(s.timescale), [chunk]);
    const { values, param } = sql.parameters(s.pseudonyms);
    await s.q(
      sql.maskUpdate(
        tableName(t),
        t.rules.map((r) => ({ rule: r.rule, column: r.quoted })),
        param,
      ),
      values,
    );
    // Once compressed, a chunk is empty, and ANALYZE keeps an empty table's statistics (production's, from when it was active).
    // The hypertable's own (of the whole) likewise, where no chunk will hold rows: its ANALYZE analyses each chunk too.
    if (allCompressed) await s.q(sql.analyze(tableName(t)));
    for (const chunk of chunks) {
      // Emptied in production (an erasure's DELETE), it keeps the statistics it had when active; holding nothing, it goes.
      if ((await s.q<{ empty: boolean }>(sql.isEmpty(chunk)))[0]?.empty) {
        await s.check(GUARDS.standingOnDropped, { hypertables: [], aggregates: [], tables: [chunk] });
        await s.q(sql.dropTable(chunk));
        s.removed.push(`chunk ${printable(chunk)} of ${t.label}, empty (its statistics were production's)`);
        s.reach.written = s.reach.written.filter((w) => w.quoted !== chunk);
        continue;
      }
      if (!allCompressed) await s.q(sql.analyze(chunk));
      await s.q(sql.compressChunk(s.timescale), [chunk]);
    }
  }
  // Production's values: gone before anything else runs in this session (the user's sqlAfter).
  if (numbered.length) await s.q(sql.DROP_PSEUDONYMS);
}

/** A key's cascade rewrote rows out of other hypertables' compressed batches: analysed with them outside, then compressed again. */
async function recompressCascaded(s: Preparing): Promise<void> {
  for (const h of s.reach.hypertables)
    for (const { chunk } of await s.q<{ chunk: Quoted }>(sql.PARTIAL_CHUNKS, [h.schema, h.name])) {
      s.step = `prepare.mask (compress_chunk(${chunk}), rows a key's cascade rewrote)`;
      await s.q(sql.analyze(chunk));
      await s.q(sql.compressChunk(s.timescale), [chunk]);
    }
}

/** Chunk skipping keeps each chunk's minimum and maximum of a column: production's, until set again. */
async function resetChunkSkipping(s: Preparing): Promise<void> {
  const skipping = await s.q<{ hypertable: string; column: string }>(sql.SKIPPING_COLUMNS, [s.reach.hypertables.map((h) => h.oid)]);
  if (skipping.length) await s.q(sql.CHUNK_SKIPPING_ON);
  for (const c of skipping) {
    await s.q(sql.disableChunkSkipping(s.timescale), [c.hypertable, c.column]);
    await s.q(sql.enableChunkSkipping(s.timescale), [c.hypertable, c.column]);
  }
  // The catalog's own statistics held the old ranges.
  if (skipping.length) await s.q(sql.ANALYZE_CHUNK_RANGES);
}

/**
 * Row security an owner forces on itself hides its table's statistics from pg_stats, which every
 * check reads as that owner, and fails the masking's UPDATE (row_security is off): lifted inside the
 * masking's transaction (the owner's membership lent by now, so prepare.sql could not do it).
 */
async function liftForcedRowSecurity(s: Preparing): Promise<void> {
  s.forced = await s.q<sql.ForcedRowSecurity>(sql.FORCED_ROW_SECURITY);
  for (const f of s.forced) await s.q(f.lift);
}

async function forceRowSecurityAgain(s: Preparing): Promise<void> {
  for (const f of s.forced) await s.q(f.force);
}

async function holdOffRollups(s: Preparing): Promise<void> {
  s.rollups = await s.q<sql.Rollup>(sql.ROLLUPS, [s.reach.hypertables.map((h) => h.oid)]);
  for (const r of s.rollups) await s.q(r.hold);
}

async function putBack(s: Preparing): Promise<void> {
  for (const r of s.rollups) await s.q(r.restore);
  for (const x of s.switched)
    await s.q(x.kind === "trigger" ? sql.triggerSwitch(x.table, x.name, x.mode, x.hypertable) : sql.ruleSwitch(x.table, x.name, x.mode));
}

/**
 * Statistics made again from the masked data: ANALYZE of every table written (each chunk too, and
 * the tables holding compressed rows, which a hypertable's ANALYZE leaves), and of the tables above
 * the masked ones. An empty table keeps its old statistics through ANALYZE: its columns' are
 * dropped (a column's type set again does), where PostgreSQL lets that be done; the check says
 * where it did not.
 */
async function restatisticize(s: Preparing): Promise<void> {
  // First: what is below reads tables whole (an empty one's statistics are dropped), and every check after reads pg_stats,
  // which shows a column's statistics only to a role that may read it (and no table's whose row security it forces).
  await s.check(GUARDS.hiddenFromChecks, undefined);
  await s.check(GUARDS.hiddenByOwner, undefined);
  const compressed = await compressedTables(s, s.reach.hypertables);
  for (const t of [...s.reach.written.filter((x) => x.kind === "r" || x.kind === "p"), ...compressed, ...s.reach.ancestors]) {
    s.step = `prepare.mask (ANALYZE ${shownName(t)})`;
    await s.q(sql.analyze(tableName(t)));
  }
  // A parent (its statistics of the whole too: inheritance's, a partitioned table's) is empty when every table under it is:
  // its columns set again with theirs.
  const parents = new Set(s.reach.ancestors.map((t) => t.oid));
  const emptyParents: number[] = [];
  const parentKinds = (x: Table) => x.kind === "r" || (x.kind === "p" && parents.has(x.oid));
  for (const t of [...s.reach.written, ...s.reach.ancestors].filter((x) => parentKinds(x) && !s.isChunk(x))) {
    s.step = `prepare.mask (whether ${shownName(t)} is empty, with statistics ANALYZE would keep)`;
    if (!(await s.q<{ empty: boolean }>(sql.isEmpty(tableName(t))))[0]?.empty) continue;
    if (parents.has(t.oid)) emptyParents.push(t.oid);
    for (const c of await s.q<{ name: string; retype: sql.ServerStatement }>(sql.COLUMNS_WITH_STATISTICS, [t.oid, parents.has(t.oid)])) {
      s.step = `prepare.mask (the statistics of ${shownName(t)}.${c.name}, an empty table)`;
      await s.q(sql.SAVEPOINT);
      await s.session.query(c.retype).then(
        () => s.q(sql.RELEASE_SAVEPOINT),
        () => s.q(sql.ROLLBACK_TO_SAVEPOINT),
      );
    }
  }
  // Set again where PostgreSQL let it be (a partition key's column it does not: one a rule masks is refused already);
  // what is left of the whole, of a masked column, is refused.
  await s.check(GUARDS.emptyTreeStatistics, { relations: emptyParents, columns: [...s.samples.keys()] });
  if (!s.timescaledb) return;
  s.step = "prepare.mask (chunks left empty with statistics ANALYZE would keep)";
  // A chunk left empty in production (an erasure's DELETE) keeps its statistics, and TimescaleDB lets none of its columns be set again.
  for (const c of await s.q<sql.EmptyChunk>(sql.EMPTY_CHUNKS_WITH_STATISTICS, [s.reach.hypertables.map((h) => h.oid)])) {
    s.step = `prepare.mask (the empty chunk ${printable(c.chunk)} of ${printable(c.hypertable)}, with statistics ANALYZE would keep)`;
    if (!(await s.q<{ empty: boolean }>(sql.isEmpty(c.chunk)))[0]?.empty) continue;
    await s.check(GUARDS.standingOnDropped, { hypertables: [], aggregates: [], tables: [c.chunk] });
    await s.q(c.drop);
    s.removed.push(`chunk ${printable(c.chunk)} of ${printable(c.hypertable)}, empty (its statistics were production's)`);
    // Gone: nothing after this (the checks, the space given back) looks for it.
    s.reach.written = s.reach.written.filter((t) => t.oid !== c.oid);
    s.reach.cascaded = s.reach.cascaded.filter((t) => t.oid !== c.oid);
  }
}

/** The tables holding these hypertables' compressed rows. */
async function compressedTables(s: Preparing, hypertables: Table[]): Promise<Table[]> {
  if (!s.timescaledb) return [];
  const all: Table[] = [];
  for (const h of hypertables) all.push(...(await s.q<Table>(sql.COMPRESSED_TABLES, [h.schema, h.name])));
  return all;
}

/** Every masked column holds only what its rule writes (a trigger or rule that undid the masking is caught here): one scan per table. */
async function checkRows(s: Preparing): Promise<void> {
  for (const t of s.tables) {
    s.step = `${t.rules.map((r) => ruleLabel(t, r)).join(", ")} (checking every row)`;
    const { values, param } = sql.parameters(s.pseudonyms);
    const text = sql.maskedRows(
      tableName(t),
      t.rules.map((r) => ({ rule: r.rule, column: r.quoted })),
      param,
    );
    const [found] = await s.check(GUARDS.rowsNotMasked, { label: t.label, text, params: values, columns: t.rules.map((r) => r.column) });
    t.rules.forEach((r, n) => r.rule.with !== "null" && s.counts.set(r.index, found?.[`n${n}`] ?? 0));
  }
}

/**
 * No statistic of what the masking wrote holds a sampled production value: the masked columns of
 * the masked tables, their chunks and compressed rows, each against its own column's values; every
 * column of what a key cascaded to and of the tables above what was written, their indexes and
 * extended statistics, against the values only a leak puts there.
 */
async function checkStatistics(s: Preparing): Promise<void> {
  const cascaded = new Set(s.reach.cascaded.map((t) => t.oid));
  const narrow = [
    ...s.reach.written.filter((t) => !cascaded.has(t.oid)),
    ...(await compressedTables(
      s,
      s.reach.hypertables.filter((h) => !cascaded.has(h.oid)),
    )),
  ];
  const wide = [
    ...s.reach.cascaded,
    ...s.reach.ancestors,
    ...(await compressedTables(
      s,
      s.reach.hypertables.filter((h) => cascaded.has(h.oid)),
    )),
  ];
  wide.push(...(await s.q<Table>(sql.INDEXES, [[...narrow, ...wide].map((t) => t.oid)])));
  await s.check(GUARDS.frozenStatistics, { relations: [...narrow, ...wide].map((t) => t.oid) });
  // Chunks aside: a compressed one's table is empty, its statistics made from the masked rows before compressing.
  const own = [...s.reach.written, ...s.reach.cascaded, ...s.reach.ancestors].filter((t) => !s.isChunk(t));
  await s.check(GUARDS.statisticsKept, { relations: own.map((t) => t.oid) });
  const tables = narrow.map((t) => t.oid);
  const columns = new Set([...s.samples.keys(), ...(s.target.sampledEarlier?.values ?? []).map((d) => d.column)]);
  for (const column of columns)
    await s.check(GUARDS.statisticsHolding, { of: undefined, tables, columns: [column], ...compared(s, column), relations: [] });
  await s.check(GUARDS.statisticsHolding, { of: undefined, tables: [], columns: [], ...compared(s), relations: wide.map((t) => t.oid) });
}

async function commit(s: Preparing): Promise<void> {
  await s.q(sql.COMMIT);
  s.stage = "committed";
}

/**
 * The UPDATE left the old rows behind, dead (unreadable, but on disk: the fork would be twice the
 * size for them); compressed chunks were rewritten whole already. Each table's space given back,
 * one table at a time (VACUUM cannot run inside a transaction).
 */
async function giveSpaceBack(s: Preparing): Promise<void> {
  for (const t of s.reach.written.filter((x) => x.kind === "r")) {
    s.step = `prepare.mask (VACUUM FULL ${shownName(t)})`;
    await s.q(sql.vacuumFull(tableName(t)));
  }
}

/**
 * What keeps a copy of what the masking wrote, refreshed (outside a transaction, as a continuous
 * aggregate's must be) and checked, each after what it reads. Every one is emptied before the
 * first is refreshed: a view's query may call a function that reads another view (what it reads
 * cannot be told), which would otherwise still hold production's rows.
 */
async function refreshDerived(s: Preparing): Promise<void> {
  const readers = await s.q<Reader>(sql.READS);
  for (const t of await s.q<{ name: string; quoted: string }>(sql.ROW_SECURED_TABLES))
    s.rowSecured.set(t.name, [...(s.rowSecured.get(t.name) ?? []), t.quoted]);
  const aggregates = s.timescaledb ? await s.q<Aggregate>(sql.CONTINUOUS_AGGREGATES) : [];
  // Reading a hypertable partitioned by a function of the database's own runs it (TimescaleDB's planner calls it).
  const partitioned = new Set(s.timescaledb ? (await s.q<{ oid: number }>(sql.PARTITIONED_BY_OWN)).map((h) => h.oid) : []);
  for (const r of readers) if (r.reads.some((oid) => partitioned.has(oid))) r.opaque = true;
  await s.check(GUARDS.statisticsCopied, { views: statisticsReaders(readers, aggregates) });
  // Emptied by an earlier preparation of this fork that failed before refreshing them: populated in production.
  const owed = await owedViews(s);
  for (const r of readers) if (owed.has(r.oid)) r.populated = true;
  if (owed.size)
    s.progress(
      `refreshing too what an earlier preparation emptied and did not refresh: ${printable(
        readers
          .filter((r) => owed.has(r.oid))
          .map(shownName)
          .join(", "),
      ).slice(0, 300)}`,
    );
  const plan = toRefresh(new Set([...s.reach.written, ...s.reach.ancestors].map((t) => t.oid)), readers, aggregates);
  // Left unpopulated, with statistics from when they held production's rows (found before the
  // emptying below adds its own): made again before what runs a function of the database's own is
  // refreshed (it could read them), unless it runs one itself or reads one that does.
  const unpopulated = (await s.q<Table>(sql.UNPOPULATED_WITH_STATISTICS))
    .filter((v) => !owed.has(v.oid))
    .map((view) => ({ view, inputs: unpopulatedInputs(view.oid, readers) }));
  const opaque = new Set(readers.filter((r) => r.opaque).map((r) => r.oid));
  // Or reads one refreshed last (a view, an aggregate's materialization), itself or through views or
  // unpopulated ones (populated with it), or one such of these: made again with no data with it, never populated before it.
  const last = new Set([
    ...opaque,
    ...plan.flatMap((item) => (!item.opaque ? [] : item.kind === "materialized view" ? [item.table.oid] : [item.aggregate.oid])),
  ]);
  const byOid = new Map(readers.map((r) => [r.oid, r]));
  const readsThrough = (r: Reader | undefined) => r !== undefined && (r.kind === "v" || !r.populated);
  const readsLast = (oid: number, seen: Set<number>): boolean =>
    (byOid.get(oid)?.reads ?? []).some(
      (r) => !seen.has(r) && seen.add(r) && (last.has(r) || (readsThrough(byOid.get(r)) && readsLast(r, seen))),
    );
  for (let grew = true; grew;) {
    grew = false;
    for (const { view, inputs } of unpopulated)
      if (!last.has(view.oid) && (inputs.some((i) => last.has(i.oid)) || readsLast(view.oid, new Set([view.oid]))))
        grew = last.add(view.oid).size > 0;
  }
  const runsOwn = ({ view }: (typeof unpopulated)[number]) => last.has(view.oid);
  // What is refreshed, or populated to be analysed (with what it reads unpopulated), reads with row security off: refused before anything is emptied.
  const populated = unpopulated.filter((v) => !runsOwn(v)).flatMap((v) => [v.view.oid, ...v.inputs.map((i) => i.oid)]);
  const refreshedAs = new Map<number, string>([
    ...plan.map((item): [number, string] =>
      item.kind === "materialized view" ? [item.table.oid, shownName(item.table)] : [item.aggregate.direct, item.aggregate.view],
    ),
    ...populated.map((oid): [number, string] => [oid, shownName(byOid.get(oid) ?? { schema: "", name: String(oid) })]),
  ]);
  await s.check(GUARDS.refreshUnderRowSecurity, { views: [...refreshedAs.keys()], names: refreshedAs });
  const cycle = await lentAsCycle(s);
  const refreshedLast = plan.flatMap((item) =>
    !item.opaque ? [] : item.kind === "materialized view" ? [item.table.oid] : [item.aggregate.direct],
  );
  await s.check(GUARDS.refreshedLastThroughCycle, { views: refreshedLast, names: refreshedAs, cycle });
  if (s.timescaledb) {
    const aggregates = plan.flatMap((item) => (item.kind === "continuous aggregate" ? [item.aggregate.oid] : []));
    await s.check(GUARDS.standingOnDropped, { hypertables: [], aggregates, tables: [] });
  }
  await dropOwnStatisticsObjects(s, cycle);
  // An aggregate with chunk skipping on a column: its ranges made again as its chunks are compressed again, and the catalog analysed after.
  const skipped = s.timescaledb
    ? await s.q(sql.SKIPPING_COLUMNS, [plan.flatMap((item) => (item.kind === "continuous aggregate" ? [item.aggregate.oid] : []))])
    : [];
  if (skipped.length) {
    s.chunkSkipping = true;
    await s.q(sql.CHUNK_SKIPPING_SESSION);
  }
  await recordOwed(s, plan);
  // Those refreshed once the database's own functions run again, and those left unpopulated that call one: made again with no data.
  const moved = await remakeEmpty(s, [
    ...plan.flatMap((item) => (item.opaque && item.kind === "materialized view" ? [item.table] : [])),
    ...unpopulated.filter(runsOwn).map((v) => v.view),
  ]);
  for (const item of plan)
    if (item.kind === "materialized view") item.table = { ...item.table, oid: moved.get(item.table.oid) ?? item.table.oid };
  for (const o of s.remakeLast) o.oid = moved.get(o.oid) ?? o.oid;
  const remade = new Set(moved.values());
  const emptied = new Map<Refresh, Set<string>>();
  for (const item of plan) {
    if (item.kind === "materialized view" && remade.has(item.table.oid)) continue;
    s.step = `prepare.mask (emptying the ${item.kind} ${refreshedName(item)} before anything is refreshed)`;
    emptied.set(item, item.kind === "materialized view" ? await emptyView(s, item.table) : await emptyAggregate(s, item.aggregate));
    // Refreshed once the database's own functions run again: its statistics of its whole made first, of nothing of production's.
    if (item.kind === "continuous aggregate" && item.opaque) await restatisticizeEmptied(s, item.aggregate);
  }
  const refresh = async (on: Preparing, item: Refresh) => {
    const name = refreshedName(item);
    on.step = `prepare.mask (refreshing the ${item.kind} ${name})`;
    on.progress(`refreshing the ${item.kind} ${name} from the masked data`);
    const compressedAt = emptied.get(item) ?? new Set<string>();
    const kept = item.kind === "materialized view" ? await refreshView(on, item) : await refreshAggregate(on, item.aggregate, compressedAt);
    if (item.checked) await checkDerived(on, name, kept);
  };
  // Two at a time where a wave has more: a refresh is one CPU's work on the server.
  let second: Preparing | undefined;
  try {
    for (const wave of new Set(plan.filter((item) => !item.opaque).map((item) => item.wave))) {
      const items = plan.filter((item) => item.wave === wave);
      if (items.length > 1) second ??= await s.lane();
      await bothOf(items, second ? [s, second] : [s], refresh);
    }
  } finally {
    await second?.session.end();
  }
  for (const view of unpopulated.filter((v) => !runsOwn(v))) await restatisticizeUnpopulated(s, view);
  // Everything else made from the masked data: what calls a function of the database's own may run now.
  s.step = "prepare.mask (the database's own functions given back)";
  await giveBackRoutines(s);
  for (const item of plan.filter((i) => i.opaque)) await refresh(s, item);
  if (skipped.length) {
    s.step = "prepare.mask (the statistics of chunk skipping's ranges, of the aggregates refreshed)";
    await s.q(sql.ANALYZE_CHUNK_RANGES);
  }
  // Every view refreshed: none is owed any more (the record itself goes with the memberships, last).
  s.step = "prepare.mask (every view refreshed)";
  if (await recordPresent(s)) await s.q(sql.clearOwedViews(record(s).quoted));
  s.refreshed.push(...plan.map(refreshedName));
  s.refreshedAll = true;
}

/**
 * Materialized views made again with no data, their statistics gone with them: REFRESH … WITH NO
 * DATA and ANALYZE of an empty view keep a view's statistics (production's), and a function of the
 * database's own, run by a view's refresh, could read them. Those left unpopulated that read one are
 * made again too. In one transaction: readers dropped first, each made again after what it reads,
 * its privileges checked the same after. Returns each one's new oid by its old.
 */
async function remakeEmpty(s: Preparing, views: Table[]): Promise<Map<number, number>> {
  const moved = new Map<number, number>();
  if (!views.length) return moved;
  s.step = "prepare.mask (the materialized views calling a function of the database's own, made again with no data)";
  const oids = new Set(views.map((v) => v.oid));
  let found: sql.ViewMadeAgain[] = [];
  const names = new Map<number, string>();
  for (let more = true; more;) {
    found = await s.q<sql.ViewMadeAgain>(sql.VIEWS_MADE_AGAIN_EMPTY, [[...oids]]);
    more = false;
    for (const r of await s.q<{ oid: number; place: string; unpopulated: boolean }>(sql.RELATIONS, [found.flatMap((v) => v.readers)])) {
      names.set(r.oid, r.place);
      if (r.unpopulated && !oids.has(r.oid)) more = oids.add(r.oid).size > 0;
    }
  }
  await s.check(GUARDS.viewsNotMadeAgain, { views: found, names });
  // Each after those of them it reads (v reads u: v is among u's readers).
  const order: sql.ViewMadeAgain[] = [];
  for (let left = [...found]; left.length;) {
    const ready = left.filter((v) => !left.some((u) => u !== v && u.readers.includes(v.oid)));
    if (!ready.length) s.fail(new Refusal(`${printable(left.map((v) => v.place).join(", "))} read each other`));
    order.push(...ready);
    left = left.filter((v) => !ready.includes(v));
  }
  const privileges = async (oid: number) => (await s.q<{ privileges: string }>(sql.VIEW_PRIVILEGES, [oid]))[0]?.privileges;
  const before = new Map<number, string | undefined>();
  for (const v of order) before.set(v.oid, await privileges(v.oid));
  const owed = await recordPresent(s);
  await s.q(sql.BEGIN);
  for (const v of [...order].reverse()) await s.q(v.drop);
  for (const v of order) {
    s.step = `prepare.mask (making the materialized view ${printable(v.place)} again with no data)`;
    for (const text of v.make) await s.q(text);
    const oid = (await s.q<{ oid: number }>(sql.VIEW_OID, [v.place]))[0]?.oid ?? 0;
    if ((await privileges(oid)) !== before.get(v.oid))
      s.fail(new Refusal(`${printable(v.place)}, made again with no data, did not get its privileges back as they were`));
    if (owed) await s.q(sql.reowedView(record(s).quoted), [v.oid, oid]);
    moved.set(v.oid, oid);
  }
  await s.q(sql.COMMIT);
  return moved;
}

/** This fork's record of what its preparation must undo or finish (statements.ts, RECORD_PRESENT): a schema named by a digest of its service ID. */
function record(s: Preparing): { name: string; quoted: Quoted } {
  const name = `_tigercloud_preparing_${crypto.createHash("sha256").update(s.target.serviceId).digest("hex").slice(0, 24)}`;
  return { name, quoted: sql.ident(name) };
}
const recordPresent = async (s: Preparing) => (await s.q<{ present: boolean }>(sql.RECORD_PRESENT, [record(s).name]))[0]?.present === true;

/** The materialized views an earlier preparation of this fork emptied and did not refresh. */
async function owedViews(s: Preparing): Promise<Set<number>> {
  return new Set((await recordPresent(s)) ? (await s.q<{ oid: number }>(sql.owedViews(record(s).quoted))).map((r) => r.oid) : []);
}

/** The record, made where it is not (in the transaction that is open, or in one of its own). */
async function makeRecord(s: Preparing): Promise<void> {
  for (const text of sql.makeRecord(record(s).quoted)) await s.q(text);
  const grants = async () => (await s.q<{ revoke: sql.ServerStatement }>(sql.RECORD_GRANTS, [record(s).name])).map((r) => r.revoke);
  for (const revoke of await grants()) await s.q(revoke);
  const left = await grants();
  if (left.length)
    s.fail(
      new Refusal(`its record ${record(s).name} stays readable by another role after revoking (${left.length} grant(s) it did not make)`),
    );
}

/**
 * After a failure past the commit, once everything is made again: the record there, in a
 * transaction of its own. What ran since the commit (a view refreshed last runs a function of the
 * database's own, as the record's owner) may have dropped it; without it a fork of this fork,
 * masked already, would sample only pseudonyms and check against nothing of production's. Its
 * step stays the failed one's: the failure is said after it.
 */
async function keepRecord(s: Preparing): Promise<string> {
  await s.session.query("ROLLBACK").catch(() => undefined);
  await s.pin();
  // What a function of the database's own set running (a job it scheduled, a session it opened) could drop it after.
  // Ended first: a job still running could schedule another as fast as it is paused (and its alter_job conflict with the pause's).
  const endOthers = () => s.q<{ ended: number; left: number }>(sql.endOtherSessions(s.timescaledb));
  if (s.p.pauseJobs && s.timescaledb) {
    await endOthers();
    await pauseJobsScheduledSince(s);
  }
  // Then what the scheduler started meanwhile.
  const [others] = await endOthers();
  await s.q(sql.BEGIN);
  await makeRecord(s);
  await s.q(sql.COMMIT);
  return others?.left
    ? ` ${others.left} session(s) of roles it may not end still ran on the fork, which could drop its record ${record(s).name}: fork from production.`
    : "";
}

/** The functions of the database's own held off (statements.ts, holdOffRoutines), in the masking's transaction. */
async function holdOffRoutines(s: Preparing): Promise<void> {
  if (s.timescaledb) await s.check(GUARDS.routinesOnChunks, undefined);
  await makeRecord(s);
  for (const text of sql.holdOffRoutines(record(s).quoted)) await s.q(text);
  s.heldOff = (await s.q<{ routine: string }>(sql.heldOffRoutines(record(s).quoted))).map((r) => r.routine);
  s.membershipsLent = ((await s.q<{ n: number }>(sql.membershipsLent(record(s).quoted)))[0]?.n ?? 0) > 0;
  if (s.heldOff.length) s.progress(`held off until what calls them is refreshed: ${s.heldOff.length} function(s) of the database's own`);
}

/** Their definitions made again as they were, and what was lent for them taken back. */
async function giveBackRoutines(s: Preparing): Promise<void> {
  // A membership withheld goes back with them (statements.ts, holdOffRoutines): what runs as its role after has its privileges.
  if (!s.heldOff.length && !s.membershipsLent) return;
  await s.q(sql.giveBackRoutines(record(s).quoted, { memberships: false }));
  s.heldOff = [];
}

/**
 * Last: the memberships the preparation lent itself taken back (what it did as an owner, up to
 * making an index of another role's table again, is done), then its record dropped.
 */
async function giveBackMemberships(s: Preparing): Promise<void> {
  if (s.membershipsLent) await s.q(sql.giveBackRoutines(record(s).quoted));
  s.membershipsLent = false;
  await s.q(sql.dropRecord(record(s).quoted));
}

/** What an earlier preparation of this fork held off and, failing, did not give back: given back now. */
async function giveBackEarlier(s: Preparing): Promise<void> {
  if (!(await recordPresent(s))) return;
  const held = (await s.q<{ n: number }>(sql.routinesHeld(record(s).quoted)))[0]?.n ?? 0;
  if (!held) return;
  await s.q(sql.giveBackRoutines(record(s).quoted));
  s.progress(`made again the function(s) of the database's own that an earlier preparation, failing, had held off`);
}

/** The materialized views about to be emptied, recorded (committed) before the first is: a failure after leaves them owed. */
async function recordOwed(s: Preparing, plan: Refresh[]): Promise<void> {
  const views = plan.flatMap((item) => (item.kind === "materialized view" ? [item.table.oid] : []));
  if (!views.length) return;
  s.step = "prepare.mask (recording the materialized views about to be emptied)";
  await s.q(sql.BEGIN);
  await makeRecord(s);
  await s.q(sql.recordViews(record(s).quoted), [views]);
  await s.q(sql.COMMIT);
}

/**
 * The indexes and extended statistics of what the masking does not write that call a function of
 * the database's own, dropped before anything is refreshed: such a function can read pg_stats (its
 * own statistics among them) while a refresh or ANALYZE runs it, and copy what is still production's.
 * Made again last (restatisticizeCallingOwn), once every other statistic is the masked data's.
 */
async function dropOwnStatisticsObjects(s: Preparing, cycle: string): Promise<void> {
  // An owner lent as 'cycle' is given back before the views refreshed last: its objects could not be made again after.
  const objects = await s.q<OwnStatisticsObject>(sql.OWN_STATISTICS_OBJECTS, [s.reach.written.map((t) => t.oid), cycle]);
  await s.check(GUARDS.statisticsCallingOwnKept, { objects });
  for (const o of objects) {
    s.step = `prepare.mask (dropping the ${o.what} until everything else is made again)`;
    await s.q(o.drop);
    s.remakeLast.push(o);
  }
}

/** The roles lent as 'cycle' (statements.ts, holdOffRoutines), as an array's text for a parameter. */
async function lentAsCycle(s: Preparing): Promise<string> {
  const [cycle] = (await recordPresent(s)) ? await s.q<{ roles: string }>(sql.lentAsCycle(record(s).quoted)) : [];
  return cycle?.roles ?? "{}";
}

/** The dropped indexes and extended statistics made again, as they were (a comment, a CLUSTER mark, a target with them). */
async function remakeOwnStatisticsObjects(s: Preparing): Promise<void> {
  while (s.remakeLast.length) {
    const o = s.remakeLast[0] as OwnStatisticsObject;
    s.step = `prepare.mask (making the ${o.what} again)`;
    const notAsProductionHad = (missing: string) => (err: unknown) => {
      // What it names (its table, a function) changed on the fork since it was dropped: by what ran in a view refreshed last.
      if (!(err instanceof NamedFailure)) throw err;
      throw new Refusal(
        printable(
          `the ${o.what} of ${shownName(o)} ${missing}: ` +
            "what it names (its table, a function) was changed on the fork after it was dropped, by what a view refreshed last ran; " +
            `make it ${AGAIN}`,
        ).slice(0, 600),
      );
    };
    // With the role's search_path, as production made it: its function may name others unqualified.
    await asUser(s, o.make).catch(notAsProductionHad("could not be made again as production had it"));
    // Made: what goes with it (a CLUSTER mark, a comment, a target) fails alone, the object kept.
    s.remakeLast.shift();
    for (const text of o.after) await s.q(text).catch(notAsProductionHad(`was made again, but not its ${text}`));
  }
}

/**
 * After a failure: what was dropped made again where it can be; what cannot be, named in the failure.
 * Before every view and aggregate was refreshed, none is: making one runs its function of the
 * database's own, and views emptied but not yet refreshed still hold production's statistics.
 */
async function remakeAfterFailure(s: Preparing): Promise<void> {
  try {
    await remakeWhatWasDropped(s);
  } finally {
    // Lent after the commit: taken back, once what needed an owner's privileges is made again. Before it, rolled back.
    if (s.stage === "committed" && s.membershipsLent) await giveBackAfterFailure(s, { memberships: true });
  }
}

/** After a failure past the commit: what the record holds given back (the record keeps it for the next preparation should this fail too). */
async function giveBackAfterFailure(s: Preparing, options: { memberships: boolean }): Promise<void> {
  await s.session
    .query("ROLLBACK")
    .then(() => s.session.query(sql.PIN_SEARCH_PATH))
    .then(() => s.session.query(sql.giveBackRoutines(record(s).quoted, options)))
    .catch(() => undefined);
}

async function remakeWhatWasDropped(s: Preparing): Promise<void> {
  // Held off after the commit: given back. Before it, rolled back.
  if (s.stage === "committed" && s.heldOff.length) await giveBackAfterFailure(s, { memberships: false });
  if (!s.refreshedAll && s.remakeLast.length) {
    s.notRemade = { objects: s.remakeLast.map((o) => `${o.what} (${o.make})`), withheld: true };
    s.remakeLast = [];
    return;
  }
  for (const o of s.remakeLast) {
    try {
      await s.session.query("ROLLBACK").catch(() => undefined);
      await s.session.query(sql.SESSION_SEARCH_PATH, [s.userPath]);
      await s.session.query(o.make);
    } catch {
      s.notRemade.objects.push(`${o.what} (${o.make})`);
      continue;
    }
    for (const text of o.after) await s.session.query(text).catch(() => s.notRemade.objects.push(`${o.what}'s ${text}`));
  }
  s.remakeLast = [];
}

/**
 * Last, once every view and aggregate is refreshed: the indexes and extended statistics dropped
 * before them made again, and the tables whose ANALYZE calls a function of the database's own (an
 * expression index's, say), which may read what the masking wrote, analysed again and checked.
 */
async function restatisticizeCallingOwn(s: Preparing): Promise<void> {
  const remade = [...new Map(s.remakeLast.map((o) => [o.oid, o as Table])).values()];
  await remakeOwnStatisticsObjects(s);
  const analysed = [...s.reach.written, ...s.reach.ancestors].map((t) => t.oid);
  const calling = await s.q<Table & { analysable: boolean }>(sql.STATISTICS_CALLING_OWN, [analysed]);
  await s.check(GUARDS.statisticsCallingOwnOfOthers, { tables: calling });
  const tables = [...new Map([...remade, ...calling].map((t) => [t.oid, t])).values()];
  if (!tables.length) return;
  for (const t of tables) {
    s.step = `prepare.mask (ANALYZE ${shownName(t)}, whose statistics call a function of the database's own)`;
    await asUser(s, sql.analyze(tableName(t)));
  }
  const relations = tables.map((t) => t.oid);
  // Row security forced again since the commit hides what the checks read: lifted for them, in a transaction (a refusal rolls it back).
  const forced = s.forced.filter((f) => relations.includes(f.oid));
  if (forced.length) {
    await s.q(sql.BEGIN);
    for (const f of forced) await s.q(f.lift);
  }
  await s.check(GUARDS.frozenStatistics, { relations });
  await s.check(GUARDS.statisticsKept, { relations });
  if (forced.length) {
    for (const f of forced) await s.q(f.force);
    await s.q(sql.COMMIT);
  }
}

/**
 * A materialized view left unpopulated: populated from the masked data (and first, for as long, the
 * unpopulated ones it reads), analysed, checked, then emptied again, with them.
 */
async function restatisticizeUnpopulated(s: Preparing, { view, inputs }: { view: Table; inputs: Table[] }): Promise<void> {
  const name = shownName(view);
  s.step = `prepare.mask (the statistics of ${name}, a materialized view left unpopulated)`;
  for (const input of inputs) await asUser(s, sql.refreshMaterializedView(tableName(input)));
  await asUser(s, sql.refreshMaterializedView(tableName(view)));
  await s.q(sql.analyze(tableName(view)));
  await s.check(GUARDS.frozenStatistics, { relations: [view.oid] });
  await s.check(GUARDS.statisticsKept, { relations: [view.oid] });
  await s.q(sql.emptyMaterializedView(tableName(view)));
  for (const input of [...inputs].reverse()) await s.q(sql.emptyMaterializedView(tableName(input)));
  await s.check(GUARDS.statisticsHolding, {
    of: name,
    tables: [],
    columns: [],
    ...compared(s),
    relations: [view.oid, ...(await s.q<Table>(sql.INDEXES, [[view.oid]])).map((i) => i.oid)],
  });
}

/** Each item done by one of the sessions as it comes free; every one's work waited for before a failure is said. */
async function bothOf<T>(items: T[], sessions: Preparing[], work: (on: Preparing, item: T) => Promise<void>): Promise<void> {
  const queue = [...items];
  const results = await Promise.allSettled(
    sessions.map(async (on) => {
      for (let item = queue.shift(); item !== undefined; item = queue.shift())
        await work(on, item).catch((err) => {
          queue.length = 0; // the other session starts nothing more
          throw err;
        });
    }),
  );
  const failed = results.find((r): r is PromiseRejectedResult => r.status === "rejected");
  if (failed) throw failed.reason;
}

const refreshedName = (item: Refresh) => (item.kind === "continuous aggregate" ? item.aggregate.view : shownName(item.table));

/** What a refresh keeps: the view to read its rows through, and the relations whose statistics hold them. */
interface Derived {
  view: Quoted;
  relations: Table[];
}

/** A view's query runs as the user wrote it, with the role's search_path (what it reads is masked by now); then the preparation's own settings again. */
async function asUser(s: Preparing, text: string): Promise<void> {
  await s.q(sql.SESSION_SEARCH_PATH, [s.userPath]);
  await s.q(text);
  await s.pin();
}

/** A materialized view emptied: no rows of production's left in it for another view's query to read. */
async function emptyView(s: Preparing, view: Table): Promise<Set<string>> {
  await s.q(sql.emptyMaterializedView(tableName(view)));
  return new Set();
}

/** A materialized view, rewritten whole by PostgreSQL, then analysed. */
async function refreshView(s: Preparing, item: Extract<Refresh, { kind: "materialized view" }>): Promise<Derived> {
  const view = tableName(item.table);
  await asUser(s, sql.refreshMaterializedView(view));
  await s.q(sql.analyze(view));
  // Every one, checked or not: statistics ANALYZE did not make again are production's, whatever it reads.
  await s.check(GUARDS.emptyViewWithStatistics, { view, oid: item.table.oid, name: shownName(item.table) });
  await s.check(GUARDS.statisticsKept, { relations: [item.table.oid] });
  if (!item.checked) await s.check(GUARDS.frozenStatistics, { relations: [item.table.oid] });
  return { view, relations: [item.table] };
}

/**
 * A continuous aggregate emptied: its chunks dropped (TimescaleDB lets no trigger or rule of a
 * materialization table be held off, and its refresh deletes the old rows: a trigger would see
 * production's; DROP TABLE runs none). Returns where its chunks were compressed.
 */
async function emptyAggregate(s: Preparing, a: Aggregate): Promise<Set<string>> {
  await s.check(GUARDS.aggregateWithoutTimescaleDB, { view: a.view, timescaledb: s.timescaledb });
  const before = await s.q<AggregateChunk>(sql.AGGREGATE_CHUNKS, [a.schema, a.name]);
  for (const c of before) await s.q(c.drop);
  return new Set(before.filter((c) => c.compressed).map(chunkStart));
}

/**
 * An emptied continuous aggregate refreshed whole from the masked data; its chunks compressed again
 * where they were (their companions analysed below), the others analysed with their rows. Its chunks
 * are new: none holds statistics of production's to replace.
 */
async function refreshAggregate(s: Preparing, a: Aggregate, compressedAt: Set<string>): Promise<Derived> {
  await s.q(sql.SET_REFRESHED, [a.view]);
  await asUser(s, sql.refreshContinuousAggregate(s.timescale));
  for (const c of await s.q<AggregateChunk>(sql.AGGREGATE_CHUNKS, [a.schema, a.name]))
    await (compressedAt.has(chunkStart(c)) ? s.q(sql.compressChunk(s.timescale), [c.chunk]) : s.q(sql.analyze(c.chunk)));
  // Its hypertable's own statistics are of the whole, production's, until an ANALYZE finds rows.
  await s.check(GUARDS.emptyViewWithStatistics, { view: tableName(a), oid: a.oid, name: a.view });
  const tree = await s.q<Table>(sql.TREE, [a.oid]);
  const compressed = await compressedTables(s, [a]);
  for (const t of [a, ...compressed]) await s.q(sql.analyze(tableName(t)));
  const relations = [...tree, ...compressed];
  return { view: a.view, relations: [...relations, ...(await s.q<Table>(sql.INDEXES, [relations.map((t) => t.oid)]))] };
}

/**
 * An emptied aggregate's materialization hypertable keeps the statistics of its whole through
 * ANALYZE (no chunk under it), and a function of the database's own run by a refresh could read
 * them: made again from a row of its time bucket alone, in a table attached as its chunk (an INSERT
 * would run its triggers), then that table dropped.
 */
async function restatisticizeEmptied(s: Preparing, a: Aggregate): Promise<void> {
  await makeRecord(s);
  const [root] = await s.q<sql.AggregateRootStatistics>(sql.AGGREGATE_ROOT_STATISTICS, [a.schema, a.name, record(s).name]);
  if (!root?.held) return;
  await s.check(GUARDS.aggregatePlaceheld, { view: a.view, hypertable: tableName(a), hazards: root.hazards });
  s.step = `prepare.mask (the statistics of the emptied continuous aggregate ${a.view}, made from a row of its own)`;
  await s.q(root.make);
  await s.q(root.fill);
  await s.q(sql.attachChunk(s.timescale), [tableName(a), root.placeholder, root.slices]);
  await s.q(sql.analyze(tableName(a)));
  await s.q(root.drop);
}

/** Where a chunk starts: the same range after the refresh as before. */
const chunkStart = (c: AggregateChunk) => c.start ?? c.start_integer ?? "";

/** A refreshed view's rows, and the statistics of what holds them, hold no production value that only a leak puts there. */
async function checkDerived(s: Preparing, name: string, derived: Derived): Promise<void> {
  const values = compared(s);
  const columns = (await s.q<{ column: Quoted }>(sql.VIEW_COLUMNS, [derived.view])).map((c) => c.column);
  await s.check(GUARDS.viewRowsHolding, { view: derived.view, columns, ...values, name });
  const relations = derived.relations.map((t) => t.oid);
  await s.check(GUARDS.frozenStatistics, { relations });
  await s.check(GUARDS.statisticsHolding, { of: name, tables: [], columns: [], ...values, relations });
}

/** The mark a fork of this fork finds in its copy (requireMasking reads it there). */
async function mark(s: Preparing): Promise<void> {
  const params = markParameters(
    s.target.serviceId,
    s.target.sourceServiceId as string,
    { digest: preparationDigest(s.p), masked: masked(s) },
    s.target.dataTakenAt ?? new Date(s.started).toISOString(),
  );
  await s.q(sql.BEGIN);
  for (const [text, values] of markStatements(params)) await s.q(text, values);
  await s.q(sql.COMMIT);
}

/** Each rule and the rows it changed, in the rules' order. */
function masked(s: Preparing): Prepared["masked"] {
  return s.tables
    .flatMap((t) =>
      t.rules.map((r) => ({
        index: r.index,
        rule: `${t.schema}.${t.name}.${r.column}`,
        with: r.rule.with,
        rows: s.counts.get(r.index) ?? 0,
      })),
    )
    .sort((a, b) => a.index - b.index)
    .map(({ index: _i, ...m }) => m);
}

/** What the preparation did, said once it is all done. */
function prepared(s: Preparing): Prepared {
  const m = masked(s);
  const summary = m.map((x) => `${x.rule} ${x.rows}`).join(", ");
  s.progress(
    `prepared and checked in ${((Date.now() - s.started) / 1000).toFixed(1)} s` +
      (m.length ? `; rows masked: ${summary}` : "") +
      (s.refreshed.length ? `; refreshed: ${s.refreshed.join(", ")}` : "") +
      (s.p.pauseJobs ? `; jobs paused: ${s.jobsPaused.length ? s.jobsPaused.join(", ") : "none was scheduled"}` : "") +
      `; longest: ${longest(s.took)}`,
  );
  return {
    digest: preparationDigest(s.p),
    at: new Date().toISOString(),
    ...(s.target.dataTakenAt ? { dataTakenAt: s.target.dataTakenAt } : {}),
    statements: (s.p.sql?.length ?? 0) + (s.p.sqlAfter?.length ?? 0),
    masked: m,
    jobsPaused: s.jobsPaused,
    ...(s.refreshed.length ? { refreshed: s.refreshed } : {}),
    ...(s.removed.length ? { removed: s.removed } : {}),
  };
}

/** The three longest steps, by name and seconds. */
function longest(took: Preparing["took"]): string {
  return [...took]
    .sort((a, b) => b[1] - a[1])
    .slice(0, 3)
    .map(([step, ms]) => `${step} ${(ms / 1000).toFixed(1)} s`)
    .join(", ");
}

/** What a failure left dropped and did not make again: it could not, or (`withheld`) it was not safe to. */
interface NotRemade {
  objects: string[];
  withheld: boolean;
}

/** What a failure says of the indexes and statistics it dropped and did not make again. */
function notRemadeSentence({ objects, withheld }: NotRemade): string {
  return withheld
    ? `These, dropped until every view was refreshed from the masked data, were not made again: the preparation stopped before, and ` +
        `their function of the database's own could then read statistics still production's: ${objects.join("; ")}. ` +
        `They are not in the fork; make them ${AGAIN} to have them.`
    : `These, dropped until the statistics were made again, could not be made again: ${objects.join("; ")}.`;
}

/** What a failure at `stage` leaves, said truly. */
function kept(stage: Stage, p: Preparation, jobsPaused: number[], notRemade: NotRemade = { objects: [], withheld: false }): string {
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
      : stage === "seeding"
        ? "The masking was committed and checked and every view refreshed from it; prepare.sqlAfter's own transaction was rolled back. "
        : stage === "transaction"
          ? "Nothing of its SQL and masking was kept (one transaction, rolled back). "
          : "";
  const lost = notRemade.objects.length ? `${notRemadeSentence(notRemade)} ` : "";
  return (
    `${work}${lost}${jobs}The fork is recorded and its connection strings are not published. ` +
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
