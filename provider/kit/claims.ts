// What the resources of this run declare, kept in the provider process. The engine starts one
// dynamic-provider process per run and checks (and diffs) every resource the program declares,
// changed or not, before it deletes those the program dropped. So a delete can ask whether the
// program still declares what it would undo (the HA of a service, a fork) under another resource
// name, as after a rename without an alias, and leave it alone.

/** One resource's declaration: its name in the program and what it declares. */
export interface Claim<T> {
  resource: string;
  value: T;
}

const claims = new Map<string, Map<string, unknown>>();

/**
 * Records that `resource` declares `value` for `key`, replacing its own earlier declaration, and
 * returns the other resources' declarations of the same key.
 */
export function declare<T>(key: string, resource: string, value: T): Claim<T>[] {
  const byResource = claims.get(key) ?? new Map<string, unknown>();
  claims.set(key, byResource);
  byResource.set(resource, value);
  return declaredBy<T>(key, resource);
}

/** The declarations of `key` by resources other than `except`. */
export function declaredBy<T>(key: string, except?: string): Claim<T>[] {
  return [...(claims.get(key) ?? new Map<string, unknown>())]
    .filter(([resource]) => resource !== except)
    .map(([resource, value]) => ({ resource, value: value as T }));
}

/** Forgets every declaration (tests run many "runs" in one process). */
export function forgetClaims(): void {
  claims.clear();
}
