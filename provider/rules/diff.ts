// Diffing, shared by the three resources: which changed keys replace the object, which change it
// in place, and which only state records.
import type * as pulumi from "@pulumi/pulumi";
import { isUnknown } from "./inputs";

export interface DiffRules {
  /** A change here makes a new remote object. */
  replaceKeys: readonly string[];
  /** A change here is applied in place through the API. */
  updateKeys?: readonly string[];
  /** A change here is recorded in state with no API call (waiting controls). */
  stateOnlyKeys?: readonly string[];
  /** Outputs that share a name with an optional input: an input left unset has no opinion. */
  optionalDeclared?: readonly string[];
  /**
   * Replace keys that say how the object was made, which the API does not keep: for an object
   * whose state says it was imported (`imported`), they are history nobody knows, and no value
   * of them is a change.
   */
  howMade?: { keys: readonly string[]; imported: (olds: Record<string, unknown>) => boolean };
}

const same = (a: unknown, b: unknown) => JSON.stringify(a ?? null) === JSON.stringify(b ?? null);

function changedKeys(olds: Record<string, unknown>, news: Record<string, unknown>, rules: DiffRules, keys: readonly string[]): string[] {
  return keys.filter((k) => {
    if (rules.optionalDeclared?.includes(k) && news[k] === undefined) return false;
    if (rules.howMade?.keys.includes(k) && rules.howMade.imported(olds)) return false;
    return isUnknown(news[k]) || !same(olds[k], news[k]);
  });
}

export function diffInputs(olds: Record<string, unknown>, news: Record<string, unknown>, rules: DiffRules): pulumi.dynamic.DiffResult {
  const replaces = changedKeys(olds, news, rules, rules.replaceKeys);
  const updates = changedKeys(olds, news, rules, [...(rules.updateKeys ?? []), ...(rules.stateOnlyKeys ?? [])]);
  // A new release of this package changes the serialized provider: an update that calls no API.
  const providerChanged = olds.__provider !== news.__provider && !isUnknown(news.__provider);
  return { changes: replaces.length > 0 || updates.length > 0 || providerChanged, replaces, deleteBeforeReplace: false };
}

/**
 * True when check's inputs will make a new remote object: a create (no old inputs) or a change
 * to a replace key. A resource that stays, or is updated in place, refers to what it did before.
 */
export function makesNewObject(olds: Record<string, unknown>, inputs: Record<string, unknown>, rules: DiffRules): boolean {
  const { __provider: _provider, ...previous } = olds;
  return Object.keys(previous).length === 0 || changedKeys(olds, inputs, rules, rules.replaceKeys).length > 0;
}

/** The update and state-only keys (not replace keys) whose value changed. */
export function changedInPlaceKeys(olds: Record<string, unknown>, news: Record<string, unknown>, rules: DiffRules): string[] {
  return changedKeys(olds, news, rules, [...(rules.updateKeys ?? []), ...(rules.stateOnlyKeys ?? [])]);
}

/** True when only state-only keys or the provider changed: the update needs no API call. */
export function onlyStateChanged(olds: Record<string, unknown>, news: Record<string, unknown>, rules: DiffRules): boolean {
  return changedKeys(olds, news, rules, [...rules.replaceKeys, ...(rules.updateKeys ?? [])]).length === 0;
}
