// What makes a service a fork of another, the one rule for every program that acts on forks: the
// resources (which fork is a ServiceFork's, which may be stopped or deleted) and the fork janitor
// (forks/). Public, through the client entry ("pulumi-tigercloud/client").
import type { Service } from "./schemas";

/**
 * Why `s` is not a fork of `sourceServiceId` (whose project is `projectId`) that a ServiceFork may
 * take, stop or delete; undefined when it is one. A standby of the source carries forked_from too,
 * with is_standby: it is part of the source's high availability, never anyone's fork.
 */
export function notAForkOf(s: Service, { projectId, sourceServiceId }: { projectId: string; sourceServiceId: string }): string | undefined {
  const id = s.service_id;
  const from = s.forked_from;
  if (!from?.service_id) return `service ${id} is not a fork (it has no forked_from)`;
  if (from.is_standby === true) return `service ${id} is a standby of service ${from.service_id} (forked_from.is_standby), not a fork`;
  if (from.service_id !== sourceServiceId)
    return `service ${id} is a fork of ${from.service_id}, not of sourceServiceId ${sourceServiceId}`;
  if ((from.project_id ?? projectId) !== projectId)
    return `service ${id} is a fork of ${sourceServiceId} in project ${from.project_id}, not in project ${projectId}`;
  return undefined;
}
