// Destroying a fork: stop it (onDestroy "stop", the default) or delete it ("delete"), unless
// another resource of this run holds it or would take it over (a rename or a move).
import { DELETED, GONE, SETTLED } from "../../api/statuses";
import { requiredField } from "../../rules/state";
import type { CallContext } from "../../engine/host";
import { NotFoundError, TigerCloudError, WaitError } from "../../errors";
import { describeDeclarant } from "../../rules/claims";
import { serviceUnlessGone } from "../../workflows/gone";
import { WAIT_DEFAULTS, waitForService } from "../../workflows/waiting";
import { heldElsewhere } from "./claims";
import { deadlineIn } from "../../rules/inputSchemas";
import { sendToFork, stopFork } from "./operations";
import type { ServiceForkState } from "./state";

export async function destroyFork(ctx: CallContext, id: string, state: ServiceForkState): Promise<void> {
  const projectId = requiredField("ServiceFork", id, state, "projectId");
  // Renamed or moved without an alias, this resource is deleted after its successor adopted its fork.
  const holders = heldElsewhere(ctx, id, state);
  if (holders.length > 0) {
    const names = holders.map((h) => describeDeclarant(h.resource)).join(" and ");
    ctx.progress(`fork ${id} is held by ServiceFork ${names} of this program, or will be; leaving it as it is`);
    return;
  }
  const wait = state.waitForReady !== false;
  if (state.onDestroy === "delete") {
    await deleteFork(
      ctx,
      id,
      projectId,
      requiredField("ServiceFork", id, state, "sourceServiceId"),
      wait,
      deadlineIn(state.deleteTimeout, WAIT_DEFAULTS.deleteTimeout),
    );
    return;
  }
  ctx.progress(`stopping fork ${id} (onDestroy: "stop": it is kept, paused, with its data; "delete" would delete it)`);
  await stopFork(ctx, id, projectId, wait, deadlineIn(state.deleteTimeout, WAIT_DEFAULTS.deleteTimeout));
}

/**
 * Deletes a fork (onDestroy: "delete") and, unless told not to wait, waits until the API says it
 * is DELETED, or no longer knows it (the "gone" rule). Only a fork of the declared source is
 * deleted: a service without forked_from, or forked from another, is refused and left as it is.
 * A fork already deleting, deleted or gone is success.
 */
async function deleteFork(
  ctx: CallContext,
  id: string,
  projectId: string,
  sourceServiceId: string,
  wait: boolean,
  deadline: number,
): Promise<void> {
  const client = ctx.client();
  const gone = () => ctx.progress(`fork ${id} is deleted`);
  const service = await serviceUnlessGone(client, projectId, id);
  if (!service) return ctx.progress(`fork ${id} no longer exists; nothing to delete`);
  if (service.forked_from?.service_id !== sourceServiceId) {
    const what = service.forked_from
      ? `a fork of ${service.forked_from.service_id}, not of ${sourceServiceId}`
      : "not a fork (no forked_from)";
    throw new TigerCloudError(
      `ServiceFork will not delete service ${id}: it is ${what}, and onDestroy: "delete" deletes only a fork of sourceServiceId. ` +
        `Nothing was deleted. If this resource should let go of it, remove it from state with \`pulumi state delete\`.`,
    );
  }
  if (!GONE.includes(service.status)) {
    ctx.progress(`deleting fork ${id} (onDestroy: "delete": the fork and its data go for good)`);
    try {
      await sendToFork(ctx, id, projectId, "delete", deadline, (c) => c.deleteService(projectId, id), {
        client,
        accepts: SETTLED,
        timeoutInput: "deleteTimeout",
      });
    } catch (err) {
      // A 404: gone meanwhile, if the API confirms it.
      if (!(err instanceof NotFoundError) || (await serviceUnlessGone(client, projectId, id))) throw err;
      return gone();
    }
  }
  if (!wait) return;
  try {
    await waitForService({
      ctx,
      client,
      projectId,
      serviceId: id,
      goal: DELETED,
      done: (s) => s.status === DELETED,
      hopeless: [],
      timeoutMs: Math.max(0, deadline - Date.now()),
      timeoutInput: "deleteTimeout",
    });
  } catch (err) {
    // The API may forget a deleted service rather than say DELETED: its 404, confirmed, is the end too.
    if (!(err instanceof WaitError && err.cause instanceof NotFoundError) || (await serviceUnlessGone(client, projectId, id))) throw err;
  }
  gone();
}
