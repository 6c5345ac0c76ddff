// A fork is ready when you can connect to it: the real engine, and a real PostgreSQL server behind
// every simulated service. The connection URIs log in (psql, node-postgres) to a copy of the
// parent's data; a late login is waited for; one that never comes is a partial failure the next
// `up` finishes; a stopped fork refuses connections; the URIs are secret everywhere. And no
// server of the simulator outlives its process, however it ends.
import { type ChildProcess, execFile, spawn } from "child_process";
import * as fs from "fs";
import * as path from "path";
import { promisify } from "util";
import { SAMPLE_ROWS, SAMPLE_TABLE } from "../../simulator";
import { type EngineHarness, startEngine, tigercloud } from "../support/lab/harness";

jest.setTimeout(180_000);
const run = promisify(execFile);
let h: EngineHarness;

beforeAll(async () => {
  h = await startEngine(undefined, { databases: "postgres" });
  // CI runs this with PostgreSQL and TimescaleDB installed (scripts/ensure-postgresql): anything less here is a failure.
  expect({ kind: h.sim.databases.kind, note: h.sim.databases.note }).toEqual({ kind: "timescaledb", note: undefined });
});
afterAll(async () => {
  await h?.close();
});

/** Rows of the sample table, read with psql through `uri`. */
async function psqlCount(uri: string): Promise<number> {
  const { stdout } = await run("psql", [uri, "-X", "-A", "-t", "-c", `SELECT count(*) FROM ${SAMPLE_TABLE}`], { timeout: 20_000 });
  return Number(stdout.trim());
}

/** A secret output as the Automation API's export holds it (decrypted, in its envelope). */
const plaintext = (v: unknown) => JSON.parse((v as { plaintext: string }).plaintext) as unknown;

const parentRows = async () => Number((await h.sim.databases.query(h.ids.serviceId, `SELECT count(*) FROM ${SAMPLE_TABLE}`)).trim());

const forkProgram =
  (name: string, extra: Record<string, unknown> = {}) =>
  async () => {
    const { ServiceFork } = tigercloud();
    const fork = new ServiceFork(name, { sourceServiceId: h.ids.serviceId, forkStrategy: "NOW", name, ...extra });
    return {
      serviceId: fork.serviceId,
      connectionUri: fork.connectionUri,
      poolerConnectionUri: fork.poolerConnectionUri,
      host: fork.host,
      port: fork.port,
      database: fork.database,
      username: fork.username,
    };
  };

test("the URIs log in with psql and node-postgres to a copy of the parent's data as of the fork; secret in outputs and state; refresh keeps them; destroy (stop) leaves a fork that refuses connections", async () => {
  const s = await h.stack("uri", forkProgram("conn-uri"));
  const up = await s.up();
  const out = (k: string) => up.outputs[k]?.value as string;
  expect(up.outputs.connectionUri?.secret).toBe(true);
  expect(up.outputs.poolerConnectionUri?.secret).toBe(true);
  expect(out("connectionUri")).toMatch(/^postgresql:\/\/tsdbadmin:[^@]+@127\.0\.0\.1:\d+\/tsdb\?sslmode=require$/);
  expect({ host: out("host"), database: out("database"), username: out("username") }).toEqual({
    host: "127.0.0.1",
    database: "tsdb",
    username: "tsdbadmin",
  });
  expect(up.stdout).toMatch(/tsdbadmin logged in and ran SELECT 1/);

  // Written to the parent after the fork: not in the fork.
  await h.sim.databases.query(h.ids.serviceId, `INSERT INTO ${SAMPLE_TABLE} SELECT now(), 'late', 1 FROM generate_series(1, 5)`);
  expect(await psqlCount(out("connectionUri"))).toBe(SAMPLE_ROWS);
  expect(await psqlCount(out("poolerConnectionUri"))).toBe(SAMPLE_ROWS);
  expect(await parentRows()).toBe(SAMPLE_ROWS + 5);

  // node-postgres reads sslmode=require as verify-full unless told to follow libpq; the
  // simulator's certificate is self-signed (Tiger Cloud's is not).
  const { Client } = require("pg") as typeof import("pg");
  const client = new Client({ connectionString: `${out("connectionUri")}&uselibpqcompat=true` });
  await client.connect();
  try {
    const { rows } = await client.query<{ count: string; ssl: boolean }>(
      `SELECT count(*)::text AS count, (SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()) AS ssl FROM ${SAMPLE_TABLE}`,
    );
    expect(rows[0]).toEqual({ count: String(SAMPLE_ROWS), ssl: true });
  } finally {
    await client.end();
  }

  const password = new URL(out("connectionUri")).password;
  expect(s.cli(["stack", "output"])).toMatch(/connectionUri\s+\[secret\]/);
  for (const text of [s.rawState(), s.exportWithCli(), s.cli(["stack", "output", "--json"])]) {
    expect(text).not.toContain(password);
    expect(text).not.toContain(decodeURIComponent(password));
    expect(text).not.toContain(out("connectionUri"));
  }

  expect((await s.refresh()).changes).toEqual({ same: 2 });
  const fork = (await s.exportState()).resources?.find((r) => r.type.endsWith("ServiceFork"));
  expect(plaintext(fork?.outputs?.connectionUri)).toBe(out("connectionUri"));

  await s.destroy();
  expect(h.sim.service(h.ids.projectId, out("serviceId"))?.status).toBe("PAUSED");
  await expect(psqlCount(out("connectionUri"))).rejects.toThrow(/Connection refused/);
});

test("a fork whose login comes 5 s after READY is waited for: up returns once a login works", async () => {
  h.sim.delays = { ...h.sim.delays, loginLagMs: 5000 };
  try {
    const s = await h.stack("lag", forkProgram("conn-lag"));
    const rows = await parentRows();
    const started = Date.now();
    const up = await s.up();
    expect(Date.now() - started).toBeGreaterThan(5000);
    expect(up.stdout).toMatch(/its database is still starting, not taking logins yet \(\d+ s elapsed\)/);
    expect(up.stdout).not.toMatch(/Connection terminated unexpectedly/);
    expect(up.stdout).toMatch(/tsdbadmin logged in and ran SELECT 1 \([5-9] s after READY\)/);
    expect(await psqlCount(up.outputs.connectionUri?.value as string)).toBe(rows);
    await s.destroy();
  } finally {
    h.sim.delays = { ...h.sim.delays, loginLagMs: 0 };
  }
});

test("a fork whose login never works times out into state; the next up, once it works, finishes it without forking again", async () => {
  h.sim.delays = { ...h.sim.delays, loginLagMs: 60 * 60_000 };
  const s = await h.stack("never", forkProgram("conn-never", { createTimeout: "4s" }));
  try {
    const err = await s.up().then(
      () => undefined,
      (e: Error) => e,
    );
    expect(String(err?.message)).toMatch(/Timed out after \d+ s waiting for a login to service svc-\w+ at 127\.0\.0\.1:\d+ as tsdbadmin/);
    const recorded = (await s.exportState()).resources?.find((r) => r.type.endsWith("ServiceFork"));
    expect(recorded?.id).toMatch(/^svc-/);
    expect(recorded?.outputs).toMatchObject({ status: "READY", loginPending: true });
    expect(plaintext(recorded?.outputs?.connectionUri)).toMatch(/^postgresql:\/\/tsdbadmin:/);

    h.sim.databases.opensBy(recorded?.id as string, Date.now());
    const retry = await s.up();
    expect(retry.requests.map((r) => r.operation)).not.toContain("forkService");
    expect(retry.stdout).toMatch(/tsdbadmin logged in/);
    const after = (await s.exportState()).resources?.find((r) => r.type.endsWith("ServiceFork"));
    expect(after?.outputs?.loginPending).toBeUndefined();
    expect(await psqlCount(retry.outputs.connectionUri?.value as string)).toBe(await parentRows());
  } finally {
    h.sim.delays = { ...h.sim.delays, loginLagMs: 0 };
  }
  await s.destroy();
});

describe("no server outlives the simulator's process", () => {
  /** Processes whose command line names `dir` (the simulator's servers). */
  const processesIn = (dir: string) =>
    fs.readdirSync("/proc").filter((pid) => {
      try {
        return /^\d+$/.test(pid) && fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(dir);
      } catch {
        return false;
      }
    });

  /** A process that starts a simulator with databases and forks once; resolves with its directory. */
  async function simulatorProcess(): Promise<{ child: ChildProcess; dir: string }> {
    const script = `
      const { Simulator } = require(${JSON.stringify(path.join(__dirname, "..", "..", "simulator"))});
      (async () => {
        const sim = new Simulator({ databases: "postgres" });
        const url = await sim.start();
        const { projectId, serviceId } = sim.defaults();
        const r = await fetch(url + "/projects/" + projectId + "/services/" + serviceId + "/forkService", {
          method: "POST", headers: { authorization: "Bearer " + sim.apiKey, "content-type": "application/json" },
          body: JSON.stringify({ fork_strategy: "NOW" }) });
        await sim.databases.settled((await r.json()).service_id);
        console.log(JSON.stringify({ dir: sim.databases.directory }));
        setInterval(() => undefined, 1000);
      })();`;
    const child = spawn(process.execPath, ["-r", "ts-node/register/transpile-only", "-e", script], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    const line = await new Promise<string>((resolve, reject) => {
      child.stdout?.once("data", (d: Buffer) => resolve(d.toString()));
      child.once("exit", () => reject(new Error("the simulator process ended before it was ready")));
    });
    return { child, dir: (JSON.parse(line) as { dir: string }).dir };
  }

  async function goneWithin(dir: string, ms: number): Promise<number> {
    const started = Date.now();
    while (Date.now() - started < ms) {
      if (!fs.existsSync(dir) && processesIn(dir).length === 0) return Date.now() - started;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(
      `after ${ms} ms, ${dir} ${fs.existsSync(dir) ? "still exists" : "is gone"}; processes left: ${processesIn(dir).join(", ")}`,
    );
  }

  test.each(["SIGTERM", "SIGKILL"] as const)("%s: its servers stop and its directory goes within seconds", async (signal) => {
    const { child, dir } = await simulatorProcess();
    expect(processesIn(dir).length).toBeGreaterThanOrEqual(2); // the parent's server and the fork's
    child.kill(signal);
    expect(await goneWithin(dir, 8000)).toBeLessThan(8000);
  });

  test("a start that fails part-way (its seed refused, after the parent's server started) stops what it started", async () => {
    const { Databases } = require("../../simulator/databases") as typeof import("../../simulator/databases");
    const seed = Databases.prototype.seed;
    // The real seed runs (its server starts), then the seed is refused, as a bad seed's SQL would be.
    const refused = jest.spyOn(Databases.prototype, "seed").mockImplementation(async function (
      this: InstanceType<typeof Databases>,
      ...args
    ) {
      await seed.apply(this, args);
      throw new Error("seed refused");
    });
    const { Simulator } = require("../../simulator") as typeof import("../../simulator");
    const sim = new Simulator({ databases: "postgres" });
    try {
      await expect(sim.start()).rejects.toThrow("seed refused");
      expect(refused).toHaveBeenCalled();
      const dir = sim.databases.directory;
      expect(dir).not.toBe("");
      expect(await goneWithin(dir, 8000)).toBeLessThan(8000);
    } finally {
      refused.mockRestore();
    }
  });
});
