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
 * What a resource's own check is handed beside its inputs (which passed their rules): the recorded
 * inputs they replace (none for a create), whether they make a new object (a create or a
 * replacement), and the shared verification of what they refer to. Called with `creates` false
 * again at apply, when the project was learnt only then: what the inputs declare is recorded with it.
 */
export interface CheckCall<I> {
  olds: Pending<I> | undefined;
  /** A new object: what the inputs refer to is verified, and what its create will do may be said. */
  creates: boolean;
  /** Reads the objects the inputs refer to, once per object per run, within preview's limits (policies/verify.ts): their failures. */
  verify(references: Reference[]): Promise<Failure[]>;
}

/** What a resource's own diff is handed: the diff rules' judgement of the change, and the import's rule. */
export interface DiffCall<I> {
  /** The keys changed that are made in place or only recorded. */
  changed: Key<I>[];
  /** The keys whose change replaces, by the diff rules. */
  replaces: Key<I>[];
  /** Whether anything changed, by the diff rules. */
  changes: boolean;
  /**
   * The import's rule, to be asked once every key that replaces is known (`replaces`): the answer
   * when this object was taken under management this run (nothing written, what the next `up`
   * changes said), or undefined.
   */
  imported(replaces: Key<I>[]): Promise<Diffed | undefined>;
}

/**
 * A resource: its inputs' schema (T), its state's schema (U), its diff rules, and its lifecycle in
 * the engine's verbs, each typed. What a host hands over is parsed here, once, on the way in (inputs
 * by `schema`, state by `state`); what goes back is the typed state, which the host writes. check
 * and diff are shared (rules/inputs.ts, rules/diff.ts); a resource adds to them where it needs to.
 */
export interface ResourceDefinition<T extends z.ZodType<InProject, object>, U extends z.ZodType<InProject & object>> extends ResourceSpec<
  T,
  U
> {
  rules: DiffRules<z.output<T>>;
  /**
   * Optional: what check adds to the shared one: what the resource declares for this run
   * (rules/claims.ts; a conflict is a failure), what it refers to (verified through `call.verify`
   * when it `creates`), and warnings of what its create will do. Its failures fail the check.
   */
  check?(ctx: CallContext, inputs: Pending<z.output<T>>, call: CheckCall<z.output<T>>): Promise<Failure[]>;
  /**
   * Optional: the diff, given the rules' judgement: keys that replace this time though the rules say
   * in place, a change refused at preview (thrown), a replacement that removes the old object first,
   * what the plan's words leave unsaid. It asks `call.imported` once its replacing keys are known.
   * Without it: the rules' judgement, and the import's rule.
   */
  diff?(ctx: CallContext, id: string, olds: z.output<U>, news: Pending<z.output<T>>, call: DiffCall<z.output<T>>): Promise<Diffed>;
  create(ctx: CallContext, inputs: z.output<T>): Promise<Created<z.output<U>>>;
  read(ctx: CallContext, id: string, recorded: z.output<U>): Promise<Refreshed<z.output<U>> | undefined>;
  /**
   * An update. `through` "api": a change to an update key, made through the API. "state": nothing
   * for the API (what state alone records changed, or diff planned an update for work owed): `olds`
   * is then the recorded state with the new inputs over it, to be returned as it is or finished.
   */
  update(ctx: CallContext, id: string, olds: z.output<U>, inputs: z.output<T>, through: "api" | "state"): Promise<z.output<U>>;
  delete(ctx: CallContext, id: string, recorded: z.output<U>): Promise<void>;
  /**
   * Optional: the existing object with this ID in `projectId`, taken under management by
   * `pulumi import` or the import option (a read with nothing recorded): its state as read, and the
   * inputs that declare it as it is (what the generated code says). Without it, the resource
   * cannot be imported.
   */
  import?(ctx: CallContext, id: string, projectId: string): Promise<Imported<z.input<T>, z.output<U>>>;
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
    passwordOnlySecrets: def.passwordOnlySecrets ?? [],
  };
  const stateOf = (id: string, given: unknown): S => readState(kind, id, def.state, given);
  /** The inputs check handed on: `readInputs` parses them for the API work; here, as they came. */
  const pending = (given: unknown): Pending<Inputs> => Object.fromEntries(propertiesOf(given)) as Pending<Inputs>;
  /** An import: the object read by its ID in the settings' project (or the key's). */
  const importObject = async (ctx: CallContext, id: string): Promise<Refreshed<object>> => {
    if (!def.import)
      throw new InvalidInputError(kind, [{ property: "(import)", reason: `a ${kind} cannot be imported: declare it instead` }]);
    const project = await projectIdFallback(ctx, "apply");
    if (!("projectId" in project))
      throw new InvalidInputError(kind, [
        {
          property: "projectId",
          reason: "failure" in project ? project.failure : "the project to import from is not known: set projectId",
        },
      ]);
    const { state, inputs } = await def.import(ctx, id, project.projectId);
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
        // Inputs that break a rule fail with no request; an unchanged resource makes none either.
        if (outcome.failures.length > 0 || !def.check) return answer(outcome);
        const projectFrom = isSet(given.get("projectId"))
          ? "the resource's projectId"
          : (ctx.projectIdSource ?? "the project the credentials belong to (GET /auth/info)");
        const failures = await def.check(ctx, outcome.inputs, {
          olds,
          creates: makesNewObject(olds, outcome.inputs, def.rules),
          verify: (references) => verifyReferences(ctx, kind, references, projectFrom),
        });
        return answer({ ...outcome, failures });
      }, ctx.conceal),
    diff: (ctx, id, oldState, unfilled) =>
      escapingErrors(async () => {
        const olds = stateOf(id, oldState);
        // A project check left to `up` is the one the resource lives in (its state): no change.
        const news = withRecordedProject(pending(unfilled), olds);
        const found = diffInputs(olds, news, def.rules);
        const changed = changedInPlaceKeys(olds, news, def.rules);
        // The import option takes the object as it is: the run that imports it writes nothing to
        // Tiger Cloud (what state alone records, as onDestroy, may change), and says what the next
        // `up` will change where the program declares otherwise.
        const imported = async (replaces: Key<Inputs>[]): Promise<Diffed | undefined> => {
          const writes = [...new Set([...replaces, ...changed.filter((k) => def.rules.updateKeys?.includes(k))])];
          if (writes.length === 0 || !ctx.learnt(IMPORTED_THIS_RUN).has(`${kind} ${id}`)) return undefined;
          await warnOfImportDifferences(ctx, kind, olds, news, writes, replaces);
          return { changes: false, replaces: [], deleteBeforeReplace: false };
        };
        const call = { changed, replaces: found.replaces, changes: found.changes, imported };
        if (def.diff) return await def.diff(ctx, id, olds, news, call);
        return (await imported(found.replaces)) ?? { changes: found.changes, replaces: found.replaces, deleteBeforeReplace: false };
      }, ctx.conceal),
    create: (ctx, news) =>
      escapingErrors(async () => {
        const given = propertiesOf(news);
        const inputs = readInputs(kind, schema, news, await projectSourceFor(ctx, "apply", given.get("projectId")));
        // A project learnt only now (check deferred it): what this resource declares, keyed by project,
        // is recorded (and judged) now, so that a delete later in this run spares it.
        if (!isSet(given.get("projectId")) && def.check) {
          const failures = await def.check(ctx, inputs as Pending<Inputs>, { olds: undefined, creates: false, verify: async () => [] });
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
        if (!onlyStateChanged(olds, news, def.rules)) return toPlainJson(await def.update(ctx, id, olds, inputs, "api"));
        // Nothing for the API: the new inputs recorded over the old state (and what the resource owes, finished by it).
        const state = stateOf(id, toPlainJson(withDeclared(olds, inputs, def.rules)));
        return toPlainJson(await def.update(ctx, id, state, inputs, "state"));
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
