// A resource's provider from its schema, its diff rules and its API work. The parts every
// resource shares are here, once: configure, check, diff, and the rule that an update with
// nothing for the API (a new package version, a waiting control) calls no API.
import type * as pulumi from "@pulumi/pulumi";
import type { z } from "zod";
import { type CallContext, callContext, configureFromStack } from "../engine/host";
import { projectIdFallback } from "../workflows/keyProject";
import { InvalidInputError, escapedFailures, escapingErrors } from "../errors";
import type { Declarant } from "../rules/claims";
import { changedInPlaceKeys, type DiffRules, diffInputs, makesNewObject, onlyStateChanged } from "../rules/diff";
import { checkInputs, type ProjectSource, declarantOf, readInputs } from "../rules/inputs";
import { toPlainJson, withoutProvider, withDeclarant } from "../rules/outputs";
import { type Reference, verifyReferences } from "../workflows/verify";

export interface ResourceDefinition<T extends z.ZodType> {
  kind: string;
  schema: T;
  rules: DiffRules;
  create(ctx: CallContext, inputs: z.output<T>, news: Record<string, unknown>): Promise<pulumi.dynamic.CreateResult>;
  read(ctx: CallContext, id: string, props: Record<string, unknown>): Promise<pulumi.dynamic.ReadResult>;
  /** Applies a change to an update key through the API. */
  update(
    ctx: CallContext,
    id: string,
    olds: Record<string, unknown>,
    inputs: z.output<T>,
    news: Record<string, unknown>,
  ): Promise<pulumi.dynamic.UpdateResult>;
  delete(ctx: CallContext, id: string, props: Record<string, unknown>): Promise<void>;
  /**
   * Optional: records what the resource declares for this run (rules/claims.ts), from its checked
   * inputs (unknown values included); a conflict with another resource's declaration is a failure.
   */
  recordClaims?(ctx: CallContext, inputs: Record<string, unknown>, resource: Declarant): pulumi.dynamic.CheckFailure[];
  /** Optional: records that the program keeps this existing object (diff sees every one, unless replaced). */
  recordKept?(id: string, olds: Record<string, unknown>, resource: Declarant): void;
  /**
   * Optional: the objects the checked inputs refer to (values may still be unknown). Check reads
   * them when the resource is about to be created or replaced (workflows/verify.ts).
   */
  references?(inputs: Record<string, unknown>): Reference[];
  /**
   * Optional: warnings of what the create (or replacement) these inputs make would do beyond the
   * plan's "create" (take over a running fork, say), said at preview. Called after references
   * were verified, with the same read-only limits; it never fails the check.
   */
  warnOfCreate?(ctx: CallContext, olds: Record<string, unknown>, inputs: Record<string, unknown>, resource: Declarant): Promise<void>;
  /**
   * Optional: update or state-only keys whose change this time cannot be made in place (the API
   * cannot express it): they replace instead. Called only with keys that changed.
   */
  keysThatReplace?(ctx: CallContext, changed: string[], olds: Record<string, unknown>, news: Record<string, unknown>): Promise<string[]>;
  /** Optional: a reason to refuse this change at preview (diff fails with it), or undefined. */
  refusalOfChange?(olds: Record<string, unknown>, news: Record<string, unknown>, replaces: string[], changed: string[]): string | undefined;
  /** Optional: when a replacement must remove the old object before making the new one. */
  deleteBeforeReplace?(olds: Record<string, unknown>, news: Record<string, unknown>): boolean;
  /** Optional: warnings, said when diff plans a replacement, of what the old object's delete will do. */
  warnOfReplacement?(
    ctx: CallContext,
    id: string,
    olds: Record<string, unknown>,
    news: Record<string, unknown>,
    deleteFirst: boolean,
  ): Promise<void>;
  /**
   * Optional: when nothing changed for the API, finishes what an earlier create left undone (a
   * fork recorded before it was READY). Called with the state it would write.
   */
  finishPendingCreate?(
    ctx: CallContext,
    id: string,
    outs: Record<string, unknown>,
    inputs: z.output<T>,
    news: Record<string, unknown>,
  ): Promise<Record<string, unknown>>;
}

export function defineProvider<T extends z.ZodType>(def: ResourceDefinition<T>): Required<pulumi.dynamic.ResourceProvider> {
  // Every method's failures reach the engine escaped (errors.ts): check's failures, and whatever
  // any method throws, API text included. Here, once, so that no future code path can forget it.
  return {
    configure: (req) =>
      escapingErrors(async () => {
        configureFromStack(req);
      }),
    check: (olds, news) =>
      escapingErrors(async () => {
        const ctx = callContext();
        const outcome = checkInputs(def.schema, news, await projectSourceFor(ctx, "check", news, olds));
        if (outcome.failures.length === 0 && def.recordClaims)
          outcome.failures.push(...def.recordClaims(ctx, outcome.inputs, declarantOf(news)));
        // Inputs that break a rule fail with no request; an unchanged resource makes none either.
        if (outcome.failures.length > 0 || !makesNewObject(olds, outcome.inputs, def.rules)) return escapedFailures(outcome);
        const failures = def.references ? await verifyReferences(ctx, def.kind, def.references(outcome.inputs)) : [];
        if (failures.length === 0) await def.warnOfCreate?.(ctx, olds, outcome.inputs, declarantOf(news));
        return escapedFailures({ ...outcome, failures });
      }),
    diff: (id, olds, unfilled) =>
      escapingErrors(async () => {
        const ctx = callContext();
        // A project check left to `up` is the one the resource lives in (its outputs): no change.
        const news = withRecordedProject(unfilled, olds);
        const found = diffInputs(olds, news, def.rules);
        const changed = changedInPlaceKeys(olds, news, def.rules);
        const instead = (await def.keysThatReplace?.(ctx, changed, olds, news)) ?? [];
        const result = { ...found, replaces: [...(found.replaces ?? []), ...instead] };
        const refusal = def.refusalOfChange?.(olds, news, result.replaces, changed);
        if (refusal) throw new InvalidInputError(def.kind, [{ property: "(change)", reason: refusal }]);
        // A replaced object is not kept: its delete must go ahead.
        if (!result.replaces?.length) def.recordKept?.(id, olds, declarantOf(news));
        const deleteFirst = Boolean(result.replaces?.length) && (def.deleteBeforeReplace?.(olds, news) ?? false);
        if (result.replaces?.length) await def.warnOfReplacement?.(ctx, id, olds, news, deleteFirst);
        return { ...result, deleteBeforeReplace: deleteFirst };
      }),
    create: (news) =>
      escapingErrors(async () => {
        const ctx = callContext();
        const inputs = readInputs(def.kind, def.schema, news, await projectSourceFor(ctx, "apply", news));
        // A project learnt only now (check deferred it): this resource's claims, keyed by project,
        // are recorded (and judged) now, so that a delete later in this run spares what it declares.
        if (news.projectId === undefined && def.recordClaims) {
          const failures = def.recordClaims(
            ctx,
            { ...(inputs as Record<string, unknown>), __provider: news.__provider },
            declarantOf(news),
          );
          if (failures.length > 0)
            throw new InvalidInputError(
              def.kind,
              failures.map((f) => ({ property: f.property ?? "", reason: f.reason })),
            );
        }
        const made = await def.create(ctx, inputs, news);
        return { ...made, outs: withDeclarant(made.outs, news) };
      }),
    read: (id, props) => escapingErrors(() => def.read(callContext(), id, props ?? {})),
    update: (id, olds, unfilled) =>
      escapingErrors(async () => {
        const ctx = callContext();
        const news = withRecordedProject(unfilled, olds);
        const inputs = readInputs(def.kind, def.schema, news, await projectSourceFor(ctx, "apply", news, olds));
        if (!onlyStateChanged(olds, news, def.rules)) {
          const changed = await def.update(ctx, id, olds, inputs, news);
          return { ...changed, outs: withDeclarant(changed.outs ?? {}, news) };
        }
        const outs = toPlainJson({ ...withoutProvider(olds), ...(inputs as Record<string, unknown>) });
        return { outs: withDeclarant(def.finishPendingCreate ? await def.finishPendingCreate(ctx, id, outs, inputs, news) : outs, news) };
      }),
    delete: (id, props) => escapingErrors(() => def.delete(callContext(), id, props)),
  };
}

/** Where a projectId the inputs leave unset comes from; none is needed when they set one (or it is unknown). */
async function projectSourceFor(
  ctx: CallContext,
  phase: "check" | "apply",
  news: Record<string, unknown>,
  olds: Record<string, unknown> = {},
): Promise<ProjectSource | undefined> {
  if (news.projectId !== undefined && news.projectId !== null) return undefined;
  return projectIdFallback(ctx, phase, olds.projectId, Object.keys(olds).length > 0);
}

/** The inputs with the project of the recorded outputs where check left it unset. */
function withRecordedProject(news: Record<string, unknown>, olds: Record<string, unknown>): Record<string, unknown> {
  if (news.projectId !== undefined && news.projectId !== null) return news;
  return typeof olds.projectId === "string" ? { ...news, projectId: olds.projectId } : news;
}
