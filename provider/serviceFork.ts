// ServiceFork: a fork of a Tiger Cloud service (forkService), awaited until READY. Destroying it
// STOPS the fork (stop): the API has no delete in this interface, so the fork still exists,
// paused, afterwards.
import * as pulumi from "@pulumi/pulumi";
import { z } from "zod";
import { ENVIRONMENT_TAGS, FORK_STRATEGIES, type ForkServiceRequest, type Service } from "./api-schemas";
import type { TigerCloudClient } from "./client";
import { BadRequestError, ForkOutcomeUnknownError, NotFoundError, TigerCloudError } from "./errors";
import { sendWhenSettled } from "./kit/busy";
import { declare, declaredBy } from "./kit/claims";
import { defineProvider } from "./kit/define";
import { serviceUnlessGone } from "./kit/gone";
import { connectionUri, DATABASE, USERNAME, waitForLogin } from "./kit/connection";
import { clientNow, progress } from "./kit/host";
import {
  booleanSchema,
  type DiffRules,
  durationSchema,
  idSchema,
  nameSchema,
  parseDuration,
  resourceNameOf,
  textSchema,
} from "./kit/inputs";
import { partialFailure, plain } from "./kit/outputs";
import { serializedProvider } from "./kit/serialized-provider";
import type { Judgement } from "./kit/verify";
import { WAIT_DEFAULTS, waitForService } from "./kit/waiting";

export interface ServiceForkArgs {
  /** Project of the source service and of the fork. Default: tigercloud:projectId or TIGER_PROJECT_ID. */
  projectId?: pulumi.Input<string>;
  /** The service to fork. */
  sourceServiceId: pulumi.Input<string>;
  /** LAST_SNAPSHOT, NOW, or PITR (point in time: needs targetTime). */
  forkStrategy: pulumi.Input<"LAST_SNAPSHOT" | "NOW" | "PITR">;
  /** RFC 3339 time to fork at; required with PITR and only with PITR; not in the future. */
  targetTime?: pulumi.Input<string>;
  /** Whole millicores >= 1 (a number or a string of digits), or "shared". Default: the parent's. */
  cpuMillis?: pulumi.Input<number | string>;
  /** Gigabytes, a positive plain decimal (a number or a string such as "0.5"), or "shared". Default: the parent's. */
  memoryGbs?: pulumi.Input<number | string>;
  /** DEV (default) or PROD. */
  environmentTag?: pulumi.Input<"DEV" | "PROD">;
  /** 1 to 128 characters, not blank, no control characters. Default: "<parent name>-fork". */
  name?: pulumi.Input<string>;
  /**
   * Wait for the API's work to finish: until the fork is READY after create, and until it is
   * PAUSED after destroy. Default true.
   */
  waitForReady?: pulumi.Input<boolean>;
  /**
   * What "ready" means when create waits (waitForReady): "login" (default), READY and then a
   * working login as tsdbadmin (`SELECT 1`); or "status", READY only. The service has been seen to
   * report READY before its database accepts connections.
   */
  readyWhen?: pulumi.Input<"login" | "status">;
  /** How long create waits, for a busy source, for READY and for a login, e.g. "30m" (default); at most "24h". */
  createTimeout?: pulumi.Input<string>;
  /** How long destroy waits, for a busy fork and then for PAUSED, e.g. "10m" (default); at most "24h". */
  deleteTimeout?: pulumi.Input<string>;
  /**
   * With a `name`: before forking, take over a running fork of the same source with that name
   * (one left by a killed or failed `pulumi up`, or made elsewhere) instead of making a second
   * one. Default true. Two stacks that declare the same name from the same source share a fork.
   */
  adoptExisting?: pulumi.Input<boolean>;
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
  /** The initial password of the fork's database. Always secret. Empty for an adopted fork. */
  declare readonly initialPassword: pulumi.Output<string | undefined>;
  /** When the fork was taken over instead of made (see adoptExisting), and why. */
  declare readonly adopted: pulumi.Output<{ at: string; reason: string } | undefined>;
  /** The endpoint's host and port, the database (tsdb) and the admin role (tsdbadmin). */
  declare readonly host: pulumi.Output<string | undefined>;
  declare readonly port: pulumi.Output<number | undefined>;
  declare readonly database: pulumi.Output<string>;
  declare readonly username: pulumi.Output<string>;
  /**
   * `postgresql://tsdbadmin:<password>@<host>:<port>/tsdb?sslmode=require`. Always secret. Without
   * the password for an adopted fork.
   */
  declare readonly connectionUri: pulumi.Output<string | undefined>;
  /** The same through the connection pooler, when the service has one. Always secret. */
  declare readonly poolerConnectionUri: pulumi.Output<string | undefined>;

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
      adopted: undefined,
      host: undefined,
      port: undefined,
      database: undefined,
      username: undefined,
      connectionUri: undefined,
      poolerConnectionUri: undefined,
    };
    super(
      serializedProvider("ServiceFork"),
      name,
      { ...outputs, name: undefined, ...args, __resourceName: name },
      {
        ...opts,
        additionalSecretOutputs: [...(opts?.additionalSecretOutputs ?? []), ...SECRET_OUTPUTS],
      },
      "tigercloud",
      "ServiceFork",
    );
  }
}

/** Outputs that hold the password: secret without the user asking. */
const SECRET_OUTPUTS = ["initialPassword", "connectionUri", "poolerConnectionUri"];

// ---- provider implementation (runs in the provider process) -----------------------------

const SIZE_RULE = {
  cpuMillis: 'must be a whole number of millicores >= 1 (a number, or a string of digits), or "shared"',
  memoryGbs: 'must be a positive plain decimal number of gigabytes such as 4 or 0.5 (a number or a string), or "shared"',
};
const PLAIN_DECIMAL = /^(0|[1-9][0-9]{0,8})(\.[0-9]{1,6})?$/;

/** Sizes travel as strings: what check returns is the exact text create sends. */
const cpuMillisSchema = z
  .union([z.number(), z.string()], { error: SIZE_RULE.cpuMillis })
  .transform(String)
  .refine((v) => /^([1-9][0-9]{0,8}|shared)$/.test(v), SIZE_RULE.cpuMillis);
const memoryGbsSchema = z
  .union([z.number(), z.string()], { error: SIZE_RULE.memoryGbs })
  .transform(String)
  .refine((v) => v === "shared" || (PLAIN_DECIMAL.test(v) && Number(v) > 0), SIZE_RULE.memoryGbs);

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?(?:[Zz]|[+-](\d{2}):(\d{2}))$/;
const MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"];

/** What is wrong with a date-time, each kind of mistake with its own reason; undefined when right. */
export function dateTimeProblem(text: string): string | undefined {
  const m = RFC3339.exec(text);
  if (!m) return "must be an RFC 3339 date-time such as 2026-11-01T12:00:00Z";
  const [year, month, day, hour, minute, second, offsetHours, offsetMinutes] = [1, 2, 3, 4, 5, 6, 8, 9].map((i) =>
    Number(m[i] ?? 0),
  ) as number[];
  if (month! < 1 || month! > 12) return `has month ${m[2]}: months are 01 to 12`;
  const days = new Date(Date.UTC(year!, month!, 0)).getUTCDate();
  if (day! < 1 || day! > days) return `has day ${m[3]}, and ${MONTHS[month! - 1]} ${m[1]} has ${days} days`;
  if (hour! > 23) return `has hour ${m[4]}: hours are 00 to 23`;
  if (minute! > 59) return `has minute ${m[5]}: minutes are 00 to 59`;
  if (second! > 59) return `has second ${m[6]}: seconds are 00 to 59`;
  if (offsetHours! > 23 || offsetMinutes! > 59) return `has offset ${text.slice(-6)}: offsets are -23:59 to +23:59`;
  if (Date.parse(text) > Date.now()) return "must not be in the future";
  return undefined;
}

const targetTimeSchema = textSchema(dateTimeProblem);

export const ForkInputsSchema = z
  .strictObject({
    projectId: idSchema,
    sourceServiceId: idSchema,
    forkStrategy: z.enum(FORK_STRATEGIES, { error: `must be one of ${FORK_STRATEGIES.join(", ")}` }),
    targetTime: targetTimeSchema.optional(),
    cpuMillis: cpuMillisSchema.optional(),
    memoryGbs: memoryGbsSchema.optional(),
    environmentTag: z.enum(ENVIRONMENT_TAGS, { error: "must be DEV or PROD" }).default("DEV"),
    name: nameSchema(128).optional(),
    waitForReady: booleanSchema.default(true),
    readyWhen: z
      .enum(["login", "status"], { error: 'must be "login" (READY and a working login) or "status" (READY only)' })
      .default("login"),
    adoptExisting: booleanSchema.default(true),
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
  stateOnlyKeys: ["waitForReady", "readyWhen", "createTimeout", "deleteTimeout", "adoptExisting"],
  // `name` is also the fork's actual name; left unset, any name (the default one) will do.
  optionalDeclared: ["name"],
};

/** State = the checked inputs + what the API says of the fork (metrics left out: they drift). */
function forkOutputs(inputs: Record<string, unknown>, s: Service, initialPassword: unknown): Record<string, unknown> {
  // GET does not return the password: keep the one the fork answered with.
  const password = s.initial_password ?? (typeof initialPassword === "string" ? initialPassword : undefined);
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
    initialPassword: password,
    // Built from the endpoint each read: a refresh follows an endpoint that moved.
    host: s.endpoint?.host,
    port: s.endpoint?.port,
    database: DATABASE,
    username: USERNAME,
    connectionUri: connectionUri(s.endpoint, password),
    poolerConnectionUri: connectionUri(s.connection_pooler?.endpoint, password),
  });
}

/** createTimeout bounds the whole create: waiting for a busy source, then for the fork. */
const createDeadline = (inputs: ForkInputs) => Date.now() + parseDuration(inputs.createTimeout);

const waitReady = (inputs: ForkInputs, serviceId: string, deadline = createDeadline(inputs)) =>
  waitForService({
    client: clientNow(),
    projectId: inputs.projectId,
    serviceId,
    goal: "READY",
    done: (s) => s.status === "READY",
    hopeless: ["DELETING", "DELETED"],
    timeoutMs: Math.max(0, deadline - Date.now()),
    timeoutInput: "createTimeout",
  });

/** The forkService body: the checked inputs, unchanged. */
function forkRequest(inputs: ForkInputs): ForkServiceRequest {
  const body: ForkServiceRequest = { fork_strategy: inputs.forkStrategy, environment_tag: inputs.environmentTag };
  if (inputs.targetTime !== undefined) body.target_time = inputs.targetTime;
  if (inputs.cpuMillis !== undefined) body.cpu_millis = inputs.cpuMillis;
  if (inputs.memoryGbs !== undefined) body.memory_gbs = inputs.memoryGbs;
  if (inputs.name !== undefined) body.name = inputs.name;
  return body;
}

/** A source in these statuses can be forked now. */
const FORKABLE = ["READY", "PAUSED"];
/** A source in these statuses will never be forkable. */
const UNFORKABLE = ["DELETING", "DELETED"];

/** What check says of the source service it found (provider/kit/verify.ts). */
function judgeSource(source: Service): Judgement {
  if (FORKABLE.includes(source.status)) return {};
  if (UNFORKABLE.includes(source.status))
    return { failure: `names service ${source.service_id}, which is ${source.status}: it cannot be forked` };
  return {
    warning:
      `ServiceFork: source service ${source.service_id} is ${source.status}; it can be forked when READY or PAUSED, ` +
      `so \`up\` will wait for it (within createTimeout) before forking.`,
  };
}

/** Statuses of a fork that is stopped or going away: never adopted. */
const NOT_ADOPTABLE = ["PAUSING", "PAUSED", "DELETING", "DELETED"];
/** How far the API's clock may be behind ours when matching a fork to a lost forkService answer. */
const CLOCK_SKEW_MS = 5 * 60_000;

/** The running forks with this resource's identity: (project, source service, name). */
async function forksWithIdentity(client: TigerCloudClient, inputs: ForkInputs): Promise<Service[]> {
  const services = await client.listServices(inputs.projectId);
  return services.filter(
    (s) =>
      s.name === inputs.name &&
      s.forked_from?.service_id === inputs.sourceServiceId &&
      (s.forked_from.project_id ?? inputs.projectId) === inputs.projectId &&
      !NOT_ADOPTABLE.includes(s.status),
  );
}

/** Claims keys (kit/claims): the fork a resource holds, and the identity it declares. */
const forkHeld = (projectId: string, serviceId: string) => `ServiceFork ${projectId}/${serviceId}`;
const forkIdentity = (projectId: string, source: string, name: string) => `ServiceFork identity ${projectId}/${source}/${name}`;

/**
 * Two resources of one program with the same identity would be adopted into one fork (or race
 * to make two): the second to be checked fails, naming both.
 */
function declareIdentity(inputs: Record<string, unknown>, resource: string): pulumi.dynamic.CheckFailure[] {
  const { projectId, sourceServiceId, name } = inputs;
  if (typeof projectId !== "string" || typeof sourceServiceId !== "string" || typeof name !== "string") return [];
  const others = declare(forkIdentity(projectId, sourceServiceId, name), resource, true);
  return others.map((other) => ({
    property: "name",
    reason:
      `ServiceFork "${resource}" and ServiceFork "${other.resource}" both declare a fork named "${name}" of service ${sourceServiceId}: ` +
      `a fork's identity is its project, source and name, so they would be one fork. Give each its own name.`,
  }));
}

/** Takes over the one fork found; several are an error that names them, and nothing is made. */
async function adopt(
  inputs: ForkInputs,
  news: Record<string, unknown>,
  found: Service[],
  reason: string,
): Promise<pulumi.dynamic.CreateResult> {
  if (found.length > 1) {
    const list = found.map((s) => `${s.service_id} (created ${s.created ?? "at an unknown time"}, ${s.status})`).join(", ");
    throw new TigerCloudError(
      `${found.length} running forks of service ${inputs.sourceServiceId} are named "${inputs.name}" in project ${inputs.projectId}: ${list}. ` +
        `Pulumi cannot tell which one is this resource's, so it made none. Stop or delete all but one, or give this fork another name, ` +
        `or set adoptExisting: false to make a new one.`,
    );
  }
  const fork = found[0] as Service;
  progress(
    `adopting fork ${fork.service_id} ("${inputs.name}", ${fork.status}) instead of forking again: ${reason}. ` +
      `Its initial password is not known (only the answer that made it held it): set a new one in the Tiger Cloud console or with the tiger CLI.`,
  );
  return finishCreate(inputs, news, fork, { at: new Date().toISOString(), reason });
}

/** From a fork that exists: wait for it unless told not to; any failure still records it. */
async function finishCreate(
  inputs: ForkInputs,
  news: Record<string, unknown>,
  fork: Service,
  adopted: { at: string; reason: string } | undefined,
  deadline = createDeadline(inputs),
): Promise<pulumi.dynamic.CreateResult> {
  const id = fork.service_id;
  let outs: Record<string, unknown> = { ...forkOutputs(inputs, fork, undefined), ...(adopted ? { adopted } : {}) };
  if (!adopted) progress(`fork ${id} created, status ${fork.status}`);
  // From here on the fork exists: any failure must hand its ID to the engine, and a resource of
  // this run being deleted must not stop it (see delete).
  declare(forkHeld(inputs.projectId, id), resourceNameOf(news), true);
  try {
    if (inputs.waitForReady && fork.status !== "READY") {
      outs = forkOutputs(outs, await waitReady(inputs, id, deadline), outs.initialPassword);
      progress(`fork ${id} is READY`);
    }
    if (inputs.waitForReady && inputs.readyWhen === "login") {
      // Recorded as awaited until a login works: a failure leaves it in state for the next `up`.
      outs = { ...outs, loginPending: true };
      outs = await awaitLogin(inputs, id, outs, deadline);
    }
  } catch (err) {
    throw partialFailure(id, outs, news, err);
  }
  return { id, outs };
}

/** Waits until the fork's database takes a login (kit/connection.ts); the outputs without `loginPending`. */
async function awaitLogin(
  inputs: ForkInputs,
  id: string,
  outs: Record<string, unknown>,
  deadline: number,
): Promise<Record<string, unknown>> {
  const { host, port } = outs;
  if (typeof host !== "string" || typeof port !== "number") {
    throw new TigerCloudError(
      `Fork ${id} is READY but the API gives no endpoint to log in to; set readyWhen: "status" to wait for READY only.`,
    );
  }
  const password = typeof outs.initialPassword === "string" && outs.initialPassword !== "" ? outs.initialPassword : undefined;
  await waitForLogin({ serviceId: id, host, port, password, deadline, timeoutInput: "createTimeout" });
  const { loginPending: _done, ...rest } = outs;
  return rest;
}

export const serviceForkProvider = defineProvider({
  kind: "ServiceFork",
  schema: ForkInputsSchema,
  rules: RULES,

  declare: declareIdentity,
  stillDeclared(id, olds, resource) {
    declare(forkHeld(String(olds.projectId), id), resource, true);
  },
  references: (inputs) => [
    { type: "service", property: "sourceServiceId", projectId: inputs.projectId, id: inputs.sourceServiceId, judge: judgeSource },
  ],

  async create(inputs, news) {
    const client = clientNow();
    const adoptable = inputs.name !== undefined && inputs.adoptExisting;
    if (adoptable) {
      const existing = await forksWithIdentity(client, inputs);
      if (existing.length > 0) return adopt(inputs, news, existing, "a running fork with this name and source already existed");
    }
    progress(`forking service ${inputs.sourceServiceId} (${inputs.forkStrategy})`);
    const deadline = createDeadline(inputs);
    // A source busy with another operation refuses with 409 and makes nothing: wait and send again.
    const busy = {
      client,
      projectId: inputs.projectId,
      serviceId: inputs.sourceServiceId,
      role: "source",
      action: "fork",
      accepts: ["READY", "PAUSED"],
      deadline,
      timeoutInput: "createTimeout",
    };
    let sentAt = Date.now();
    let forked: Service;
    try {
      forked = await sendWhenSettled(busy, () => {
        sentAt = Date.now();
        return client.forkService(inputs.projectId, inputs.sourceServiceId, forkRequest(inputs));
      });
    } catch (err) {
      // The answer was lost, but the fork may have been made: look for it rather than let the
      // next `up` make a second one. Never a second forkService here.
      if (!(err instanceof ForkOutcomeUnknownError) || !adoptable) throw err;
      progress(
        `forkService's answer was lost (${err.cause instanceof Error ? err.cause.message : "unknown"}); looking for the fork it may have made`,
      );
      const made = (await forksWithIdentity(client, inputs)).filter((s) => Date.parse(s.created ?? "") >= sentAt - CLOCK_SKEW_MS);
      if (made.length === 0) throw err;
      return adopt(inputs, news, made, "forkService's answer was lost, and the fork it made was found");
    }
    return finishCreate(inputs, news, forked, undefined, deadline);
  },

  async read(id, props) {
    const service = await serviceUnlessGone(clientNow(), String(props.projectId), id);
    if (!service) return {};
    const { __provider: _provider, ...state } = props;
    const outs = forkOutputs(state, service, props.initialPassword);
    // `name` stays the name the fork was made with: this API cannot rename a service, so a
    // rename made elsewhere could only be "fixed" by replacing the fork, data and all.
    if (typeof props.name === "string") outs.name = props.name;
    return { id, props: outs };
  },

  /**
   * A replacement that keeps the name and the source would find the old fork running and adopt
   * it, then stop it: so the old one is stopped first, and the new one is forked afresh.
   */
  deleteBeforeReplace(olds, news) {
    const sameIdentity = ["projectId", "sourceServiceId", "name"].every((k) => news[k] !== undefined && olds[k] === news[k]);
    return sameIdentity && news.adoptExisting !== false;
  },

  async update() {
    // Every input of a fork either replaces it or is a waiting control; diff never asks for this.
    throw new TigerCloudError(
      "ServiceFork.update was asked to change a property that needs a replacement; this is a bug in pulumi-tigercloud.",
    );
  },

  /** A create recorded before the fork was READY, or before a login worked (a partial failure), is finished here. */
  async finishPending(id, outs, inputs, news) {
    const needsStatus = inputs.waitForReady && outs.status !== "READY";
    // A fork recorded before READY never had its login tried either.
    const needsLogin = inputs.waitForReady && inputs.readyWhen === "login" && (needsStatus || outs.loginPending === true);
    if (!needsStatus && !needsLogin) {
      const { loginPending: _moot, ...rest } = outs; // no longer awaited (readyWhen or waitForReady changed)
      return rest;
    }
    const deadline = createDeadline(inputs);
    let current = outs;
    try {
      if (needsStatus) current = forkOutputs(current, await waitReady(inputs, id, deadline), current.initialPassword);
      if (needsLogin) current = await awaitLogin(inputs, id, { ...current, loginPending: true }, deadline);
      return current;
    } catch (err) {
      throw partialFailure(id, current, news, err);
    }
  },

  async delete(id, props) {
    const projectId = String(props.projectId);
    // Renamed without an alias, this resource is deleted after its successor adopted its fork.
    const holders = declaredBy(forkHeld(projectId, id), resourceNameOf(props));
    if (holders.length > 0) {
      const names = holders.map((h) => `"${h.resource}"`).join(" and ");
      progress(`fork ${id} is now held by ServiceFork ${names} of this program; leaving it running`);
      return;
    }
    const client = clientNow();
    const deleteTimeout = typeof props.deleteTimeout === "string" ? props.deleteTimeout : WAIT_DEFAULTS.deleteTimeout;
    const deadline = Date.now() + parseDuration(deleteTimeout);
    progress(`stopping fork ${id} (destroy stops a fork; it is not deleted)`);
    try {
      const busy = { client, projectId, serviceId: id, role: "fork", action: "stop", accepts: ["READY", "PAUSED"], deadline };
      await sendWhenSettled({ ...busy, timeoutInput: "deleteTimeout" }, () => client.stop(projectId, id));
    } catch (err) {
      // 400 is the answer for a service already PAUSED, 404 for one that no longer exists: both
      // are confirmed by reading the fork; any other answer is a real refusal.
      if (!(err instanceof BadRequestError || err instanceof NotFoundError)) throw err;
      const service = await serviceUnlessGone(client, projectId, id);
      if (!service) {
        progress(`fork ${id} no longer exists; nothing to stop`);
        return;
      }
      if (service.status !== "PAUSED" && service.status !== "PAUSING") throw err;
      progress(`fork ${id} is already ${service.status}`);
    }
    if (props.waitForReady === false) return;
    await waitForService({
      client,
      projectId,
      serviceId: id,
      goal: "PAUSED",
      done: (s) => s.status === "PAUSED",
      hopeless: ["DELETING", "DELETED"],
      timeoutMs: Math.max(0, deadline - Date.now()),
      timeoutInput: "deleteTimeout",
    });
    progress(`fork ${id} is PAUSED`);
  },
});
