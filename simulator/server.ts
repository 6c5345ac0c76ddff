// The simulator: a real HTTP server on loopback that plays the Tiger Cloud API over a cloud in
// memory (cloud.ts) that it holds, with the services' databases (databases.ts). In front of it, a
// gateway: a path the API does not have gets its HTML 404. Who may call: a bearer API key and a
// public/secret key pair (HTTP Basic, as the official CLI sends), both of one project, which GET
// /auth/info names. For tests: fault injection (faults.ts) and a request log.
import * as crypto from "crypto";
import * as fs from "fs";
import * as http from "http";
import type { AddressInfo } from "net";
import { Cloud } from "./cloud";
import { type DatabaseMode, Databases } from "./databases";
import { type Fault, Faults } from "./faults";
import { DEFAULT_SEED, type Delays, fail, type SeedData, type SimService, type SimVpc, type Status } from "./model";
import { send, sendFailure } from "./responses";
import { type OperationName, type Route, ROUTES } from "./routes";

export interface LoggedRequest {
  operation: OperationName | "unknown";
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  body: unknown;
  at: number;
  /** The status the simulator answered with, once the answer is sent (none for a dropped or hung request). */
  status?: number;
}

export interface KeyPair {
  publicKey: string;
  secretKey: string;
}

export interface SimulatorOptions {
  seed?: SeedData;
  /** The bearer API key (default: a random one). */
  apiKey?: string;
  /** The public/secret key pair accepted as HTTP Basic, as the real API does (default: a random one). */
  keyPair?: KeyPair;
  /** The project the keys belong to, which GET /auth/info names (default: the seed's first). */
  keyProjectId?: string;
  delays?: Partial<Delays>;
  /** Answer rename with a Vpc (the API's earlier behaviour) instead of `{message}`. */
  renameAnswersVpc?: boolean;
  /** The port on 127.0.0.1 (default: any free one). */
  port?: number;
  /** What is behind each service's endpoint (simulator/databases.ts): real PostgreSQL servers
   *  where they can be had, or (the default) a stand-in that only accepts a login. */
  databases?: DatabaseMode;
  /** The rows of production's hypertable (simulator/production.ts, EVENTS_ROWS by default): fewer where its shape matters, not its size. */
  eventsRows?: number | undefined;
}

/** Where a key was made, as GET /auth/info tells it: fixed, so answers are the same every run. */
const KEY_CREATED = "2026-01-15T10:00:00Z";
const ISSUING_USER = { id: "user-sim01", name: "Simulator User", email: "simulator@example.com" };

export class Simulator {
  readonly apiKey: string;
  readonly keyPair: KeyPair;
  /** The cloud in memory the API's operations act on. */
  readonly cloud: Cloud;
  /** What is behind each service's endpoint: stand-ins until start() has the servers it can. */
  readonly databases: Databases;
  private readonly log: LoggedRequest[] = [];
  private readonly faults = new Faults((operation, since) =>
    this.log.some((r) => r.operation === operation && r.at >= since && r.status !== undefined),
  );
  private readonly server: http.Server;
  /** Held services to release once a request on them has been refused (releaseBusyOnceRefused). */
  private readonly releases: {
    projectId: string;
    serviceId: string;
    operation: OperationName;
    /** 409s still to come before the read that releases it. */
    refusals: number;
    released: (at: number) => void;
  }[] = [];
  private url_ = "";

  constructor(private readonly options: SimulatorOptions = {}) {
    this.databases = new Databases(options.databases ?? "stand-in", options.eventsRows);
    this.cloud = new Cloud(
      { seed: options.seed ?? DEFAULT_SEED, delays: options.delays, renameAnswersVpc: options.renameAnswersVpc },
      this.databases,
    );
    this.apiKey = options.apiKey ?? `sim-${crypto.randomBytes(12).toString("hex")}`;
    this.keyPair = options.keyPair ?? {
      publicKey: `sim-pk-${crypto.randomBytes(6).toString("hex")}`,
      secretKey: `sim-sk-${crypto.randomBytes(16).toString("hex")}`,
    };
    // Whatever a request does (a path no URL parser takes, a client gone mid-body), the server
    // answers or drops that one request, and goes on.
    this.server = http.createServer((req, res) => {
      this.handle(req, res).catch((err: unknown) => {
        if (res.headersSent) res.destroy();
        else sendFailure(res, err);
      });
    });
  }

  /** Starts listening on loopback; resolves to the base URL. */
  async start(): Promise<string> {
    try {
      await this.databases.start();
      if (this.databases.note) process.stderr.write(`[simulator] ${this.databases.note}\n`);
      await this.cloud.seedDatabases();
    } catch (err) {
      // A start that fails part-way (a seed refused) leaves no PostgreSQL server behind: the caller has no simulator to stop.
      await this.databases.close().catch(() => undefined);
      throw err;
    }
    await new Promise<void>((resolve) => this.server.listen(this.options.port ?? 0, "127.0.0.1", resolve));
    this.url_ = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this.url_;
  }

  get url(): string {
    return this.url_;
  }

  async stop(): Promise<void> {
    this.faults.release();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
    await this.databases.close();
  }

  /** The project the keys belong to: what GET /auth/info names. */
  get keyProjectId(): string {
    return this.options.keyProjectId ?? this.defaults().projectId;
  }

  static seedFromFile(file: string): SeedData {
    return JSON.parse(fs.readFileSync(file, "utf8")) as SeedData;
  }

  // ---- the cloud, for tests and the demo -----------------------------------------------------

  get delays(): Delays {
    return this.cloud.delays;
  }

  set delays(delays: Delays) {
    this.cloud.delays = delays;
  }

  /** Answer rename with a Vpc (the API's earlier behaviour) instead of `{message}`. */
  get renameAnswersVpc(): boolean {
    return this.cloud.renameAnswersVpc;
  }

  set renameAnswersVpc(answersVpc: boolean) {
    this.cloud.renameAnswersVpc = answersVpc;
  }

  /** Changes made outside Pulumi, as a person in the console would. */
  get outOfBand(): Cloud["outOfBand"] {
    return this.cloud.outOfBand;
  }

  loadSeed(seed: SeedData): void {
    this.cloud.loadSeed(seed);
  }

  /** The first project, service and VPC of the seed: what `npm run simulator` prints. */
  defaults(): { projectId: string; serviceId: string; vpcId: string } {
    return this.cloud.defaults();
  }

  service(projectId: string, serviceId: string): (SimService & { status: Status }) | undefined {
    return this.cloud.service(projectId, serviceId);
  }

  services(projectId: string): (SimService & { status: Status })[] {
    return this.cloud.services(projectId);
  }

  vpc(projectId: string, vpcId: string): SimVpc | undefined {
    return this.cloud.vpc(projectId, vpcId);
  }

  /** The VPC itself, or the API's 400 or 404 (a test changes it in place). */
  requireVpc(projectId: string, vpcId: string): SimVpc {
    return this.cloud.requireVpc(projectId, vpcId);
  }

  projectName(projectId: string): string {
    return this.cloud.projectName(projectId);
  }

  // ---- faults and the request log (tests) --------------------------------------------------

  /** The next `times` calls of `operation` meet `fault` instead of the API. */
  injectFault(operation: OperationName, fault: Fault, times = 1): void {
    this.faults.inject(operation, fault, times);
  }

  clearFaults(): void {
    this.faults.clear();
  }

  /** Bytes the last `huge` fault wrote before the client closed (or it finished). */
  get hugeBytesWritten(): number {
    return this.faults.hugeBytesWritten;
  }
  /** Whether the huge body of an injected fault is still being written. */
  get hugeStreaming(): boolean {
    return this.faults.hugeStreaming;
  }

  /** Every request logged since the last clearLog (the official CLI's analytics calls are not). */
  requests(operation?: OperationName): LoggedRequest[] {
    return this.log.filter((r) => operation === undefined || r.operation === operation);
  }

  clearLog(): void {
    this.log.length = 0;
  }

  /**
   * Releases a service held busy (outOfBand.holdBusy) once `times` requests of `operation` on it
   * have been answered 409 and the service has then been read (GET), busy: the caller has met the
   * busy service and seen why. The busy window thus ends when the request it was for has met it,
   * never after a time a loaded machine may outrun. Resolves when released, with the time.
   */
  releaseBusyOnceRefused(projectId: string, serviceId: string, operation: OperationName, times = 1): Promise<number> {
    return new Promise((released) => this.releases.push({ projectId, serviceId, operation, refusals: times, released }));
  }

  /** A request was answered: a release waiting for a refusal, or for the read after it, counts it. */
  private answered(operation: OperationName, status: number, route: Route, basePath: string): void {
    const match = route.pattern.exec(basePath);
    let target: string[];
    try {
      target = [decodeURIComponent(match?.[1] ?? ""), decodeURIComponent(match?.[2] ?? "")];
    } catch {
      return;
    }
    for (const r of [...this.releases]) {
      if (r.projectId !== target[0] || r.serviceId !== target[1]) continue;
      if (r.refusals > 0) {
        if (operation === r.operation && status === 409) r.refusals--;
        continue;
      }
      if (operation !== "getService" || status !== 200) continue;
      this.releases.splice(this.releases.indexOf(r), 1);
      // Inside a response's event a throw would crash the server: a service no longer held (a
      // test set its status meanwhile) is released already.
      if (this.cloud.isHeld(r.serviceId)) this.cloud.outOfBand.releaseBusy(r.projectId, r.serviceId);
      r.released(Date.now());
    }
  }

  // ---- HTTP --------------------------------------------------------------------------------

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const raw = await readBody(req);
    // The path as sent (`new URL` would read `//x` as a host): without its query, less the base.
    const pathname = (req.url ?? "/").split("?")[0] as string;
    const basePath = pathname.replace(/^\/public\/api\/v1/, "");
    const route = ROUTES.find((r) => r.method === req.method && r.pattern.test(basePath));
    const operation = route?.kind === "api" ? (route.operation as OperationName) : undefined;
    let body: unknown = undefined;
    let bodyError = false;
    if (raw.length > 0) {
      try {
        body = JSON.parse(raw);
      } catch {
        bodyError = true;
        body = raw;
      }
    }
    const entry: LoggedRequest = {
      operation: operation ?? "unknown",
      method: req.method ?? "",
      path: pathname,
      headers: req.headers,
      body,
      at: Date.now(),
    };
    // The official CLI's usage events are answered and recorded nowhere, not even here.
    if (route?.kind !== "analytics") this.log.push(entry);
    res.once("finish", () => {
      entry.status = res.statusCode;
      if (operation && this.releases.length > 0) this.answered(operation, res.statusCode, route as Route, basePath);
    });

    // In front of the API sits a gateway: a path it does not route never reaches the API, and
    // gets the gateway's own HTML page, whatever the credentials.
    if (!route) {
      res
        .writeHead(404, { "Content-Type": "text/html" })
        .end("<html><head><title>404 Not Found</title></head><body><h1>Not Found</h1></body></html>");
      return;
    }
    try {
      if (!this.authorized(req.headers.authorization)) throw fail(401, "UNAUTHORIZED", "missing or invalid credentials");
      if (!operation) {
        send(res, ...this.answerOther(route));
        return;
      }
      const plan = await this.faults.before(operation, raw, res);
      if (plan === "answered") return;
      if (raw.length > 0 && !String(req.headers["content-type"] ?? "").startsWith("application/json")) {
        throw fail(415, "UNSUPPORTED_MEDIA_TYPE", "requests with a body must be application/json");
      }
      if (bodyError) throw fail(400, "INVALID_JSON", "the request body is not valid JSON");
      const match = route.pattern.exec(basePath) as RegExpExecArray;
      let projectId: string;
      let id: string;
      try {
        [projectId, id] = [decodeURIComponent(match[1] as string), decodeURIComponent(match[2] ?? "")];
      } catch {
        throw fail(400, "INVALID_PATH", "the path is not valid percent-encoding");
      }
      const [status, answer] = await this.answer(operation, projectId, id, body);
      if (plan === "carry out, then lose the answer" && this.faults.loseAnswer(operation, res)) return;
      send(res, status, answer);
    } catch (err) {
      sendFailure(res, err);
    }
  }

  private authorized(header: string | undefined): boolean {
    if (header === `Bearer ${this.apiKey}`) return true;
    if (header?.startsWith("Basic ")) {
      const decoded = Buffer.from(header.slice(6), "base64").toString("utf8");
      return decoded === `${this.keyPair.publicKey}:${this.keyPair.secretKey}`;
    }
    return false;
  }

  /** The caller's identity (both credentials are one API key of one project), then the cloud's operations. */
  private async answer(operation: OperationName, projectId: string, id: string, body: unknown): Promise<[number, unknown]> {
    if (operation === "authInfo") {
      // `api_key` as published; `apiKey`, the older name of the same object, still sent.
      const apiKey = {
        public_key: this.keyPair.publicKey,
        name: "simulator",
        created: KEY_CREATED,
        project: this.keyProject(),
        issuing_user: ISSUING_USER,
      };
      return [200, { type: "apiKey", api_key: apiKey, apiKey }];
    }
    // A key sees only its own project.
    if (operation === "listProjects") return [200, [this.keyProject()]];
    return this.cloud.carryOut(operation, projectId, id, body);
  }

  private keyProject(): { id: string; name: string; plan_type: string } {
    return { id: this.keyProjectId, name: this.cloud.projectName(this.keyProjectId), plan_type: "FREE" };
  }

  /** Analytics: 200 and nothing kept. An operation the API has and the simulator does not: 501, named. */
  private answerOther(route: Route): [number, unknown] {
    if (route.kind === "analytics") return [200, { status: "success" }];
    return [
      501,
      {
        code: "NOT_IMPLEMENTED",
        message: `${route.operation} (${route.method} ${route.path}) is part of the Tiger Cloud API but not of this simulator`,
      },
    ];
  }
}

/** The request's body; what came, if the client went away before the end. */
function readBody(req: http.IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const done = () => resolve(Buffer.concat(chunks).toString("utf8"));
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", done);
    req.on("error", done);
    req.on("aborted", done);
  });
}
