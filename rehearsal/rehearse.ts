// A migration rehearsed: the database read, the command run with DATABASE_URL while a session of
// our own watches it (watch.ts), the database read again (schema.ts), then what happened, per
// statement, judged by the rules a reviewer acts on. Watches the database, not the tool: any
// migration tool, any language.
import { spawn } from "child_process";
import { connect } from "./connection";
import { type ChunkState, type Counter, type Rewrite, type SchemaChange, rewrites, rowsChanged, schemaDiff, snapshot } from "./schema";
import { BLOCKS_WRITES, type Statement, Watcher } from "./watch";

export interface RehearsalRules {
  /** A lock that stops production's writes, held longer than this, is flagged. */
  lockMs: number;
  /** A rewrite (or index build) of a relation larger than this is flagged. */
  rewriteBytes: number;
  /** How often the watching session looks. */
  intervalMs: number;
  /** The environment the command runs with (DATABASE_URL added); default this process's. */
  env?: NodeJS.ProcessEnv;
}

export interface ReportedStatement {
  /** Its text, whitespace collapsed, every quoted literal replaced by '…', shortened. */
  text: string;
  ms: number;
  failed: boolean;
  /** Blamed for the failure as the last statement seen, though not seen failing: a shorter one after it may have failed. */
  orNext?: true;
  locks: { relation: string; mode: string; ms: number; blocksWrites: boolean }[];
  waited: { relation: string; mode: string; ms: number }[];
  rewrote: Rewrite[];
  flags: string[];
}

export interface Rehearsal {
  /** The command, every quoted literal replaced by '…'. */
  command: string;
  exitCode: number;
  ms: number;
  /** The tail of what the command printed (its error, where it failed). */
  output: string;
  statements: ReportedStatement[];
  /** Rewrites and builds no statement seen could be tied to (a statement shorter than a look). */
  otherRewrites: Rewrite[];
  rows: Counter[];
  chunks: { hypertable: string; before: ChunkState | undefined; after: ChunkState | undefined }[];
  schema: SchemaChange[];
  /** Continuous aggregates whose refresh failed after the migration, and why. */
  aggregatesFailing: { view: string; error: string }[];
  flags: string[];
  samples: number;
}

/** Comments and quoted identifiers (kept: an apostrophe in them opens no literal), then literals:
 *  E'' strings with their backslash escapes, other quoted strings, dollar-quoted ones (a tag may hold
 *  digits), each also when cut short (pg_stat_activity keeps a statement's first 1,024 bytes). */
const STRINGS =
  /(?<![\w$])[Ee]'(?:[^'\\]|''|\\[\s\S])*(?:'|$)|(?<![\w$])(?:[BbXxNn]|[Uu]&)?'(?:[^']|'')*(?:'|$)|(?<![\w$])\$([A-Za-z_\u0080-\uffff][\w\u0080-\uffff]*)?\$[\s\S]*?(?:\$\1\$|$)/
    .source;
const TOKENS = new RegExp(`(--[^\\n]*|/\\*[\\s\\S]*?(?:\\*/|$)|"(?:[^"]|"")*(?:"|$))|${STRINGS.replace("\\$\\1\\$", "\\$\\2\\$")}`, "g");

/** Every quoted literal (single- or dollar-quoted) of a statement replaced by '…'. */
export const withoutLiterals = (text: string) => text.replace(TOKENS, (token, kept: string | undefined) => kept ?? "'…'");
/** The same in a shell command (psql -c "…"): its double quotes and dashes are the shell's, not SQL's. */
const commandWithoutLiterals = (text: string) => text.replace(new RegExp(STRINGS, "g"), "'…'");

/** Whether a statement's text, its literals left out, names `relation` ("schema.name", as format('%I.%I') gives it) by its own name. */
function namesRelation(text: string, relation: string): boolean {
  const own = relation
    .slice(relation.lastIndexOf(".") + 1)
    .replace(/^"|"$/g, "")
    .replace(/""/g, '"');
  const escaped = own.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  return new RegExp(`(^|[^\\w$])"?${escaped}"?($|[^\\w$])`, "i").test(withoutLiterals(text));
}

/** A statement's text as a reviewer may see it: no literal of the data, one line, at most 160 characters. */
export function shownText(text: string): string {
  const flat = withoutLiterals(text).replace(/\s+/g, " ").trim();
  return flat.length > 160 ? `${flat.slice(0, 159)}…` : flat;
}

/** The migration failed: its command exited non-zero, or a statement ended its transaction aborted (rolled back) though the command exited 0. */
export const migrationFailed = (r: Pick<Rehearsal, "exitCode" | "statements">) => r.exitCode !== 0 || r.statements.some((s) => s.failed);

const seconds = (ms: number) => `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
export const megabytes = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(bytes < 10 * 1024 * 1024 ? 2 : 0)} MB`;

export async function rehearse(
  url: string,
  command: string,
  rules: RehearsalRules,
  print: (line: string) => void = () => undefined,
): Promise<Rehearsal> {
  const db = await connect(url, "tigercloud-rehearsal");
  try {
    const before = await snapshot(db);
    const watcher = new Watcher(db, rules.intervalMs);
    await watcher.start();
    const started = Date.now();
    const ran = await runCommand(command, url, rules.env ?? process.env, print);
    const ms = Date.now() - started;
    // Watched until the command's sessions are gone: a session it left running (in the background) is still its.
    await settled(db);
    const seen = await watcher.stop();
    const after = await snapshot(db);
    const aggregatesFailing = after.timescaledb && ran.code === 0 ? await refreshAll(db) : [];
    return judge({ command, ran, ms, seen, before, after, aggregatesFailing, rules, samples: watcher.samples });
  } finally {
    await db.end();
  }
}

/** The URL and its password, as a command may print them (a tool saying where it connects). */
function redactorOf(url: string, withheld: string[] = []): (text: string) => string {
  const password = url.startsWith("postgres") ? new URL(url).password : "";
  const secrets = [url, password, password && decodeURIComponent(password)].filter((x) => x.length >= 4);
  // What this process holds but did not give the command (the action's inputs, its secrets): the command
  // can still read it (/proc/<its parent>/environ), so it is redacted too, the longest first.
  secrets.push(...withheld.filter((x) => x.length >= 8).sort((a, b) => b.length - a.length));
  return (text) => secrets.reduce((t, x) => t.split(x).join("***"), text);
}

/**
 * The command through the shell, DATABASE_URL set; its output passed on line by line as it comes,
 * its tail kept, the URL and its password redacted from both before anything is cut.
 */
function runCommand(
  command: string,
  url: string,
  env: NodeJS.ProcessEnv,
  print: (line: string) => void,
): Promise<{ code: number; tail: string }> {
  const redact = redactorOf(
    url,
    Object.entries(process.env)
      .filter(([k, v]) => v !== undefined && env[k] !== v)
      .map(([, v]) => v as string),
  );
  return new Promise((resolve) => {
    // Its own process group: what it leaves running in the background is waited for (and watched) too.
    const child = spawn("sh", ["-c", command], { env: { ...env, DATABASE_URL: url }, stdio: ["ignore", "pipe", "pipe"], detached: true });
    let tail = "";
    const keep = (line: string) => {
      const said = redact(line);
      if (!said) return;
      print(said);
      tail = `${tail}${said}\n`.slice(-4000);
    };
    // Whole lines only, each stream's own: a password split across two reads is still one line's.
    const lines = (stream: NodeJS.ReadableStream) => {
      let partial = "";
      stream.on("data", (chunk: Buffer) => {
        const parts = (partial + chunk.toString("utf8")).split("\n");
        partial = parts.pop() ?? "";
        parts.forEach(keep);
      });
      return () => keep(partial);
    };
    const flush = [lines(child.stdout), lines(child.stderr)];
    child.on("error", (err) => resolve({ code: 127, tail: redact(err.message) }));
    child.on("close", (code, signal) => {
      flush.forEach((f) => f());
      const alive = () => {
        try {
          process.kill(-(child.pid as number), 0);
          return true;
        } catch {
          return false;
        }
      };
      // Until its process group is gone (5 minutes at most).
      const done = Date.now() + 300_000;
      const wait = () =>
        child.pid && alive() && Date.now() < done ? setTimeout(wait, 50) : resolve({ code: code ?? (signal ? 128 : 1), tail });
      wait();
    });
  });
}

/** Until the command's sessions are gone (their row counters are written as they end). */
async function settled(db: Awaited<ReturnType<typeof connect>>): Promise<void> {
  for (let i = 0; i < 100; i++) {
    const [row] = await db.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM pg_catalog.pg_stat_activity WHERE datname = current_database() AND backend_type = 'client backend' AND pid <> pg_catalog.pg_backend_pid()",
    );
    if (!row?.n) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  await db.query("SELECT pg_catalog.pg_stat_clear_snapshot()");
}

/** Each continuous aggregate refreshed where the migration changed its data: one that fails no longer refreshes. */
async function refreshAll(db: Awaited<ReturnType<typeof connect>>): Promise<{ view: string; error: string }[]> {
  const views = await db.query<{ view: string }>(
    "SELECT format('%I.%I', view_schema, view_name) AS view FROM timescaledb_information.continuous_aggregates ORDER BY 1",
  );
  const failing: { view: string; error: string }[] = [];
  for (const { view } of views) {
    await db.query("SELECT pg_catalog.set_config('tigercloud.rehearsed', $1, false)", [view]);
    await db
      .query("CALL refresh_continuous_aggregate(pg_catalog.current_setting('tigercloud.rehearsed')::pg_catalog.regclass, NULL, NULL)")
      .catch((err: Error & { code?: string }) => failing.push({ view, error: `SQLSTATE ${err.code ?? "?"}: ${err.message}` }));
  }
  return failing;
}

interface Seen {
  command: string;
  ran: { code: number; tail: string };
  ms: number;
  seen: Statement[];
  before: Awaited<ReturnType<typeof snapshot>>;
  after: Awaited<ReturnType<typeof snapshot>>;
  aggregatesFailing: { view: string; error: string }[];
  rules: RehearsalRules;
  samples: number;
}

function judge(x: Seen): Rehearsal {
  // A copy's write counters are rarely production's (a fork's statistics start again; its own
  // scheduler's jobs write a few tables before the migration runs), so a table holding rows counts too:
  // counters alone once left a table production writes (customers) unflagged because a job had written another.
  const counted = new Set(x.before.counters.filter((c) => c.inserted + c.updated + c.deleted > 0).map((c) => c.table));
  const holding = new Set(x.before.files.filter((f) => f.kind !== "i" && f.bytes > 8192).map((f) => f.of));
  const directly = (relation: string) => counted.has(relation) || holding.has(relation);
  // A partitioned table is written where one of its partitions is: a lock on it alone (LOCK ONLY, DETACH) stops their writes through it.
  const partitions = new Map<string, string[]>();
  for (const f of x.before.files) if (f.root && f.root !== f.name) partitions.set(f.root, [...(partitions.get(f.root) ?? []), f.name]);
  const written = (relation: string) => directly(relation) || (partitions.get(relation) ?? []).some(directly);
  // By the relation's oid where known: a table renamed (or moved to another schema) before it was locked is still the one production writes.
  const writtenLock = (l: { relation: string; oid?: number | undefined }) => {
    const file = l.oid === undefined ? undefined : x.before.files.find((f) => f.oid === l.oid);
    return written(l.relation) || (file !== undefined && written(file.of));
  };
  const rewritten = rewrites(x.before, x.after);
  // Each rewrite or build is tied to one statement: first the earliest seen holding the relation itself (a
  // new index is locked by the statement that builds it, CONCURRENTLY too), else the earliest holding its
  // table as such a statement does: ACCESS EXCLUSIVE for a rewrite; SHARE, SHARE UPDATE EXCLUSIVE
  // (CONCURRENTLY) or ACCESS EXCLUSIVE for a build. By the table alone, an ALTER TABLE before a
  // CREATE INDEX CONCURRENTLY took the index as its own. A plain CREATE INDEX's lock on its new index is
  // not seen (the index is not committed yet): among those holding its table, the one naming it in its text
  // (outside literals), else the earliest; by the earliest alone, an ALTER TABLE took the next CREATE INDEX's.
  const owner = new Map<Rewrite, Statement>();
  for (const r of rewritten) {
    const holds = (s: Statement, relation: string, modes?: string[]) =>
      s.held.some((l) => l.relation === relation && (!modes || modes.includes(l.mode)));
    const asTable = r.kind === "rewrote" ? ["AccessExclusiveLock"] : ["ShareLock", "ShareUpdateExclusiveLock", "AccessExclusiveLock"];
    const byTable = x.seen.filter((s) => holds(s, r.of, asTable));
    const by =
      (r.relation !== r.of
        ? x.seen.find((s) => holds(s, r.relation, r.kind === "rewrote" ? ["AccessExclusiveLock"] : undefined))
        : undefined) ??
      (r.kind === "rewrote" ? undefined : byTable.find((s) => namesRelation(s.text, r.relation))) ??
      byTable[0];
    if (by) owner.set(r, by);
  }
  // The last statement seen is the failing one when the command failed and none ended its transaction aborted.
  const failedAt = x.ran.code !== 0 && !x.seen.some((s) => s.failed) ? x.seen[x.seen.length - 1] : undefined;
  const statements = x.seen.map((s): ReportedStatement => {
    const end = s.ended ?? s.started;
    const locks = s.held.map((l) => ({
      oid: l.oid,
      relation: l.relation,
      mode: l.mode,
      ms: Math.max(0, l.until - l.from),
      blocksWrites: BLOCKS_WRITES.has(l.mode),
    }));
    const rewrote = rewritten.filter((r) => owner.get(r) === s);
    const flags: string[] = [];
    for (const l of locks)
      if (l.blocksWrites && l.ms >= x.rules.lockMs && writtenLock(l))
        flags.push(
          `${l.mode.replace(/Lock$/, "")} on ${l.relation} for ${seconds(l.ms)}: production's writes to it would have waited that long`,
        );
    for (const r of rewrote) if (r.bytes >= x.rules.rewriteBytes) flags.push(`${r.kind} ${r.relation} (${megabytes(r.bytes)}, of ${r.of})`);
    const failed = s.failed || s === failedAt;
    const orNext = !s.failed && s === failedAt;
    if (failed)
      flags.push(
        orNext ? "failed, or a statement right after it too short to be seen (the last seen before the migration stopped)" : "failed",
      );
    return {
      text: shownText(s.text),
      ms: Math.max(0, end - s.started),
      failed,
      ...(orNext ? { orNext: true as const } : {}),
      locks: locks.map(({ oid: _oid, ...l }) => l),
      waited: s.waited,
      rewrote,
      flags,
    };
  });
  const otherRewrites = rewritten.filter((r) => !owner.has(r));
  const flags = statements.flatMap((s, i) => s.flags.map((f) => `statement ${i + 1}: ${f}`));
  for (const r of otherRewrites)
    if (r.bytes >= x.rules.rewriteBytes) flags.push(`${r.kind} ${r.relation} (${megabytes(r.bytes)}, of ${r.of})`);
  for (const a of x.aggregatesFailing) flags.push(`the continuous aggregate ${a.view} no longer refreshes: ${a.error}`);
  if (x.ran.code !== 0) flags.push(`the migration failed (exit ${x.ran.code})`);
  const hypertables = [...new Set([...x.before.chunks, ...x.after.chunks].map((c) => c.hypertable))].sort();
  const chunks = hypertables
    .map((h) => ({
      hypertable: h,
      before: x.before.chunks.find((c) => c.hypertable === h),
      after: x.after.chunks.find((c) => c.hypertable === h),
    }))
    .filter((c) => JSON.stringify({ ...c.before, hypertable: "" }) !== JSON.stringify({ ...c.after, hypertable: "" }));
  return {
    // The command as given can hold the migration's SQL (psql -c "…"): its literals are left out as the statements' are.
    command: commandWithoutLiterals(x.command),
    exitCode: x.ran.code,
    ms: x.ms,
    output: x.ran.code !== 0 || statements.some((s) => s.failed) ? x.ran.tail : "",
    statements,
    otherRewrites,
    rows: rowsChanged(x.before, x.after),
    chunks,
    schema: schemaDiff(x.before, x.after),
    aggregatesFailing: x.aggregatesFailing,
    flags,
    samples: x.samples,
  };
}
