// A fork's running state is declared (`paused`), changed in place, and read back: a fork paused
// elsewhere is drift that refresh shows and `up` puts back. Real engine, against the simulator.
import { type EngineHarness, writes, type Scenario, startEngine, tigercloud } from "../support/lab/harness";

jest.setTimeout(300_000);
let h: EngineHarness;
beforeAll(async () => {
  h = await startEngine({ stopMs: 500, startMs: 1000, forkQueuedMs: 300, forkConfiguringMs: 300 });
});
afterAll(async () => {
  await h?.close();
});

const statusOf = (id: unknown) => h.sim.service(h.ids.projectId, id as string)?.status;
const forkProgram = (paused?: boolean) => async () => {
  const { ServiceFork } = tigercloud();
  const f = new ServiceFork("fork", {
    sourceServiceId: h.ids.serviceId,
    forkStrategy: "NOW",
    name: "nightly",
    ...(paused === undefined ? {} : { paused }),
  });
  return { id: f.serviceId, paused: f.paused, status: f.status };
};
const expectNoChanges = async (s: Scenario) => {
  await s.stack.preview({ expectNoChanges: true });
  await s.stack.refresh({ expectNoChanges: true });
};

test("a fork paused elsewhere: refresh shows it, preview shows an update of `paused`, up sends one start and it is READY", async () => {
  const s = await h.stack("paused-elsewhere", forkProgram());
  const up = await s.up();
  const id = up.outputs.id?.value;
  expect(up.outputs.paused?.value).toBe(false);

  h.sim.outOfBand.setStatus(h.ids.projectId, id as string, "PAUSED");
  // Refresh sees the drift (and, failing on it, still records it, as `pulumi refresh` does).
  await expect(s.stack.refresh({ expectNoChanges: true })).rejects.toThrow(/no changes were expected/);
  const preview = await s.stack.preview({ diff: true });
  expect(preview.changeSummary).toMatchObject({ update: 1 });
  expect(preview.stdout).toMatch(/~ paused\s*:\s*true => false/);

  const resumed = await s.up();
  expect(writes(resumed.requests)).toEqual(["start"]);
  expect(resumed.outputs.id?.value).toBe(id);
  expect(statusOf(id)).toBe("READY");
  expect(resumed.outputs.paused?.value).toBe(false);
  await expectNoChanges(s);
  await s.destroy();
});

test("paused: true on a running fork stops it in place; back to false starts it; no replacement, no new fork", async () => {
  const s = await h.stack("pause-toggle", forkProgram(false));
  const id = (await s.up()).outputs.id?.value;

  s.setProgram(forkProgram(true));
  const preview = await s.preview();
  expect(preview.changes).toMatchObject({ update: 1 });
  const paused = await s.up();
  expect(writes(paused.requests)).toEqual(["stop"]);
  expect(paused.outputs.id?.value).toBe(id);
  expect(paused.outputs.paused?.value).toBe(true);
  expect(statusOf(id)).toBe("PAUSED");
  await expectNoChanges(s);

  s.setProgram(forkProgram(false));
  const started = await s.up();
  expect(writes(started.requests)).toEqual(["start"]);
  expect(started.outputs.status?.value).toBe("READY");
  expect(statusOf(id)).toBe("READY");
  await expectNoChanges(s);
  expect(h.sim.services(h.ids.projectId).filter((x) => x.name === "nightly" && x.status !== "PAUSED")).toHaveLength(1);
  await s.destroy();
});

test("a fork created paused is forked, then stopped; a ServiceHA on it fails at once with the reason; destroy of it succeeds at once", async () => {
  const { ServiceFork, ServiceHA } = tigercloud();
  const s = await h.stack("created-paused", forkProgram(true));
  const up = await s.up();
  expect(writes(up.requests)).toEqual(["forkService", "stop"]);
  expect(statusOf(up.outputs.id?.value)).toBe("PAUSED");
  expect(up.outputs.paused?.value).toBe(true);

  s.setProgram(async () => {
    const f = new ServiceFork("fork", { sourceServiceId: h.ids.serviceId, forkStrategy: "NOW", name: "nightly", paused: true });
    new ServiceHA("ha", { serviceId: f.serviceId, replicaCount: 1 });
  });
  const started = Date.now();
  await expect(s.up()).rejects.toThrow(/is PAUSED: HA cannot be changed while it is paused/);
  expect(Date.now() - started).toBeLessThan(30_000); // not the 30-minute updateTimeout

  s.setProgram(forkProgram(true));
  const destroy = await s.destroy();
  expect(writes(destroy.requests)).toEqual(["stop"]); // answered 400, confirmed PAUSED: success
  expect(statusOf(up.outputs.id?.value)).toBe("PAUSED");
});

test("start answered 503 twice, then 202: one fork, READY; ServiceHA's refresh shows no HA drift while its service is paused", async () => {
  const { ServiceFork, ServiceHA } = tigercloud();
  const program = (paused: boolean) => async () => {
    const f = new ServiceFork("fork", { sourceServiceId: h.ids.serviceId, forkStrategy: "NOW", name: "flaky", paused });
    return { id: f.serviceId };
  };
  const s = await h.stack("start-retry", program(true));
  const id = (await s.up()).outputs.id?.value as string;
  h.sim.injectFault("start", { kind: "status", status: 503 }, 2);
  s.setProgram(program(false));
  const up = await s.up();
  expect(writes(up.requests)).toEqual(["start", "start", "start"]);
  expect(statusOf(id)).toBe("READY");
  expect(h.sim.services(h.ids.projectId).filter((x) => x.name === "flaky")).toHaveLength(1);
  await s.destroy();

  const ha = await h.stack("ha-of-paused", async () => {
    new ServiceHA("ha", { serviceId: h.ids.serviceId, replicaCount: 1 });
  });
  await ha.up();
  h.sim.outOfBand.setStatus(h.ids.projectId, h.ids.serviceId, "PAUSED");
  try {
    await ha.stack.refresh({ expectNoChanges: true });
  } finally {
    h.sim.outOfBand.setStatus(h.ids.projectId, h.ids.serviceId, "READY");
  }
  await ha.destroy();
});
