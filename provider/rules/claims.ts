// What the resources of this run declare, kept in the provider process. The engine starts one
// dynamic-provider process per run and checks (and diffs) every resource the program declares,
// changed or not, before it deletes those the program dropped. So a delete can ask whether the
// program still declares what it would undo (the HA of a service, a fork) under another resource,
// as after a rename or a move into a component without an alias, and leave it alone.
//
// A resource is known by its URN, as the engine knows it (parent chain, type and name): a move
// into a component keeps the name and changes the URN, and only the URN tells the two apart.

import type { Declarant } from "../context/context";
import { type RunMemory, runSlot } from "../context/memory";

export type { Declarant };

/** One resource's declaration: who declares it and what. */
export interface Claim<T> {
  resource: Declarant;
  value: T;
}

/**
 * Where a run's declarations are kept: each key's, by the declaring resource's URN, a resource's
 * later declaration of a key replacing its earlier one. The dynamic provider keeps them in its
 * process (one per run); the plugin, whose run has a process per provider instance, in a book
 * those processes share (plugin/claimBook.ts).
 */
export interface ClaimBook {
  record(key: string, claim: Claim<unknown>): void;
  claims(key: string): Claim<unknown>[];
}

/** A run's declarations in this process. */
class ClaimsInMemory implements ClaimBook {
  private readonly byKey = new Map<string, Map<string, Claim<unknown>>>();
  record(key: string, claim: Claim<unknown>): void {
    const byResource = this.byKey.get(key) ?? new Map<string, Claim<unknown>>();
    this.byKey.set(key, byResource);
    byResource.set(claim.resource.urn, claim);
  }
  claims(key: string): Claim<unknown>[] {
    return [...(this.byKey.get(key)?.values() ?? [])];
  }
}

/** The run's book of declarations: a host may put a shared one in this slot before the run starts. */
export const CLAIM_BOOK = runSlot<ClaimBook>(() => new ClaimsInMemory());

/**
 * Records that `resource` declares `value` for `key`, replacing its own earlier declaration, and
 * returns the other resources' declarations of the same key.
 */
export function recordClaim<T>(run: RunMemory, key: string, resource: Declarant, value: T): Claim<T>[] {
  run.learnt(CLAIM_BOOK).record(key, { resource, value });
  return declaredBy<T>(run, key, resource);
}

/** The declarations of `key` by resources other than `except` (another URN). */
export function declaredBy<T>(run: RunMemory, key: string, except?: Declarant): Claim<T>[] {
  return run
    .learnt(CLAIM_BOOK)
    .claims(key)
    .filter((claim): claim is Claim<T> => claim.resource.urn !== except?.urn);
}

/**
 * How a message names a resource: `"db"`, or `"db" (in a my:index:Preview)` when it sits in a
 * component, so that the two sides of a move read apart.
 */
export function describeDeclarant(resource: Declarant): string {
  const types = resource.urn.split("::")[2]?.split("$") ?? [];
  const parent = types.length > 1 ? types[types.length - 2] : undefined;
  return parent ? `"${resource.name}" (in a ${parent})` : `"${resource.name}"`;
}
