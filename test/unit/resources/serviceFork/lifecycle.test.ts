// ServiceFork's lifecycle, called as the engine calls the dynamic provider, against the simulator
// over loopback: every rule of check, diff, create, read, update and delete.
import { providers } from "../../../../provider/hosts/dynamic/runtime";
import { BadRequestError, InternalServerError } from "../../../../provider/errors";
import { UNKNOWN } from "../../../../provider/rules/inputs";
import { configureProviders, forkAppears, rejectionOf, providerSimForEachTest, P, failuresOf, type Ids } from "../../../support/helpers";
import type { Simulator } from "../../../../simulator";

const fork = providers.ServiceFork;

let sim: Simulator;
let ids: Ids;
providerSimForEachTest((current) => ({ sim, ids } = current));

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
      await configureProviders({});
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
      readyWhen: "login",
      createTimeout: "30m",
      updateTimeout: "30m",
      deleteTimeout: "10m",
      adoptExisting: true,
      passwordOnAdopt: "reset",
      onDestroy: "stop",
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
