// The busy rule under the real engine: a service busy with another operation refuses a new one
// with 409 and does nothing; the provider waits until it settles and sends the request again.
import { type EngineHarness, startEngine, tigercloud } from "../support/lab/harness";

jest.setTimeout(300_000);
let h: EngineHarness;
beforeAll(async () => {
  // setHA keeps a service CONFIGURING for 3 s: long enough to collide with a fork.
  h = await startEngine({ setHAMs: 3000 });
});
afterAll(async () => {
  await h?.close();
});

const parentStatus = () => h.sim.service(h.ids.projectId, h.ids.serviceId)?.status;

test("a fork of a source busy with an operation started elsewhere waits for it, after the API's 409, and succeeds", async () => {
  const { ServiceFork } = tigercloud();
  // The timeouts bound a provider that never sends again: the test fails in a minute, not at jest's limit.
  const s = await h.stack("busy-source", async () => {
    const f = new ServiceFork("fork", {
      sourceServiceId: h.ids.serviceId,
      forkStrategy: "NOW",
      createTimeout: "60s",
      deleteTimeout: "60s",
    });
    return { id: f.serviceId };
  });
  // Busy until the fork's request has met it (the API's 409), however long the engine takes to start.
  h.sim.outOfBand.holdBusy(h.ids.projectId, h.ids.serviceId, "CONFIGURING");
  const sourceReleased = h.sim.releaseBusyOnceRefused(h.ids.projectId, h.ids.serviceId, "forkService");
  const up = await s.up();
  const forks = up.requests.filter((r) => r.operation === "forkService");
  expect(forks.map((r) => r.status)).toEqual([409, 202]); // refused while CONFIGURING, then accepted
  expect(forks[1]?.at).toBeGreaterThanOrEqual(await sourceReleased);
  expect(up.stdout).toContain(`source ${h.ids.serviceId} is CONFIGURING; waiting to fork`);
  const made = h.sim.services(h.ids.projectId).filter((x) => x.forked_from?.service_id === h.ids.serviceId && x.status === "READY");
  expect(made.map((x) => x.service_id)).toEqual([up.outputs.id?.value]);

  // Destroy while the fork itself is busy: stop is refused, waited through, and sent again.
  const forkId = up.outputs.id?.value as string;
  h.sim.outOfBand.holdBusy(h.ids.projectId, forkId, "UPGRADING");
  const forkReleased = h.sim.releaseBusyOnceRefused(h.ids.projectId, forkId, "stop");
  const destroy = await s.destroy();
  const stops = destroy.requests.filter((r) => r.operation === "stop");
  expect(stops.map((r) => r.status)).toEqual([409, 202]);
  expect(stops[1]?.at).toBeGreaterThanOrEqual(await forkReleased);
  expect(h.sim.service(h.ids.projectId, forkId)?.status).toBe("PAUSED");
});

// The race is made certain on every up (below), so repeating an up adds nothing: three make the fork,
// then replace it each way (NOW to LAST_SNAPSHOT and back) while HA goes from 1 to 2 and back.
const RACE_UPS = 3;

test(`HA on P and a fork of P in one program, HA first (the race made certain): ${RACE_UPS} ups in a row succeed`, async () => {
  const { ServiceFork, ServiceHA } = tigercloud();
  const program = (i: number) => async () => {
    new ServiceHA("ha", { serviceId: h.ids.serviceId, replicaCount: (i % 2) + 1 });
    // Another strategy each time: a new fork every up (a replacement), made while the HA change runs.
    const f = new ServiceFork("fork", { sourceServiceId: h.ids.serviceId, forkStrategy: i % 2 ? "LAST_SNAPSHOT" : "NOW", name: "race" });
    return { id: f.serviceId };
  };
  const s = await h.stack("race", program(0));
  let refusals = 0;
  for (let i = 0; i < RACE_UPS; i++) {
    s.setProgram(program(i));
    // The fork's request waits until setHA has been answered, so it meets the source CONFIGURING
    // whatever the machine's load (a delay on an earlier request let 1 up in 10 miss the race).
    h.sim.injectFault("forkService", { kind: "after", operation: "setHA", timeoutMs: 20_000 });
    const up = await s.up();
    const forks = up.requests.filter((r) => r.operation === "forkService");
    refusals += forks.length - 1;
    expect(up.outputs.id?.value).toMatch(/^svc-/);
    expect(h.sim.service(h.ids.projectId, up.outputs.id?.value as string)?.status).toBe("READY");
    expect(h.sim.service(h.ids.projectId, h.ids.serviceId)?.ha_replicas.replica_count).toBe((i % 2) + 1);
  }
  process.stdout.write(`busy race: ${RACE_UPS} ups, ${refusals} forkService 409s waited through\n`);
  expect(refusals).toBeGreaterThanOrEqual(RACE_UPS); // every up met the busy source at least once
  await s.destroy();
});

test("a source busy past createTimeout: a clear error naming it, its status and the wait; no fork, nothing in state", async () => {
  const { ServiceFork } = tigercloud();
  const s = await h.stack("busy-timeout", async () => {
    new ServiceFork("fork", { sourceServiceId: h.ids.serviceId, forkStrategy: "NOW", createTimeout: "3s" });
  });
  h.sim.outOfBand.holdBusy(h.ids.projectId, h.ids.serviceId, "UPGRADING");
  const before = h.sim.services(h.ids.projectId).length;
  let message = "";
  try {
    await s.up();
  } catch (err) {
    message = (err as Error).message;
  }
  expect(message).toMatch(
    new RegExp(
      `The source service ${h.ids.serviceId} was still busy \\(it was UPGRADING\\) after [34] s of waiting, the whole of createTimeout`,
    ),
  );
  expect(message).toContain("so nothing was done");
  expect(h.sim.services(h.ids.projectId)).toHaveLength(before);
  const state = await s.exportState();
  expect(state.resources?.filter((r) => r.type.endsWith("ServiceFork"))).toEqual([]);
  h.sim.outOfBand.releaseBusy(h.ids.projectId, h.ids.serviceId);
  expect(parentStatus()).toBe("READY");
});
