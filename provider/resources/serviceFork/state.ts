// A fork's state, which is also its outputs: the checked inputs as recorded, what the API says of
// the fork, and the steps a create still owes it (usable.ts decides them). What the engine hands
// back is read by this schema once (resources/define.ts): the fields every state holds required,
// each of its type.
import { z } from "zod";
import { ENVIRONMENT_TAGS, FORK_STRATEGIES, type Service } from "../../api/schemas";
import { isStopped } from "../../api/statuses";
import { connectionUri, DATABASE, USERNAME } from "../../policies/connection";
import { type Partly, reported, toPlainJson } from "../../rules/state";
import { FORK_DIFF_RULES, FORK_SETTING_DEFAULTS, sameSize } from "./inputs";
import { expiresAt } from "./expiry";
import { MaskedSourceSchema, PreparationSchema, PreparedSchema, SampledEarlierSchema } from "./preparation";

/** A host and port, as the API reports a service's endpoints. */
export const EndpointSchema = z
  .object({
    host: reported(z.string()).describe("The host name."),
    port: reported(z.number().int()).describe("The port."),
  })
  .meta({ typeName: "Endpoint", typeDescription: "A host and port a client connects to." });

/**
 * The settings every create and import records, after their defaults: a state of a version that
 * did not record one gets its default, which is what that version used.
 */
const SETTING_DEFAULTS = FORK_SETTING_DEFAULTS;

type Settings = Pick<ServiceForkState, keyof typeof SETTING_DEFAULTS>;

/** `recorded`'s settings, each setting it lacks at its default. */
function settingsOf(recorded: Partly<Settings>): Settings {
  const d = SETTING_DEFAULTS;
  return {
    waitForReady: recorded.waitForReady ?? d.waitForReady,
    readyWhen: recorded.readyWhen ?? d.readyWhen,
    createTimeout: recorded.createTimeout ?? d.createTimeout,
    updateTimeout: recorded.updateTimeout ?? d.updateTimeout,
    deleteTimeout: recorded.deleteTimeout ?? d.deleteTimeout,
    adoptExisting: recorded.adoptExisting ?? d.adoptExisting,
    passwordOnAdopt: recorded.passwordOnAdopt ?? d.passwordOnAdopt,
    onDestroy: recorded.onDestroy ?? d.onDestroy,
  };
}

/** The fork's state: its outputs, and what a create still owes it. */
export const ServiceForkStateSchema = z.object({
  // The inputs as recorded (after defaults), which refresh may hand back changed (drift).
  projectId: z.string().describe("The project of the source service and of the fork."),
  sourceServiceId: z.string().describe("The service the fork is a copy of."),
  forkStrategy: z
    .enum(FORK_STRATEGIES)
    .describe("How the fork was made: LAST_SNAPSHOT, NOW or PITR (an imported fork says LAST_SNAPSHOT)."),
  targetTime: reported(z.string()).describe("The point in time a PITR fork was made at."),
  cpuMillis: reported(z.string()).describe('The declared CPU, in millicores, or "shared".'),
  memoryGbs: reported(z.string()).describe('The declared memory, in gigabytes, or "shared".'),
  environmentTag: reported(z.enum(ENVIRONMENT_TAGS)).describe("The declared environment tag, DEV or PROD."),
  prepare: reported(PreparationSchema).describe("The preparation declared (see the input), as recorded."),
  unmaskedReason: reported(z.string()).describe("Why the fork may be unmasked, as declared (see the input)."),
  expires: reported(z.string()).describe("When the fork expires, as declared (see the input)."),
  expiresAt: reported(z.string()).describe("When the fork expires (RFC 3339), from expires and its creation time."),
  // The settings (see SETTING_DEFAULTS).
  waitForReady: z
    .boolean()
    .default(SETTING_DEFAULTS.waitForReady)
    .catch(SETTING_DEFAULTS.waitForReady)
    .describe("Whether create and destroy wait for the API's work to finish."),
  readyWhen: z
    .enum(["login", "status"])
    .default(SETTING_DEFAULTS.readyWhen)
    .catch(SETTING_DEFAULTS.readyWhen)
    .describe('What counted as ready when create waited: "login" or "status".'),
  createTimeout: z
    .string()
    .default(SETTING_DEFAULTS.createTimeout)
    .catch(SETTING_DEFAULTS.createTimeout)
    .describe("How long create waits."),
  updateTimeout: z
    .string()
    .default(SETTING_DEFAULTS.updateTimeout)
    .catch(SETTING_DEFAULTS.updateTimeout)
    .describe("How long an in-place change waits."),
  deleteTimeout: z
    .string()
    .default(SETTING_DEFAULTS.deleteTimeout)
    .catch(SETTING_DEFAULTS.deleteTimeout)
    .describe("How long destroy waits."),
  adoptExisting: z
    .boolean()
    .default(SETTING_DEFAULTS.adoptExisting)
    .catch(SETTING_DEFAULTS.adoptExisting)
    .describe("Whether create takes over a running fork of the same name and source."),
  adoptServiceId: reported(z.string()).describe("The fork taken under management instead of forking, if one was named."),
  passwordOnAdopt: z
    .enum(["reset", "keep"])
    .default(SETTING_DEFAULTS.passwordOnAdopt)
    .catch(SETTING_DEFAULTS.passwordOnAdopt)
    .describe('What adopting a fork does to its password: "reset" or "keep".'),
  onDestroy: z
    .enum(["stop", "delete"])
    .default(SETTING_DEFAULTS.onDestroy)
    .catch(SETTING_DEFAULTS.onDestroy)
    .describe('What destroy does to the fork: "stop" or "delete".'),
  // What the API says of the fork.
  serviceId: z.string().describe("The fork's service ID (also the resource's ID)."),
  name: reported(z.string()).describe("The fork's name, as the API reports it."),
  status: z.string().describe("The fork's status as last seen (READY, PAUSED, ...)."),
  // States written before forks could be paused lack it: their forks ran.
  paused: z.boolean().default(false).describe("True when the fork is stopped (PAUSING or PAUSED), as last seen."),
  serviceType: reported(z.string()).describe("The service type (TIMESCALEDB, POSTGRES, ...)."),
  regionCode: reported(z.string()).describe("The region the fork runs in."),
  created: reported(z.string()).describe("When the fork was created (RFC 3339)."),
  endpoint: reported(EndpointSchema).describe("The fork's endpoint."),
  connectionPooler: reported(z.object({ endpoint: reported(EndpointSchema).describe("The pooler's endpoint.") }))
    .meta({ typeName: "ServiceForkConnectionPooler", typeDescription: "The fork's connection pooler." })
    .describe("The fork's connection pooler, when it has one."),
  forkedFrom: reported(
    z.object({
      isStandby: reported(z.boolean()).describe("True for a standby of the service (never a fork)."),
      projectId: reported(z.string()).describe("The project of the service it was made from."),
      serviceId: reported(z.string()).describe("The service it was made from."),
    }),
  )
    .meta({ typeName: "ServiceForkForkedFrom", typeDescription: "The service a fork was made from." })
    .describe("The service the fork was made from, as the API reports it."),
  haReplicas: reported(
    z.object({
      replicaCount: reported(z.number().int()).describe("HA replicas."),
      syncReplicaCount: reported(z.number().int()).describe("Synchronous HA replicas."),
    }),
  )
    .meta({ typeName: "ServiceForkHaReplicas", typeDescription: "A service's high-availability replica counts." })
    .describe("The fork's HA replica counts, as the API reports them."),
  resources: reported(
    z.array(
      z
        .object({
          id: reported(z.string()).describe("The resource's ID."),
          cpuMillis: reported(z.number().int()).describe("Its CPU, in millicores."),
          memoryGbs: reported(z.number()).describe("Its memory, in gigabytes."),
          volumeType: reported(z.string()).describe("Its storage's volume type."),
        })
        .meta({ typeName: "ServiceForkResource", typeDescription: "A compute resource of a service, as the API reports it." }),
    ),
  ).describe("The fork's compute resources, as the API reports them."),
  environment: reported(z.string()).describe("The fork's environment tag, as the API reports it."),
  initialPassword: reported(z.string()).describe(
    "The password of tsdbadmin: the fork's initial one, or the one set when it was adopted (passwordOnAdopt). Always secret.",
  ),
  adopted: reported(
    z.object({
      at: z.string().describe("When (RFC 3339)."),
      reason: z.string().describe("Why it was taken over."),
    }),
  )
    .meta({ typeName: "ServiceForkAdopted", typeDescription: "When a fork was taken over instead of made, and why." })
    .describe("When the fork was taken over instead of made (see adoptExisting), and why."),
  host: reported(z.string()).describe("The endpoint's host."),
  port: reported(z.number().int()).describe("The endpoint's port."),
  database: z.string().default(DATABASE).describe("The database to connect to: tsdb."),
  username: z.string().default(USERNAME).describe("The admin role: tsdbadmin."),
  connectionUri: reported(z.string()).describe(
    "`postgresql://tsdbadmin:<password>@<host>:<port>/tsdb?sslmode=require`. Always secret. For an adopted fork, with the password set " +
      'when it was adopted (passwordOnAdopt "reset", the default), or without one ("keep"). Empty until the fork is prepared, when prepare is declared.',
  ),
  poolerConnectionUri: reported(z.string()).describe(
    "The same through the connection pooler, when the fork has one. Always secret. Empty until the fork is prepared, when prepare is declared.",
  ),
  prepared: reported(PreparedSchema).describe("What the fork's preparation did (see prepare): counts and a digest, never data."),
  maskedSource: reported(MaskedSourceSchema).describe(
    "When requireMasking accepted this fork (no masking rule of its own) because its source is a fork whose preparation masked and was " +
      "checked: that source, its preparation's digest, the columns it masked, when its data was taken and when it was checked, as " +
      "the mark in this fork's database says (read before the connection strings were published). Never data.",
  ),
  // Steps a create still owes (see stepsOwed): an adopted fork's password reset, a login to await,
  // the preparation (until it is done, no connection string is published).
  passwordPending: z.literal(true).optional(),
  loginPending: z.literal(true).optional(),
  preparePending: z.literal(true).optional(),
  // While the preparation is owed, the password is kept here, out of the outputs (secret all the same).
  pendingPassword: z.string().optional(),
  // A preparation that failed past its commit: what it sampled from production, as digests, for the next to check against.
  sampledEarlier: SampledEarlierSchema.optional(),
});
export type ServiceForkState = z.output<typeof ServiceForkStateSchema>;

/** The state's fields that are bookkeeping of the provider's own, not outputs a program reads. */
export const FORK_INTERNAL_STATE = ["passwordPending", "loginPending", "preparePending", "pendingPassword", "sampledEarlier"] as const;
/** Outputs that hold the password: secret without the program asking. */
export const FORK_SECRET_OUTPUTS = [
  "initialPassword",
  "connectionUri",
  "poolerConnectionUri",
  "pendingPassword",
  "sampledEarlier",
] as const;

/** Of those, what is secret only for the password in it (the URIs) or for nothing a message could quote (digests). */
export const FORK_PASSWORD_ONLY_SECRETS = ["connectionUri", "poolerConnectionUri", "sampledEarlier"] as const;

/** The fork's password as state holds it: published, or kept aside while the preparation is owed. */
export const passwordOf = (state: Partly<Pick<ServiceForkState, "initialPassword" | "pendingPassword">>): string | undefined =>
  state.initialPassword ?? state.pendingPassword;

/** What a state is built on: the inputs as recorded, and anything recorded before. */
export type RecordedFork = Partly<ServiceForkState> & Pick<ServiceForkState, "projectId" | "sourceServiceId" | "forkStrategy">;

/** The inputs as state records them, so that refresh can hand back what it read (`paused`). */
const INPUT_KEYS = [...FORK_DIFF_RULES.replaceKeys, ...(FORK_DIFF_RULES.updateKeys ?? []), ...(FORK_DIFF_RULES.stateOnlyKeys ?? [])];

/** The recorded inputs with what a refresh read: after it, preview shows the update. */
export function inputsAfterRefresh(recorded: ServiceForkState, read: ServiceForkState): Partial<ServiceForkState> {
  const inputs: Partial<ServiceForkState> = {};
  for (const k of INPUT_KEYS) if (recorded[k] !== undefined) Object.assign(inputs, { [k]: recorded[k] });
  for (const k of FORK_DIFF_RULES.updateKeys ?? []) if (inputs[k] !== undefined || k === "paused") Object.assign(inputs, { [k]: read[k] });
  return inputs;
}

/** State = the checked inputs + what the API says of the fork (metrics left out: they drift). */
export function stateFromService(recorded: RecordedFork, s: Service, initialPassword: string | undefined): ServiceForkState {
  // GET does not return the password: keep the one the fork answered with.
  const password = s.initial_password ?? initialPassword;
  return toPlainJson({
    ...recorded,
    ...settingsOf(recorded),
    serviceId: s.service_id,
    name: s.name ?? recorded.name,
    status: s.status,
    serviceType: s.service_type,
    regionCode: s.region_code,
    created: s.created,
    expiresAt: expiresAt(recorded.expires, s.created ?? recorded.created),
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
    paused: isStopped(s.status),
    // Never published before the fork is what the program declared (prepared): kept aside till then.
    initialPassword: recorded.preparePending ? undefined : password,
    pendingPassword: recorded.preparePending ? password : undefined,
    // Built from the endpoint each read: a refresh follows an endpoint that moved.
    host: s.endpoint?.host,
    port: s.endpoint?.port,
    database: DATABASE,
    username: USERNAME,
    connectionUri: recorded.preparePending ? undefined : connectionUri(s.endpoint, password),
    poolerConnectionUri: recorded.preparePending ? undefined : connectionUri(s.connection_pooler?.endpoint, password),
  });
}

/** The fork's size as the API reports it, in the inputs' form (strings). */
export function liveSize(s: Service): { cpuMillis?: string; memoryGbs?: string } {
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
export function liveInputs(declared: Partial<ServiceForkState>, s: Service): Partial<ServiceForkState> {
  const live = liveSize(s);
  const found: Partial<ServiceForkState> = {};
  for (const k of ["cpuMillis", "memoryGbs"] as const) {
    const d = declared[k];
    if (typeof d === "string" && d !== "shared" && live[k] !== undefined && !sameSize(d, live[k])) found[k] = live[k];
  }
  const environment = ENVIRONMENT_TAGS.find((tag) => tag === s.metadata?.environment);
  if (environment) found.environmentTag = environment;
  return found;
}
