// projectId from the key: with no projectId on the resource, in stack config or the environment,
// the provider asks GET /auth/info which project the key belongs to, once per provider process;
// a preview with verifyReferences off asks nothing, and `up` learns it.
import { providers } from "../../../provider/hosts/dynamic/runtime";
import { startRun } from "../../../provider/hosts/dynamic/provider";
import { Simulator } from "../../../simulator";
import { captureStderr, configureProviders, startProviderSim, stopProviderSim, P } from "../../support/helpers";

const ha = providers.ServiceHA;
const vpc = providers.VpcName;

const keyPair = { publicKey: "pk-project-1", secretKey: "sk-project-1" };
let sim: Simulator;
let ids: ReturnType<Simulator["defaults"]>;
const savedProject = process.env.TIGER_PROJECT_ID;

beforeEach(async () => {
  delete process.env.TIGER_PROJECT_ID;
  ({ sim, ids } = await startProviderSim({ keyPair }));
});
afterEach(async () => {
  if (savedProject !== undefined) process.env.TIGER_PROJECT_ID = savedProject;
  await stopProviderSim(sim);
});

const credentials = {
  "a bearer key": () => ({ "tigercloud:apiKey": sim.apiKey }),
  "a key pair": () => ({ "tigercloud:publicKey": keyPair.publicKey, "tigercloud:secretKey": keyPair.secretKey }),
};

describe.each(Object.keys(credentials) as (keyof typeof credentials)[])("with %s and no projectId anywhere", (credential) => {
  const configure = (extra: Record<string, string> = {}) =>
    configureProviders({ "tigercloud:apiUrl": sim.url, ...credentials[credential](), ...extra });

  test("check takes the key's project from GET /auth/info, asked once for every resource of the process", async () => {
    await configure();
    const lines = captureStderr();
    const checked = await Promise.all([
      vpc.check({}, { __provider: P, vpcId: ids.vpcId, name: "named" }),
      ha.check({}, { __provider: P, serviceId: ids.serviceId, replicaCount: 1 }),
      vpc.check({}, { __provider: P, vpcId: ids.vpcId, name: "again" }),
    ]);
    for (const { inputs, failures } of checked) {
      expect(failures).toEqual([]);
      expect(inputs.projectId).toBe(ids.projectId);
    }
    expect(sim.requests("authInfo")).toHaveLength(1);
    // The credentials named as they are: a bearer key or a key pair, never "the API key" for both.
    const from =
      credential === "a key pair"
        ? "stack config tigercloud:publicKey with stack config tigercloud:secretKey"
        : "stack config tigercloud:apiKey";
    expect(lines.join("")).toContain(`projectId: ${ids.projectId}, the project the credentials from ${from} belong to (GET /auth/info)`);
    // The same process's create uses what check learnt: no second request.
    const { outs } = await vpc.create((checked[0] as { inputs: Record<string, unknown> }).inputs);
    expect(outs).toMatchObject({ projectId: ids.projectId, name: "named" });
    expect(sim.requests("authInfo")).toHaveLength(1);
  });

  test("with verifyReferences off, check makes no request and leaves projectId to up; create asks the key and records it", async () => {
    await configure({ "tigercloud:verifyReferences": "false" });
    sim.clearLog();
    const { inputs, failures } = await vpc.check({}, { __provider: P, vpcId: ids.vpcId, name: "later" });
    expect(failures).toEqual([]);
    expect(inputs.projectId).toBeUndefined();
    expect(sim.requests()).toEqual([]);
    const { outs } = await vpc.create(inputs);
    expect(outs).toMatchObject({ projectId: ids.projectId, name: "later" });
    expect(sim.requests().map((r) => r.operation)).toEqual(["authInfo", "renameVpc", "getVpc"]);
    // The next runs, as the engine calls them: check gets the inputs it recorded (no project), diff
    // and update the outputs (the project). Nothing is asked, nothing is replaced, verification on or off.
    for (const verify of ["false", "true"]) {
      await configure({ "tigercloud:verifyReferences": verify });
      sim.clearLog();
      const next = await vpc.check(inputs, { __provider: P, vpcId: ids.vpcId, name: "later" });
      expect(next.failures).toEqual([]);
      const olds = { ...outs, __provider: P };
      expect(await vpc.diff(ids.vpcId, olds, next.inputs)).toMatchObject({ changes: false, replaces: [] });
      const renamed = await vpc.check(inputs, { __provider: P, vpcId: ids.vpcId, name: `renamed-${verify}` });
      expect(await vpc.diff(ids.vpcId, olds, renamed.inputs)).toMatchObject({ changes: true, replaces: [] });
      const { outs: updated } = await vpc.update(ids.vpcId, olds, renamed.inputs);
      expect(updated).toMatchObject({ projectId: ids.projectId, name: `renamed-${verify}` });
      expect(sim.requests().map((r) => r.operation)).toEqual(["renameVpc", "getVpc"]);
    }
  });
});

test("a failed GET /auth/info is not kept: the next resource of the process asks again", async () => {
  await configureProviders({ "tigercloud:apiUrl": sim.url, "tigercloud:apiKey": sim.apiKey });
  sim.injectFault("authInfo", { kind: "status", status: 401 }, 1);
  expect((await vpc.check({}, { __provider: P, vpcId: ids.vpcId, name: "n" })).failures).toHaveLength(1);
  const { inputs, failures } = await vpc.check({}, { __provider: P, vpcId: ids.vpcId, name: "n" });
  expect(failures).toEqual([]);
  expect(inputs.projectId).toBe(ids.projectId);
  expect(sim.requests("authInfo").map((r) => r.status)).toEqual([401, 200]);
});

test("a failure before any request (no credential yet) is not kept either: set in the environment, the next resource asks and learns", async () => {
  const savedKey = process.env.TIGER_API_KEY;
  delete process.env.TIGER_API_KEY;
  try {
    await configureProviders({ "tigercloud:apiUrl": sim.url });
    sim.clearLog();
    await expect(vpc.create({ __provider: P, vpcId: ids.vpcId, name: "n" })).rejects.toThrow(/projectId is required/);
    expect(sim.requests("authInfo")).toEqual([]);
    process.env.TIGER_API_KEY = sim.apiKey;
    const { outs } = await vpc.create({ __provider: P, vpcId: ids.vpcId, name: "n" });
    expect(outs).toMatchObject({ projectId: ids.projectId });
    expect(sim.requests("authInfo")).toHaveLength(1);
  } finally {
    if (savedKey === undefined) delete process.env.TIGER_API_KEY;
    else process.env.TIGER_API_KEY = savedKey;
  }
});

test("a key the API refuses, with no projectId: check fails on projectId telling to fix the key, not to set projectId", async () => {
  await configureProviders({ "tigercloud:apiUrl": sim.url, "tigercloud:apiKey": sim.apiKey });
  sim.injectFault(
    "authInfo",
    { kind: "status", status: 401, body: JSON.stringify({ code: "UNAUTHORIZED", message: "bad key" }), contentType: "application/json" },
    10,
  );
  const failures = (await vpc.check({}, { __provider: P, vpcId: ids.vpcId, name: "n" })).failures ?? [];
  expect(failures).toHaveLength(1);
  expect(failures[0]?.property).toBe("projectId");
  expect(failures[0]?.reason).toBe(
    "The API refused the credentials from stack config tigercloud:apiKey (401: bad key) when asking the API which project the credentials " +
      "from stack config tigercloud:apiKey belong to (GET /auth/info). Set a valid key there (`pulumi config set --secret tigercloud:apiKey …`, " +
      "or TIGER_API_KEY, or a key pair).",
  );
  expect(failures[0]?.reason).not.toContain(sim.apiKey);
});

test("an API URL that answers an HTML page with 200: check fails on projectId naming the URL", async () => {
  await configureProviders({ "tigercloud:apiUrl": sim.url, "tigercloud:apiKey": sim.apiKey });
  sim.injectFault("authInfo", { kind: "status", status: 200, body: "<html><body>Sign in to continue</body></html>" }, 10);
  const failures = (await vpc.check({}, { __provider: P, vpcId: ids.vpcId, name: "n" })).failures ?? [];
  expect(failures.map((f) => f.property)).toEqual(["projectId"]);
  expect(failures[0]?.reason).toMatch(
    /did not reach Tiger Cloud's API: .*not JSON.*Check the API URL \(tigercloud:apiUrl \/ TIGER_API_URL\)\.$/,
  );
});

test("GET /auth/info that cannot answer now (503): preview passes, warned once, and up asks again", async () => {
  await configureProviders({ "tigercloud:apiUrl": sim.url, "tigercloud:apiKey": sim.apiKey });
  sim.injectFault("authInfo", { kind: "status", status: 503 }, 4);
  const lines = captureStderr();
  const checked = await vpc.check({}, { __provider: P, vpcId: ids.vpcId, name: "n" });
  expect(checked.failures ?? []).toEqual([]);
  expect(checked.inputs.projectId).toBeUndefined();
  await vpc.check({}, { __provider: P, vpcId: ids.vpcId, name: "m" });
  const warned = lines.filter((l) => l.startsWith("warning: [tigercloud] projectId was not verified"));
  expect(warned).toHaveLength(1);
  expect(warned[0]).toMatch(/503.*`up` will ask again\./);
  // up: the key answers now, and its project is used.
  sim.clearFaults();
  const { outs } = await vpc.create(checked.inputs);
  expect(outs).toMatchObject({ projectId: ids.projectId });
});

describe("GET /auth/info in each shape the vendor describes", () => {
  /** The next GET /auth/info answers this, as the API's 200. */
  const answers = (info: unknown) =>
    sim.injectFault("authInfo", { kind: "status", status: 200, body: JSON.stringify(info), contentType: "application/json" });
  const key = () => ({
    public_key: keyPair.publicKey,
    name: "ci",
    created: "2026-01-15T10:00:00Z",
    project: { id: ids.projectId, name: "demo", plan_type: "FREE" },
    issuing_user: { id: "u-1", name: "Ada", email: "ada@example.com" },
  });

  test.each([
    ["api_key alone", () => ({ type: "apiKey", api_key: key() })],
    ["the deprecated apiKey alone", () => ({ type: "apiKey", apiKey: key() })],
  ])("%s gives the key's project", async (_shape, info) => {
    await configureProviders({ "tigercloud:apiUrl": sim.url, "tigercloud:apiKey": sim.apiKey });
    answers(info());
    const { inputs, failures } = await vpc.check({}, { __provider: P, vpcId: ids.vpcId, name: "n" });
    expect(failures).toEqual([]);
    expect(inputs.projectId).toBe(ids.projectId);
    expect(sim.requests("authInfo")).toHaveLength(1);
  });

  test("a user's OAuth token names no project: check fails saying so, and what to set", async () => {
    await configureProviders({ "tigercloud:apiUrl": sim.url, "tigercloud:apiKey": sim.apiKey });
    answers({ type: "oauth", oauth: { user: { id: "u-1", name: "Ada", email: "ada@example.com" } } });
    const failures = (await vpc.check({}, { __provider: P, vpcId: ids.vpcId, name: "n" })).failures ?? [];
    expect(failures).toHaveLength(1);
    expect(failures[0]?.property).toBe("projectId");
    expect(failures[0]?.reason).toBe(
      "projectId is required: it is not set on the resource, nor in tigercloud:projectId (stack config) or TIGER_PROJECT_ID, " +
        'and the credentials from stack config tigercloud:apiKey name no project: GET /auth/info answers type "oauth" with no ' +
        "API key's project (a user's login token, which belongs to no one project). " +
        "Set projectId on the resource, or tigercloud:projectId / TIGER_PROJECT_ID.",
    );
    expect(failures[0]?.reason).not.toMatch(/schema|validation/i);
  });

  test("an answer with a type and no key at all: the same failure, its type escaped", async () => {
    await configureProviders({ "tigercloud:apiUrl": sim.url, "tigercloud:apiKey": sim.apiKey });
    answers({ type: "service\u001b[2J\u202eaccount" });
    const failures = (await vpc.check({}, { __provider: P, vpcId: ids.vpcId, name: "n" })).failures ?? [];
    expect(failures[0]?.reason).toContain(
      'name no project: GET /auth/info answers type "service\\x1b[2J\\u202eaccount" with no API key\'s project. Set projectId',
    );
    expect(failures[0]?.reason).not.toMatch(/schema|validation/i);
  });
});

test("a projectId in stack config or on the resource is used as it is: no request", async () => {
  await configureProviders({ "tigercloud:apiUrl": sim.url, "tigercloud:apiKey": sim.apiKey, "tigercloud:projectId": ids.projectId });
  sim.clearLog();
  await vpc.check({}, { __provider: P, vpcId: ids.vpcId, name: "n" });
  await configureProviders({ "tigercloud:apiUrl": sim.url, "tigercloud:apiKey": sim.apiKey });
  await vpc.check({}, { __provider: P, projectId: ids.projectId, vpcId: ids.vpcId, name: "n" });
  expect(sim.requests("authInfo")).toEqual([]);
});

test("a ServiceHA renamed without an alias, its project learnt only at up (verifyReferences off): the old one's delete leaves the HA the new one declares", async () => {
  await configureProviders({ "tigercloud:apiUrl": sim.url, "tigercloud:apiKey": sim.apiKey, "tigercloud:verifyReferences": "false" });
  const urn = (name: string) => `urn:pulumi:dev::app::pulumi-nodejs:dynamic:Resource::${name}`;
  const declared = (name: string) => ({
    __provider: P,
    __resourceName: name,
    __resourceUrn: urn(name),
    serviceId: ids.serviceId,
    replicaCount: 1,
  });
  // The run before: "db-ha" made, its project recorded in state.
  const before = await ha.check({}, declared("db-ha"));
  const made = await ha.create(before.inputs);
  expect(made.outs).toMatchObject({ projectId: ids.projectId, replicaCount: 1 });
  // This run: renamed to "primary-ha" (a new URN), checked with no request, then created, then
  // the old one deleted, as the engine orders them.
  startRun();
  await configureProviders({ "tigercloud:apiUrl": sim.url, "tigercloud:apiKey": sim.apiKey, "tigercloud:verifyReferences": "false" });
  const renamed = await ha.check({}, declared("primary-ha"));
  expect(renamed.inputs.projectId).toBeUndefined();
  await ha.create(renamed.inputs);
  sim.clearLog();
  await ha.delete(ids.serviceId, { ...made.outs, __provider: P });
  expect(sim.requests("setHA")).toEqual([]);
  expect(sim.service(ids.projectId, ids.serviceId)?.ha_replicas).toEqual({ replica_count: 1, sync_replica_count: 0 });
});

test("a resource in state keeps its recorded project: an unchanged check asks nothing, whatever the key's project", async () => {
  await configureProviders({ "tigercloud:apiUrl": sim.url, "tigercloud:apiKey": sim.apiKey });
  const olds = { __provider: P, projectId: "proj-recorded", vpcId: ids.vpcId, name: "n" };
  sim.clearLog();
  const { inputs, failures } = await vpc.check(olds, { __provider: P, vpcId: ids.vpcId, name: "n" });
  expect(failures).toEqual([]);
  expect(inputs.projectId).toBe("proj-recorded");
  expect(sim.requests()).toEqual([]);
});
