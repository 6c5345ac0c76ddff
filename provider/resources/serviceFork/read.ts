// A fork's refresh: read back as it is now, or gone when the API confirms it.
import type { CallContext } from "../../context/context";
import { serviceUnlessGone } from "../../policies/gone";
import type { Refreshed } from "../define";
import { inputsAfterRefresh, liveInputs, passwordOf, type ServiceForkState, stateFromService } from "./state";

/** The fork as it is now, or nothing when the API confirms it gone. */
export async function readFork(ctx: CallContext, id: string, recorded: ServiceForkState): Promise<Refreshed<ServiceForkState> | undefined> {
  const service = await serviceUnlessGone(ctx.client(), recorded.projectId, id);
  if (!service) return undefined;
  // Name, size, environment and running state as they are now: a change made in the console is
  // drift, which the next `up` puts back in place.
  const read = { ...stateFromService(recorded, service, passwordOf(recorded)), ...liveInputs(recorded, service) };
  return { id, state: read, inputs: inputsAfterRefresh(recorded, read) };
}
