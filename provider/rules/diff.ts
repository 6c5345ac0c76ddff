// Diffing, shared by the three resources: which changed keys replace the object, which change it
// in place, and which only state records. Keys are a resource's input names; values are compared
// as JSON (recorded state against checked inputs, some of which may still be unknown).
import { isUnknown, type Pending } from "./inputs";

/** An input's name. */
export type Key<I> = keyof I & string;

export interface DiffRules<I> {
  /** A change here makes a new remote object. */
  replaceKeys: readonly Key<I>[];
  /** A change here is applied in place through the API. */
  updateKeys?: readonly Key<I>[];
  /** A change here is recorded in state with no API call (waiting controls). */
  stateOnlyKeys?: readonly Key<I>[];
  /** Outputs that share a name with an optional input: an input left unset has no opinion. */
  optionalDeclared?: readonly Key<I>[];
  /**
   * Replace keys that say how the object was made, which the API does not keep: for an object
   * whose state says it was imported (`imported`), they are history nobody knows, and no value
   * of them is a change.
   */
  howMade?: { keys: readonly Key<I>[]; imported: (recorded: object) => boolean };
}

/** What a diff finds: whether anything changed, and which changes replace the object. */
export interface Difference<I> {
  changes: boolean;
  replaces: Key<I>[];
}

/** A value as JSON with every object's keys in order: the engine may hand an object back with its keys reordered. */
const canonical = (v: unknown): unknown =>
  Array.isArray(v)
    ? v.map(canonical)
    : typeof v === "object" && v !== null
      ? Object.fromEntries(
          Object.entries(v)
            .filter(([, x]) => x !== undefined)
            .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
            .map(([k, x]) => [k, canonical(x)]),
        )
      : v;
const same = (a: unknown, b: unknown) => JSON.stringify(canonical(a ?? null)) === JSON.stringify(canonical(b ?? null));

function changedKeys<I>(olds: Pending<I>, news: Pending<I>, rules: DiffRules<I>, keys: readonly Key<I>[]): Key<I>[] {
  return keys.filter((k) => {
    if (rules.optionalDeclared?.includes(k) && news[k] === undefined) return false;
    if (rules.howMade?.keys.includes(k) && rules.howMade.imported(olds)) return false;
    return isUnknown(news[k]) || !same(olds[k], news[k]);
  });
}

const inPlaceKeys = <I>(rules: DiffRules<I>) => [...(rules.updateKeys ?? []), ...(rules.stateOnlyKeys ?? [])];

export function diffInputs<I>(olds: Pending<I>, news: Pending<I>, rules: DiffRules<I>): Difference<I> {
  const replaces = changedKeys(olds, news, rules, rules.replaceKeys);
  const updates = changedKeys(olds, news, rules, inPlaceKeys(rules));
  return { changes: replaces.length > 0 || updates.length > 0, replaces };
}

/**
 * True when check's inputs will make a new remote object: a create (no old inputs) or a change
 * to a replace key. A resource that stays, or is updated in place, refers to what it did before.
 */
export function makesNewObject<I>(olds: Pending<I> | undefined, inputs: Pending<I>, rules: DiffRules<I>): boolean {
  return olds === undefined || changedKeys(olds, inputs, rules, rules.replaceKeys).length > 0;
}

/** The update and state-only keys (not replace keys) whose value changed. */
export function changedInPlaceKeys<I>(olds: Pending<I>, news: Pending<I>, rules: DiffRules<I>): Key<I>[] {
  return changedKeys(olds, news, rules, inPlaceKeys(rules));
}

/** True when only state-only keys changed: the update needs no API call. */
export function onlyStateChanged<I>(olds: Pending<I>, news: Pending<I>, rules: DiffRules<I>): boolean {
  return changedKeys(olds, news, rules, [...rules.replaceKeys, ...(rules.updateKeys ?? [])]).length === 0;
}

/**
 * The recorded state with the inputs as now declared: a state-only input the program no longer
 * declares goes from the record, as it went from the program (an optional one with no opinion when
 * unset, `optionalDeclared`, stays).
 */
export function withDeclared<S extends object, I extends object>(recorded: S, inputs: I, rules: DiffRules<I>): S & I {
  const dropped = new Set<string>(
    (rules.stateOnlyKeys ?? []).filter((k) => inputs[k] === undefined && !(rules.optionalDeclared ?? []).includes(k)).map(String),
  );
  return { ...Object.fromEntries(Object.entries(recorded).filter(([k]) => !dropped.has(k))), ...inputs } as S & I;
}
