// A real HTTP server on loopback that plays the Tiger Cloud API: in-memory projects, services and
// VPCs; the real status codes and status sequences over time; the real validation; a gateway's
// HTML 404 for paths that match no route; fault injection and a request log for tests.
import * as crypto from "crypto";
import * as fs from "fs";
import * as http from "http";
import type { AddressInfo } from "net";
import { type DatabaseMode, Databases } from "./databases";

export type Status =
  "QUEUED" | "CONFIGURING" | "RESUMING" | "UPGRADING" | "READY" | "PAUSING" | "PAUSED" | "DELETING" | "DELETED" | "UNSTABLE";
/** A service in one of these is busy with an operation, and refuses another with 409. */
const BUSY: readonly Status[] = ["QUEUED", "CONFIGURING", "RESUMING", "UPGRADING", "PAUSING", "UNSTABLE"];

export interface SimService {
  service_id: string;
  project_id: string;
  name: string;
  service_type: "TIMESCALEDB" | "POSTGRES" | "VECTOR";
  region_code: string;
  created: string;
  endpoint: { host: string; port: number };
  connection_pooler?: { endpoint: { host: string; port: number } };
  forked_from?: { is_standby: boolean; project_id: string; service_id: string };
  ha_replicas: { replica_count: number; sync_replica_count: number };
  initial_password?: string;
  metadata: { environment: "DEV" | "PROD" };
  resources: { id: string; spec: { cpu_millis: number; memory_gbs: number; volume_type: string } }[];
  /** Status changes still to come: the current status is the last whose time has passed. */
  timeline: { status: Status; at: number }[];
}

export interface SimVpc {
  id: string;
  cidr: string;
  name: string;
  region_code: string;
}

export interface SeedData {
  projects: { id: string; services: Omit<SimService, "timeline" | "project_id">[]; vpcs: SimVpc[] }[];
}

export interface Delays {
  /** Fork: QUEUED for this long, then CONFIGURING for forkConfiguringMs, then READY. */
  forkQueuedMs: number;
  forkConfiguringMs: number;
  /** Stop: PAUSING for this long, then PAUSED. */
  stopMs: number;
  /** Start: RESUMING for this long, then READY. */
  startMs: number;
  /** Resize: CONFIGURING for this long, then READY with the new size (0 when unset). */
  resizeMs?: number;
  /** setHA: CONFIGURING for this long, then READY. */
  setHAMs: number;
  /** DELETE: DELETING for this long, then DELETED (stopMs when unset). */
  deleteMs?: number;
  /** A fork's database accepts logins this long after it is READY (production has been seen to lag). */
  loginLagMs: number;
}

export const REALISTIC_DELAYS: Delays = {
  forkQueuedMs: 1500,
  forkConfiguringMs: 2500,
  stopMs: 1500,
  startMs: 2000,
  setHAMs: 1500,
  loginLagMs: 1500,
};
export const NO_DELAYS: Delays = { forkQueuedMs: 0, forkConfiguringMs: 0, stopMs: 0, startMs: 0, setHAMs: 0, loginLagMs: 0 };

export type OperationName =
  | "forkService"
  | "setHA"
  | "stop"
  | "deleteService"
  | "start"
  | "renameService"
  | "resize"
  | "setEnvironment"
  | "updatePassword"
  | "getService"
  | "listServices"
  | "getVpc"
  | "renameVpc";

export type Fault =
  /** This status; with `body`, that body as text/html unless `contentType` says otherwise. */
  | { kind: "status"; status: number; retryAfterSeconds?: number; body?: string; contentType?: string }
  | { kind: "drop" }
  | { kind: "hang" }
  | { kind: "malformed" }
  /** 200 headers, then one byte every `intervalMs`, never ending, until the client closes. */
  | { kind: "trickle"; intervalMs: number }
  /** 200 and a body of `bytes` bytes, streamed in 64 KiB chunks as fast as the client reads. */
  | { kind: "huge"; bytes: number }
  /** The operation IS carried out, then the answer is lost: this status with an empty body, or
   *  with status 0 a dropped connection (a fork made, its 202 never seen). */
  | { kind: "afterApplying"; status: number }
  /** The request waits this long, then is carried out and answered as usual (a slow network). */
  | { kind: "slow"; ms: number }
  /** The request waits until the API has answered a request of `operation` that came in since
   *  the fault was injected (at most `timeoutMs`), then is carried out as usual: a race's order
   *  made certain, whatever the load on the machine. */
  | { kind: "after"; operation: OperationName; timeoutMs: number }
  /** This status, and a message that quotes the request's body as it came (an API that echoes
   *  what it refused): the API's JSON error object, or with `html` a gateway's page. */
  | { kind: "echo"; status: number; html?: boolean };

const HUGE_CHUNK = Buffer.alloc(64 * 1024, " ");

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

export interface SimulatorOptions {
  seed?: SeedData;
  apiKey?: string;
  /** A public/secret key pair accepted as HTTP Basic, as the real API does. */
  keyPair?: { publicKey: string; secretKey: string };
  delays?: Partial<Delays>;
  /** Answer rename with a Vpc (the API's earlier behaviour) instead of `{message}`. */
  renameAnswersVpc?: boolean;
  port?: number;
  /** What is behind each service's endpoint (test/simulator/databases.ts): real PostgreSQL servers
   *  where they can be had, or (the default) a stand-in that only accepts a login. */
  databases?: DatabaseMode;
}

export const DEFAULT_SEED: SeedData = {
  projects: [
    {
      id: "proj-demo01",
      services: [
        {
          service_id: "svc-parent1",
          name: "production-db",
          service_type: "TIMESCALEDB",
          region_code: "us-east-1",
          created: "2026-01-15T10:00:00Z",
          endpoint: { host: "svc-parent1.proj-demo01.tsdb.cloud.timescale.com", port: 34567 },
          connection_pooler: { endpoint: { host: "svc-parent1.proj-demo01.tsdb.cloud.timescale.com", port: 34568 } },
          ha_replicas: { replica_count: 1, sync_replica_count: 0 },
          metadata: { environment: "PROD" },
          resources: [{ id: "res-parent1", spec: { cpu_millis: 2000, memory_gbs: 8, volume_type: "gp3" } }],
        },
      ],
      vpcs: [{ id: "1234567", cidr: "10.0.0.0/16", name: "main-vpc", region_code: "us-east-1" }],
    },
  ],
};

class HttpFailure extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}
const fail = (status: number, code: string, message: string) => new HttpFailure(status, code, message);

const ROUTES: { operation: OperationName; method: string; pattern: RegExp }[] = [
  { operation: "forkService", method: "POST", pattern: /^\/projects\/([^/]+)\/services\/([^/]+)\/forkService$/ },
  { operation: "setHA", method: "POST", pattern: /^\/projects\/([^/]+)\/services\/([^/]+)\/setHA$/ },
  { operation: "stop", method: "POST", pattern: /^\/projects\/([^/]+)\/services\/([^/]+)\/stop$/ },
  { operation: "deleteService", method: "DELETE", pattern: /^\/projects\/([^/]+)\/services\/([^/]+)$/ },
  { operation: "start", method: "POST", pattern: /^\/projects\/([^/]+)\/services\/([^/]+)\/start$/ },
  { operation: "updatePassword", method: "POST", pattern: /^\/projects\/([^/]+)\/services\/([^/]+)\/updatePassword$/ },
  { operation: "renameService", method: "POST", pattern: /^\/projects\/([^/]+)\/services\/([^/]+)\/rename$/ },
  { operation: "resize", method: "POST", pattern: /^\/projects\/([^/]+)\/services\/([^/]+)\/resize$/ },
  { operation: "setEnvironment", method: "POST", pattern: /^\/projects\/([^/]+)\/services\/([^/]+)\/setEnvironment$/ },
  { operation: "getService", method: "GET", pattern: /^\/projects\/([^/]+)\/services\/([^/]+)$/ },
  { operation: "listServices", method: "GET", pattern: /^\/projects\/([^/]+)\/services$/ },
  { operation: "getVpc", method: "GET", pattern: /^\/projects\/([^/]+)\/vpcs\/([^/]+)$/ },
  { operation: "renameVpc", method: "POST", pattern: /^\/projects\/([^/]+)\/vpcs\/([^/]+)\/rename$/ },
];

const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

export class Simulator {
  readonly apiKey: string;
  readonly keyPair: { publicKey: string; secretKey: string } | undefined;
  private readonly projects = new Map<string, { services: Map<string, SimService>; vpcs: Map<string, SimVpc> }>();
  private readonly faults = new Map<OperationName, { fault: Fault; remaining: number; since: number }[]>();
  private readonly log: LoggedRequest[] = [];
  private readonly server: http.Server;
  private readonly hanging = new Set<http.ServerResponse>();
  private readonly trickles = new Set<NodeJS.Timeout>();
  /** Bytes the last `huge` fault wrote before the client closed (or it finished). */
  hugeBytesWritten = 0;
  delays: Delays;
  renameAnswersVpc: boolean;
  /** The services' databases; set by start(). */
  databases!: Databases;
  private url_ = "";

  constructor(private readonly options: SimulatorOptions = {}) {
    this.apiKey = options.apiKey ?? `sim-${crypto.randomBytes(12).toString("hex")}`;
    this.keyPair = options.keyPair;
    this.delays = { ...NO_DELAYS, ...options.delays };
    this.renameAnswersVpc = options.renameAnswersVpc ?? false;
    this.loadSeed(options.seed ?? DEFAULT_SEED);
    this.server = http.createServer((req, res) => void this.handle(req, res));
  }

  /** Starts listening on loopback; resolves to the base URL. */
  async start(): Promise<string> {
    // Every service's endpoint becomes its database's loopback listener.
    this.databases = await Databases.start(this.options.databases ?? "stand-in");
    if (this.databases.note) process.stderr.write(`[simulator] ${this.databases.note}\n`);
    for (const project of this.projects.values())
      for (const s of project.services.values()) {
        s.initial_password ??= crypto.randomBytes(18).toString("base64url");
        this.attach(s, await this.databases.seed(s.service_id, s.initial_password));
      }
    await new Promise<void>((resolve) => this.server.listen(this.options.port ?? 0, "127.0.0.1", resolve));
    this.url_ = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this.url_;
  }

  get url(): string {
    return this.url_;
  }

  async stop(): Promise<void> {
    for (const timer of this.trickles) clearInterval(timer);
    this.trickles.clear();
    for (const res of this.hanging) res.destroy();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
    await this.databases?.close();
  }

  private attach(s: SimService, ports: { port: number; poolerPort: number }): void {
    s.endpoint = { host: "127.0.0.1", port: ports.port };
    s.connection_pooler = { endpoint: { host: "127.0.0.1", port: ports.poolerPort } };
  }

  // ---- seed and direct access (tests, demo) ------------------------------------------------

  loadSeed(seed: SeedData): void {
    for (const p of seed.projects) {
      const services = new Map<string, SimService>();
      for (const s of p.services)
        services.set(s.service_id, { ...structuredClone(s), project_id: p.id, timeline: [{ status: "READY", at: 0 }] });
      this.projects.set(p.id, { services, vpcs: new Map(p.vpcs.map((v) => [v.id, { ...v }])) });
    }
  }

  static seedFromFile(file: string): SeedData {
    return JSON.parse(fs.readFileSync(file, "utf8")) as SeedData;
  }

  /** The first project, service and VPC of the seed: what `npm run simulator` prints. */
  defaults(): { projectId: string; serviceId: string; vpcId: string } {
    const [projectId, project] = [...this.projects.entries()][0] ?? [];
    if (!projectId || !project) throw new Error("the seed has no project");
    return { projectId, serviceId: [...project.services.keys()][0] ?? "", vpcId: [...project.vpcs.keys()][0] ?? "" };
  }

  service(projectId: string, serviceId: string): (SimService & { status: Status }) | undefined {
    const s = this.projects.get(projectId)?.services.get(serviceId);
    return s && { ...s, status: currentStatus(s) };
  }

  services(projectId: string): (SimService & { status: Status })[] {
    return [...(this.projects.get(projectId)?.services.values() ?? [])].map((s) => ({ ...s, status: currentStatus(s) }));
  }

  vpc(projectId: string, vpcId: string): SimVpc | undefined {
    return this.projects.get(projectId)?.vpcs.get(vpcId);
  }

  /** Changes made outside Pulumi, as a person in the console would. */
  outOfBand = {
    renameVpc: (projectId: string, vpcId: string, name: string) => {
      this.requireVpc(projectId, vpcId).name = name;
    },
    setHA: (projectId: string, serviceId: string, replicaCount: number, syncReplicaCount: number) => {
      this.requireService(projectId, serviceId).ha_replicas = { replica_count: replicaCount, sync_replica_count: syncReplicaCount };
    },
    /** This status from now on; with `readyAfterMs`, READY that long from now (a busy service settling). */
    setStatus: (projectId: string, serviceId: string, status: Status, readyAfterMs?: number) => {
      const later: { status: Status; at: number }[] =
        readyAfterMs === undefined ? [] : [{ status: "READY", at: Date.now() + readyAfterMs }];
      this.requireService(projectId, serviceId).timeline = [{ status, at: 0 }, ...later];
      // Its database opens a login lag after READY, whenever READY now comes.
      const readyAt = status === "READY" ? Date.now() : later[0]?.at;
      if (readyAt !== undefined) this.databases?.opensBy(serviceId, readyAt + this.delays.loginLagMs);
    },
    /** An operation started elsewhere (an HA change or a resize in the console): `status` for `ms`, then as before. */
    holdBusy: (projectId: string, serviceId: string, status: Status, ms: number) => {
      const s = this.requireService(projectId, serviceId);
      const before = currentStatus(s);
      const now = Date.now();
      s.timeline = [
        { status, at: now },
        { status: before, at: now + ms },
      ];
    },
    renameService: (projectId: string, serviceId: string, name: string) => {
      this.requireService(projectId, serviceId).name = name;
    },
    resize: (projectId: string, serviceId: string, cpuMillis: number, memoryGbs: number) => {
      const s = this.requireService(projectId, serviceId);
      const spec = s.resources[0]?.spec ?? { cpu_millis: 0, memory_gbs: 0, volume_type: "gp3" };
      s.resources = [{ id: s.resources[0]?.id ?? `res-${serviceId}`, spec: { ...spec, cpu_millis: cpuMillis, memory_gbs: memoryGbs } }];
    },
    setEnvironment: (projectId: string, serviceId: string, environment: "DEV" | "PROD") => {
      this.requireService(projectId, serviceId).metadata = { environment };
    },
    /** The service's endpoint moved (a migration, a failover to another host): host and port from now on. */
    moveEndpoint: (projectId: string, serviceId: string, host: string, port: number) => {
      this.requireService(projectId, serviceId).endpoint = { host, port };
    },
    deleteService: (projectId: string, serviceId: string) => {
      this.databases?.stopServer(serviceId);
      this.projects.get(projectId)?.services.delete(serviceId);
    },
  };

  // ---- faults and the request log ----------------------------------------------------------

  /** The next `times` calls of `operation` meet `fault` instead of the API. */
  injectFault(operation: OperationName, fault: Fault, times = 1): void {
    const list = this.faults.get(operation) ?? [];
    list.push({ fault, remaining: times, since: Date.now() });
    this.faults.set(operation, list);
  }

  clearFaults(): void {
    this.faults.clear();
  }

  requests(operation?: OperationName): LoggedRequest[] {
    return this.log.filter((r) => operation === undefined || r.operation === operation);
  }

  clearLog(): void {
    this.log.length = 0;
  }

  // ---- HTTP --------------------------------------------------------------------------------

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const raw = await readBody(req);
    const url = new URL(req.url ?? "/", "http://sim");
    const basePath = url.pathname.replace(/^\/public\/api\/v1/, "");
    const route = ROUTES.find((r) => r.method === req.method && r.pattern.test(basePath));
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
      operation: route?.operation ?? "unknown",
      method: req.method ?? "",
      path: url.pathname,
      headers: req.headers,
      body,
      at: Date.now(),
    };
    this.log.push(entry);
    res.once("finish", () => {
      entry.status = res.statusCode;
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
      if (this.nextFaultIs(route.operation, "slow")) {
        const { ms } = this.takeFault(route.operation) as { ms: number };
        await new Promise((resolve) => setTimeout(resolve, ms));
      }
      if (this.nextFaultIs(route.operation, "after")) {
        const since = this.faults.get(route.operation)?.[0]?.since ?? 0;
        const { operation, timeoutMs } = this.takeFault(route.operation) as { operation: OperationName; timeoutMs: number };
        const answered = () => this.log.some((r) => r.operation === operation && r.at >= since && r.status !== undefined);
        for (const deadline = Date.now() + timeoutMs; !answered() && Date.now() < deadline;) {
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
      }
      if (this.nextFaultIs(route.operation, "echo")) {
        const { status, html } = this.takeFault(route.operation) as { status: number; html?: boolean };
        const message = `refused: the request was ${raw}`;
        if (html) res.writeHead(status, { "Content-Type": "text/html" }).end(`<html><body><pre>${message}</pre></body></html>`);
        else send(res, status, { code: "REFUSED", message });
        return;
      }
      const lostAnswer = this.nextFaultIs(route.operation, "afterApplying");
      if (!lostAnswer && this.applyFault(route.operation, res)) return;
      if (raw.length > 0 && !String(req.headers["content-type"] ?? "").startsWith("application/json")) {
        throw fail(415, "UNSUPPORTED_MEDIA_TYPE", "requests with a body must be application/json");
      }
      if (bodyError) throw fail(400, "INVALID_JSON", "the request body is not valid JSON");
      const match = route.pattern.exec(basePath) as RegExpExecArray;
      const [projectId, id] = [decodeURIComponent(match[1] as string), decodeURIComponent(match[2] ?? "")];
      const [status, answer] = await this.dispatch(route.operation, projectId, id, body);
      if (lostAnswer) {
        const fault = this.takeFault(route.operation) as { status: number };
        if (fault.status === 0) res.socket?.destroy();
        else res.writeHead(fault.status).end();
        return;
      }
      send(res, status, answer);
    } catch (err) {
      if (err instanceof HttpFailure) send(res, err.status, { code: err.code, message: err.message });
      else send(res, 500, { code: "INTERNAL", message: String(err) });
    }
  }

  private authorized(header: string | undefined): boolean {
    if (header === `Bearer ${this.apiKey}`) return true;
    if (this.keyPair && header?.startsWith("Basic ")) {
      const decoded = Buffer.from(header.slice(6), "base64").toString("utf8");
      return decoded === `${this.keyPair.publicKey}:${this.keyPair.secretKey}`;
    }
    return false;
  }

  private nextFaultIs(operation: OperationName, kind: Fault["kind"]): boolean {
    return this.faults.get(operation)?.[0]?.fault.kind === kind;
  }

  /** Takes the next fault of an operation off its list. */
  private takeFault(operation: OperationName): Fault | undefined {
    const list = this.faults.get(operation);
    const next = list?.[0];
    if (!list || !next) return undefined;
    if (--next.remaining <= 0) list.shift();
    return next.fault;
  }

  private applyFault(operation: OperationName, res: http.ServerResponse): boolean {
    const f = this.takeFault(operation);
    if (!f) return false;
    switch (f.kind) {
      case "status": {
        const headers: Record<string, string> = {};
        if (f.retryAfterSeconds !== undefined) headers["Retry-After"] = String(f.retryAfterSeconds);
        if (f.body !== undefined) {
          res.writeHead(f.status, { ...headers, "Content-Type": f.contentType ?? "text/html" }).end(f.body);
        } else if (f.status === 429) {
          send(res, 429, { code: "RATE_LIMITED", message: "too many requests" }, headers);
        } else {
          res.writeHead(f.status, headers).end();
        }
        return true;
      }
      case "drop":
        res.socket?.destroy();
        return true;
      case "hang":
        this.hanging.add(res);
        return true;
      case "malformed":
        res.writeHead(200, { "Content-Type": "application/json" }).end('{"service_id": "svc-');
        return true;
      case "trickle": {
        res.writeHead(200, { "Content-Type": "application/json" });
        res.flushHeaders();
        const timer = setInterval(() => res.write(" "), f.intervalMs);
        this.trickles.add(timer);
        res.on("close", () => {
          clearInterval(timer);
          this.trickles.delete(timer);
        });
        return true;
      }
      case "huge":
        void this.streamHuge(res, f.bytes);
        return true;
      case "afterApplying":
      case "slow":
      case "after":
      case "echo":
        return false; // handled in handle()
    }
  }

  /** Writes `bytes` bytes, waiting for the client to drain each full buffer, and stops when it closes. */
  private async streamHuge(res: http.ServerResponse, bytes: number): Promise<void> {
    this.hugeBytesWritten = 0;
    let closed = false;
    let wake: (() => void) | undefined;
    res.on("close", () => {
      closed = true;
      wake?.();
    });
    res.writeHead(200, { "Content-Type": "application/json" });
    while (!closed && this.hugeBytesWritten < bytes) {
      const chunk = HUGE_CHUNK.subarray(0, Math.min(HUGE_CHUNK.length, bytes - this.hugeBytesWritten));
      const more = res.write(chunk);
      this.hugeBytesWritten += chunk.length;
      if (!more && !closed) {
        await new Promise<void>((resolve) => {
          wake = resolve;
          res.once("drain", resolve);
        });
      }
    }
    if (!closed) res.end();
  }

  private async dispatch(op: OperationName, projectId: string, id: string, body: unknown): Promise<[number, unknown]> {
    switch (op) {
      case "forkService":
        return [202, view(await this.fork(projectId, id, body), { withPassword: true })];
      case "setHA":
        return [202, view(this.setHA(projectId, id, body))];
      case "stop":
        return [202, view(this.stopService(projectId, id))];
      case "deleteService":
        // 202 and no body: the API promises none.
        this.deleteService(projectId, id);
        return [202, undefined];
      case "start":
        return [202, view(this.startService(projectId, id))];
      case "renameService":
        return [200, view(this.renameService(projectId, id, body))];
      case "resize":
        return [202, view(this.resize(projectId, id, body))];
      case "updatePassword":
        await this.updatePassword(projectId, id, body);
        return [204, undefined];
      case "setEnvironment":
        return [200, { message: this.setEnvironment(projectId, id, body) }];
      case "getService":
        return [200, view(this.requireService(projectId, id), { withMetrics: true })];
      case "listServices": {
        const live = [...this.requireProject(projectId).services.values()].filter((s) => currentStatus(s) !== "DELETED");
        return [200, live.map((s) => view(s, { withMetrics: true }))];
      }
      case "getVpc":
        return [200, this.requireVpc(projectId, id)];
      case "renameVpc": {
        const vpc = this.requireVpc(projectId, id);
        const name = (body as { name?: unknown } | undefined)?.name;
        if (typeof name !== "string" || name.length === 0) throw fail(400, "INVALID_NAME", "name: a non-empty string is required");
        vpc.name = name;
        return [200, this.renameAnswersVpc ? vpc : { message: "VPC renamed" }];
      }
    }
  }

  private requireProject(projectId: string) {
    const p = this.projects.get(projectId);
    if (!p) throw fail(404, "NOT_FOUND", `project ${projectId} not found`);
    return p;
  }

  private requireService(projectId: string, serviceId: string): SimService {
    const s = this.requireProject(projectId).services.get(serviceId);
    if (!s || currentStatus(s) === "DELETED") throw fail(404, "NOT_FOUND", `service ${serviceId} not found`);
    return s;
  }

  private requireVpc(projectId: string, vpcId: string): SimVpc {
    if (!/^[0-9]+$/.test(vpcId)) throw fail(400, "INVALID_VPC_ID", "vpc_id must be digits");
    const v = this.requireProject(projectId).vpcs.get(vpcId);
    if (!v) throw fail(404, "NOT_FOUND", `vpc ${vpcId} not found`);
    return v;
  }

  private async fork(projectId: string, parentId: string, body: unknown): Promise<SimService> {
    const parent = this.requireService(projectId, parentId);
    const b = (body ?? {}) as Record<string, unknown>;
    const parentStatus = currentStatus(parent);
    // The product forks a service only when it is running or paused.
    if (parentStatus !== "READY" && parentStatus !== "PAUSED") throw fail(409, "CONFLICT", "source service is not ready");
    if (!["LAST_SNAPSHOT", "NOW", "PITR"].includes(b.fork_strategy as string)) {
      throw fail(400, "INVALID_FORK_STRATEGY", "fork_strategy: required, one of LAST_SNAPSHOT, NOW, PITR");
    }
    if (b.fork_strategy === "PITR") {
      if (typeof b.target_time !== "string") throw fail(400, "MISSING_TARGET_TIME", "target_time: required when fork_strategy is PITR");
      if (!RFC3339.test(b.target_time)) throw fail(400, "INVALID_TARGET_TIME", "target_time: must be an RFC 3339 date-time");
      if (Date.parse(b.target_time) > Date.now()) throw fail(400, "INVALID_TARGET_TIME", "target_time: must not be in the future");
    }
    if (b.name !== undefined && (typeof b.name !== "string" || b.name.length < 1 || b.name.length > 128)) {
      throw fail(400, "INVALID_NAME", "name: 1 to 128 characters");
    }
    for (const field of ["cpu_millis", "memory_gbs"] as const) {
      const v = b[field];
      if (v !== undefined && (typeof v !== "string" || !(v === "shared" || /^\d+(\.\d+)?$/.test(v)))) {
        throw fail(400, "INVALID_RESOURCES", `${field}: a string holding a number, or "shared"`);
      }
    }
    if (b.environment_tag !== undefined && !["DEV", "PROD"].includes(b.environment_tag as string)) {
      throw fail(400, "INVALID_ENVIRONMENT_TAG", "environment_tag: DEV or PROD");
    }
    const id = `svc-${crypto.randomBytes(4).toString("hex")}`;
    const now = Date.now();
    const parentSpec = parent.resources[0]?.spec ?? { cpu_millis: 1000, memory_gbs: 4, volume_type: "gp3" };
    const size = (v: unknown, inherited: number) => (typeof v === "string" ? (v === "shared" ? 0 : Number(v)) : inherited);
    const fork: SimService = {
      service_id: id,
      project_id: projectId,
      name: (b.name as string | undefined) ?? `${parent.name}-fork`,
      service_type: parent.service_type,
      region_code: parent.region_code,
      created: new Date(now).toISOString(),
      endpoint: { host: `${id}.${projectId}.tsdb.cloud.timescale.com`, port: 30000 + crypto.randomInt(9999) },
      forked_from: { is_standby: false, project_id: projectId, service_id: parentId },
      ha_replicas: { replica_count: 0, sync_replica_count: 0 },
      initial_password: crypto.randomBytes(18).toString("base64url"),
      metadata: { environment: (b.environment_tag as "DEV" | "PROD" | undefined) ?? "DEV" },
      resources: [
        {
          id: `res-${id}`,
          spec: {
            cpu_millis: size(b.cpu_millis, parentSpec.cpu_millis),
            memory_gbs: size(b.memory_gbs, parentSpec.memory_gbs),
            volume_type: parentSpec.volume_type,
          },
        },
      ],
      timeline: [
        { status: "QUEUED", at: now },
        { status: "CONFIGURING", at: now + this.delays.forkQueuedMs },
        { status: "READY", at: now + this.delays.forkQueuedMs + this.delays.forkConfiguringMs },
      ],
    };
    // Its database: a copy of the parent's as of now, accepting logins a lag after READY.
    const readyAt = now + this.delays.forkQueuedMs + this.delays.forkConfiguringMs;
    this.attach(fork, await this.databases.fork(parentId, id, fork.initial_password as string, readyAt + this.delays.loginLagMs));
    this.requireProject(projectId).services.set(id, fork);
    return fork;
  }

  private setHA(projectId: string, serviceId: string, body: unknown): SimService {
    const s = this.requireService(projectId, serviceId);
    const b = (body ?? {}) as Record<string, unknown>;
    if (b.replica_count === undefined && b.sync_replica_count === undefined) {
      throw fail(400, "INVALID_HA", "at least one of replica_count, sync_replica_count is required");
    }
    for (const field of ["replica_count", "sync_replica_count"] as const) {
      const v = b[field];
      if (v !== undefined && (typeof v !== "number" || !Number.isInteger(v) || v < 0))
        throw fail(400, "INVALID_HA", `${field}: an integer >= 0`);
    }
    const replicas = (b.replica_count as number | undefined) ?? s.ha_replicas.replica_count;
    const sync = (b.sync_replica_count as number | undefined) ?? s.ha_replicas.sync_replica_count;
    if (replicas > 2) throw fail(400, "INVALID_HA", "replica_count: 0, 1 or 2");
    if (sync > 1 || (sync === 1 && replicas !== 2)) throw fail(400, "INVALID_HA", "sync_replica_count: 1 only with 2 replicas");
    const status = currentStatus(s);
    if (status !== "READY") throw fail(409, "CONFLICT", `service ${serviceId} is ${status}; HA can be changed only when READY`);
    s.ha_replicas = { replica_count: replicas, sync_replica_count: sync };
    const now = Date.now();
    s.timeline = [
      { status: "CONFIGURING", at: now },
      { status: "READY", at: now + this.delays.setHAMs },
    ];
    return s;
  }

  private stopService(projectId: string, serviceId: string): SimService {
    const s = this.requireService(projectId, serviceId);
    const status = currentStatus(s);
    if (status === "PAUSED" || status === "PAUSING") throw fail(400, "INVALID_STATE", `service ${serviceId} is already ${status}`);
    if (BUSY.includes(status)) throw fail(409, "CONFLICT", `service ${serviceId} is ${status}; try again when the operation has finished`);
    const now = Date.now();
    this.databases.stopServer(serviceId);
    s.timeline = [
      { status: "PAUSING", at: now },
      { status: "PAUSED", at: now + this.delays.stopMs },
    ];
    return s;
  }

  /** DELETING, then DELETED (GET and list answer 404 and leave it out); its database and data go. */
  private deleteService(projectId: string, serviceId: string): void {
    const s = this.requireService(projectId, serviceId);
    const status = currentStatus(s);
    if (status === "DELETING") return;
    if (BUSY.includes(status)) throw fail(409, "CONFLICT", `service ${serviceId} is ${status}; try again when the operation has finished`);
    const now = Date.now();
    this.databases.dropServer(serviceId);
    s.timeline = [
      { status: "DELETING", at: now },
      { status: "DELETED", at: now + (this.delays.deleteMs ?? this.delays.stopMs) },
    ];
  }

  /** The in-place changes refuse a service that is busy, or stopped, as the API is expected to. */
  private requireSettled(projectId: string, serviceId: string, what: string): SimService {
    const s = this.requireService(projectId, serviceId);
    const status = currentStatus(s);
    if (BUSY.includes(status)) throw fail(409, "CONFLICT", `service ${serviceId} is ${status}; try again when the operation has finished`);
    if (status !== "READY") throw fail(400, "INVALID_STATE", `service ${serviceId} is ${status}: ${what} needs it READY`);
    return s;
  }

  private renameService(projectId: string, serviceId: string, body: unknown): SimService {
    const name = (body as { name?: unknown } | undefined)?.name;
    if (typeof name !== "string" || name.length < 1 || name.length > 128) throw fail(400, "INVALID_NAME", "name: 1 to 128 characters");
    const s = this.requireSettled(projectId, serviceId, "rename");
    s.name = name;
    return s;
  }

  private resize(projectId: string, serviceId: string, body: unknown): SimService {
    const b = (body ?? {}) as Record<string, unknown>;
    for (const field of ["cpu_millis", "memory_gbs"] as const) {
      if (typeof b[field] !== "string" || !/^[0-9]+$/.test(b[field] as string))
        throw fail(400, "INVALID_RESOURCES", `${field}: required, a string of digits`);
    }
    const s = this.requireSettled(projectId, serviceId, "resize");
    const spec = s.resources[0]?.spec ?? { cpu_millis: 0, memory_gbs: 0, volume_type: "gp3" };
    s.resources = [
      {
        id: s.resources[0]?.id ?? `res-${serviceId}`,
        spec: { ...spec, cpu_millis: Number(b.cpu_millis), memory_gbs: Number(b.memory_gbs) },
      },
    ];
    const now = Date.now();
    s.timeline = [
      { status: "CONFIGURING", at: now },
      { status: "READY", at: now + (this.delays.resizeMs ?? 0) },
    ];
    return s;
  }

  private setEnvironment(projectId: string, serviceId: string, body: unknown): string {
    const environment = (body as { environment?: unknown } | undefined)?.environment;
    if (environment !== "DEV" && environment !== "PROD") throw fail(400, "INVALID_ENVIRONMENT", "environment: DEV or PROD");
    this.requireSettled(projectId, serviceId, "setEnvironment").metadata = { environment };
    return `environment set to ${environment}`;
  }

  /** The tsdbadmin role's new password; the API answers 204 with no body. */
  private async updatePassword(projectId: string, serviceId: string, body: unknown): Promise<void> {
    const password = (body as { password?: unknown } | undefined)?.password;
    if (typeof password !== "string" || password.length < 8) throw fail(400, "INVALID_PASSWORD", "password: at least 8 characters");
    this.requireService(projectId, serviceId).initial_password = password;
    await this.databases?.setPassword(serviceId, password);
  }

  private startService(projectId: string, serviceId: string): SimService {
    const s = this.requireService(projectId, serviceId);
    const status = currentStatus(s);
    if (BUSY.includes(status)) throw fail(409, "CONFLICT", `service ${serviceId} is ${status}; try again when the operation has finished`);
    if (status !== "PAUSED") throw fail(400, "INVALID_STATE", `service ${serviceId} is ${status}, not PAUSED`);
    const now = Date.now();
    s.timeline = [
      { status: "RESUMING", at: now },
      { status: "READY", at: now + this.delays.startMs },
    ];
    // Its database comes back with its data, and takes logins a little after READY, as at a fork.
    this.databases?.startServer(serviceId, now + this.delays.startMs + this.delays.loginLagMs);
    return s;
  }
}

function currentStatus(s: SimService): Status {
  const now = Date.now();
  let status: Status = s.timeline[0]?.status ?? "READY";
  for (const step of s.timeline) if (step.at <= now) status = step.status;
  return status;
}

/** The wire form of a service: its status now, metrics that change on every read, and the initial
 *  password only in the answer to the fork that made it. */
function view(s: SimService, opts: { withMetrics?: boolean; withPassword?: boolean } = {}): Record<string, unknown> {
  const { timeline: _timeline, initial_password, ...rest } = s;
  const out: Record<string, unknown> = { ...rest, status: currentStatus(s) };
  if (opts.withPassword && initial_password) out.initial_password = initial_password;
  if (opts.withMetrics) out.metrics = { memory_mb: 512 + crypto.randomInt(512), milli_cpu: crypto.randomInt(2000), storage_mb: 1024 };
  return out;
}

function send(res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  if (status === 204 || body === undefined) {
    res.writeHead(status, headers).end();
    return;
  }
  res.writeHead(status, { ...headers, "Content-Type": "application/json" }).end(JSON.stringify(body));
}

function readBody(req: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}
