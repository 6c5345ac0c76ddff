// The API client against the simulator over real HTTP: operations, headers, errors, retries,
// and that no credential ever leaks into an error.
import { inspect } from "util";
import { CLIENT_DEFAULTS, apiPath, createClient, parseRetryAfter } from "../provider/client";
import {
  ApiError,
  AuthenticationError,
  BadRequestError,
  ConfigurationError,
  ConflictError,
  ConnectionError,
  ForkOutcomeUnknownError,
  InternalServerError,
  NotFoundError,
  PermissionDeniedError,
  RateLimitError,
  SchemaValidationError,
  TimeoutError,
} from "../provider/errors";
import { resolveSettings } from "../provider/settings";
import { Simulator } from "./simulator/server";
import { rejectionOf, startSimulator, type SimAndClient } from "./helpers";

let t: SimAndClient;
beforeEach(async () => {
  t = await startSimulator();
});
afterEach(async () => {
  await t.sim.stop();
});

describe("operations", () => {
  test("forkService answers 202 with the new fork, which inherits from its parent", async () => {
    const { projectId, serviceId } = t.ids;
    const fork = await t.client.forkService(projectId, serviceId, { fork_strategy: "NOW", name: "pr-42" });
    expect(fork.name).toBe("pr-42");
    expect(fork.forked_from).toEqual({ is_standby: false, project_id: projectId, service_id: serviceId });
    expect(fork.ha_replicas).toEqual({ replica_count: 0, sync_replica_count: 0 });
    expect(fork.service_type).toBe("TIMESCALEDB");
    expect(fork.initial_password).toMatch(/.{8,}/);
    const [request] = t.sim.requests("forkService");
    expect(request?.body).toEqual({ fork_strategy: "NOW", name: "pr-42" });
  });

  test("getService reads a service back", async () => {
    const s = await t.client.getService(t.ids.projectId, t.ids.serviceId);
    expect(s.service_id).toBe(t.ids.serviceId);
    expect(s.status).toBe("READY");
    expect(s.endpoint?.host).toContain(t.ids.serviceId);
  });

  test("setHA answers with the new counts", async () => {
    const s = await t.client.setHA(t.ids.projectId, t.ids.serviceId, { replica_count: 2, sync_replica_count: 1 });
    expect(s.ha_replicas).toEqual({ replica_count: 2, sync_replica_count: 1 });
  });

  test("stop moves a service to PAUSING/PAUSED; stopping it again is a 400", async () => {
    const s = await t.client.stop(t.ids.projectId, t.ids.serviceId);
    expect(["PAUSING", "PAUSED"]).toContain(s.status);
    expect(await rejectionOf(t.client.stop(t.ids.projectId, t.ids.serviceId))).toBeInstanceOf(BadRequestError);
  });

  test("getVpc and renameVpc, whether rename answers {message} or a Vpc", async () => {
    const { projectId, vpcId } = t.ids;
    expect(await t.client.getVpc(projectId, vpcId)).toMatchObject({ id: vpcId, name: "main-vpc", cidr: "10.0.0.0/16" });
    expect(await t.client.renameVpc(projectId, vpcId, "renamed")).toEqual({ message: "VPC renamed", vpc: undefined });
    t.sim.renameAnswersVpc = true;
    const answer = await t.client.renameVpc(projectId, vpcId, "again");
    expect(answer.vpc).toMatchObject({ id: vpcId, name: "again" });
    expect(t.sim.vpc(projectId, vpcId)?.name).toBe("again");
  });

  test("unknown fields and statuses added later do not break parsing", async () => {
    t.sim.outOfBand.setStatus(t.ids.projectId, t.ids.serviceId, "HIBERNATING" as never);
    const s = await t.client.getService(t.ids.projectId, t.ids.serviceId);
    expect(s.status).toBe("HIBERNATING");
  });
});

describe("requests", () => {
  test("path parameters are URL-encoded", async () => {
    expect(apiPath`/projects/${"a/b c"}/vpcs/${"1?x"}`).toBe("/projects/a%2Fb%20c/vpcs/1%3Fx");
    await rejectionOf(t.client.getVpc("../other", "1"));
    expect(t.sim.requests()[0]?.path).toBe("/projects/..%2Fother/vpcs/1");
  });

  test("headers: Bearer key, a User-Agent naming the package, Content-Type only with a body", async () => {
    const { projectId, serviceId } = t.ids;
    await t.client.setHA(projectId, serviceId, { replica_count: 1 });
    await t.client.stop(projectId, serviceId);
    await t.client.getService(projectId, serviceId);
    const [setHA, stop, get] = t.sim.requests();
    expect(setHA?.headers.authorization).toBe(`Bearer ${t.sim.apiKey}`);
    expect(setHA?.headers["user-agent"]).toMatch(/^pulumi-tigercloud\/\d+\.\d+\.\d+/);
    expect(setHA?.headers["content-type"]).toBe("application/json");
    expect(stop?.headers["content-type"]).toBeUndefined();
    expect(get?.headers["content-type"]).toBeUndefined();
  });

  test("a public/secret key pair goes as HTTP Basic", async () => {
    const sim = new Simulator({ keyPair: { publicKey: "pub-1", secretKey: "sec-1" } });
    const url = await sim.start();
    try {
      const client = createClient({ apiUrl: url, publicKey: "pub-1", secretKey: "sec-1" });
      await client.getVpc("proj-demo01", "1234567");
      expect(sim.requests()[0]?.headers.authorization).toBe(`Basic ${Buffer.from("pub-1:sec-1").toString("base64")}`);
    } finally {
      await sim.stop();
    }
  });
});

describe("settings", () => {
  const config = (values: Record<string, string>) => (key: string) => values[key];

  test("explicit settings win over stack config, which wins over the environment", () => {
    const env = { TIGER_API_KEY: "env-key", TIGER_API_URL: "http://env", TIGER_PROJECT_ID: "env-proj" };
    const fromEnv = resolveSettings({}, config({}), env);
    expect(fromEnv).toEqual({ apiUrl: "http://env", credentials: { kind: "bearer", apiKey: "env-key" }, projectId: "env-proj" });
    const fromConfig = resolveSettings({}, config({ "tigercloud:apiKey": "cfg-key", "tigercloud:projectId": "cfg-proj" }), env);
    expect(fromConfig.credentials).toEqual({ kind: "bearer", apiKey: "cfg-key" });
    expect(fromConfig.projectId).toBe("cfg-proj");
    const explicit = resolveSettings({ apiKey: "x-key", apiUrl: "http://x/" }, config({ "tigercloud:apiKey": "cfg-key" }), env);
    expect(explicit).toMatchObject({ apiUrl: "http://x", credentials: { apiKey: "x-key" } });
  });

  test("the default URL is the real API's", () => {
    expect(resolveSettings({ apiKey: "k" }, () => undefined, {}).apiUrl).toBe("https://console.cloud.tigerdata.com/public/api/v1");
  });

  test("no credential: a ConfigurationError naming the keys and variables, before any request", () => {
    let err: unknown;
    try {
      resolveSettings({ apiUrl: t.sim.url }, () => undefined, {});
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigurationError);
    const message = (err as Error).message;
    expect(message).toMatch(/tigercloud:apiKey/);
    expect(message).toMatch(/TIGER_API_KEY/);
    expect(message).toMatch(/TIGER_PUBLIC_KEY \+ TIGER_SECRET_KEY/);
    expect(t.sim.requests()).toHaveLength(0);
  });

  test("half a key pair is an error naming the missing half", () => {
    expect(() => resolveSettings({ publicKey: "p" }, () => undefined, {})).toThrow(/tigercloud:secretKey.*TIGER_SECRET_KEY/);
  });
});

describe("errors", () => {
  test.each([
    [400, BadRequestError],
    [401, AuthenticationError],
    [403, PermissionDeniedError],
    [404, NotFoundError],
    [409, ConflictError],
    [429, RateLimitError],
    [500, InternalServerError],
    [503, InternalServerError],
    [418, ApiError],
  ])("status %i is a %p carrying status, method and path", async (status, kind) => {
    t.sim.injectFault("getVpc", { kind: "status", status }, 10);
    const err = await rejectionOf(t.client.getVpc(t.ids.projectId, t.ids.vpcId));
    expect(err).toBeInstanceOf(kind);
    expect(err).toMatchObject({ status, method: "GET", path: `/projects/${t.ids.projectId}/vpcs/${t.ids.vpcId}` });
  });

  test("a {code, message} body is read into the error", async () => {
    const err = await rejectionOf(t.client.setHA(t.ids.projectId, t.ids.serviceId, { replica_count: 5 }));
    expect(err).toBeInstanceOf(BadRequestError);
    expect(err).toMatchObject({ code: "INVALID_HA", apiMessage: "replica_count: 0, 1 or 2" });
    expect(err.message).toBe(
      `Request failed with status code 400 INVALID_HA: POST /projects/${t.ids.projectId}/services/${t.ids.serviceId}/setHA: replica_count: 0, 1 or 2`,
    );
  });

  test("wrong credentials: 401 AuthenticationError", async () => {
    const client = createClient({ apiUrl: t.sim.url, apiKey: "wrong" });
    expect(await rejectionOf(client.getVpc(t.ids.projectId, t.ids.vpcId))).toBeInstanceOf(AuthenticationError);
  });

  test("unknown IDs: 404 NotFoundError", async () => {
    const err = await rejectionOf(t.client.getService(t.ids.projectId, "svc-nope"));
    expect(err).toBeInstanceOf(NotFoundError);
    expect(err).toMatchObject({ code: "NOT_FOUND" });
  });

  test("an HTML or empty 5xx body still gives a readable message", async () => {
    t.sim.injectFault("getVpc", { kind: "status", status: 502, body: "<html><body>Bad gateway</body></html>" }, 10);
    const html = await rejectionOf(t.client.getVpc(t.ids.projectId, t.ids.vpcId));
    expect(html.message).toMatch(/502.*HTTP 502, body "<html><body>Bad gateway<\/body><\/html>"/);
    t.sim.clearFaults();
    t.sim.injectFault("getVpc", { kind: "status", status: 504 }, 10);
    expect((await rejectionOf(t.client.getVpc(t.ids.projectId, t.ids.vpcId))).message).toMatch(/HTTP 504, empty body/);
  });

  test("malformed JSON in a 2xx: a SchemaValidationError saying what was expected and what came", async () => {
    t.sim.injectFault("getService", { kind: "malformed" });
    const err = await rejectionOf(t.client.getService(t.ids.projectId, t.ids.serviceId));
    expect(err).toBeInstanceOf(SchemaValidationError);
    expect(err.message).toMatch(/expected a Service; the body is not JSON; received "\{\\"service_id\\": \\"svc-"/);
  });

  test("a body of the wrong shape: SchemaValidationError naming the field", async () => {
    const sim = t.sim as unknown as { requireVpc: (p: string, v: string) => Record<string, unknown> };
    const vpc = sim.requireVpc(t.ids.projectId, t.ids.vpcId);
    vpc.cidr = 42;
    const err = await rejectionOf(t.client.getVpc(t.ids.projectId, t.ids.vpcId));
    expect(err).toBeInstanceOf(SchemaValidationError);
    expect(err.message).toMatch(/expected a Vpc; cidr: .*string/);
  });

  test("nothing listening: ConnectionError; no answer in time: TimeoutError", async () => {
    const { client } = t;
    t.sim.injectFault("getVpc", { kind: "hang" }, 10);
    const hung = createClient({ apiUrl: t.sim.url, apiKey: t.sim.apiKey }, () => undefined, { requestTimeoutMs: 100, maxAttempts: 1 });
    expect(await rejectionOf(hung.getVpc(t.ids.projectId, t.ids.vpcId))).toBeInstanceOf(TimeoutError);
    await t.sim.stop();
    const err = await rejectionOf(client.getVpc(t.ids.projectId, t.ids.vpcId));
    expect(err).toBeInstanceOf(ConnectionError);
    expect((err as ConnectionError).connectionRefused).toBe(true);
    t = await startSimulator();
  });
});

describe("retries", () => {
  test("setHA is retried after a 503 and succeeds", async () => {
    t.sim.injectFault("setHA", { kind: "status", status: 503 });
    const s = await t.client.setHA(t.ids.projectId, t.ids.serviceId, { replica_count: 2 });
    expect(s.ha_replicas?.replica_count).toBe(2);
    expect(t.sim.requests("setHA")).toHaveLength(2);
    expect(t.sleeps).toHaveLength(1);
  });

  test("a GET is retried after a 500; a POST is not", async () => {
    t.sim.injectFault("getService", { kind: "status", status: 500 });
    await t.client.getService(t.ids.projectId, t.ids.serviceId);
    expect(t.sim.requests("getService")).toHaveLength(2);
    t.sim.injectFault("setHA", { kind: "status", status: 500 });
    expect(await rejectionOf(t.client.setHA(t.ids.projectId, t.ids.serviceId, { replica_count: 1 }))).toBeInstanceOf(InternalServerError);
    expect(t.sim.requests("setHA")).toHaveLength(1);
  });

  test("dropped connections and timeouts are retried for stop and renameVpc", async () => {
    t.sim.injectFault("stop", { kind: "drop" });
    await t.client.stop(t.ids.projectId, t.ids.serviceId);
    expect(t.sim.requests("stop")).toHaveLength(2);
    t.sim.injectFault("renameVpc", { kind: "hang" });
    const fast = createClient({ apiUrl: t.sim.url, apiKey: t.sim.apiKey }, () => undefined, {
      requestTimeoutMs: 200,
      sleep: async () => {},
    });
    await fast.renameVpc(t.ids.projectId, t.ids.vpcId, "after-timeout");
    expect(t.sim.requests("renameVpc")).toHaveLength(2);
    expect(t.sim.vpc(t.ids.projectId, t.ids.vpcId)?.name).toBe("after-timeout");
  });

  test("attempts are capped: a service that keeps failing fails after maxAttempts", async () => {
    t.sim.injectFault("getVpc", { kind: "status", status: 503 }, 100);
    expect(await rejectionOf(t.client.getVpc(t.ids.projectId, t.ids.vpcId))).toBeInstanceOf(InternalServerError);
    expect(t.sim.requests("getVpc")).toHaveLength(CLIENT_DEFAULTS.maxAttempts);
    expect(t.sleeps).toHaveLength(CLIENT_DEFAULTS.maxAttempts - 1);
  });

  test("backoff grows exponentially with jitter within [d/2, d]", async () => {
    t.sim.injectFault("getVpc", { kind: "status", status: 503 }, 4);
    await t.client.getVpc(t.ids.projectId, t.ids.vpcId);
    const { baseDelayMs } = CLIENT_DEFAULTS;
    t.sleeps.forEach((ms, i) => {
      const d = baseDelayMs * 2 ** i;
      expect(ms).toBeGreaterThanOrEqual(d / 2);
      expect(ms).toBeLessThanOrEqual(d);
    });
  });

  test("Retry-After is honoured", async () => {
    t.sim.injectFault("getService", { kind: "status", status: 429, retryAfterSeconds: 3 });
    await t.client.getService(t.ids.projectId, t.ids.serviceId);
    expect(t.sleeps).toEqual([3000]);
    expect(parseRetryAfter(new Date(Date.now() + 60_000).toUTCString())).toBeGreaterThan(55_000);
  });

  test("a Retry-After beyond the total time budget is not waited for", async () => {
    t.sim.injectFault("getService", { kind: "status", status: 429, retryAfterSeconds: 3600 });
    expect(await rejectionOf(t.client.getService(t.ids.projectId, t.ids.serviceId))).toBeInstanceOf(RateLimitError);
    expect(t.sim.requests("getService")).toHaveLength(1);
    expect(t.sleeps).toEqual([]);
  });
});

describe("forkService is never retried when a fork may exist", () => {
  const fork = () => t.client.forkService(t.ids.projectId, t.ids.serviceId, { fork_strategy: "NOW", name: "pr-7" });

  test.each([
    ["a 500", { kind: "status", status: 500 } as const],
    ["a 503", { kind: "status", status: 503 } as const],
    ["a dropped connection", { kind: "drop" } as const],
    ["malformed JSON", { kind: "malformed" } as const],
  ])("after %s: exactly one request, and an error saying a fork may exist", async (_what, fault) => {
    t.sim.injectFault("forkService", fault, 5);
    const err = await rejectionOf(fork());
    expect(err).toBeInstanceOf(ForkOutcomeUnknownError);
    expect(err.message).toMatch(/a fork may have been created/);
    expect(err.message).toMatch(/named "pr-7"/);
    expect(err.message).toMatch(/forked_from\.service_id is svc-parent1/);
    expect(t.sim.requests("forkService")).toHaveLength(1);
  });

  test("after a timeout: exactly one request", async () => {
    t.sim.injectFault("forkService", { kind: "hang" }, 5);
    const client = createClient({ apiUrl: t.sim.url, apiKey: t.sim.apiKey }, () => undefined, {
      requestTimeoutMs: 150,
      sleep: async () => {},
    });
    const err = await rejectionOf(client.forkService(t.ids.projectId, t.ids.serviceId, { fork_strategy: "NOW" }));
    expect(err).toBeInstanceOf(ForkOutcomeUnknownError);
    expect((err as Error & { cause: unknown }).cause).toBeInstanceOf(TimeoutError);
    expect(t.sim.requests("forkService")).toHaveLength(1);
  });

  test("after a 429 (surely nothing created) it is retried and succeeds", async () => {
    t.sim.injectFault("forkService", { kind: "status", status: 429, retryAfterSeconds: 1 });
    const created = await fork();
    expect(created.name).toBe("pr-7");
    expect(t.sim.requests("forkService")).toHaveLength(2);
    expect(t.sim.services(t.ids.projectId).filter((s) => s.name === "pr-7")).toHaveLength(1);
  });

  test("a 4xx is the API's refusal, not an unknown outcome", async () => {
    const err = await rejectionOf(t.client.forkService(t.ids.projectId, t.ids.serviceId, { fork_strategy: "PITR" }));
    expect(err).toBeInstanceOf(BadRequestError);
    expect(err.message).toMatch(/target_time: required when fork_strategy is PITR/);
  });

  test("connection refused (nothing sent) is retried", async () => {
    await t.sim.stop();
    const retries: number[] = [];
    const client = createClient({ apiUrl: t.sim.url, apiKey: "k" }, () => undefined, {
      sleep: async () => {},
      onRetry: (e) => retries.push(e.attempt),
    });
    const err = await rejectionOf(client.forkService("p", "s", { fork_strategy: "NOW" }));
    expect(err).toBeInstanceOf(ConnectionError);
    expect(retries).toEqual([2, 3, 4, 5]);
    t = await startSimulator();
  });
});

describe("redaction: no credential in any error", () => {
  const KEY = "tc-live-SECRETKEY-8f3a9c1e77";
  const PUBLIC = "pub-RECOGNISABLE-41d2";
  const SECRET = "sec-RECOGNISABLE-99aa";
  let sim: Simulator;
  beforeEach(async () => {
    sim = new Simulator({ apiKey: KEY, keyPair: { publicKey: PUBLIC, secretKey: SECRET } });
    await sim.start();
  });
  afterEach(async () => {
    await sim.stop();
  });

  const everything = (err: unknown) => {
    const e = err as Error & { cause?: unknown };
    return [
      e.message,
      e.stack,
      JSON.stringify(e),
      inspect(e, { depth: 20, showHidden: true }),
      String(e.cause),
      inspect(e.cause, { depth: 20, showHidden: true }),
    ].join("\n");
  };
  const basic = Buffer.from(`${PUBLIC}:${SECRET}`).toString("base64");

  const echo = `<pre>Authorization: Bearer ${KEY}\nBasic ${basic}\n${PUBLIC}:${SECRET}</pre>`;
  test.each([
    ["401 (server rejects the key)", () => sim.injectFault("getVpc", { kind: "status", status: 401 }, 10), "getVpc"],
    [
      "5xx whose HTML echoes the Authorization header",
      () => sim.injectFault("getVpc", { kind: "status", status: 500, body: echo }, 10),
      "getVpc",
    ],
    ["dropped connection", () => sim.injectFault("getVpc", { kind: "drop" }, 10), "getVpc"],
    ["timeout", () => sim.injectFault("getVpc", { kind: "hang" }, 10), "getVpc"],
    ["malformed JSON", () => sim.injectFault("getVpc", { kind: "malformed" }, 10), "getVpc"],
    ["fork of unknown outcome", () => sim.injectFault("forkService", { kind: "status", status: 500, body: echo }, 10), "fork"],
    ["connection refused", () => sim.stop(), "getVpc"],
  ])("%s", async (_what, arrange, op) => {
    await Promise.resolve(arrange());
    // Each client can only know, and so must hide, its own credentials.
    const cases = [
      { auth: { apiKey: KEY }, secrets: [KEY] },
      { auth: { publicKey: PUBLIC, secretKey: SECRET }, secrets: [SECRET, basic] },
    ];
    for (const { auth, secrets } of cases) {
      const client = createClient({ apiUrl: sim.url, ...auth }, () => undefined, {
        requestTimeoutMs: 100,
        maxAttempts: 2,
        sleep: async () => {},
      });
      const err = await rejectionOf(
        op === "fork"
          ? client.forkService("proj-demo01", "svc-parent1", { fork_strategy: "NOW" })
          : client.getVpc("proj-demo01", "1234567"),
      );
      const text = everything(err);
      for (const secret of secrets) expect(text).not.toContain(secret);
      expect(inspect(client, { depth: 20, showHidden: true })).not.toContain(secrets[0]);
    }
  });
});
