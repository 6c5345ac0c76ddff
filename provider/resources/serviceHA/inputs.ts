// A ServiceHA's inputs: their schema, the diff rules, and what setHA accepts. Pure: no request, no engine.
import { z } from "zod";
import type { Service } from "../../api/schemas";
import type { DiffRules } from "../../rules/diff";
import { booleanSchema, durationSchema, idSchema } from "../../rules/inputSchemas";
import { WAIT_DEFAULTS } from "../../policies/waiting";

// setHA's limits: the API's spec leaves them "not shown", but the product offers 0, 1 or 2 replicas
// and 1 synchronous replica only with 2, and refuses anything else with a 400, so preview says so first.
const MAX_REPLICAS = 2;
const SYNC_NEEDS = 2;
const OFFERED = "Tiger Cloud offers 0, 1 or 2 HA replicas, and 1 synchronous replica only with 2 replicas";

export type DeclaredCounts = { replicaCount?: unknown; syncReplicaCount?: unknown };
export const COUNT_KEYS = ["replicaCount", "syncReplicaCount"] as const;

/**
 * What setHA would refuse once a count left undeclared keeps its live value (a count unset has no
 * opinion: setHA leaves it as it is). `live` is the service's counts now; undefined when all is well.
 */
export function undeclaredCountProblem(
  declared: DeclaredCounts,
  live: { replicaCount: number; syncReplicaCount: number },
): string | undefined {
  const replicas = typeof declared.replicaCount === "number" ? declared.replicaCount : undefined;
  const sync = typeof declared.syncReplicaCount === "number" ? declared.syncReplicaCount : undefined;
  if (replicas !== undefined && sync === undefined && live.syncReplicaCount >= 1 && replicas !== SYNC_NEEDS)
    return (
      `replicaCount ${replicas} would leave its ${live.syncReplicaCount} synchronous replica(s), as syncReplicaCount is not declared, ` +
      `and setHA refuses that: ${OFFERED}. Declare syncReplicaCount: 0 as well.`
    );
  if (sync !== undefined && replicas === undefined && sync >= 1 && live.replicaCount !== SYNC_NEEDS)
    return (
      `syncReplicaCount ${sync} would go with its ${live.replicaCount} replica(s), as replicaCount is not declared, ` +
      `and setHA refuses that: ${OFFERED}. Declare replicaCount: 2 as well.`
    );
  return undefined;
}

const count = z.number({ error: "must be an integer >= 0" }).int("must be an integer >= 0").min(0, "must be an integer >= 0").optional();

/** @internal */
export const HAInputsSchema = z
  .strictObject({
    projectId: idSchema.describe(
      "The project of the service. Default: the provider's project (stack config tigercloud:projectId, or TIGER_PROJECT_ID, else the key's project).",
    ),
    serviceId: idSchema.describe("The service whose HA is set; a fork's service ID works (the change waits for the fork)."),
    replicaCount: count.describe("HA replicas: 0, 1 or 2 (all asynchronous unless syncReplicaCount says otherwise). At least one count."),
    syncReplicaCount: count.describe("Synchronous HA replicas: 0, or 1 with replicaCount 2."),
    waitForReady: booleanSchema
      .default(true)
      .describe("Wait until the service is READY with the counts, after create, update and destroy. Default true."),
    updateTimeout: durationSchema
      .default(WAIT_DEFAULTS.updateTimeout)
      .describe('How long create and update wait (for the service to be READY, then for the counts), e.g. "30m" (default); at most "24h".'),
    deleteTimeout: durationSchema
      .default(WAIT_DEFAULTS.deleteTimeout)
      .describe('How long destroy waits for HA to be removed, e.g. "10m" (default); at most "24h".'),
  })
  .superRefine((v, ctx) => {
    const involves = ["replicaCount", "syncReplicaCount"];
    if (v.replicaCount === undefined && v.syncReplicaCount === undefined) {
      ctx.addIssue({
        code: "custom",
        path: ["replicaCount"],
        message: "or syncReplicaCount must be set: at least one count",
        params: { involves },
      });
    }
    const [replicas, sync] = [v.replicaCount, v.syncReplicaCount];
    if (replicas !== undefined && replicas > MAX_REPLICAS) {
      ctx.addIssue({
        code: "custom",
        path: ["replicaCount"],
        message: `must be 0, 1 or 2 (not ${replicas}): ${OFFERED}`,
        params: { involves },
      });
    }
    if (sync === undefined) return;
    let syncProblem: string | undefined;
    if (replicas !== undefined && sync > replicas) syncProblem = `must not exceed replicaCount (${sync} > ${replicas})`;
    else if (sync > 1) syncProblem = `must be 0 or 1 (not ${sync}): ${OFFERED}`;
    else if (sync === 1 && replicas !== undefined && replicas !== SYNC_NEEDS)
      syncProblem = `1 needs replicaCount 2 (not ${replicas}): ${OFFERED}. Set replicaCount: 2, or syncReplicaCount: 0`;
    if (syncProblem) ctx.addIssue({ code: "custom", path: ["syncReplicaCount"], message: syncProblem, params: { involves } });
  });
export type HAInputs = z.output<typeof HAInputsSchema>;
/** The inputs as a program declares them (before defaults). */
export type HADeclaration = z.input<typeof HAInputsSchema>;

export const HA_DIFF_RULES: DiffRules<HAInputs> = {
  replaceKeys: ["projectId", "serviceId"],
  updateKeys: ["replicaCount", "syncReplicaCount"],
  stateOnlyKeys: ["waitForReady", "updateTimeout", "deleteTimeout"],
  // The counts in state are the live ones; a count left unset has no opinion.
  optionalDeclared: ["replicaCount", "syncReplicaCount"],
};

export const liveCounts = (s: Service) => ({
  replicaCount: s.ha_replicas?.replica_count ?? 0,
  syncReplicaCount: s.ha_replicas?.sync_replica_count ?? 0,
});

/** The service has the counts declared; a count left unset matches any. */
export const hasCounts = (inputs: { replicaCount?: number | undefined; syncReplicaCount?: number | undefined }) => (s: Service) =>
  (inputs.replicaCount === undefined || (s.ha_replicas?.replica_count ?? 0) === inputs.replicaCount) &&
  (inputs.syncReplicaCount === undefined || (s.ha_replicas?.sync_replica_count ?? 0) === inputs.syncReplicaCount);

export const describeCounts = (i: { replicaCount?: number | undefined; syncReplicaCount?: number | undefined }) =>
  [i.replicaCount !== undefined && `${i.replicaCount} replica(s)`, i.syncReplicaCount !== undefined && `${i.syncReplicaCount} synchronous`]
    .filter(Boolean)
    .join(", ");
