// Each resource's provider methods called directly, as the engine calls them, against the
// simulator over loopback: every rule of check, diff, create, read, update and delete.
import { providers } from "../provider/hosts/dynamic/runtime";
import { setHostOptions } from "../provider/hosts/dynamic/provider";
import { BadRequestError, ConfigurationError, InternalServerError } from "../provider/errors";
import { UNKNOWN } from "../provider/rules/inputs";
import { configureProviders, forkAppears, rejectionOf, startProviderSim, stopProviderSim } from "./helpers";
import { Simulator } from "../simulator";

const fork = providers.ServiceFork;
const ha = providers.ServiceHA;
const vpc = providers.VpcName;

const P = "serialized-provider-text";
let sim: Simulator;
let ids: { projectId: string; serviceId: string; vpcId: string };

const configure = configureProviders;

beforeEach(async () => {
  ({ sim, ids } = await startProviderSim());
});
afterEach(() => stopProviderSim(sim));

const failuresOf = async (provider: typeof fork, news: Record<string, unknown>) =>
  ((await provider.check({}, { __provider: P, ...news })).failures ?? []).map((f) => `${f.property}: ${f.reason}`);

describe("ServiceFork", () => {
  const base = { sourceServiceId: "svc-parent1", forkStrategy: "NOW" };

  describe("check", () => {
    test("normalises: project from config, defaults filled, sizes as strings, __provider kept", async () => {
      const { inputs, failures } = await fork.check({}, { __provider: P, ...base, cpuMillis: 2000, memoryGbs: "8" });
      expect(failures).toEqual([]);
      expect(inputs).toEqual({
        __provider: P,
        projectId: ids.projectId,
        sourceServiceId: "svc-parent1",
        forkStrategy: "NOW",
        cpuMillis: "2000",
        memoryGbs: "8",
        paused: false,
        passwordOnAdopt: "reset",
        onDestroy: "stop",
        waitForReady: true,
        readyWhen: "login",
        adoptExisting: true,
        createTimeout: "30m",
        updateTimeout: "30m",
        deleteTimeout: "10m",
      });
    });

    test.each([
      [{ forkStrategy: "PITR" }, "targetTime: targetTime is required when forkStrategy is PITR"],
      [{ targetTime: "2026-01-01T00:00:00Z" }, "targetTime: targetTime is allowed only when forkStrategy is PITR (it is NOW)"],
      [
        { forkStrategy: "PITR", targetTime: "yesterday" },
        "targetTime: targetTime must be an RFC 3339 date-time such as 2026-11-01T12:00:00Z",
      ],
      [{ forkStrategy: "PITR", targetTime: "2999-01-01T00:00:00Z" }, "targetTime: targetTime must not be in the future"],
      [{ forkStrategy: "TOMORROW" }, "forkStrategy: forkStrategy must be one of LAST_SNAPSHOT, NOW, PITR"],
      [{ name: "" }, "name: name must be 1 to 128 characters"],
      [{ name: "n".repeat(129) }, "name: name must be 1 to 128 characters"],
      [
        { cpuMillis: "lots" },
        'cpuMillis: cpuMillis must be a whole number of millicores >= 1 (a number, or a string of digits), or "shared"',
      ],
      [
        { memoryGbs: -1 },
        'memoryGbs: memoryGbs must be a positive plain decimal number of gigabytes such as 4 or 0.5 (a number or a string), or "shared"',
      ],
      [
        { cpuMillis: "shared", memoryGbs: "8" },
        'memoryGbs: memoryGbs must be "shared" too: cpuMillis and memoryGbs are both "shared" or neither',
      ],
      [{ environmentTag: "STAGING" }, "environmentTag: environmentTag must be DEV or PROD"],
      [{ createTimeout: "soon" }, 'createTimeout: createTimeout must be a duration such as "90s", "30m" or "1h30m"'],
      [{ waitForReady: "yes" }, "waitForReady: waitForReady must be true or false (it is a string)"],
      [{ readyWhen: "connected" }, 'readyWhen: readyWhen must be "login" (READY and a working login) or "status" (READY only)'],
      [{ sourceServiceId: "" }, "sourceServiceId: sourceServiceId must not be empty"],
      [{ sourceServiceId: undefined }, "sourceServiceId: sourceServiceId is required: it must be a string"],
      [{ forkStrategyy: "NOW" }, "forkStrategyy: forkStrategyy is not a property of this resource"],
    ])("%j fails with %s", async (change, expected) => {
      expect(await failuresOf(fork, { ...base, ...change })).toEqual([expected]);
    });

    test("PITR with a past RFC 3339 time, and shared on both, pass", async () => {
      expect(
        await failuresOf(fork, {
          ...base,
          forkStrategy: "PITR",
          targetTime: "2026-01-01T00:00:00+02:00",
          cpuMillis: "shared",
          memoryGbs: "shared",
        }),
      ).toEqual([]);
    });

    test("unknown values (preview) are not judged, alone or in cross-field rules", async () => {
      expect(await failuresOf(fork, { ...base, sourceServiceId: UNKNOWN, name: UNKNOWN })).toEqual([]);
      expect(await failuresOf(fork, { ...base, forkStrategy: "PITR", targetTime: UNKNOWN })).toEqual([]);
      expect(await failuresOf(fork, { ...base, forkStrategy: UNKNOWN, targetTime: "2026-01-01T00:00:00Z" })).toEqual([]);
      expect(await failuresOf(fork, { ...base, cpuMillis: "shared", memoryGbs: UNKNOWN })).toEqual([]);
      const { inputs } = await fork.check({}, { __provider: P, ...base, name: UNKNOWN });
      expect(inputs.name).toBe(UNKNOWN);
    });

    test("no project and no credentials anywhere: check leaves the project to up (as a preview without secrets passes), and create fails naming the config key, the variable and what it tried", async () => {
      await configure({});
      const env = process.env.TIGER_PROJECT_ID;
      delete process.env.TIGER_PROJECT_ID;
      try {
        const { inputs, failures } = await fork.check({}, { __provider: P, ...base });
        expect(failures).toEqual([]);
        expect(inputs.projectId).toBeUndefined();
        const err = (await rejectionOf(fork.create(inputs))) as Error & { reasons?: string[] };
        expect(err.message).toMatch(
          /projectId is required: it is not set on the resource, nor in tigercloud:projectId \(stack config\) or TIGER_PROJECT_ID, and the API cannot be asked which project a key belongs to \(GET \/auth\/info\) without one: No Tiger Cloud credentials/,
        );
        process.env.TIGER_PROJECT_ID = "proj-from-env";
        expect((await fork.check({}, { __provider: P, ...base })).inputs.projectId).toBe("proj-from-env");
      } finally {
        if (env === undefined) delete process.env.TIGER_PROJECT_ID;
        else process.env.TIGER_PROJECT_ID = env;
      }
    });
  });

  describe("diff", () => {
    const olds = {
      __provider: P,
      projectId: "p",
      ...base,
      environmentTag: "DEV",
      name: "pr-1",
      waitForReady: true,
      createTimeout: "30m",
      deleteTimeout: "10m",
      status: "READY",
      serviceId: "svc-x",
    };
    // As check hands them on: every default filled.
    const news = {
      __provider: P,
      projectId: "p",
      ...base,
      environmentTag: "DEV",
      name: "pr-1",
      paused: false,
      waitForReady: true,
      createTimeout: "30m",
      deleteTimeout: "10m",
    };

    test("nothing changed: no changes; environmentTag dropped from the program (state from older versions holds DEV) has no opinion", async () => {
      expect(await fork.diff("svc-x", olds, news)).toMatchObject({ changes: false, replaces: [] });
      const { environmentTag: _tag, ...untagged } = news;
      expect(await fork.diff("svc-x", olds, untagged)).toMatchObject({ changes: false, replaces: [] });
    });
    test.each(["projectId", "sourceServiceId", "forkStrategy"])("a change to %s (what the fork is a copy of) is a replace", async (key) => {
      expect(await fork.diff("svc-x", olds, { ...news, [key]: "other" })).toMatchObject({ changes: true, replaces: [key] });
    });
    test("adding targetTime is a replace", async () => {
      expect(await fork.diff("svc-x", olds, { ...news, targetTime: "2026-01-01T00:00:00Z" })).toMatchObject({
        changes: true,
        replaces: ["targetTime"],
      });
    });
    test.each([
      ["name", "other"],
      ["environmentTag", "PROD"],
      ["cpuMillis", "4000"],
      ["memoryGbs", "16"],
      ["memoryGbs", "16.0"],
      ["paused", true],
    ])("a change to %s is an update in place", async (key, value) => {
      expect(await fork.diff("svc-x", olds, { ...news, [key]: value })).toMatchObject({ changes: true, replaces: [] });
    });
    test.each([
      ["cpuMillis", "1000", "shared"],
      ["memoryGbs", "shared", "4"],
      ["memoryGbs", "4", "0.5"],
    ])("%s from %s to %s is a replace: resize cannot express it", async (key, was, now) => {
      const other = key === "cpuMillis" ? "memoryGbs" : "cpuMillis";
      const sharedPair = (v: string) => ({ [key]: v, [other]: v === "shared" ? "shared" : "4" });
      expect(await fork.diff("svc-x", { ...olds, ...sharedPair(was) }, { ...news, ...sharedPair(now) })).toMatchObject({
        changes: true,
        replaces: expect.arrayContaining([key]),
      });
    });
    test("an unknown value where a replace key stands is a replace", async () => {
      expect(await fork.diff("svc-x", olds, { ...news, sourceServiceId: UNKNOWN })).toMatchObject({ replaces: ["sourceServiceId"] });
    });
    test("waiting controls and a new provider are updates, not replaces", async () => {
      expect(await fork.diff("svc-x", olds, { ...news, createTimeout: "1h" })).toMatchObject({ changes: true, replaces: [] });
      expect(await fork.diff("svc-x", olds, { ...news, waitForReady: false })).toMatchObject({ changes: true, replaces: [] });
      expect(await fork.diff("svc-x", olds, { ...news, __provider: "new release" })).toMatchObject({ changes: true, replaces: [] });
    });
    test("removing name keeps the fork (an unset name has no opinion)", async () => {
      const { name: _name, ...unnamed } = news;
      expect(await fork.diff("svc-x", olds, unnamed)).toMatchObject({ changes: false });
    });
  });

  describe("create", () => {
    /** Checked inputs; the log then holds create's requests only (check reads the source). */
    const inputs = async (extra: Record<string, unknown> = {}) => {
      const checked = (await fork.check({}, { __provider: P, ...base, name: "pr-9", ...extra })).inputs;
      sim.clearLog();
      return checked;
    };

    test("one forkService call with the body the API expects, waits until READY, password in outputs", async () => {
      sim.delays = { ...sim.delays, forkQueuedMs: 60, forkConfiguringMs: 60 };
      const { id, outs } = await fork.create(await inputs({ cpuMillis: 1000, memoryGbs: 4, environmentTag: "PROD" }));
      expect(sim.requests("forkService").map((r) => r.body)).toEqual([
        { fork_strategy: "NOW", environment_tag: "PROD", cpu_millis: "1000", memory_gbs: "4", name: "pr-9" },
      ]);
      expect(sim.requests("getService").length).toBeGreaterThan(0);
      expect(outs).toMatchObject({
        serviceId: id,
        status: "READY",
        name: "pr-9",
        environment: "PROD",
        forkedFrom: { serviceId: "svc-parent1" },
        haReplicas: { replicaCount: 0, syncReplicaCount: 0 },
      });
      expect(outs.initialPassword).toBe(sim.service(ids.projectId, id)?.initial_password);
      expect(outs).not.toHaveProperty("metrics");
      expect(JSON.stringify(outs)).not.toContain("undefined");
    });

    test("waitForReady false: returns at once, no polling", async () => {
      sim.delays = { ...sim.delays, forkQueuedMs: 10_000 };
      const { outs } = await fork.create(await inputs({ waitForReady: false }));
      expect(outs.status).toBe("QUEUED");
      expect(sim.requests("getService")).toEqual([]);
    });

    test("a fork that goes to DELETING while awaited fails at once, and the error carries the fork for the engine", async () => {
      sim.delays = { ...sim.delays, forkQueuedMs: 10_000 };
      const news = await inputs();
      const pending = fork.create(news);
      const forkId = await forkAppears(sim, ids.projectId, "pr-9");
      sim.outOfBand.setStatus(ids.projectId, forkId, "DELETING");
      const err = (await rejectionOf(pending)) as Error & { id?: string; properties?: Record<string, unknown>; reasons?: string[] };
      expect(err.id).toBe(forkId);
      expect(err.properties).toMatchObject({ serviceId: forkId, __provider: P, name: "pr-9" });
      expect(err.properties?.initialPassword).toEqual(expect.any(String));
      expect(err.reasons?.[0]).toMatch(/svc-\w+ is DELETING while waiting for it to be READY; it will not get there/);
    });

    test("a fork that disappears (404) while awaited fails with a clear message, still carrying the fork", async () => {
      sim.delays = { ...sim.delays, forkQueuedMs: 10_000 };
      const pending = fork.create(await inputs());
      const forkId = await forkAppears(sim, ids.projectId, "pr-9");
      sim.outOfBand.deleteService(ids.projectId, forkId);
      const err = (await rejectionOf(pending)) as Error & { id?: string };
      expect(err.id).toBe(forkId);
      expect(err.message).toBe(
        `Service ${forkId} could not be read while waiting for it to be READY: the API answers that it does not exist (404)`,
      );
    });

    test("an API refusal is a plain error: nothing was created", async () => {
      const news = { ...(await inputs()), sourceServiceId: "svc-missing" };
      const err = (await rejectionOf(fork.create(news))) as Error & { id?: string };
      expect(err.message).toMatch(/404 NOT_FOUND/);
      expect(err.id).toBeUndefined();
    });
  });

  describe("read, update, delete", () => {
    const created = async () => fork.create((await fork.check({}, { __provider: P, ...base, name: "rud" })).inputs);

    test('a "shared" fork refreshed: no size drift (the API reports shared as a number), so no replacement', async () => {
      const { id, outs } = await fork.create(
        (await fork.check({}, { __provider: P, ...base, name: "rud", cpuMillis: "shared", memoryGbs: "shared" })).inputs,
      );
      const read = await fork.read(id, { ...outs, __provider: P });
      expect(read.props).toMatchObject({ cpuMillis: "shared", memoryGbs: "shared" });
      const news = (await fork.check({}, { __provider: P, ...base, name: "rud", cpuMillis: "shared", memoryGbs: "shared" })).inputs;
      expect(await fork.diff(id, { ...read.props, __provider: P }, news)).toMatchObject({ replaces: [] });
    });

    test("a state-only update never resets the password of a fork adopted before; only a pending reset is finished", async () => {
      const { id, outs } = await created();
      const olderAdopted = { ...outs, __provider: P, adopted: { at: "2026-01-01T00:00:00Z", reason: "earlier" } };
      delete (olderAdopted as Record<string, unknown>).initialPassword;
      sim.clearLog();
      const news = (await fork.check({}, { __provider: P, ...base, name: "rud", deleteTimeout: "20m" })).inputs;
      await fork.update(id, olderAdopted, news);
      expect(sim.requests("updatePassword")).toEqual([]);
      const { outs: finished } = await fork.update(id, { ...olderAdopted, passwordPending: true }, news);
      expect(sim.requests("updatePassword")).toHaveLength(1);
      expect(finished?.passwordPending).toBeUndefined();
      expect(typeof finished?.initialPassword).toBe("string");
    });

    test("refused at preview: a replacement that would re-adopt the fork it replaces; an in-place change to a fork that stays paused", async () => {
      const { id, outs } = await created();
      const olds = { ...outs, __provider: P, adoptServiceId: id };
      const replace = (await fork.check({}, { __provider: P, ...base, name: "rud", forkStrategy: "LAST_SNAPSHOT", adoptServiceId: id }))
        .inputs;
      expect((await rejectionOf(fork.diff(id, olds, replace))).message).toMatch(
        /adoptServiceId names the fork this resource already holds/,
      );
      const paused = { ...outs, __provider: P, paused: true };
      const rename = (await fork.check({}, { __provider: P, ...base, name: "other", paused: true })).inputs;
      expect((await rejectionOf(fork.diff(id, paused, rename))).message).toMatch(/is paused, and name can be changed only while it runs/);
    });

    test("read refreshes live fields, keeps the password; 404 is gone; a 503 is an error, not gone", async () => {
      const { id, outs } = await created();
      sim.outOfBand.setHA(ids.projectId, id, 1, 0);
      const read = await fork.read(id, { ...outs, __provider: P });
      expect(read.props).toMatchObject({ haReplicas: { replicaCount: 1 }, initialPassword: outs.initialPassword, name: "rud" });
      sim.injectFault("getService", { kind: "status", status: 503 }, 100);
      expect(await rejectionOf(fork.read(id, { ...outs, __provider: P }))).toBeInstanceOf(InternalServerError);
      sim.clearFaults();
      sim.outOfBand.deleteService(ids.projectId, id);
      expect(await fork.read(id, { ...outs, __provider: P })).toEqual({});
    });

    test("read shows a rename made elsewhere as drift: an update that renames back, never a replacement", async () => {
      const { id, outs } = await created();
      sim.outOfBand.renameService(ids.projectId, id, "renamed-in-console");
      const read = await fork.read(id, { ...outs, __provider: P });
      expect(read.props?.name).toBe("renamed-in-console");
      expect(read.inputs?.name).toBe("renamed-in-console");
      const news = (await fork.check({}, { __provider: P, ...base, name: "rud" })).inputs;
      expect(await fork.diff(id, { ...read.props, __provider: P }, news)).toMatchObject({ changes: true, replaces: [] });
      sim.clearLog();
      await fork.update(id, { ...read.props, __provider: P }, news);
      expect(
        sim
          .requests()
          .filter((r) => r.method === "POST")
          .map((r) => [r.operation, r.body]),
      ).toEqual([["renameService", { name: "rud" }]]);
      expect(sim.service(ids.projectId, id)?.name).toBe("rud");
    });

    test('a whole size written with a decimal point ("16.0") is resized in place, sent as the digits resize takes', async () => {
      const { id, outs } = await created();
      const news = (await fork.check({}, { __provider: P, ...base, name: "rud", cpuMillis: "2000", memoryGbs: "16.0" })).inputs;
      expect(news.memoryGbs).toBe("16.0");
      expect(await fork.diff(id, { ...outs, __provider: P }, news)).toMatchObject({ changes: true, replaces: [] });
      sim.clearLog();
      await fork.update(id, { ...outs, __provider: P }, news);
      const posts = sim.requests().filter((r) => r.method === "POST");
      expect(posts.map((r) => [r.operation, r.body])).toEqual([["resize", { cpu_millis: "2000", memory_gbs: "16" }]]);
      expect(sim.service(ids.projectId, id)?.resources[0]?.spec).toMatchObject({ cpu_millis: 2000, memory_gbs: 16 });
    });

    test("update of waiting controls makes no API call", async () => {
      const { id, outs } = await created();
      sim.clearLog();
      const news = { ...(await fork.check({}, { __provider: P, ...base, name: "rud", deleteTimeout: "20m" })).inputs };
      const { outs: updated } = await fork.update(id, { ...outs, __provider: P }, news);
      expect(sim.requests()).toEqual([]);
      expect(updated).toMatchObject({ deleteTimeout: "20m", serviceId: id, initialPassword: outs.initialPassword });
    });

    test("delete stops and waits for PAUSED; again (already PAUSED) succeeds; gone succeeds; never a second stop attempt loop", async () => {
      sim.delays = { ...sim.delays, stopMs: 80 };
      const { id, outs } = await created();
      await fork.delete(id, outs);
      expect(sim.service(ids.projectId, id)?.status).toBe("PAUSED");
      await fork.delete(id, outs);
      expect(sim.requests("stop")).toHaveLength(2);
      sim.outOfBand.deleteService(ids.projectId, id);
      await fork.delete(id, outs);
    });

    test("delete with waitForReady false does not poll: one read (is it still a fork of the source?), then stop", async () => {
      sim.delays = { ...sim.delays, stopMs: 10_000 };
      const { id, outs } = await created();
      sim.clearLog();
      await fork.delete(id, { ...outs, waitForReady: false });
      expect(sim.requests().map((r) => r.operation)).toEqual(["getService", "stop"]);
    });

    test("a 400 from stop on a service that is not paused is a real error", async () => {
      const { id, outs } = await created();
      sim.injectFault("stop", { kind: "status", status: 400 });
      expect(await rejectionOf(fork.delete(id, outs))).toBeInstanceOf(BadRequestError);
    });
  });
});

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
    setTimeout(() => sim.outOfBand.setStatus(ids.projectId, ids.serviceId, "READY"), 100);
    sim.delays = { ...sim.delays, setHAMs: 80 };
    const { inputs } = await ha.check({}, { __provider: P, ...base, replicaCount: 2 });
    const { id, outs } = await ha.create(inputs);
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

describe("VpcName", () => {
  test.each([
    [{ vpcId: "vpc-1", name: "n" }, "vpcId: vpcId must be a string of digits"],
    [{ vpcId: 2 ** 53 + 2, name: "n" }, "vpcId: vpcId must be a string of digits (it is a number)"],
    [{ vpcId: 12.5, name: "n" }, "vpcId: vpcId must be a string of digits (it is a number)"],
    [{ vpcId: "1234567", name: "" }, "name: name must be 1 to 128 characters"],
    [{ vpcId: "1234567" }, "name: name is required: it must be a string"],
  ])("check %j fails with %s", async (news, expected) => {
    expect(await failuresOf(vpc, news)).toEqual([expected]);
  });

  test("check takes a whole number that holds every digit as those digits (a YAML program's config)", async () => {
    const { inputs, failures } = await vpc.check({}, { __provider: P, projectId: ids.projectId, vpcId: 1234567, name: "n" });
    expect(failures).toEqual([]);
    expect(inputs.vpcId).toBe("1234567");
  });

  test.each([false, true])("create renames then reads back (rename answers a Vpc: %s)", async (answersVpc) => {
    sim.renameAnswersVpc = answersVpc;
    const { inputs } = await vpc.check({}, { __provider: P, vpcId: ids.vpcId, name: "analytics" });
    expect(sim.requests().map((r) => r.operation)).toEqual(["getVpc"]); // check verified the VPC
    sim.clearLog();
    const { id, outs } = await vpc.create(inputs);
    expect(id).toBe(ids.vpcId);
    expect(outs).toEqual({ projectId: ids.projectId, vpcId: ids.vpcId, name: "analytics", cidr: "10.0.0.0/16", regionCode: "us-east-1" });
    expect(sim.requests().map((r) => r.operation)).toEqual(["renameVpc", "getVpc"]);
  });

  test("diff: name is an update; vpc or project a replace", async () => {
    const olds = { __provider: P, projectId: "p", vpcId: "1", name: "a" };
    expect(await vpc.diff("1", olds, { ...olds, name: "b" })).toMatchObject({ changes: true, replaces: [] });
    expect(await vpc.diff("1", olds, { ...olds, vpcId: "2" })).toMatchObject({ replaces: ["vpcId"] });
  });

  test("read shows a rename made elsewhere; 404 is gone; delete calls nothing", async () => {
    sim.outOfBand.renameVpc(ids.projectId, ids.vpcId, "console-name");
    const props = { __provider: P, projectId: ids.projectId, vpcId: ids.vpcId, name: "declared" };
    expect((await vpc.read(ids.vpcId, props)).props).toMatchObject({ name: "console-name" });
    expect(await vpc.read("999", { ...props, vpcId: "999" })).toEqual({});
    sim.clearLog();
    await vpc.delete(ids.vpcId, props);
    expect(sim.requests()).toEqual([]);
  });
});

test("without credentials the provider fails with a ConfigurationError before any request", async () => {
  await configure({ "tigercloud:apiUrl": sim.url });
  const key = process.env.TIGER_API_KEY;
  delete process.env.TIGER_API_KEY;
  try {
    expect(await rejectionOf(vpc.create({ __provider: P, projectId: ids.projectId, vpcId: ids.vpcId, name: "x" }))).toBeInstanceOf(
      ConfigurationError,
    );
    expect(sim.requests()).toEqual([]);
  } finally {
    if (key !== undefined) process.env.TIGER_API_KEY = key;
  }
});
