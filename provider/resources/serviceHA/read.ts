// ServiceHA's refresh and import: the counts as the service has them now.
import { isStopped } from "../../api/statuses";
import type { CallContext } from "../../context/context";
import { TigerCloudError } from "../../errors";
import { serviceUnlessGone } from "../../policies/gone";
import type { Imported, Refreshed } from "../define";
import { type HADeclaration, HAInputsSchema, liveCounts } from "./inputs";
import { haStateFromService, type ServiceHAState } from "./state";

/** The counts as the service has them now; nothing when it is gone; the recorded ones while it is paused. */
export async function readHA(ctx: CallContext, id: string, recorded: ServiceHAState): Promise<Refreshed<ServiceHAState> | undefined> {
  const service = await serviceUnlessGone(ctx.client(), recorded.projectId, id);
  if (!service) return undefined;
  if (isStopped(service.status)) {
    ctx.progress(`service ${id} is ${service.status}; its HA is kept as recorded until it runs again`);
    return { id, state: recorded };
  }
  return { id, state: haStateFromService(recorded, service) };
}

/** A service's HA taken under management by its ID (pulumi import, the import option): the counts it has now. */
export async function importHA(ctx: CallContext, id: string, projectId: string): Promise<Imported<HADeclaration, ServiceHAState>> {
  const service = await serviceUnlessGone(ctx.client(), projectId, id);
  if (!service) throw new TigerCloudError(`ServiceHA ${id}: project ${projectId} has no such service to import`);
  const declared = { projectId, serviceId: id, ...liveCounts(service) };
  const { replicaCount: _r, syncReplicaCount: _s, ...recorded } = HAInputsSchema.parse(declared);
  return { state: haStateFromService(recorded, service), inputs: declared };
}
