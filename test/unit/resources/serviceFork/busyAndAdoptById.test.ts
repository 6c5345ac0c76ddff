// ServiceFork's provider (provider/resources/serviceFork/) at the edges the README promises: the
// busy rule for every in-place request on a fork, a start of a fork already running,
// adoptServiceId's refusals at check and at create, the new password's redaction, and a refresh
// that follows a moved endpoint. Provider methods against the simulator, as the engine calls them.
import { providers } from "../../../../provider/hosts/dynamic/runtime";
import { PartialFailureError, TigerCloudError } from "../../../../provider/errors";
import { errorTexts, expectNoSecretFragments, rejectionOf, providerSimForEachTest, P, type Ids } from "../../../support/helpers";
import type { Fault, OperationName, Simulator } from "../../../../simulator";

const fork = providers.ServiceFork;

let sim: Simulator;
let ids: Ids;
let stderr: string[];
providerSimForEachTest((current) => ({ sim, ids, stderr } = current));
const stderrText = () => stderr.join("");

const NAME = "edges";
const inputsFor = async (extra: Record<string, unknown> = {}) =>
  (await fork.check({}, { __provider: P, sourceServiceId: ids.serviceId, forkStrategy: "NOW", name: NAME, ...extra })).inputs;
const created = async (extra: Record<string, unknown> = {}) => fork.create(await inputsFor(extra));

/** A request to the API as the console or the tiger CLI sends it; the answer's status and body. */
async function api(path: string, body: unknown = undefined): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${sim.url}/projects/${ids.projectId}${path}`, {
    method: "POST",
    headers: { Authorization: `Bearer ${sim.apiKey}`, ...(body === undefined ? {} : { "Content-Type": "application/json" }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}
/** A fork made elsewhere, not by this resource: its ID. */
const forkElsewhere = async (name: string) =>
  (await api(`/services/${ids.serviceId}/forkService`, { fork_strategy: "NOW", name })).body.service_id as string;

/** The statuses the simulator answered `operation` with, in order. */
const answered = (operation: OperationName) => sim.requests(operation).map((r) => r.status);

describe("the busy rule on a fork: a 409 while it is busy is waited through, then the request is sent again", () => {
  test.each([
    ["rename", "renameService", { name: "claimed-renamed" }, "rename", 200],
    ["resize", "resize", { cpuMillis: 2000, memoryGbs: 8 }, "resize", 202],
    ["setEnvironment", "setEnvironment", { environmentTag: "PROD" }, "set the environment of", 200],
  ] as const)("%s", async (_what, operation, change, action, success) => {
    const { id, outs } = await created({ cpuMillis: 1000, memoryGbs: 4 });
    const news = await inputsFor({ cpuMillis: 1000, memoryGbs: 4, updateTimeout: "20s", ...change });
    sim.clearLog();
    // Busy until the request has met it (its 409), then released.
    sim.outOfBand.holdBusy(ids.projectId, id, "UPGRADING");
    const released = sim.releaseBusyOnceRefused(ids.projectId, id, operation);
    const started = Date.now();
    await fork.update(id, { ...outs, __provider: P }, news);
    expect(Date.now() - started).toBeLessThan(20_000);
    // Refused while busy, sent again once it settled, and done.
    expect(answered(operation)).toEqual([409, success]);
    expect(sim.requests(operation)[1]?.at).toBeGreaterThanOrEqual(await released);
    expect(stderrText()).toContain(`fork ${id} is UPGRADING; waiting to ${action}`);
    const live = sim.service(ids.projectId, id);
    expect({ name: live?.name, environment: live?.metadata.environment, spec: live?.resources[0]?.spec }).toMatchObject({
      name: news.name,
      environment: news.environmentTag ?? "DEV",
      spec: { cpu_millis: Number(news.cpuMillis), memory_gbs: Number(news.memoryGbs) },
    });
  });

  test("start (paused true -> false) of a fork still PAUSING", async () => {
    const { id, outs } = await created({ paused: true });
    expect(sim.service(ids.projectId, id)?.status).toBe("PAUSED");
    sim.clearLog();
    // Busy until the request has met it (its 409), then released.
    sim.outOfBand.holdBusy(ids.projectId, id, "PAUSING");
    const released = sim.releaseBusyOnceRefused(ids.projectId, id, "start");
    const started = Date.now();
    const { outs: updated } = await fork.update(id, { ...outs, __provider: P }, await inputsFor({ paused: false, createTimeout: "20s" }));
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(answered("start")).toEqual([409, 202]);
    expect(sim.requests("start")[1]?.at).toBeGreaterThanOrEqual(await released);
    expect(stderrText()).toContain(`fork ${id} is PAUSING; waiting to start`);
    expect(updated).toMatchObject({ paused: false, status: "READY" });
  });

  test('updatePassword, when an adopted fork (passwordOnAdopt "reset") is busy', async () => {
    const id = await forkElsewhere(NAME);
    // The simulator's updatePassword does not refuse a busy service by itself: its 409 is the API's
    // own answer (its JSON error object), given while the fork is busy.
    sim.injectFault("updatePassword", {
      kind: "status",
      status: 409,
      body: JSON.stringify({ code: "CONFLICT", message: `service ${id} is CONFIGURING; try again when the operation has finished` }),
      contentType: "application/json",
    });
    sim.clearLog();
    // Busy until the request has met it (its 409), then released.
    sim.outOfBand.holdBusy(ids.projectId, id, "CONFIGURING");
    const released = sim.releaseBusyOnceRefused(ids.projectId, id, "updatePassword");
    const started = Date.now();
    // Not waiting for READY first, so that updatePassword meets the fork busy.
    const { outs } = await created({ adoptServiceId: id, waitForReady: false, createTimeout: "20s" });
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(answered("updatePassword")).toEqual([409, 204]);
    const [first, second] = sim.requests("updatePassword");
    expect(second?.at).toBeGreaterThanOrEqual(await released);
    // The same password both times, and it is the one recorded and set.
    expect(second?.body).toEqual(first?.body);
    expect(outs?.initialPassword).toBe((second?.body as { password: string }).password);
    expect(sim.service(ids.projectId, id)?.initial_password).toBe(outs?.initialPassword);
    expect(stderrText()).toContain(`fork ${id} is CONFIGURING; waiting to set the password of`);
  });
});

test("paused true -> false on a fork started elsewhere: start's 400 is read as done, and the update goes on", async () => {
  const { id, outs } = await created({ paused: true });
  expect((await api(`/services/${id}/start`)).status).toBe(202); // with the tiger CLI, say
  expect(sim.service(ids.projectId, id)?.status).toBe("READY");
  sim.clearLog();
  const news = await inputsFor({ paused: false, name: "claimed-renamed" });
  const { outs: updated } = await fork.update(id, { ...outs, __provider: P }, news);
  expect(answered("start")).toEqual([400]);
  expect(answered("renameService")).toEqual([200]);
  expect(updated).toMatchObject({ paused: false, status: "READY", name: "claimed-renamed" });
  expect(stderrText()).toContain(`fork ${id} is already READY`);
});

test("adoptServiceId naming a fork of the source with another name: refused at create, naming both names; nothing recorded or changed", async () => {
  const other = await forkElsewhere("someone-elses");
  sim.clearLog();
  const err = await rejectionOf(created({ adoptServiceId: other }));
  expect(err).toBeInstanceOf(TigerCloudError);
  // Not a partial failure: the engine records nothing.
  expect(err).not.toBeInstanceOf(PartialFailureError);
  expect(err.message).toContain(`adoptServiceId ${other} cannot be taken under management`);
  expect(err.message).toContain(`named "someone-elses", not "${NAME}"`);
  expect(err.message).toContain("Nothing was recorded");
  expect(sim.requests().filter((r) => r.method === "POST")).toEqual([]);
  expect(sim.service(ids.projectId, other)?.name).toBe("someone-elses");
});

describe("adoptServiceId's ID rules at check", () => {
  const WHITESPACE = "must not contain whitespace, control characters or '/'";
  test.each([
    ["empty", "", "must not be empty"],
    ["129 characters", "s".repeat(129), "must be at most 128 characters"],
    ["a space", "svc one", WHITESPACE],
    ["a tab", "svc\tone", WHITESPACE],
    ["a '/'", "svc/one", WHITESPACE],
    ["'.'", ".", "must not be '.' or '..'"],
    ["'..'", "..", "must not be '.' or '..'"],
  ])("%s: the check fails naming adoptServiceId and the rule, and reads nothing for it", async (_what, adoptServiceId, rule) => {
    sim.clearLog();
    const { failures } = await fork.check({}, { __provider: P, sourceServiceId: ids.serviceId, forkStrategy: "NOW", adoptServiceId });
    // A value the engine would echo raw (a tab) is named by the reason alone.
    const property = adoptServiceId.includes("\t") ? "" : "adoptServiceId";
    expect((failures ?? []).map((f) => `${f.property}: ${f.reason}`)).toEqual([`${property}: adoptServiceId ${rule}`]);
    const source = `/projects/${ids.projectId}/services/${ids.serviceId}`;
    expect(sim.requests("getService").filter((r) => r.path !== source)).toEqual([]);
  });

  test("128 characters is allowed: the ID is looked up", async () => {
    const { failures } = await fork.check(
      {},
      { __provider: P, sourceServiceId: ids.serviceId, forkStrategy: "NOW", adoptServiceId: "s".repeat(128) },
    );
    expect((failures ?? []).map((f) => f.property)).toEqual(["adoptServiceId"]);
    expect(failures?.[0]?.reason).not.toMatch(/at most 128/);
  });
});

describe("the new password of an adopted fork never shows in an updatePassword error or a progress line", () => {
  test.each([
    ["a 400 whose JSON message quotes the request", { kind: "echo", status: 400 }],
    ["a 500 whose JSON message quotes the request", { kind: "echo", status: 500 }],
    ["503s (retried) whose HTML page quotes the request", { kind: "echo", status: 503, html: true }],
  ] as [string, Extract<Fault, { kind: "echo" }>][])("%s", async (_what, fault) => {
    const id = await forkElsewhere(NAME);
    sim.injectFault("updatePassword", fault, 100);
    const err = await rejectionOf(created({ adoptServiceId: id }));
    const sent = sim.requests("updatePassword");
    expect(sent.length).toBeGreaterThanOrEqual(1);
    expect(answered("updatePassword").every((s) => s === fault.status)).toBe(true);
    const password = (sent[0]?.body as { password: string }).password;
    expect(password.length).toBeGreaterThanOrEqual(24);
    expectNoSecretFragments([...errorTexts(err), stderrText()], [password, encodeURIComponent(password)]);
    // The echo reached the error and the progress lines (so there was something to hide).
    expect(err.message).toContain("refused: the request was");
    expect(err.message).toContain("[REDACTED]");
    if (fault.status === 503) expect(stderrText()).toMatch(/updatePassword: retrying .*refused: the request was/);
  });
});

test("refresh follows a moved endpoint: host, port and connectionUri are the new ones, with the same password", async () => {
  const { id, outs } = await created();
  const moved = { host: "moved.proj-demo01.tsdb.cloud.timescale.com", port: 45678 };
  expect({ host: outs?.host, port: outs?.port }).not.toEqual(moved);
  sim.outOfBand.moveEndpoint(ids.projectId, id, moved.host, moved.port);
  const { props } = await fork.read(id, { ...outs, __provider: P });
  expect(props).toMatchObject({ ...moved, endpoint: moved });
  const uri = new URL(props?.connectionUri as string);
  expect({ host: uri.hostname, port: uri.port }).toEqual({ host: moved.host, port: String(moved.port) });
  expect(decodeURIComponent(uri.password)).toBe(outs?.initialPassword);
  expect(uri.pathname).toBe("/tsdb");
});
