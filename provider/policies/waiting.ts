// Waiting for a service to reach a status: polling with backoff, within a deadline.
import type { Service } from "../api/schemas";
import type { TigerCloudClient } from "../api/client";
import { isTransient, NotFoundError, WaitError } from "../errors";
import { secondsSince, sleep } from "../time";
import type { CallContext, PollOptions } from "../context/context";
import { messageOf } from "../text";

/** Polling and the default timeouts of every resource: every number in one place. */
export const WAIT_DEFAULTS = Object.freeze({
  firstPollMs: 1000,
  maxPollMs: 15_000,
  /** Between polls, this share of the time waited so far: a status change is seen within 1 s + 5%. */
  pollShare: 0.05,
  createTimeout: "30m",
  updateTimeout: "30m",
  deleteTimeout: "10m",
});

export interface WaitSpec {
  ctx: CallContext;
  client: TigerCloudClient;
  projectId: string;
  serviceId: string;
  /** What is awaited, for messages: "READY", "PAUSED with 2 replicas"… */
  goal: string;
  done: (s: Service) => boolean;
  /** Statuses from which the goal cannot be reached. */
  hopeless: readonly string[];
  timeoutMs: number;
  /** The input that sets timeoutMs, named in the timeout error. */
  timeoutInput: string;
}

/**
 * Polls GET service with backoff until `done`. Transient failures (connection, timeout, 5xx, 429)
 * keep polling; a 404 or a hopeless status fails at once. Each poll gets only the time left, so
 * the wait ends within its timeout plus at most one request's timeout.
 */
export async function waitForService(spec: WaitSpec): Promise<Service> {
  const { progress } = spec.ctx;
  const poll = { ...WAIT_DEFAULTS, ...spec.ctx.options.poll };
  const started = Date.now();
  const deadline = started + spec.timeoutMs;
  let lastStatus = "";
  let lastProblem: string;
  for (;;) {
    try {
      const service = await spec.client.getService(spec.projectId, spec.serviceId, { deadline });
      if (spec.done(service)) return service;
      const status = service.status;
      if (spec.hopeless.includes(status)) {
        throw new WaitError(`Service ${spec.serviceId} is ${status} while waiting for it to be ${spec.goal}; it will not get there.`);
      }
      if (status !== lastStatus)
        progress(`service ${spec.serviceId} is ${status}; waiting for ${spec.goal} (${secondsSince(started)} s elapsed)`);
      lastStatus = status;
      lastProblem = "";
    } catch (err) {
      if (err instanceof NotFoundError) {
        const why = err.apiAnswered ? "the API answers that it does not exist (404)" : err.message;
        throw new WaitError(`Service ${spec.serviceId} could not be read while waiting for it to be ${spec.goal}: ${why}`, { cause: err });
      }
      if (!isTransient(err)) throw err;
      lastProblem = messageOf(err);
      progress(`reading service ${spec.serviceId} failed, still waiting: ${lastProblem}`);
    }
    const left = deadline - Date.now();
    if (left <= 0) {
      // A read squeezed into the deadline's last moments often fails for want of time: the status
      // last seen still says how far the service got.
      const lastSeen = lastStatus ? `; it was last seen ${lastStatus}` : "";
      const seen = lastProblem ? `the last read failed: ${lastProblem}${lastSeen}` : `it is ${lastStatus}`;
      throw new WaitError(
        `Timed out after ${secondsSince(started)} s waiting for service ${spec.serviceId} to be ${spec.goal}; ${seen}. ` +
          `Raise ${spec.timeoutInput}, or set waitForReady: false.`,
      );
    }
    await sleep(Math.min(nextPollDelay(Date.now() - started, poll), left));
  }
}

/**
 * The pause before the next poll, after `elapsedMs` of waiting: every second at first, then 5% of
 * the time waited so far, at most 15 s. So a wait that ends after T notices within 1 s + 5% of T,
 * and a 10-minute wait costs about 90 reads.
 */
export function nextPollDelay(elapsedMs: number, poll: PollOptions = WAIT_DEFAULTS): number {
  return Math.min(poll.maxPollMs, Math.max(poll.firstPollMs, poll.pollShare * elapsedMs));
}
