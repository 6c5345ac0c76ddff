// The simulator: a real HTTP server on loopback that plays the Tiger Cloud API over the cloud in
// memory (cloud.ts). In front of it, a gateway: a path the API does not have gets its HTML 404. Who
// may call: a bearer API key and a public/secret key pair (HTTP Basic, as the official CLI sends),
// both of one project, which GET /auth/info names. For tests: fault injection and a request log.
import * as crypto from "crypto";
import * as http from "http";
import type { AddressInfo } from "net";
import { Cloud } from "./cloud";
import { type DatabaseMode, Databases } from "./databases";
import { type Fault, FaultQueue } from "./faults";
import { DEFAULT_SEED, type Delays, fail, HttpFailure, type SeedData } from "./model";
import { type OperationName, type Route, ROUTES } from "./routes";

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
}

/** Where a key was made, as GET /auth/info tells it: fixed, so answers are the same every run. */
const KEY_CREATED = "2026-01-15T10:00:00Z";
const ISSUING_USER = { id: "user-sim01", name: "Simulator User", email: "simulator@example.com" };

export class Simulator extends Cloud {
  readonly apiKey: string;
  readonly keyPair: KeyPair;
  private readonly faults = new FaultQueue();
  private readonly log: LoggedRequest[] = [];
  private readonly server: http.Server;
  private readonly hanging = new Set<http.ServerResponse>();
  private readonly trickles = new Set<NodeJS.Timeout>();
  /** Bytes the last `huge` fault wrote before the client closed (or it finished). */
  hugeBytesWritten = 0;
  private url_ = "";

  constructor(private readonly options: SimulatorOptions = {}) {
    super({ seed: options.seed ?? DEFAULT_SEED, delays: options.delays, renameAnswersVpc: options.renameAnswersVpc });
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
        else send(res, 500, { code: "INTERNAL", message: String(err) });
      });
    });
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

  /** The project the keys belong to: what GET /auth/info names. */
  get keyProjectId(): string {
    return this.options.keyProjectId ?? this.defaults().projectId;
  }

  // ---- faults and the request log (tests) --------------------------------------------------

  /** The next `times` calls of `operation` meet `fault` instead of the API. */
  injectFault(operation: OperationName, fault: Fault, times = 1): void {
    this.faults.inject(operation, fault, times);
  }

  clearFaults(): void {
    this.faults.clear();
  }

  /** Every request logged since the last clearLog (the official CLI's analytics calls are not). */
  requests(operation?: OperationName): LoggedRequest[] {
    return this.log.filter((r) => operation === undefined || r.operation === operation);
  }

  clearLog(): void {
    this.log.length = 0;
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
      if (this.faults.nextIs(operation, "slow")) {
        const { ms } = this.faults.take(operation) as { ms: number };
        await new Promise((resolve) => setTimeout(resolve, ms));
      }
      if (this.faults.nextIs(operation, "after")) {
        const since = this.faults.nextSince(operation);
        const { operation: first, timeoutMs } = this.faults.take(operation) as { operation: OperationName; timeoutMs: number };
        const answered = () => this.log.some((r) => r.operation === first && r.at >= since && r.status !== undefined);
        for (const deadline = Date.now() + timeoutMs; !answered() && Date.now() < deadline;) {
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
      }
      if (this.faults.nextIs(operation, "echo")) {
        const { status, html } = this.faults.take(operation) as { status: number; html?: boolean };
        const message = `refused: the request was ${raw}`;
        if (html) res.writeHead(status, { "Content-Type": "text/html" }).end(`<html><body><pre>${message}</pre></body></html>`);
        else send(res, status, { code: "REFUSED", message });
        return;
      }
      const lostAnswer = this.faults.nextIs(operation, "afterApplying");
      if (!lostAnswer && this.applyFault(operation, res)) return;
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
      if (lostAnswer) {
        const fault = this.faults.take(operation) as { status: number };
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
    return this.dispatch(operation, projectId, id, body);
  }

  private keyProject(): { id: string; name: string; plan_type: string } {
    return { id: this.keyProjectId, name: this.projectName(this.keyProjectId), plan_type: "FREE" };
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

  private applyFault(operation: OperationName, res: http.ServerResponse): boolean {
    const f = this.faults.take(operation);
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
}

function send(res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  if (status === 204 || body === undefined) {
    res.writeHead(status, headers).end();
    return;
  }
  res.writeHead(status, { ...headers, "Content-Type": "application/json" }).end(JSON.stringify(body));
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
