// Refactoring a program under the real engine: a resource renamed or moved into, out of or between
// components without an alias is a create of the new URN and a delete of the old, and the delete
// must not undo what the new one declares.
import type { UpOptions } from "@pulumi/pulumi/automation";
import type { LoggedRequest } from "../../simulator";
import { type EngineHarness, writes, type Scenario, startEngine, tigercloud } from "../support/lab/harness";

jest.setTimeout(300_000);
let h: EngineHarness;
beforeAll(async () => {
  h = await startEngine();
});
afterAll(async () => {
  await h?.close();
});

/** `up` with options the harness's `up` does not take; returns what it printed and requested. */
async function upWith(s: Scenario, options: UpOptions): Promise<{ stdout: string; requests: LoggedRequest[] }> {
  h.sim.clearLog();
  const r = await s.stack.up(options);
  return { stdout: r.stdout, requests: h.sim.requests() };
}
const haOfParent = () => h.sim.service(h.ids.projectId, h.ids.serviceId)?.ha_replicas;
const failureOf = async (op: () => Promise<unknown>): Promise<string> => {
  try {
    await op();
  } catch (err) {
    return String((err as Error).message);
  }
  throw new Error("expected the operation to fail");
};

test("ServiceHA renamed without an alias: the old one's delete leaves the HA the new one declares (default and --parallel 1)", async () => {
  const { ServiceHA } = tigercloud();
  const program = (name: string, aliases?: string[]) => async () => {
    new ServiceHA(name, { serviceId: h.ids.serviceId, replicaCount: 1 }, aliases ? { aliases: aliases.map((a) => ({ name: a })) } : {});
  };
  const s = await h.stack("ha-rename", program("ha-a"));
  await s.up();
  expect(haOfParent()).toEqual({ replica_count: 1, sync_replica_count: 0 });

  s.setProgram(program("ha-b"));
  const renamed = await s.up();
  expect(writes(renamed.requests)).toEqual(["setHA"]); // the new one's, to 1; no reset to 0
  expect(renamed.requests.find((r) => r.operation === "setHA")?.body).toEqual({ replica_count: 1 });
  expect(renamed.stdout).toContain('HA of service svc-parent1 is now declared by ServiceHA "ha-b"; leaving it at 1 replica(s)');
  expect(haOfParent()).toEqual({ replica_count: 1, sync_replica_count: 0 });
  await s.stack.refresh({ expectNoChanges: true });

  // The same with one step at a time.
  s.setProgram(program("ha-c"));
  const serial = await upWith(s, { parallel: 1 });
  expect(writes(serial.requests)).toEqual(["setHA"]);
  expect(haOfParent()).toEqual({ replica_count: 1, sync_replica_count: 0 });

  // With an alias a rename is neither a create nor a delete: no HA request at all.
  s.setProgram(program("ha-d", ["ha-c"]));
  const aliased = await upWith(s, {});
  expect(aliased.requests.filter((r) => r.operation === "setHA")).toEqual([]);
  expect(aliased.stdout).not.toMatch(/created|deleted/);

  // Removing the only ServiceHA of a service still resets it, as documented.
  s.setProgram(async () => {});
  const removed = await s.up();
  expect(removed.requests.filter((r) => r.operation === "setHA").map((r) => r.body)).toEqual([{ replica_count: 0, sync_replica_count: 0 }]);
  expect(haOfParent()).toEqual({ replica_count: 0, sync_replica_count: 0 });
});

test("two ServiceHA of one service: different counts fail naming both; the same counts warn, and removing one keeps the HA", async () => {
  const { ServiceHA } = tigercloud();
  const two = (a: number, b: number) => async () => {
    new ServiceHA("ha-x", { serviceId: h.ids.serviceId, replicaCount: a });
    new ServiceHA("ha-y", { serviceId: h.ids.serviceId, replicaCount: b });
  };
  const s = await h.stack("ha-two", two(1, 2));
  const previewFailure = await failureOf(() => s.preview());
  expect(previewFailure).toMatch(/ServiceHA "ha-[xy]" and ServiceHA "ha-[xy]" both set the HA of service svc-parent1/);
  expect(previewFailure).toContain("Keep one ServiceHA per service.");
  const upFailure = await failureOf(() => s.up());
  expect(upFailure).toMatch(/ServiceHA "ha-[xy]" and ServiceHA "ha-[xy]" both set the HA of service svc-parent1/);
  // The first to be checked goes ahead; the second fails before any request of its own.
  const [, refused, applied] = /with replicaCount (\d) and (\d)/.exec(upFailure) ?? [];
  expect(new Set([refused, applied])).toEqual(new Set(["1", "2"]));
  expect(haOfParent()?.replica_count).toBe(Number(applied));
  await s.destroy();

  s.setProgram(two(2, 2));
  const both = await s.up();
  expect(both.stdout).toMatch(
    /warning: ServiceHA "ha-[xy]" and ServiceHA "ha-[xy]" both set the HA of service svc-parent1, to the same counts/,
  );
  expect(haOfParent()?.replica_count).toBe(2);

  s.setProgram(async () => {
    new ServiceHA("ha-x", { serviceId: h.ids.serviceId, replicaCount: 2 });
  });
  const oneLeft = await s.up();
  expect(writes(oneLeft.requests)).toEqual([]);
  expect(oneLeft.stdout).toContain('HA of service svc-parent1 is now declared by ServiceHA "ha-x"; leaving it at 2 replica(s)');
  expect(haOfParent()?.replica_count).toBe(2);
  await s.destroy();
  expect(haOfParent()?.replica_count).toBe(0);
});

test("pulumi up --target: the delete spares HA only when the new declaration is targeted too (the engine checks only targets)", async () => {
  const { ServiceHA } = tigercloud();
  const program =
    (...names: string[]) =>
    async () => {
      for (const n of names) new ServiceHA(n, { serviceId: h.ids.serviceId, replicaCount: 1 });
    };
  const urn = (name: string) => `urn:pulumi:ha-target::e2e::pulumi-nodejs:dynamic/tigercloud:ServiceHA::${name}`;
  const s = await h.stack("ha-target", program("ha-old", "ha-new"));
  await s.up();

  // Both targeted: the new one is checked, so the old one's delete sees it.
  s.setProgram(program("ha-new"));
  const both = await upWith(s, { target: [urn("ha-old"), urn("ha-new")] });
  expect(writes(both.requests)).toEqual([]);
  expect(haOfParent()?.replica_count).toBe(1);

  // Only the old one targeted: the engine does not check the new one, so nothing tells the
  // provider it exists, and the delete resets HA (the README says so). `up --refresh` repairs it.
  s.setProgram(program("ha-old", "ha-new"));
  await s.up();
  s.setProgram(program("ha-new"));
  const onlyOld = await upWith(s, { target: [urn("ha-old")] });
  expect(onlyOld.requests.filter((r) => r.operation === "setHA").map((r) => r.body)).toEqual([{ replica_count: 0, sync_replica_count: 0 }]);
  expect(haOfParent()?.replica_count).toBe(0);
  const repaired = await upWith(s, { refresh: true });
  expect(repaired.requests.filter((r) => r.operation === "setHA").map((r) => r.body)).toEqual([{ replica_count: 1 }]);
  expect(haOfParent()?.replica_count).toBe(1);
  await s.destroy();
});

test("ServiceFork renamed without an alias: the new resource adopts the running fork and the old one's delete leaves it running", async () => {
  const { ServiceFork } = tigercloud();
  const program = (name: string) => async () => {
    const f = new ServiceFork(name, { sourceServiceId: h.ids.serviceId, forkStrategy: "NOW", name: "pr-7" });
    return { id: f.serviceId };
  };
  const s = await h.stack("fork-rename", program("fork-a"));
  const first = await s.up();
  const forkId = first.outputs.id?.value as string;

  s.setProgram(program("fork-b"));
  const renamed = await s.up();
  expect(writes(renamed.requests)).toEqual(["updatePassword"]); // neither forkService nor stop; the adopted fork's password reset
  expect(renamed.outputs.id?.value).toBe(forkId);
  expect(renamed.stdout).toContain(`fork ${forkId} is held by ServiceFork "fork-b" of this program, or will be; leaving it as it is`);
  expect(h.sim.service(h.ids.projectId, forkId)?.status).toBe("READY");
  const running = h.sim.services(h.ids.projectId).filter((x) => x.name === "pr-7" && x.status === "READY");
  expect(running.map((x) => x.service_id)).toEqual([forkId]);

  // Two resources declaring one identity in one program would be one fork: refused at preview.
  s.setProgram(async () => {
    new ServiceFork("fork-b", { sourceServiceId: h.ids.serviceId, forkStrategy: "NOW", name: "pr-7" });
    new ServiceFork("fork-c", { sourceServiceId: h.ids.serviceId, forkStrategy: "NOW", name: "pr-7" });
  });
  const failure = await failureOf(() => s.preview());
  expect(failure).toMatch(/ServiceFork "fork-[bc]" and ServiceFork "fork-[bc]" both declare a fork named "pr-7" of service svc-parent1/);

  s.setProgram(program("fork-b"));
  const destroy = await s.destroy();
  expect(writes(destroy.requests)).toEqual(["stop"]);
  expect(h.sim.service(h.ids.projectId, forkId)?.status).toBe("PAUSED");
});

test("moves without an alias (into a component, between components, out of one, renamed and moved at once): HA stays, the fork runs on, preview warns of the takeover", async () => {
  const { ServiceFork, ServiceHA } = tigercloud();
  const pulumi = await import("@pulumi/pulumi");
  // Two kinds of component: a move between them changes the URN, though every name stays.
  class Component extends pulumi.ComponentResource {}
  type Layout = { component?: string; ha: string; fork: string };
  const program = (layout: Layout) => async () => {
    const parent = layout.component ? { parent: new Component(layout.component, "pr-9", {}) } : {};
    new ServiceHA(layout.ha, { serviceId: h.ids.serviceId, replicaCount: 1 }, parent);
    const f = new ServiceFork(layout.fork, { sourceServiceId: h.ids.serviceId, forkStrategy: "NOW", name: "pr-9" }, parent);
    return { id: f.serviceId, uri: f.connectionUri };
  };
  const s = await h.stack("moves", program({ ha: "prod-ha", fork: "db" }));
  const first = await s.up();
  const forkId = first.outputs.id?.value as string;
  expect(haOfParent()).toEqual({ replica_count: 1, sync_replica_count: 0 });

  const moves: [string, Layout, string][] = [
    ["into a component", { component: "acme:index:PreviewEnv", ha: "prod-ha", fork: "db" }, '"db" (in a acme:index:PreviewEnv)'],
    ["between components", { component: "acme:index:TeamEnv", ha: "prod-ha", fork: "db" }, '"db" (in a acme:index:TeamEnv)'],
    ["out of a component", { ha: "prod-ha", fork: "db" }, '"db"'],
    [
      "renamed and into a component at once",
      { component: "acme:index:PreviewEnv", ha: "prod-ha-2", fork: "db-2" },
      '"db-2" (in a acme:index:PreviewEnv)',
    ],
  ];
  let uri = first.outputs.uri?.value;
  for (const [move, layout, holder] of moves) {
    s.setProgram(program(layout));
    const preview = await s.preview();
    expect([move, preview.stdout]).not.toEqual([move, expect.stringMatching(/replace/)]);
    // The plan says the fork will be taken over, that its password will be reset, and how an alias avoids it.
    expect(preview.stdout).toContain(`will take over running fork ${forkId} ("pr-9", READY, a fork of service ${h.ids.serviceId})`);
    expect(preview.stdout).toContain('its password will be reset (passwordOnAdopt: "reset")');
    expect(preview.stdout).toContain("give the resource an alias");
    expect(writes(preview.requests)).toEqual([]);

    const moved = await s.up();
    // The new ServiceHA sets the same counts; the old one's delete resets nothing; no fork, no stop.
    expect([move, writes(moved.requests)]).toEqual([move, expect.arrayContaining(["setHA", "updatePassword"])]);
    expect(writes(moved.requests).sort()).toEqual(["setHA", "updatePassword"]);
    expect(moved.requests.find((r) => r.operation === "setHA")?.body).toEqual({ replica_count: 1 });
    expect(moved.stdout).toContain(`fork ${forkId} is held by ServiceFork ${holder} of this program, or will be; leaving it as it is`);
    expect(haOfParent()).toEqual({ replica_count: 1, sync_replica_count: 0 });
    expect(moved.outputs.id?.value).toBe(forkId);
    expect(h.sim.service(h.ids.projectId, forkId)?.status).toBe("READY");
    // The warned-of reset: the connection string changes with the new password.
    expect(moved.outputs.uri?.value).not.toEqual(uri);
    uri = moved.outputs.uri?.value;
    await s.stack.refresh({ expectNoChanges: true });
  }
  const running = h.sim.services(h.ids.projectId).filter((x) => x.name === "pr-9" && x.status === "READY");
  expect(running.map((x) => x.service_id)).toEqual([forkId]);

  // With an alias a move is neither a create nor a delete: no request, no warning, the password kept.
  s.setProgram(async () => {
    const parent = new Component("acme:index:TeamEnv", "pr-9", {});
    const aliases = [{ parent: "urn:pulumi:moves::e2e::acme:index:PreviewEnv::pr-9" }];
    new ServiceHA("prod-ha-2", { serviceId: h.ids.serviceId, replicaCount: 1 }, { parent, aliases });
    const f = new ServiceFork("db-2", { sourceServiceId: h.ids.serviceId, forkStrategy: "NOW", name: "pr-9" }, { parent, aliases });
    return { id: f.serviceId, uri: f.connectionUri };
  });
  const aliasedPreview = await s.preview();
  expect(aliasedPreview.stdout).not.toContain("will take over");
  const aliased = await s.up();
  expect(writes(aliased.requests)).toEqual([]);
  expect(aliased.outputs.uri?.value).toEqual(uri);

  const destroyed = await s.destroy();
  expect(writes(destroyed.requests).sort()).toEqual(["setHA", "stop"]);
  expect(haOfParent()).toEqual({ replica_count: 0, sync_replica_count: 0 });
});

test("VpcName renamed without an alias: the new one names the VPC again, the old one's delete calls nothing", async () => {
  const { VpcName } = tigercloud();
  const program = (name: string) => async () => {
    new VpcName(name, { vpcId: h.ids.vpcId, name: "shared-vpc" });
  };
  const s = await h.stack("vpc-rename", program("vpc-a"));
  await s.up();
  s.setProgram(program("vpc-b"));
  const renamed = await s.up();
  expect(writes(renamed.requests)).toEqual(["renameVpc"]);
  expect(h.sim.vpc(h.ids.projectId, h.ids.vpcId)?.name).toBe("shared-vpc");
  await s.destroy();
});

test('onDestroy "delete": a rename without an alias keeps the fork; a replacement deletes the old one first, as preview warns; destroy deletes', async () => {
  const { ServiceFork } = tigercloud();
  const program =
    (name: string, forkStrategy: "NOW" | "LAST_SNAPSHOT" = "NOW") =>
    async () => {
      const f = new ServiceFork(name, { sourceServiceId: h.ids.serviceId, forkStrategy, name: "pr-9", onDestroy: "delete" });
      return { id: f.serviceId };
    };
  const statusOf = (id: unknown) => h.sim.service(h.ids.projectId, String(id))?.status;
  const deletes = (requests: LoggedRequest[]) => requests.filter((r) => r.method === "DELETE");
  const s = await h.stack("fork-delete", program("del-a"));
  const forkId = (await s.up()).outputs.id?.value;

  s.setProgram(program("del-b"));
  const renamed = await s.up();
  expect(deletes(renamed.requests)).toEqual([]);
  expect(renamed.outputs.id?.value).toBe(forkId);
  expect(statusOf(forkId)).toBe("READY");

  // A change that needs a new fork, the name and source kept: the old fork is deleted first.
  s.setProgram(program("del-b", "LAST_SNAPSHOT"));
  const preview = await s.preview();
  expect(preview.stdout).toContain(
    `its fork ${String(forkId)} will be DELETED with its data (onDestroy: "delete"), before the new fork is made`,
  );
  expect(deletes(preview.requests)).toEqual([]);
  const replaced = await s.up();
  const newId = replaced.outputs.id?.value;
  expect(newId).not.toBe(forkId);
  expect(replaced.requests.map((r) => r.operation).filter((op) => op === "deleteService" || op === "forkService")).toEqual([
    "deleteService",
    "forkService",
  ]);
  expect(statusOf(forkId)).toBe("DELETED");
  expect(statusOf(newId)).toBe("READY");

  const destroyed = await s.destroy();
  expect(deletes(destroyed.requests).map((r) => r.path)).toEqual([`/projects/${h.ids.projectId}/services/${String(newId)}`]);
  expect(statusOf(newId)).toBe("DELETED");
  expect(destroyed.stdout).toContain(`deleting fork ${String(newId)} (onDestroy: "delete": the fork and its data go for good)`);
});
