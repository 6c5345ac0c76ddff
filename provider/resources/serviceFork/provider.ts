// The ServiceFork provider: its parts wired into the engine's methods (resources/defineProvider.ts).
import { requiredField } from "../../rules/state";
import { serviceUnlessGone } from "../../workflows/gone";
import { defineProvider } from "../defineProvider";
import { createFork } from "./create";
import { destroyFork } from "./delete";
import { FORK_DIFF_RULES, ForkInputsSchema } from "./inputs";
import { deletesBeforeReplace, forkReferences, refusedChange, replacedOnChange, warnOfDeletion, warnOfTakeover } from "./preview";
import { inputsAfterRefresh, liveInputs, ServiceForkStateSchema, stateFromService } from "./state";
import { updateFork } from "./update";
import { finishPendingCreate } from "./usable";
import { claimFork, recordForkClaims } from "./claims";

/** @internal */
export const serviceForkProvider = defineProvider({
  kind: "ServiceFork",
  schema: ForkInputsSchema,
  state: ServiceForkStateSchema,
  rules: FORK_DIFF_RULES,

  recordClaims: recordForkClaims,
  warnOfCreate: warnOfTakeover,
  recordKept(ctx, id, olds, resource) {
    claimFork(ctx, requiredField("ServiceFork", id, olds, "projectId"), id, resource);
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
