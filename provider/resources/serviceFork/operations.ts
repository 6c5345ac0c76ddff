// The requests and waits on a fork that create, update and delete share: the busy rule for a
// request on it, waiting for READY, stopping it, and waiting for a login to its database.
import type { Service } from "../../api/schemas";
import { GONE, PAUSED, READY, SETTLED, isStopped } from "../../api/statuses";
import type { CallContext } from "../../engine/host";
import { BadRequestError, NotFoundError, TigerCloudError } from "../../errors";
import type { BusySpec } from "../../workflows/busy";
import { sendWhenSettled } from "../../workflows/busy";
import { waitForLogin } from "../../workflows/connection";
import { serviceUnlessGone } from "../../workflows/gone";
import { waitForService } from "../../workflows/waiting";
import { createDeadline, type ForkInputs } from "./inputs";

/** The busy rule (workflows/busy.ts) for a request on a fork: by default an in-place change. */
export const busyFork = (
  ctx: CallContext,
  id: string,
  projectId: string,
  action: string,
  deadline: number,
  {
    accepts = [READY],
    timeoutInput = "updateTimeout",
    client = ctx.client(),
  }: Partial<Pick<BusySpec, "accepts" | "timeoutInput" | "client">> = {},
): BusySpec => ({ ctx, client, projectId, serviceId: id, role: "fork", action, accepts, deadline, timeoutInput });

export const waitReady = (ctx: CallContext, inputs: ForkInputs, serviceId: string, deadline = createDeadline(inputs)) =>
  waitForService({
    ctx,
    client: ctx.client(),
    projectId: inputs.projectId,
    serviceId,
    goal: READY,
    done: (s) => s.status === READY,
    hopeless: GONE,
    timeoutMs: Math.max(0, deadline - Date.now()),
    timeoutInput: "createTimeout",
  });

/**
 * Stops a fork and, unless told not to wait, waits for PAUSED. Idempotent: a fork already stopped
 * is success. Returns the fork as last read, or undefined when the API confirms it is gone.
 */
export async function stopFork(
  ctx: CallContext,
  id: string,
  projectId: string,
  wait: boolean,
  deadline: number,
): Promise<Service | undefined> {
  const client = ctx.client();
  let answer: Service;
  try {
    const busy = busyFork(ctx, id, projectId, "stop", deadline, { client, accepts: SETTLED, timeoutInput: "deleteTimeout" });
    answer = await sendWhenSettled(busy, () => client.stop(projectId, id));
  } catch (err) {
    // 400 is the answer for a service already PAUSED, 404 for one that no longer exists: both
    // are confirmed by reading the fork; any other answer is a real refusal.
    if (!(err instanceof BadRequestError || err instanceof NotFoundError)) throw err;
    const service = await serviceUnlessGone(client, projectId, id);
    if (!service) {
      ctx.progress(`fork ${id} no longer exists; nothing to stop`);
      return undefined;
    }
    if (!isStopped(service.status)) throw err;
    ctx.progress(`fork ${id} is already ${service.status}`);
    answer = service;
  }
  if (!wait) return answer;
  const paused = await waitForService({
    ctx,
    client,
    projectId,
    serviceId: id,
    goal: PAUSED,
    done: (s) => s.status === PAUSED,
    hopeless: GONE,
    timeoutMs: Math.max(0, deadline - Date.now()),
    timeoutInput: "deleteTimeout",
  });
  ctx.progress(`fork ${id} is PAUSED`);
  return paused;
}

/** Where a fork's database takes logins, and the password to try (none: a refused login proves it up). */
export interface LoginTarget {
  host: string | undefined;
  port: number | undefined;
  password: string | undefined;
}

/** Waits until the fork's database takes a login (workflows/connection.ts). */
export async function awaitLogin(ctx: CallContext, id: string, { host, port, password }: LoginTarget, deadline: number): Promise<void> {
  if (host === undefined || port === undefined) {
    throw new TigerCloudError(
      `Fork ${id} is READY but the API gives no endpoint to log in to; set readyWhen: "status" to wait for READY only.`,
    );
  }
  await waitForLogin({ ctx, serviceId: id, host, port, password: password || undefined, deadline, timeoutInput: "createTimeout" });
}
