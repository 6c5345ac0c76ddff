// What a fork's data and login go through, with a real PostgreSQL server behind every service:
// a fork taken under management gets a password that logs in; a fork recovered after a lost
// answer too; pausing and resuming keep the data and wait for the login; an in-place change
// (rename, resize, environment) keeps the data.
import { execFile } from "child_process";
import { promisify } from "util";
import { type EngineHarness, forkThroughApi as forkThroughApiOf, startEngine, tigercloud, writes } from "./harness";

jest.setTimeout(240_000);
const run = promisify(execFile);
let h: EngineHarness;

beforeAll(async () => {
  h = await startEngine({ forkQueuedMs: 200, forkConfiguringMs: 200, stopMs: 300, startMs: 500, resizeMs: 500 }, { databases: "postgres" });
  expect(h.sim.databases.kind).toBe("postgres");
});
afterAll(async () => {
  await h?.close();
});

const psql = async (uri: string, sql: string) => (await run("psql", [uri, "-X", "-A", "-t", "-c", sql], { timeout: 20_000 })).stdout.trim();

const forkThroughApi = (name: string) => forkThroughApiOf(h, h.ids.serviceId, name);

const forkProgram = (args: Record<string, unknown>) => async () => {
  const { ServiceFork } = tigercloud();
  const f = new ServiceFork("f", { sourceServiceId: h.ids.serviceId, forkStrategy: "NOW", ...args });
  return { id: f.serviceId, uri: f.connectionUri, password: f.initialPassword };
};

test("adoptServiceId: no forkService, a new password set and proved by the login probe; connectionUri logs in with psql; with keep, no updatePassword", async () => {
  const made = await forkThroughApi("adopt-db");
  const s = await h.stack("adopt-db", forkProgram({ name: "adopt-db", adoptServiceId: made }));
  const up = await s.up();
  expect(writes(up.requests)).toEqual(["updatePassword"]);
  expect(up.stdout).toMatch(/tsdbadmin logged in and ran SELECT 1/);
  expect(await psql(up.outputs.uri?.value as string, "SELECT 1")).toBe("1");
  expect(s.rawState()).not.toContain(up.outputs.password?.value as string);
  await s.stack.preview({ expectNoChanges: true });
  const destroy = await s.destroy();
  expect(writes(destroy.requests)).toEqual(["stop"]);

  const kept = await forkThroughApi("adopt-keep");
  const k = await h.stack("adopt-keep", forkProgram({ name: "adopt-keep", adoptServiceId: kept, passwordOnAdopt: "keep" }));
  const keep = await k.up();
  expect(writes(keep.requests)).toEqual([]);
  expect(keep.outputs.uri?.value).toMatch(/^postgresql:\/\/tsdbadmin@/); // no password to give
  expect(keep.stdout).toContain("its database answers and refuses a login without the password: taken as up");
  await k.destroy();
});

test("a fork whose forkService answer was lost is recovered with a login that works", async () => {
  const s = await h.stack("lost", forkProgram({ name: "lost-answer" }));
  h.sim.injectFault("forkService", { kind: "afterApplying", status: 500 });
  const up = await s.up();
  expect(writes(up.requests)).toEqual(["forkService", "updatePassword"]);
  expect(await psql(up.outputs.uri?.value as string, "SELECT 1")).toBe("1");
  await s.destroy();
});

test("paused and resumed: the data is kept, a paused fork refuses connections, and the resume waits for the login", async () => {
  const s = await h.stack("pause-db", forkProgram({ name: "pause-db" }));
  const uri = (await s.up()).outputs.uri?.value as string;
  await psql(uri, "CREATE TABLE kept (note text); INSERT INTO kept VALUES ('written before the pause')");

  s.setProgram(forkProgram({ name: "pause-db", paused: true }));
  expect(writes((await s.up()).requests)).toEqual(["stop"]);
  await expect(psql(uri, "SELECT 1")).rejects.toThrow();

  s.setProgram(forkProgram({ name: "pause-db", paused: false }));
  const resumed = await s.up();
  expect(writes(resumed.requests)).toEqual(["start"]);
  expect(resumed.stdout).toMatch(/tsdbadmin logged in and ran SELECT 1/);
  expect(await psql(uri, "SELECT note FROM kept")).toBe("written before the pause");
  await s.destroy();
});

test("rename, resize and environment, one up each: the same server, the data kept after each", async () => {
  const s = await h.stack("change-db", forkProgram({ name: "change-db", cpuMillis: 1000, memoryGbs: 4 }));
  const first = await s.up();
  const uri = first.outputs.uri?.value as string;
  await psql(uri, "CREATE TABLE kept (note text); INSERT INTO kept VALUES ('written before the changes')");
  const steps: [Record<string, unknown>, string][] = [
    [{ name: "change-db-2", cpuMillis: 1000, memoryGbs: 4 }, "renameService"],
    [{ name: "change-db-2", cpuMillis: 2000, memoryGbs: 8 }, "resize"],
    [{ name: "change-db-2", cpuMillis: 2000, memoryGbs: 8, environmentTag: "PROD" }, "setEnvironment"],
  ];
  for (const [args, operation] of steps) {
    s.setProgram(forkProgram(args));
    const changed = await s.up();
    expect(writes(changed.requests)).toEqual([operation]);
    expect(changed.outputs.id?.value).toBe(first.outputs.id?.value);
    expect(await psql(changed.outputs.uri?.value as string, "SELECT note FROM kept")).toBe("written before the changes");
  }
  await s.destroy();
});
