// The PostgreSQL servers behind the services (databases.ts decides what each holds): Debian's
// PostgreSQL, run as the `postgres` user when we are root, in one temporary directory with a
// cluster made once per machine and copied per service (cluster()), TLS with a self-signed certificate,
// TimescaleDB loaded where it is installed (scripts/ensure-timescaledb builds it). A
// fork's server is a copy of its parent's (pg_basebackup of a running server, a file copy of a
// stopped one). Servers and their directory go when the simulator stops, when its process exits
// or is killed by a signal, and, after a kill -9, by a watchdog process, or failing that by the
// sweep the next simulator makes of leftovers.
import { type ChildProcess, execFileSync, spawn } from "child_process";
import * as crypto from "crypto";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { freeStablePort } from "./ports";
import { selfSignedCertificate } from "./tls";

/** Temporary directories carry this in their name, with the owning process's ID: the sweep finds them. */
const MARKER = "tigercloud-sim-";

export interface Postgres {
  bin: string;
  /** Set when we are root: the servers run as this user. */
  user?: { uid: number; gid: number };
  /** TimescaleDB's version when its library is installed for this server (scripts/ensure-timescaledb), loaded by every server. */
  timescaledb?: string;
}

/** One service's PostgreSQL server: its data, its port, its process. */
export interface PostgresServer {
  readonly id: string;
  dataDir?: string;
  serverPort?: number;
  server?: ChildProcess | undefined;
  backendUp: boolean;
  /** Why the server could not be made, if it could not. */
  failure?: string;
}

/** The newest Debian/Ubuntu PostgreSQL, or initdb on PATH; and the user to run it as. A string says why not. */
export function findPostgres(): Postgres | string {
  const debian = "/usr/lib/postgresql";
  const versions = fs.existsSync(debian)
    ? fs
        .readdirSync(debian)
        .filter((v) => fs.existsSync(path.join(debian, v, "bin", "initdb")))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  let bin = versions[0] ? path.join(debian, versions[0], "bin") : undefined;
  if (!bin) {
    try {
      bin = path.dirname(execFileSync("sh", ["-c", "command -v initdb"], { encoding: "utf8" }).trim());
    } catch {
      return "no PostgreSQL server found (apt-get install postgresql); the simulator's databases are stand-ins that accept a login and answer SELECT 1";
    }
  }
  const timescaledb = timescaledbIn(bin);
  if (process.getuid?.() !== 0) return { bin, ...(timescaledb ? { timescaledb } : {}) };
  try {
    const id = (flag: string) => Number(execFileSync("id", [flag, "postgres"], { encoding: "utf8" }).trim());
    return { bin, user: { uid: id("-u"), gid: id("-g") }, ...(timescaledb ? { timescaledb } : {}) };
  } catch {
    return "PostgreSQL refuses to run as root and there is no `postgres` user; the simulator's databases are stand-ins";
  }
}

/** The version of TimescaleDB installed for the server in `bin` (its library and its extension script), if any. */
function timescaledbIn(bin: string): string | undefined {
  try {
    const dir = (flag: string) => execFileSync(path.join(bin, "pg_config"), [flag], { encoding: "utf8" }).trim();
    const control = fs.readFileSync(path.join(dir("--sharedir"), "extension", "timescaledb.control"), "utf8");
    const version = /default_version\s*=\s*'([^']+)'/.exec(control)?.[1];
    return version && fs.existsSync(path.join(dir("--pkglibdir"), `timescaledb-${version}.so`)) ? version : undefined;
  } catch {
    return undefined;
  }
}

/** A cluster made once per machine and copied for each server that starts from it: `statements` run as the superuser, per database. */
export interface ClusterRecipe {
  name: string;
  /** In order: each the database it runs in and its statements (psql runs each on its own: no transaction around them). */
  steps: { database: string; statements: string[] }[];
}

export class PostgresServers {
  private root = "";
  private readonly clusters = new Map<string, Promise<string>>();
  private watchdog: ChildProcess | undefined;
  /** Servers started and not stopped since: what an exit hook must stop. */
  private readonly running = new Set<PostgresServer>();

  constructor(private readonly pg: Postgres) {}

  /** The temporary directory, a certificate, and the watchdog. */
  async prepare(): Promise<void> {
    this.root = fs.mkdtempSync(path.join(os.tmpdir(), `${MARKER}${process.pid}-`));
    LIVE.add(this);
    // Hooked once a simulator runs, not when the module loads: importing it changes nothing.
    hookExit();
    this.startWatchdog();
    this.own(this.root);
    const [key, cert] = selfSignedCertificate();
    fs.writeFileSync(path.join(this.root, "server.key"), key, { mode: 0o600 });
    fs.writeFileSync(path.join(this.root, "server.crt"), cert);
    this.own(path.join(this.root, "server.key"));
    this.own(path.join(this.root, "server.crt"));
  }

  /** What the servers run: PostgreSQL's version, and TimescaleDB's where it is loaded. */
  get runs(): { timescaledb: string | undefined } {
    return { timescaledb: this.pg.timescaledb };
  }

  /**
   * The cluster `recipe` makes, from initdb: made once per machine and day (its data is dated from
   * now()) and kept in the temporary directory, so that a simulator's start copies it instead of
   * loading it again. Made by one simulator at a time; another that made it too throws its copy away.
   */
  async cluster(recipe: ClusterRecipe): Promise<string> {
    let made = this.clusters.get(recipe.name);
    if (!made) {
      made = this.makeCluster(recipe);
      this.clusters.set(recipe.name, made);
    }
    return made;
  }

  private async makeCluster(recipe: ClusterRecipe): Promise<string> {
    const key = crypto
      .createHash("sha256")
      .update(JSON.stringify([recipe, this.pg.bin, this.pg.timescaledb ?? "", new Date().toISOString().slice(0, 10), CLUSTER_FORMAT]))
      .digest("hex")
      .slice(0, 16);
    const cache = clusterCache(this.pg);
    const done = path.join(cache, `${recipe.name}-${key}`);
    if (fs.existsSync(path.join(done, "PG_VERSION"))) return done;
    const building: PostgresServer = {
      id: `${recipe.name}-build`,
      backendUp: false,
      dataDir: path.join(this.root, `${recipe.name}-build`),
    };
    await this.run("initdb", [
      "-D",
      building.dataDir as string,
      "-U",
      "postgres",
      "-E",
      "UTF8",
      "--auth-local=trust",
      "--no-sync",
      "--no-instructions",
    ]);
    // Over TCP only TLS logins with a password, as in production; the socket is ours, for set-up.
    fs.writeFileSync(
      path.join(building.dataDir as string, "pg_hba.conf"),
      "local all all trust\nlocal replication all trust\nhostssl all all 127.0.0.1/32 scram-sha-256\n",
    );
    await this.start(building);
    try {
      for (const step of recipe.steps) await this.psql(building, step.database, step.statements);
    } finally {
      await this.stop(building);
    }
    const staged = path.join(cache, `.${recipe.name}-${key}-${process.pid}`);
    fs.rmSync(staged, { recursive: true, force: true });
    fs.renameSync(building.dataDir as string, staged);
    try {
      fs.renameSync(staged, done);
    } catch {
      fs.rmSync(staged, { recursive: true, force: true }); // another simulator made it first
    }
    // Yesterday's clusters (and any of an older recipe) go.
    for (const old of fs.readdirSync(cache))
      if (old.startsWith(`${recipe.name}-`) && old !== path.basename(done))
        fs.rmSync(path.join(cache, old), { recursive: true, force: true });
    return done;
  }

  /** The temporary directory holding every server's data. */
  get directory(): string {
    return this.root;
  }

  /** A new server from a cluster (cluster()), started. */
  async fromCluster(s: PostgresServer, cluster: string): Promise<void> {
    s.dataDir = path.join(this.root, s.id);
    await this.run("cp", ["-a", cluster, s.dataDir], true);
    await this.start(s);
  }

  /** The parent's data as it is now: a base backup of a running server, a file copy of a stopped one. */
  async copy(parent: PostgresServer, child: PostgresServer): Promise<void> {
    if (parent.failure || !parent.dataDir) throw new Error(`the parent ${parent.id} has no database to copy`);
    child.dataDir = path.join(this.root, child.id);
    if (parent.backendUp) {
      await this.run("pg_basebackup", [
        "-h",
        this.root,
        "-p",
        String(parent.serverPort),
        "-U",
        "postgres",
        "-D",
        child.dataDir,
        "-c",
        "fast",
        "-X",
        "stream",
        "--no-sync",
      ]);
    } else {
      await this.run("cp", ["-a", parent.dataDir, child.dataDir], true);
    }
  }

  async start(s: PostgresServer): Promise<void> {
    if (!s.dataDir || s.failure) return;
    s.serverPort = s.serverPort ?? (await freeStablePort());
    const pidFile = path.join(s.dataDir, "postmaster.pid");
    fs.rmSync(pidFile, { force: true });
    const log = fs.openSync(path.join(this.root, `${s.id}.log`), "a");
    const settings = {
      listen_addresses: "127.0.0.1",
      ssl: "on",
      ssl_cert_file: path.join(this.root, "server.crt"),
      ssl_key_file: path.join(this.root, "server.key"),
      // Throwaway data: no durability, little memory, no statement (and so no password) in the log.
      fsync: "off",
      synchronous_commit: "off",
      full_page_writes: "off",
      shared_buffers: "16MB",
      max_connections: "20",
      autovacuum: "off",
      log_min_error_statement: "panic",
      // A transaction prepared in production comes along in a fork, as on Tiger Cloud.
      max_prepared_transactions: "5",
      ...(this.pg.timescaledb
        ? {
            shared_preload_libraries: "timescaledb",
            "timescaledb.telemetry_level": "off",
            // Its scheduler and a few jobs at once: what the seeded policies need, no more.
            "timescaledb.max_background_workers": "4",
            max_worker_processes: "8",
          }
        : {}),
    };
    const args = ["-D", s.dataDir, "-p", String(s.serverPort), "-k", this.root];
    for (const [k, v] of Object.entries(settings)) args.push("-c", `${k}=${v}`);
    const server = spawn(path.join(this.pg.bin, "postgres"), args, {
      stdio: ["ignore", log, log],
      detached: true,
      cwd: this.root,
      // Its own home: libpq in the server (postgres_fdw) would read the caller's ~/.postgresql.
      env: { ...process.env, HOME: this.root },
      ...this.pg.user,
    });
    fs.closeSync(log);
    server.unref();
    s.server = server;
    this.running.add(s);
    const exited = new Promise<void>((resolve) => server.once("exit", () => resolve()));
    // Ready when postmaster.pid says so (what pg_ctl -w waits for), or failed when it exits first.
    const deadline = Date.now() + 30_000;
    let gone = false;
    void exited.then(() => (gone = true));
    for (;;) {
      const pidLines = fs.existsSync(pidFile) ? fs.readFileSync(pidFile, "utf8").split("\n") : [];
      if (pidLines[7]?.trim() === "ready") break;
      if (gone || Date.now() > deadline) {
        const tail = fs
          .readFileSync(path.join(this.root, `${s.id}.log`), "utf8")
          .trim()
          .split("\n")
          .slice(-2)
          .join(" / ");
        throw new Error(`PostgreSQL for ${s.id} did not start: ${tail}`);
      }
      await sleep(20);
    }
    s.backendUp = true;
    void exited.then(() => {
      s.backendUp = false;
    });
  }

  /** A fast shutdown; an immediate one if it takes more than 10 s. */
  async stop(s: PostgresServer): Promise<void> {
    const server = s.server;
    s.server = undefined;
    this.running.delete(s);
    if (!server?.pid || server.exitCode !== null || server.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => server.once("exit", () => resolve()));
    killQuietly(server.pid, "SIGINT");
    const late = setTimeout(() => killQuietly(server.pid as number, "SIGQUIT"), 10_000);
    await exited;
    clearTimeout(late);
    s.backendUp = false;
  }

  /** The server's data, gone (a deleted service). */
  removeData(s: PostgresServer): void {
    if (s.dataDir) fs.rmSync(s.dataDir, { recursive: true, force: true });
  }

  /** Runs SQL as the superuser over the server's socket; the output. */
  psql(s: PostgresServer, database: string, statements: string[], extra: string[] = []): Promise<string> {
    const args = [
      "-X",
      "-q",
      "-v",
      "ON_ERROR_STOP=1",
      "-h",
      this.root,
      "-p",
      String(s.serverPort),
      "-U",
      "postgres",
      "-d",
      database,
      ...extra,
    ];
    // Statements on stdin, not the command line, where `ps` would show a password.
    return this.run("psql", args, false, statements.join("\n"));
  }

  /** Stops the servers still running, the watchdog, and removes the directory. */
  async close(): Promise<void> {
    await Promise.all([...this.running].map((s) => this.stop(s)));
    if (this.watchdog?.pid) killQuietly(this.watchdog.pid, "SIGKILL");
    if (this.root) fs.rmSync(this.root, { recursive: true, force: true });
    LIVE.delete(this);
  }

  /** At exit, without waiting: every server told to quit at once, the directory removed. */
  closeNow(): void {
    for (const s of this.running) if (s.server?.pid) killQuietly(s.server.pid, "SIGQUIT");
    if (this.watchdog?.pid) killQuietly(this.watchdog.pid, "SIGKILL");
    if (this.root) removeWhileServersExit(this.root);
    LIVE.delete(this);
  }

  /** Runs a PostgreSQL program (or, with `system`, a system one) as the servers' user. */
  private run(program: string, args: string[], system = false, input?: string): Promise<string> {
    return new Promise((resolve, reject) => {
      const child = spawn(system ? program : path.join(this.pg.bin, program), args, {
        cwd: this.root || os.tmpdir(),
        stdio: ["pipe", "pipe", "pipe"],
        ...(program === "psql" ? {} : this.pg.user),
      });
      let out = "";
      let err = "";
      child.stdout.on("data", (d: Buffer) => (out += d.toString()));
      child.stderr.on("data", (d: Buffer) => (err += d.toString()));
      child.on("error", reject);
      child.on("close", (code) => (code === 0 ? resolve(out) : reject(new Error(`${program} failed (${code}): ${err.trim()}`))));
      child.stdin.end(input ?? "");
    });
  }

  private own(file: string): void {
    if (this.pg.user) fs.chownSync(file, this.pg.user.uid, this.pg.user.gid);
  }

  /** A watchdog that outlives a kill -9 of this process: it then stops the servers and removes the directory. */
  private startWatchdog(): void {
    const script = [
      'while kill -0 "$OWNER" 2>/dev/null; do sleep 1; done',
      'for f in "$ROOT"/*/postmaster.pid; do [ -f "$f" ] && kill -QUIT "$(head -n 1 "$f")" 2>/dev/null; done',
      'sleep 1; rm -rf "$ROOT"',
    ].join("\n");
    this.watchdog = spawn("sh", ["-c", script], {
      detached: true,
      stdio: "ignore",
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", OWNER: String(process.pid), ROOT: this.root },
    });
    this.watchdog.unref();
  }
}

/** Changes when what a cached cluster holds changes in a way its recipe does not say (the server's settings, say). */
const CLUSTER_FORMAT = 1;

/** Where made clusters are kept: a folder of the servers' user alone, in the temporary directory (not a link). */
function clusterCache(pg: Postgres): string {
  const owner = pg.user?.uid ?? process.getuid?.();
  const dir = path.join(os.tmpdir(), `tigercloud-sim-clusters-${owner ?? "user"}`);
  // Made whole beside it (mode 700, the servers' user's) and renamed into place, so that a suite starting at once never sees
  // it half made (another's mkdir before its chown); the one that comes second finds it there (or puts its own empty one over
  // the first's, still empty) and leaves it. Then checked by all.
  if (!fs.existsSync(dir)) {
    const made = fs.mkdtempSync(`${dir}.`);
    try {
      if (pg.user) fs.chownSync(made, pg.user.uid, pg.user.gid);
      fs.renameSync(made, dir);
    } catch (err) {
      if (!["EEXIST", "ENOTEMPTY"].includes((err as NodeJS.ErrnoException).code ?? "")) throw err;
    } finally {
      fs.rmSync(made, { recursive: true, force: true });
    }
  }
  const seen = fs.lstatSync(dir);
  if (!seen.isDirectory() || (owner !== undefined && seen.uid !== owner) || (seen.mode & 0o077) !== 0)
    throw new Error(`${dir} is not a folder of the PostgreSQL servers' user alone (mode 700): remove it`);
  return dir;
}

// ---- never leaving a server behind ---------------------------------------------------------------

const LIVE = new Set<PostgresServers>();
let exitHooked = false;

/** On exit and on SIGINT/SIGTERM/SIGHUP, every live simulator's servers are stopped and directories removed. */
function hookExit(): void {
  if (exitHooked) return;
  exitHooked = true;
  process.on("exit", () => {
    for (const servers of [...LIVE]) servers.closeNow();
  });
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
    const onSignal = () => {
      for (const servers of [...LIVE]) servers.closeNow();
      // Then what the signal would have done had we not listened: unless someone else handles it.
      process.removeListener(signal, onSignal);
      if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
    };
    process.on(signal, onSignal);
  }
}

/** Whether `pid` is a PostgreSQL server running on `dataDir` (Linux /proc; false where it cannot be told). */
function isServerOf(pid: number, dataDir: string): boolean {
  try {
    const argv = fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
    return argv.some((a) => a.endsWith("postgres")) && argv.includes(dataDir);
  } catch {
    return false;
  }
}

/** Directories of simulators whose process is gone (a kill -9 that the watchdog missed): stopped and removed. */
export function sweepLeftovers(): void {
  const tmp = os.tmpdir();
  for (const name of fs.readdirSync(tmp)) {
    const owner = new RegExp(`^${MARKER}(\\d+)-`).exec(name)?.[1];
    if (!owner || isAlive(Number(owner))) continue;
    const dir = path.join(tmp, name);
    try {
      for (const sub of fs.readdirSync(dir)) {
        const pidFile = path.join(dir, sub, "postmaster.pid");
        if (!fs.existsSync(pidFile)) continue;
        // Only the server that directory ran: after a reboot, its recorded PID may be anyone's.
        const pid = Number(fs.readFileSync(pidFile, "utf8").split("\n")[0]);
        if (isServerOf(pid, path.join(dir, sub))) killQuietly(pid, "SIGQUIT");
      }
      fs.rmSync(dir, { recursive: true, force: true });
    } catch {
      // Another simulator sweeping at the same moment: whichever gets there first.
    }
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * Removes `dir` whose servers were just sent SIGQUIT, synchronously (this runs in exit and signal
 * hooks). A server still exiting writes into its data directory, and rmSync then
 * returns with files left behind (seen with Node.js 26), so the removal is repeated until the folder
 * is gone (2 s at most).
 */
function removeWhileServersExit(dir: string): void {
  const until = Date.now() + 2000;
  for (;;) {
    fs.rmSync(dir, { recursive: true, force: true });
    if (!fs.existsSync(dir) || Date.now() > until) return;
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20);
  }
}

function killQuietly(pid: number, signal: NodeJS.Signals): void {
  try {
    if (pid > 0) process.kill(pid, signal);
  } catch {
    // already gone
  }
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
