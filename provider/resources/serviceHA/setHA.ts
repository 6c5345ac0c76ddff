// ServiceHA's setHA, at create, update and destroy: once the service can take it, then the wait
// for the counts; at destroy, taking the replicas off, unless another resource declares them.
import type { Service, SetHARequest } from "../../api/schemas";
import { READY, STOPPED_OR_GONE, isStopped } from "../../api/statuses";
import type { CallContext } from "../../context/context";
import { WaitError } from "../../errors";
import { declaredBy } from "../../rules/claims";
import { type Limit, limitOf } from "../../rules/inputSchemas";
import { partialFailure } from "../../rules/state";
import { sendWhenSettled } from "../../policies/busy";
import { serviceUnlessGone } from "../../policies/gone";
import { WAIT_DEFAULTS, waitForService } from "../../policies/waiting";
import { describeClaims, haOf } from "./claims";
import { describeCounts, type HAInputs, hasCounts } from "./inputs";
import { haStateFromService, type ServiceHAState } from "./state";

/** What setting HA needs: the service, the counts, whether to wait, and by when. */
type HATarget = Pick<HAInputs, "projectId" | "serviceId" | "replicaCount" | "syncReplicaCount" | "waitForReady"> & {
  ctx: CallContext;
  /** One limit for the whole change: waiting for READY, setHA, waiting for the counts. */
  limit: Limit;
};

const waitUntil = (target: HATarget, goal: string, done: (s: Service) => boolean) =>
  waitForService({
    ctx: target.ctx,
    client: target.ctx.client(),
    projectId: target.projectId,
    serviceId: target.serviceId,
    goal,
    done,
    hopeless: STOPPED_OR_GONE,
    timeoutMs: Math.max(0, target.limit.deadline - Date.now()),
    timeoutInput: target.limit.setBy,
  });

/** setHA once the service can take it. */
async function setHAWhenReady(target: HATarget): Promise<Service> {
  const { ctx } = target;
  const client = ctx.client();
  const { projectId, serviceId } = target;
  // A service still being created or reconfigured (a fork from the same program with
  // waitForReady false, say) refuses setHA: wait for READY first.
  const service = await client.getService(projectId, serviceId, { deadline: target.limit.deadline });
  if (isStopped(service.status)) {
    // Its HA cannot change until it runs again: say so now rather than wait out the timeout.
    throw new WaitError(
      `Service ${serviceId} is ${service.status}: HA cannot be changed while it is paused. ` +
        `Resume it first (paused: false on its ServiceFork, or start it in the console), then run \`pulumi up\` again.`,
    );
  }
  if (service.status !== READY) await waitUntil(target, "READY before changing HA", (s) => s.status === READY);
  const body: SetHARequest = {};
  if (target.replicaCount !== undefined) body.replica_count = target.replicaCount;
  if (target.syncReplicaCount !== undefined) body.sync_replica_count = target.syncReplicaCount;
  ctx.progress(`setting HA of service ${serviceId} to ${describeCounts(target)}`);
  const busy = { ctx, client, projectId, serviceId, role: "service", action: "change HA", accepts: [READY] };
  return sendWhenSettled({ ...busy, deadline: target.limit.deadline, timeoutInput: target.limit.setBy }, (call) =>
    client.setHA(projectId, serviceId, body, call),
  );
}

/** Unless told not to, wait until the service is READY with the counts. */
async function awaitHA(target: HATarget, answer: Service): Promise<Service> {
  if (!target.waitForReady) return answer;
  const withCounts = await waitUntil(target, `READY with ${describeCounts(target)}`, (s) => s.status === READY && hasCounts(target)(s));
  target.ctx.progress(`service ${target.serviceId} is READY with ${describeCounts(target)}`);
  return withCounts;
}

/** setHA then wait; once setHA succeeded, a failure still records the resource. */
export async function applyHA(ctx: CallContext, id: string, inputs: HAInputs): Promise<ServiceHAState> {
  const target: HATarget = { ...inputs, ctx, limit: limitOf(ctx, inputs.updateTimeout, WAIT_DEFAULTS.updateTimeout, "updateTimeout") };
  const answer = await setHAWhenReady(target);
  try {
    return haStateFromService(inputs, await awaitHA(target, answer));
  } catch (err) {
    throw partialFailure(id, haStateFromService(inputs, answer), err);
  }
}

/** Takes the replicas off at destroy, unless the service is gone, stopped, or its HA is declared by another resource. */
export async function removeHA(ctx: CallContext, id: string, recorded: ServiceHAState): Promise<void> {
  const { projectId } = recorded;
  // One limit for the whole destroy, its first read included.
  const limit = limitOf(ctx, recorded.deleteTimeout, WAIT_DEFAULTS.deleteTimeout, "deleteTimeout");
  const service = await serviceUnlessGone(ctx.client(), projectId, id, limit.deadline);
  if (!service) {
    ctx.progress(`service ${id} no longer exists; no HA to remove`);
    return;
  }
  const { replica_count = 0, sync_replica_count = 0 } = service.ha_replicas ?? {};
  if (replica_count === 0 && sync_replica_count === 0) return;
  // Renamed or moved without an alias, this resource is deleted after its successor set the same HA.
  const successors = declaredBy(ctx, haOf(projectId, id), ctx.resource);
  if (successors.length > 0) {
    ctx.progress(
      `HA of service ${id} is now declared by ServiceHA ${describeClaims(successors)}; leaving it at ` +
        `${describeCounts({ replicaCount: replica_count, syncReplicaCount: sync_replica_count })}`,
    );
    return;
  }
  if (STOPPED_OR_GONE.includes(service.status)) {
    ctx.progress(`service ${id} is ${service.status}; its HA replicas cannot be changed now and are left as they are`);
    return;
  }
  const noHA: HATarget = {
    ctx,
    projectId,
    serviceId: id,
    replicaCount: 0,
    syncReplicaCount: 0,
    waitForReady: recorded.waitForReady !== false,
    limit,
  };
  await awaitHA(noHA, await setHAWhenReady(noHA));
}
