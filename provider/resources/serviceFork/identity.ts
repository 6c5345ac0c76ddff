// Which fork is this resource's: its identity (project, source and name), the claims keys under
// which a run records the forks its resources hold or would take over, and the rules on adopting
// one. Pure: no request, no engine.
import type { Service } from "../../api/schemas";
import { STOPPED_OR_GONE } from "../../api/statuses";

/** Claims keys (rules/claims.ts): the fork a resource holds, and the identity it declares. */
export const forkHeld = (projectId: string, serviceId: string) => `ServiceFork ${projectId}/${serviceId}`;
export const forkIdentity = (projectId: string, source: string, name: string) => `ServiceFork identity ${projectId}/${source}/${name}`;

/** A running fork named `name` of `sourceServiceId` in `projectId`: one this resource may adopt. */
export function hasIdentity(
  s: Service,
  { projectId, sourceServiceId, name }: { projectId: string; sourceServiceId: string; name?: string | undefined },
) {
  return (
    s.name === name &&
    s.forked_from?.service_id === sourceServiceId &&
    (s.forked_from.project_id ?? projectId) === projectId &&
    !STOPPED_OR_GONE.includes(s.status)
  );
}

/**
 * Why a service cannot be taken under management by adoptServiceId, checked in this order; undefined
 * when it can. (Existence is checked first, by the caller, with the "gone" rule.)
 */
export function adoptionProblem(service: Service, inputs: { sourceServiceId: string; name?: string | undefined }): string | undefined {
  const id = service.service_id;
  const parent = service.forked_from?.service_id;
  if (parent !== inputs.sourceServiceId)
    return parent
      ? `service ${id} is a fork of ${parent}, not of sourceServiceId ${inputs.sourceServiceId}`
      : `service ${id} is not a fork (it has no forked_from): adopting the source itself, or another service, is refused`;
  if (STOPPED_OR_GONE.includes(service.status))
    return `service ${id} is ${service.status}: only a running fork can be adopted (start it first)`;
  if (inputs.name !== undefined && service.name !== inputs.name) return `service ${id} is named "${service.name}", not "${inputs.name}"`;
  return undefined;
}
