// Making a fork: the fork this resource gets (obtain.ts: made, or taken over instead, never a
// second forkService), claimed for this run at once, then made usable (usable.ts), with any
// failure after the fork exists still recording it, for the next `up` to finish.
import type { CallContext } from "../../engine/host";
import { declarantOf, type EngineInputs } from "../../rules/inputs";
import type { Created } from "../defineProvider";
import { claimFork } from "./claims";
import { createDeadline, type ForkInputs } from "./inputs";
import { obtainFork } from "./obtain";
import type { ServiceForkState } from "./state";
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
