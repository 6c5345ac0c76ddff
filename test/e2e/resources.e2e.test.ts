// The three resources together under the real engine, against the simulator.
import * as pulumi from "@pulumi/pulumi";
import { type EngineHarness, startEngine, tigercloud } from "../support/lab/harness";

jest.setTimeout(240_000);
let h: EngineHarness;
beforeAll(async () => {
  h = await startEngine();
});
afterAll(async () => {
  await h?.close();
});

test("HA on a fork from the same program: create, change counts in place, out-of-band drift, destroy resets HA then stops", async () => {
  const { ServiceFork, ServiceHA } = tigercloud();
  const program = (replicaCount: number, syncReplicaCount?: number) => async () => {
    const fork = new ServiceFork("ha-fork", { sourceServiceId: h.ids.serviceId, forkStrategy: "LAST_SNAPSHOT", name: "ha-fork" });
    const ha = new ServiceHA("ha", {
      serviceId: fork.serviceId,
      replicaCount,
      ...(syncReplicaCount === undefined ? {} : { syncReplicaCount }),
    });
    return { forkId: fork.serviceId, replicas: ha.replicaCount, sync: ha.syncReplicaCount };
  };
  const s = await h.stack("ha", program(1, 0));

  const preview = await s.preview();
  expect(preview.changes).toMatchObject({ create: 3 });
  // Check verifies the fork's source, and lists the services for a running fork with its name
  // that `up` would take over; the HA target (the fork's ID) is not known yet.
  expect(preview.requests.map((r) => `${r.method} ${r.path}`)).toEqual([
    `GET /projects/${h.ids.projectId}/services/${h.ids.serviceId}`,
    `GET /projects/${h.ids.projectId}/services`,
  ]);

  const up = await s.up();
  const forkId = up.outputs.forkId?.value as string;
  expect(up.outputs.replicas?.value).toBe(1);
  expect(h.sim.service(h.ids.projectId, forkId)?.ha_replicas).toEqual({ replica_count: 1, sync_replica_count: 0 });
  // The HA change happened after the fork was ready: setHA comes after the fork's READY read.
  const ops = up.requests.map((r) => r.operation);
  expect(ops.indexOf("setHA")).toBeGreaterThan(ops.indexOf("forkService"));

  expect((await s.preview()).changes).toEqual({ same: 3 });

  s.setProgram(program(2, 1));
  const change = await s.preview();
  expect(change.changes).toMatchObject({ update: 1, same: 2 });
  const changed = await s.up();
  expect(changed.requests.filter((r) => r.operation === "setHA").map((r) => r.body)).toEqual([{ replica_count: 2, sync_replica_count: 1 }]);
  expect(changed.requests.map((r) => r.operation)).not.toContain("forkService");
  expect(h.sim.service(h.ids.projectId, forkId)?.ha_replicas).toEqual({ replica_count: 2, sync_replica_count: 1 });

  // Down to 1 replica with the synchronous one undeclared: setHA would answer 400, so preview fails first.
  s.setProgram(program(1));
  const refused = await s.preview().then(
    () => undefined,
    (e: Error) => e,
  );
  expect(String(refused?.message)).toMatch(
    /replicaCount 1 would leave its 1 synchronous replica\(s\).*Declare syncReplicaCount: 0 as well/,
  );
  expect(h.sim.requests().filter((r) => r.method === "POST")).toEqual([]);
  s.setProgram(program(2, 1));

  // Someone lowers HA in the console: refresh sees it, the next up puts it back.
  h.sim.outOfBand.setHA(h.ids.projectId, forkId, 1, 0);
  const refresh = await s.refresh();
  expect(refresh.changes).toMatchObject({ update: 1 });
  const repaired = await s.up();
  expect(repaired.requests.filter((r) => r.operation === "setHA")).toHaveLength(1);
  expect(h.sim.service(h.ids.projectId, forkId)?.ha_replicas).toEqual({ replica_count: 2, sync_replica_count: 1 });

  const destroy = await s.destroy();
  const destroyOps = destroy.requests.filter((r) => r.method === "POST").map((r) => [r.operation, r.body]);
  expect(destroyOps).toEqual([
    ["setHA", { replica_count: 0, sync_replica_count: 0 }],
    ["stop", undefined],
  ]);
  expect(h.sim.service(h.ids.projectId, forkId)).toMatchObject({
    status: "PAUSED",
    ha_replicas: { replica_count: 0, sync_replica_count: 0 },
  });
});

test("ServiceHA on a service the program does not own: destroy removes HA and never stops it", async () => {
  const { ServiceHA } = tigercloud();
  const s = await h.stack("ha-parent", async () => {
    new ServiceHA("parent-ha", { serviceId: h.ids.serviceId, replicaCount: 2 });
  });
  await s.up();
  expect(h.sim.service(h.ids.projectId, h.ids.serviceId)?.ha_replicas.replica_count).toBe(2);
  const destroy = await s.destroy();
  expect(destroy.requests.map((r) => r.operation)).not.toContain("stop");
  expect(h.sim.service(h.ids.projectId, h.ids.serviceId)).toMatchObject({ status: "READY", ha_replicas: { replica_count: 0 } });
});

test("VpcName: rename previews as an update; an out-of-band rename shows on refresh and up puts the name back; destroy calls nothing", async () => {
  const { VpcName } = tigercloud();
  const { projectId, vpcId } = h.ids;
  const program = (name: string) => async () => {
    const vpc = new VpcName("vpc", { vpcId, name });
    return { name: vpc.name, cidr: vpc.cidr };
  };
  const s = await h.stack("vpc", program("payments-vpc"));
  expect((await s.preview()).requests.map((r) => r.operation)).toEqual(["getVpc"]); // check verifies the VPC
  const up = await s.up();
  expect(up.outputs).toMatchObject({ name: { value: "payments-vpc" }, cidr: { value: "10.0.0.0/16" } });
  // up runs check again in its own provider process: one read, then the rename.
  expect(up.requests.map((r) => r.operation)).toEqual(["getVpc", "renameVpc", "getVpc"]);
  const unchanged = await s.preview();
  expect(unchanged.changes).toEqual({ same: 2 });
  expect(unchanged.requests).toEqual([]);

  s.setProgram(program("payments-vpc-2"));
  const rename = await s.preview();
  expect(rename.changes).toMatchObject({ update: 1 });
  expect(rename.requests).toEqual([]); // an update in place refers to the same VPC: not read again
  await s.up();
  expect(h.sim.vpc(projectId, vpcId)?.name).toBe("payments-vpc-2");

  h.sim.outOfBand.renameVpc(projectId, vpcId, "renamed-in-console");
  const refresh = await s.refresh();
  expect(refresh.changes).toMatchObject({ update: 1 });
  const state = await s.exportState();
  expect(state.resources?.find((r) => r.type.endsWith("VpcName"))?.outputs?.name).toBe("renamed-in-console");
  expect((await s.preview()).changes).toMatchObject({ update: 1 });
  await s.up();
  expect(h.sim.vpc(projectId, vpcId)?.name).toBe("payments-vpc-2");

  const destroy = await s.destroy();
  expect(destroy.requests).toEqual([]);
  expect(h.sim.vpc(projectId, vpcId)?.name).toBe("payments-vpc-2");
});

test.each([
  ["ServiceFork", [/targetTime is required when forkStrategy is PITR/, /name must be 1 to 128 characters/]],
  ["ServiceHA", [/syncReplicaCount must not exceed replicaCount \(2 > 1\)/]],
  ["VpcName", [/property vpcId value \{vpc-12\} has a problem: vpcId must be a string of digits/, /name must be 1 to 128 characters/]],
] as const)("bad %s inputs fail during preview, naming the property and the rule, with no API call", async (kind, expected) => {
  const { ServiceFork, ServiceHA, VpcName } = tigercloud();
  const s = await h.stack(`invalid-${kind}`, async () => {
    if (kind === "ServiceFork") new ServiceFork("bad", { sourceServiceId: h.ids.serviceId, forkStrategy: "PITR", name: "x".repeat(129) });
    if (kind === "ServiceHA") new ServiceHA("bad", { serviceId: h.ids.serviceId, replicaCount: 1, syncReplicaCount: 2 });
    if (kind === "VpcName") new VpcName("bad", { vpcId: "vpc-12", name: "" });
  });
  const err = await s.preview().then(
    () => undefined,
    (e: Error) => e,
  );
  const text = String(err?.message);
  for (const pattern of expected) expect(text).toMatch(pattern);
  expect(h.sim.requests()).toEqual([]);
});

test("values unknown during preview are not judged; they are checked once known", async () => {
  const { ServiceFork, ServiceHA } = tigercloud();
  const s = await h.stack("unknowns", async () => {
    const fork = new ServiceFork("u-fork", { sourceServiceId: h.ids.serviceId, forkStrategy: "NOW" });
    // serviceId, and a name derived from it, are unknown until the fork exists.
    new ServiceHA("u-ha", { serviceId: fork.serviceId, replicaCount: 1 });
    new ServiceFork("u-fork-of-fork", {
      sourceServiceId: fork.serviceId,
      forkStrategy: "NOW",
      name: pulumi.interpolate`${fork.name}-child`,
    });
  });
  const preview = await s.preview();
  expect(preview.changes).toMatchObject({ create: 4 });
  // Only the first fork's source is known, so only it is read.
  expect(preview.requests.map((r) => `${r.method} ${r.operation}`)).toEqual(["GET getService"]);
  await s.up();
  await s.destroy();
});

test("credentials from stack config (secret) work with no environment key, and stay out of state", async () => {
  const { VpcName } = tigercloud();
  const s = await h.stack(
    "config-creds",
    async () => {
      new VpcName("vpc", { vpcId: h.ids.vpcId, name: "from-config" });
    },
    { env: { TIGER_API_KEY: undefined, TIGER_PROJECT_ID: undefined } },
  );
  await s.stack.setConfig("tigercloud:apiKey", { value: h.sim.apiKey, secret: true });
  await s.stack.setConfig("tigercloud:projectId", { value: h.ids.projectId });
  const up = await s.up();
  expect(up.requests[0]?.headers.authorization).toBe(`Bearer ${h.sim.apiKey}`);
  expect(h.sim.vpc(h.ids.projectId, h.ids.vpcId)?.name).toBe("from-config");
  expect(s.rawState()).not.toContain(h.sim.apiKey);
  await s.destroy();
});

test("no credentials anywhere: a clear error, and no request", async () => {
  const { VpcName } = tigercloud();
  const s = await h.stack(
    "no-creds",
    async () => {
      new VpcName("vpc", { vpcId: h.ids.vpcId, name: "x" });
    },
    { env: { TIGER_API_KEY: undefined } },
  );
  const err = await s.up().then(
    () => undefined,
    (e: Error) => e,
  );
  expect(String(err?.message)).toMatch(/No Tiger Cloud credentials.*tigercloud:apiKey.*TIGER_API_KEY/s);
  expect(h.sim.requests()).toEqual([]);
});
