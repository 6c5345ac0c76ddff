// `pulumi preview` catches what `pulumi up` would fail on: check reads, read-only and once per
// object, what a new or replaced resource refers to. The real engine, against the simulator.
import type { PulumiFn } from "@pulumi/pulumi/automation";
import type { LoggedRequest } from "../../simulator";
import { type EngineHarness, type Scenario, startEngine, tigercloud, writes } from "../support/lab/harness";

jest.setTimeout(240_000);
let h: EngineHarness;
beforeAll(async () => {
  h = await startEngine();
});
afterAll(async () => {
  await h?.close();
});
afterEach(() => h.sim.clearFaults());

/** The error a failing preview throws (with the engine's whole output), or a test failure. */
async function previewFailure(s: Scenario): Promise<string> {
  const err = await s.preview().then(
    () => undefined,
    (e: Error) => e,
  );
  if (!err) throw new Error("expected the preview to fail, but it passed");
  return err.message;
}

const operations = (requests: LoggedRequest[]) => requests.map((r) => `${r.method} ${r.operation}`).sort();

const MISSING = {
  ServiceFork: { property: "sourceServiceId", id: "svc-typo404" },
  ServiceHA: { property: "serviceId", id: "svc-nohere1" },
  VpcName: { property: "vpcId", id: "9999999" },
} as const;

test.each(Object.keys(MISSING) as (keyof typeof MISSING)[])(
  "%s referring to an object that does not exist: preview fails naming the property and the ID, with reads only",
  async (kind) => {
    const { ServiceFork, ServiceHA, VpcName } = tigercloud();
    const { property, id } = MISSING[kind];
    const s = await h.stack(`missing-${kind}`, async () => {
      if (kind === "ServiceFork") new ServiceFork("typo", { sourceServiceId: id, forkStrategy: "NOW" });
      if (kind === "ServiceHA") new ServiceHA("typo", { serviceId: id, replicaCount: 1 });
      if (kind === "VpcName") new VpcName("typo", { vpcId: id, name: "x" });
    });
    const text = await previewFailure(s);
    expect(text).toContain(
      `${property} names ${kind === "VpcName" ? "VPC" : "service"} ${id}, which does not exist in project ${h.ids.projectId}`,
    );
    expect(text).toContain(`tigercloud:${kind}`); // the engine names the resource
    expect(h.sim.requests().length).toBeGreaterThan(0);
    expect(writes(h.sim.requests())).toEqual([]);
  },
);

test.each([
  ["the environment", "environment variable TIGER_API_KEY", { TIGER_API_KEY: "Env-K3y-N0t-Valid" }, undefined],
  ["stack config", "stack config tigercloud:apiKey", {}, "Cfg-K3y-N0t-Valid"],
] as const)(
  "a wrong API key in %s fails the preview naming where the key came from, never the key",
  async (_where, source, env, configKey) => {
    const { ServiceFork } = tigercloud();
    const s = await h.stack(
      `wrong-key-${configKey ? "config" : "env"}`,
      async () => {
        new ServiceFork("f", { sourceServiceId: h.ids.serviceId, forkStrategy: "NOW" });
      },
      { env },
    );
    if (configKey) await s.stack.setConfig("tigercloud:apiKey", { value: configKey, secret: true });
    const text = await previewFailure(s);
    expect(text).toContain(`sourceServiceId could not be verified: the API refused the credentials from ${source} (401`);
    expect(text).toMatch(/Set a valid key there/);
    expect(text).not.toContain("K3y-N0t");
    expect(operations(h.sim.requests())).toEqual(["GET getService"]);
  },
);

test("no credentials: the preview passes with one note and no request; verification turned off: no request", async () => {
  const { ServiceFork, VpcName } = tigercloud();
  const program: PulumiFn = async () => {
    new ServiceFork("a", { sourceServiceId: h.ids.serviceId, forkStrategy: "NOW" });
    new ServiceFork("b", { sourceServiceId: "svc-typo404", forkStrategy: "NOW" });
    new VpcName("v", { vpcId: h.ids.vpcId, name: "x" });
  };
  // With a project from the environment, and with none anywhere (the key's project cannot be asked either).
  for (const [name, env] of [
    ["no-creds", { TIGER_API_KEY: undefined }],
    ["no-creds-no-project", { TIGER_API_KEY: undefined, TIGER_PROJECT_ID: undefined }],
  ] as const) {
    const none = await (await h.stack(name, program, { env })).preview();
    expect(none.changes).toMatchObject({ create: 4 });
    expect(none.requests).toEqual([]);
    // Once for the whole preview (the engine prints it in its progress display and under Diagnostics).
    expect(none.stdout).toMatch(/ 1 warning$/m);
    expect(none.stdout.match(/warning: \[tigercloud\] references were not verified: no Tiger Cloud credentials/g)).toHaveLength(2);
  }

  const offByEnv = await (await h.stack("off-env", program, { env: { TIGER_VERIFY_REFERENCES: "false" } })).preview();
  expect(offByEnv.changes).toMatchObject({ create: 4 });
  expect(offByEnv.requests).toEqual([]);

  const offByConfig = await h.stack("off-config", program);
  await offByConfig.stack.setConfig("tigercloud:verifyReferences", { value: "false" });
  expect((await offByConfig.preview()).requests).toEqual([]);
});

test("a source held busy: preview warns that up will wait, and up waits for it before forking", async () => {
  const { ServiceFork } = tigercloud();
  const { projectId, serviceId } = h.ids;
  const s = await h.stack("busy", async () => {
    new ServiceFork("busy-1", { sourceServiceId: serviceId, forkStrategy: "NOW", name: "busy-1" });
    new ServiceFork("busy-2", { sourceServiceId: serviceId, forkStrategy: "NOW", name: "busy-2" });
  });
  h.sim.outOfBand.holdBusy(projectId, serviceId, "CONFIGURING");
  try {
    const preview = await s.preview();
    expect(preview.changes).toMatchObject({ create: 3 });
    const warning = `warning: [tigercloud] ServiceFork: source service ${serviceId} is CONFIGURING; it can be forked when READY or PAUSED, so \`up\` will wait for it`;
    // Said once in the progress display and once under Diagnostics, for both forks together.
    expect(preview.stdout.split(warning).length - 1).toBeLessThanOrEqual(2);
    expect(preview.stdout).toContain(warning);
    // The source, and the service list for a fork `up` would take over (the fork is named).
    expect(operations(preview.requests)).toEqual(["GET getService", "GET listServices"]);

    // Still busy until both forks' requests have met it (two 409s), however long the engine takes to start.
    const released = h.sim.releaseBusyOnceRefused(projectId, serviceId, "forkService", 2);
    const up = await s.up();
    // Each fork is refused with 409 while the source is busy (the busy rule), then accepted once it is READY.
    const forks = up.requests.filter((r) => r.operation === "forkService");
    expect(forks).toHaveLength(4);
    const accepted = ["busy-1", "busy-2"].map((name) => forks.filter((f) => (f.body as { name?: string }).name === name).at(-1));
    for (const fork of accepted) expect(fork?.at).toBeGreaterThanOrEqual(await released);
    expect(up.stdout).toContain(`source ${serviceId} is CONFIGURING; waiting to fork`);
  } finally {
    h.sim.outOfBand.setStatus(projectId, serviceId, "READY");
  }
  await s.destroy();
});

test("no control character from an API answer reaches what pulumi preview prints: a source's status, a 401's message", async () => {
  const HOSTILE = "\u001b]0;owned\u0007\u001b[2J\n[tigercloud] forged line\u2028\u202eevil";
  // eslint-disable-next-line no-control-regex -- finding control characters is the point
  const RAW = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;
  const { ServiceFork } = tigercloud();
  const s = await h.stack("hostile", async () => {
    new ServiceFork("f", { sourceServiceId: h.ids.serviceId, forkStrategy: "NOW", name: "pr-hostile" });
  });
  // A status the API never should send: the busy-source warning quotes it.
  h.sim.outOfBand.setStatus(h.ids.projectId, h.ids.serviceId, HOSTILE as never);
  const warned = await s.preview();
  expect(warned.stdout).toContain("\\x1b]0;owned");
  expect(warned.stdout).not.toMatch(RAW);
  h.sim.outOfBand.setStatus(h.ids.projectId, h.ids.serviceId, "READY");

  const body = JSON.stringify({ code: "UNAUTHORIZED", message: HOSTILE });
  h.sim.injectFault("getService", { kind: "status", status: 401, body, contentType: "application/json" }, 10);
  const failed = await previewFailure(s);
  h.sim.clearFaults();
  expect(failed).toContain("refused the credentials");
  expect(failed).toContain("\\x1b]0;owned");
  expect(failed).not.toMatch(RAW);
});

test("a 503 on the read: preview passes with a warning that up will try", async () => {
  const { ServiceFork } = tigercloud();
  const s = await h.stack("unavailable", async () => {
    new ServiceFork("f", { sourceServiceId: h.ids.serviceId, forkStrategy: "NOW" });
  });
  h.sim.injectFault("getService", { kind: "status", status: 503 }, 10);
  const preview = await s.preview();
  expect(preview.changes).toMatchObject({ create: 2 });
  expect(preview.stdout).toMatch(
    new RegExp(
      `warning: \\[tigercloud\\] ServiceFork: could not verify sourceServiceId \\(service ${h.ids.serviceId}\\): Request failed with status code 503.*; \`up\` will try\\.`,
    ),
  );
  // Two attempts within the short time limit, then the warning.
  expect(operations(preview.requests)).toEqual(["GET getService", "GET getService"]);
});

test("100 forks of one source, and HA on it, make one read of it in preview", async () => {
  const { ServiceFork, ServiceHA } = tigercloud();
  const s = await h.stack("hundred", async () => {
    for (let i = 0; i < 100; i++) new ServiceFork(`f${i}`, { sourceServiceId: h.ids.serviceId, forkStrategy: "NOW", name: `f${i}` });
    new ServiceHA("parent-ha", { serviceId: h.ids.serviceId, replicaCount: 1 });
  });
  const preview = await s.preview();
  expect(preview.changes).toMatchObject({ create: 102 });
  // The source once, and the service list once (for forks `up` would take over), for all 100.
  expect(operations(preview.requests)).toEqual(["GET getService", "GET listServices"]);
});

test("the demo example's program: preview reads the source and the VPC; an unchanged stack makes no request; a replacement reads again", async () => {
  const { ServiceFork, ServiceHA, VpcName } = tigercloud();
  const program = (forkStrategy: "LAST_SNAPSHOT" | "NOW") => async () => {
    const fork = new ServiceFork("demo-fork", { sourceServiceId: h.ids.serviceId, forkStrategy, name: "demo-fork" });
    new ServiceHA("demo-fork-ha", { serviceId: fork.serviceId, replicaCount: 1 });
    new VpcName("demo-vpc", { vpcId: h.ids.vpcId, name: "analytics-vpc" });
  };
  const s = await h.stack("demo", program("LAST_SNAPSHOT"));
  const first = await s.preview();
  expect(first.changes).toMatchObject({ create: 4 });
  // The HA target is the fork's serviceId, unknown until up: not read in preview.
  // The fork is named: the service list tells whether `up` would take over a running one.
  expect(operations(first.requests).sort()).toEqual(["GET getService", "GET getVpc", "GET listServices"]);

  await s.up();
  const unchanged = await s.preview();
  expect(unchanged.changes).toEqual({ same: 4 });
  expect(unchanged.requests).toEqual([]);

  // A new strategy replaces the fork (a new name would rename it in place): its source is read
  // again; HA (a replacement too) waits for the new fork's ID.
  s.setProgram(program("NOW"));
  const replace = await s.preview();
  expect(replace.changes.replace).toBeGreaterThanOrEqual(1);
  // Not the list: the replacement keeps the fork's identity, so it stops the old fork first and
  // takes nothing over (no warning).
  expect(operations(replace.requests)).toEqual(["GET getService"]);
  expect(replace.stdout).not.toContain("will take over");
  await s.destroy();
});

test.each([
  ["the resource's projectId", "the resource's projectId", {}, undefined],
  ["stack config", "stack config tigercloud:projectId", { TIGER_PROJECT_ID: undefined }, "proj-nowhere"],
  ["the environment", "environment variable TIGER_PROJECT_ID", { TIGER_PROJECT_ID: "proj-nowhere" }, undefined],
] as const)("a project the API does not know, from %s, fails preview naming where it came from", async (_from, source, env, configured) => {
  const { ServiceFork } = tigercloud();
  const s = await h.stack(
    `no-such-project-${configured ? "config" : Object.keys(env).length > 0 ? "env" : "resource"}`,
    async () => {
      new ServiceFork("f", {
        sourceServiceId: h.ids.serviceId,
        forkStrategy: "NOW",
        ...(source.startsWith("the resource") ? { projectId: "proj-nowhere" } : {}),
      });
    },
    { env },
  );
  if (configured) await s.stack.setConfig("tigercloud:projectId", { value: configured });
  const text = await previewFailure(s);
  expect(text).toContain("project proj-nowhere does not exist, or the credentials from environment variable TIGER_API_KEY cannot see it");
  expect(text).toContain(`The project comes from ${source}`);
  expect(writes(h.sim.requests())).toEqual([]);
});

test("a name given as a secret is never printed: not by the takeover warning at preview, nor the adoption's progress at up", async () => {
  const pulumi = require("@pulumi/pulumi") as typeof import("@pulumi/pulumi");
  const { ServiceFork } = tigercloud();
  const name = "s3cret-fork-name";
  const forkId = h.sim.outOfBand.addFork(h.ids.projectId, h.ids.serviceId, { name });
  const s = await h.stack("secret-name", async () => {
    new ServiceFork("f", { sourceServiceId: h.ids.serviceId, forkStrategy: "NOW", name: pulumi.secret(name), readyWhen: "status" });
  });
  const preview = await s.preview();
  expect(preview.stdout).toContain(`will take over running fork ${forkId}`);
  const up = await s.up();
  expect(writes(up.requests)).toEqual(["updatePassword"]);
  for (const text of [preview.stdout, up.stdout]) expect(text).not.toContain(name);
  await s.destroy();
});

test("a name with control characters fails preview, and nothing prints it raw, the engine's echo of the failing value included", async () => {
  // eslint-disable-next-line no-control-regex -- finding control characters is the point
  const RAW = /[\u0007\u001b\u202e]/;
  const { ServiceFork } = tigercloud();
  const s = await h.stack("raw-name", async () => {
    new ServiceFork("f", { sourceServiceId: h.ids.serviceId, forkStrategy: "NOW", name: "pr\u001b[2J\u202eevil\u0007" });
  });
  const text = await previewFailure(s);
  expect(text).toMatch(/name must not contain control characters .* U\+001B at character 3/);
  expect(text).not.toMatch(RAW);
});
