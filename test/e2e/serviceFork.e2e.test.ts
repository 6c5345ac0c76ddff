// ServiceFork under the real engine: preview, up, no-op preview, replace on rename, refresh,
// destroy, secrets in state.
import { type EngineHarness, startEngine, tigercloud } from "../support/lab/harness";

jest.setTimeout(180_000);
let h: EngineHarness;
beforeAll(async () => {
  h = await startEngine();
});
afterAll(async () => {
  await h?.close();
});

test("fork lifecycle: preview only reads the source, up forks, second preview makes no request, destroy stops", async () => {
  const { ServiceFork } = tigercloud();
  const program = (name: string) => async () => {
    const fork = new ServiceFork("pr-fork", { sourceServiceId: h.ids.serviceId, forkStrategy: "NOW", name });
    return { serviceId: fork.serviceId, password: fork.initialPassword, host: fork.endpoint.apply((e) => e?.host) };
  };
  const s = await h.stack("fork", program("pr-1"));

  const preview = await s.preview();
  expect(preview.changes).toMatchObject({ create: 2 });
  // The source, and (the fork is named) the service list for a fork `up` would take over.
  expect(preview.requests.map((r) => `${r.method} ${r.operation}`)).toEqual(["GET getService", "GET listServices"]);

  const up = await s.up();
  const serviceId = up.outputs.serviceId?.value as string;
  expect(serviceId).toMatch(/^svc-/);
  expect(up.outputs.password?.secret).toBe(true);
  expect(h.sim.service(h.ids.projectId, serviceId)).toMatchObject({ name: "pr-1", status: "READY" });
  expect(up.requests.filter((r) => r.operation === "forkService")).toHaveLength(1);

  const again = await s.preview();
  expect(again.changes).toEqual({ same: 2 });
  expect(again.requests).toEqual([]);

  const state = s.rawState();
  const password = up.outputs.password?.value as string;
  expect(password.length).toBeGreaterThan(8);
  expect(state).not.toContain(password);
  expect(state).not.toContain(h.sim.apiKey);
  const exported = s.exportWithCli();
  expect(exported).toContain(serviceId);
  expect(exported).not.toContain(password);
  expect(exported).not.toContain(h.sim.apiKey);

  s.setProgram(program("pr-2"));
  const rename = await s.preview();
  expect(rename.changes).toMatchObject({ update: 1 }); // renamed in place, the fork and its data kept
  expect(rename.changes.replace ?? 0).toBe(0);

  await s.destroy();
  expect(h.sim.service(h.ids.projectId, serviceId)?.status).toBe("PAUSED");
});

test("a fork that does not become READY in time is still recorded, the next up finishes it, and destroy stops it", async () => {
  const { ServiceFork } = tigercloud();
  h.sim.delays = { ...h.sim.delays, forkConfiguringMs: 4000 };
  const s = await h.stack("slow", async () => {
    new ServiceFork("slow", { sourceServiceId: h.ids.serviceId, forkStrategy: "NOW", name: "slow", createTimeout: "1s" });
  });
  try {
    const err = await s.up().then(
      () => undefined,
      (e: Error) => e,
    );
    expect(String(err?.message)).toMatch(/Timed out after \d+ s waiting for service svc-\w+ to be READY; it is CONFIGURING/);
    const recorded = (await s.exportState()).resources?.find((r) => r.type.endsWith("ServiceFork"));
    expect(recorded?.id).toMatch(/^svc-/);
    expect(h.sim.services(h.ids.projectId).filter((x) => x.name === "slow")).toHaveLength(1);

    // The next up once the fork is READY: polled, not a fixed wait as long as the simulator's delay.
    const ready = Date.now() + 30_000;
    while (h.sim.service(h.ids.projectId, recorded!.id as string)?.status !== "READY") {
      if (Date.now() > ready) throw new Error(`fork ${recorded?.id} is not READY after 30 s`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const retry = await s.up();
    expect(retry.requests.map((r) => r.operation)).not.toContain("forkService");
    const after = (await s.exportState()).resources?.find((r) => r.type.endsWith("ServiceFork"));
    expect(after?.outputs?.status).toBe("READY");
    expect(h.sim.services(h.ids.projectId).filter((x) => x.name === "slow")).toHaveLength(1);
  } finally {
    h.sim.delays = { ...h.sim.delays, forkConfiguringMs: 0 };
  }
  await s.destroy();
  expect(h.sim.services(h.ids.projectId).find((x) => x.name === "slow")?.status).toBe("PAUSED");
});

test("a fork request that fails after sending is not retried, and the error says a fork may exist", async () => {
  const { ServiceFork } = tigercloud();
  const s = await h.stack("fork-500", async () => {
    new ServiceFork("f", { sourceServiceId: h.ids.serviceId, forkStrategy: "NOW", name: "maybe" });
  });
  h.sim.injectFault("forkService", { kind: "status", status: 503 }, 5);
  const err = await s.up().then(
    () => undefined,
    (e: Error) => e,
  );
  h.sim.clearFaults();
  expect(String(err?.message)).toMatch(/a fork may have been created/);
  expect(h.sim.requests("forkService")).toHaveLength(1);
});

test("changing only waiting controls, or the package version, updates state with no API call", async () => {
  const { ServiceFork } = tigercloud();
  const program = (createTimeout: string) => async () => {
    new ServiceFork("w", { sourceServiceId: h.ids.serviceId, forkStrategy: "NOW", name: "waits", createTimeout });
  };
  const s = await h.stack("waits", program("30m"));
  await s.up();

  s.setProgram(program("45m"));
  const preview = await s.preview();
  expect(preview.changes).toMatchObject({ update: 1 });
  const up = await s.up();
  expect(up.requests).toEqual([]);
  const fork = (await s.exportState()).resources?.find((r) => r.type.endsWith("ServiceFork"));
  expect(fork?.outputs?.createTimeout).toBe("45m");

  // A new release of the package: the serialized provider changes; the update calls nothing.
  const version = require("../../dist/provider/version.js") as { PACKAGE_VERSION: string };
  const real = version.PACKAGE_VERSION;
  version.PACKAGE_VERSION = `${real}-next`;
  try {
    expect((await s.preview()).changes).toMatchObject({ update: 1 });
    expect((await s.up()).requests).toEqual([]);
    expect(String((await s.exportState()).resources?.find((r) => r.type.endsWith("ServiceFork"))?.outputs?.__provider)).toContain(
      `${real}-next`,
    );
  } finally {
    version.PACKAGE_VERSION = real;
  }
  await s.destroy();
});

test("refresh: a fork deleted elsewhere leaves state; a failing API keeps it", async () => {
  const { ServiceFork } = tigercloud();
  const s = await h.stack("refresh", async () => {
    new ServiceFork("r", { sourceServiceId: h.ids.serviceId, forkStrategy: "NOW", name: "refresh-me" });
  });
  await s.up();
  const forkId = h.sim.services(h.ids.projectId).find((x) => x.name === "refresh-me")?.service_id as string;

  h.sim.injectFault("getService", { kind: "status", status: 503 }, 100);
  const err = await s.refresh().then(
    () => undefined,
    (e: Error) => e,
  );
  h.sim.clearFaults();
  expect(String(err?.message)).toMatch(/503/);
  expect((await s.exportState()).resources?.some((r) => r.id === forkId)).toBe(true);

  // Metrics change on every read but are not state: a refresh shows nothing to update.
  expect((await s.refresh()).changes).toEqual({ same: 2 });

  h.sim.outOfBand.deleteService(h.ids.projectId, forkId);
  const refresh = await s.refresh();
  expect(refresh.changes).toMatchObject({ delete: 1 });
  expect((await s.exportState()).resources?.some((r) => r.id === forkId)).toBe(false);
});
