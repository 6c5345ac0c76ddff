// ServiceFork under the real engine: preview, up, no-op preview, replace on rename, refresh,
// destroy, secrets in state.
import { type EngineHarness, startEngine, tigercloud } from "./harness";

jest.setTimeout(180_000);
let h: EngineHarness;
beforeAll(async () => { h = await startEngine(); });
afterAll(async () => { await h?.close(); });

test("fork lifecycle: preview makes no API call, up forks, second preview is empty, destroy stops", async () => {
  const { ServiceFork } = tigercloud();
  const program = (name: string) => async () => {
    const fork = new ServiceFork("pr-fork", { sourceServiceId: h.ids.serviceId, forkStrategy: "NOW", name });
    return { serviceId: fork.serviceId, password: fork.initialPassword, host: fork.endpoint.apply((e) => e?.host) };
  };
  const s = await h.stack("fork", program("pr-1"));

  const preview = await s.preview();
  expect(preview.changes).toMatchObject({ create: 2 });
  expect(preview.requests).toEqual([]);

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

  s.setProgram(program("pr-2"));
  const rename = await s.preview();
  expect(rename.changes).toMatchObject({ replace: 1 });

  await s.destroy();
  expect(h.sim.service(h.ids.projectId, serviceId)?.status).toBe("PAUSED");
});
