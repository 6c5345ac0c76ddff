// What a ServiceHA declares for the run: one declaration of a service's HA is the rule, so two
// that differ fail at preview, and a delete leaves alone the HA another resource declares.
import type { CallContext } from "../../context/context";
import { type Claim, describeDeclarant, recordClaim } from "../../rules/claims";
import { type Failure, isKnownText, isUnknown, type Pending } from "../../rules/inputs";
import { COUNT_KEYS, type DeclaredCounts, type HAInputs } from "./inputs";

/** The claims key of a service's HA (rules/claims.ts). */
export const haOf = (projectId: string, serviceId: string) => `ServiceHA ${projectId}/${serviceId}`;

/**
 * Two ServiceHA of one service with different counts would flip it on every `up`: the second to
 * be checked fails, naming both. The same counts are allowed, with a warning.
 */
export function recordHAClaims(ctx: CallContext, inputs: Pending<HAInputs>): Failure[] {
  const { resource } = ctx;
  const { projectId, serviceId } = inputs;
  if (!isKnownText(projectId) || !isKnownText(serviceId)) return []; // unknown until apply: the check `up` makes once it is known records it
  const counts: DeclaredCounts = { replicaCount: inputs.replicaCount, syncReplicaCount: inputs.syncReplicaCount };
  const others = recordClaim<DeclaredCounts>(ctx, haOf(projectId, serviceId), resource, counts);
  const failures: Failure[] = [];
  for (const other of others) {
    const differ = COUNT_KEYS.filter((k) => {
      const [mine, theirs] = [counts[k], other.value[k]];
      return mine !== undefined && theirs !== undefined && !isUnknown(mine) && !isUnknown(theirs) && mine !== theirs;
    });
    if (differ.length > 0) {
      const k = differ[0] as (typeof COUNT_KEYS)[number];
      failures.push({
        property: k,
        reason:
          `ServiceHA ${describeDeclarant(resource)} and ServiceHA ${describeDeclarant(other.resource)} both set the HA of service ${serviceId} (project ${projectId}), ` +
          `with ${k} ${String(counts[k])} and ${String(other.value[k])}: each \`up\` would undo the other. Keep one ServiceHA per service.`,
      });
    } else {
      ctx.progress(
        `warning: ServiceHA ${describeDeclarant(resource)} and ServiceHA ${describeDeclarant(other.resource)} both set the HA of service ${serviceId}, to the same counts; ` +
          `keep one. While both are declared, removing either leaves the HA as the other declares it.`,
      );
    }
  }
  return failures;
}

export const describeClaims = (claims: Claim<unknown>[]) => claims.map((c) => describeDeclarant(c.resource)).join(" and ");
