// The cloud in memory: projects, services and VPCs, and the API's operations on them with the
// real rules (validation, 409 while busy) and status sequences over time. No HTTP: the server
// (server.ts) holds a cloud and answers requests with its operations; tests and the demo reach it
// through the server. Each service's database is the Databases' (databases.ts), handed in.
import * as crypto from "crypto";
import type { Databases, Endpoints } from "./databases";
import {
  currentStatus,
  type Delays,
  fail,
  NO_DELAYS,
  refuseIfBusy,
  type SeedData,
  type SimService,
  type SimVpc,
  type Status,
  view,
} from "./model";
import type { OperationName } from "./routes";

/** The operations the cloud carries out; who is calling (authInfo, listProjects) is the server's to answer. */
export type CloudOperation = Exclude<OperationName, "authInfo" | "listProjects">;

const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

export class Cloud {
  private readonly projects = new Map<string, { services: Map<string, SimService>; vpcs: Map<string, SimVpc> }>();
  private readonly projectNames = new Map<string, string>();
  /** Services holdBusy holds, and the status each had before. */
  private readonly held = new Map<string, Status>();
  delays: Delays;
  renameAnswersVpc: boolean;

  constructor(
    options: { seed: SeedData; delays?: Partial<Delays> | undefined; renameAnswersVpc?: boolean | undefined },
    /** The services' databases: each operation on a service acts on its database too. */
    private readonly databases: Databases,
  ) {
    this.delays = { ...NO_DELAYS, ...options.delays };
    this.renameAnswersVpc = options.renameAnswersVpc ?? false;
    this.loadSeed(options.seed);
  }

  /** A database for every service of the seed, behind its endpoints (once the databases have started). */
  async seedDatabases(): Promise<void> {
    for (const project of this.projects.values())
      for (const s of project.services.values()) {
        s.initial_password ??= newPassword();
        this.attach(s, await this.databases.seed(s.service_id, s.initial_password));
      }
  }

  /** The service's endpoints become its database's loopback listeners. */
  private attach(s: SimService, ports: Endpoints): void {
    s.endpoint = { host: "127.0.0.1", port: ports.port };
    s.connection_pooler = { endpoint: { host: "127.0.0.1", port: ports.poolerPort } };
  }

  // ---- seed and direct access (tests, demo) ------------------------------------------------

  loadSeed(seed: SeedData): void {
    for (const p of seed.projects) {
      const services = new Map<string, SimService>();
      for (const s of p.services)
        services.set(s.service_id, { ...structuredClone(s), project_id: p.id, timeline: [{ status: "READY", at: 0 }] });
      this.projects.set(p.id, { services, vpcs: new Map(p.vpcs.map((v) => [v.id, { ...v }])) });
      if (p.name !== undefined) this.projectNames.set(p.id, p.name);
    }
  }

  /** The first project, service and VPC of the seed: what `npm run simulator` prints. */
  defaults(): { projectId: string; serviceId: string; vpcId: string } {
    const [projectId, project] = [...this.projects.entries()][0] ?? [];
    if (!projectId || !project) throw new Error("the seed has no project");
    return { projectId, serviceId: [...project.services.keys()][0] ?? "", vpcId: [...project.vpcs.keys()][0] ?? "" };
  }

  service(projectId: string, serviceId: string): (SimService & { status: Status }) | undefined {
    const s = this.projects.get(projectId)?.services.get(serviceId);
    return s && { ...s, status: currentStatus(s) };
  }

  services(projectId: string): (SimService & { status: Status })[] {
    return [...(this.projects.get(projectId)?.services.values() ?? [])].map((s) => ({ ...s, status: currentStatus(s) }));
  }

  vpc(projectId: string, vpcId: string): SimVpc | undefined {
    return this.projects.get(projectId)?.vpcs.get(vpcId);
  }

  /** Whether holdBusy holds the service (until releaseBusy or setStatus). */
  isHeld(serviceId: string): boolean {
    return this.held.has(serviceId);
  }

  /** Changes made outside Pulumi, as a person in the console would. */
  outOfBand = {
    renameVpc: (projectId: string, vpcId: string, name: string) => {
      this.requireVpc(projectId, vpcId).name = name;
    },
    setHA: (projectId: string, serviceId: string, replicaCount: number, syncReplicaCount: number) => {
      this.requireService(projectId, serviceId).ha_replicas = { replica_count: replicaCount, sync_replica_count: syncReplicaCount };
    },
    /** This status from now on (a busy one is held by state too, as holdBusy's is: no timer ends it). */
    setStatus: (projectId: string, serviceId: string, status: Status) => {
      this.requireService(projectId, serviceId).timeline = [{ status, at: 0 }];
      this.held.delete(serviceId);
      // Its database opens a login lag after READY.
      if (status === "READY") this.databases.opensBy(serviceId, Date.now() + this.delays.loginLagMs);
    },
    /**
     * An operation started elsewhere (an HA change or a resize in the console): `status` until
     * releaseBusy. Held by state, not for a time: a test's busy window then cannot end before the
     * request it is for arrives, however loaded the machine.
     */
    holdBusy: (projectId: string, serviceId: string, status: Status) => {
      const s = this.requireService(projectId, serviceId);
      if (!this.held.has(serviceId)) this.held.set(serviceId, currentStatus(s));
      s.timeline = [{ status, at: 0 }];
    },
    /** The operation holdBusy started ends: the service is as it was before. */
    releaseBusy: (projectId: string, serviceId: string) => {
      const before = this.held.get(serviceId);
      if (before === undefined) throw new Error(`service ${serviceId} is not held busy`);
      this.held.delete(serviceId);
      this.requireService(projectId, serviceId).timeline = [{ status: before, at: 0 }];
    },
    renameService: (projectId: string, serviceId: string, name: string) => {
      this.requireService(projectId, serviceId).name = name;
    },
    resize: (projectId: string, serviceId: string, cpuMillis: number, memoryGbs: number) => {
      setSize(this.requireService(projectId, serviceId), cpuMillis, memoryGbs);
    },
    setEnvironment: (projectId: string, serviceId: string, environment: "DEV" | "PROD") => {
      this.requireService(projectId, serviceId).metadata = { environment };
    },
    /** The service's endpoint moved (a migration, a failover to another host): host and port from now on. */
    moveEndpoint: (projectId: string, serviceId: string, host: string, port: number) => {
      this.requireService(projectId, serviceId).endpoint = { host, port };
    },
    deleteService: (projectId: string, serviceId: string) => {
      this.databases.stopServer(serviceId);
      this.projects.get(projectId)?.services.delete(serviceId);
    },
    /** What the service's forked_from says (a fork whose source moved to another project, say). */
    setForkedFrom: (projectId: string, serviceId: string, fields: Partial<NonNullable<SimService["forked_from"]>>) => {
      const s = this.requireService(projectId, serviceId);
      if (!s.forked_from) throw new Error(`service ${serviceId} is not a fork`);
      s.forked_from = { ...s.forked_from, ...fields };
    },
    /**
     * A READY service of `parentId` made elsewhere, with no database behind it: a fork made in the
     * console (`createdAt` may lie in the past), or with `standby` the parent's own standby, which
     * carries forked_from too. Returns its ID.
     */
    addFork: (projectId: string, parentId: string, options: { name: string; createdAt?: Date; standby?: boolean }) => {
      const parent = this.requireService(projectId, parentId);
      const id = newServiceId();
      this.requireProject(projectId).services.set(id, {
        ...structuredClone(parent),
        service_id: id,
        name: options.name,
        created: (options.createdAt ?? new Date()).toISOString(),
        endpoint: { host: `${id}.${projectId}.tsdb.cloud.timescale.com`, port: 30000 + crypto.randomInt(9999) },
        forked_from: { is_standby: options.standby ?? false, project_id: projectId, service_id: parentId },
        ha_replicas: { replica_count: 0, sync_replica_count: 0 },
        timeline: [{ status: "READY", at: 0 }],
      });
      return id;
    },
  };

  /** Carries out one operation of the API: its status and answer, or an HttpFailure. */
  async carryOut(op: CloudOperation, projectId: string, id: string, body: unknown): Promise<[number, unknown]> {
    switch (op) {
      case "forkService":
        return [202, view(await this.fork(projectId, id, body), { withPassword: true })];
      case "setHA":
        return [202, view(this.setHA(projectId, id, body))];
      case "stop":
        return [202, view(this.stopService(projectId, id))];
      case "deleteService":
        // 202 and no body: the API promises none.
        this.deleteService(projectId, id);
        return [202, undefined];
      case "start":
        return [202, view(this.startService(projectId, id))];
      case "renameService":
        return [200, view(this.renameService(projectId, id, body))];
      case "resize":
        return [202, view(this.resize(projectId, id, body))];
      case "updatePassword":
        await this.updatePassword(projectId, id, body);
        return [204, undefined];
      case "setEnvironment":
        return [200, { message: this.setEnvironment(projectId, id, body) }];
      case "getService":
        return [200, view(this.requireService(projectId, id), { withMetrics: true })];
      case "listServices": {
        const live = [...this.requireProject(projectId).services.values()].filter((s) => currentStatus(s) !== "DELETED");
        return [200, live.map((s) => view(s, { withMetrics: true }))];
      }
      case "getVpc":
        return [200, this.requireVpc(projectId, id)];
      case "listVpcs":
        return [200, [...this.requireProject(projectId).vpcs.values()]];
      case "renameVpc": {
        const vpc = this.requireVpc(projectId, id);
        const name = (body as { name?: unknown } | undefined)?.name;
        if (typeof name !== "string" || name.length === 0) throw fail(400, "INVALID_NAME", "name: a non-empty string is required");
        vpc.name = name;
        return [200, this.renameAnswersVpc ? vpc : { message: "VPC renamed" }];
      }
      case "createService":
        return [202, view(await this.createService(projectId, body), { withPassword: true })];
    }
  }

  /** A project's name, as GET /auth/info and GET /projects give it (the seed may set one). */
  projectName(projectId: string): string {
    return this.projectNames.get(projectId) ?? `Project ${projectId}`;
  }

  private requireProject(projectId: string) {
    const p = this.projects.get(projectId);
    if (!p) throw fail(404, "NOT_FOUND", `project ${projectId} not found`);
    return p;
  }

  private requireService(projectId: string, serviceId: string): SimService {
    const s = this.requireProject(projectId).services.get(serviceId);
    if (!s || currentStatus(s) === "DELETED") throw fail(404, "NOT_FOUND", `service ${serviceId} not found`);
    return s;
  }

  /** The VPC, or the API's 400 or 404 for it. */
  requireVpc(projectId: string, vpcId: string): SimVpc {
    if (!/^[0-9]+$/.test(vpcId)) throw fail(400, "INVALID_VPC_ID", "vpc_id must be digits");
    const v = this.requireProject(projectId).vpcs.get(vpcId);
    if (!v) throw fail(404, "NOT_FOUND", `vpc ${vpcId} not found`);
    return v;
  }

  private async fork(projectId: string, parentId: string, body: unknown): Promise<SimService> {
    const parent = this.requireService(projectId, parentId);
    const b = (body ?? {}) as Record<string, unknown>;
    const parentStatus = currentStatus(parent);
    // The product forks a service only when it is running or paused.
    if (parentStatus !== "READY" && parentStatus !== "PAUSED") throw fail(409, "CONFLICT", "source service is not ready");
    if (!["LAST_SNAPSHOT", "NOW", "PITR"].includes(b.fork_strategy as string)) {
      throw fail(400, "INVALID_FORK_STRATEGY", "fork_strategy: required, one of LAST_SNAPSHOT, NOW, PITR");
    }
    if (b.fork_strategy === "PITR") {
      if (typeof b.target_time !== "string") throw fail(400, "MISSING_TARGET_TIME", "target_time: required when fork_strategy is PITR");
      if (!RFC3339.test(b.target_time)) throw fail(400, "INVALID_TARGET_TIME", "target_time: must be an RFC 3339 date-time");
      if (Date.parse(b.target_time) > Date.now()) throw fail(400, "INVALID_TARGET_TIME", "target_time: must not be in the future");
    }
    if (b.name !== undefined) checkServiceName(b.name);
    checkSizes(b);
    checkEnvironmentTag(b);
    const id = newServiceId();
    const now = Date.now();
    const { timeline, readyAt } = this.creationTimeline(now);
    const parentSpec = parent.resources[0]?.spec ?? { cpu_millis: 1000, memory_gbs: 4, volume_type: "gp3" };
    const fork: SimService = {
      service_id: id,
      project_id: projectId,
      name: (b.name as string | undefined) ?? `${parent.name}-fork`,
      service_type: parent.service_type,
      region_code: parent.region_code,
      created: new Date(now).toISOString(),
      endpoint: { host: `${id}.${projectId}.tsdb.cloud.timescale.com`, port: 30000 + crypto.randomInt(9999) },
      forked_from: { is_standby: false, project_id: projectId, service_id: parentId },
      ha_replicas: { replica_count: 0, sync_replica_count: 0 },
      initial_password: newPassword(),
      metadata: { environment: (b.environment_tag as "DEV" | "PROD" | undefined) ?? "DEV" },
      resources: [
        {
          id: `res-${id}`,
          spec: {
            cpu_millis: sizeOf(b.cpu_millis, parentSpec.cpu_millis),
            memory_gbs: sizeOf(b.memory_gbs, parentSpec.memory_gbs),
            volume_type: parentSpec.volume_type,
          },
        },
      ],
      timeline,
    };
    // Its database: a copy of the parent's as of now, accepting logins a lag after READY.
    this.attach(fork, await this.databases.fork(parentId, id, fork.initial_password as string, readyAt + this.delays.loginLagMs));
    this.requireProject(projectId).services.set(id, fork);
    return fork;
  }

  /** A new service (the official CLI's `service create`): QUEUED, CONFIGURING, then READY, with an empty database. */
  private async createService(projectId: string, body: unknown): Promise<SimService> {
    const project = this.requireProject(projectId);
    const b = (body ?? {}) as Record<string, unknown>;
    const name = checkServiceName(b.name, "name: required, 1 to 128 characters");
    const addons = b.addons ?? [];
    if (!Array.isArray(addons) || addons.some((a) => a !== "time-series" && a !== "ai"))
      throw fail(400, "INVALID_ADDONS", 'addons: an array of "time-series" and "ai"');
    checkSizes(b);
    const replicas = b.replica_count ?? 0;
    if (typeof replicas !== "number" || !Number.isInteger(replicas) || replicas < 0 || replicas > 2)
      throw fail(400, "INVALID_HA", REPLICA_COUNTS);
    checkEnvironmentTag(b);
    const id = newServiceId();
    const now = Date.now();
    const { timeline, readyAt } = this.creationTimeline(now);
    const service: SimService = {
      service_id: id,
      project_id: projectId,
      name,
      service_type: addons.includes("time-series") ? "TIMESCALEDB" : addons.includes("ai") ? "VECTOR" : "POSTGRES",
      region_code: typeof b.region_code === "string" ? b.region_code : "us-east-1",
      created: new Date(now).toISOString(),
      endpoint: { host: "127.0.0.1", port: 0 },
      ha_replicas: { replica_count: replicas, sync_replica_count: 0 },
      initial_password: newPassword(),
      metadata: { environment: (b.environment_tag as "DEV" | "PROD" | undefined) ?? "DEV" },
      resources: [
        { id: `res-${id}`, spec: { cpu_millis: sizeOf(b.cpu_millis, 500), memory_gbs: sizeOf(b.memory_gbs, 2), volume_type: "gp3" } },
      ],
      timeline,
    };
    this.attach(service, await this.databases.seed(id, service.initial_password as string, false));
    // Its database takes logins a lag after READY, as a fork's does.
    this.databases.opensBy(id, readyAt + this.delays.loginLagMs);
    project.services.set(id, service);
    return service;
  }

  /** A new service's statuses, fork or create: QUEUED, CONFIGURING, then READY at `readyAt`. */
  private creationTimeline(now: number): { timeline: SimService["timeline"]; readyAt: number } {
    const readyAt = now + this.delays.forkQueuedMs + this.delays.forkConfiguringMs;
    const timeline: SimService["timeline"] = [
      { status: "QUEUED", at: now },
      { status: "CONFIGURING", at: now + this.delays.forkQueuedMs },
      { status: "READY", at: readyAt },
    ];
    return { timeline, readyAt };
  }

  private setHA(projectId: string, serviceId: string, body: unknown): SimService {
    const s = this.requireService(projectId, serviceId);
    const b = (body ?? {}) as Record<string, unknown>;
    if (b.replica_count === undefined && b.sync_replica_count === undefined) {
      throw fail(400, "INVALID_HA", "at least one of replica_count, sync_replica_count is required");
    }
    for (const field of ["replica_count", "sync_replica_count"] as const) {
      const v = b[field];
      if (v !== undefined && (typeof v !== "number" || !Number.isInteger(v) || v < 0))
        throw fail(400, "INVALID_HA", `${field}: an integer >= 0`);
    }
    const replicas = (b.replica_count as number | undefined) ?? s.ha_replicas.replica_count;
    const sync = (b.sync_replica_count as number | undefined) ?? s.ha_replicas.sync_replica_count;
    if (replicas > 2) throw fail(400, "INVALID_HA", REPLICA_COUNTS);
    if (sync > 1 || (sync === 1 && replicas !== 2)) throw fail(400, "INVALID_HA", "sync_replica_count: 1 only with 2 replicas");
    const status = currentStatus(s);
    if (status !== "READY") throw fail(409, "CONFLICT", `service ${serviceId} is ${status}; HA can be changed only when READY`);
    s.ha_replicas = { replica_count: replicas, sync_replica_count: sync };
    const now = Date.now();
    s.timeline = [
      { status: "CONFIGURING", at: now },
      { status: "READY", at: now + this.delays.setHAMs },
    ];
    return s;
  }

  private stopService(projectId: string, serviceId: string): SimService {
    const s = this.requireService(projectId, serviceId);
    const status = currentStatus(s);
    if (status === "PAUSED" || status === "PAUSING") throw fail(400, "INVALID_STATE", `service ${serviceId} is already ${status}`);
    refuseIfBusy(serviceId, status);
    const now = Date.now();
    this.databases.stopServer(serviceId);
    s.timeline = [
      { status: "PAUSING", at: now },
      { status: "PAUSED", at: now + this.delays.stopMs },
    ];
    return s;
  }

  /** DELETING, then DELETED (GET and list answer 404 and leave it out); its database and data go. */
  private deleteService(projectId: string, serviceId: string): void {
    const s = this.requireService(projectId, serviceId);
    const status = currentStatus(s);
    if (status === "DELETING") return;
    refuseIfBusy(serviceId, status);
    const now = Date.now();
    this.databases.dropServer(serviceId);
    s.timeline = [
      { status: "DELETING", at: now },
      { status: "DELETED", at: now + (this.delays.deleteMs ?? this.delays.stopMs) },
    ];
  }

  /** The in-place changes refuse a service that is busy, or stopped, as the API is expected to. */
  private requireSettled(projectId: string, serviceId: string, what: string): SimService {
    const s = this.requireService(projectId, serviceId);
    const status = currentStatus(s);
    refuseIfBusy(serviceId, status);
    if (status !== "READY") throw fail(400, "INVALID_STATE", `service ${serviceId} is ${status}: ${what} needs it READY`);
    return s;
  }

  private renameService(projectId: string, serviceId: string, body: unknown): SimService {
    const name = checkServiceName((body as { name?: unknown } | undefined)?.name);
    const s = this.requireSettled(projectId, serviceId, "rename");
    s.name = name;
    return s;
  }

  private resize(projectId: string, serviceId: string, body: unknown): SimService {
    const b = (body ?? {}) as Record<string, unknown>;
    for (const field of ["cpu_millis", "memory_gbs"] as const) {
      if (typeof b[field] !== "string" || !/^[0-9]+$/.test(b[field] as string))
        throw fail(400, "INVALID_RESOURCES", `${field}: required, a string of digits`);
    }
    const s = this.requireSettled(projectId, serviceId, "resize");
    setSize(s, Number(b.cpu_millis), Number(b.memory_gbs));
    const now = Date.now();
    s.timeline = [
      { status: "CONFIGURING", at: now },
      { status: "READY", at: now + (this.delays.resizeMs ?? 0) },
    ];
    return s;
  }

  private setEnvironment(projectId: string, serviceId: string, body: unknown): string {
    const environment = (body as { environment?: unknown } | undefined)?.environment;
    if (environment !== "DEV" && environment !== "PROD") throw fail(400, "INVALID_ENVIRONMENT", "environment: DEV or PROD");
    this.requireSettled(projectId, serviceId, "setEnvironment").metadata = { environment };
    return `environment set to ${environment}`;
  }

  /** The tsdbadmin role's new password; the API answers 204 with no body. */
  private async updatePassword(projectId: string, serviceId: string, body: unknown): Promise<void> {
    const password = (body as { password?: unknown } | undefined)?.password;
    if (typeof password !== "string" || password.length < 8) throw fail(400, "INVALID_PASSWORD", "password: at least 8 characters");
    this.requireService(projectId, serviceId).initial_password = password;
    await this.databases.setPassword(serviceId, password);
  }

  private startService(projectId: string, serviceId: string): SimService {
    const s = this.requireService(projectId, serviceId);
    const status = currentStatus(s);
    refuseIfBusy(serviceId, status);
    if (status !== "PAUSED") throw fail(400, "INVALID_STATE", `service ${serviceId} is ${status}, not PAUSED`);
    const now = Date.now();
    s.timeline = [
      { status: "RESUMING", at: now },
      { status: "READY", at: now + this.delays.startMs },
    ];
    // Its database comes back with its data, and takes logins a little after READY, as at a fork.
    this.databases.startServer(serviceId, now + this.delays.startMs + this.delays.loginLagMs);
    return s;
  }
}

const REPLICA_COUNTS = "replica_count: 0, 1 or 2";

const newServiceId = () => `svc-${crypto.randomBytes(4).toString("hex")}`;

/** A new service's password, as the API makes one. */
const newPassword = () => crypto.randomBytes(18).toString("base64url");

/** A service's name: 1 to 128 characters (`text`: the refusal's words, which differ by operation). */
function checkServiceName(name: unknown, text = "name: 1 to 128 characters"): string {
  if (typeof name !== "string" || name.length < 1 || name.length > 128) throw fail(400, "INVALID_NAME", text);
  return name;
}

/** cpu_millis and memory_gbs, where given: a string holding a number, or "shared". */
function checkSizes(b: Record<string, unknown>): void {
  for (const field of ["cpu_millis", "memory_gbs"] as const) {
    const v = b[field];
    if (v !== undefined && (typeof v !== "string" || !(v === "shared" || /^\d+(\.\d+)?$/.test(v))))
      throw fail(400, "INVALID_RESOURCES", `${field}: a string holding a number, or "shared"`);
  }
}

function checkEnvironmentTag(b: Record<string, unknown>): void {
  if (b.environment_tag !== undefined && !["DEV", "PROD"].includes(b.environment_tag as string))
    throw fail(400, "INVALID_ENVIRONMENT_TAG", "environment_tag: DEV or PROD");
}

/** A size as checkSizes lets it through ("shared" is 0); absent, `otherwise`. */
const sizeOf = (v: unknown, otherwise: number) => (typeof v === "string" ? (v === "shared" ? 0 : Number(v)) : otherwise);

function setSize(s: SimService, cpuMillis: number, memoryGbs: number): void {
  const spec = s.resources[0]?.spec ?? { cpu_millis: 0, memory_gbs: 0, volume_type: "gp3" };
  s.resources = [{ id: s.resources[0]?.id ?? `res-${s.service_id}`, spec: { ...spec, cpu_millis: cpuMillis, memory_gbs: memoryGbs } }];
}
