// The ServiceFork provider: its parts wired into the engine's methods (resources/defineProvider.ts).
import { requiredField } from "../../rules/state";
import { recordClaim } from "../../rules/claims";
import { serviceUnlessGone } from "../../workflows/gone";
import { defineProvider } from "../defineProvider";
import { createFork, finishPendingCreate } from "./create";
import { destroyFork } from "./delete";
import { forkHeld } from "./identity";
import { FORK_DIFF_RULES, ForkInputsSchema } from "./inputs";
import {
  deletesBeforeReplace,
  forkReferences,
  recordForkClaims,
  refusedChange,
  replacedOnChange,
  warnOfDeletion,
  warnOfTakeover,
} from "./preview";
import { inputsAfterRefresh, liveInputs, ServiceForkStateSchema, stateFromService } from "./state";
import { updateFork } from "./update";

/** @internal */
export const serviceForkProvider = defineProvider({
  kind: "ServiceFork",
  schema: ForkInputsSchema,
  state: ServiceForkStateSchema,
  rules: FORK_DIFF_RULES,

  recordClaims: recordForkClaims,
  warnOfCreate: warnOfTakeover,
  recordKept(id, olds, resource) {
    recordClaim(forkHeld(requiredField("ServiceFork", id, olds, "projectId"), id), resource, true);
  },
  references: forkReferences,
  keysThatReplace: replacedOnChange,
  refusalOfChange: refusedChange,
  deleteBeforeReplace: deletesBeforeReplace,
  warnOfReplacement: warnOfDeletion,

  create: createFork,

  async read(ctx, id, recorded) {
    const service = await serviceUnlessGone(ctx.client(), requiredField("ServiceFork", id, recorded, "projectId"), id);
    if (!service) return {};
    // Name, size, environment and running state as they are now: a change made in the console is
    // drift, which the next `up` puts back in place.
    const read = { ...stateFromService(recorded, service, recorded.initialPassword), ...liveInputs(recorded, service) };
    return { id, props: read, inputs: inputsAfterRefresh(recorded, read) };
  },

  update: updateFork,
  finishPendingCreate,
  delete: destroyFork,
});
