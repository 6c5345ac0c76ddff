// What check verifies before a resource is created or replaced (provider/policies/verify.ts), called
// as the engine calls it, against the simulator: each outcome, the cache, the settings.
import { providers } from "../../../provider/hosts/dynamic/runtime";
import { UNKNOWN } from "../../../provider/rules/inputs";
import { credentialSource } from "../../../provider/settings";
import { configureProviders, providerSimForEachTest, P, type Ids } from "../../support/helpers";
import type { Simulator } from "../../../simulator";

const fork = providers.ServiceFork;
const ha = providers.ServiceHA;
const vpc = providers.VpcName;

let sim: Simulator;
let ids: Ids;
let stderr: string[];
providerSimForEachTest((current) => ({ sim, ids, stderr } = current));

const forkNews = (extra: Record<string, unknown> = {}) => ({
  __provider: P,
  sourceServiceId: ids.serviceId,
  forkStrategy: "NOW",
  ...extra,
});
const failuresOf = async (result: Promise<{ failures?: { property?: string; reason: string }[] }>) =>
  ((await result).failures ?? []).map((f) => `${f.property}: ${f.reason}`);
const warnings = () => stderr.filter((line) => line.startsWith("warning: [tigercloud]"));
const writes = () => sim.requests().filter((r) => r.method !== "GET");

test("a source that exists and is READY passes, with one read and no write", async () => {
  expect(await failuresOf(fork.check({}, forkNews()))).toEqual([]);
  expect(sim.requests().map((r) => r.operation)).toEqual(["getService"]);
  expect(warnings()).toEqual([]);
});

test("missing objects fail naming the property and the ID, by the gone rule (a 404 confirmed by the list)", async () => {
  expect(await failuresOf(fork.check({}, forkNews({ sourceServiceId: "svc-typo" })))).toEqual([
    `sourceServiceId: sourceServiceId names service svc-typo, which does not exist in project ${ids.projectId} (the API answered 404, and the project's service list does not hold it)`,
  ]);
  expect(await failuresOf(ha.check({}, { __provider: P, serviceId: "svc-gone", replicaCount: 1 }))).toEqual([
    `serviceId: serviceId names service svc-gone, which does not exist in project ${ids.projectId} (the API answered 404, and the project's service list does not hold it)`,
  ]);
  expect(await failuresOf(vpc.check({}, { __provider: P, vpcId: "999", name: "x" }))).toEqual([
    `vpcId: vpcId names VPC 999, which does not exist in project ${ids.projectId} (the API answered 404 twice)`,
  ]);
  expect(sim.requests().map((r) => r.operation)).toEqual([
    "getService",
    "listServices",
    "getService",
    "listServices",
    "getVpc",
    "listServices",
    "getVpc",
  ]);
  expect(writes()).toEqual([]);
});

test("an HTML 404 is not 'missing': it fails saying the URL or a proxy may be wrong", async () => {
  sim.injectFault("getService", { kind: "status", status: 404, body: "<html>Not Found</html>" });
  const [failure] = await failuresOf(fork.check({}, forkNews()));
  expect(failure).toMatch(
    /^sourceServiceId: sourceServiceId could not be verified: .*404.*the API URL \(tigercloud:apiUrl \/ TIGER_API_URL\) may be wrong, or a proxy answered/,
  );
});

test.each([
  [401, /refused the credentials from stack config tigercloud:apiKey \(401: .*\)\. Set a valid key there/],
  [403, /the credentials from stack config tigercloud:apiKey may not read service svc-parent1 in project proj-demo01 \(403: /],
])("a %i fails naming the credential source, never the key", async (status, reason) => {
  sim.injectFault(
    "getService",
    { kind: "status", status, body: JSON.stringify({ code: "NO", message: "no" }), contentType: "application/json" },
    5,
  );
  const failures = await failuresOf(fork.check({}, forkNews()));
  expect(failures).toHaveLength(1);
  expect(failures[0]).toMatch(reason);
  expect(failures.join()).not.toContain(sim.apiKey);
});

test("the credential source follows the settings' order: stack config, then the environment; a pair names both", () => {
  const config = (values: Record<string, string>) => (k: string) => values[k];
  expect(credentialSource(config({ "tigercloud:apiKey": "k" }), { TIGER_API_KEY: "e" })).toBe("stack config tigercloud:apiKey");
  expect(credentialSource(config({}), { TIGER_API_KEY: "e" })).toBe("environment variable TIGER_API_KEY");
  expect(credentialSource(config({ "tigercloud:publicKey": "p" }), { TIGER_SECRET_KEY: "s" })).toBe(
    "stack config tigercloud:publicKey with environment variable TIGER_SECRET_KEY",
  );
  expect(credentialSource(config({}), {})).toBeUndefined();
});

test.each([
  ["a 503", () => sim.injectFault("getService", { kind: "status", status: 503 }, 10), /Request failed with status code 503/],
  [
    "a refused connection",
    () =>
      configureProviders({
        "tigercloud:apiUrl": "http://127.0.0.1:1",
        "tigercloud:apiKey": sim.apiKey,
        "tigercloud:projectId": ids.projectId,
      }),
    /Connection failed/,
  ],
])("%s only warns, once, that up will try", async (_what, arrange, cause) => {
  await Promise.resolve(arrange());
  expect(await failuresOf(fork.check({}, forkNews({ name: "a" })))).toEqual([]);
  expect(await failuresOf(fork.check({}, forkNews({ name: "b" })))).toEqual([]);
  expect(warnings()).toHaveLength(1);
  expect(warnings()[0]).toMatch(/ServiceFork: could not verify sourceServiceId \(service svc-parent1\): /);
  expect(warnings()[0]).toMatch(cause);
  expect(warnings()[0]).toMatch(/`up` will try\.\n$/);
});

test("a source in transition warns that up will wait; HA asks only that the service exists", async () => {
  sim.outOfBand.setStatus(ids.projectId, ids.serviceId, "UPGRADING");
  expect(await failuresOf(fork.check({}, forkNews()))).toEqual([]);
  expect(warnings()).toEqual([
    "warning: [tigercloud] ServiceFork: source service svc-parent1 is UPGRADING; it can be forked when READY or PAUSED, so `up` will wait for it (within createTimeout) before forking.\n",
  ]);
  // ServiceHA asks only that the service exists.
  expect(await failuresOf(ha.check({}, { __provider: P, serviceId: ids.serviceId, replicaCount: 1 }))).toEqual([]);
});

test("create of a fork whose source check saw busy: the API's 409 is waited through (the busy rule), then it forks", async () => {
  sim.outOfBand.holdBusy(ids.projectId, ids.serviceId, "CONFIGURING");
  const { inputs } = await fork.check({}, forkNews({ name: "after-busy" }));
  // READY once the create's fork has met it busy, however long the check took (a busy machine).
  const released = sim.releaseBusyOnceRefused(ids.projectId, ids.serviceId, "forkService");
  await fork.create(inputs);
  const forks = sim.requests("forkService");
  expect(forks.map((r) => r.status)).toEqual([409, 202]); // refused while CONFIGURING, then accepted
  expect(forks[1]?.at).toBeGreaterThanOrEqual(await released);
  expect(stderr.join("")).toContain("source svc-parent1 is CONFIGURING; waiting to fork");
});

test("a DELETING source fails the check", async () => {
  sim.outOfBand.setStatus(ids.projectId, ids.serviceId, "DELETING");
  expect(await failuresOf(fork.check({}, forkNews()))).toEqual([
    "sourceServiceId: sourceServiceId names service svc-parent1, which is DELETING: it cannot be forked",
  ]);
});

test("each object is read once per process, however many resources (of any kind) refer to it", async () => {
  await Promise.all([
    ...Array.from({ length: 20 }, (_, i) => fork.check({}, forkNews({ name: `f${i}` }))),
    ha.check({}, { __provider: P, serviceId: ids.serviceId, replicaCount: 1 }),
  ]);
  // The source, once; the service list (for forks a named create would take over), once.
  expect(sim.requests().map((r) => r.operation)).toEqual(["getService", "listServices"]);
});

test("a named fork that up would take over is warned of on its resource: which fork, the password, the alias", async () => {
  const urn = "urn:pulumi:dev::app::acme:index:Env$pulumi-nodejs:dynamic/tigercloud:ServiceFork::db";
  // A fork made elsewhere (the console, a lost state, a resource renamed without an alias).
  const answer = await fetch(`${sim.url}/projects/${ids.projectId}/services/${ids.serviceId}/forkService`, {
    method: "POST",
    headers: { Authorization: `Bearer ${sim.apiKey}`, "Content-Type": "application/json" },
    body: JSON.stringify({ fork_strategy: "NOW", name: "pr-9" }),
  });
  const running = ((await answer.json()) as { service_id: string }).service_id;
  sim.outOfBand.setStatus(ids.projectId, running, "READY");
  sim.clearLog();
  const named = (extra: Record<string, unknown> = {}) => forkNews({ name: "pr-9", __resourceName: "db", __resourceUrn: urn, ...extra });
  expect(await failuresOf(fork.check({}, named()))).toEqual([]);
  await fork.check({}, named()); // checked again in the same run: said once
  expect(warnings()).toEqual([
    `warning: [tigercloud] ServiceFork "db" (in a acme:index:Env) will take over running fork ${running} ("pr-9", READY, a fork of service ${ids.serviceId}) ` +
      `instead of forking, and its password will be reset (passwordOnAdopt: "reset"): anything holding its current connection string can no longer log in. ` +
      `If this is a rename or a move into or out of a component, give the resource an alias instead (aliases: [{ name: "<old name>" }] or [{ parent: <old parent> }]): ` +
      `it then keeps the fork and its password untouched.\n`,
  ]);
  stderr.length = 0;
  await fork.check({}, named({ passwordOnAdopt: "keep" }));
  expect(warnings().join("")).toContain('its password is kept (passwordOnAdopt: "keep")');
  // No takeover, no warning: adoption off, another name, a paused fork, the fork a replacement stops first.
  stderr.length = 0;
  await fork.check({}, named({ adoptExisting: false }));
  await fork.check({}, named({ name: "pr-10" }));
  // (The engine checks a replacement with the old inputs, without the fork's ID, then again with none.)
  await fork.check(
    { projectId: ids.projectId, name: "pr-9", sourceServiceId: ids.serviceId, forkStrategy: "NOW" },
    named({ forkStrategy: "LAST_SNAPSHOT" }),
  );
  await fork.check({}, named({ forkStrategy: "LAST_SNAPSHOT" }));
  sim.outOfBand.setStatus(ids.projectId, running, "PAUSED");
  // Other settings, as in a new run: the service list is read again.
  await configureProviders({
    "tigercloud:apiUrl": sim.url,
    "tigercloud:apiKey": sim.apiKey,
    "tigercloud:projectId": ids.projectId,
    "tigercloud:verifyReferences": "true",
  });
  await fork.check({}, named());
  expect(warnings()).toEqual([]);
  expect(writes()).toEqual([]);
});

test("only a create or a replacement is verified; unknown IDs and rejected inputs are not", async () => {
  const { inputs: olds } = await fork.check({}, forkNews({ name: "same" }));
  await configureProviders({
    "tigercloud:apiUrl": sim.url,
    "tigercloud:apiKey": sim.apiKey,
    "tigercloud:projectId": `${ids.projectId}`,
    "tigercloud:verifyReferences": "true",
  });
  sim.clearLog();
  // Unchanged, and changed in place (a waiting control): no request.
  await fork.check(olds, forkNews({ name: "same" }));
  await fork.check(olds, forkNews({ name: "same", createTimeout: "45m" }));
  expect(sim.requests()).toEqual([]);
  // A rename is made in place: no request. A replacement (a new strategy) refers to the source anew.
  await fork.check(olds, forkNews({ name: "other" }));
  expect(sim.requests()).toEqual([]);
  await fork.check(olds, forkNews({ name: "same", forkStrategy: "LAST_SNAPSHOT" }));
  // (Not the list: a replacement keeping the fork's identity stops the old fork first.)
  expect(sim.requests().map((r) => r.operation)).toEqual(["getService"]);
  sim.clearLog();
  await fork.check({}, forkNews({ sourceServiceId: UNKNOWN }));
  await fork.check({}, forkNews({ sourceServiceId: "svc-x", forkStrategy: "PITR" }));
  expect(sim.requests()).toEqual([]);
});

test("no credentials: no request, no failure, one note; verification off: no request", async () => {
  const saved = process.env.TIGER_API_KEY;
  delete process.env.TIGER_API_KEY;
  try {
    await configureProviders({ "tigercloud:apiUrl": sim.url, "tigercloud:projectId": ids.projectId });
    expect(await failuresOf(fork.check({}, forkNews({ sourceServiceId: "svc-typo" })))).toEqual([]);
    expect(await failuresOf(vpc.check({}, { __provider: P, vpcId: "999", name: "x" }))).toEqual([]);
    expect(warnings()).toEqual([
      "warning: [tigercloud] references were not verified: no Tiger Cloud credentials (tigercloud:apiKey or TIGER_API_KEY, or a key pair). `pulumi up` needs them.\n",
    ]);
    // Half a key pair is a mistake `up` would fail on: it fails here.
    await configureProviders({ "tigercloud:apiUrl": sim.url, "tigercloud:projectId": ids.projectId, "tigercloud:publicKey": "pk" });
    expect((await failuresOf(fork.check({}, forkNews())))[0]).toMatch(/could not be verified: Tiger Cloud credentials are incomplete/);
  } finally {
    if (saved !== undefined) process.env.TIGER_API_KEY = saved;
  }
  await configureProviders({ "tigercloud:apiUrl": sim.url, "tigercloud:apiKey": sim.apiKey, "tigercloud:verifyReferences": "false" });
  expect(await failuresOf(fork.check({}, forkNews({ projectId: ids.projectId, sourceServiceId: "svc-typo" })))).toEqual([]);
  await configureProviders({ "tigercloud:apiUrl": sim.url, "tigercloud:apiKey": sim.apiKey, "tigercloud:verifyReferences": "maybe" });
  expect((await failuresOf(fork.check({}, forkNews({ projectId: ids.projectId }))))[0]).toMatch(
    /tigercloud:verifyReferences \/ TIGER_VERIFY_REFERENCES must be "true" or "false"/,
  );
  expect(sim.requests()).toEqual([]);
});
