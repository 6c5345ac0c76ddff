// The requests and waits on a fork that create, update and delete share: the busy rule for a
// request on it, waiting for READY, stopping it, and setting a new password.
import * as crypto from "crypto";
import type { CallOptions, TigerCloudClient } from "../../api/client";
import type { Service } from "../../api/schemas";
import { GONE, PAUSED, READY, SETTLED, isStopped } from "../../api/statuses";
import type { CallContext } from "../../context/context";
import { BadRequestError, NotFoundError } from "../../errors";
import type { BusySpec, Confirm } from "../../policies/busy";
import { sendWhenSettled } from "../../policies/busy";
import { serviceUnlessGone } from "../../policies/gone";
import { waitForService } from "../../policies/waiting";
import type { Limit } from "../../rules/inputSchemas";

/**
 * Sends a request on a fork under the busy rule (workflows/busy.ts): by default an in-place change,
 * which the fork takes while READY, within updateTimeout.
 */
export function sendToFork<T>(
  ctx: CallContext,
  id: string,
  projectId: string,
  action: string,
  limit: Limit,
  send: (client: TigerCloudClient, call: CallOptions) => Promise<T>,
  { accepts = [READY], client = ctx.client(), confirm }: Partial<Pick<BusySpec, "accepts" | "client">> & { confirm?: Confirm<T> } = {},
): Promise<T> {
  const busy: BusySpec = {
    ctx,
    client,
    projectId,
    serviceId: id,
    role: "fork",
    action,
    accepts,
    deadline: limit.deadline,
    timeoutInput: limit.setBy,
  };
  return sendWhenSettled(busy, (call) => send(client, call), confirm);
}

export const waitReady = (ctx: CallContext, projectId: string, serviceId: string, limit: Limit) =>
  waitForService({
    ctx,
    client: ctx.client(),
    projectId,
    serviceId,
    goal: READY,
    done: (s) => s.status === READY,
    hopeless: GONE,
    timeoutMs: Math.max(0, limit.deadline - Date.now()),
    timeoutInput: limit.setBy,
  });

/**
 * Stops a fork and, unless told not to wait, waits for PAUSED. Idempotent: a fork already stopped
 * is success. Returns the fork as last read, or undefined when the API confirms it is gone.
 */
export async function stopFork(ctx: CallContext, id: string, projectId: string, wait: boolean, limit: Limit): Promise<Service | undefined> {
  const { deadline } = limit;
  const client = ctx.client();
  let answer: Service;
  try {
    answer = await sendToFork(ctx, id, projectId, "stop", limit, (c, call) => c.stop(projectId, id, call), {
      client,
      accepts: SETTLED,
      // A stop whose answer was lost: the fork seen stopping or stopped is the answer.
      confirm: (seen) => (seen && isStopped(seen.status) ? { value: seen } : undefined),
    });
  } catch (err) {
    // 400 is the answer for a service already PAUSED, 404 for one that no longer exists: both
    // are confirmed by reading the fork; any other answer is a real refusal.
    if (!(err instanceof BadRequestError || err instanceof NotFoundError)) throw err;
    const service = await serviceUnlessGone(client, projectId, id, deadline);
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
    timeoutInput: limit.setBy,
  });
  ctx.progress(`fork ${id} is PAUSED`);
  return paused;
}

/**
 * An adopted fork's password was only in the answer that made it: a new one (192 random bits,
 * chosen before the request so a retry sends the same) is set, and the fork read again, so that
 * its connection outputs are built the one way every read builds them. The password is redacted
 * from whatever the client logs or throws.
 */
export async function setNewPassword(
  ctx: CallContext,
  id: string,
  projectId: string,
  limit: Limit,
): Promise<{ read: Service; password: string }> {
  const password = crypto.randomBytes(24).toString("base64url");
  const client = ctx.client({}, [password]);
  await sendToFork(ctx, id, projectId, "set the password of", limit, (c, call) => c.updatePassword(projectId, id, password, call), {
    client,
  });
  ctx.progress(`the password of fork ${id} was reset, as it was adopted (passwordOnAdopt: "reset"); it is in the secret outputs`);
  return { read: await client.getService(projectId, id, { deadline: limit.deadline }), password };
}
