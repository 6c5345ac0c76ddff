// The databases behind the simulator's services. Each service's endpoint (and its pooler's) is a
// listener of the simulator on a loopback port of its own. Behind it is either
//  - "postgres": a real PostgreSQL server per service (Debian's, run as the `postgres` user when we
//    are root), database `tsdb`, role `tsdbadmin` with the service's password, TLS with a
//    self-signed certificate, and the parent seeded with a table of sample rows. A fork's server
//    is a copy of its parent's taken when the fork is made (pg_basebackup; PITR copies the current
//    data too: the simulator cannot rewind). The listener passes bytes through to the server.
//  - "stand-in": no server; the listener speaks just enough of PostgreSQL's protocol (TLS, a
//    password login as tsdbadmin, `SELECT 1`) for a login probe. Used where PostgreSQL cannot be
//    had, and by the unit tests and the benchmark, which make many forks and need no data.
// A listener accepts logins only from `opensAt` on (READY plus the login lag, as in production),
// and not at all while its service is stopped. Servers and their temporary directories go when
// the simulator stops, when its process exits or is killed by a signal, and, after a kill -9, by a
// watchdog process, or failing that by the sweep the next simulator makes of leftovers.
import { type ChildProcess, execFileSync, spawn } from "child_process";
import * as crypto from "crypto";
import * as fs from "fs";
import * as net from "net";
import * as os from "os";
import * as path from "path";
import * as tls from "tls";

export type DatabaseMode = "postgres" | "stand-in";

/** What every service's database looks like, as in production: database tsdb, admin role tsdbadmin, TLS required. */
export const DATABASE = "tsdb";
export const ROLE = "tsdbadmin";
/** The seeded parent's table, and how many rows it holds. */
export const SAMPLE_TABLE = "conditions";
export const SAMPLE_ROWS = 1000;

/** Temporary directories carry this in their name, with the owning process's ID: the sweep finds them. */
const MARKER = "tigercloud-sim-";

export interface Endpoints {
  port: number;
  poolerPort: number;
}

interface DbService {
  id: string;
  password: string;
  listeners: net.Server[];
  ports: Endpoints;
  sockets: Set<net.Socket>;
  /** Logins are refused before this time (READY plus the login lag). */
  opensAt: number;
  /** Logins refused until allowLogins (a test's "login never works"). */
  held: boolean;
  stopped: boolean;
  /** Operations on the service's server, one after another. */
  work: Promise<void>;
  // postgres mode only
  dataDir?: string;
  serverPort?: number;
  server?: ChildProcess | undefined;
  backendUp: boolean;
  /** Why the server could not be made, if it could not. */
  failure?: string;
}

interface Postgres {
  bin: string;
  /** Set when we are root: the servers run as this user. */
  user?: { uid: number; gid: number };
}

export class Databases {
  private readonly services = new Map<string, DbService>();
  private root = "";
  private template = "";
  private watchdog: ChildProcess | undefined;
  private standInTls: Promise<tls.SecureContext> | undefined;
  /** Set by tests: the stand-in refuses every login with a message that quotes the password it got. */
  echoPasswordInErrors = false;

  private constructor(
    readonly kind: DatabaseMode,
    private readonly pg: Postgres | undefined,
    /** Why real servers were wanted but could not be had (one line), if so. */
    readonly note: string | undefined,
  ) {}

  /** Real servers when asked and possible; otherwise the stand-in, with a note saying why. */
  static async start(wanted: DatabaseMode): Promise<Databases> {
    sweepLeftovers();
    if (wanted === "stand-in") return new Databases("stand-in", undefined, undefined);
    const found = findPostgres();
    if (typeof found === "string") return new Databases("stand-in", undefined, found);
    const dbs = new Databases("postgres", found, undefined);
    try {
      await dbs.prepare();
    } catch (err) {
      await dbs.close();
      return new Databases("stand-in", undefined, `PostgreSQL could not be prepared: ${(err as Error).message.split("\n")[0]}`);
    }
    return dbs;
  }

  /** The temporary directory, a certificate, one initdb'd template cluster, and the watchdog. */
  private async prepare(): Promise<void> {
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
    this.template = path.join(this.root, "template");
    await this.run("initdb", ["-D", this.template, "-U", "postgres", "-E", "UTF8", "--auth-local=trust", "--no-sync", "--no-instructions"]);
    // Over TCP only TLS logins with a password, as in production; the socket is ours, for set-up.
    fs.writeFileSync(
      path.join(this.template, "pg_hba.conf"),
      "local all all trust\nlocal replication all trust\nhostssl all all 127.0.0.1/32 scram-sha-256\n",
    );
  }

  /** The temporary directory holding every server's data (empty for the stand-in). */
  get directory(): string {
    return this.root;
  }

  /** The service's password, as its role has it (tests). */
  password(serviceId: string): string | undefined {
    return this.services.get(serviceId)?.password;
  }

  /** A seeded service: its endpoints, and (postgres) its server with `tsdb` and the sample table. */
  /** A service's database, with the sample table unless `sample` is false (a service created empty). */
  async seed(serviceId: string, password: string, sample = true): Promise<Endpoints> {
    const s = await this.listen(serviceId, password, 0);
    if (this.pg) {
      await this.chain(s, async () => {
        s.dataDir = path.join(this.root, serviceId);
        await this.run("cp", ["-a", this.template, s.dataDir], true);
        await this.startPostgres(s);
        await this.psql(s, "postgres", [
          `CREATE ROLE ${ROLE} LOGIN PASSWORD ${literal(password)};`,
          `CREATE DATABASE ${DATABASE} OWNER ${ROLE};`,
        ]);
        if (sample)
          await this.psql(s, DATABASE, [
            `CREATE TABLE ${SAMPLE_TABLE} (time timestamptz NOT NULL, device text NOT NULL, temperature double precision);`,
            `INSERT INTO ${SAMPLE_TABLE} SELECT timestamptz '2026-01-01' + g * interval '1 minute', 'device-' || (g % 10), 20 + (g % 7) FROM generate_series(1, ${SAMPLE_ROWS}) g;`,
            `ALTER TABLE ${SAMPLE_TABLE} OWNER TO ${ROLE};`,
          ]);
      });
      if (s.failure) throw new Error(`seeding ${serviceId}'s database failed: ${s.failure}`);
    }
    return s.ports;
  }

  /**
   * A fork: its endpoints now; its server (a copy of the parent's data as it is now) made in the
   * background. Logins are accepted from `opensAt` on, once the server is up.
   */
  async fork(parentId: string, serviceId: string, password: string, opensAt: number): Promise<Endpoints> {
    const s = await this.listen(serviceId, password, opensAt);
    const parent = this.services.get(parentId);
    if (this.pg && parent) {
      // Queued behind the parent's own work, so the copy is of the parent as of this moment.
      const copied = this.chain(parent, () => this.copyData(parent, s));
      void this.chain(s, async () => {
        await copied;
        if (s.failure) return;
        await this.startPostgres(s);
        await this.psql(s, "postgres", [`ALTER ROLE ${ROLE} PASSWORD ${literal(password)};`]);
      });
    }
    return s.ports;
  }

  /** `updatePassword`: the role's new password, in the server itself (after any work queued on it). */
  async setPassword(serviceId: string, password: string): Promise<void> {
    const s = this.services.get(serviceId);
    if (!s) return;
    s.password = password;
    if (this.pg)
      await this.chain(s, async () => {
        await this.psql(s, "postgres", [`ALTER ROLE ${ROLE} PASSWORD ${literal(password)};`]);
      });
  }

  /** Resolves when every operation queued on the service's server so far has finished (tests). */
  async settled(serviceId: string): Promise<string | undefined> {
    const s = this.services.get(serviceId);
    await s?.work;
    return s?.failure;
  }

  /** `stop`: the listeners close (connections are refused) and the server stops; its data stays. */
  stopServer(serviceId: string): void {
    const s = this.services.get(serviceId);
    if (!s || s.stopped) return;
    s.stopped = true;
    for (const l of s.listeners) l.close();
    for (const socket of s.sockets) socket.destroy();
    if (this.pg) void this.chain(s, () => this.stopPostgres(s));
  }

  /** `DELETE`: the server stops and its data goes; the service is forgotten (a delete is final). */
  dropServer(serviceId: string): void {
    const s = this.services.get(serviceId);
    if (!s) return;
    this.stopServer(serviceId);
    this.services.delete(serviceId);
    void this.chain(s, async () => {
      if (s.dataDir) fs.rmSync(s.dataDir, { recursive: true, force: true });
    });
  }

  /** `start` (resume): the server starts again, and logins are accepted from `opensAt` on. */
  startServer(serviceId: string, opensAt: number): void {
    const s = this.services.get(serviceId);
    if (!s || !s.stopped) return;
    s.stopped = false;
    s.opensAt = opensAt;
    const ports = [s.ports.port, s.ports.poolerPort];
    s.listeners.forEach((l, i) => l.listen(ports[i], "127.0.0.1"));
    if (this.pg) void this.chain(s, () => this.startPostgres(s));
  }

  /** Logins are accepted from `at` on, if not earlier (a status forced to READY by a test). */
  opensBy(serviceId: string, at: number): void {
    const s = this.services.get(serviceId);
    if (s) s.opensAt = Math.min(s.opensAt, at);
  }

  /** Logins are refused until allowLogins (a fork whose login "never" works). */
  holdLogins(serviceId: string): void {
    const s = this.services.get(serviceId);
    if (s) s.held = true;
  }

  allowLogins(serviceId: string): void {
    const s = this.services.get(serviceId);
    if (s) s.held = false;
  }

  /** Whether a login would be let through now (the server up, the time come, not held or stopped). */
  acceptsLogins(serviceId: string): boolean {
    const s = this.services.get(serviceId);
    return !!s && !s.stopped && !s.held && Date.now() >= s.opensAt && (this.kind === "stand-in" || s.backendUp);
  }

  /** Runs SQL on the service's server as the superuser, over its socket; the output, unaligned (tests). */
  async query(serviceId: string, sql: string): Promise<string> {
    const s = this.services.get(serviceId);
    if (!this.pg || !s?.serverPort) throw new Error(`service ${serviceId} has no PostgreSQL server`);
    await s.work;
    return this.psql(s, DATABASE, [sql], ["-A", "-t"]);
  }

  /** Stops every server, closes every listener, removes every directory. */
  async close(): Promise<void> {
    for (const s of this.services.values()) {
      for (const l of s.listeners) l.close();
      for (const socket of s.sockets) socket.destroy();
    }
    await Promise.all([...this.services.values()].map((s) => s.work.then(() => this.stopPostgres(s))));
    this.services.clear();
    if (this.watchdog?.pid) killQuietly(this.watchdog.pid, "SIGKILL");
    if (this.root) fs.rmSync(this.root, { recursive: true, force: true });
    LIVE.delete(this);
  }

  /** At exit, without waiting: every server told to quit at once, the directory removed. */
  closeNow(): void {
    for (const s of this.services.values()) if (s.server?.pid) killQuietly(s.server.pid, "SIGQUIT");
    if (this.watchdog?.pid) killQuietly(this.watchdog.pid, "SIGKILL");
    if (this.root) removeWhileServersExit(this.root);
    LIVE.delete(this);
  }

  // ---- listeners ---------------------------------------------------------------------------

  private async listen(serviceId: string, password: string, opensAt: number): Promise<DbService> {
    const s: DbService = {
      id: serviceId,
      password,
      listeners: [],
      ports: { port: 0, poolerPort: 0 },
      sockets: new Set(),
      opensAt,
      held: false,
      stopped: false,
      work: Promise.resolve(),
      backendUp: false,
    };
    this.services.set(serviceId, s);
    const ports: number[] = [];
    for (let i = 0; i < 2; i++) {
      const listener = net.createServer((socket) => this.accept(s, socket));
      ports.push(await listenOnStablePort(listener));
      // A start that cannot listen again says so (logins would otherwise hang unexplained).
      listener.on("error", (err) => process.stderr.write(`[simulator] the endpoint of ${serviceId} cannot listen: ${err.message}\n`));
      s.listeners.push(listener);
    }
    s.ports = { port: ports[0] as number, poolerPort: ports[1] as number };
    return s;
  }

  private accept(s: DbService, socket: net.Socket): void {
    socket.on("error", () => undefined);
    // Not accepting logins yet (or held): the connection is closed at once, as by a server not up.
    if (!this.acceptsLogins(s.id)) {
      socket.destroy();
      return;
    }
    s.sockets.add(socket);
    socket.once("close", () => s.sockets.delete(socket));
    if (this.kind === "stand-in") {
      void this.standIn(s, socket);
      return;
    }
    const upstream = net.connect(s.serverPort as number, "127.0.0.1");
    upstream.on("error", () => socket.destroy());
    socket.once("close", () => upstream.destroy());
    upstream.once("close", () => socket.destroy());
    socket.pipe(upstream).pipe(socket);
  }

  // ---- PostgreSQL servers --------------------------------------------------------------------

  private chain(s: DbService, step: () => Promise<void>): Promise<void> {
    s.work = s.work.then(step).catch((err: unknown) => {
      s.failure = (err as Error).message;
      process.stderr.write(`[simulator] the database of ${s.id} failed: ${s.failure.split("\n")[0]}\n`);
    });
    return s.work;
  }

  /** The parent's data as it is now: a base backup of a running server, a file copy of a stopped one. */
  private async copyData(parent: DbService, child: DbService): Promise<void> {
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

  private async startPostgres(s: DbService): Promise<void> {
    if (!s.dataDir || s.failure) return;
    s.serverPort = s.serverPort ?? (await freePort());
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
    };
    const args = ["-D", s.dataDir, "-p", String(s.serverPort), "-k", this.root];
    for (const [k, v] of Object.entries(settings)) args.push("-c", `${k}=${v}`);
    const server = spawn(path.join(this.pg!.bin, "postgres"), args, {
      stdio: ["ignore", log, log],
      detached: true,
      cwd: this.root,
      ...this.pg!.user,
    });
    fs.closeSync(log);
    server.unref();
    s.server = server;
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
  private async stopPostgres(s: DbService): Promise<void> {
    const server = s.server;
    s.server = undefined;
    if (!server?.pid || server.exitCode !== null || server.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => server.once("exit", () => resolve()));
    killQuietly(server.pid, "SIGINT");
    const late = setTimeout(() => killQuietly(server.pid as number, "SIGQUIT"), 10_000);
    await exited;
    clearTimeout(late);
    s.backendUp = false;
  }

  private async psql(s: DbService, database: string, statements: string[], extra: string[] = []): Promise<string> {
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

  /** Runs a PostgreSQL program (or, with `system`, a system one) as the servers' user. */
  private run(program: string, args: string[], system = false, input?: string): Promise<string> {
    return new Promise((resolve, reject) => {
      const child = spawn(system ? program : path.join(this.pg!.bin, program), args, {
        cwd: this.root || os.tmpdir(),
        stdio: ["pipe", "pipe", "pipe"],
        ...(program === "psql" ? {} : this.pg?.user),
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
    if (this.pg?.user) fs.chownSync(file, this.pg.user.uid, this.pg.user.gid);
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

  // ---- the stand-in: just enough of PostgreSQL's protocol for a login probe ----------------

  private async standIn(s: DbService, raw: net.Socket): Promise<void> {
    let socket: net.Socket = raw;
    let messages = new MessageReader(socket, true);
    let startup = await messages.next();
    if (startup?.code === SSL_REQUEST) {
      messages.detach();
      raw.write("S");
      this.standInTls ??= Promise.resolve().then(() => {
        const [key, cert] = selfSignedCertificate();
        return tls.createSecureContext({ key, cert });
      });
      socket = new tls.TLSSocket(raw, { isServer: true, secureContext: await this.standInTls });
      socket.on("error", () => undefined);
      messages = new MessageReader(socket, true);
      startup = await messages.next();
    }
    if (!startup || startup.code !== PROTOCOL_3) return void socket.destroy();
    const params = startupParams(startup.body);
    const fatal = (code: string, message: string): void => void socket.end(errorResponse("FATAL", code, message));
    if (params.user !== ROLE) return fatal("28000", `role "${params.user ?? ""}" does not exist`);
    if (params.database !== DATABASE) return fatal("3D000", `database "${params.database ?? ""}" does not exist`);
    socket.write(message("R", int32(3))); // a cleartext password, please (inside TLS)
    const answer = await messages.next();
    const given = answer?.type === "p" ? answer.body.subarray(0, answer.body.indexOf(0)).toString("utf8") : "";
    if (this.echoPasswordInErrors) return fatal("28P01", `password authentication failed for user "${ROLE}" with password "${given}"`);
    if (given !== s.password) return fatal("28P01", `password authentication failed for user "${ROLE}"`);
    socket.write(
      Buffer.concat([
        message("R", int32(0)),
        message("S", cstrings("server_version", "15.0 (tigercloud simulator stand-in)")),
        message("S", cstrings("client_encoding", "UTF8")),
        message("K", Buffer.concat([int32(process.pid), int32(crypto.randomInt(2 ** 31))])),
        message("Z", Buffer.from("I")),
      ]),
    );
    for (;;) {
      const m = await messages.next();
      if (!m || m.type === "X") return void socket.end();
      const sql = m.type === "Q" ? m.body.subarray(0, m.body.indexOf(0)).toString("utf8") : "";
      if (/^\s*select\s+1\s*;?\s*$/i.test(sql)) {
        const field = Buffer.concat([cstrings("?column?"), int32(0), int16(0), int32(23), int16(4), int32(-1), int16(0)]);
        socket.write(
          Buffer.concat([
            message("T", Buffer.concat([int16(1), field])),
            message("D", Buffer.concat([int16(1), int32(1), Buffer.from("1")])),
            message("C", cstrings("SELECT 1")),
            message("Z", Buffer.from("I")),
          ]),
        );
      } else {
        const note = "the simulator's stand-in answers only SELECT 1; run the simulator with PostgreSQL for real databases";
        socket.write(Buffer.concat([errorResponse("ERROR", "0A000", note), message("Z", Buffer.from("I"))]));
      }
    }
  }
}

// ---- finding PostgreSQL ------------------------------------------------------------------------

/** The newest Debian/Ubuntu PostgreSQL, or initdb on PATH; and the user to run it as. A string says why not. */
function findPostgres(): Postgres | string {
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
  if (process.getuid?.() !== 0) return { bin };
  try {
    const id = (flag: string) => Number(execFileSync("id", [flag, "postgres"], { encoding: "utf8" }).trim());
    return { bin, user: { uid: id("-u"), gid: id("-g") } };
  } catch {
    return "PostgreSQL refuses to run as root and there is no `postgres` user; the simulator's databases are stand-ins";
  }
}

function selfSignedCertificate(): [key: string, cert: string] {
  const pem = execFileSync(
    "openssl",
    [
      "req",
      "-x509",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:prime256v1",
      "-nodes",
      "-keyout",
      "-",
      "-out",
      "-",
      "-days",
      "30",
      "-subj",
      "/CN=127.0.0.1",
    ],
    { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] },
  );
  const key = /-----BEGIN PRIVATE KEY-----[\s\S]+?-----END PRIVATE KEY-----\n/.exec(pem)?.[0];
  const cert = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----\n/.exec(pem)?.[0];
  if (!key || !cert) throw new Error("openssl made no self-signed certificate");
  return [key, cert];
}

// ---- never leaving a server behind ---------------------------------------------------------------

const LIVE = new Set<Databases>();
let exitHooked = false;

/** On exit and on SIGINT/SIGTERM/SIGHUP, every live simulator's servers are stopped and directories removed. */
function hookExit(): void {
  if (exitHooked) return;
  exitHooked = true;
  process.on("exit", () => {
    for (const dbs of [...LIVE]) dbs.closeNow();
  });
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
    const onSignal = () => {
      for (const dbs of [...LIVE]) dbs.closeNow();
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
function sweepLeftovers(): void {
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

/**
 * Ports for what binds the same port again later: a service's endpoints, which a stop closes and a
 * start opens again, and its PostgreSQL server, restarted on its port. Drawn below the kernel's
 * ephemeral range (32768-60999 by default), from which every `listen(0)` and outgoing connection of
 * the machine takes its ports: with an ephemeral one, another process can take the port while the
 * service is stopped, and the start's listen then fails. (The likely cause of one CI hang, a
 * resumed fork whose login never came; not reproduced.)
 */
const STABLE_PORTS = { from: 20000, to: 32767 };

async function listenOnStablePort(server: net.Server): Promise<number> {
  let last: Error | undefined;
  for (let attempt = 0; attempt < 100; attempt++) {
    const port = STABLE_PORTS.from + Math.floor(Math.random() * (STABLE_PORTS.to - STABLE_PORTS.from + 1));
    const failure = await new Promise<Error | undefined>((resolve) => {
      server.once("error", resolve);
      server.listen(port, "127.0.0.1", () => {
        server.off("error", resolve);
        resolve(undefined);
      });
    });
    if (!failure) return port;
    last = failure;
  }
  throw new Error(`no port to listen on between ${STABLE_PORTS.from} and ${STABLE_PORTS.to} after 100 tries: ${last?.message}`);
}

/** A port for a PostgreSQL server (which binds it itself), from the same range. */
async function freePort(): Promise<number> {
  const probe = net.createServer();
  const port = await listenOnStablePort(probe);
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** A SQL string literal. */
const literal = (text: string) => `'${text.replace(/'/g, "''")}'`;

// ---- PostgreSQL's wire protocol, the little the stand-in needs ---------------------------------

const SSL_REQUEST = 80877103;
const PROTOCOL_3 = 196608;

const int32 = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeInt32BE(n);
  return b;
};
const int16 = (n: number) => {
  const b = Buffer.alloc(2);
  b.writeInt16BE(n);
  return b;
};
const cstrings = (...texts: string[]) => Buffer.concat(texts.map((t) => Buffer.from(`${t}\0`, "utf8")));
const message = (type: string, body: Buffer) => Buffer.concat([Buffer.from(type), int32(body.length + 4), body]);
const errorResponse = (severity: string, code: string, text: string) =>
  message("E", Buffer.concat([cstrings(`S${severity}`, `V${severity}`, `C${code}`, `M${text}`), Buffer.from([0])]));

function startupParams(body: Buffer): Record<string, string> {
  const parts = body.toString("utf8").split("\0");
  const params: Record<string, string> = {};
  for (let i = 0; i + 1 < parts.length && parts[i]; i += 2) params[parts[i] as string] = parts[i + 1] as string;
  return params;
}

/** Reads whole messages off a socket: the first (startup) one has no type byte. */
class MessageReader {
  private buffered = Buffer.alloc(0);
  private waiting: (() => void) | undefined;
  private ended = false;

  constructor(
    private readonly socket: net.Socket,
    private startup: boolean,
  ) {
    socket.on("data", this.onData);
    socket.on("close", this.onClose);
  }

  private readonly wake = () => {
    const w = this.waiting;
    this.waiting = undefined;
    w?.();
  };
  private readonly onData = (d: Buffer) => {
    this.buffered = Buffer.concat([this.buffered, d]);
    this.wake();
  };
  private readonly onClose = () => {
    this.ended = true;
    this.wake();
  };

  /** Stops reading: the socket is handed on (to TLS). */
  detach(): void {
    this.socket.removeListener("data", this.onData);
    this.socket.removeListener("close", this.onClose);
  }

  /** The next message, or undefined when the connection ends first. */
  async next(): Promise<{ type?: string; code?: number; body: Buffer } | undefined> {
    for (;;) {
      const header = this.startup ? 4 : 5;
      if (this.buffered.length >= header) {
        const length = this.buffered.readInt32BE(header - 4);
        const total = length + header - 4;
        if (this.buffered.length >= total) {
          const whole = this.buffered.subarray(0, total);
          this.buffered = this.buffered.subarray(total);
          if (this.startup) {
            this.startup = false;
            return { code: whole.readInt32BE(4), body: whole.subarray(8) };
          }
          return { type: String.fromCharCode(whole[0] as number), body: whole.subarray(5) };
        }
      }
      if (this.ended) return undefined;
      await new Promise<void>((resolve) => (this.waiting = resolve));
    }
  }
}
