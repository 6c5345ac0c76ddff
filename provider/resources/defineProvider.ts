// A resource's lifecycle from its schema, its diff rules and its API work. The parts every
// resource shares are here, once: check, diff, and the rule that an update with nothing for the
// API (a new package version, a waiting control) calls no API. Two hosts serve a lifecycle: the
// dynamic provider (below) and the provider plugin (provider/plugin/).
import type * as pulumi from "@pulumi/pulumi";
import type { z } from "zod";
import { type CallContext, configureFromStack, dynamicCallContext } from "../engine/host";
import { projectIdFallback } from "../workflows/keyProject";
import { InvalidInputError, escapedFailures, escapingErrors } from "../errors";
import { type Declarant, describeDeclarant } from "../rules/claims";
import { changedInPlaceKeys, type DiffRules, diffInputs, makesNewObject, onlyStateChanged } from "../rules/diff";
import { checkInputs, type EngineInputs, type ProjectSource, declarantOf, echoSafe, readInputs } from "../rules/inputs";
import { toPlainJson, withDeclarant } from "../rules/outputs";
import { stateFrom } from "../rules/state";
import { runSlot } from "../run";
import { type Reference, verifyReferences } from "../workflows/verify";

/** The objects this run took under management by their IDs (a Read with nothing recorded), by kind and ID. */
const IMPORTED_THIS_RUN = runSlot(() => new Set<string>());

/**
 * Inputs as check hands them on, what preview's hooks receive: the resource's inputs by name, each
 * of no type known in advance. During preview a value may be the engine's unknown sentinel (a
 * string: isKnownText in rules/inputs.ts tells), and where a rule involving such a value was left
 * unjudged, the others are as the program gave them, not yet normalised. The declarant rides along.
 */
export type Pending<I> = { readonly [K in keyof I]?: unknown } & EngineInputs;

/** What a create answers: the object's ID and its state. */
export interface Created<S> {
  id: string;
  outs: S;
}

/**
 * What a refresh answers: the state as read and, optionally, the inputs (in state's form) that make
 * the next diff show drift; nothing when the object is gone.
 */
export interface Refreshed<S> {
  id?: string;
  props?: S;
  inputs?: S;
}

/** What an import reads: the object's state, and the inputs that declare it as it is. */
export interface Imported<I, S> {
  props: S;
  inputs: Partial<I>;
}

/**
 * A resource: its inputs' schema (T), its state's schema (U), its diff rules, and its lifecycle,
 * every hook typed. The engine's property bags are parsed here, once, on the way in (inputs by
 * `schema`, state by `state`), and written once on the way out.
 */
export interface ResourceDefinition<T extends z.ZodType, U extends z.ZodType<Record<string, unknown>>> {
  kind: string;
  schema: T;
  /** The state as the engine hands it back (rules/state.ts reads it). */
  state: U;
  rules: DiffRules;
  create(ctx: CallContext, inputs: z.output<T>, news: EngineInputs): Promise<Created<z.output<U>>>;
  read(ctx: CallContext, id: string, recorded: z.output<U>): Promise<Refreshed<z.output<U>>>;
  /** Applies a change to an update key through the API. */
  update(ctx: CallContext, id: string, olds: z.output<U>, inputs: z.output<T>, news: EngineInputs): Promise<z.output<U>>;
  delete(ctx: CallContext, id: string, recorded: z.output<U>): Promise<void>;
  /**
   * Optional: records what the resource declares for this run (rules/claims.ts), from its checked
   * inputs (unknown values included); a conflict with another resource's declaration is a failure.
   */
  recordClaims?(ctx: CallContext, inputs: Pending<z.output<T>>, resource: Declarant): pulumi.dynamic.CheckFailure[];
  /** Optional: records that the program keeps this existing object (diff sees every one, unless replaced). */
  recordKept?(ctx: CallContext, id: string, olds: z.output<U>, resource: Declarant): void;
  /**
   * Optional: the objects the checked inputs refer to (values may still be unknown). Check reads
   * them when the resource is about to be created or replaced (workflows/verify.ts).
   */
  references?(inputs: Pending<z.output<T>>): Reference[];
  /**
   * Optional: warnings of what the create (or replacement) these inputs make would do beyond the
   * plan's "create" (take over a running fork, say), said at preview. `olds` are the inputs it
   * replaces (none for a create). Called after references were verified, with the same read-only
   * limits; it never fails the check.
   */
  warnOfCreate?(ctx: CallContext, olds: Pending<z.output<T>> | undefined, inputs: Pending<z.output<T>>, resource: Declarant): Promise<void>;
  /**
   * Optional: update or state-only keys whose change this time cannot be made in place (the API
   * cannot express it): they replace instead. Called only with keys that changed.
   */
  keysThatReplace?(ctx: CallContext, changed: string[], olds: z.output<U>, news: Pending<z.output<T>>): Promise<string[]>;
  /** Optional: a reason to refuse this change at preview (diff fails with it), or undefined. */
  refusalOfChange?(olds: z.output<U>, news: Pending<z.output<T>>, replaces: string[], changed: string[]): string | undefined;
  /**
   * Optional: the existing object with this ID in `projectId`, taken under management by
   * `pulumi import` or the import option (a Read with nothing recorded): its state as read, and the
   * inputs that declare it as it is (what the generated code says). Without it, the resource
   * cannot be imported.
   */
  importFrom?(ctx: CallContext, id: string, projectId: string): Promise<Imported<z.input<T>, z.output<U>>>;
  /** Optional: when a replacement must remove the old object before making the new one. */
  deleteBeforeReplace?(olds: z.output<U>, news: Pending<z.output<T>>): boolean;
  /** Optional: warnings, said when diff plans a replacement, of what the old object's delete will do. */
  warnOfReplacement?(ctx: CallContext, id: string, olds: z.output<U>, news: Pending<z.output<T>>, deleteFirst: boolean): Promise<void>;
  /**
   * Optional: when nothing changed for the API, finishes what an earlier create left undone (a
   * fork recorded before it was READY). Called with the state it would write.
   */
  finishPendingCreate?(ctx: CallContext, id: string, outs: z.output<U>, inputs: z.output<T>, news: EngineInputs): Promise<z.output<U>>;
}

/** The engine's answers, as a dynamic provider gives them (the plugin host writes the same on the wire). */
type Answers = Required<pulumi.dynamic.ResourceProvider>;

/**
 * A resource's lifecycle as a host calls it: the engine's property bags in and out, each method
 * with the call's context (its settings, client, progress and warnings). One lifecycle, two hosts:
 * the dynamic provider (dynamicProvider, below) and the provider plugin (provider/plugin/).
 */
export interface Lifecycle {
  readonly kind: string;
  check(ctx: CallContext, olds: Record<string, unknown>, news: Record<string, unknown>): Promise<pulumi.dynamic.CheckResult>;
  diff(ctx: CallContext, id: string, olds: Record<string, unknown>, news: Record<string, unknown>): Promise<pulumi.dynamic.DiffResult>;
  create(ctx: CallContext, news: Record<string, unknown>): Promise<pulumi.dynamic.CreateResult>;
  read(ctx: CallContext, id: string, props: Record<string, unknown> | undefined): Promise<pulumi.dynamic.ReadResult>;
  update(ctx: CallContext, id: string, olds: Record<string, unknown>, news: Record<string, unknown>): Promise<pulumi.dynamic.UpdateResult>;
  delete(ctx: CallContext, id: string, props: Record<string, unknown>): Promise<void>;
}

export function defineResource<T extends z.ZodType, U extends z.ZodType<Record<string, unknown>>>(
  def: ResourceDefinition<T, U>,
): Lifecycle {
  type Inputs = z.output<T>;
  type S = z.output<U>;
  // The engine's bags, read once: state by its schema; check's inputs as check returned them.
  const stateOf = (props: Record<string, unknown> | undefined): S => stateFrom(def.state, props ?? {});
  const pending = (inputs: Record<string, unknown>) => inputs as Pending<Inputs>;
  /** An import: the object read by its ID in the settings' project (or the key's). */
  const importObject = async (ctx: CallContext, id: string) => {
    if (!def.importFrom)
      throw new InvalidInputError(def.kind, [{ property: "(import)", reason: `a ${def.kind} cannot be imported: declare it instead` }]);
    const project = await projectIdFallback(ctx, "apply");
    if (!("projectId" in project))
      throw new InvalidInputError(def.kind, [
        {
          property: "projectId",
          reason: "failure" in project ? project.failure : "the project to import from is not known: set projectId",
        },
      ]);
    const { props, inputs } = await def.importFrom(ctx, id, project.projectId);
    ctx.learnt(IMPORTED_THIS_RUN).add(`${def.kind} ${id}`);
    return { id, props: toPlainJson(props), inputs: toPlainJson(inputs) };
  };
  // Every method's failures reach the engine escaped (errors.ts): check's failures, and whatever
  // any method throws, API text included. Here, once, so that no future code path can forget it.
  return {
    kind: def.kind,
    check: (ctx, olds, news) =>
      escapingErrors(async () => {
        // A failure names its property; the engine then repeats the property's value, raw. A value
        // it must not print (control characters) is named by the reason alone.
        const answer = (outcome: { inputs: Record<string, unknown>; failures: pulumi.dynamic.CheckFailure[] }) =>
          escapedFailures(
            {
              ...outcome,
              failures: outcome.failures.map((f) =>
                f.property && !echoSafe(news[f.property.split(".")[0] ?? ""]) ? { property: "", reason: f.reason } : f,
              ),
            },
            ctx.conceal,
          );
        const outcome = checkInputs(def.schema, news, await projectSourceFor(ctx, "check", news, olds));
        if (outcome.failures.length === 0 && def.recordClaims)
          outcome.failures.push(...def.recordClaims(ctx, pending(outcome.inputs), declarantOf(news)));
        // Inputs that break a rule fail with no request; an unchanged resource makes none either.
        if (outcome.failures.length > 0 || !makesNewObject(olds, outcome.inputs, def.rules)) return answer(outcome);
        const inputs = pending(outcome.inputs);
        const projectFrom = isSet(news.projectId)
          ? "the resource's projectId"
          : (ctx.projectIdSource ?? "the project the credentials belong to (GET /auth/info)");
        const failures = def.references ? await verifyReferences(ctx, def.kind, def.references(inputs), projectFrom) : [];
        const replaced = hasInputs(olds) ? pending(olds) : undefined;
        if (failures.length === 0) await def.warnOfCreate?.(ctx, replaced, inputs, declarantOf(news));
        return answer({ ...outcome, failures });
      }, ctx.conceal),
    diff: (ctx, id, oldProps, unfilled) =>
      escapingErrors(async () => {
        // A project check left to `up` is the one the resource lives in (its outputs): no change.
        const newProps = withRecordedProject(unfilled, oldProps);
        const [olds, news] = [stateOf(oldProps), pending(newProps)];
        const found = diffInputs(oldProps, newProps, def.rules);
        const changed = changedInPlaceKeys(oldProps, newProps, def.rules);
        const instead = (await def.keysThatReplace?.(ctx, changed, olds, news)) ?? [];
        const result = { ...found, replaces: [...(found.replaces ?? []), ...instead] };
        // The import option takes the object as it is: the run that imports it writes nothing to
        // Tiger Cloud (what state alone records, as onDestroy, may change), and says what the next
        // `up` will change where the program declares otherwise.
        const writes = [...new Set([...result.replaces, ...changed.filter((k) => def.rules.updateKeys?.includes(k))])];
        if (writes.length > 0 && ctx.learnt(IMPORTED_THIS_RUN).has(`${def.kind} ${id}`)) {
          await warnOfImportDifferences(ctx, def.kind, oldProps, newProps, writes, result.replaces);
          return { changes: false, replaces: [], deleteBeforeReplace: false };
        }
        const refusal = def.refusalOfChange?.(olds, news, result.replaces, changed);
        if (refusal) throw new InvalidInputError(def.kind, [{ property: "(change)", reason: refusal }]);
        // A replaced object is not kept: its delete must go ahead.
        if (!result.replaces?.length) def.recordKept?.(ctx, id, olds, declarantOf(news));
        const deleteFirst = Boolean(result.replaces?.length) && (def.deleteBeforeReplace?.(olds, news) ?? false);
        if (result.replaces?.length) await def.warnOfReplacement?.(ctx, id, olds, news, deleteFirst);
        return { ...result, deleteBeforeReplace: deleteFirst };
      }, ctx.conceal),
    create: (ctx, news) =>
      escapingErrors(async () => {
        const inputs = readInputs(def.kind, def.schema, news, await projectSourceFor(ctx, "apply", news));
        // A project learnt only now (check deferred it): this resource's claims, keyed by project,
        // are recorded (and judged) now, so that a delete later in this run spares what it declares.
        if (news.projectId === undefined && def.recordClaims) {
          const failures = def.recordClaims(
            ctx,
            pending({ ...(inputs as Record<string, unknown>), __provider: news.__provider }),
            declarantOf(news),
          );
          if (failures.length > 0)
            throw new InvalidInputError(
              def.kind,
              failures.map((f) => ({ property: f.property ?? "", reason: f.reason })),
            );
        }
        const made = await def.create(ctx, inputs, news);
        return { id: made.id, outs: withDeclarant(made.outs, news) };
      }, ctx.conceal),
    read: (ctx, id, props) =>
      escapingErrors(async () => {
        if (!recordsAnything(props)) return await importObject(ctx, id);
        return await def.read(ctx, id, stateOf(props));
      }, ctx.conceal),
    update: (ctx, id, oldProps, unfilled) =>
      escapingErrors(async () => {
        const news = withRecordedProject(unfilled, oldProps);
        const inputs = readInputs(def.kind, def.schema, news, await projectSourceFor(ctx, "apply", news, oldProps));
        const olds = stateOf(oldProps);
        if (!onlyStateChanged(oldProps, news, def.rules))
          return { outs: withDeclarant(await def.update(ctx, id, olds, inputs, news), news) };
        // Nothing for the API: the new inputs recorded over the old state, and what a create left undone finished.
        const outs = stateOf(toPlainJson({ ...olds, ...(inputs as Record<string, unknown>) }));
        return { outs: withDeclarant(def.finishPendingCreate ? await def.finishPendingCreate(ctx, id, outs, inputs, news) : outs, news) };
      }, ctx.conceal),
    delete: (ctx, id, props) => escapingErrors(() => def.delete(ctx, id, stateOf(props)), ctx.conceal),
  };
}

/**
 * The dynamic provider host: the engine configures it with the stack's config (the process's
 * settings), and each call runs with a context made from them.
 */
export function dynamicProvider(resource: Lifecycle): Answers {
  return {
    configure: (req) =>
      escapingErrors(async () => {
        configureFromStack(req);
      }),
    // Each call's context knows the values the program marked secret, from the inputs and state it is given.
    check: (olds, news) => resource.check(dynamicCallContext(olds, news), olds, news),
    diff: (id, olds, news) => resource.diff(dynamicCallContext(olds, news), id, olds, news),
    create: (news) => resource.create(dynamicCallContext(news), news),
    read: (id, props) => resource.read(dynamicCallContext(props ?? {}), id, props),
    update: (id, olds, news) => resource.update(dynamicCallContext(olds, news), id, olds, news),
    delete: (id, props) => resource.delete(dynamicCallContext(props), id, props),
  };
}

/** Recorded state beyond who declares it: nothing, for an import (a Read by ID alone). */
function recordsAnything(props: Record<string, unknown> | undefined): boolean {
  return Object.keys(props ?? {}).some((k) => !k.startsWith("__"));
}

/** Old inputs beside the serialized provider: the resource exists (check of an update or a replacement). */
function hasInputs(olds: Record<string, unknown>): boolean {
  return Object.keys(olds).some((k) => k !== "__provider");
}

const isSet = (v: unknown) => v !== undefined && v !== null;

/** Values as a message quotes them: text in quotes, the rest as JSON. */
const quoted = (v: unknown) => (v === undefined ? "unset" : typeof v === "string" ? `"${v}"` : JSON.stringify(v));

/**
 * The warning of an import whose program declares otherwise: what differs, property by property
 * (each value escaped, a secret one concealed, by the warning itself), and what the next `up` does.
 */
async function warnOfImportDifferences(
  ctx: CallContext,
  kind: string,
  olds: Record<string, unknown>,
  news: Record<string, unknown>,
  differing: string[],
  replaces: string[],
): Promise<void> {
  const each = differing.map((k) => `${k} ${quoted(news[k])} (it is ${quoted(olds[k])})`).join(", ");
  const replacing =
    replaces.length > 0
      ? ` A change to ${replaces.join(", ")} cannot be made in place: that \`up\` would replace it (a new object, this one destroyed).`
      : "";
  await ctx.warning(
    `${kind} ${describeDeclarant(declarantOf(news))} was imported as it is, and this run changes nothing in Tiger Cloud; ` +
      `the program declares otherwise: ${each}. The next \`pulumi up\` will make these changes (its preview shows them); ` +
      `declare the object as it is to keep it so.${replacing}`,
    declarantOf(news).urn,
  );
}

/** Where a projectId the inputs leave unset comes from; none is needed when they set one (or it is unknown). */
async function projectSourceFor(
  ctx: CallContext,
  phase: "check" | "apply",
  news: Record<string, unknown>,
  olds: Record<string, unknown> = {},
): Promise<ProjectSource | undefined> {
  if (news.projectId !== undefined && news.projectId !== null) return undefined;
  return projectIdFallback(ctx, phase, olds.projectId, hasInputs(olds));
}

/** The inputs with the project of the recorded outputs where check left it unset. */
function withRecordedProject(news: Record<string, unknown>, olds: Record<string, unknown>): Record<string, unknown> {
  if (news.projectId !== undefined && news.projectId !== null) return news;
  return typeof olds.projectId === "string" ? { ...news, projectId: olds.projectId } : news;
}
