// What a ServiceFork declares for the run (rules/claims.ts): the fork it holds, and its identity
// with whether `up` would take over a running fork that has it. A delete spares a fork that another
// resource of the run holds or would take over (a rename or a move without an alias).
import type { CallContext, Declarant } from "../../context/context";
import type { RunMemory } from "../../context/memory";
import { declaredBy, describeDeclarant, recordClaim } from "../../rules/claims";
import { type Failure, isKnownText, type Pending } from "../../rules/inputs";
import type { ForkInputs } from "./inputs";
import type { ServiceForkState } from "./state";

/** Claims keys (rules/claims.ts): the fork a resource holds, and the identity it declares. */
const forkHeld = (projectId: string, serviceId: string) => `ServiceFork ${projectId}/${serviceId}`;
const forkIdentity = (projectId: string, source: string, name: string) => `ServiceFork identity ${projectId}/${source}/${name}`;

/** How a resource came to hold a fork this run: its create made it or took it over, or its diff kept it. */
export type Holding = "made" | "taken over" | "kept";

/** Records that `resource` holds fork `serviceId` from now on (a create, or a fork the program keeps). */
export function claimFork(run: RunMemory, projectId: string, serviceId: string, resource: Declarant, how: Holding): void {
  recordClaim(run, forkHeld(projectId, serviceId), resource, how);
}

/**
 * What a fork declaration claims for the run: the fork adoptServiceId names, and the identity,
 * with whether `up` would take over a running fork that has it. A delete spares both (see
 * heldElsewhere). Two resources of one program with the same identity would be adopted into one
 * fork (or race to make two): the second to be checked fails, naming both.
 */
export function recordForkClaims(ctx: CallContext, inputs: Pending<ForkInputs>): Failure[] {
  const { resource } = ctx;
  const { projectId, sourceServiceId, name, adoptServiceId } = inputs;
  if (isKnownText(projectId) && isKnownText(adoptServiceId))
    recordClaim<Holding>(ctx, forkHeld(projectId, adoptServiceId), resource, "kept");
  // A value unknown until apply declares nothing yet: the check `up` makes once it is known does.
  if (!isKnownText(projectId) || !isKnownText(sourceServiceId) || !isKnownText(name)) return [];
  const adopts = inputs.adoptExisting !== false && adoptServiceId === undefined;
  const others = recordClaim(ctx, forkIdentity(projectId, sourceServiceId, name), resource, adopts);
  return others.map((other) => ({
    property: "name",
    reason:
      `ServiceFork ${describeDeclarant(resource)} and ServiceFork ${describeDeclarant(other.resource)} both declare a fork named "${name}" of service ${sourceServiceId}: ` +
      `a fork's identity is its project, source and name, so they would be one fork. Give each its own name.`,
  }));
}

/**
 * Whether this resource's replacement, created earlier in this run, took over the fork its old
 * state holds: a replacement the engine forces (`--replace`) asks the provider no diff, so it is
 * made before the old one is deleted, and a named fork's replacement adopts the old, still running.
 */
export function takenOverByReplacement(ctx: CallContext, id: string, state: ServiceForkState): boolean {
  return declaredBy<Holding>(ctx, forkHeld(state.projectId, id)).some(
    (claim) => claim.resource.urn === ctx.resource.urn && claim.value === "taken over",
  );
}

/**
 * The other resources of this run that hold this fork, or would take it over: by adoptServiceId,
 * or by its identity (name and source) with adoptExisting. Destroy leaves such a fork alone.
 */
export function heldElsewhere(ctx: CallContext, id: string, state: ServiceForkState): { resource: Declarant }[] {
  const me = ctx.resource;
  const { projectId, sourceServiceId, name } = state;
  const holders = declaredBy(ctx, forkHeld(projectId, id), me);
  if (name === undefined) return holders;
  const adopters = declaredBy<boolean>(ctx, forkIdentity(projectId, sourceServiceId, name), me).filter((claim) => claim.value);
  const byUrn = new Map([...holders, ...adopters].map((claim) => [claim.resource.urn, claim]));
  return [...byUrn.values()];
}
