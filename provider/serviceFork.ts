// ServiceFork: a fork of a Tiger Cloud service (forkService), awaited until READY. Destroying it
// STOPS the fork (stop) by default: the fork still exists, paused, data and all, afterwards. With
// onDestroy: "delete" it is deleted instead (DELETE), and its data goes.
import * as crypto from "crypto";
import * as pulumi from "@pulumi/pulumi";
import { z } from "zod";
import { ENVIRONMENT_TAGS, FORK_STRATEGIES, type ForkServiceRequest, type Service } from "./api/schemas";
import type { TigerCloudClient } from "./api/client";
import { BadRequestError, ForkOutcomeUnknownError, NotFoundError, TigerCloudError, WaitError } from "./errors";
import { type BusySpec, sendWhenSettled } from "./workflows/busy";
import { type Declarant, declare, declaredBy, describeDeclarant } from "./rules/claims";
import { defineProvider } from "./resources/defineProvider";
import { serviceUnlessGone } from "./workflows/gone";
import { connectionUri, DATABASE, USERNAME, waitForLogin } from "./workflows/connection";
import { clientNow, configurationCount, progress, verifyReferencesNow, warning } from "./engine/host";
import {
  booleanSchema,
  type DiffRules,
  durationSchema,
  idSchema,
  nameSchema,
  isUnknown,
  parseDuration,
  declarantOf,
  textSchema,
} from "./rules/inputs";
import { partialFailure, plain, withoutProvider } from "./rules/outputs";
import { serializedProvider } from "./program/serializedProvider";
import { expectedUrn } from "./program/urn";
import { type Judgement, VERIFY_LIMITS } from "./workflows/verify";
import { WAIT_DEFAULTS, waitForService } from "./workflows/waiting";

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
  /** DEV or PROD. Unset: a new fork gets the API's default (DEV); an adopted fork keeps its tag. */
  environmentTag?: pulumi.Input<"DEV" | "PROD">;
  /** 1 to 128 characters, not blank, no control or invisible characters (zero-width joiners). Default: "<parent name>-fork". */
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
  /**
   * How long an in-place change (rename, resize, environment) waits, for a busy fork and then for
   * READY with the new size, e.g. "30m" (default); at most "24h".
   */
  updateTimeout?: pulumi.Input<string>;
  /** How long destroy waits, for a busy fork and then for PAUSED, e.g. "10m" (default); at most "24h". */
  deleteTimeout?: pulumi.Input<string>;
  /**
   * With a `name`: before forking, take over a running fork of the same source with that name
   * (one left by a killed or failed `pulumi up`, or made elsewhere) instead of making a second
   * one. Default true. Two stacks that declare the same name from the same source share a fork.
   */
  adoptExisting?: pulumi.Input<boolean>;
  /**
   * Keep the fork stopped (true) or running (false, the default). A change is made in place:
   * `stop` then PAUSED (within deleteTimeout), or `start` then READY (within createTimeout). A fork
   * created with `paused: true` is forked, waited for, then stopped. Refresh reads it back from
   * the status, so a fork paused elsewhere shows as drift.
   */
  paused?: pulumi.Input<boolean>;
  /**
   * Take this existing fork under management instead of forking (Pulumi's `import` option cannot
   * serve dynamic providers). It must be a running fork of `sourceServiceId` (named `name`, if
   * given). After create it is bookkeeping: removing it changes nothing; another ID replaces.
   */
  adoptServiceId?: pulumi.Input<string>;
  /**
   * When a fork is adopted, its initial password is not known. "reset" (default): set a new random
   * one (updatePassword), recorded as a secret like a new fork's. "keep": leave it; the password
   * output stays empty. Two stacks sharing one fork reset each other's password.
   */
  passwordOnAdopt?: pulumi.Input<"reset" | "keep">;
  /**
   * What destroying this resource (or replacing it) does to the fork. "stop" (default): stop it;
   * it stays, paused, with its data, and storage is still billed. "delete": delete it (DELETE) and
   * wait until the API says DELETED (or no longer knows it); its data is gone for good. Only a fork
   * of sourceServiceId is ever deleted, and never one another resource of the run holds or would
   * take over (a rename or a move). The value recorded by the last `up` is the one destroy uses.
   */
  onDestroy?: pulumi.Input<"stop" | "delete">;
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
  /** The password of tsdbadmin: the fork's initial one, or the one set when it was adopted (passwordOnAdopt). Always secret. */
  declare readonly initialPassword: pulumi.Output<string | undefined>;
  /** True when the fork is stopped (PAUSING or PAUSED), as last seen. */
  declare readonly paused: pulumi.Output<boolean>;
  /** When the fork was taken over instead of made (see adoptExisting), and why. */
  declare readonly adopted: pulumi.Output<{ at: string; reason: string } | undefined>;
  /** The endpoint's host and port, the database (tsdb) and the admin role (tsdbadmin). */
  declare readonly host: pulumi.Output<string | undefined>;
  declare readonly port: pulumi.Output<number | undefined>;
  declare readonly database: pulumi.Output<string>;
  declare readonly username: pulumi.Output<string>;
  /**
   * `postgresql://tsdbadmin:<password>@<host>:<port>/tsdb?sslmode=require`. Always secret. For an
   * adopted fork, with the password set when it was adopted (passwordOnAdopt "reset", the
   * default), or without one ("keep").
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
      {
        ...outputs,
        name: undefined,
        paused: undefined,
        ...args,
        __resourceName: name,
        __resourceUrn: expectedUrn(name, FORK_TYPE, opts),
      },
      {
        ...opts,
        additionalSecretOutputs: [...(opts?.additionalSecretOutputs ?? []), ...SECRET_OUTPUTS],
      },
      "tigercloud",
      "ServiceFork",
    );
  }
}

/** The type token the engine knows a ServiceFork by (pulumi.dynamic.Resource's module and type). */
const FORK_TYPE = "pulumi-nodejs:dynamic/tigercloud:ServiceFork";

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
/** @internal */
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

/** @internal */
export const ForkInputsSchema = z
  .strictObject({
    projectId: idSchema,
    sourceServiceId: idSchema,
    forkStrategy: z.enum(FORK_STRATEGIES, { error: `must be one of ${FORK_STRATEGIES.join(", ")}` }),
    targetTime: targetTimeSchema.optional(),
    cpuMillis: cpuMillisSchema.optional(),
    memoryGbs: memoryGbsSchema.optional(),
    environmentTag: z.enum(ENVIRONMENT_TAGS, { error: "must be DEV or PROD" }).optional(),
    name: nameSchema(128).optional(),
    waitForReady: booleanSchema.default(true),
    readyWhen: z
      .enum(["login", "status"], { error: 'must be "login" (READY and a working login) or "status" (READY only)' })
      .default("login"),
    adoptExisting: booleanSchema.default(true),
    paused: booleanSchema.default(false),
    adoptServiceId: idSchema.optional(),
    passwordOnAdopt: z.enum(["reset", "keep"], { error: 'must be "reset" or "keep"' }).default("reset"),
    onDestroy: z
      .enum(["stop", "delete"], { error: 'must be "stop" (keep the fork, paused, data and all) or "delete" (delete it and its data)' })
      .default("stop"),
    createTimeout: durationSchema.default(WAIT_DEFAULTS.createTimeout),
    updateTimeout: durationSchema.default(WAIT_DEFAULTS.updateTimeout),
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

/** @internal */
export const FORK_DIFF_RULES: DiffRules = {
  // What the fork is a copy of: only a new fork can change it.
  replaceKeys: ["projectId", "sourceServiceId", "forkStrategy", "targetTime"],
  // Changed in place, in this order (see update): start, rename, resize, setEnvironment, stop.
  updateKeys: ["name", "cpuMillis", "memoryGbs", "environmentTag", "paused"],
  // adoptServiceId is bookkeeping once created; another service's ID replaces (replacesInstead).
  stateOnlyKeys: [
    "waitForReady",
    "readyWhen",
    "createTimeout",
    "updateTimeout",
    "deleteTimeout",
    "adoptExisting",
    "adoptServiceId",
    "passwordOnAdopt",
    "onDestroy",
  ],
  // Left unset, these have no opinion: any name (the default one), the size the fork has, the
  // fork already held.
  optionalDeclared: ["name", "cpuMillis", "memoryGbs", "environmentTag", "adoptServiceId"],
};

/** A fork in these statuses is stopped, or stopping: `paused` reads true. */
const STOPPED = ["PAUSING", "PAUSED"];
/** The inputs as state records them, so that refresh can hand back what it read (`paused`). */
const INPUT_KEYS = [
  ...FORK_DIFF_RULES.replaceKeys,
  ...(FORK_DIFF_RULES.updateKeys ?? []),
  ...(FORK_DIFF_RULES.stateOnlyKeys ?? []),
  "__resourceName",
  "__resourceUrn",
];

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
    paused: STOPPED.includes(s.status),
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

/** The deadline a timeout input sets from now; state written by older versions may lack it. */
const deadlineOf = (timeout: unknown, fallback: string = WAIT_DEFAULTS.deleteTimeout) =>
  Date.now() + parseDuration(typeof timeout === "string" ? timeout : fallback);

/** createTimeout bounds the whole create: waiting for a busy source, then for the fork. */
const createDeadline = (inputs: ForkInputs) => deadlineOf(inputs.createTimeout);

/** The busy rule (workflows/busy.ts) for a request on a fork: by default an in-place change. */
const busyFork = (
  id: string,
  projectId: string,
  action: string,
  deadline: number,
  {
    accepts = ["READY"],
    timeoutInput = "updateTimeout",
    client = clientNow(),
  }: Partial<Pick<BusySpec, "accepts" | "timeoutInput" | "client">> = {},
): BusySpec => ({ client, projectId, serviceId: id, role: "fork", action, accepts, deadline, timeoutInput });

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
  const body: ForkServiceRequest = { fork_strategy: inputs.forkStrategy };
  if (inputs.environmentTag !== undefined) body.environment_tag = inputs.environmentTag;
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

/** What check says of the source service it found (provider/workflows/verify.ts). */
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
  return services.filter((s) => hasIdentity(s, inputs));
}

/** A running fork named `name` of `sourceServiceId` in `projectId`: one this resource may adopt. */
function hasIdentity(
  s: Service,
  { projectId, sourceServiceId, name }: { projectId: string; sourceServiceId: string; name?: string | undefined },
) {
  return (
    s.name === name &&
    s.forked_from?.service_id === sourceServiceId &&
    (s.forked_from.project_id ?? projectId) === projectId &&
    !NOT_ADOPTABLE.includes(s.status)
  );
}

/** A string known at preview (not the unknown sentinel). */
const isKnownText = (v: unknown): v is string => typeof v === "string" && !isUnknown(v);

/** The project's services, read once per project and run for preview's warnings. */
let servicesForPreview = {
  configuration: -1,
  byProject: new Map<string, Promise<Service[]>>(),
  warned: new Set<string>(),
  replacing: new Set<string>(),
};
/** What preview's warnings have learned in this run (a new configuration is a new run). */
function previewState(): typeof servicesForPreview {
  if (servicesForPreview.configuration !== configurationCount())
    servicesForPreview = { configuration: configurationCount(), byProject: new Map(), warned: new Set(), replacing: new Set() };
  return servicesForPreview;
}
function servicesOnce(projectId: string): Promise<Service[]> {
  let services = previewState().byProject.get(projectId);
  if (!services) {
    services = clientNow(VERIFY_LIMITS).listServices(projectId);
    servicesForPreview.byProject.set(projectId, services);
  }
  return services;
}

/**
 * The plan says "create", and `up` would take over a running fork (adoptExisting): preview says
 * which, what happens to its password, and that an alias keeps it as it is when the create is a
 * rename or a move. The fork a replacement stops first (deleteBeforeReplace) is not taken over.
 */
async function warnOfTakeover(olds: Record<string, unknown>, inputs: Record<string, unknown>, resource: Declarant): Promise<void> {
  const { projectId, sourceServiceId, name } = inputs;
  if (!isKnownText(projectId) || !isKnownText(sourceServiceId) || !isKnownText(name)) return;
  if (inputs.adoptExisting === false || inputs.adoptServiceId !== undefined || !verifyReferencesNow()) return;
  // A replacement keeping the identity stops its fork before forking anew (deleteBeforeReplace).
  // The engine checks it with the old inputs (not the fork's ID: the identity tells), then once
  // more, as a create, with none: that second check is remembered by the URN.
  const state = previewState();
  if (["projectId", "sourceServiceId", "name"].every((k) => olds[k] === inputs[k])) {
    state.replacing.add(resource.urn);
    return;
  }
  if (Object.keys(olds).length === 0 && state.replacing.has(resource.urn)) return;
  let running: Service[];
  try {
    running = (await servicesOnce(projectId)).filter((s) => hasIdentity(s, { projectId, sourceServiceId, name }));
  } catch {
    return; // no credentials, or the API unavailable: verifying the references has said so already
  }
  const fork = running[0];
  if (!fork) return;
  const password =
    inputs.passwordOnAdopt === "keep"
      ? `its password is kept (passwordOnAdopt: "keep"), so this resource's initialPassword and connection strings will have none`
      : `its password will be reset (passwordOnAdopt: "reset"): anything holding its current connection string can no longer log in`;
  const message =
    running.length > 1
      ? `ServiceFork ${describeDeclarant(resource)}: ${running.length} running forks named "${name}" of service ${sourceServiceId} exist ` +
        `(${running.map((s) => s.service_id).join(", ")}); \`up\` will refuse to choose and make none.`
      : `ServiceFork ${describeDeclarant(resource)} will take over running fork ${fork.service_id} ("${name}", ${fork.status}, a fork of service ${sourceServiceId}) ` +
        `instead of forking, and ${password}. If this is a rename or a move into or out of a component, give the resource an alias ` +
        `instead (aliases: [{ name: "<old name>" }] or [{ parent: <old parent> }]): it then keeps the fork and its password untouched.`;
  // Said once per resource and run, however often the engine checks it.
  const key = `${resource.urn}\n${message}`;
  if (state.warned.has(key)) return;
  state.warned.add(key);
  await warning(message, resource.urn);
}

/** Claims keys (rules/claims.ts): the fork a resource holds, and the identity it declares. */
const forkHeld = (projectId: string, serviceId: string) => `ServiceFork ${projectId}/${serviceId}`;
const forkIdentity = (projectId: string, source: string, name: string) => `ServiceFork identity ${projectId}/${source}/${name}`;

/**
 * What a fork declaration claims for the run: the fork adoptServiceId names, and the identity,
 * with whether `up` would take over a running fork that has it. A delete spares both (see
 * heldElsewhere). Two resources of one program with the same identity would be adopted into one
 * fork (or race to make two): the second to be checked fails, naming both.
 */
function declareFork(inputs: Record<string, unknown>, resource: Declarant): pulumi.dynamic.CheckFailure[] {
  const { projectId, sourceServiceId, name, adoptServiceId } = inputs;
  if (typeof projectId === "string" && typeof adoptServiceId === "string") declare(forkHeld(projectId, adoptServiceId), resource, true);
  if (typeof projectId !== "string" || typeof sourceServiceId !== "string" || typeof name !== "string") return [];
  const adopts = inputs.adoptExisting !== false && adoptServiceId === undefined;
  const others = declare(forkIdentity(projectId, sourceServiceId, name), resource, adopts);
  return others.map((other) => ({
    property: "name",
    reason:
      `ServiceFork ${describeDeclarant(resource)} and ServiceFork ${describeDeclarant(other.resource)} both declare a fork named "${name}" of service ${sourceServiceId}: ` +
      `a fork's identity is its project, source and name, so they would be one fork. Give each its own name.`,
  }));
}

/**
 * Why a service cannot be taken under management by adoptServiceId, checked in this order; undefined
 * when it can. (Existence is checked first, by the caller, with the "gone" rule.)
 */
function adoptionProblem(service: Service, inputs: { sourceServiceId: string; name?: string | undefined }): string | undefined {
  const id = service.service_id;
  const parent = service.forked_from?.service_id;
  if (parent !== inputs.sourceServiceId)
    return parent
      ? `service ${id} is a fork of ${parent}, not of sourceServiceId ${inputs.sourceServiceId}`
      : `service ${id} is not a fork (it has no forked_from): adopting the source itself, or another service, is refused`;
  if (NOT_ADOPTABLE.includes(service.status))
    return `service ${id} is ${service.status}: only a running fork can be adopted (start it first)`;
  if (inputs.name !== undefined && service.name !== inputs.name) return `service ${id} is named "${service.name}", not "${inputs.name}"`;
  return undefined;
}

/** adoptServiceId: the named fork, checked, taken under management; nothing recorded when a check fails. */
async function adoptById(inputs: ForkInputs, news: Record<string, unknown>, serviceId: string): Promise<pulumi.dynamic.CreateResult> {
  const service = await serviceUnlessGone(clientNow(), inputs.projectId, serviceId);
  if (!service)
    throw new TigerCloudError(`adoptServiceId ${serviceId}: the API says no such service exists in project ${inputs.projectId}.`);
  const problem = adoptionProblem(service, inputs);
  if (problem) throw new TigerCloudError(`adoptServiceId ${serviceId} cannot be taken under management: ${problem}. Nothing was recorded.`);
  progress(
    `taking fork ${serviceId} ("${service.name}", ${service.status}) under management (adoptServiceId). ` +
      (inputs.passwordOnAdopt === "keep"
        ? `Its initial password is not known, and passwordOnAdopt is "keep": set a new one in the console or with the tiger CLI.`
        : `Its initial password is not known: a new one will be set.`),
  );
  return finishCreate(inputs, news, service, { at: new Date().toISOString(), reason: "taken under management with adoptServiceId" });
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
      (inputs.passwordOnAdopt === "keep"
        ? `Its initial password is not known (only the answer that made it held it), and passwordOnAdopt is "keep": set a new one in the Tiger Cloud console or with the tiger CLI.`
        : `Its initial password is not known (only the answer that made it held it): a new one will be set.`),
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
  let outs: Record<string, unknown> = {
    ...forkOutputs(inputs, fork, undefined),
    // An adopted fork is recorded as it is: the next `up` changes in place what the program declares otherwise.
    ...(adopted ? { adopted, ...liveInputs(inputs, fork) } : {}),
  };
  if (!adopted) progress(`fork ${id} created, status ${fork.status}`);
  // From here on the fork exists: any failure must hand its ID to the engine, and a resource of
  // this run being deleted must not stop it (see delete).
  declare(forkHeld(inputs.projectId, id), declarantOf(news), true);
  try {
    if (inputs.waitForReady && fork.status !== "READY") {
      outs = forkOutputs(outs, await waitReady(inputs, id, deadline), outs.initialPassword);
      progress(`fork ${id} is READY`);
    }
    // An adopted fork's lost password is reset first, so that the login below proves the new one.
    // Marked in state until done, so that a failure is finished by the next `up`, and nothing else is.
    if (adopted && inputs.passwordOnAdopt === "reset") {
      outs = { ...outs, passwordPending: true };
      outs = await resetAdoptedPassword(id, inputs, outs, deadline);
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

/**
 * An adopted fork's password was only in the answer that made it. With passwordOnAdopt "reset",
 * a new one (192 random bits, chosen before the request so a retry sends the same) is set and
 * recorded as a secret; the connection outputs and the login probe use it.
 */
async function resetAdoptedPassword(
  id: string,
  inputs: ForkInputs,
  outs: Record<string, unknown>,
  deadline: number,
): Promise<Record<string, unknown>> {
  if (inputs.passwordOnAdopt !== "reset" || outs.passwordPending !== true) return outs;
  const password = crypto.randomBytes(24).toString("base64url");
  const client = clientNow({}, [password]);
  const busy = busyFork(id, inputs.projectId, "set the password of", deadline, { client, timeoutInput: "createTimeout" });
  await sendWhenSettled(busy, () => client.updatePassword(inputs.projectId, id, password));
  progress(`the password of fork ${id} was reset, as it was adopted (passwordOnAdopt: "reset"); it is in the secret outputs`);
  const { passwordPending: _done, ...rest } = outs;
  // The fork read again, so the connection outputs are built the one way every read builds them.
  return forkOutputs(rest, await client.getService(inputs.projectId, id, { deadline }), password);
}

/** Adopts the running fork with this identity, or forks; never sends forkService twice. */
async function forkOrAdopt(inputs: ForkInputs, news: Record<string, unknown>): Promise<pulumi.dynamic.CreateResult> {
  if (inputs.adoptServiceId !== undefined) return adoptById(inputs, news, inputs.adoptServiceId);
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
}

/**
 * Stops a fork and, unless told not to wait, waits for PAUSED. Idempotent: a fork already stopped
 * is success. Returns the fork as last read, or undefined when the API confirms it is gone.
 */
async function stopFork(id: string, projectId: string, wait: boolean, deadline: number): Promise<Service | undefined> {
  const client = clientNow();
  let answer: Service;
  try {
    const busy = busyFork(id, projectId, "stop", deadline, { client, accepts: ["READY", "PAUSED"], timeoutInput: "deleteTimeout" });
    answer = await sendWhenSettled(busy, () => client.stop(projectId, id));
  } catch (err) {
    // 400 is the answer for a service already PAUSED, 404 for one that no longer exists: both
    // are confirmed by reading the fork; any other answer is a real refusal.
    if (!(err instanceof BadRequestError || err instanceof NotFoundError)) throw err;
    const service = await serviceUnlessGone(client, projectId, id);
    if (!service) {
      progress(`fork ${id} no longer exists; nothing to stop`);
      return undefined;
    }
    if (!STOPPED.includes(service.status)) throw err;
    progress(`fork ${id} is already ${service.status}`);
    answer = service;
  }
  if (!wait) return answer;
  const paused = await waitForService({
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
  return paused;
}

/** Starts a stopped fork and, unless told not to wait, waits for READY. A running fork is success. */
async function startFork(id: string, inputs: ForkInputs, password: unknown): Promise<Service> {
  const client = clientNow();
  const { projectId } = inputs;
  const deadline = createDeadline(inputs);
  progress(`starting fork ${id} (paused: false)`);
  let answer: Service;
  try {
    // A fork still PAUSING (or RESUMING, started elsewhere) refuses with 409: wait for it to settle.
    const busy = busyFork(id, projectId, "start", deadline, { client, accepts: ["PAUSED", "READY"], timeoutInput: "createTimeout" });
    answer = await sendWhenSettled(busy, () => client.start(projectId, id));
  } catch (err) {
    // 400 answers a start of a fork that is not stopped: confirmed by reading it.
    if (!(err instanceof BadRequestError)) throw err;
    answer = await client.getService(projectId, id, { deadline });
    if (STOPPED.includes(answer.status)) throw err;
    progress(`fork ${id} is already ${answer.status}`);
  }
  if (!inputs.waitForReady) return answer;
  const ready = answer.status === "READY" ? answer : await waitReady(inputs, id, deadline);
  progress(`fork ${id} is READY`);
  if (inputs.readyWhen === "login") {
    // A resumed fork is ready as a new one is: when its database takes a login.
    const endpoint = ready.endpoint;
    await awaitLogin(inputs, id, { host: endpoint?.host, port: endpoint?.port, initialPassword: password }, deadline);
  }
  return ready;
}

const pick = (from: Record<string, unknown>, keys: readonly string[]) =>
  Object.fromEntries(keys.filter((k) => from[k] !== undefined).map((k) => [k, from[k]]));

/** Two sizes are the same when equal as text or as numbers ("4" and "4.0"). */
const sameSize = (a: unknown, b: unknown) =>
  a === b || (typeof a === "string" && typeof b === "string" && a !== "shared" && b !== "shared" && Number(a) === Number(b));

/** The fork's size as the API reports it, in the inputs' form (strings). */
function liveSize(s: Service): { cpuMillis?: string; memoryGbs?: string } {
  const spec = s.resources?.[0]?.spec;
  return {
    ...(spec?.cpu_millis === undefined ? {} : { cpuMillis: String(spec.cpu_millis) }),
    ...(spec?.memory_gbs === undefined ? {} : { memoryGbs: String(spec.memory_gbs) }),
  };
}

/**
 * The inputs the fork has now, where they differ from the declared ones: size (not for "shared",
 * which the API reports as a number) and environment. What refresh and adoption record, so that
 * the next diff shows what to change in place.
 */
function liveInputs(declared: Record<string, unknown>, s: Service): Record<string, unknown> {
  const live = liveSize(s);
  const found: Record<string, unknown> = {};
  for (const k of ["cpuMillis", "memoryGbs"] as const) {
    const d = declared[k];
    if (typeof d === "string" && d !== "shared" && live[k] !== undefined && !sameSize(d, live[k])) found[k] = live[k];
  }
  if (s.metadata?.environment) found.environmentTag = s.metadata.environment;
  return found;
}

const sizeChanged = (before: Record<string, unknown>, inputs: ForkInputs) =>
  (inputs.cpuMillis !== undefined && !sameSize(inputs.cpuMillis, before.cpuMillis)) ||
  (inputs.memoryGbs !== undefined && !sameSize(inputs.memoryGbs, before.memoryGbs));

/** A whole number, however written: "8", "8.0" and "8.000" are all 8 GB, which resize can make. */
const WHOLE = /^[0-9]+(\.0*)?$/;
/** resize takes its sizes as strings of digits only (the API's spec): "8.0" is sent as "8", the same size. */
const resizeDigits = (size: string) => size.replace(/\.0*$/, "");

/**
 * resize takes whole millicores and whole gigabytes, never "shared": a move between "shared" and
 * a number, or to a fraction of a gigabyte, needs a new fork. Preview says why.
 */
/**
 * Changes the API cannot make, refused at preview with the reason rather than failed at `up` or
 * made harmful: a replacement that would re-adopt the fork it replaces; an in-place change to a
 * fork that stays paused (rename, resize and setEnvironment need it running).
 */
function refusedChange(
  olds: Record<string, unknown>,
  news: Record<string, unknown>,
  replaces: string[],
  changed: string[],
): string | undefined {
  if (replaces.length > 0 && news.adoptServiceId !== undefined && news.adoptServiceId === olds.serviceId) {
    return (
      `ServiceFork: ${replaces.join(", ")} changed, which needs a new fork, but adoptServiceId names the fork this resource ` +
      `already holds (${String(olds.serviceId)}). Remove adoptServiceId (after create it is bookkeeping) to make a new fork, or undo the change.`
    );
  }
  const inPlace = changed.filter((k) => ["name", "cpuMillis", "memoryGbs", "environmentTag"].includes(k));
  if (inPlace.length > 0 && olds.paused === true && news.paused === true) {
    return (
      `ServiceFork ${String(olds.serviceId)} is paused, and ${inPlace.join(", ")} can be changed only while it runs. ` +
      `Set paused: false for this change (and true again afterwards), or make the change when it runs.`
    );
  }
  return undefined;
}

/** adoptServiceId set to another service than the one held replaces: that one is adopted, this one stopped. */
async function replacedOnChange(changed: string[], olds: Record<string, unknown>, news: Record<string, unknown>): Promise<string[]> {
  const adopting = news.adoptServiceId;
  const another = typeof adopting === "string" && changed.includes("adoptServiceId") && adopting !== olds.serviceId;
  return [...(another ? ["adoptServiceId"] : []), ...(await sizeChangesResizeCannotMake(changed, olds, news))];
}

async function sizeChangesResizeCannotMake(
  changed: string[],
  olds: Record<string, unknown>,
  news: Record<string, unknown>,
): Promise<string[]> {
  const replaced: string[] = [];
  for (const k of ["cpuMillis", "memoryGbs"] as const) {
    if (!changed.includes(k) || isUnknown(news[k])) continue;
    const [was, now] = [olds[k], news[k]];
    if (sameSize(was, now)) continue;
    let why: string | undefined;
    if ((was === "shared") !== (now === "shared") && was !== undefined)
      why = `from ${String(was)} to ${String(now)}: resize cannot move between "shared" and a size`;
    else if (now === "shared") why = `to "shared": resize cannot make a fork shared`;
    else if (typeof now === "string" && !WHOLE.test(now)) why = `to ${now}: resize takes whole numbers`;
    if (!why) continue;
    replaced.push(k);
    await warning(`${k} changes ${why}, so this fork will be replaced by a new one (its data copied afresh from the source)`);
  }
  return replaced;
}

async function renameFork(id: string, inputs: ForkInputs): Promise<Service> {
  const name = inputs.name as string;
  progress(`renaming fork ${id} to "${name}"`);
  const busy = busyFork(id, inputs.projectId, "rename", deadlineOf(inputs.updateTimeout));
  return sendWhenSettled(busy, () => busy.client.renameService(inputs.projectId, id, name));
}

async function resizeFork(id: string, inputs: ForkInputs, before: Record<string, unknown>): Promise<Service> {
  // resize needs both sizes: one left unset keeps the fork's current one.
  const current = (before.resources as { cpuMillis?: number; memoryGbs?: number }[] | undefined)?.[0];
  const body = {
    cpu_millis: resizeDigits(inputs.cpuMillis ?? (current?.cpuMillis === undefined ? "" : String(current.cpuMillis))),
    memory_gbs: resizeDigits(inputs.memoryGbs ?? (current?.memoryGbs === undefined ? "" : String(current.memoryGbs))),
  };
  const missing = body.cpu_millis === "" ? "cpuMillis" : body.memory_gbs === "" ? "memoryGbs" : undefined;
  if (missing)
    throw new TigerCloudError(`Resizing fork ${id} needs both sizes, and its current ${missing} is not known: declare ${missing} too.`);
  const deadline = deadlineOf(inputs.updateTimeout);
  const what = `${body.cpu_millis} millicores and ${body.memory_gbs} GB`;
  progress(`resizing fork ${id} to ${what}`);
  const busy = busyFork(id, inputs.projectId, "resize", deadline);
  const answer = await sendWhenSettled(busy, () => busy.client.resize(inputs.projectId, id, body));
  if (!inputs.waitForReady) return answer;
  const resized = await waitForService({
    client: busy.client,
    projectId: inputs.projectId,
    serviceId: id,
    goal: `READY with ${what}`,
    done: (s) =>
      s.status === "READY" && sameSize(liveSize(s).cpuMillis, body.cpu_millis) && sameSize(liveSize(s).memoryGbs, body.memory_gbs),
    hopeless: ["PAUSING", "PAUSED", "DELETING", "DELETED"],
    timeoutMs: Math.max(0, deadline - Date.now()),
    timeoutInput: "updateTimeout",
  });
  progress(`fork ${id} is READY with ${what}`);
  return resized;
}

async function setForkEnvironment(id: string, inputs: ForkInputs, environment: "DEV" | "PROD"): Promise<undefined> {
  progress(`tagging fork ${id} ${environment}`);
  const busy = busyFork(id, inputs.projectId, "set the environment of", deadlineOf(inputs.updateTimeout));
  await sendWhenSettled(busy, () => busy.client.setEnvironment(inputs.projectId, id, environment));
  return undefined;
}

/** Waits until the fork's database takes a login (workflows/connection.ts); the outputs without `loginPending`. */
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

/** @internal */
export const serviceForkProvider = defineProvider({
  kind: "ServiceFork",
  schema: ForkInputsSchema,
  rules: FORK_DIFF_RULES,

  declare: declareFork,
  foresee: warnOfTakeover,
  stillDeclared(id, olds, resource) {
    declare(forkHeld(String(olds.projectId), id), resource, true);
  },
  references: (inputs) => [
    { type: "service", property: "sourceServiceId", projectId: inputs.projectId, id: inputs.sourceServiceId, judge: judgeSource },
    ...(inputs.adoptServiceId === undefined
      ? []
      : [
          {
            type: "service" as const,
            property: "adoptServiceId",
            projectId: inputs.projectId,
            id: inputs.adoptServiceId,
            // Preview tells now what create would refuse.
            judge: (service: Service) => {
              const problem =
                typeof inputs.sourceServiceId === "string"
                  ? adoptionProblem(service, {
                      sourceServiceId: inputs.sourceServiceId,
                      name: typeof inputs.name === "string" ? inputs.name : undefined,
                    })
                  : undefined;
              return problem ? { failure: `cannot be taken under management: ${problem}` } : {};
            },
          },
        ]),
  ],

  async create(inputs, news) {
    const made = await forkOrAdopt(inputs, news);
    if (!inputs.paused) return made;
    // Declared stopped: forked (and waited for) first, then stopped. A failure here still
    // records the fork, running, so the next `up` stops it.
    try {
      const stopped = await stopFork(made.id, inputs.projectId, inputs.waitForReady, deadlineOf(inputs.deleteTimeout));
      return { id: made.id, outs: stopped ? forkOutputs(made.outs, stopped, made.outs.initialPassword) : made.outs };
    } catch (err) {
      throw partialFailure(made.id, made.outs, news, err);
    }
  },

  async read(id, props) {
    const service = await serviceUnlessGone(clientNow(), String(props.projectId), id);
    if (!service) return {};
    const { __provider: _provider, ...state } = props;
    // Name, size, environment and running state as they are now: a change made in the console is
    // drift, which the next `up` puts back in place.
    const outs = { ...forkOutputs(state, service, props.initialPassword), ...liveInputs(props, service) };
    // The recorded inputs with what was read: after a refresh, preview shows the update.
    const inputs = Object.fromEntries(INPUT_KEYS.filter((k) => props[k] !== undefined).map((k) => [k, props[k]]));
    for (const k of FORK_DIFF_RULES.updateKeys ?? []) if (inputs[k] !== undefined || k === "paused") inputs[k] = outs[k];
    return { id, props: outs, inputs };
  },

  /**
   * A replacement that keeps the name and the source would find the old fork running and adopt
   * it, then stop it: so the old one is stopped first, and the new one is forked afresh.
   */
  deleteBeforeReplace(olds, news) {
    const sameIdentity = ["projectId", "sourceServiceId", "name"].every((k) => news[k] !== undefined && olds[k] === news[k]);
    return sameIdentity && news.adoptExisting !== false;
  },

  replacesInstead: replacedOnChange,
  refuse: refusedChange,

  /**
   * Name, size, environment and running state change in place, in this order: start (when
   * resuming), rename, resize, setEnvironment, stop (when pausing). Each is sent only when its
   * input changed. A failure part-way records what was done, and the next `up` does the rest.
   */
  async update(id, olds, inputs, news) {
    const before = withoutProvider(olds);
    const password = olds.initialPassword;
    let done: Record<string, unknown> = { ...before, ...pick(inputs, FORK_DIFF_RULES.stateOnlyKeys ?? []) };
    let last: Service | undefined;
    const applied = (keys: string[], service?: Service) => {
      done = { ...done, ...pick(inputs, keys) };
      if (service) last = service;
    };
    const wasPaused = before.paused === true;
    try {
      if (wasPaused && !inputs.paused) applied(["paused"], await startFork(id, inputs, password));
      // Independent of each other: one refused does not keep the others from being made.
      const changes: [string[], () => Promise<Service | undefined>][] = [];
      if (inputs.name !== undefined && inputs.name !== before.name) changes.push([["name"], () => renameFork(id, inputs)]);
      if (sizeChanged(before, inputs)) changes.push([["cpuMillis", "memoryGbs"], () => resizeFork(id, inputs, before)]);
      const environment = inputs.environmentTag;
      if (environment !== undefined && environment !== before.environmentTag)
        changes.push([["environmentTag"], () => setForkEnvironment(id, inputs, environment)]);
      let refused: unknown;
      for (const [keys, change] of changes) {
        try {
          applied(keys, await change());
        } catch (err) {
          refused ??= err;
        }
      }
      if (refused) throw refused;
      if (!wasPaused && inputs.paused) {
        const stopped = await stopFork(id, inputs.projectId, inputs.waitForReady, deadlineOf(inputs.deleteTimeout));
        if (!stopped) throw new TigerCloudError(`Fork ${id} no longer exists (the API says so): it cannot be stopped.`);
        applied(["paused"], stopped);
      }
      const now = await clientNow().getService(inputs.projectId, id);
      return { outs: forkOutputs({ ...before, ...inputs }, now, password) };
    } catch (err) {
      throw partialFailure(id, last ? forkOutputs(done, last, password) : plain(done), news, err);
    }
  },

  /** A create recorded before the fork was READY, or before a login worked (a partial failure), is finished here. */
  async finishPending(id, outs, inputs, news) {
    const needsStatus = inputs.waitForReady && !inputs.paused && outs.status !== "READY";
    const passwordPending = outs.passwordPending === true && inputs.passwordOnAdopt === "reset";
    // A fork recorded before READY never had its login tried either.
    const needsLogin =
      inputs.waitForReady &&
      !inputs.paused &&
      inputs.readyWhen === "login" &&
      (needsStatus || passwordPending || outs.loginPending === true);
    if (!needsStatus && !needsLogin && !passwordPending) {
      const { loginPending: _moot, ...rest } = outs; // no longer awaited (readyWhen or waitForReady changed)
      return rest;
    }
    const deadline = createDeadline(inputs);
    let current = outs;
    try {
      if (needsStatus) current = forkOutputs(current, await waitReady(inputs, id, deadline), current.initialPassword);
      if (passwordPending) current = await resetAdoptedPassword(id, inputs, current, deadline);
      if (needsLogin) current = await awaitLogin(inputs, id, { ...current, loginPending: true }, deadline);
      return current;
    } catch (err) {
      throw partialFailure(id, current, news, err);
    }
  },

  async delete(id, props) {
    const projectId = String(props.projectId);
    // Renamed or moved without an alias, this resource is deleted after its successor adopted its fork.
    const holders = heldElsewhere(id, props);
    if (holders.length > 0) {
      const names = holders.map((h) => describeDeclarant(h.resource)).join(" and ");
      progress(`fork ${id} is held by ServiceFork ${names} of this program, or will be; leaving it as it is`);
      return;
    }
    const wait = props.waitForReady !== false;
    if (props.onDestroy === "delete") {
      await deleteFork(id, projectId, String(props.sourceServiceId), wait, deadlineOf(props.deleteTimeout));
      return;
    }
    progress(`stopping fork ${id} (onDestroy: "stop": it is kept, paused, with its data; "delete" would delete it)`);
    await stopFork(id, projectId, wait, deadlineOf(props.deleteTimeout));
  },

  foreseeReplacement: warnOfDeletion,
});

/**
 * The other resources of this run that hold this fork, or would take it over: by adoptServiceId,
 * or by its identity (name and source) with adoptExisting. Destroy leaves such a fork alone.
 */
function heldElsewhere(id: string, props: Record<string, unknown>): { resource: Declarant }[] {
  const me = declarantOf(props);
  const projectId = String(props.projectId);
  const holders = declaredBy(forkHeld(projectId, id), me);
  const { sourceServiceId, name } = props;
  if (typeof sourceServiceId !== "string" || typeof name !== "string") return holders;
  const adopters = declaredBy<boolean>(forkIdentity(projectId, sourceServiceId, name), me).filter((claim) => claim.value);
  const byUrn = new Map([...holders, ...adopters].map((claim) => [claim.resource.urn, claim]));
  return [...byUrn.values()];
}

/** A replacement with onDestroy "delete" deletes the old fork and its data: preview says so. */
async function warnOfDeletion(id: string, olds: Record<string, unknown>, news: Record<string, unknown>, first: boolean): Promise<void> {
  if (olds.onDestroy !== "delete") return;
  await warning(
    `ServiceFork ${describeDeclarant(declarantOf(news))} will be replaced, and its fork ${id} will be DELETED with its data ` +
      `(onDestroy: "delete"), ${first ? "before the new fork is made (same name and source)" : "after the new fork is made"}. ` +
      `Set onDestroy: "stop" and run \`up\` first to keep the old fork, paused.`,
    declarantOf(news).urn,
  );
}

/** Statuses of a fork that is being deleted, or is. */
const DELETED = ["DELETING", "DELETED"];

/**
 * Deletes a fork (onDestroy: "delete") and, unless told not to wait, waits until the API says it
 * is DELETED, or no longer knows it (the "gone" rule). Only a fork of the declared source is
 * deleted: a service without forked_from, or forked from another, is refused and left as it is.
 * A fork already deleting, deleted or gone is success.
 */
async function deleteFork(id: string, projectId: string, sourceServiceId: string, wait: boolean, deadline: number): Promise<void> {
  const client = clientNow();
  const gone = () => progress(`fork ${id} is deleted`);
  const service = await serviceUnlessGone(client, projectId, id);
  if (!service) return progress(`fork ${id} no longer exists; nothing to delete`);
  if (service.forked_from?.service_id !== sourceServiceId) {
    const what = service.forked_from
      ? `a fork of ${service.forked_from.service_id}, not of ${sourceServiceId}`
      : "not a fork (no forked_from)";
    throw new TigerCloudError(
      `ServiceFork will not delete service ${id}: it is ${what}, and onDestroy: "delete" deletes only a fork of sourceServiceId. ` +
        `Nothing was deleted. If this resource should let go of it, remove it from state with \`pulumi state delete\`.`,
    );
  }
  if (!DELETED.includes(service.status)) {
    progress(`deleting fork ${id} (onDestroy: "delete": the fork and its data go for good)`);
    const busy = busyFork(id, projectId, "delete", deadline, { client, accepts: ["READY", "PAUSED"], timeoutInput: "deleteTimeout" });
    try {
      await sendWhenSettled(busy, () => client.deleteService(projectId, id));
    } catch (err) {
      // A 404: gone meanwhile, if the API confirms it.
      if (!(err instanceof NotFoundError) || (await serviceUnlessGone(client, projectId, id))) throw err;
      return gone();
    }
  }
  if (!wait) return;
  try {
    await waitForService({
      client,
      projectId,
      serviceId: id,
      goal: "DELETED",
      done: (s) => s.status === "DELETED",
      hopeless: [],
      timeoutMs: Math.max(0, deadline - Date.now()),
      timeoutInput: "deleteTimeout",
    });
  } catch (err) {
    // The API may forget a deleted service rather than say DELETED: its 404, confirmed, is the end too.
    if (!(err instanceof WaitError && err.cause instanceof NotFoundError) || (await serviceUnlessGone(client, projectId, id))) throw err;
  }
  gone();
}
