// ServiceFork: a fork of a Tiger Cloud service (forkService), awaited until it is usable.
// Destroying it stops the fork by default, or deletes it (onDestroy: "delete"). Its parts, wired
// into the lifecycle every host runs (resources/define.ts): the API work is in create.ts, read.ts,
// update.ts and delete.ts; what preview decides, in preview.ts.
import { InvalidInputError } from "../../errors";
import { defineResource } from "../define";
import { claimFork, recordForkClaims } from "./claims";
import { createFork } from "./create";
import { destroyFork } from "./delete";
import { importFork } from "./import";
import { FORK_DIFF_RULES, ForkInputsSchema } from "./inputs";
import { deletesBeforeReplace, forkReferences, refusedChange, replacedOnChange, warnOfDeletion, warnOfTakeover } from "./preview";
import { readFork } from "./read";
import { FORK_INTERNAL_STATE, FORK_PASSWORD_ONLY_SECRETS, FORK_SECRET_OUTPUTS, ServiceForkStateSchema } from "./state";
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
  passwordOnlySecrets: FORK_PASSWORD_ONLY_SECRETS,

  rules: FORK_DIFF_RULES,

  // What the fork declares for the run; at preview, its source (and an adopted fork) read, and a takeover said.
  async check(ctx, inputs, { olds, creates, verify }) {
    const failures = recordForkClaims(ctx, inputs);
    if (failures.length > 0 || !creates) return failures;
    const refused = await verify(forkReferences(inputs, ctx));
    if (refused.length === 0) await warnOfTakeover(ctx, olds, inputs);
    return refused;
  },
  async diff(ctx, id, olds, news, { changed, replaces: byRules, changes, imported }) {
    const instead = await replacedOnChange(ctx, changed, olds, news);
    const replaces = [...byRules, ...instead];
    const asImported = await imported(replaces);
    if (asImported) return asImported;
    const refusal = refusedChange(olds, news, replaces, changed);
    if (refusal) throw new InvalidInputError("ServiceFork", [{ property: "(change)", reason: refusal }]);
    // Kept (not replaced): its delete, should another resource's run in this one, spares it.
    if (replaces.length === 0) claimFork(ctx, olds.projectId, id, ctx.resource, "kept");
    const deleteBeforeReplace = replaces.length > 0 && deletesBeforeReplace(olds, news);
    if (replaces.length > 0) await warnOfDeletion(ctx, id, olds, news, deleteBeforeReplace);
    // Work a create left owed (a failed preparation) is an update even when nothing changed.
    return { changes: changes || instead.length > 0 || olds.preparePending === true, replaces, deleteBeforeReplace };
  },
  create: createFork,
  read: readFork,
  import: importFork,
  // Nothing for the API: what a create left undone (a preparation, a login) finished.
  update: (ctx, id, olds, inputs, through) =>
    through === "api" ? updateFork(ctx, id, olds, inputs) : finishPendingCreate(ctx, id, olds, inputs),
  delete: destroyFork,
});
