// The ServiceFork provider: its parts wired into the engine's methods (resources/defineProvider.ts);
// the API work is in lifecycle.ts, with update.ts and delete.ts beside it.
import { requiredField } from "../../rules/state";
import { defineResource, dynamicProvider } from "../defineProvider";
import { createFork, readFork } from "./lifecycle";
import { destroyFork } from "./delete";
import { FORK_DIFF_RULES, ForkInputsSchema } from "./inputs";
import { deletesBeforeReplace, forkReferences, refusedChange, replacedOnChange, warnOfDeletion, warnOfTakeover } from "./preview";
import { ServiceForkStateSchema } from "./state";
import { updateFork } from "./update";
import { finishPendingCreate } from "./usable";
import { claimFork, recordForkClaims } from "./claims";
import { importFork } from "./imported";

/** @internal */
export const serviceFork = defineResource({
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

  read: readFork,
  importFrom: importFork,

  update: updateFork,
  finishPendingCreate,
  delete: destroyFork,
});

/** @internal */
export const serviceForkProvider = dynamicProvider(serviceFork);
