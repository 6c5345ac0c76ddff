// ServiceFork: a fork of a Tiger Cloud service (forkService), awaited until READY. Destroying it
// STOPS the fork (stop): the API has no delete in this interface, so the fork still exists,
// paused, afterwards.
import * as pulumi from "@pulumi/pulumi";
import { z } from "zod";
import { ENVIRONMENT_TAGS, FORK_STRATEGIES, type ForkServiceRequest, type Service } from "./api-schemas";
import { BadRequestError, NotFoundError } from "./errors";
import {
  type DiffRules,
  WAIT_DEFAULTS,
  clientNow,
  durationSchema,
  idSchema,
  onlyStateChanged,
  parseDuration,
  partialFailure,
  plain,
  progress,
  serializedProvider,
  serviceUnlessGone,
  standardMethods,
  waitForService,
  withoutProvider,
} from "./resource-kit";

export interface ServiceForkArgs {
  /** Project of the source service and of the fork. Default: tigercloud:projectId or TIGER_PROJECT_ID. */
  projectId?: pulumi.Input<string>;
  /** The service to fork. */
  sourceServiceId: pulumi.Input<string>;
  /** LAST_SNAPSHOT, NOW, or PITR (point in time: needs targetTime). */
  forkStrategy: pulumi.Input<"LAST_SNAPSHOT" | "NOW" | "PITR">;
  /** RFC 3339 time to fork at; required with PITR and only with PITR; not in the future. */
  targetTime?: pulumi.Input<string>;
  /** Millicores (a number or numeric string), or "shared". Default: the parent's. */
  cpuMillis?: pulumi.Input<number | string>;
  /** Gigabytes (a number or numeric string), or "shared". Default: the parent's. */
  memoryGbs?: pulumi.Input<number | string>;
  /** DEV (default) or PROD. */
  environmentTag?: pulumi.Input<"DEV" | "PROD">;
  /** 1 to 128 characters. Default: "<parent name>-fork". */
  name?: pulumi.Input<string>;
  /** Wait until the fork is READY after create, and PAUSED after destroy. Default true. */
  waitForReady?: pulumi.Input<boolean>;
  /** How long create waits for READY, e.g. "30m" (default). */
  createTimeout?: pulumi.Input<string>;
  /** How long destroy waits for PAUSED, e.g. "10m" (default). */
  deleteTimeout?: pulumi.Input<string>;
}

export interface Endpoint {
  host?: string;
  port?: number;
}

export class ServiceFork extends pulumi.dynamic.Resource {
  /** The fork's service ID (also the resource ID). */
  declare readonly serviceId: pulumi.Output<string>;
  declare readonly projectId: pulumi.Output<string>;
  declare readonly name: pulumi.Output<string>;
  declare readonly status: pulumi.Output<string>;
  declare readonly serviceType: pulumi.Output<string | undefined>;
  declare readonly regionCode: pulumi.Output<string | undefined>;
  declare readonly created: pulumi.Output<string | undefined>;
  declare readonly endpoint: pulumi.Output<Endpoint | undefined>;
  declare readonly connectionPooler: pulumi.Output<{ endpoint?: Endpoint } | undefined>;
  declare readonly forkedFrom: pulumi.Output<{ isStandby?: boolean; projectId?: string; serviceId?: string } | undefined>;
  declare readonly haReplicas: pulumi.Output<{ replicaCount?: number; syncReplicaCount?: number } | undefined>;
  declare readonly resources: pulumi.Output<{ id?: string; cpuMillis?: number; memoryGbs?: number; volumeType?: string }[] | undefined>;
  declare readonly environment: pulumi.Output<string | undefined>;
  /** The initial password of the fork's database. Always secret. */
  declare readonly initialPassword: pulumi.Output<string | undefined>;

  constructor(name: string, args: ServiceForkArgs, opts?: pulumi.CustomResourceOptions) {
    const outputs = {
      serviceId: undefined,
      status: undefined,
      serviceType: undefined,
      regionCode: undefined,
      created: undefined,
      endpoint: undefined,
      connectionPooler: undefined,
      forkedFrom: undefined,
      haReplicas: undefined,
      resources: undefined,
      environment: undefined,
      initialPassword: undefined,
    };
    super(
      serializedProvider("ServiceFork"),
      name,
      { ...outputs, name: undefined, ...args },
      {
        ...opts,
        additionalSecretOutputs: [...(opts?.additionalSecretOutputs ?? []), "initialPassword"],
      },
      "tigercloud",
      "ServiceFork",
    );
  }
}

// ---- provider implementation (runs in the provider process) -----------------------------

const size = z
  .union(
    [
      z.number().positive("must be positive"),
      z.string().regex(/^(\d+(\.\d+)?|shared)$/, 'must be a number, a numeric string, or "shared"'),
    ],
    { error: 'must be a number, a numeric string, or "shared"' },
  )
  .transform((v) => String(v));

const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

export const ForkInputsSchema = z
  .strictObject({
    projectId: idSchema,
    sourceServiceId: idSchema,
    forkStrategy: z.enum(FORK_STRATEGIES, { error: `must be one of ${FORK_STRATEGIES.join(", ")}` }),
    targetTime: z
      .string()
      .regex(RFC3339, { message: "must be an RFC 3339 date-time such as 2026-11-01T12:00:00Z", abort: true })
      .refine((t) => Date.parse(t) <= Date.now(), "must not be in the future")
      .optional(),
    cpuMillis: size.optional(),
    memoryGbs: size.optional(),
    environmentTag: z.enum(ENVIRONMENT_TAGS, { error: "must be DEV or PROD" }).default("DEV"),
    name: z.string().min(1, "must be 1 to 128 characters").max(128, "must be 1 to 128 characters").optional(),
    waitForReady: z.boolean({ error: "must be true or false" }).default(true),
    createTimeout: durationSchema.default(WAIT_DEFAULTS.createTimeout),
    deleteTimeout: durationSchema.default(WAIT_DEFAULTS.deleteTimeout),
  })
  .superRefine((v, ctx) => {
    const involves = ["forkStrategy", "targetTime"];
    if (v.forkStrategy === "PITR" && v.targetTime === undefined) {
      ctx.addIssue({ code: "custom", path: ["targetTime"], message: "is required when forkStrategy is PITR", params: { involves } });
    }
    if (v.forkStrategy !== "PITR" && v.targetTime !== undefined) {
      ctx.addIssue({
        code: "custom",
        path: ["targetTime"],
        message: `is allowed only when forkStrategy is PITR (it is ${v.forkStrategy})`,
        params: { involves },
      });
    }
    const shared = [v.cpuMillis === "shared", v.memoryGbs === "shared"];
    if (shared[0] !== shared[1]) {
      ctx.addIssue({
        code: "custom",
        path: [shared[0] ? "memoryGbs" : "cpuMillis"],
        message: 'must be "shared" too: cpuMillis and memoryGbs are both "shared" or neither',
        params: { involves: ["cpuMillis", "memoryGbs"] },
      });
    }
  });
type ForkInputs = z.output<typeof ForkInputsSchema>;

const RULES: DiffRules = {
  replaceKeys: ["projectId", "sourceServiceId", "forkStrategy", "targetTime", "cpuMillis", "memoryGbs", "environmentTag", "name"],
  stateOnlyKeys: ["waitForReady", "createTimeout", "deleteTimeout"],
  // `name` is also the fork's actual name; left unset, any name (the default one) will do.
  optionalDeclared: ["name"],
};

/** State = the checked inputs + what the API says of the fork (metrics left out: they drift). */
function forkOutputs(inputs: Record<string, unknown>, s: Service, initialPassword: unknown): Record<string, unknown> {
  return plain({
    ...inputs,
    serviceId: s.service_id,
    name: s.name ?? inputs.name,
    status: s.status,
    serviceType: s.service_type,
    regionCode: s.region_code,
    created: s.created,
    endpoint: s.endpoint && { host: s.endpoint.host, port: s.endpoint.port },
    connectionPooler: s.connection_pooler && {
      endpoint: s.connection_pooler.endpoint && { host: s.connection_pooler.endpoint.host, port: s.connection_pooler.endpoint.port },
    },
    forkedFrom: s.forked_from && {
      isStandby: s.forked_from.is_standby,
      projectId: s.forked_from.project_id,
      serviceId: s.forked_from.service_id,
    },
    haReplicas: s.ha_replicas && { replicaCount: s.ha_replicas.replica_count, syncReplicaCount: s.ha_replicas.sync_replica_count },
    resources: s.resources?.map((r) => ({
      id: r.id,
      cpuMillis: r.spec?.cpu_millis,
      memoryGbs: r.spec?.memory_gbs,
      volumeType: r.spec?.volume_type,
    })),
    environment: s.metadata?.environment,
    // GET does not return the password: keep the one the fork answered with.
    initialPassword: s.initial_password ?? initialPassword,
  });
}

const waitReady = (inputs: ForkInputs, serviceId: string) =>
  waitForService({
    client: clientNow(),
    projectId: inputs.projectId,
    serviceId,
    goal: "READY",
    done: (s) => s.status === "READY",
    hopeless: ["DELETING", "DELETED"],
    timeoutMs: parseDuration(inputs.createTimeout),
  });

export const serviceForkProvider: Required<pulumi.dynamic.ResourceProvider> = {
  ...standardMethods(ForkInputsSchema, RULES),

  async create(news) {
    const inputs = ForkInputsSchema.parse(withoutProvider(news));
    const body: ForkServiceRequest = { fork_strategy: inputs.forkStrategy, environment_tag: inputs.environmentTag };
    if (inputs.targetTime !== undefined) body.target_time = inputs.targetTime;
    if (inputs.cpuMillis !== undefined) body.cpu_millis = inputs.cpuMillis;
    if (inputs.memoryGbs !== undefined) body.memory_gbs = inputs.memoryGbs;
    if (inputs.name !== undefined) body.name = inputs.name;

    progress(`forking service ${inputs.sourceServiceId} (${inputs.forkStrategy})`);
    const forked = await clientNow().forkService(inputs.projectId, inputs.sourceServiceId, body);
    const id = forked.service_id;
    if (!id)
      throw new Error(
        `forkService answered without a service_id; the fork may exist: look in project ${inputs.projectId} for a service forked from ${inputs.sourceServiceId}.`,
      );
    let outs = forkOutputs(inputs, forked, undefined);
    progress(`fork ${id} created, status ${forked.status ?? "unknown"}`);
    // From here on the fork exists: any failure must hand its ID to the engine.
    try {
      if (inputs.waitForReady && forked.status !== "READY") {
        outs = forkOutputs(inputs, await waitReady(inputs, id), outs.initialPassword);
        progress(`fork ${id} is READY`);
      }
    } catch (err) {
      throw partialFailure(id, outs, news, err);
    }
    return { id, outs };
  },

  async read(id, props) {
    const service = await serviceUnlessGone(clientNow(), String(props.projectId), id);
    if (!service) return {};
    const outs = forkOutputs(withoutProvider(props), service, props.initialPassword);
    // `name` stays the name the fork was made with: this API cannot rename a service, so a
    // rename made elsewhere could only be "fixed" by replacing the fork, data and all.
    if (typeof props.name === "string") outs.name = props.name;
    return { id, props: outs };
  },

  async update(id, olds, news) {
    const inputs = ForkInputsSchema.parse(withoutProvider(news));
    const outs = { ...withoutProvider(olds), ...inputs };
    if (!onlyStateChanged(olds, news, RULES)) {
      throw new Error("ServiceFork.update was asked to change a property that needs a replacement; this is a bug in pulumi-tigercloud.");
    }
    // A create that failed to become READY (recorded by partialFailure) is finished here.
    if (inputs.waitForReady && olds.status !== "READY") {
      try {
        return { outs: forkOutputs(outs, await waitReady(inputs, id), olds.initialPassword) };
      } catch (err) {
        throw partialFailure(id, outs, news, err);
      }
    }
    return { outs: plain(outs) };
  },

  async delete(id, props) {
    const projectId = String(props.projectId);
    const waitForReady = props.waitForReady !== false;
    const client = clientNow();
    progress(`stopping fork ${id} (destroy stops a fork; it is not deleted)`);
    try {
      await client.stop(projectId, id);
    } catch (err) {
      if (err instanceof NotFoundError) {
        progress(`fork ${id} no longer exists; nothing to stop`);
        return;
      }
      if (!(err instanceof BadRequestError)) throw err;
      // 400 is the answer for a service already PAUSED; anything else is a real refusal.
      const status = (await client.getService(projectId, id)).status;
      if (status !== "PAUSED" && status !== "PAUSING") throw err;
      progress(`fork ${id} is already ${status}`);
    }
    if (!waitForReady) return;
    await waitForService({
      client,
      projectId,
      serviceId: id,
      goal: "PAUSED",
      done: (s) => s.status === "PAUSED",
      hopeless: ["DELETING", "DELETED"],
      timeoutMs: parseDuration(typeof props.deleteTimeout === "string" ? props.deleteTimeout : WAIT_DEFAULTS.deleteTimeout),
    });
    progress(`fork ${id} is PAUSED`);
  },
};
