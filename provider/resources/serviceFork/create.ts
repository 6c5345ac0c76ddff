// A fork's create, in order: the fork this resource gets (obtain.ts: made, or taken over instead,
// never a second forkService), claimed for this run at once, then made usable (usable.ts), any
// failure after the fork exists still recording it for the next `up` to finish.
import type { CallContext } from "../../context/context";
import type { Created } from "../define";
import { claimFork } from "./claims";
import { createLimit, type ForkInputs } from "./inputs";
import { refuseUnmaskedProduction } from "./masking";
import { obtainFork } from "./obtain";
import type { ServiceForkState } from "./state";
import { makeUsable } from "./usable";

export async function createFork(ctx: CallContext, inputs: ForkInputs): Promise<Created<ServiceForkState>> {
  const limit = createLimit(ctx, inputs);
  // A fork of a fork descended from PROD: its source's mark, read once the new fork takes logins.
  const mark = await refuseUnmaskedProduction(ctx, inputs, limit.deadline);
  const obtained = await obtainFork(ctx, inputs, limit);
  const id = obtained.fork.service_id;
  // From here on the fork exists: any failure must hand its ID to the engine, and a resource of
  // this run being deleted must not stop it (see delete).
  claimFork(ctx, inputs.projectId, id, ctx.resource, obtained.adopted ? "taken over" : "made");
  return { id, state: await makeUsable(ctx, inputs, obtained, limit, mark) };
}
