// Fault injection: what a test makes the next requests of an operation meet instead of the API.
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

/** The faults waiting per operation, each for its next `times` calls. */
export class FaultQueue {
  private readonly faults = new Map<OperationName, { fault: Fault; remaining: number; since: number }[]>();

  inject(operation: OperationName, fault: Fault, times = 1): void {
    const list = this.faults.get(operation) ?? [];
    list.push({ fault, remaining: times, since: Date.now() });
    this.faults.set(operation, list);
  }

  clear(): void {
    this.faults.clear();
  }

  nextIs(operation: OperationName, kind: Fault["kind"]): boolean {
    return this.faults.get(operation)?.[0]?.fault.kind === kind;
  }

  /** When the next fault of an operation was injected (0 when none waits). */
  nextSince(operation: OperationName): number {
    return this.faults.get(operation)?.[0]?.since ?? 0;
  }

  /** Takes the next fault of an operation off its list. */
  take(operation: OperationName): Fault | undefined {
    const list = this.faults.get(operation);
    const next = list?.[0];
    if (!list || !next) return undefined;
    if (--next.remaining <= 0) list.shift();
    return next.fault;
  }
}
