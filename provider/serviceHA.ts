// ServiceHA: the high-availability replica counts of a service (setHA), changed in place.
// Destroying it restores no HA (0 replicas) and NEVER stops the service: the program does not own
// the service. Use `retainOnDelete: true` to keep the replicas when the resource goes.
import * as pulumi from "@pulumi/pulumi";
import { z } from "zod";
import type { Service, SetHARequest } from "./api/schemas";
import { WaitError } from "./errors";
import { sendWhenSettled } from "./workflows/busy";
import { type Claim, type Declarant, declare, declaredBy, describeDeclarant } from "./rules/claims";
import { defineProvider } from "./resources/defineProvider";
import { serviceUnlessGone } from "./workflows/gone";
import { clientNow, progress } from "./engine/host";
import { booleanSchema, type DiffRules, durationSchema, idSchema, isUnknown, parseDuration, declarantOf } from "./rules/inputs";
import { partialFailure, plain } from "./rules/outputs";
import { serializedProvider } from "./program/serializedProvider";
import { expectedUrn } from "./program/urn";
import { WAIT_DEFAULTS, waitForService } from "./workflows/waiting";

export interface ServiceHAArgs {
  /** Default: tigercloud:projectId or TIGER_PROJECT_ID. */
  projectId?: pulumi.Input<string>;
  /** The service whose HA is set; a fork's `serviceId` works (the change waits for the fork). */
  serviceId: pulumi.Input<string>;
  /** HA replicas (all asynchronous unless syncReplicaCount says otherwise). At least one count. */
  replicaCount?: pulumi.Input<number>;
  /** Synchronous HA replicas; not more than replicaCount. */
  syncReplicaCount?: pulumi.Input<number>;
  /** Wait until the service is READY with the counts, after create, update and destroy. Default true. */
  waitForReady?: pulumi.Input<boolean>;
  /** How long create and update wait (for the service to be READY, then for the counts), e.g. "30m" (default); at most "24h". */
  updateTimeout?: pulumi.Input<string>;
  /** How long destroy waits for HA to be removed, e.g. "10m" (default); at most "24h". */
  deleteTimeout?: pulumi.Input<string>;
}

export class ServiceHA extends pulumi.dynamic.Resource {
  declare readonly projectId: pulumi.Output<string>;
  declare readonly serviceId: pulumi.Output<string>;
  /** The live count: refresh shows a change made outside Pulumi. */
  declare readonly replicaCount: pulumi.Output<number>;
  declare readonly syncReplicaCount: pulumi.Output<number>;
  declare readonly status: pulumi.Output<string | undefined>;

  constructor(name: string, args: ServiceHAArgs, opts?: pulumi.CustomResourceOptions) {
    super(
      serializedProvider("ServiceHA"),
      name,
      {
        status: undefined,
        replicaCount: undefined,
        syncReplicaCount: undefined,
        ...args,
        __resourceName: name,
        __resourceUrn: expectedUrn(name, "pulumi-nodejs:dynamic/tigercloud:ServiceHA", opts),
      },
      opts,
      "tigercloud",
      "ServiceHA",
    );
  }
}

// ---- provider implementation (runs in the provider process) -----------------------------

// setHA's limits: the API's spec leaves them "not shown", but the product offers 0, 1 or 2 replicas
// and 1 synchronous replica only with 2, and refuses anything else with a 400, so preview says so first.
const MAX_REPLICAS = 2;
const SYNC_NEEDS = 2;
const OFFERED = "Tiger Cloud offers 0, 1 or 2 HA replicas, and 1 synchronous replica only with 2 replicas";

/**
 * What setHA would refuse once a count left undeclared keeps its live value (a count unset has no
 * opinion: setHA leaves it as it is). `live` is the service's counts now; undefined when all is well.
 */
function undeclaredCountProblem(declared: DeclaredCounts, live: { replicaCount: number; syncReplicaCount: number }): string | undefined {
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
    projectId: idSchema,
    serviceId: idSchema,
    replicaCount: count,
    syncReplicaCount: count,
    waitForReady: booleanSchema.default(true),
    updateTimeout: durationSchema.default(WAIT_DEFAULTS.updateTimeout),
    deleteTimeout: durationSchema.default(WAIT_DEFAULTS.deleteTimeout),
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
type HAInputs = z.output<typeof HAInputsSchema>;

const RULES: DiffRules = {
  replaceKeys: ["projectId", "serviceId"],
  updateKeys: ["replicaCount", "syncReplicaCount"],
  stateOnlyKeys: ["waitForReady", "updateTimeout", "deleteTimeout"],
  // The counts in state are the live ones; a count left unset has no opinion.
  optionalDeclared: ["replicaCount", "syncReplicaCount"],
};

const liveCounts = (s: Service) => ({
  replicaCount: s.ha_replicas?.replica_count ?? 0,
  syncReplicaCount: s.ha_replicas?.sync_replica_count ?? 0,
});

function haOutputs(inputs: Record<string, unknown>, s: Service): Record<string, unknown> {
  return plain({ ...inputs, ...liveCounts(s), status: s.status });
}

const matches = (inputs: { replicaCount?: number | undefined; syncReplicaCount?: number | undefined }) => (s: Service) =>
  (inputs.replicaCount === undefined || (s.ha_replicas?.replica_count ?? 0) === inputs.replicaCount) &&
  (inputs.syncReplicaCount === undefined || (s.ha_replicas?.sync_replica_count ?? 0) === inputs.syncReplicaCount);

const describeCounts = (i: { replicaCount?: number | undefined; syncReplicaCount?: number | undefined }) =>
  [i.replicaCount !== undefined && `${i.replicaCount} replica(s)`, i.syncReplicaCount !== undefined && `${i.syncReplicaCount} synchronous`]
    .filter(Boolean)
    .join(", ");

/** What setting HA needs: the service, the counts, whether to wait, and by when. */
type HATarget = Pick<HAInputs, "projectId" | "serviceId" | "replicaCount" | "syncReplicaCount" | "waitForReady"> & {
  /** One deadline for the whole change: waiting for READY, setHA, waiting for the counts. */
  deadline: number;
  timeoutInput: "updateTimeout" | "deleteTimeout";
};

const UNREACHABLE = ["PAUSING", "PAUSED", "DELETING", "DELETED"];
/** A paused service shows no HA to speak of: its recorded counts stand until it runs again. */
const STOPPED = ["PAUSING", "PAUSED"];

/** The claims key of a service's HA (rules/claims.ts): one declaration per service is the rule. */
const haOf = (projectId: string, serviceId: string) => `ServiceHA ${projectId}/${serviceId}`;
type DeclaredCounts = { replicaCount?: unknown; syncReplicaCount?: unknown };
const COUNT_KEYS = ["replicaCount", "syncReplicaCount"] as const;

/**
 * Two ServiceHA of one service with different counts would flip it on every `up`: the second to
 * be checked fails, naming both. The same counts are allowed, with a warning.
 */
function declareHA(inputs: Record<string, unknown>, resource: Declarant): pulumi.dynamic.CheckFailure[] {
  const { projectId, serviceId } = inputs;
  if (typeof projectId !== "string" || typeof serviceId !== "string") return []; // unknown until apply
  const counts: DeclaredCounts = { replicaCount: inputs.replicaCount, syncReplicaCount: inputs.syncReplicaCount };
  const others = declare<DeclaredCounts>(haOf(projectId, serviceId), resource, counts);
  const failures: pulumi.dynamic.CheckFailure[] = [];
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
      progress(
        `warning: ServiceHA ${describeDeclarant(resource)} and ServiceHA ${describeDeclarant(other.resource)} both set the HA of service ${serviceId}, to the same counts; ` +
          `keep one. While both are declared, removing either leaves the HA as the other declares it.`,
      );
    }
  }
  return failures;
}

const describeClaims = (claims: Claim<unknown>[]) => claims.map((c) => describeDeclarant(c.resource)).join(" and ");

const waitUntil = (target: HATarget, goal: string, done: (s: Service) => boolean) =>
  waitForService({
    client: clientNow(),
    projectId: target.projectId,
    serviceId: target.serviceId,
    goal,
    done,
    hopeless: UNREACHABLE,
    timeoutMs: Math.max(0, target.deadline - Date.now()),
    timeoutInput: target.timeoutInput,
  });

/** setHA once the service can take it. */
async function setHAWhenReady(target: HATarget): Promise<Service> {
  const client = clientNow();
  const { projectId, serviceId } = target;
  // A service still being created or reconfigured (a fork from the same program with
  // waitForReady false, say) refuses setHA: wait for READY first.
  const service = await client.getService(projectId, serviceId, { deadline: target.deadline });
  if (STOPPED.includes(service.status)) {
    // Its HA cannot change until it runs again: say so now rather than wait out the timeout.
    throw new WaitError(
      `Service ${serviceId} is ${service.status}: HA cannot be changed while it is paused. ` +
        `Resume it first (paused: false on its ServiceFork, or start it in the console), then run \`pulumi up\` again.`,
    );
  }
  if (service.status !== "READY") await waitUntil(target, "READY before changing HA", (s) => s.status === "READY");
  const body: SetHARequest = {};
  if (target.replicaCount !== undefined) body.replica_count = target.replicaCount;
  if (target.syncReplicaCount !== undefined) body.sync_replica_count = target.syncReplicaCount;
  progress(`setting HA of service ${serviceId} to ${describeCounts(target)}`);
  const busy = { client, projectId, serviceId, role: "service", action: "change HA", accepts: ["READY"] };
  return sendWhenSettled({ ...busy, deadline: target.deadline, timeoutInput: target.timeoutInput }, () =>
    client.setHA(projectId, serviceId, body),
  );
}

/** Unless told not to, wait until the service is READY with the counts. */
async function awaitHA(target: HATarget, answer: Service): Promise<Service> {
  if (!target.waitForReady) return answer;
  const done = await waitUntil(target, `READY with ${describeCounts(target)}`, (s) => s.status === "READY" && matches(target)(s));
  progress(`service ${target.serviceId} is READY with ${describeCounts(target)}`);
  return done;
}

/** setHA then wait; once setHA succeeded, a failure still records the resource. */
async function applyHA(id: string, inputs: HAInputs, news: Record<string, unknown>): Promise<Record<string, unknown>> {
  const target: HATarget = { ...inputs, deadline: Date.now() + parseDuration(inputs.updateTimeout), timeoutInput: "updateTimeout" };
  const answer = await setHAWhenReady(target);
  try {
    return haOutputs(inputs, await awaitHA(target, answer));
  } catch (err) {
    throw partialFailure(id, haOutputs(inputs, answer), news, err);
  }
}

/** @internal */
export const serviceHAProvider = defineProvider({
  kind: "ServiceHA",
  schema: HAInputsSchema,
  rules: RULES,
  declare: declareHA,

  references: (inputs) => [
    {
      type: "service",
      property: "serviceId",
      projectId: inputs.projectId,
      id: inputs.serviceId,
      judge: (service) => {
        const problem = undeclaredCountProblem(inputs, liveCounts(service));
        return problem ? { failure: `names service ${service.service_id ?? inputs.serviceId}, whose ${problem}` } : {};
      },
    },
  ],

  // The counts in state are the live ones: a change that leaves one count undeclared keeps it.
  refuse(olds, news, replaces) {
    if (replaces.length > 0 || typeof olds.replicaCount !== "number" || typeof olds.syncReplicaCount !== "number") return undefined;
    const problem = undeclaredCountProblem(news, { replicaCount: olds.replicaCount, syncReplicaCount: olds.syncReplicaCount });
    return problem && `ServiceHA of service ${String(olds.serviceId)}: ${problem}`;
  },

  async create(inputs, news) {
    return { id: inputs.serviceId, outs: await applyHA(inputs.serviceId, inputs, news) };
  },

  async read(id, props) {
    const service = await serviceUnlessGone(clientNow(), String(props.projectId), id);
    if (!service) return {};
    const { __provider: _provider, ...state } = props;
    if (STOPPED.includes(service.status)) {
      progress(`service ${id} is ${service.status}; its HA is kept as recorded until it runs again`);
      return { id, props: state };
    }
    return { id, props: haOutputs(state, service) };
  },

  async update(id, _olds, inputs, news) {
    return { outs: await applyHA(id, inputs, news) };
  },

  async delete(id, props) {
    const projectId = String(props.projectId);
    const service = await serviceUnlessGone(clientNow(), projectId, id);
    if (!service) {
      progress(`service ${id} no longer exists; no HA to remove`);
      return;
    }
    const { replica_count = 0, sync_replica_count = 0 } = service.ha_replicas ?? {};
    if (replica_count === 0 && sync_replica_count === 0) return;
    // Renamed or moved without an alias, this resource is deleted after its successor set the same HA.
    const successors = declaredBy(haOf(projectId, id), declarantOf(props));
    if (successors.length > 0) {
      progress(
        `HA of service ${id} is now declared by ServiceHA ${describeClaims(successors)}; leaving it at ` +
          `${describeCounts({ replicaCount: replica_count, syncReplicaCount: sync_replica_count })}`,
      );
      return;
    }
    if (UNREACHABLE.includes(service.status)) {
      progress(`service ${id} is ${service.status}; its HA replicas cannot be changed now and are left as they are`);
      return;
    }
    const deleteTimeout = typeof props.deleteTimeout === "string" ? props.deleteTimeout : WAIT_DEFAULTS.deleteTimeout;
    const noHA: HATarget = {
      projectId,
      serviceId: id,
      replicaCount: 0,
      syncReplicaCount: 0,
      waitForReady: props.waitForReady !== false,
      deadline: Date.now() + parseDuration(deleteTimeout),
      timeoutInput: "deleteTimeout",
    };
    await awaitHA(noHA, await setHAWhenReady(noHA));
  },
});
