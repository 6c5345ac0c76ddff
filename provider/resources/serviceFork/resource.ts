// ServiceFork: a fork of a Tiger Cloud service (forkService), awaited until it is usable.
// Destroying it stops the fork by default, or deletes it (onDestroy: "delete"). Its parts, wired
// into the lifecycle every host runs (resources/define.ts): the API work is in create.ts, read.ts,
// update.ts and delete.ts; what preview decides, in preview.ts.
import { defineResource } from "../define";
import { claimFork, recordForkClaims } from "./claims";
import { createFork } from "./create";
import { destroyFork } from "./delete";
import { importFork } from "./import";
import { FORK_DIFF_RULES, ForkInputsSchema } from "./inputs";
import { deletesBeforeReplace, forkReferences, refusedChange, replacedOnChange, warnOfDeletion, warnOfTakeover } from "./preview";
import { readFork } from "./read";
import { FORK_INTERNAL_STATE, FORK_SECRET_OUTPUTS, ServiceForkStateSchema } from "./state";
import { updateFork } from "./update";
import { finishPendingCreate } from "./usable";

/** @internal */
export const serviceFork = defineResource({
  // What a program declares and gets back: one source for the SDKs, the schema and the docs.
  kind: "ServiceFork",
  description:
    "A fork of a Tiger Cloud service (forkService): a copy of a database for a pull request, for tests or for a point-in-time " +
    "investigation, awaited until it is usable. Destroying it stops the fork by default: the fork still exists afterwards, paused, " +
    'data and all. With onDestroy "delete" it is deleted instead, and its data goes.',
  inputs: ForkInputsSchema,
  state: ServiceForkStateSchema,
  internalState: FORK_INTERNAL_STATE,
  secretOutputs: FORK_SECRET_OUTPUTS,

  rules: FORK_DIFF_RULES,

  recordClaims: recordForkClaims,
  warnOfCreate: warnOfTakeover,
  recordKept(ctx, id, olds) {
    claimFork(ctx, olds.projectId, id, ctx.resource, "kept");
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
  owesWork: (olds) => olds.preparePending === true,
  delete: destroyFork,
});
