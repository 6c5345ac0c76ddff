// zod schemas of the API's objects. Nearly every field is optional, as the API describes them;
// a null is read as absent; unknown extra fields pass through, and statuses added later are kept
// as plain strings, so that a newer API does not break an older provider.
import { z } from "zod";

const opt = <T extends z.ZodType>(schema: T) => schema.nullish().transform((v) => (v === null ? undefined : v));

// Service statuses: QUEUED, DELETING, CONFIGURING, READY, DELETED, UNSTABLE,
// PAUSING, PAUSED, RESUMING, UPGRADING, OPTIMIZING; kept as strings, see above.

export const EndpointSchema = z.looseObject({ host: opt(z.string()), port: opt(z.number()) });

export const ConnectionPoolerSchema = z.looseObject({ endpoint: opt(EndpointSchema) });

export const ReadReplicaSetSchema = z.looseObject({
  id: opt(z.string()),
  name: opt(z.string()),
  status: opt(z.string()),
  nodes: opt(z.number()),
  cpu_millis: opt(z.number()),
  memory_gbs: opt(z.number()),
  endpoint: opt(EndpointSchema),
  connection_pooler: opt(ConnectionPoolerSchema),
  metadata: opt(z.looseObject({ environment: opt(z.string()) })),
});

// Without an ID and a status an answer cannot be tracked or waited on, so it is not a service.
export const ServiceSchema = z.looseObject({
  service_id: z.string().min(1),
  project_id: opt(z.string()),
  name: opt(z.string()),
  service_type: opt(z.string()),
  status: z.string().min(1),
  created: opt(z.string()),
  region_code: opt(z.string()),
  endpoint: opt(EndpointSchema),
  connection_pooler: opt(ConnectionPoolerSchema),
  forked_from: opt(
    z.looseObject({
      is_standby: opt(z.boolean()),
      project_id: opt(z.string()),
      service_id: opt(z.string()),
    }),
  ),
  ha_replicas: opt(
    z.looseObject({
      replica_count: opt(z.number()),
      sync_replica_count: opt(z.number()),
    }),
  ),
  initial_password: opt(z.string()),
  metadata: opt(z.looseObject({ environment: opt(z.string()) })),
  metrics: opt(
    z.looseObject({
      memory_mb: opt(z.number()),
      milli_cpu: opt(z.number()),
      storage_mb: opt(z.number()),
    }),
  ),
  read_replica_sets: opt(z.array(ReadReplicaSetSchema)),
  resources: opt(
    z.array(
      z.looseObject({
        id: opt(z.string()),
        spec: opt(
          z.looseObject({
            cpu_millis: opt(z.number()),
            memory_gbs: opt(z.number()),
            volume_type: opt(z.string()),
          }),
        ),
      }),
    ),
  ),
  vpcEndpoint: z.unknown().optional(),
});
export type Service = z.infer<typeof ServiceSchema>;

export const VpcSchema = z.looseObject({
  id: opt(z.string()),
  cidr: opt(z.string()),
  name: opt(z.string()),
  region_code: opt(z.string()),
});
export type Vpc = z.infer<typeof VpcSchema>;

/** Today's rename answers `{"message": "..."}`; earlier it answered a Vpc. */
export const RenameResponseSchema = z.union([
  z.looseObject({ message: z.string() }).transform((m) => ({ message: m.message as string, vpc: undefined })),
  VpcSchema.transform((vpc) => ({ message: undefined, vpc })),
]);
export type RenameResponse = z.infer<typeof RenameResponseSchema>;

/** An API key's info: the one project it belongs to. */
const KeyInfoSchema = z.looseObject({
  public_key: opt(z.string()),
  name: opt(z.string()),
  project: z.looseObject({ id: z.string().min(1), name: opt(z.string()) }),
});
/**
 * GET /auth/info: who is calling. Only `type` is required (`apiKey` or `oauth`; kept as a string).
 * An API key's answer has `api_key` (`apiKey` is the older name of the same object); a user's
 * OAuth token has `oauth` (`{user: {...}}`) instead, and names no project.
 */
export const AuthInfoSchema = z.looseObject({
  type: z.string(),
  api_key: opt(KeyInfoSchema),
  apiKey: opt(KeyInfoSchema),
  oauth: opt(z.looseObject({ user: z.unknown().optional() })),
});
export type AuthInfo = z.infer<typeof AuthInfoSchema>;

/** setEnvironment answers a message only. */
export const MessageResponseSchema = z.looseObject({ message: opt(z.string()) });
export type MessageResponse = z.infer<typeof MessageResponseSchema>;

/** Request body of resize: both sizes, strings of digits. */
export interface ResizeRequest {
  cpu_millis: string;
  memory_gbs: string;
}

/** Error bodies: `{code, message}`, both optional, `details` sometimes; a field of another type is ignored. */
export const ErrorBodySchema = z.looseObject({
  code: z.string().optional().catch(undefined),
  message: z.string().optional().catch(undefined),
  details: z.string().optional().catch(undefined),
});

export const FORK_STRATEGIES = ["LAST_SNAPSHOT", "NOW", "PITR"] as const;
export type ForkStrategy = (typeof FORK_STRATEGIES)[number];
export const ENVIRONMENT_TAGS = ["DEV", "PROD"] as const;
export type EnvironmentTag = (typeof ENVIRONMENT_TAGS)[number];

/** Request body of forkService. */
export interface ForkServiceRequest {
  fork_strategy: ForkStrategy;
  target_time?: string;
  cpu_millis?: string;
  memory_gbs?: string;
  environment_tag?: EnvironmentTag;
  name?: string;
}

/** Request body of setHA; at least one field. */
export interface SetHARequest {
  replica_count?: number;
  sync_replica_count?: number;
}
