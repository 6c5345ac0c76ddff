// The simulated cloud's data: services, VPCs, the seed format, status delays, and the wire form
// of a service (its status now, the password only in the answer that made it).
import * as crypto from "crypto";

export type Status =
  "QUEUED" | "CONFIGURING" | "RESUMING" | "UPGRADING" | "READY" | "PAUSING" | "PAUSED" | "DELETING" | "DELETED" | "UNSTABLE";
/** A service in one of these is busy with an operation, and refuses another with 409. */
export const BUSY: readonly Status[] = ["QUEUED", "CONFIGURING", "RESUMING", "UPGRADING", "PAUSING", "UNSTABLE"];

export interface SimService {
  service_id: string;
  project_id: string;
  name: string;
  service_type: "TIMESCALEDB" | "POSTGRES" | "VECTOR";
  region_code: string;
  created: string;
  endpoint: { host: string; port: number };
  connection_pooler?: { endpoint: { host: string; port: number } };
  forked_from?: { is_standby: boolean; project_id: string; service_id: string };
  ha_replicas: { replica_count: number; sync_replica_count: number };
  initial_password?: string;
  metadata: { environment: "DEV" | "PROD" };
  resources: { id: string; spec: { cpu_millis: number; memory_gbs: number; volume_type: string } }[];
  /** Status changes still to come: the current status is the last whose time has passed. */
  timeline: { status: Status; at: number }[];
}

export interface SimVpc {
  id: string;
  cidr: string;
  name: string;
  region_code: string;
}

export interface SeedData {
  /** `name`: what GET /auth/info and GET /projects call the project (default "Project <id>"). */
  projects: { id: string; name?: string; services: Omit<SimService, "timeline" | "project_id">[]; vpcs: SimVpc[] }[];
}

export interface Delays {
  /** Fork: QUEUED for this long, then CONFIGURING for forkConfiguringMs, then READY. */
  forkQueuedMs: number;
  forkConfiguringMs: number;
  /** Stop: PAUSING for this long, then PAUSED. */
  stopMs: number;
  /** Start: RESUMING for this long, then READY. */
  startMs: number;
  /** Resize: CONFIGURING for this long, then READY with the new size (0 when unset). */
  resizeMs?: number;
  /** setHA: CONFIGURING for this long, then READY. */
  setHAMs: number;
  /** DELETE: DELETING for this long, then DELETED (stopMs when unset). */
  deleteMs?: number;
  /** A fork's database accepts logins this long after it is READY (production has been seen to lag). */
  loginLagMs: number;
}

export const REALISTIC_DELAYS: Delays = {
  forkQueuedMs: 1500,
  forkConfiguringMs: 2500,
  stopMs: 1500,
  startMs: 2000,
  setHAMs: 1500,
  loginLagMs: 1500,
};
export const NO_DELAYS: Delays = { forkQueuedMs: 0, forkConfiguringMs: 0, stopMs: 0, startMs: 0, setHAMs: 0, loginLagMs: 0 };

export const DEFAULT_SEED: SeedData = {
  projects: [
    {
      id: "proj-demo01",
      services: [
        {
          service_id: "svc-parent1",
          name: "production-db",
          service_type: "TIMESCALEDB",
          region_code: "us-east-1",
          created: "2026-01-15T10:00:00Z",
          endpoint: { host: "svc-parent1.proj-demo01.tsdb.cloud.timescale.com", port: 34567 },
          connection_pooler: { endpoint: { host: "svc-parent1.proj-demo01.tsdb.cloud.timescale.com", port: 34568 } },
          ha_replicas: { replica_count: 1, sync_replica_count: 0 },
          metadata: { environment: "PROD" },
          resources: [{ id: "res-parent1", spec: { cpu_millis: 2000, memory_gbs: 8, volume_type: "gp3" } }],
        },
      ],
      vpcs: [{ id: "1234567", cidr: "10.0.0.0/16", name: "main-vpc", region_code: "us-east-1" }],
    },
  ],
};

/** An answer the API gives instead of the operation: its status, code and message (the API's JSON error). */
export class HttpFailure extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}
export const fail = (status: number, code: string, message: string) => new HttpFailure(status, code, message);

/** The API's 409 for a service busy with another operation (a BUSY status): the one text of that refusal. */
export function refuseIfBusy(serviceId: string, status: Status): void {
  if (BUSY.includes(status)) throw fail(409, "CONFLICT", `service ${serviceId} is ${status}; try again when the operation has finished`);
}

export function currentStatus(s: SimService): Status {
  const now = Date.now();
  let status: Status = s.timeline[0]?.status ?? "READY";
  for (const step of s.timeline) if (step.at <= now) status = step.status;
  return status;
}

/** The wire form of a service: its status now, metrics that change on every read, and the initial
 *  password only in the answer to the fork that made it. */
export function view(s: SimService, opts: { withMetrics?: boolean; withPassword?: boolean } = {}): Record<string, unknown> {
  const { timeline: _timeline, initial_password, ...rest } = s;
  const out: Record<string, unknown> = { ...rest, status: currentStatus(s) };
  if (opts.withPassword && initial_password) out.initial_password = initial_password;
  if (opts.withMetrics) out.metrics = { memory_mb: 512 + crypto.randomInt(512), milli_cpu: crypto.randomInt(2000), storage_mb: 1024 };
  return out;
}
