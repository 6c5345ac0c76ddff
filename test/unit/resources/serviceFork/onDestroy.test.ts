// What destroy does to a fork (ServiceFork's onDestroy): "stop" by default, "delete" on request.
// Provider methods against the simulator, as the engine calls them.
import { providers } from "../../../../provider/hosts/dynamic/runtime";
import { InvalidInputError, NotFoundError, TigerCloudError } from "../../../../provider/errors";
import { setHostOptions, startRun } from "../../../../provider/hosts/dynamic/provider";
import { rejectionOf, startProviderSim, stopProviderSim, P, type Ids } from "../../../support/helpers";
import type { OperationName, Simulator } from "../../../../simulator";

const fork = providers.ServiceFork;

let sim: Simulator;
let ids: Ids;
let stderr: string[];
beforeEach(async () => {
  // Each test is a run of its own: no declaration of another test's run holds a fork.
  startRun();
  ({ sim, ids, stderr } = await startProviderSim({ delays: { deleteMs: 100 } }, { captureStderr: true }));
});
afterEach(() => stopProviderSim(sim));
const stderrText = () => stderr.join("");

/** A resource of the program, as the class declares it: its name and its URN. */
const urnOf = (name: string, parentType = "") =>
  `urn:pulumi:dev::proj::${parentType ? `${parentType}$` : ""}pulumi-nodejs:dynamic/tigercloud:ServiceFork::${name}`;
const inputsFor = async (extra: Record<string, unknown> = {}, resource = "db") =>
  (
    await fork.check(
      {},
      {
        __provider: P,
        __resourceName: resource,
        __resourceUrn: urnOf(resource),
        sourceServiceId: ids.serviceId,
        forkStrategy: "NOW",
        name: "pr-7",
        ...extra,
      },
    )
  ).inputs;
const created = async (extra: Record<string, unknown> = {}) => {
  const { id, outs } = await fork.create(await inputsFor(extra));
  return { id, props: { ...outs, __provider: P } as Record<string, unknown> };
};
const answered = (operation: OperationName) => sim.requests(operation).map((r) => r.status);

test('by default destroy stops the fork: PAUSED, kept, no DELETE; the progress line says so and names "delete"', async () => {
  const { id, props } = await created();
  expect(props.onDestroy).toBe("stop");
  await fork.delete(id, props);
  expect(sim.service(ids.projectId, id)?.status).toBe("PAUSED");
  expect(sim.requests("deleteService")).toEqual([]);
  expect(stderrText()).toContain(`stopping fork ${id} (onDestroy: "stop": it is kept, paused, with its data; "delete" would delete it)`);
});

test('onDestroy "delete": one DELETE, waited for until the API no longer knows the fork; its database goes with it', async () => {
  const { id, props } = await created({ onDestroy: "delete" });
  expect(sim.databases.acceptsLogins(id)).toBe(true);
  sim.clearLog();
  await fork.delete(id, props);
  expect(answered("deleteService")).toEqual([202]);
  expect(sim.requests("stop")).toEqual([]);
  expect(sim.service(ids.projectId, id)?.status).toBe("DELETED");
  expect(sim.databases.acceptsLogins(id)).toBe(false);
  expect(stderrText()).toContain(`deleting fork ${id} (onDestroy: "delete": the fork and its data go for good)`);
  expect(stderrText()).toContain(`fork ${id} is deleted`);
  // Destroyed again (a destroy that was cut off and run once more): the API says it is gone, and that is success.
  sim.clearLog();
  await fork.delete(id, props);
  expect(sim.requests("deleteService")).toEqual([]);
  expect(stderrText()).toContain(`fork ${id} no longer exists; nothing to delete`);
});

test("a paused fork is deleted too; a fork deleted elsewhere, or deleting, is success with no second DELETE", async () => {
  const paused = await created({ onDestroy: "delete", paused: true });
  await fork.delete(paused.id, paused.props);
  expect(sim.service(ids.projectId, paused.id)?.status).toBe("DELETED");

  const elsewhere = await created({ onDestroy: "delete", name: "pr-8" });
  sim.outOfBand.deleteService(ids.projectId, elsewhere.id);
  sim.clearLog();
  await fork.delete(elsewhere.id, elsewhere.props);
  expect(sim.requests("deleteService")).toEqual([]);

  const deleting = await created({ onDestroy: "delete", name: "pr-9" });
  sim.outOfBand.setStatus(ids.projectId, deleting.id, "DELETING");
  sim.clearLog();
  await fork.delete(deleting.id, { ...deleting.props, waitForReady: false });
  expect(sim.requests("deleteService")).toEqual([]);
});

test("a fork busy with another operation: the DELETE's 409 is waited through, then sent again", async () => {
  const { id, props } = await created({ onDestroy: "delete" });
  sim.outOfBand.holdBusy(ids.projectId, id, "CONFIGURING");
  void sim.releaseBusyOnceRefused(ids.projectId, id, "deleteService");
  sim.clearLog();
  await fork.delete(id, props);
  expect(answered("deleteService")).toEqual([409, 202]);
  expect(stderrText()).toContain(`fork ${id} is CONFIGURING; waiting to delete`);
  expect(sim.service(ids.projectId, id)?.status).toBe("DELETED");
});

test("a lost DELETE answer is sent again (a delete is safe to repeat), and the fork is deleted once", async () => {
  const { id, props } = await created({ onDestroy: "delete" });
  sim.injectFault("deleteService", { kind: "afterApplying", status: 0 });
  sim.clearLog();
  await fork.delete(id, props);
  expect(sim.requests("deleteService")).toHaveLength(2);
  expect(sim.service(ids.projectId, id)?.status).toBe("DELETED");
});

test("a 404 that is not the API's (a proxy's HTML page) is not taken for gone: destroy fails and the fork runs on", async () => {
  const { id, props } = await created({ onDestroy: "delete" });
  sim.injectFault("deleteService", { kind: "status", status: 404, body: "<html>Not Found</html>" });
  const err = await rejectionOf(fork.delete(id, props));
  expect(err).toBeInstanceOf(NotFoundError);
  expect(sim.service(ids.projectId, id)?.status).toBe("READY");
});

test("never a service that is not a fork of the declared source: refused, nothing deleted, the fix named", async () => {
  // State that (by a hand edit, or an import gone wrong) holds the source service itself.
  const { props } = await created({ onDestroy: "delete" });
  sim.clearLog();
  const err = await rejectionOf(fork.delete(ids.serviceId, { ...props, serviceId: ids.serviceId }));
  expect(err).toBeInstanceOf(TigerCloudError);
  expect(err.message).toContain(`will not delete service ${ids.serviceId}: service ${ids.serviceId} is not a fork (it has no forked_from)`);
  expect(err.message).toContain("Nothing was changed");
  expect(err.message).toContain("pulumi state delete");
  expect(sim.requests("deleteService")).toEqual([]);
  expect(sim.service(ids.projectId, ids.serviceId)?.status).toBe("READY");
  // A fork of another service than sourceServiceId is refused the same way.
  const { id: other } = await created({ name: "other" });
  const err2 = await rejectionOf(fork.delete(other, { ...props, sourceServiceId: "svc-someone-else" }));
  expect(err2.message).toContain(`is a fork of ${ids.serviceId}, not of sourceServiceId svc-someone-else`);
  expect(sim.service(ids.projectId, other)?.status).toBe("READY");
});

test.each(["delete", "stop"])(
  'a standby of the source is never a fork: onDestroy "%s" refuses it and leaves it running',
  async (onDestroy) => {
    const { props } = await created({ onDestroy });
    // State that holds the source's standby (named like the fork, say, by a hand edit or an old import).
    const standby = sim.outOfBand.addFork(ids.projectId, ids.serviceId, { name: "pr-7", standby: true });
    sim.clearLog();
    const err = await rejectionOf(fork.delete(standby, { ...props, serviceId: standby }));
    expect(err.message).toContain(`will not ${onDestroy} service ${standby}: service ${standby} is a standby of service ${ids.serviceId}`);
    expect(sim.requests().filter((r) => r.method !== "GET")).toEqual([]);
    expect(sim.service(ids.projectId, standby)?.status).toBe("READY");
  },
);

test("a fork whose source lives in another project than the one recorded is refused too", async () => {
  const { id, props } = await created({ onDestroy: "delete" });
  sim.outOfBand.setForkedFrom(ids.projectId, id, { project_id: "proj-elsewhere" });
  const err = await rejectionOf(fork.delete(id, props));
  expect(err.message).toContain(`in project proj-elsewhere, not in project ${ids.projectId}`);
  expect(sim.service(ids.projectId, id)?.status).toBe("READY");
});

test("a DELETE whose answer is lost, retried, and answered 404 while the fork is DELETING: success, the wait goes on to DELETED", async () => {
  const { id, props } = await created({ onDestroy: "delete" });
  sim.injectFault("deleteService", { kind: "afterApplying", status: 0 });
  const notFound = JSON.stringify({ code: "NOT_FOUND", message: `service ${id} not found` });
  sim.injectFault("deleteService", { kind: "status", status: 404, body: notFound, contentType: "application/json" });
  sim.clearLog();
  await fork.delete(id, props);
  // The first answer never came (the connection dropped after the API carried it out).
  expect(answered("deleteService")).toEqual([undefined, 404]);
  expect(sim.service(ids.projectId, id)?.status).toBe("DELETED");
  expect(stderrText()).toContain(`fork ${id} is deleted`);
});

describe("deleteTimeout bounds the whole destroy, every request and retry included", () => {
  const LIMIT_MS = 1500;
  beforeEach(() => setHostOptions({ client: { requestTimeoutMs: LIMIT_MS, baseDelayMs: 50, maxDelayMs: 200 }, poll: { firstPollMs: 20 } }));

  test.each([
    ["delete", "deleteService"],
    ["stop", "stop"],
  ] as const)('onDestroy "%s" against an API whose %s hangs: it ends within 4 s and one request limit', async (onDestroy, operation) => {
    // 4 s: the reads before the hanging request and its first 1.5 s leave time for a retry, on a busy machine too.
    const { id, props } = await created({ onDestroy, deleteTimeout: "4s" });
    sim.injectFault(operation, { kind: "hang" }, 100);
    sim.clearLog();
    const started = Date.now();
    const err = await rejectionOf(fork.delete(id, props));
    const took = Date.now() - started;
    expect(err).toBeInstanceOf(TigerCloudError);
    expect(took).toBeLessThan(4000 + LIMIT_MS);
    // It was retried while time was left, and never after.
    expect(sim.requests(operation).length).toBeGreaterThanOrEqual(2);
  });

  test("a hanging read, before anything is sent, is bounded the same way", async () => {
    const { id, props } = await created({ onDestroy: "delete", deleteTimeout: "3s" });
    sim.injectFault("getService", { kind: "hang" }, 100);
    const started = Date.now();
    await rejectionOf(fork.delete(id, props));
    expect(Date.now() - started).toBeLessThan(3000 + LIMIT_MS);
    expect(sim.requests("deleteService")).toEqual([]);
  });
});

describe("a fork another declaration of the run holds or would take over is never deleted", () => {
  test("renamed without an alias: the new declaration (same name and source) would adopt it, so the old one's delete leaves it", async () => {
    const { id, props } = await created({ onDestroy: "delete" });
    // The program now declares it as "db-renamed": checked in this run before the old one is deleted.
    await inputsFor({ onDestroy: "delete" }, "db-renamed");
    sim.clearLog();
    await fork.delete(id, props);
    expect(sim.requests("deleteService")).toEqual([]);
    expect(sim.service(ids.projectId, id)?.status).toBe("READY");
    expect(stderrText()).toContain(`fork ${id} is held by ServiceFork "db-renamed" of this program, or will be; leaving it as it is`);
  });

  test("another declaration naming it in adoptServiceId holds it too", async () => {
    const { id, props } = await created({ onDestroy: "delete" });
    await inputsFor({ onDestroy: "delete", name: "another-name", adoptServiceId: id }, "keeper");
    await fork.delete(id, props);
    expect(sim.requests("deleteService")).toEqual([]);
  });

  test("replaced by force (`--replace`: no diff, so made before the delete): the replacement took the running fork over, so the old state's delete leaves it and says how to get a new one", async () => {
    const { id, props } = await created({ onDestroy: "delete" });
    startRun(); // the `up --replace` that follows
    const replacement = await created({ onDestroy: "delete" });
    expect(replacement.id).toBe(id); // adopted: same name and source, running
    sim.clearLog();
    await fork.delete(id, props);
    expect(sim.requests("deleteService")).toEqual([]);
    expect(sim.requests("stop")).toEqual([]);
    expect(sim.service(ids.projectId, id)?.status).toBe("READY");
    expect(stderrText()).toContain(`fork ${id} was taken over by this resource's replacement`);
    expect(stderrText()).toContain("deleteBeforeReplace: true");
  });

  test("replaced by force with a new fork (adoptExisting: false): the old one is deleted as declared", async () => {
    const { id, props } = await created({ onDestroy: "delete" });
    startRun();
    const replacement = await created({ onDestroy: "delete", adoptExisting: false });
    expect(replacement.id).not.toBe(id);
    await fork.delete(id, props);
    expect(sim.service(ids.projectId, id)?.status).toBe("DELETED");
    expect(sim.service(ids.projectId, replacement.id)?.status).toBe("READY");
  });

  test("a declaration with the same name and source that would NOT adopt (adoptExisting: false) does not save it", async () => {
    const { id, props } = await created({ onDestroy: "delete" });
    await inputsFor({ onDestroy: "delete", adoptExisting: false }, "fresh");
    await fork.delete(id, props);
    expect(sim.service(ids.projectId, id)?.status).toBe("DELETED");
  });
});

test("check refuses an onDestroy that is neither, naming the property and both choices", async () => {
  const failures = (await fork.check({}, { __provider: P, sourceServiceId: ids.serviceId, forkStrategy: "NOW", onDestroy: "destroy" }))
    .failures;
  expect(failures).toEqual([
    { property: "onDestroy", reason: expect.stringContaining('must be "stop" (keep the fork, paused, data and all) or "delete"') },
  ]);
  // create with the same inputs refuses them the same way (the engine never calls it so, but a caller could).
  expect(await rejectionOf(fork.create({ sourceServiceId: ids.serviceId, forkStrategy: "NOW", onDestroy: "destroy" }))).toBeInstanceOf(
    InvalidInputError,
  );
});

test('a replacement with onDestroy "delete" is warned of at preview: which fork, that its data goes, and when', async () => {
  const { id, props } = await created({ onDestroy: "delete" });
  const news = await inputsFor({ onDestroy: "delete", forkStrategy: "LAST_SNAPSHOT" });
  const diff = await fork.diff(id, props, news);
  expect(diff.replaces).toEqual(["forkStrategy"]);
  expect(diff.deleteBeforeReplace).toBe(true);
  expect(stderrText()).toContain(`its fork ${id} will be DELETED with its data (onDestroy: "delete"), before the new fork is made`);
  // With "stop" recorded, a replacement says nothing of the kind.
  const kept = await created({ name: "kept" });
  stderr.length = 0;
  await fork.diff(kept.id, kept.props, await inputsFor({ name: "kept", forkStrategy: "LAST_SNAPSHOT" }));
  expect(stderrText()).not.toContain("DELETED");
});
