// Fault injection: what a test makes the next requests of an operation meet instead of the API.
// What a fault does to a request, before and after the operation, is decided here alone; the
// server asks before carrying a request out, and again before sending its answer.
import type * as http from "http";
import { send } from "./responses";
import type { OperationName } from "./routes";

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
   *  with status 0 a dropped connection (a fork made, its 202 never seen), or "hang": no answer
   *  ever comes (a DELETE applied, its answer stuck in a proxy). */
  | { kind: "afterApplying"; status: number | "hang" }
  /** The request waits this long, then is carried out and answered as usual (a slow network). */
  | { kind: "slow"; ms: number }
  /** The request waits until the API has answered a request of `operation` that came in since
   *  the fault was injected (at most `timeoutMs`), then is carried out as usual: a race's order
   *  made certain, whatever the load on the machine. */
  | { kind: "after"; operation: OperationName; timeoutMs: number }
  /** This status, and a message that quotes the request's body as it came (an API that echoes
   *  what it refused): the API's JSON error object, or with `html` a gateway's page. */
  | { kind: "echo"; status: number; html?: boolean };

/** What the server does with a request, once its faults have had their turn before the operation. */
export type FaultPlan =
  /** A fault answered it (or dropped or hung it): the API never sees it. */
  | "answered"
  | "carry out"
  /** Carry it out, then ask loseAnswer before answering (an `afterApplying` fault waits). */
  | "carry out, then lose the answer";

const HUGE_CHUNK = Buffer.alloc(64 * 1024, " ");

/** The faults that answer a request instead of the API. */
const ANSWERING = ["status", "drop", "hang", "malformed", "trickle", "huge", "echo"] as const;

interface Waiting {
  fault: Fault;
  remaining: number;
  /** When it was injected. */
  since: number;
}

/** The faults waiting per operation, each for its next `times` calls, and what they keep open. */
export class Faults {
  private readonly waiting = new Map<OperationName, Waiting[]>();
  private readonly hanging = new Set<http.ServerResponse>();
  private readonly trickles = new Set<NodeJS.Timeout>();
  /** Bytes the last `huge` fault wrote before the client closed (or it finished). */
  hugeBytesWritten = 0;
  /** Whether a huge body is still being written (until the client closes or it is all sent). */
  hugeStreaming = false;

  /** `answeredSince`: whether a request of `operation` that came in at `since` or later has been answered (the log's to say). */
  constructor(private readonly answeredSince: (operation: OperationName, since: number) => boolean) {}

  inject(operation: OperationName, fault: Fault, times = 1): void {
    const list = this.waiting.get(operation) ?? [];
    list.push({ fault, remaining: times, since: Date.now() });
    this.waiting.set(operation, list);
  }

  clear(): void {
    this.waiting.clear();
  }

  /**
   * Before the operation: a `slow` fault waits, then an `after` fault waits for the other
   * operation's answer; then a fault that answers instead of the API does so. A request may meet
   * one of each, in that order.
   */
  async before(operation: OperationName, raw: string, res: http.ServerResponse): Promise<FaultPlan> {
    const slow = this.take(operation, ["slow"]);
    if (slow) await sleep(slow.fault.ms);
    const after = this.take(operation, ["after"]);
    if (after) {
      const { operation: first, timeoutMs } = after.fault;
      for (const deadline = Date.now() + timeoutMs; !this.answeredSince(first, after.since) && Date.now() < deadline;) await sleep(20);
    }
    if (this.next(operation)?.kind === "afterApplying") return "carry out, then lose the answer";
    const instead = this.take(operation, ANSWERING);
    if (!instead) return "carry out";
    this.answerInstead(instead.fault, raw, res);
    return "answered";
  }

  /** After the operation was carried out: an `afterApplying` fault loses its answer (true: send nothing). */
  loseAnswer(operation: OperationName, res: http.ServerResponse): boolean {
    const lost = this.take(operation, ["afterApplying"]);
    if (!lost) return false;
    if (lost.fault.status === "hang") this.hanging.add(res);
    else if (lost.fault.status === 0) res.socket?.destroy();
    else res.writeHead(lost.fault.status).end();
    return true;
  }

  /** Ends what faults hold open: hung requests and trickles (the server is stopping). */
  release(): void {
    for (const timer of this.trickles) clearInterval(timer);
    this.trickles.clear();
    for (const res of this.hanging) res.destroy();
  }

  private next(operation: OperationName): Fault | undefined {
    return this.waiting.get(operation)?.[0]?.fault;
  }

  /** Takes the next fault of an operation off its list, if it is of one of these kinds. */
  private take<K extends Fault["kind"]>(
    operation: OperationName,
    kinds: readonly K[],
  ): { fault: Extract<Fault, { kind: K }>; since: number } | undefined {
    const list = this.waiting.get(operation);
    const next = list?.[0];
    if (!list || !next || !(kinds as readonly string[]).includes(next.fault.kind)) return undefined;
    if (--next.remaining <= 0) list.shift();
    return { fault: next.fault as Extract<Fault, { kind: K }>, since: next.since };
  }

  private answerInstead(f: Extract<Fault, { kind: (typeof ANSWERING)[number] }>, raw: string, res: http.ServerResponse): void {
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
        return;
      }
      case "drop":
        res.socket?.destroy();
        return;
      case "hang":
        this.hanging.add(res);
        return;
      case "malformed":
        res.writeHead(200, { "Content-Type": "application/json" }).end('{"service_id": "svc-');
        return;
      case "trickle": {
        res.writeHead(200, { "Content-Type": "application/json" });
        res.flushHeaders();
        const timer = setInterval(() => res.write(" "), f.intervalMs);
        this.trickles.add(timer);
        res.on("close", () => {
          clearInterval(timer);
          this.trickles.delete(timer);
        });
        return;
      }
      case "huge":
        void this.streamHuge(res, f.bytes);
        return;
      case "echo": {
        const message = `refused: the request was ${raw}`;
        if (f.html) res.writeHead(f.status, { "Content-Type": "text/html" }).end(`<html><body><pre>${message}</pre></body></html>`);
        else send(res, f.status, { code: "REFUSED", message });
        return;
      }
    }
  }

  /** Writes `bytes` bytes, waiting for the client to drain each full buffer, and stops when it closes. */
  private async streamHuge(res: http.ServerResponse, bytes: number): Promise<void> {
    this.hugeBytesWritten = 0;
    this.hugeStreaming = true;
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
    this.hugeStreaming = false;
  }
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
