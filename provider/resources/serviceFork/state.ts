// A fork's state: the checked inputs as recorded, what the API says of the fork, and the steps a
// create still owes it (usable.ts decides them). The engine's state is read by this schema once,
// at the host boundary (resources/defineProvider.ts), into ServiceForkState.
import type { Service } from "../../api/schemas";
import { isStopped } from "../../api/statuses";
import { BOOKKEEPING_KEYS } from "../../rules/inputs";
import { toPlainJson } from "../../rules/outputs";
import { z } from "zod";
import { recordedFields, stateSchema } from "../../rules/state";
import { connectionUri, DATABASE, USERNAME } from "../../workflows/connection";
import { FORK_DIFF_RULES, sameSize } from "./inputs";

/** The inputs that state keeps and that this provider reads back. */
const KEPT = {
  sourceServiceId: z.string(),
  name: z.string(),
  cpuMillis: z.string(),
  memoryGbs: z.string(),
  environmentTag: z.string(),
  paused: z.boolean(),
  waitForReady: z.boolean(),
  readyWhen: z.string(),
  passwordOnAdopt: z.string(),
  onDestroy: z.string(),
  deleteTimeout: z.string(),
};
const RESOURCE = z.looseObject(recordedFields({ id: z.string(), cpuMillis: z.number(), memoryGbs: z.number(), volumeType: z.string() }));
/** What the API said of the fork (the create's answer holds its password), read back by this provider. */
const REPORTED = {
  serviceId: z.string(),
  status: z.string(),
  resources: z.array(RESOURCE),
  initialPassword: z.string(),
  host: z.string(),
  port: z.number(),
};
/** Steps a create still owes (see stepsOwed): an adopted fork's password reset, a login to await. */
const OWED = { passwordPending: z.literal(true), loginPending: z.literal(true) };
/** The other inputs and outputs (`adopted`, the endpoints...) are kept as they came. */
export const ServiceForkStateSchema = stateSchema({ ...KEPT, ...REPORTED, ...OWED });
export type ServiceForkState = z.output<typeof ServiceForkStateSchema>;

/** The inputs as state records them, so that refresh can hand back what it read (`paused`). */
const INPUT_KEYS = [
  ...FORK_DIFF_RULES.replaceKeys,
  ...(FORK_DIFF_RULES.updateKeys ?? []),
  ...(FORK_DIFF_RULES.stateOnlyKeys ?? []),
  ...BOOKKEEPING_KEYS,
];

/** The recorded inputs with what a refresh read: after it, preview shows the update. */
export function inputsAfterRefresh(recorded: ServiceForkState, read: ServiceForkState): ServiceForkState {
  const inputs: ServiceForkState = Object.fromEntries(INPUT_KEYS.filter((k) => recorded[k] !== undefined).map((k) => [k, recorded[k]]));
  for (const k of FORK_DIFF_RULES.updateKeys ?? []) if (inputs[k] !== undefined || k === "paused") inputs[k] = read[k];
  return inputs;
}

/** State = the checked inputs + what the API says of the fork (metrics left out: they drift). */
export function stateFromService(recorded: ServiceForkState, s: Service, initialPassword: string | undefined): ServiceForkState {
  // GET does not return the password: keep the one the fork answered with.
  const password = s.initial_password ?? initialPassword;
  return toPlainJson({
    ...recorded,
    serviceId: s.service_id,
    name: s.name ?? recorded.name,
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
    paused: isStopped(s.status),
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
export function liveInputs(declared: ServiceForkState, s: Service): ServiceForkState {
  const live = liveSize(s);
  const found: ServiceForkState = {};
  for (const k of ["cpuMillis", "memoryGbs"] as const) {
    const d = declared[k];
    if (typeof d === "string" && d !== "shared" && live[k] !== undefined && !sameSize(d, live[k])) found[k] = live[k];
  }
  if (s.metadata?.environment) found.environmentTag = s.metadata.environment;
  return found;
}
