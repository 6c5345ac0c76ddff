// A fork's create and read. The create, in order: the fork this resource gets (obtain.ts: made, or
// taken over instead, never a second forkService), claimed for this run at once, then made usable
// (usable.ts), any failure after the fork exists still recording it for the next `up` to finish.
// In-place changes are in update.ts, destroy in delete.ts.
import type { CallContext } from "../../engine/host";
import { declarantOf, type EngineInputs } from "../../rules/inputs";
import { requiredField } from "../../rules/state";
import { serviceUnlessGone } from "../../workflows/gone";
import type { Created, Refreshed } from "../defineProvider";
import { claimFork } from "./claims";
import { createDeadline, type ForkInputs } from "./inputs";
import { obtainFork } from "./obtain";
import { inputsAfterRefresh, liveInputs, type ServiceForkState, stateFromService } from "./state";
import { makeUsable } from "./usable";

export async function createFork(ctx: CallContext, inputs: ForkInputs, news: EngineInputs): Promise<Created<ServiceForkState>> {
  const deadline = createDeadline(inputs);
  const obtained = await obtainFork(ctx, inputs, deadline);
  const id = obtained.fork.service_id;
  // From here on the fork exists: any failure must hand its ID to the engine, and a resource of
  // this run being deleted must not stop it (see delete).
  claimFork(ctx, inputs.projectId, id, declarantOf(news));
  return { id, outs: await makeUsable(ctx, inputs, news, obtained, deadline) };
}

/** The fork as it is now, or nothing when the API confirms it gone. */
export async function readFork(ctx: CallContext, id: string, recorded: ServiceForkState): Promise<Refreshed<ServiceForkState>> {
  const service = await serviceUnlessGone(ctx.client(), requiredField("ServiceFork", id, recorded, "projectId"), id);
  if (!service) return {};
  // Name, size, environment and running state as they are now: a change made in the console is
  // drift, which the next `up` puts back in place.
  const read = { ...stateFromService(recorded, service, recorded.initialPassword), ...liveInputs(recorded, service) };
  return { id, props: read, inputs: inputsAfterRefresh(recorded, read) };
}
