// The databases behind the simulator's services. Each service's endpoint (and its pooler's) is a
// listener of the simulator on a loopback port of its own (ports.ts). Behind it is either
//  - "timescaledb": a real PostgreSQL server per service running TimescaleDB (postgres.ts), database
//    `tsdb`, role `tsdbadmin` (not a superuser) with the service's password, TLS required; the
//    parent holds what production.ts describes (personal data in tables and a compressed hypertable,
//    a continuous aggregate, policies, a user-defined action). A fork's server is a copy of its
//    parent's whole server (statistics, catalog, jobs, roles, prepared transactions) taken when the
//    fork is made (PITR copies the current data too: the simulator cannot rewind);
//  - "postgres": the same on a PostgreSQL server without TimescaleDB (a machine where it is not
//    installed): production's ordinary tables only, and no job catalog;
//  - "stand-in": no server; the listener hands the connection to a stand-in that accepts a login
//    and nothing more (loginStandIn.ts).
// The listener passes bytes through to the server. It accepts logins only from `opensAt` on (READY
// plus the login lag, as in production), and not at all while its service is stopped.
import * as net from "net";
import { LoginStandIn } from "./loginStandIn";
import { listenOnStablePort } from "./ports";
import { type ClusterRecipe, findPostgres, type PostgresServer, PostgresServers, sweepLeftovers } from "./postgres";
import { DATABASE, EVENTS_ROWS, EXTENSION_SQL, productionSql, ROLE } from "./production";

export { customerRow, DATABASE, PERSONAL_ROWS, PERSONAL_TABLE, ROLE, SAMPLE_ROWS, SAMPLE_TABLE } from "./production";

/** What a simulator is asked for: real servers where they can be had ("postgres"), or the login stand-in. */
export type DatabaseMode = "postgres" | "stand-in";
/** What it runs: TimescaleDB on PostgreSQL, PostgreSQL alone (TimescaleDB not installed), or the stand-in. */
export type DatabaseKind = "timescaledb" | "postgres" | "stand-in";

export interface Endpoints {
  port: number;
  poolerPort: number;
}

interface DbService extends PostgresServer {
  password: string;
  listeners: net.Server[];
  ports: Endpoints;
  sockets: Set<net.Socket>;
  /** Logins are refused before this time (READY plus the login lag). */
  opensAt: number;
  /** Logins refused until allowLogins (a test's "login never works"). */
  held: boolean;
  stopped: boolean;
  /** Connections closed at once because logins were not accepted yet (someone is trying to log in). */
  refused: number;
  /** Operations on the service's server, one after another. */
  work: Promise<void>;
}

export class Databases {
  private readonly services = new Map<string, DbService>();
  /** The PostgreSQL servers, once start() could have them; the stand-in otherwise. */
  private servers: PostgresServers | undefined;
  private readonly standIn = new LoginStandIn(ROLE, DATABASE);
  private whyStandIn: string | undefined;

  /**
   * `wanted`: what start() tries to have. Until then, and wherever it cannot, the stand-in.
   * `eventsRows`: the rows of production's hypertable (EVENTS_ROWS by default).
   */
  constructor(
    private readonly wanted: DatabaseMode,
    private readonly eventsRows: number = EVENTS_ROWS,
  ) {}

  /** Real servers when wanted and possible; otherwise the stand-in, with a note saying why. */
  async start(): Promise<void> {
    sweepLeftovers();
    if (this.wanted === "stand-in") return;
    const found = findPostgres();
    if (typeof found === "string") {
      this.whyStandIn = found;
      return;
    }
    const servers = new PostgresServers(found);
    try {
      await servers.prepare();
    } catch (err) {
      await servers.close();
      this.whyStandIn = `PostgreSQL could not be prepared: ${(err as Error).message.split("\n")[0]}`;
      return;
    }
    this.servers = servers;
  }

  /** What is behind the endpoints. */
  get kind(): DatabaseKind {
    if (!this.servers) return "stand-in";
    return this.servers.runs.timescaledb ? "timescaledb" : "postgres";
  }

  /** What is behind the endpoints, in words (the simulator says it when it starts). */
  describe(): string {
    const timescaledb = this.servers?.runs.timescaledb;
    if (timescaledb) return `a PostgreSQL server with TimescaleDB ${timescaledb} per service`;
    if (this.servers)
      return "a PostgreSQL server per service, without TimescaleDB (not installed here: scripts/ensure-timescaledb builds it); no hypertable, no jobs";
    return `stand-ins that accept a login and answer SELECT 1${this.whyStandIn ? ` (${this.whyStandIn})` : ""}`;
  }

  /** Why real servers were wanted but could not be had (one line), if so. */
  get note(): string | undefined {
    return this.whyStandIn;
  }

  /** The temporary directory holding every server's data (empty for the stand-in). */
  get directory(): string {
    return this.servers?.directory ?? "";
  }

  /** Set by tests: the stand-in refuses every login with a message that quotes the password it got. */
  get echoPasswordInErrors(): boolean {
    return this.standIn.echoPasswordInErrors;
  }

  set echoPasswordInErrors(echo: boolean) {
    this.standIn.echoPasswordInErrors = echo;
  }

  /** The service's password, as its role has it (tests). */
  password(serviceId: string): string | undefined {
    return this.services.get(serviceId)?.password;
  }

  /** A service's database: production's data, or (`sample` false) a service created empty. */
  async seed(serviceId: string, password: string, sample = true): Promise<Endpoints> {
    const s = await this.listen(serviceId, password, 0);
    const servers = this.servers;
    if (servers) {
      await this.chain(s, async () => {
        const timescaledb = servers.runs.timescaledb !== undefined;
        await servers.fromCluster(s, await servers.cluster(serviceCluster(timescaledb, sample, this.eventsRows)));
        await servers.psql(s, "postgres", [setRolePassword(password)]);
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
    const servers = this.servers;
    if (servers && parent) {
      // Queued behind the parent's own work, so the copy is of the parent as of this moment.
      const copied = this.chain(parent, () => servers.copy(parent, s));
      void this.chain(s, async () => {
        await copied;
        if (s.failure) return;
        await servers.start(s);
        await servers.psql(s, "postgres", [setRolePassword(password)]);
      });
    }
    return s.ports;
  }

  /** `updatePassword`: the role's new password, in the server itself (after any work queued on it). */
  async setPassword(serviceId: string, password: string): Promise<void> {
    const s = this.services.get(serviceId);
    if (!s) return;
    s.password = password;
    const servers = this.servers;
    if (servers)
      await this.chain(s, async () => {
        await servers.psql(s, "postgres", [setRolePassword(password)]);
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
    const servers = this.servers;
    if (servers) void this.chain(s, () => servers.stop(s));
  }

  /** `DELETE`: the server stops and its data goes; the service is forgotten (a delete is final). */
  dropServer(serviceId: string): void {
    const s = this.services.get(serviceId);
    if (!s) return;
    this.stopServer(serviceId);
    this.services.delete(serviceId);
    void this.chain(s, async () => this.servers?.removeData(s));
  }

  /** `start` (resume): the server starts again, and logins are accepted from `opensAt` on. */
  startServer(serviceId: string, opensAt: number): void {
    const s = this.services.get(serviceId);
    if (!s || !s.stopped) return;
    s.stopped = false;
    s.opensAt = opensAt;
    const ports = [s.ports.port, s.ports.poolerPort];
    s.listeners.forEach((l, i) => l.listen(ports[i], "127.0.0.1"));
    const servers = this.servers;
    if (servers) void this.chain(s, () => servers.start(s));
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

  /** How many connections to the service were closed at once, logins not accepted yet. */
  connectionsRefused(serviceId: string): number {
    return this.services.get(serviceId)?.refused ?? 0;
  }

  /** Runs SQL on the service's server as the superuser, over its socket; the output, unaligned (tests). */
  async query(serviceId: string, sql: string): Promise<string> {
    const s = this.services.get(serviceId);
    if (!this.servers || !s?.serverPort) throw new Error(`service ${serviceId} has no PostgreSQL server`);
    await s.work;
    return this.servers.psql(s, DATABASE, [sql], ["-A", "-t"]);
  }

  /** Stops every server, closes every listener, removes every directory. */
  async close(): Promise<void> {
    for (const s of this.services.values()) {
      for (const l of s.listeners) l.close();
      for (const socket of s.sockets) socket.destroy();
    }
    const servers = this.servers;
    await Promise.all([...this.services.values()].map((s) => s.work.then(() => servers?.stop(s))));
    this.services.clear();
    await servers?.close();
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
      refused: 0,
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
      s.refused++;
      socket.destroy();
      return;
    }
    s.sockets.add(socket);
    socket.once("close", () => s.sockets.delete(socket));
    if (this.kind === "stand-in") {
      void this.standIn.serve(socket, s);
      return;
    }
    const upstream = net.connect(s.serverPort as number, "127.0.0.1");
    upstream.on("error", () => socket.destroy());
    socket.once("close", () => upstream.destroy());
    upstream.once("close", () => socket.destroy());
    socket.pipe(upstream).pipe(socket);
  }

  /** Queues `step` on the service's server; a failure is recorded on the service and said once. */
  private chain(s: DbService, step: () => Promise<void>): Promise<void> {
    s.work = s.work.then(step).catch((err: unknown) => {
      s.failure = (err as Error).message;
      process.stderr.write(`[simulator] the database of ${s.id} failed: ${s.failure.split("\n")[0]}\n`);
    });
    return s.work;
  }
}

/** A SQL string literal. */
const literal = (text: string) => `'${text.replace(/'/g, "''")}'`;

const setRolePassword = (password: string) => `ALTER ROLE ${ROLE} PASSWORD ${literal(password)};`;

/** A service's cluster: the role, the database and (with TimescaleDB) the extension; production's data unless `sample` is false. */
function serviceCluster(timescaledb: boolean, sample: boolean, eventsRows: number): ClusterRecipe {
  const size = sample && timescaledb && eventsRows !== EVENTS_ROWS ? `-${eventsRows}` : "";
  return {
    name: `${sample ? "production" : "empty"}${size}${timescaledb ? "-timescaledb" : ""}`,
    steps: [
      { database: "postgres", statements: [`CREATE ROLE ${ROLE} LOGIN PASSWORD NULL;`, `CREATE DATABASE ${DATABASE} OWNER ${ROLE};`] },
      {
        database: DATABASE,
        statements: [
          ...(timescaledb ? EXTENSION_SQL : []),
          ...(sample ? productionSql(timescaledb, eventsRows) : []),
          // Then what a person runs after loading data, or autovacuum in time (it is off here): every table analysed,
          // hypertables as a whole too. A compressed chunk's emptied table keeps the statistics it had (ANALYZE
          // of an empty table leaves them).
          "ANALYZE;",
        ],
      },
    ],
  };
}
