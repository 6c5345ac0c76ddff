// adoptServiceId: a fork made elsewhere taken under management (Pulumi's `import` cannot serve a
// dynamic provider). Real engine, against the simulator; the pr-fork example's own program.
import * as path from "path";
import { type EngineHarness, forkThroughApi as forkThroughApiOf, writes, startEngine, tigercloud } from "../support/lab/harness";

jest.setTimeout(300_000);
let h: EngineHarness;
beforeAll(async () => {
  h = await startEngine();
});
afterAll(async () => {
  await h?.close();
});

// The size examples/pr-fork declares: an adopted fork of another size would (rightly) preview a resize.
const forkThroughApi = (parent: string, name: string) => forkThroughApiOf(h, parent, name, { cpu_millis: "1000", memory_gbs: "4" });

test('examples/pr-fork with adoptServiceId: no forkService, the fork in state, no change after; another ID replaces (the old fork deleted: the example declares onDestroy "delete"); destroy deletes it', async () => {
  // The name the example gives PR 77 of acme/shop: the fork to adopt must have it.
  const made = await forkThroughApi(h.ids.serviceId, "pr-77.acme.shop");
  // The example's program, as `pulumi up` in its directory runs it.
  const program = require(path.join(__dirname, "..", "..", "examples", "pr-fork", "index.ts")) as () => Promise<Record<string, unknown>>;
  const s = await h.stack("adopt", program);
  await s.stack.setAllConfig({
    "e2e:sourceServiceId": { value: h.ids.serviceId },
    "e2e:prNumber": { value: "77" },
    "e2e:repository": { value: "acme/shop" },
    "e2e:adoptServiceId": { value: made },
  });
  const up = await s.up();
  expect(writes(up.requests)).toEqual(["updatePassword"]); // no forkService: taken as it is, its lost password reset
  // The example's DATABASE_URL carries the new password, the one the service now has.
  const password = h.sim.service(h.ids.projectId, made)?.initial_password as string;
  expect(up.outputs.databaseUrl).toMatchObject({ secret: true });
  expect(up.outputs.databaseUrl?.value).toContain(`:${password}@`);
  expect(up.stdout).not.toContain(password);
  expect(s.rawState()).not.toContain(password);
  expect(up.outputs.serviceId?.value).toBe(made);
  expect(up.stdout).toContain(`taking fork ${made} ("pr-77.acme.shop", READY) under management (adoptServiceId)`);
  const state = (await s.exportState()).resources?.find((r) => r.type.endsWith("ServiceFork"));
  expect(state?.id).toBe(made);
  expect(state?.outputs?.adopted).toMatchObject({ reason: "taken under management with adoptServiceId" });
  await s.stack.preview({ expectNoChanges: true });

  // Removing adoptServiceId changes nothing.
  await s.stack.removeConfig("e2e:adoptServiceId");
  await s.stack.preview({ expectNoChanges: true });

  // Another fork's ID: replaced, the old one deleted (the example's onDestroy), the other one adopted.
  const other = await forkThroughApi(h.ids.serviceId, "pr-77.acme.shop");
  h.sim.outOfBand.renameService(h.ids.projectId, made, "pr-77.acme.shop-old"); // one running fork per name
  await s.stack.setConfig("e2e:adoptServiceId", { value: other });
  const replaced = await s.up();
  expect(writes(replaced.requests).sort()).toEqual(["deleteService", "updatePassword"]); // the other fork adopted, its password reset
  expect(replaced.outputs.serviceId?.value).toBe(other);
  expect(h.sim.service(h.ids.projectId, made)?.status).toBe("DELETED");

  const destroy = await s.destroy();
  expect(writes(destroy.requests)).toEqual(["deleteService"]);
  expect(h.sim.service(h.ids.projectId, other)?.status).toBe("DELETED");
});

test.each([
  ["the source itself", async () => h.ids.serviceId, /is not a fork \(it has no forked_from\)/],
  [
    "a fork of another service",
    async () => forkThroughApi(await forkThroughApi(h.ids.serviceId, "middle"), "grandchild"),
    /is a fork of svc-\w+, not of sourceServiceId/,
  ],
  [
    "a PAUSED fork",
    async () => {
      const id = await forkThroughApi(h.ids.serviceId, "sleeping");
      h.sim.outOfBand.setStatus(h.ids.projectId, id, "PAUSED");
      return id;
    },
    /is PAUSED: only a running fork can be adopted/,
  ],
  ["an unknown ID", async () => "svc-nosuch", /svc-nosuch/],
])("adopting %s fails with its reason and records nothing", async (_what, target, reason) => {
  const { ServiceFork } = tigercloud();
  const adoptServiceId = await target();
  const s = await h.stack(`refuse-${adoptServiceId}`, async () => {
    new ServiceFork("f", { sourceServiceId: h.ids.serviceId, forkStrategy: "NOW", adoptServiceId });
  });
  await expect(s.up()).rejects.toThrow(reason);
  expect(h.sim.requests("forkService")).toEqual([]);
  expect((await s.exportState()).resources?.filter((r) => r.type.endsWith("ServiceFork"))).toEqual([]);
});

test.each([true, false])(
  "a replacement that keeps the name and source (forkStrategy changed, adoptExisting %s): a new READY fork in state, the old one stopped, one fork of that name running",
  async (adoptExisting) => {
    const { ServiceFork } = tigercloud();
    const name = `replace-${adoptExisting}`;
    const program = (forkStrategy: "NOW" | "LAST_SNAPSHOT") => async () => {
      const f = new ServiceFork("f", { sourceServiceId: h.ids.serviceId, forkStrategy, name, adoptExisting });
      return { id: f.serviceId, status: f.status };
    };
    const s = await h.stack(name, program("NOW"));
    const old = (await s.up()).outputs.id?.value;
    s.setProgram(program("LAST_SNAPSHOT"));
    const up = await s.up();
    const now = up.outputs.id?.value;
    expect(now).not.toBe(old);
    expect(up.outputs.status?.value).toBe("READY");
    expect(h.sim.service(h.ids.projectId, old as string)?.status).toBe("PAUSED");
    const running = h.sim.services(h.ids.projectId).filter((x) => x.name === name && x.status === "READY");
    expect(running.map((x) => x.service_id)).toEqual([now]);
    await s.destroy();
  },
);

test('`pulumi up --replace` of a named fork (onDestroy "delete"): its replacement takes the running fork over and the old one\'s delete leaves it; with deleteBeforeReplace, a new fork', async () => {
  const { ServiceFork } = tigercloud();
  const program = (deleteBeforeReplace: boolean) => async () => {
    const f = new ServiceFork(
      "f",
      { sourceServiceId: h.ids.serviceId, forkStrategy: "NOW", name: "forced", onDestroy: "delete" },
      { deleteBeforeReplace },
    );
    return { id: f.serviceId, status: f.status };
  };
  const s = await h.stack("forced", program(false));
  const made = (await s.up()).outputs.id?.value as string;
  const urn = (await s.exportState()).resources?.find((r) => r.type.endsWith("ServiceFork"))?.urn as string;
  // The engine forces it without asking the provider's diff: the replacement is made before the delete.
  const replaced = await s.up({ replace: [urn] });
  expect(replaced.outputs.id?.value).toBe(made);
  expect(writes(replaced.requests)).toEqual(["updatePassword"]); // taken over, its password reset; no stop, no delete
  expect(h.sim.service(h.ids.projectId, made)?.status).toBe("READY");
  expect(replaced.stdout).toContain(`fork ${made} was taken over by this resource's replacement`);
  await s.stack.preview({ expectNoChanges: true });

  // Deleted first, then a new fork: what the message offers.
  s.setProgram(program(true));
  await s.up();
  const renewed = await s.up({ replace: [urn] });
  const now = renewed.outputs.id?.value as string;
  expect(now).not.toBe(made);
  expect(h.sim.service(h.ids.projectId, made)?.status).toBe("DELETED");
  expect(h.sim.service(h.ids.projectId, now)?.status).toBe("READY");
  await s.destroy();
});

// What docs/refactoring-and-adoption.md says of Pulumi's own import, held on each SDK a lane runs: should an SDK make it
// work for dynamic resources, this fails and its advice is to be changed.
test("Pulumi's import resource option still fails for a dynamic resource, with the message the README quotes, before any request of ours", async () => {
  const { ServiceFork } = tigercloud();
  const made = await forkThroughApi(h.ids.serviceId, "pr-78");
  const before = h.sim.requests().length;
  const s = await h.stack("import-option", async () => {
    new ServiceFork("f", { sourceServiceId: h.ids.serviceId, forkStrategy: "NOW", name: "pr-78" }, { import: made });
  });
  await expect(s.up()).rejects.toThrow(/code must be a string, not undefined/);
  expect(h.sim.requests().slice(before)).toEqual([]);
  expect((await s.exportState()).resources?.filter((r) => r.type.endsWith("ServiceFork"))).toEqual([]);
  expect(h.sim.service(h.ids.projectId, made)?.status).toBe("READY");
});
