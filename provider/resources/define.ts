// A resource's lifecycle from its specification, its diff rules and its API work. The parts every
// resource shares are here, once: check, diff, the rule that an update with nothing for the API
// (a waiting control) calls no API, what an import may do, and the escaping of every failure. Two
// hosts serve a lifecycle (hosts/dynamic/, hosts/plugin/); each hands it the properties the engine
// sent, without anything of its own dialect, and a context that says what it knows of the call.
import type { z } from "zod";
import type { CallContext, Declarant } from "../context/context";
import { escapedFailures, escapingErrors } from "../context/escaping";
import { InvalidInputError } from "../errors";
import { describeDeclarant } from "../rules/claims";
import { changedInPlaceKeys, type DiffRules, diffInputs, type Key, makesNewObject, onlyStateChanged, withDeclared } from "../rules/diff";
import {
  checkInputs,
  echoSafe,
  type Failure,
  hasProperties,
  type Pending,
  type ProjectSource,
  propertiesOf,
  readInputs,
} from "../rules/inputs";
import { readState, toPlainJson } from "../rules/state";
import { runSlot } from "../context/memory";
import { projectIdFallback } from "../policies/keyProject";
import type { InProject, ResourceSpec } from "./spec";
import { type Reference, verifyReferences } from "../policies/verify";

/** What a create answers: the object's ID and its state. */
export interface Created<S> {
  id: string;
  state: S;
}

/**
 * What a refresh answers: the state as read and, optionally, the inputs (in state's form) that make
 * the next diff show drift; undefined when the object is gone.
 */
export interface Refreshed<S> {
  id: string;
  state: S;
  inputs?: Partial<S>;
}

/** What an import reads: the object's state, and the inputs that declare it as it is. */
export interface Imported<I, S> {
  state: S;
  inputs: I;
}

/**
 * A resource: its inputs' schema (T), its state's schema (U), its diff rules, and its lifecycle,
 * every hook typed. What a host hands over is parsed here, once, on the way in (inputs by
 * `schema`, state by `state`); what goes back is the typed state, which the host writes.
 */
export interface ResourceDefinition<T extends z.ZodType<InProject, object>, U extends z.ZodType<InProject & object>> extends ResourceSpec<
  T,
  U
> {
  rules: DiffRules<z.output<T>>;
  create(ctx: CallContext, inputs: z.output<T>): Promise<Created<z.output<U>>>;
  read(ctx: CallContext, id: string, recorded: z.output<U>): Promise<Refreshed<z.output<U>> | undefined>;
  /** Applies a change to an update key through the API. */
  update(ctx: CallContext, id: string, olds: z.output<U>, inputs: z.output<T>): Promise<z.output<U>>;
  delete(ctx: CallContext, id: string, recorded: z.output<U>): Promise<void>;
  /**
   * Optional: records what the resource declares for this run (rules/claims.ts), from its checked
   * inputs (unknown values included); a conflict with another resource's declaration is a failure.
   */
  recordClaims?(ctx: CallContext, inputs: Pending<z.output<T>>): Failure[];
  /** Optional: records that the program keeps this existing object (diff sees every one, unless replaced). */
  recordKept?(ctx: CallContext, id: string, olds: z.output<U>): void;
  /**
   * Optional: the objects the checked inputs refer to (values may still be unknown). Check reads
   * them when the resource is about to be created or replaced (policies/verify.ts).
   */
  references?(inputs: Pending<z.output<T>>, ctx: CallContext): Reference[];
  /**
   * Optional: warnings of what the create (or replacement) these inputs make would do beyond the
   * plan's "create" (take over a running fork, say), said at preview. `olds` are the inputs it
   * replaces (none for a create). Called after references were verified, with the same read-only
   * limits; it never fails the check.
   */
  warnOfCreate?(ctx: CallContext, olds: Pending<z.output<T>> | undefined, inputs: Pending<z.output<T>>): Promise<void>;
  /**
   * Optional: update or state-only keys whose change this time cannot be made in place (the API
   * cannot express it): they replace instead. Called only with keys that changed.
   */
  keysThatReplace?(
    ctx: CallContext,
    changed: Key<z.output<T>>[],
    olds: z.output<U>,
    news: Pending<z.output<T>>,
  ): Promise<Key<z.output<T>>[]>;
  /** Optional: a reason to refuse this change at preview (diff fails with it), or undefined. */
  refusalOfChange?(olds: z.output<U>, news: Pending<z.output<T>>, replaces: string[], changed: string[]): string | undefined;
  /**
   * Optional: the existing object with this ID in `projectId`, taken under management by
   * `pulumi import` or the import option (a read with nothing recorded): its state as read, and the
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
  finishPendingCreate?(ctx: CallContext, id: string, state: z.output<U>, inputs: z.output<T>): Promise<z.output<U>>;
  /** Optional: whether the recorded object still owes work a create left undone, so that diff plans an update. */
  owesWork?(olds: z.output<U>): boolean;
}

/** What check answers: the inputs to hand on (unknown values as the engine's sentinel), and the failures. */
export interface Checked {
  inputs: object;
  failures: Failure[];
}

/** What diff answers. */
export interface Diffed {
  changes: boolean;
  replaces: string[];
  deleteBeforeReplace: boolean;
}

/**
 * A resource's lifecycle as a host calls it: the properties the engine sent (the host's own keys
 * taken off) in, typed state out, each call with its context (settings, client, progress,
 * warnings, who declares the resource, the deadline). One lifecycle, two hosts.
 */
export interface Lifecycle {
  readonly spec: ResourceSpec;
  /** `olds`: the recorded inputs, or nothing for a create. */
  check(ctx: CallContext, olds: unknown, news: unknown): Promise<Checked>;
  /** `olds`: the recorded state; `news`: what check answered. */
  diff(ctx: CallContext, id: string, olds: unknown, news: unknown): Promise<Diffed>;
  create(ctx: CallContext, news: unknown): Promise<Created<object>>;
  /** `state`: what is recorded, or nothing for an import (a read by ID alone). Undefined: the object is gone. */
  read(ctx: CallContext, id: string, state: unknown): Promise<Refreshed<object> | undefined>;
  update(ctx: CallContext, id: string, olds: unknown, news: unknown): Promise<object>;
  delete(ctx: CallContext, id: string, state: unknown): Promise<void>;
}

/** The objects this run took under management by their IDs (a read with nothing recorded), by kind and ID. */
const IMPORTED_THIS_RUN = runSlot(() => new Set<string>());

export function defineResource<T extends z.ZodType<InProject, object>, U extends z.ZodType<InProject & object>>(
  def: ResourceDefinition<T, U>,
): Lifecycle {
  type Inputs = z.output<T>;
  type S = z.output<U>;
  const { kind, inputs: schema } = def;
  const spec: ResourceSpec = {
    kind,
    description: def.description,
    inputs: def.inputs,
    state: def.state,
    internalState: def.internalState ?? [],
    secretOutputs: def.secretOutputs ?? [],
  };
  const stateOf = (id: string, given: unknown): S => readState(kind, id, def.state, given);
  /** The inputs check handed on: `readInputs` parses them for the API work; here, as they came. */
  const pending = (given: unknown): Pending<Inputs> => Object.fromEntries(propertiesOf(given)) as Pending<Inputs>;
  /** An import: the object read by its ID in the settings' project (or the key's). */
  const importObject = async (ctx: CallContext, id: string): Promise<Refreshed<object>> => {
    if (!def.importFrom)
      throw new InvalidInputError(kind, [{ property: "(import)", reason: `a ${kind} cannot be imported: declare it instead` }]);
    const project = await projectIdFallback(ctx, "apply");
    if (!("projectId" in project))
      throw new InvalidInputError(kind, [
        {
          property: "projectId",
          reason: "failure" in project ? project.failure : "the project to import from is not known: set projectId",
        },
      ]);
    const { state, inputs } = await def.importFrom(ctx, id, project.projectId);
    ctx.learnt(IMPORTED_THIS_RUN).add(`${kind} ${id}`);
    return { id, state: toPlainJson(state), inputs: toPlainJson(inputs) };
  };
  // Every method's failures reach the engine escaped, and concealed by the call's secrets
  // (context/escaping.ts): check's failures, and whatever any method throws, API text included.
  // Here, once, so that no future code path can forget it.
  return {
    spec,
    check: (ctx, oldInputs, news) =>
      escapingErrors(async () => {
        const olds = hasProperties(oldInputs) ? pending(oldInputs) : undefined;
        // A failure names its property; the engine then repeats the property's value, raw. A value
        // it must not print (control characters) is named by the reason alone.
        const given = propertiesOf(news);
        const answer = (outcome: { inputs: Pending<Inputs>; failures: Failure[] }): Checked =>
          escapedFailures(
            {
              ...outcome,
              failures: outcome.failures.map((f) =>
                f.property && !echoSafe(given.get(f.property.split(".")[0] ?? "")) ? { property: "", reason: f.reason } : f,
              ),
            },
            ctx.conceal,
          );
        const outcome = checkInputs(schema, news, await projectSourceFor(ctx, "check", given.get("projectId"), olds));
        if (outcome.failures.length === 0 && def.recordClaims) outcome.failures.push(...def.recordClaims(ctx, outcome.inputs));
        // Inputs that break a rule fail with no request; an unchanged resource makes none either.
        if (outcome.failures.length > 0 || !makesNewObject(olds, outcome.inputs, def.rules)) return answer(outcome);
        const inputs = outcome.inputs;
        const projectFrom = isSet(given.get("projectId"))
          ? "the resource's projectId"
          : (ctx.projectIdSource ?? "the project the credentials belong to (GET /auth/info)");
        const failures = def.references ? await verifyReferences(ctx, kind, def.references(inputs, ctx), projectFrom) : [];
        if (failures.length === 0) await def.warnOfCreate?.(ctx, olds, inputs);
        return answer({ ...outcome, failures });
      }, ctx.conceal),
    diff: (ctx, id, oldState, unfilled) =>
      escapingErrors(async () => {
        const olds = stateOf(id, oldState);
        // A project check left to `up` is the one the resource lives in (its state): no change.
        const news = withRecordedProject(pending(unfilled), olds);
        const found = diffInputs(olds, news, def.rules);
        const changed = changedInPlaceKeys(olds, news, def.rules);
        const instead = (await def.keysThatReplace?.(ctx, changed, olds, news)) ?? [];
        const replaces = [...found.replaces, ...instead];
        // The import option takes the object as it is: the run that imports it writes nothing to
        // Tiger Cloud (what state alone records, as onDestroy, may change), and says what the next
        // `up` will change where the program declares otherwise.
        const writes = [...new Set([...replaces, ...changed.filter((k) => def.rules.updateKeys?.includes(k))])];
        if (writes.length > 0 && ctx.learnt(IMPORTED_THIS_RUN).has(`${kind} ${id}`)) {
          await warnOfImportDifferences(ctx, kind, olds, news, writes, replaces);
          return { changes: false, replaces: [], deleteBeforeReplace: false };
        }
        const refusal = def.refusalOfChange?.(olds, news, replaces, changed);
        if (refusal) throw new InvalidInputError(kind, [{ property: "(change)", reason: refusal }]);
        // A replaced object is not kept: its delete must go ahead.
        if (replaces.length === 0) def.recordKept?.(ctx, id, olds);
        const deleteFirst = replaces.length > 0 && (def.deleteBeforeReplace?.(olds, news) ?? false);
        if (replaces.length > 0) await def.warnOfReplacement?.(ctx, id, olds, news, deleteFirst);
        // Work a create left owed (a failed preparation) is an update even when nothing changed.
        const owed = def.owesWork?.(olds) ?? false;
        return { changes: found.changes || instead.length > 0 || owed, replaces, deleteBeforeReplace: deleteFirst };
      }, ctx.conceal),
    create: (ctx, news) =>
      escapingErrors(async () => {
        const given = propertiesOf(news);
        const inputs = readInputs(kind, schema, news, await projectSourceFor(ctx, "apply", given.get("projectId")));
        // A project learnt only now (check deferred it): this resource's claims, keyed by project,
        // are recorded (and judged) now, so that a delete later in this run spares what it declares.
        if (!isSet(given.get("projectId")) && def.recordClaims) {
          const failures = def.recordClaims(ctx, inputs);
          if (failures.length > 0) throw new InvalidInputError(kind, failures);
        }
        const made = await def.create(ctx, inputs);
        return { id: made.id, state: toPlainJson(made.state) };
      }, ctx.conceal),
    read: (ctx, id, state) =>
      escapingErrors(async () => {
        if (!hasProperties(state)) return await importObject(ctx, id);
        const found = await def.read(ctx, id, stateOf(id, state));
        return found && { ...found, state: toPlainJson(found.state), ...(found.inputs ? { inputs: toPlainJson(found.inputs) } : {}) };
      }, ctx.conceal),
    update: (ctx, id, oldState, unfilled) =>
      escapingErrors(async () => {
        const olds = stateOf(id, oldState);
        const news = withRecordedProject(pending(unfilled), olds);
        const inputs = readInputs(kind, schema, news, await projectSourceFor(ctx, "apply", propertiesOf(news).get("projectId"), olds));
        if (!onlyStateChanged(olds, news, def.rules)) return toPlainJson(await def.update(ctx, id, olds, inputs));
        // Nothing for the API: the new inputs recorded over the old state, and what a create left undone finished.
        const state = stateOf(id, toPlainJson(withDeclared(olds, inputs, def.rules)));
        return toPlainJson(def.finishPendingCreate ? await def.finishPendingCreate(ctx, id, state, inputs) : state);
      }, ctx.conceal),
    delete: (ctx, id, state) => escapingErrors(() => def.delete(ctx, id, stateOf(id, state)), ctx.conceal),
  };
}

const isSet = (v: unknown) => v !== undefined && v !== null;

/** Values as a message quotes them: text in quotes, the rest as JSON. */
const quoted = (v: unknown) => (v === undefined ? "unset" : typeof v === "string" ? `"${v}"` : JSON.stringify(v));

/**
 * The warning of an import whose program declares otherwise: what differs, property by property
 * (each value escaped, a secret one concealed, by the warning itself), and what the next `up` does.
 */
async function warnOfImportDifferences<I>(
  ctx: CallContext,
  kind: string,
  olds: Pending<I>,
  news: Pending<I>,
  differing: Key<I>[],
  replaces: Key<I>[],
): Promise<void> {
  const each = differing.map((k) => `${k} ${quoted(news[k])} (it is ${quoted(olds[k])})`).join(", ");
  const replacing =
    replaces.length > 0
      ? ` A change to ${replaces.join(", ")} cannot be made in place: that \`up\` would replace it (a new object, this one destroyed).`
      : "";
  await ctx.warning(
    `${kind} ${describeDeclarant(ctx.resource)} was imported as it is, and this run changes nothing in Tiger Cloud; ` +
      `the program declares otherwise: ${each}. The next \`pulumi up\` will make these changes (its preview shows them); ` +
      `declare the object as it is to keep it so.${replacing}`,
    ctx.resource.urn,
  );
}

/** Where a projectId the inputs leave unset comes from; none is needed when they set one (or it is unknown). */
async function projectSourceFor(
  ctx: CallContext,
  phase: "check" | "apply",
  given: unknown,
  olds?: { readonly projectId?: unknown },
): Promise<ProjectSource | undefined> {
  if (isSet(given)) return undefined;
  return projectIdFallback(ctx, phase, olds?.projectId, olds !== undefined);
}

/** The inputs with the project of the recorded state where check left it unset. */
function withRecordedProject<P extends object>(news: P, olds: InProject): P {
  return isSet(propertiesOf(news).get("projectId")) ? news : { ...news, projectId: olds.projectId };
}

export type { Declarant };
