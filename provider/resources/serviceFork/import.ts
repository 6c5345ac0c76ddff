// A fork taken under management by `pulumi import` or the import option: read by its ID, refused
// unless it is a fork (never a standby, never a service that is not one), and declared as it is.
import { isStopped } from "../../api/statuses";
import type { CallContext } from "../../context/context";
import { TigerCloudError } from "../../errors";
import { serviceUnlessGone } from "../../policies/gone";
import type { Imported } from "../define";
import { notAForkOf } from "./identity";
import { type ForkDeclaration, ForkInputsSchema, IMPORTED_REASON } from "./inputs";
import { type ServiceForkState, stateFromService } from "./state";

export async function importFork(ctx: CallContext, id: string, projectId: string): Promise<Imported<ForkDeclaration, ServiceForkState>> {
  const service = await serviceUnlessGone(ctx.client(), projectId, id);
  if (!service) throw new TigerCloudError(`ServiceFork ${id}: project ${projectId} has no such service to import`);
  const source = service.forked_from?.service_id;
  const refusal = notAForkOf(service, { projectId, sourceServiceId: source ?? "(none)" });
  if (source === undefined || refusal)
    throw new TigerCloudError(`ServiceFork ${id} cannot be imported: ${refusal}. A ServiceFork's destroy stops or deletes its service.`);
  // The fork strategy is history the API does not keep: the inputs and state say LAST_SNAPSHOT,
  // and the state says it was imported, so that no strategy a program says is a change
  // (FORK_DIFF_RULES.howMade), after any later update too.
  const declared = {
    projectId,
    sourceServiceId: source,
    forkStrategy: "LAST_SNAPSHOT" as const,
    ...(service.name === undefined ? {} : { name: service.name }),
    ...(isStopped(service.status) ? { paused: true } : {}),
  };
  const parsed = ForkInputsSchema.safeParse(declared);
  if (!parsed.success)
    throw new TigerCloudError(
      `ServiceFork ${id} cannot be imported as it is: ${parsed.error.issues.map((i) => `${i.path.join(".")} ${i.message}`).join("; ")}`,
    );
  const recorded = parsed.data;
  ctx.progress(`importing fork ${id} ("${service.name ?? ""}", ${service.status}, a fork of ${source}); its password is not known`);
  const state = { ...stateFromService(recorded, service, undefined), adopted: { at: new Date().toISOString(), reason: IMPORTED_REASON } };
  return { state, inputs: declared };
}
