// What a fork's data and login go through, with a real PostgreSQL server behind every service:
// a fork taken under management gets a password that logs in; a fork recovered after a lost
// answer too; pausing and resuming keep the data and wait for the login; an in-place change
// (rename, resize, environment) keeps the data; a `pulumi up` killed between the fork and its
// login is finished by the next `up`, with a login that works.
import { execFile } from "child_process";
import * as fs from "fs";
import * as path from "path";
import { promisify } from "util";
import { type EngineHarness, forkThroughApi as forkThroughApiOf, startEngine, tigercloud, writes } from "../support/lab/harness";

jest.setTimeout(240_000);
const run = promisify(execFile);
let h: EngineHarness;

beforeAll(async () => {
  h = await startEngine({ forkQueuedMs: 200, forkConfiguringMs: 200, stopMs: 300, startMs: 500, resizeMs: 500 }, { databases: "postgres" });
  expect(h.sim.databases.kind).toBe("timescaledb");
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

/** Live processes by ID: their parent's ID, command line and working directory (Linux /proc). A
 *  zombie (killed, not yet reaped by its new parent) is dead, and left out. */
function processes(): { pid: number; ppid: number; argv: string[]; cwd: string }[] {
  const found = [];
  for (const entry of fs.readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, "utf8");
      const [state, ppidField] = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (state === "Z") continue;
      const ppid = Number(ppidField);
      const argv = fs.readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0");
      found.push({ pid: Number(entry), ppid, argv, cwd: fs.readlinkSync(`/proc/${entry}/cwd`) });
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  return found;
}

/** SIGKILLs the `pulumi up` the Automation API runs in `workDir`, and every process under it (its
 *  provider processes), as a cancelled pipeline kills the job's process group. */
function killUp(workDir: string): number[] {
  const all = processes();
  const engine = all.find((p) => path.basename(p.argv[0] ?? "") === "pulumi" && p.argv[1] === "up" && p.cwd === workDir);
  if (!engine) throw new Error(`no pulumi up running in ${workDir}`);
  const tree = [engine.pid];
  for (let i = 0; i < tree.length; i++) for (const child of all.filter((p) => p.ppid === tree[i])) tree.push(child.pid);
  for (const pid of tree) process.kill(pid, "SIGKILL");
  return tree;
}

async function until(what: () => boolean, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!what()) {
    if (Date.now() > deadline) throw new Error("timed out waiting for the moment to kill pulumi up");
    await new Promise((r) => setTimeout(r, 25));
  }
}

test("pulumi up SIGKILLed after the fork is READY, while it waits for the login: the next up finishes it, and connectionUri logs in to PostgreSQL", async () => {
  h.sim.delays = { ...h.sim.delays, loginLagMs: 60 * 60_000 }; // no login until the test opens it
  const s = await h.stack("killed", forkProgram({ name: "killed-db" }));
  const forks = () => h.sim.services(h.ids.projectId).filter((f) => f.name === "killed-db");
  let id = "";
  try {
    const killed = s.stack.up().then(
      () => undefined,
      (e: Error) => e,
    );
    await until(() => forks().length === 1);
    const fork = forks()[0] as ReturnType<typeof forks>[number];
    id = fork.service_id;
    const readyAt = fork.timeline.find((t) => t.status === "READY")?.at ?? Infinity;
    // The provider has read the fork READY and is trying to log in, which cannot work yet: its
    // connections are closed at once.
    await until(() => h.sim.requests("getService").some((r) => r.path.endsWith(`/${id}`) && r.at >= readyAt && r.status === 200));
    await until(() => h.sim.databases.connectionsRefused(id) > 0);
    expect(h.sim.databases.acceptsLogins(id)).toBe(false);
    const pids = killUp(path.join(h.dir, "killed"));
    expect(String((await killed)?.message)).toMatch(/signal|exit|code/i);
    // SIGKILL is final, but a killed process leaves /proc when the kernel is done with it: allow a moment.
    for (const until = Date.now() + 5000; processes().some((p) => pids.includes(p.pid)) && Date.now() < until;)
      await new Promise((r) => setTimeout(r, 100));
    expect(processes().filter((p) => pids.includes(p.pid))).toEqual([]);
    // Nothing recorded: the create never returned.
    expect(JSON.stringify(await s.exportState())).not.toContain(id);

    h.sim.databases.opensBy(id, Date.now());
    let again = await s.up().catch((e: Error) => e);
    if (again instanceof Error && /locked/.test(again.message)) {
      await s.stack.cancel(); // the killed update's lock, as `pulumi cancel` removes it
      again = await s.up().catch((e: Error) => e);
    }
    if (again instanceof Error) {
      await s.stack.refresh({ clearPendingCreates: true });
      again = await s.up();
    }
    // The running fork is taken over, not made again: its password reset, then proved by a login.
    expect(writes(again.requests)).toEqual(["updatePassword"]);
    expect(again.outputs.id?.value).toBe(id);
    expect(again.stdout).toMatch(/tsdbadmin logged in and ran SELECT 1/);
    expect(forks().map((f) => [f.service_id, f.status])).toEqual([[id, "READY"]]);

    const { Client } = require("pg") as typeof import("pg");
    // The simulator's PostgreSQL has a self-signed certificate: libpq's sslmode=require (encrypt, do not verify).
    const client = new Client({ connectionString: `${again.outputs.uri?.value as string}&uselibpqcompat=true` });
    await client.connect();
    try {
      expect((await client.query("SELECT current_user, current_database(), version() LIKE 'PostgreSQL%' AS real")).rows).toEqual([
        { current_user: "tsdbadmin", current_database: "tsdb", real: true },
      ]);
    } finally {
      await client.end();
    }
  } finally {
    h.sim.delays = { ...h.sim.delays, loginLagMs: 0 };
  }
  await s.destroy();
});
