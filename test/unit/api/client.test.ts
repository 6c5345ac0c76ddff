// The API client against the simulator over real HTTP: operations, headers, errors, retries,
// and that no credential ever leaks into an error.
import * as crypto from "crypto";
import * as http from "http";
import type { AddressInfo } from "net";
import { inspect } from "util";
import { CLIENT_DEFAULTS, apiPath, createClient, parseRetryAfter, type ClientOptions } from "../../../provider/api/client";
import {
  ApiError,
  AuthenticationError,
  BadRequestError,
  ConfigurationError,
  ConflictError,
  ConnectionError,
  ForkOutcomeUnknownError,
  InternalServerError,
  InvalidInputError,
  NotFoundError,
  PermissionDeniedError,
  RateLimitError,
  SchemaValidationError,
  TimeoutError,
} from "../../../provider/errors";
import { SETTING_SOURCES, resolveProjectId, resolveSettings } from "../../../provider/settings";
import { Simulator } from "../../../simulator";
import { errorTexts, eventually, expectNoSecretFragments, rejectionOf, startSimulator, type SimAndClient } from "../../support/helpers";

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
    // Its database's listener, on loopback (simulator/databases.ts).
    expect(s.endpoint).toEqual({ host: "127.0.0.1", port: expect.any(Number) });
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

  test("deleteService: DELETE with no body and no Content-Type, its 202 with no body read; a service already gone is a NotFoundError", async () => {
    const { projectId, serviceId } = t.ids;
    await expect(t.client.deleteService(projectId, serviceId)).resolves.toBeUndefined();
    const [sent] = t.sim.requests("deleteService");
    expect(sent).toMatchObject({ method: "DELETE", path: `/projects/${projectId}/services/${serviceId}`, status: 202 });
    expect(sent?.headers["content-type"]).toBeUndefined();
    expect(await rejectionOf(t.client.deleteService(projectId, serviceId))).toBeInstanceOf(NotFoundError);
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

  test("authInfo accepts each shape the vendor describes: an API key's (api_key, or the older apiKey) and an OAuth user's", async () => {
    const project = { id: "proj-1", name: "demo", plan_type: "FREE" };
    const key = { public_key: "pk-1", name: "ci", created: "2026-01-15T10:00:00Z", project, issuing_user: { id: "u-1" } };
    const shapes = [
      { type: "apiKey", api_key: key },
      { type: "apiKey", apiKey: key },
      { type: "oauth", oauth: { user: { id: "u-1", name: "Ada", email: "ada@example.com" } } },
      { type: "oauth" },
    ];
    for (const shape of shapes) {
      t.sim.injectFault("authInfo", { kind: "status", status: 200, body: JSON.stringify(shape), contentType: "application/json" });
      expect(await t.client.authInfo()).toMatchObject(shape);
    }
    t.sim.injectFault("authInfo", { kind: "status", status: 200, body: JSON.stringify({ oauth: {} }), contentType: "application/json" });
    const untyped = await rejectionOf(t.client.authInfo());
    expect(untyped).toBeInstanceOf(SchemaValidationError);
    expect(untyped.message).toContain("type: expected string, got nothing");
  });

  test("unknown fields and statuses added later do not break parsing", async () => {
    t.sim.outOfBand.setStatus(t.ids.projectId, t.ids.serviceId, "HIBERNATING" as never);
    const s = await t.client.getService(t.ids.projectId, t.ids.serviceId);
    expect(s.status).toBe("HIBERNATING");
  });
});

describe("requests", () => {
  test("path parameters are URL-encoded", async () => {
    expect(apiPath`/projects/${{ projectId: "a/b c" }}/vpcs/${{ vpcId: "1?x" }}`).toBe("/projects/a%2Fb%20c/vpcs/1%3Fx");
    await rejectionOf(t.client.getVpc("../other", "1"));
    expect(t.sim.requests()[0]?.path).toBe("/projects/..%2Fother/vpcs/1");
    // An encoded dot is only a name: %2E%2E is sent as it is, not as a dot segment.
    await rejectionOf(t.client.getService("p", "%2E%2E"));
    expect(t.sim.requests()[1]?.path).toBe("/projects/p/services/%252E%252E");
  });

  // Every endpoint, by the position of each ID it puts in the path.
  const endpoints: [string, string[], (c: SimAndClient["client"], ids: string[]) => Promise<unknown>][] = [
    ["forkService", ["projectId", "serviceId"], (c, [p, s]) => c.forkService(p!, s!, { fork_strategy: "NOW" })],
    ["setHA", ["projectId", "serviceId"], (c, [p, s]) => c.setHA(p!, s!, { replica_count: 1 })],
    ["stop", ["projectId", "serviceId"], (c, [p, s]) => c.stop(p!, s!)],
    ["start", ["projectId", "serviceId"], (c, [p, s]) => c.start(p!, s!)],
    ["deleteService", ["projectId", "serviceId"], (c, [p, s]) => c.deleteService(p!, s!)],
    ["renameService", ["projectId", "serviceId"], (c, [p, s]) => c.renameService(p!, s!, "n")],
    ["resize", ["projectId", "serviceId"], (c, [p, s]) => c.resize(p!, s!, { cpu_millis: "1000", memory_gbs: "4" })],
    ["setEnvironment", ["projectId", "serviceId"], (c, [p, s]) => c.setEnvironment(p!, s!, "DEV")],
    ["updatePassword", ["projectId", "serviceId"], (c, [p, s]) => c.updatePassword(p!, s!, "pw-123456")],
    ["getService", ["projectId", "serviceId"], (c, [p, s]) => c.getService(p!, s!)],
    ["listServices", ["projectId"], (c, [p]) => c.listServices(p!)],
    ["getVpc", ["projectId", "vpcId"], (c, [p, v]) => c.getVpc(p!, v!)],
    ["renameVpc", ["projectId", "vpcId"], (c, [p, v]) => c.renameVpc(p!, v!, "n")],
  ];
  const dotCases = endpoints.flatMap(([name, params, run]) =>
    params.flatMap((param, at) => [".", "..", ""].map((bad) => [name, param, JSON.stringify(bad), bad, at, params.length, run] as const)),
  );

  test.each(dotCases)("%s refuses %s %s before any request", async (_name, param, _shown, bad, at, count, run) => {
    const good = [t.ids.projectId, param === "vpcId" ? t.ids.vpcId : t.ids.serviceId];
    const args = good.slice(0, count).map((id, i) => (i === at ? bad : id));
    const err = await rejectionOf(run(t.client, args));
    expect(err).toBeInstanceOf(InvalidInputError);
    expect((err as InvalidInputError).failures.map((f) => f.property)).toEqual([param]);
    expect(err.message).toContain(`${param} must not be ${bad === "" ? "empty" : `"${bad}"`}`);
    expect(err.message).toContain("No request was made");
    expect(t.sim.requests()).toEqual([]);
  });

  test("an ID that is not a string (a JavaScript caller's undefined) is refused too, before any request", async () => {
    const err = await rejectionOf(t.client.getService(t.ids.projectId, undefined as unknown as string));
    expect(err).toBeInstanceOf(InvalidInputError);
    expect(err.message).toContain("serviceId must be a string (it is undefined)");
    expect(t.sim.requests()).toEqual([]);
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
    const env = { TIGER_API_KEY: "env-key", TIGER_API_URL: "https://env", TIGER_PROJECT_ID: "env-proj" };
    const fromEnv = resolveSettings({}, config({}), env);
    expect(fromEnv).toEqual({ apiUrl: "https://env", credentials: { kind: "bearer", apiKey: "env-key" } });
    expect(resolveProjectId(undefined, config({}), env)).toBe("env-proj");
    const fromConfig = resolveSettings({}, config({ "tigercloud:apiKey": "cfg-key", "tigercloud:projectId": "cfg-proj" }), env);
    expect(fromConfig.credentials).toEqual({ kind: "bearer", apiKey: "cfg-key" });
    expect(resolveProjectId(undefined, config({ "tigercloud:projectId": "cfg-proj" }), env)).toBe("cfg-proj");
    expect(resolveProjectId("x-proj", config({ "tigercloud:projectId": "cfg-proj" }), env)).toBe("x-proj");
    const explicit = resolveSettings({ apiKey: "x-key", apiUrl: "https://x/" }, config({ "tigercloud:apiKey": "cfg-key" }), env);
    expect(explicit).toMatchObject({ apiUrl: "https://x", credentials: { apiKey: "x-key" } });
  });

  test("the project ID has one road, resolveProjectId: neither the settings nor the client carry it", () => {
    const env = { TIGER_API_KEY: "k", TIGER_PROJECT_ID: "env-proj" };
    const settings = resolveSettings({}, config({ "tigercloud:projectId": "cfg-proj" }), env);
    expect(settings).not.toHaveProperty("projectId");
    const client = createClient({ apiUrl: t.sim.url, apiKey: "k" }, config({ "tigercloud:projectId": "cfg-proj" }));
    expect(client).not.toHaveProperty("projectId");
    expect(SETTING_SOURCES.projectId).toMatchObject({ config: "tigercloud:projectId", env: "TIGER_PROJECT_ID" });
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
    expect(html.message).toMatch(/502.*HTTP 502 with an HTML body "<html><body>Bad gateway<\/body><\/html>"$/);
    t.sim.clearFaults();
    t.sim.injectFault("getVpc", { kind: "status", status: 504 }, 10);
    expect((await rejectionOf(t.client.getVpc(t.ids.projectId, t.ids.vpcId))).message).toMatch(/HTTP 504 with an empty body$/);
  });

  test("malformed JSON in a 2xx: a SchemaValidationError saying what was expected and what came", async () => {
    t.sim.injectFault("getService", { kind: "malformed" });
    const err = await rejectionOf(t.client.getService(t.ids.projectId, t.ids.serviceId));
    expect(err).toBeInstanceOf(SchemaValidationError);
    expect(err.message).toMatch(
      /expected a Service; the body is not JSON, so not the API's answer: .*; received "\{\\"service_id\\": \\"svc-"/,
    );
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
      const reasons: string[] = [];
      const client = createClient({ apiUrl: sim.url, ...auth }, () => undefined, {
        requestTimeoutMs: 100,
        maxAttempts: 2,
        sleep: async () => {},
        onRetry: (e) => reasons.push(e.reason),
      });
      const err = await rejectionOf(
        op === "fork"
          ? client.forkService("proj-demo01", "svc-parent1", { fork_strategy: "NOW" })
          : client.getVpc("proj-demo01", "1234567"),
      );
      expectNoSecretFragments([...errorTexts(err), ...reasons, inspect(client, { depth: 20, showHidden: true })], secrets);
    }
  });
});

describe("listServices", () => {
  test("answers every service of the project, without passwords", async () => {
    const { projectId, serviceId } = t.ids;
    const fork = await t.client.forkService(projectId, serviceId, { fork_strategy: "NOW", name: "listed" });
    const services = await t.client.listServices(projectId);
    expect(services.map((s) => s.service_id).sort()).toEqual([serviceId, fork.service_id].sort());
    expect(services.find((s) => s.service_id === fork.service_id)).toMatchObject({
      name: "listed",
      forked_from: { service_id: serviceId },
    });
    expect(services.every((s) => s.initial_password === undefined)).toBe(true);
    expect(t.sim.requests("listServices")[0]).toMatchObject({ method: "GET", path: `/projects/${projectId}/services` });
  });

  test("an unknown project is the API's 404; faults can be injected and a 503 is retried", async () => {
    const err = await rejectionOf(t.client.listServices("proj-nope"));
    expect(err).toBeInstanceOf(NotFoundError);
    expect(err).toMatchObject({ code: "NOT_FOUND", apiAnswered: true });
    t.sim.injectFault("listServices", { kind: "status", status: 503 });
    expect(await t.client.listServices(t.ids.projectId)).toHaveLength(1);
    expect(t.sim.requests("listServices")).toHaveLength(3);
  });
});

describe("time limits", () => {
  const slowClient = (options: Partial<ClientOptions> = {}) =>
    createClient({ apiUrl: t.sim.url, apiKey: t.sim.apiKey }, () => undefined, { sleep: async () => {}, ...options });

  test("the request timeout covers the body: a body trickling one byte every 500 ms fails in time", async () => {
    t.sim.injectFault("getVpc", { kind: "trickle", intervalMs: 500 });
    const started = Date.now();
    const err = await rejectionOf(slowClient({ requestTimeoutMs: 1000, maxAttempts: 1 }).getVpc(t.ids.projectId, t.ids.vpcId));
    expect(err).toBeInstanceOf(TimeoutError);
    expect(err.message).toBe(`Request timed out after 1000 ms: GET /projects/${t.ids.projectId}/vpcs/${t.ids.vpcId}`);
    expect(Date.now() - started).toBeLessThan(2500);
  }, 10_000);

  test("no retry starts whose backoff would end after the deadline", async () => {
    t.sim.injectFault("getService", { kind: "status", status: 429, retryAfterSeconds: 2 }, 10);
    const client = slowClient();
    const err = await rejectionOf(client.getService(t.ids.projectId, t.ids.serviceId, { deadline: Date.now() + 1000 }));
    expect(err).toBeInstanceOf(RateLimitError);
    expect(t.sim.requests("getService")).toHaveLength(1);
    t.sim.clearFaults();
    t.sim.injectFault("getService", { kind: "status", status: 429, retryAfterSeconds: 2 });
    const retries: number[] = [];
    const patient = slowClient({ onRetry: (e) => retries.push(e.delayMs) });
    await patient.getService(t.ids.projectId, t.ids.serviceId, { deadline: Date.now() + 60_000 });
    expect(retries).toEqual([2000]);
  });

  test("each attempt's timeout is cut to the time left before the deadline, never below 1 s", async () => {
    t.sim.injectFault("getVpc", { kind: "hang" }, 10);
    const client = slowClient({ requestTimeoutMs: 30_000 });
    let started = Date.now();
    const err = await rejectionOf(client.getVpc(t.ids.projectId, t.ids.vpcId, { deadline: started + 1500 }));
    expect(err).toBeInstanceOf(TimeoutError);
    expect((err as TimeoutError).timeoutMs).toBeGreaterThanOrEqual(1400);
    expect((err as TimeoutError).timeoutMs).toBeLessThanOrEqual(1500);
    expect(Date.now() - started).toBeLessThan(2500);
    expect(t.sim.requests("getVpc")).toHaveLength(1);

    started = Date.now();
    const late = await rejectionOf(client.getVpc(t.ids.projectId, t.ids.vpcId, { deadline: started - 5000 }));
    expect(late).toMatchObject({ name: "TimeoutError", timeoutMs: 1000 });
    expect(Date.now() - started).toBeGreaterThanOrEqual(950);
    expect(t.sim.requests("getVpc")).toHaveLength(2);
  }, 15_000);

  test("a body over the cap is refused as it arrives, not buffered whole", async () => {
    t.sim.injectFault("getVpc", { kind: "huge", bytes: 200 * 1024 * 1024 });
    const started = Date.now();
    const err = await rejectionOf(slowClient({ maxAttempts: 1 }).getVpc(t.ids.projectId, t.ids.vpcId));
    expect(err).toBeInstanceOf(SchemaValidationError);
    expect(err.message).toBe(
      `Unexpected response to GET /projects/${t.ids.projectId}/vpcs/${t.ids.vpcId}: expected a Vpc; the body is larger than 10 MiB, the most this client reads`,
    );
    expect(Date.now() - started).toBeLessThan(5000);
    // What the server wrote before it saw the client close.
    await eventually("the simulator stops writing the huge body", () => !t.sim.hugeStreaming);
    expect(t.sim.hugeBytesWritten).toBeGreaterThan(CLIENT_DEFAULTS.maxResponseBytes);
    expect(t.sim.hugeBytesWritten).toBeLessThan(50 * 1024 * 1024);
  }, 20_000);
});

describe("CLIENT_DEFAULTS", () => {
  test("is frozen, its lists too; options are the way to change a client", () => {
    expect(Object.isFrozen(CLIENT_DEFAULTS)).toBe(true);
    expect(Object.isFrozen(CLIENT_DEFAULTS.retryStatuses)).toBe(true);
    expect(Object.isFrozen(CLIENT_DEFAULTS.retryStatusesForGet)).toBe(true);
    expect(() => {
      (CLIENT_DEFAULTS as { maxAttempts: number }).maxAttempts = 1;
    }).toThrow(TypeError);
    expect(() => (CLIENT_DEFAULTS.retryStatuses as number[]).push(500)).toThrow(TypeError);
    createClient({ apiUrl: t.sim.url, apiKey: "k" }, () => undefined, { maxAttempts: 1, retryStatuses: [] });
    expect(CLIENT_DEFAULTS.maxAttempts).toBe(5);
    expect(CLIENT_DEFAULTS.retryStatuses).toEqual([408, 429, 502, 503, 504]);
  });
});

describe("plain http only to loopback, unless opted in", () => {
  const settings = (apiUrl: string, config: Record<string, string> = {}, env: Record<string, string> = {}, allowInsecureHttp?: boolean) =>
    resolveSettings({ apiKey: "k", apiUrl, ...(allowInsecureHttp === undefined ? {} : { allowInsecureHttp }) }, (key) => config[key], env);

  test.each([
    "http://api.example.com/public/api/v1",
    "http://10.0.0.5:8080",
    "http://127.0.0.1.example.com",
    "http://localhost.example.com",
  ])("%s is refused, naming the opt-in and why", (url) => {
    const err = (() => {
      try {
        settings(url);
      } catch (e) {
        return e as Error;
      }
      throw new Error("accepted");
    })();
    expect(err).toBeInstanceOf(ConfigurationError);
    expect(err.message).toMatch(/tigercloud:allowInsecureHttp/);
    expect(err.message).toMatch(/TIGER_ALLOW_INSECURE_HTTP=true/);
    expect(err.message).toMatch(/the API key would travel in clear/);
  });

  test("the opt-in: stack config, environment or explicit setting", () => {
    const url = "http://api.example.com";
    expect(settings(url, { "tigercloud:allowInsecureHttp": "true" }).apiUrl).toBe(url);
    expect(settings(url, {}, { TIGER_ALLOW_INSECURE_HTTP: "true" }).apiUrl).toBe(url);
    expect(settings(url, {}, {}, true).apiUrl).toBe(url);
    expect(() => settings(url, { "tigercloud:allowInsecureHttp": "false" }, { TIGER_ALLOW_INSECURE_HTTP: "true" })).toThrow(
      ConfigurationError,
    );
    expect(() => settings(url, {}, { TIGER_ALLOW_INSECURE_HTTP: "yes" })).toThrow(/must be "true" or "false"/);
    expect(SETTING_SOURCES.allowInsecureHttp).toMatchObject({ config: "tigercloud:allowInsecureHttp", env: "TIGER_ALLOW_INSECURE_HTTP" });
  });

  test.each(["http://127.0.0.1:4000", "http://127.8.9.10", "http://localhost:3000/api", "http://[::1]:8080", "https://api.example.com"])(
    "%s is allowed without opting in",
    (url) => {
      expect(settings(url).apiUrl).toBe(url);
    },
  );
});

describe("a service answer with no service_id or no status is not a service", () => {
  const answer = (fields: Record<string, unknown>) => ({
    kind: "status" as const,
    status: 200,
    contentType: "application/json",
    body: JSON.stringify({ name: "x", created: "2026-01-01T00:00:00Z", ...fields }),
  });

  test.each([
    [{ status: "READY" }, "service_id: expected string, got nothing"],
    [{ service_id: "", status: "READY" }, "service_id: expected at least 1 characters, got 0"],
    [{ service_id: "svc-1" }, "status: expected string, got nothing"],
    [{ service_id: "svc-1", status: null }, "status: expected string, got null"],
  ])("getService answering %j: SchemaValidationError (%s)", async (fields, problem) => {
    t.sim.injectFault("getService", answer(fields));
    const err = await rejectionOf(t.client.getService(t.ids.projectId, t.ids.serviceId));
    expect(err).toBeInstanceOf(SchemaValidationError);
    expect(err.message).toContain(problem);
  });

  test.each([
    ["without service_id", { status: "QUEUED" }],
    ["without status", { service_id: "svc-new" }],
  ])("a fork answer %s is a ForkOutcomeUnknownError: the fork may exist", async (_what, fields) => {
    t.sim.injectFault("forkService", { ...answer(fields), status: 202 });
    const err = await rejectionOf(t.client.forkService(t.ids.projectId, t.ids.serviceId, { fork_strategy: "NOW", name: "pr-9" }));
    expect(err).toBeInstanceOf(ForkOutcomeUnknownError);
    expect(err.cause).toBeInstanceOf(SchemaValidationError);
    expect(err.message).toMatch(/a fork may have been created/);
    expect(t.sim.requests("forkService")).toHaveLength(1);
  });
});

describe("a 404 is the API's only when its own JSON says so", () => {
  test("a wrong base path meets the gateway's HTML 404: not the API's answer, and the message names the URL setting", async () => {
    const client = createClient({ apiUrl: `${t.sim.url}/wrong/base`, apiKey: t.sim.apiKey }, () => undefined, { sleep: async () => {} });
    const err = await rejectionOf(client.getService(t.ids.projectId, t.ids.serviceId));
    expect(err).toBeInstanceOf(NotFoundError);
    expect((err as NotFoundError).apiAnswered).toBe(false);
    expect(err.message).toMatch(/HTTP 404 with an HTML body "<html>.*": not the API's own answer/);
    expect(err.message).toMatch(/the API URL \(tigercloud:apiUrl \/ TIGER_API_URL\) may be wrong, or a proxy answered/);
    expect(t.sim.service(t.ids.projectId, t.ids.serviceId)?.status).toBe("READY");
  });

  test.each([
    ["an empty body", { kind: "status", status: 404 } as const, /HTTP 404 with an empty body: not the API's own answer/],
    [
      "JSON that is not the API's error object",
      { kind: "status", status: 404, body: '{"error":"no such thing"}', contentType: "application/json" } as const,
      /HTTP 404 with a JSON body "\{\\"error\\":\\"no such thing\\"\}": not the API's own answer/,
    ],
  ])("a 404 with %s is not the API's answer either", async (_what, fault, message) => {
    t.sim.injectFault("getVpc", fault);
    const err = await rejectionOf(t.client.getVpc(t.ids.projectId, t.ids.vpcId));
    expect(err).toMatchObject({ name: "NotFoundError", apiAnswered: false });
    expect(err.message).toMatch(message);
  });

  test("a service that does not exist: the API's own 404, apiAnswered true", async () => {
    const err = await rejectionOf(t.client.getService(t.ids.projectId, "svc-nope"));
    expect(err).toBeInstanceOf(NotFoundError);
    expect(err).toMatchObject({ apiAnswered: true, code: "NOT_FOUND", apiMessage: "service svc-nope not found" });
    expect(err.message).not.toMatch(/proxy/);
    expect(JSON.parse(JSON.stringify(err))).toMatchObject({ apiAnswered: true });
  });
});

describe("a success is the API's only when its body is JSON, or empty where nothing is promised", () => {
  /** A stand-in for the API (a proxy, a captive portal): every request gets this status and body. */
  async function standIn(status: number, body: string, contentType?: string): Promise<{ url: string; close: () => Promise<void> }> {
    const server = http.createServer((req, res) => {
      req.resume();
      req.on("end", () => {
        res.writeHead(status, contentType === undefined ? {} : { "Content-Type": contentType });
        res.end(body);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
    return { url: `http://127.0.0.1:${port}`, close: () => new Promise((resolve) => server.close(() => resolve())) };
  }
  const PORTAL = "<html><head><title>Sign in to the hotel Wi-Fi</title></head><body><form>…</form></body></html>";

  test.each([
    ["deleteService", (c: SimAndClient["client"]) => c.deleteService("proj-1", "svc-1")],
    ["updatePassword", (c: SimAndClient["client"]) => c.updatePassword("proj-1", "svc-1", "pw-Zq8!long-enough")],
    ["stop", (c: SimAndClient["client"]) => c.stop("proj-1", "svc-1")],
  ])("%s answered 200 with an HTML page: a SchemaValidationError naming the URL setting, quoting the page", async (_op, call) => {
    const server = await standIn(200, PORTAL, "text/html");
    try {
      const client = createClient({ apiUrl: server.url, apiKey: "k-standin" }, () => undefined, { sleep: async () => {} });
      const err = await rejectionOf(call(client));
      expect(err).toBeInstanceOf(SchemaValidationError);
      expect(err.message).toContain("the body is not JSON, so not the API's answer");
      expect(err.message).toContain("the API URL (tigercloud:apiUrl / TIGER_API_URL) may be wrong, or a proxy answered");
      expect(err.message).toContain('received "<html><head><title>Sign in to the hotel Wi-Fi');
    } finally {
      await server.close();
    }
  });

  test("plain text under a 202 is not the API's answer either", async () => {
    const server = await standIn(202, "Accepted by the gateway", "text/plain");
    try {
      const client = createClient({ apiUrl: server.url, apiKey: "k-standin" }, () => undefined, { sleep: async () => {} });
      const err = await rejectionOf(client.deleteService("proj-1", "svc-1"));
      expect(err).toBeInstanceOf(SchemaValidationError);
      expect(err.message).toMatch(/not the API's answer.*received "Accepted by the gateway"/);
    } finally {
      await server.close();
    }
  });

  test.each([
    ["an empty body", "", undefined],
    ["whitespace", " \r\n", "text/plain"],
    ["{}", "{}", "application/json"],
    ["a JSON message", '{"message":"Service deletion started"}', "application/json"],
  ])("deleteService answered 202 with %s resolves", async (_what, body, contentType) => {
    const server = await standIn(202, body, contentType);
    try {
      const client = createClient({ apiUrl: server.url, apiKey: "k-standin" }, () => undefined, { sleep: async () => {} });
      await expect(client.deleteService("proj-1", "svc-1")).resolves.toBeUndefined();
    } finally {
      await server.close();
    }
  });
});

describe("no fragment of a secret in any error or retry line", () => {
  const KEY = "tc-live-Kq7ZpX2mWv9RtLb4Nc";
  const PUBLIC = "pub-Hy3JwQ8sDf5Ge";
  const SECRET = "sec-Vb6TnM1zXc4Lk9Pq";
  const BASIC = Buffer.from(`${PUBLIC}:${SECRET}`).toString("base64");
  let sim: Simulator;
  beforeEach(async () => {
    sim = new Simulator({ apiKey: KEY, keyPair: { publicKey: PUBLIC, secretKey: SECRET } });
    await sim.start();
  });
  afterEach(async () => {
    await sim.stop();
  });

  /** An HTML page echoing `line`, placed so that `secret` starts 10 characters before the 200th. */
  const straddling = (line: string, secret: string) => {
    const head = "<html><body><pre>";
    const padding = "x".repeat(190 - head.length - line.indexOf(secret));
    return `${head}${padding}${line}</pre><p>request logged</p></body></html>`;
  };

  test.each([
    ["the API key", { apiKey: KEY }, `Authorization: Bearer ${KEY}`, KEY, [KEY]],
    ["the secret key of a pair", { publicKey: PUBLIC, secretKey: SECRET }, `secret=${SECRET}`, SECRET, [SECRET, BASIC]],
    ["the Basic credential", { publicKey: PUBLIC, secretKey: SECRET }, `Authorization: Basic ${BASIC}`, BASIC, [SECRET, BASIC]],
  ])("an error body echoing %s across the 200-character cut", async (_what, auth, line, secret, secrets) => {
    const body = straddling(line, secret);
    expect(body.indexOf(secret)).toBe(190);
    sim.injectFault("getVpc", { kind: "status", status: 500, body }, 10);
    const reasons: string[] = [];
    const client = createClient({ apiUrl: sim.url, ...auth }, () => undefined, {
      maxAttempts: 3,
      sleep: async () => {},
      onRetry: (e) => reasons.push(e.reason),
    });
    const err = await rejectionOf(client.getVpc("proj-demo01", "1234567"));
    expect(err).toBeInstanceOf(InternalServerError);
    expect(err.message).toContain("[REDACTED]");
    expect(reasons).toHaveLength(2);
    expectNoSecretFragments([...errorTexts(err), ...reasons], secrets);
  });

  test("a secret the echoing server itself cut short is still removed", async () => {
    sim.injectFault("getVpc", { kind: "status", status: 502, body: `<pre>Authorization: Bearer ${KEY.slice(0, 15)}…</pre>` });
    const client = createClient({ apiUrl: sim.url, apiKey: KEY }, () => undefined, { maxAttempts: 1 });
    const err = await rejectionOf(client.getVpc("proj-demo01", "1234567"));
    expect(err.message).toContain("Bearer [REDACTED]");
    expectNoSecretFragments(errorTexts(err), [KEY]);
  });

  test("a fork answer with the password and one field of the wrong type: the error names the field, never a value", async () => {
    const password = crypto.randomBytes(20).toString("base64url");
    const body = JSON.stringify({ service_id: "svc-new1", status: "QUEUED", name: "pr-5", created: 5, initial_password: password });
    sim.injectFault("forkService", { kind: "status", status: 202, contentType: "application/json", body });
    const client = createClient({ apiUrl: sim.url, apiKey: KEY }, () => undefined, { sleep: async () => {} });
    const err = await rejectionOf(client.forkService("proj-demo01", "svc-parent1", { fork_strategy: "NOW", name: "pr-5" }));
    expect(err).toBeInstanceOf(ForkOutcomeUnknownError);
    expect(err.message).toContain("created: expected string, got number");
    expect(err.message).toContain("not quoted");
    expectNoSecretFragments(errorTexts(err), [password, KEY]);
  });
});
