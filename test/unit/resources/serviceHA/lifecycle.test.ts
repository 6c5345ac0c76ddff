// ServiceHA's lifecycle, called as the engine calls the dynamic provider, against the simulator
// over loopback: every rule of check, diff, create, read, update and delete.
import { providers } from "../../../../provider/hosts/dynamic/runtime";
import { setHostOptions } from "../../../../provider/hosts/dynamic/provider";
import { UNKNOWN } from "../../../../provider/rules/inputs";
import { configureProviders, eventually, rejectionOf, providerSimForEachTest, P, failuresOf, type Ids } from "../../../support/helpers";
import type { Simulator } from "../../../../simulator";

const ha = providers.ServiceHA;

let sim: Simulator;
let ids: Ids;
providerSimForEachTest((current) => ({ sim, ids } = current));

describe("ServiceHA", () => {
  const base = { serviceId: "svc-parent1" };
  const OFFERED = "Tiger Cloud offers 0, 1 or 2 HA replicas, and 1 synchronous replica only with 2 replicas";

  test.each([
    [{}, "replicaCount: replicaCount or syncReplicaCount must be set: at least one count"],
    [{ replicaCount: -1 }, "replicaCount: replicaCount must be an integer >= 0"],
    [{ replicaCount: 1.5 }, "replicaCount: replicaCount must be an integer >= 0"],
    [{ replicaCount: "2" }, "replicaCount: replicaCount must be an integer >= 0 (it is a string)"],
    [{ replicaCount: 1, syncReplicaCount: 2 }, "syncReplicaCount: syncReplicaCount must not exceed replicaCount (2 > 1)"],
    [{ replicaCount: 3 }, `replicaCount: replicaCount must be 0, 1 or 2 (not 3): ${OFFERED}`],
    [{ syncReplicaCount: 2 }, `syncReplicaCount: syncReplicaCount must be 0 or 1 (not 2): ${OFFERED}`],
    [
      { replicaCount: 1, syncReplicaCount: 1 },
      `syncReplicaCount: syncReplicaCount 1 needs replicaCount 2 (not 1): ${OFFERED}. Set replicaCount: 2, or syncReplicaCount: 0`,
    ],
  ])("check %j fails with %s", async (change, expected) => {
    expect(await failuresOf(ha, { ...base, ...change })).toEqual([expected]);
  });

  test("check skips unknown counts and service", async () => {
    expect(await failuresOf(ha, { serviceId: UNKNOWN, replicaCount: UNKNOWN })).toEqual([]);
  });

  test("two ServiceHA on services not known until apply (new forks) declare nothing at preview: different counts pass", async () => {
    const declared = (name: string, replicaCount: number) => ({
      serviceId: UNKNOWN,
      replicaCount,
      __resourceName: name,
      __resourceUrn: `urn:${name}`,
    });
    expect(await failuresOf(ha, declared("ha-a", 1))).toEqual([]);
    expect(await failuresOf(ha, declared("ha-b", 2))).toEqual([]);
    // Known, the same two conflict, as the README says.
    expect(await failuresOf(ha, { ...declared("ha-a", 1), serviceId: "svc-parent1" })).toEqual([]);
    expect(await failuresOf(ha, { ...declared("ha-b", 2), serviceId: "svc-parent1" })).toEqual([
      expect.stringMatching(/^replicaCount: ServiceHA "ha-b" and ServiceHA "ha-a" both set the HA of service svc-parent1/),
    ]);
  });

  test("create waits for a CONFIGURING service, sends only the given counts, waits for them", async () => {
    sim.outOfBand.setStatus(ids.projectId, ids.serviceId, "CONFIGURING");
    sim.delays = { ...sim.delays, setHAMs: 80 };
    const { inputs } = await ha.check({}, { __provider: P, ...base, replicaCount: 2 });
    sim.clearLog();
    const creating = ha.create(inputs);
    // READY once create has read it CONFIGURING (and so must wait), not after a time.
    await eventually("create reads the service CONFIGURING", () => sim.requests("getService").some((r) => r.status === 200));
    expect(sim.requests("setHA")).toEqual([]);
    sim.outOfBand.setStatus(ids.projectId, ids.serviceId, "READY");
    const { id, outs } = await creating;
    expect(id).toBe(ids.serviceId);
    expect(sim.requests("setHA").map((r) => r.body)).toEqual([{ replica_count: 2 }]);
    expect(outs).toMatchObject({ replicaCount: 2, syncReplicaCount: 0, status: "READY" });
  });

  test("diff: counts update in place; project or service replace; an unset count has no opinion", async () => {
    const olds = {
      __provider: P,
      projectId: "p",
      serviceId: "s",
      replicaCount: 2,
      syncReplicaCount: 1,
      waitForReady: true,
      updateTimeout: "30m",
      deleteTimeout: "10m",
    };
    const news = {
      __provider: P,
      projectId: "p",
      serviceId: "s",
      replicaCount: 2,
      waitForReady: true,
      updateTimeout: "30m",
      deleteTimeout: "10m",
    };
    expect(await ha.diff("s", olds, news)).toMatchObject({ changes: false });
    expect(await ha.diff("s", olds, { ...news, replicaCount: 1, syncReplicaCount: 0 })).toMatchObject({ changes: true, replaces: [] });
    expect(await ha.diff("s", olds, { ...news, serviceId: "t" })).toMatchObject({ replaces: ["serviceId"] });
    expect(await ha.diff("s", olds, { ...news, projectId: "q" })).toMatchObject({ replaces: ["projectId"] });
  });

  test("preview refuses what setHA would: a count left undeclared keeps its live value (diff), or the service's (check at create)", async () => {
    const olds = { __provider: P, projectId: "p", serviceId: "s", replicaCount: 2, syncReplicaCount: 1, updateTimeout: "30m" };
    const news = { __provider: P, projectId: "p", serviceId: "s", updateTimeout: "30m" };
    // Down to 1 replica, the synchronous one left as it is: setHA answers 400.
    expect((await rejectionOf(ha.diff("s", olds, { ...news, replicaCount: 1 }))).message).toBe(
      `Invalid ServiceHA inputs: ServiceHA of service s: replicaCount 1 would leave its 1 synchronous replica(s), as syncReplicaCount is not declared, ` +
        `and setHA refuses that: ${OFFERED}. Declare syncReplicaCount: 0 as well.`,
    );
    expect(await ha.diff("s", olds, { ...news, replicaCount: UNKNOWN })).toMatchObject({ replaces: [] });
    expect(await ha.diff("s", { ...olds, syncReplicaCount: 0 }, { ...news, replicaCount: 1 })).toMatchObject({ changes: true });

    // The service has 1 replica: syncReplicaCount 1 alone is refused before setHA is sent.
    sim.outOfBand.setHA(ids.projectId, ids.serviceId, 1, 0);
    expect(await failuresOf(ha, { ...base, syncReplicaCount: 1 })).toEqual([
      `serviceId: serviceId names service ${ids.serviceId}, whose syncReplicaCount 1 would go with its 1 replica(s), as replicaCount is not declared, ` +
        `and setHA refuses that: ${OFFERED}. Declare replicaCount: 2 as well.`,
    ]);
    // With 2 replicas, read afresh (other settings: what was read under the old ones is stale), the same declaration passes.
    sim.outOfBand.setHA(ids.projectId, ids.serviceId, 2, 0);
    const settings = { "tigercloud:apiUrl": sim.url, "tigercloud:apiKey": sim.apiKey, "tigercloud:projectId": ids.projectId };
    await configureProviders({ ...settings, "tigercloud:verifyReferences": "true" });
    expect(await failuresOf(ha, { ...base, syncReplicaCount: 1 })).toEqual([]);
    expect(sim.requests("setHA")).toEqual([]);
  });

  test("read returns the live counts; 404 is gone", async () => {
    sim.outOfBand.setHA(ids.projectId, ids.serviceId, 2, 1);
    const read = await ha.read(ids.serviceId, { __provider: P, projectId: ids.projectId, serviceId: ids.serviceId, replicaCount: 0 });
    expect(read.props).toMatchObject({ replicaCount: 2, syncReplicaCount: 1 });
    expect(await ha.read("svc-gone", { __provider: P, projectId: ids.projectId, serviceId: "svc-gone" })).toEqual({});
  });

  test("delete sets 0 and 0 and never stops; a paused service or a missing one is left alone", async () => {
    sim.outOfBand.setHA(ids.projectId, ids.serviceId, 2, 1);
    await ha.delete(ids.serviceId, { projectId: ids.projectId, serviceId: ids.serviceId });
    expect(sim.requests("setHA").map((r) => r.body)).toEqual([{ replica_count: 0, sync_replica_count: 0 }]);
    expect(sim.requests("stop")).toEqual([]);
    expect(sim.service(ids.projectId, ids.serviceId)).toMatchObject({ status: "READY", ha_replicas: { replica_count: 0 } });

    sim.outOfBand.setHA(ids.projectId, ids.serviceId, 1, 0);
    sim.outOfBand.setStatus(ids.projectId, ids.serviceId, "PAUSED");
    sim.clearLog();
    await ha.delete(ids.serviceId, { projectId: ids.projectId, serviceId: ids.serviceId });
    expect(sim.requests().map((r) => r.operation)).toEqual(["getService"]);
    await ha.delete("svc-gone", { projectId: ids.projectId, serviceId: "svc-gone" });
  });

  test("deleteTimeout bounds the destroy's setHA and its retries: against a hanging API it ends within it and one request limit", async () => {
    setHostOptions({ client: { requestTimeoutMs: 1500, baseDelayMs: 50, maxDelayMs: 200 }, poll: { firstPollMs: 20 } });
    sim.outOfBand.setHA(ids.projectId, ids.serviceId, 2, 1);
    sim.injectFault("setHA", { kind: "hang" }, 100);
    const started = Date.now();
    await rejectionOf(ha.delete(ids.serviceId, { projectId: ids.projectId, serviceId: ids.serviceId, deleteTimeout: "3s" }));
    expect(Date.now() - started).toBeLessThan(3000 + 1500);
    expect(sim.requests("setHA").length).toBeGreaterThanOrEqual(2);
  });
});
