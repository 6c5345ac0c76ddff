// What a migration does to a database, watched from a session of its own while it runs: every
// few milliseconds, each other client session's statement (pg_stat_activity) and the relation
// locks it holds or waits for (pg_locks). A statement's time is the server's own (query_start to
// the state_change that ended it); a lock is held from the statement it was first seen in to the
// end of its transaction (or its last sighting); a wait from pg_locks.waitstart. Nothing here
// needs more than the database's owner: no extension, no superuser setting.
import { z } from "zod";
import type { Connection } from "./connection";
import { CHUNK_OWNERS, NO_CHUNKS } from "./schema";

/** Modes that conflict with ROW EXCLUSIVE: while one is held, the table's INSERT, UPDATE and DELETE wait. */
export const BLOCKS_WRITES = new Set(["ShareLock", "ShareRowExclusiveLock", "ExclusiveLock", "AccessExclusiveLock"]);
/** PostgreSQL's relation lock modes, weakest first. */
export const MODES = [
  "AccessShareLock",
  "RowShareLock",
  "RowExclusiveLock",
  "ShareUpdateExclusiveLock",
  "ShareLock",
  "ShareRowExclusiveLock",
  "ExclusiveLock",
  "AccessExclusiveLock",
];

/** One look: each other client session of the database, with the relation locks it holds or waits for.
 *  pg_locks is read once (the locks CTE), not once per session: each read is a new view of the lock
 *  table, and a per-session read made after pg_stat_activity's view could miss the locks of a statement
 *  that had ended in between while still showing it active. A chunk's lock is its hypertable's;
 *  TimescaleDB's own catalog (read and written by its functions) is left out. */
const SAMPLE = `locks AS MATERIALIZED (
  SELECT l.pid, json_agg(json_build_object('relation', coalesce(h.relation, format('%I.%I', n.nspname, c.relname)), 'oid', c.oid::int,
                                           'mode', l.mode, 'granted', l.granted,
                                           'waitstart', (extract(epoch FROM l.waitstart) * 1000)::float8)) AS locks
    FROM pg_catalog.pg_locks l
    JOIN pg_catalog.pg_class c ON c.oid = l.relation
    JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
    LEFT JOIN chunks h ON h.chunk = c.oid
   WHERE l.locktype = 'relation' AND l.database = (SELECT oid FROM pg_catalog.pg_database WHERE datname = current_database())
     AND l.pid <> pg_catalog.pg_backend_pid()
     AND (h.chunk IS NOT NULL OR (n.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast') AND n.nspname NOT LIKE 'pg\\_%'
          -- TimescaleDB's own schemas by what they are (the extension's), not by a name a migration can take too
          AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_depend d WHERE d.classid = 'pg_catalog.pg_namespace'::pg_catalog.regclass
                             AND d.objid = n.oid AND d.deptype = 'e')))
   GROUP BY l.pid)
SELECT a.pid, a.query, a.state,
       (extract(epoch FROM a.query_start) * 1000)::float8 AS query_start,
       (extract(epoch FROM a.state_change) * 1000)::float8 AS state_change,
       (extract(epoch FROM a.xact_start) * 1000)::float8 AS xact_start,
       (extract(epoch FROM clock_timestamp()) * 1000)::float8 AS now,
       coalesce(k.locks, '[]') AS locks
  FROM pg_catalog.pg_stat_activity a LEFT JOIN locks k ON k.pid = a.pid
 WHERE a.datname = current_database() AND a.pid <> pg_catalog.pg_backend_pid()
   -- a client's session, or one whose activity (backend_type too) the watcher may not read: a login role's (usesysid)
   AND (a.backend_type = 'client backend' OR (a.backend_type IS NULL AND a.usesysid IS NOT NULL))`;

const Lock = z.object({
  relation: z.string(),
  oid: z.number().optional(),
  mode: z.string(),
  granted: z.boolean(),
  waitstart: z.number().nullable(),
});
const Backend = z.object({
  pid: z.number(),
  query: z.string().nullable(),
  state: z.string().nullable(),
  query_start: z.number().nullable(),
  state_change: z.number().nullable(),
  xact_start: z.number().nullable(),
  now: z.number(),
  locks: z.array(Lock),
});
type Backend = z.infer<typeof Backend>;

/** The text of a statement the watcher may not read. */
export const HIDDEN = "(a session of a role whose statements the watcher may not read)";

/** One relation's lock as a statement held it: its strongest mode, from when to when (ms since the epoch, the server's clock). */
export interface HeldLock {
  relation: string;
  /** The relation's oid (its name may have changed since the database was read). */
  oid?: number | undefined;
  mode: string;
  from: number;
  until: number;
}

/** A wait for a lock another session held. */
export interface LockWait {
  relation: string;
  mode: string;
  ms: number;
}

/** A statement as the watcher saw it. */
export interface Statement {
  pid: number;
  text: string;
  started: number;
  /** When it ended (the server's state_change); undefined if it was still running when the watch stopped. */
  ended?: number;
  /** It ended its transaction aborted: it failed. */
  failed: boolean;
  held: HeldLock[];
  waited: LockWait[];
}

/** Watches until stop() is called; then returns what it saw, statements in the order they started. */
export class Watcher {
  private readonly statements = new Map<string, Statement>();
  /** The statement each session is in (its key), and the transaction it is part of. */
  private readonly current = new Map<number, { key: string; xact: number | null }>();
  /** Locks held per session: relation → lock (attributed to the statement first seen holding it). */
  private readonly locks = new Map<number, Map<string, { lock: HeldLock; statement: string }>>();
  private readonly waits = new Map<string, { wait: LockWait; statement: string; since: number }>();
  /** Sessions whose activity cannot be read, since when they were seen holding a lock. */
  private readonly hidden = new Map<number, number>();
  private stopping = false;
  private loop: Promise<void> | undefined;
  samples = 0;

  constructor(
    private readonly db: Connection,
    private readonly intervalMs: number,
  ) {}

  async start(): Promise<void> {
    const timescaledb = (
      await this.db.query<{ n: number }>("SELECT count(*)::int AS n FROM pg_catalog.pg_extension WHERE extname = 'timescaledb'")
    )[0]?.n;
    await this.db.query(`PREPARE tigercloud_sample AS WITH chunks AS MATERIALIZED (${timescaledb ? CHUNK_OWNERS : NO_CHUNKS}), ${SAMPLE}`);
    await this.sample();
    // A look every interval from the last one's start, not from its end: a look's own time (a few ms,
    // more on a busy machine) does not widen the gaps a short statement can fall into.
    this.loop = (async () => {
      let next = Date.now();
      while (!this.stopping) {
        next = Math.max(next + this.intervalMs, Date.now());
        await new Promise((r) => setTimeout(r, next - Date.now()));
        if (!this.stopping) await this.sample();
      }
    })();
  }

  /** One last look, then what was seen. */
  async stop(): Promise<Statement[]> {
    this.stopping = true;
    await this.loop;
    await this.sample();
    for (const pid of [...this.locks.keys()]) this.release(pid, Date.now());
    return [...this.statements.values()].sort((a, b) => a.started - b.started || a.pid - b.pid);
  }

  private async sample(): Promise<void> {
    const rows = z.array(Backend).parse(await this.db.query("EXECUTE tigercloud_sample"));
    this.samples++;
    const seen = new Set<number>();
    for (const b of rows) {
      seen.add(b.pid);
      this.observe(b);
    }
    // A session gone: its transaction ended, its locks with it.
    for (const pid of [...this.current.keys()].filter((p) => !seen.has(p))) {
      const at = rows[0]?.now ?? Date.now();
      const s = this.statements.get(this.current.get(pid)?.key ?? "");
      if (s && s.ended === undefined) s.ended = at;
      this.release(pid, at);
      this.current.delete(pid);
    }
  }

  private observe(seen: Backend): void {
    let b = seen;
    // A session of a role whose activity the watcher may not read (another login role): its statement,
    // state and times are NULL, its locks are not. Watched as one statement, from its first sighting holding one.
    if (b.query_start === null && b.state === null && (b.locks.some((l) => BLOCKS_WRITES.has(l.mode)) || this.hidden.has(b.pid))) {
      const since = this.hidden.get(b.pid) ?? b.now;
      this.hidden.set(b.pid, since);
      b = { ...b, query: HIDDEN, state: "active", query_start: since, xact_start: since };
    }
    if (b.query_start === null || !b.query) return;
    const key = `${b.pid}@${b.query_start}`;
    let s = this.statements.get(key);
    if (!s) {
      // Its session's previous statement ended when this one started, at the latest.
      const before = this.current.get(b.pid);
      const previous = before && this.statements.get(before.key);
      if (previous && previous.ended === undefined) previous.ended = b.query_start;
      if (before && before.xact !== b.xact_start) this.release(b.pid, b.query_start);
      s = { pid: b.pid, text: b.query, started: b.query_start, failed: false, held: [], waited: [] };
      this.statements.set(key, s);
    }
    this.current.set(b.pid, { key, xact: b.xact_start });
    const active = b.state === "active";
    if (!active && s.ended === undefined) s.ended = b.state_change ?? b.now;
    if (b.state === "idle in transaction (aborted)") s.failed = true;
    // Out of its transaction: every lock it held is released.
    if (!active && b.xact_start === null) this.release(b.pid, b.state_change ?? b.now);
    const held = this.locks.get(b.pid) ?? new Map<string, { lock: HeldLock; statement: string }>();
    this.locks.set(b.pid, held);
    const stillWaiting = new Set<string>();
    for (const l of b.locks) {
      if (!l.granted) {
        const id = `${key}|${l.relation}|${l.mode}`;
        stillWaiting.add(id);
        const since = l.waitstart ?? b.now;
        const w = this.waits.get(id) ?? { wait: { relation: l.relation, mode: l.mode, ms: 0 }, statement: key, since };
        w.wait.ms = Math.max(0, b.now - w.since);
        if (!this.waits.has(id)) {
          this.waits.set(id, w);
          s.waited.push(w.wait);
        }
        continue;
      }
      const known = held.get(l.relation);
      if (!known) {
        const lock = { relation: l.relation, oid: l.oid, mode: l.mode, from: s.started, until: b.now };
        held.set(l.relation, { lock, statement: key });
        s.held.push(lock);
      } else {
        known.lock.until = b.now;
        if (MODES.indexOf(l.mode) > MODES.indexOf(known.lock.mode)) known.lock.mode = l.mode;
      }
    }
    // A lock no longer listed was released (a subtransaction's, or the transaction ended between samples).
    for (const relation of [...held.keys()]) if (!b.locks.some((l) => l.granted && l.relation === relation)) held.delete(relation);
    for (const id of [...this.waits.keys()].filter((w) => w.startsWith(`${key}|`) && !stillWaiting.has(w))) this.waits.delete(id);
  }

  /** The session's transaction ended at `at`: its locks were held until then. */
  private release(pid: number, at: number): void {
    for (const h of this.locks.get(pid)?.values() ?? []) h.lock.until = Math.max(h.lock.until, at);
    this.locks.delete(pid);
  }
}
