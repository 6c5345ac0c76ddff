// Which fork is this resource's: its identity (project, source and name), and the rules on
// adopting one. Pure: no request, no engine.
import { notAForkOf } from "../../api/forks";
import type { Service } from "../../api/schemas";
import { STOPPED_OR_GONE } from "../../api/statuses";
import { TigerCloudError } from "../../errors";

export { notAForkOf };

/** A running fork named `name` of `sourceServiceId` in `projectId`: one this resource may adopt. */
export function hasIdentity(s: Service, ids: { projectId: string; sourceServiceId: string; name?: string | undefined }) {
  return s.name === ids.name && notAForkOf(s, ids) === undefined && !STOPPED_OR_GONE.includes(s.status);
}

/**
 * Why a service cannot be taken under management by adoptServiceId, checked in this order; undefined
 * when it can. (Existence is checked first, by the caller, with the "gone" rule.)
 */
export function adoptionProblem(
  service: Service,
  inputs: { projectId: string; sourceServiceId: string; name?: string | undefined },
): string | undefined {
  const id = service.service_id;
  const notOurs = notAForkOf(service, inputs);
  if (notOurs) return service.forked_from ? notOurs : `${notOurs}: adopting the source itself, or another service, is refused`;
  if (STOPPED_OR_GONE.includes(service.status))
    return `service ${id} is ${service.status}: only a running fork can be adopted (start it first)`;
  if (inputs.name !== undefined && service.name !== inputs.name) return `service ${id} is named "${service.name}", not "${inputs.name}"`;
  return undefined;
}

/**
 * The one fork of `found` to take over; several are an error that names them (Pulumi cannot tell
 * which is this resource's), and nothing is made.
 */
export function oneToAdopt(found: Service[], inputs: { projectId: string; sourceServiceId: string; name?: string | undefined }): Service {
  const [fork, ...others] = found;
  if (!fork) throw new TigerCloudError("No fork was found to take over (a bug: the caller must find one first).");
  if (others.length > 0) {
    const list = found.map((s) => `${s.service_id} (created ${s.created ?? "at an unknown time"}, ${s.status})`).join(", ");
    throw new TigerCloudError(
      `${found.length} running forks of service ${inputs.sourceServiceId} are named "${inputs.name}" in project ${inputs.projectId}: ${list}. ` +
        `Pulumi cannot tell which one is this resource's, so it made none. Stop or delete all but one, or give this fork another name, ` +
        `or set adoptExisting: false to make a new one.`,
    );
  }
  return fork;
}

/**
 * What progress says of a fork taken over (`named`: by adoptServiceId), and of its password,
 * which only the answer that made it held.
 */
export function adoptionNote(fork: Service, passwordOnAdopt: "keep" | "reset", reason: string, named: boolean): string {
  const taking = named
    ? `taking fork ${fork.service_id} ("${fork.name}", ${fork.status}) under management (adoptServiceId)`
    : `adopting fork ${fork.service_id} ("${fork.name}", ${fork.status}) instead of forking again: ${reason}`;
  const password =
    passwordOnAdopt === "keep"
      ? `Its initial password is not known (only the answer that made it held it), and passwordOnAdopt is "keep": set a new one in the Tiger Cloud console or with the tiger CLI.`
      : `Its initial password is not known (only the answer that made it held it): a new one will be set.`;
  return `${taking}. ${password}`;
}
