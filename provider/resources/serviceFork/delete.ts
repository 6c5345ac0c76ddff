// Destroying a fork: stop it (onDestroy "stop", the default) or delete it ("delete"), unless
// another resource of this run holds it or would take it over (a rename or a move).
import type { Service } from "../../api/schemas";
import { DELETED, GONE, SETTLED } from "../../api/statuses";
import type { CallContext } from "../../context/context";
import { NotFoundError, TigerCloudError, WaitError } from "../../errors";
import { describeDeclarant } from "../../rules/claims";
import { serviceUnlessGone } from "../../policies/gone";
import { waitForService } from "../../policies/waiting";
import { heldElsewhere, takenOverByReplacement } from "./claims";
import { notAForkOf } from "./identity";
import type { Limit } from "../../rules/inputSchemas";
import { deleteLimit } from "./inputs";
import { sendToFork, stopFork } from "./operations";
import type { ServiceForkState } from "./state";

export async function destroyFork(ctx: CallContext, id: string, state: ServiceForkState): Promise<void> {
  const { projectId, sourceServiceId } = state;
  if (takenOverByReplacement(ctx, id, state)) {
    ctx.progress(
      `fork ${id} was taken over by this resource's replacement, made before this delete (as \`--replace\` makes it); leaving it as it is. ` +
        `For a new fork instead, give the resource the option deleteBeforeReplace: true (the old fork is then destroyed first)`,
    );
    return;
  }
  // Renamed or moved without an alias, this resource is deleted after its successor adopted its fork.
  const holders = heldElsewhere(ctx, id, state);
  if (holders.length > 0) {
    const names = holders.map((h) => describeDeclarant(h.resource)).join(" and ");
    ctx.progress(`fork ${id} is held by ServiceFork ${names} of this program, or will be; leaving it as it is`);
    return;
  }
  const wait = state.waitForReady !== false;
  const limit = deleteLimit(ctx, state);
  const mode = state.onDestroy === "delete" ? "delete" : "stop";
  // Read first, for both modes: only a fork of the declared source is stopped or deleted.
  const service = await serviceUnlessGone(ctx.client(), projectId, id, limit.deadline);
  if (!service) return ctx.progress(`fork ${id} no longer exists; nothing to ${mode}`);
  const notOurs = notAForkOf(service, { projectId, sourceServiceId });
  if (notOurs) {
    throw new TigerCloudError(
      `ServiceFork will not ${mode} service ${id}: ${notOurs}, and destroy (onDestroy: "${mode}") acts only on a fork of sourceServiceId. ` +
        `Nothing was changed. If this resource should let go of it, remove it from state with \`pulumi state delete\`.`,
    );
  }
  if (mode === "delete") return deleteFork(ctx, service, projectId, wait, limit);
  ctx.progress(`stopping fork ${id} (onDestroy: "stop": it is kept, paused, with its data; "delete" would delete it)`);
  await stopFork(ctx, id, projectId, wait, limit);
}

/**
 * Deletes a fork (onDestroy: "delete") and, unless told not to wait, waits until the API says it
 * is DELETED, or no longer knows it (the "gone" rule). A fork already deleting, deleted or gone is
 * success, and so is a 404 to the DELETE when a read then finds it DELETING or gone: a DELETE
 * whose answer was lost, and retried, meets that.
 */
async function deleteFork(ctx: CallContext, service: Service, projectId: string, wait: boolean, limit: Limit): Promise<void> {
  const { deadline } = limit;
  const client = ctx.client();
  const id = service.service_id;
  const gone = () => ctx.progress(`fork ${id} is deleted`);
  // A DELETE whose answer was lost, and the fork then seen DELETING (or gone): the deletion is
  // under way, and the API finishes it; no time may be left to wait for it.
  let answerLost = false;
  if (!GONE.includes(service.status)) {
    ctx.progress(`deleting fork ${id} (onDestroy: "delete": the fork and its data go for good)`);
    try {
      await sendToFork(ctx, id, projectId, "delete", limit, (c, call) => c.deleteService(projectId, id, call), {
        client,
        accepts: SETTLED,
        confirm: (seen) => {
          answerLost = !seen || GONE.includes(seen.status);
          return answerLost ? { value: undefined } : undefined;
        },
      });
    } catch (err) {
      // A 404 (a retried DELETE whose first answer was lost meets one): deleting or gone
      // meanwhile, if a read confirms it.
      if (!(err instanceof NotFoundError)) throw err;
      const now = await serviceUnlessGone(client, projectId, id, deadline);
      if (!now) return gone();
      if (!GONE.includes(now.status)) throw err;
    }
  }
  if (answerLost) return ctx.progress(`fork ${id} is being deleted; the API finishes it`);
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
      timeoutInput: limit.setBy,
    });
  } catch (err) {
    // The API may forget a deleted service rather than say DELETED: its 404, confirmed, is the end too.
    if (!(err instanceof WaitError && err.cause instanceof NotFoundError) || (await serviceUnlessGone(client, projectId, id, deadline)))
      throw err;
  }
  gone();
}
