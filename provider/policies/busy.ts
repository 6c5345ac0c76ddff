// The busy rule, once for every operation on a service: a service in the middle of an operation
// (its own, or one started elsewhere) refuses a new one with 409, and does nothing. That refusal
// is not a failure: wait until the service settles, then send the request again, all within the
// caller's deadline. Only the API's own 409 (its JSON error body) counts, because it proves that
// nothing was done; so even forkService may be sent again after it, and only after it.
import type { Service } from "../api/schemas";
import { GONE, IN_TRANSITION } from "../api/statuses";
import type { CallOptions, TigerCloudClient } from "../api/client";
import { ConflictError, ConnectionError, isTransient, RateLimitError, WaitError } from "../errors";
import { serviceUnlessGone } from "./gone";
import type { CallContext } from "../context/context";
import { secondsSince, sleep } from "../time";
import { WAIT_DEFAULTS, waitForService } from "./waiting";
import { messageOf } from "../text";

export interface BusySpec {
  ctx: CallContext;
  client: TigerCloudClient;
  projectId: string;
  serviceId: string;
  /** The service's part, for messages: "source" (of a fork) or "service". */
  role: string;
  /** What the request does, for messages: "fork", "change HA", "stop". */
  action: string;
  /** Statuses in which the service takes the request. */
  accepts: readonly string[];
  deadline: number;
  /** The input that sets the deadline, named in the timeout error. */
  timeoutInput: string;
}

/** A request's answer may be lost, not its work: the most of the time left kept for one look, and the least. */
const LOOK_MS = { most: 10_000, least: 1000 };

/**
 * The deadline a request of an operation must end by: the operation's, less room for one look
 * (a quarter of the time left, 1 to 10 s), so that an answer that hangs still leaves time to read
 * whether the work was done.
 */
export function answerBy(deadline: number): number {
  const left = deadline - Date.now();
  return deadline - Math.min(LOOK_MS.most, Math.max(LOOK_MS.least, left / 4));
}

/**
 * What a look at the service says of a request whose answer was lost (undefined: the API says it
 * is gone): `{ value }` when the work is seen done, which then stands for the answer.
 */
export type Confirm<T> = (service: Service | undefined) => { value: T } | undefined;

/**
 * Sends the request; on the API's 409 from a busy service, waits until it settles and sends again.
 * `send` gets the deadline to pass to its request, which leaves room for one look before the
 * operation's: when the answer is lost (a timeout, a dropped connection, a 5xx) and `confirm` is
 * given, the service is read once, and the work seen done is success.
 */
export async function sendWhenSettled<T>(spec: BusySpec, send: (call: CallOptions) => Promise<T>, confirm?: Confirm<T>): Promise<T> {
  const started = Date.now();
  const who = `${spec.role} ${spec.serviceId}`;
  const stillBusy = (service: Service, cause: unknown) =>
    new WaitError(
      `The ${spec.role} service ${spec.serviceId} was still busy (it was ${service.status}) after ${secondsSince(started)} s of waiting, ` +
        `the whole of ${spec.timeoutInput}; the API refused to ${spec.action} it meanwhile, so nothing was done. ` +
        `Raise ${spec.timeoutInput}, or run again once the operation on ${spec.serviceId} has finished.`,
      { cause },
    );
  let raced = false;
  for (;;) {
    let refusal: ConflictError;
    try {
      return await send({ deadline: answerBy(spec.deadline) });
    } catch (err) {
      if (!(err instanceof ConflictError) || !err.apiAnswered) {
        const seen = confirm ? await doneDespite(spec, err, confirm) : undefined;
        if (seen) return seen.value;
        throw err;
      }
      refusal = err;
    }
    const service = await spec.client.getService(spec.projectId, spec.serviceId, { deadline: spec.deadline });
    const settled = spec.accepts.includes(service.status);
    // A 409 from a settled service (but for one that just settled) is a real refusal.
    if (!IN_TRANSITION.includes(service.status) && !settled) throw refusal;
    if (Date.now() >= spec.deadline) throw stillBusy(service, refusal);
    if (settled) {
      // The refusal raced with the end of an operation: pause a poll's length, then send again,
      // once. A second 409 from a settled service is a refusal that is not about being busy.
      if (raced) throw refusal;
      raced = true;
      await sleep(Math.min(spec.ctx.options.poll?.firstPollMs ?? WAIT_DEFAULTS.firstPollMs, spec.deadline - Date.now()));
      continue;
    }
    spec.ctx.progress(`${who} is ${service.status}; waiting to ${spec.action} (the API refused: it is busy with another operation)`);
    try {
      await waitForService({
        ctx: spec.ctx,
        client: spec.client,
        projectId: spec.projectId,
        serviceId: spec.serviceId,
        goal: spec.accepts.join(" or "),
        done: (s) => spec.accepts.includes(s.status),
        hopeless: GONE,
        timeoutMs: Math.max(0, spec.deadline - Date.now()),
        timeoutInput: spec.timeoutInput,
      });
    } catch (err) {
      if (Date.now() < spec.deadline) throw err;
      throw stillBusy(service, err);
    }
    spec.ctx.progress(`${who} has settled; sending the request to ${spec.action} again`);
  }
}

/** One look at the service after a lost answer: the work, if it is seen done. Nothing when the failure said nothing was sent. */
async function doneDespite<T>(spec: BusySpec, err: unknown, confirm: Confirm<T>): Promise<{ value: T } | undefined> {
  const notSent = err instanceof RateLimitError || (err instanceof ConnectionError && err.connectionRefused);
  if (!isTransient(err) || notSent) return undefined;
  let service: Service | undefined;
  try {
    service = await serviceUnlessGone(spec.client, spec.projectId, spec.serviceId, spec.deadline);
  } catch {
    return undefined; // the look failed too: the request's own failure is the one to report
  }
  const seen = confirm(service);
  if (seen)
    spec.ctx.progress(
      `the answer to the request to ${spec.action} ${spec.role} ${spec.serviceId} was lost (${messageOf(err)}), ` +
        `but the ${spec.role} is ${service ? service.status : "gone"}: it was done`,
    );
  return seen;
}
