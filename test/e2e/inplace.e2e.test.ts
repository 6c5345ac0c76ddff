// A fork changed in place where the API can (rename, resize, environment): never a new fork and
// its data copied afresh. Real engine, against the simulator.
import type { ServiceForkArgs } from "pulumi-tigercloud";
import { type EngineHarness, writes, startEngine, tigercloud } from "../support/lab/harness";

jest.setTimeout(300_000);
let h: EngineHarness;
beforeAll(async () => {
  h = await startEngine({ forkQueuedMs: 200, forkConfiguringMs: 200, resizeMs: 1500 });
});
afterAll(async () => {
  await h?.close();
});

const program = (args: Partial<ServiceForkArgs>) => async () => {
  const { ServiceFork } = tigercloud();
  const f = new ServiceFork("fork", {
    sourceServiceId: h.ids.serviceId,
    forkStrategy: "NOW",
    name: "pr-9",
    cpuMillis: 1000,
    memoryGbs: 4,
    environmentTag: "DEV", // declared: left unset, a tag changed elsewhere would be kept
    ...args,
  });
  return { id: f.serviceId, name: f.name, environment: f.environment, resources: f.resources };
};
const sim = (id: unknown) => h.sim.service(h.ids.projectId, id as string);

test("rename, resize and environment, one up each: previews as an update, makes the one call, keeps the fork", async () => {
  const s = await h.stack("one-each", program({}));
  const id = (await s.up()).outputs.id?.value;
  const steps: [Partial<ServiceForkArgs>, string, unknown][] = [
    [{ name: "pr-9-renamed" }, "renameService", { name: "pr-9-renamed" }],
    [{ name: "pr-9-renamed", cpuMillis: 2000, memoryGbs: 8 }, "resize", { cpu_millis: "2000", memory_gbs: "8" }],
    [{ name: "pr-9-renamed", cpuMillis: 2000, memoryGbs: 8, environmentTag: "PROD" }, "setEnvironment", { environment: "PROD" }],
  ];
  for (const [args, operation, body] of steps) {
    s.setProgram(program(args));
    const preview = await s.preview();
    expect(preview.changes).toMatchObject({ update: 1 });
    expect(preview.changes.replace ?? 0).toBe(0);
    const up = await s.up();
    expect(up.requests.filter((r) => r.method === "POST").map((r) => [r.operation, r.body])).toEqual([[operation, body]]);
    expect(up.outputs.id?.value).toBe(id);
  }
  expect(sim(id)).toMatchObject({ status: "READY", name: "pr-9-renamed", metadata: { environment: "PROD" } });
  expect(sim(id)?.resources[0]?.spec).toMatchObject({ cpu_millis: 2000, memory_gbs: 8 });
  const last = await s.up();
  expect(last.outputs).toMatchObject({ name: { value: "pr-9-renamed" }, environment: { value: "PROD" } });
  expect(last.outputs.resources?.value).toMatchObject([{ cpuMillis: 2000, memoryGbs: 8 }]);
  await s.stack.preview({ expectNoChanges: true });
  expect(h.sim.services(h.ids.projectId).filter((x) => x.forked_from?.service_id === h.ids.serviceId && x.status === "READY")).toHaveLength(
    1,
  );
  await s.destroy();
});

test("all three in one up, the resize refused with 400: state records the rename and the environment, the next up resizes", async () => {
  const s = await h.stack("all-three", program({}));
  const id = (await s.up()).outputs.id?.value;
  s.setProgram(program({ name: "pr-9-b", cpuMillis: 4000, memoryGbs: 16, environmentTag: "PROD" }));
  h.sim.injectFault("resize", {
    kind: "status",
    status: 400,
    body: JSON.stringify({ code: "INVALID_RESOURCES", message: "that size is not offered in this region" }),
    contentType: "application/json",
  });
  await expect(s.up()).rejects.toThrow(/that size is not offered in this region/);
  const recorded = (await s.exportState()).resources?.find((r) => r.type.endsWith("ServiceFork"))?.outputs;
  expect(recorded).toMatchObject({ name: "pr-9-b", environmentTag: "PROD", cpuMillis: "1000", memoryGbs: "4" });
  expect(sim(id)).toMatchObject({ name: "pr-9-b", metadata: { environment: "PROD" } });

  const next = await s.up();
  expect(writes(next.requests)).toEqual(["resize"]);
  expect(sim(id)?.resources[0]?.spec).toMatchObject({ cpu_millis: 4000, memory_gbs: 16 });
  await s.stack.preview({ expectNoChanges: true });
  await s.destroy();
});

test("renamed and resized in the console: refresh and preview show the update; up puts back what the program declares", async () => {
  const s = await h.stack("console", program({}));
  const id = (await s.up()).outputs.id?.value as string;
  h.sim.outOfBand.renameService(h.ids.projectId, id, "someone-else");
  h.sim.outOfBand.resize(h.ids.projectId, id, 500, 2);
  h.sim.outOfBand.setEnvironment(h.ids.projectId, id, "PROD");
  await expect(s.stack.refresh({ expectNoChanges: true })).rejects.toThrow(/no changes were expected/);
  const preview = await s.stack.preview({ diff: true });
  expect(preview.changeSummary).toMatchObject({ update: 1 });
  expect(preview.stdout).toMatch(/~ name\s*:\s*"someone-else" => "pr-9"/);
  const up = await s.up();
  expect(writes(up.requests)).toEqual(["renameService", "resize", "setEnvironment"]);
  expect(sim(id)).toMatchObject({ name: "pr-9", metadata: { environment: "DEV" } });
  expect(sim(id)?.resources[0]?.spec).toMatchObject({ cpu_millis: 1000, memory_gbs: 4 });
  await s.stack.refresh({ expectNoChanges: true });
  await s.destroy();
});

test("a strategy change, or a move to shared size, still replaces, and the plan says why", async () => {
  const s = await h.stack("replaces", program({}));
  const id = (await s.up()).outputs.id?.value;
  s.setProgram(program({ forkStrategy: "LAST_SNAPSHOT" }));
  const strategy = await s.stack.preview({ diff: true });
  expect(strategy.changeSummary).toMatchObject({ replace: 1 });
  expect(strategy.stdout).toMatch(/forkStrategy\s*:\s*"NOW" => "LAST_SNAPSHOT"/);

  s.setProgram(program({ cpuMillis: "shared", memoryGbs: "shared" }));
  const shared = await s.stack.preview({ diff: true });
  expect(shared.changeSummary).toMatchObject({ replace: 1 });
  // The reason reaches the person's terminal (the engine passes the provider's diff-time lines to stderr).
  expect(shared.stdout + shared.stderr).toContain('resize cannot move between "shared" and a size, so this fork will be replaced');
  const up = await s.up();
  expect(writes(up.requests)).toEqual(["stop", "forkService"]); // same name and source: the old one stops first
  expect(up.outputs.id?.value).not.toBe(id);
  await s.destroy();
});
