// The lab of the suites that read a fork's database: the engine against a simulator whose services
// run TimescaleDB (checked: a suite on anything less proves nothing), psql through a URL as its
// holder reads it, and the program of a fork prepared as a test declares.
import { execFile } from "child_process";
import { promisify } from "util";
import type { Delays } from "../../../simulator";
import { type EngineHarness, type Scenario, startEngine, tigercloud } from "./harness";

const run = promisify(execFile);

/** The engine and a simulator running TimescaleDB behind every service. */
export async function startOnTimescaleDB(delays: Partial<Delays>, eventsRows?: number): Promise<EngineHarness> {
  const h = await startEngine(delays, { databases: "postgres", eventsRows });
  expect(h.sim.databases.kind).toBe("timescaledb");
  return h;
}

/**
 * Production's hypertable at a tenth of its rows (simulator/production.ts makes it the same way: a
 * day at a time, its policies run by TimescaleDB's scheduler): for the suites whose ways need the
 * shape of production, not its size. The suite of masking's promise keeps its full size (more
 * compressed rows than TimescaleDB lets one UPDATE decompress).
 */
export const SHAPED_ROWS = 14_000;

/** What a URL's holder reads: psql with that URL, its output unaligned and trimmed. */
export async function readThrough(uri: string, sql: string): Promise<string> {
  return (await run("psql", [uri, "-X", "-A", "-t", "-c", sql], { timeout: 30_000 })).stdout.trim();
}

/** The preparation as a program declares it; tests also declare wrong ones, as a YAML program could. */
type Preparation = NonNullable<import("pulumi-tigercloud").ServiceForkArgs["prepare"]>;

/** A program forking the harness's source, prepared with `prepare` and deleted on destroy (and `more` of its properties). */
export const preparedForkProgram =
  (h: EngineHarness, name: string, prepare: object, more: Partial<import("pulumi-tigercloud").ServiceForkArgs> = {}) =>
  async () => {
    const { ServiceFork } = tigercloud();
    const f = new ServiceFork("f", {
      sourceServiceId: h.ids.serviceId,
      forkStrategy: "NOW",
      name,
      onDestroy: "delete",
      prepare: prepare as Preparation,
      ...more,
    });
    return { id: f.serviceId, uri: f.connectionUri, pooler: f.poolerConnectionUri, prepared: f.prepared, password: f.initialPassword };
  };

/**
 * What destroying a stack of a prepared fork leaves, without the engine: each fork its state
 * records deleted through the simulator's API, as the provider's delete asks it (its server stopped
 * and its data gone, waited for), then the stack removed from the backend. The engine's destroy is
 * the lifecycle suites' to test; here it started the provider again for every fork a test made.
 */
export async function discard(h: EngineHarness, s: Scenario): Promise<void> {
  type State = { checkpoint: { latest?: { resources?: { type: string; id?: string }[] } } };
  // A stack no update has written yet has no state file: nothing to delete.
  let state: State = { checkpoint: {} };
  try {
    state = JSON.parse(s.rawState()) as State;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
  }
  const forks = (state.checkpoint.latest?.resources ?? []).filter((r) => r.type.endsWith("tigercloud:ServiceFork") && r.id);
  for (const { id } of forks) {
    const url = `${h.sim.url}/projects/${h.ids.projectId}/services/${id}`;
    // A fork still busy (stopping after a failed preparation) is refused with a 409 until it is not.
    for (let tries = 0; ; tries++) {
      const answer = await fetch(url, { method: "DELETE", headers: { Authorization: `Bearer ${h.sim.apiKey}` } });
      await answer.arrayBuffer();
      if (answer.status === 202 || answer.status === 404) break;
      if (answer.status !== 409 || tries >= 100) throw new Error(`DELETE ${url}: ${answer.status}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    await h.sim.databases.settled(id as string);
  }
  await s.stack.workspace.removeStack(s.stack.name, { force: true });
}

/** Whether a text holds any production e-mail address (they all end so). */
export const holdsProduction = (text: string) => text.includes("@prod-customers.example.com");

/** A fork prepared as a test declares: its URL, what `prepared` said, and what the engine printed. */
export interface PreparedFork {
  uri: string;
  prepared: Record<string, unknown>;
  stdout: string;
}

/** A fork whose preparation failed: the failure's text, the state's, and the fork's service ID. */
export interface RefusedFork {
  message: string;
  state: string;
  id: string | undefined;
}

/**
 * A suite's lab on a TimescaleDB production, its hooks registered where it is called: the engine
 * and simulator started before the suite's tests and closed after them; production reached as its
 * superuser or as tsdbadmin (the objects a test makes there are then tsdbadmin's, as a user's are);
 * forks prepared as a test declares, each discarded after its test (its fork deleted, its stack
 * removed), with what the test adds to `cleanups`, in the order added.
 */
export function productionSuite(delays: Partial<Delays>, options: { eventsRows?: number } = {}) {
  let harness: EngineHarness | undefined;
  const cleanups: (() => Promise<unknown>)[] = [];
  beforeAll(async () => {
    harness = await startOnTimescaleDB(delays, options.eventsRows);
  });
  afterAll(async () => {
    await harness?.close();
  });
  afterEach(async () => {
    for (const c of cleanups.splice(0)) await c().catch(() => undefined);
  });
  const h = () => {
    if (!harness) throw new Error("the lab is started in beforeAll: use it in a test or a hook");
    return harness;
  };
  /** Production, as its superuser. */
  const asSuperuser = async (sql: string) => (await h().sim.databases.query(h().ids.serviceId, sql)).trim();
  /** Production, as tsdbadmin (SET ROLE: the role's own settings are not applied). */
  const inProduction = (sql: string) => asSuperuser(`SET ROLE tsdbadmin; ${sql}`);
  const forkProgram = (name: string, prepare: object) => preparedForkProgram(h(), name, prepare);
  /**
   * A fork prepared with `prepare`: its URL and what `prepared` said; discarded (its fork deleted,
   * its stack removed) after the test, or by whoever `destroyLater` hands that to (a fork a
   * describe's tests share).
   */
  async function preparedFork(
    name: string,
    prepare: object,
    destroyLater: (destroy: () => Promise<unknown>) => void = (destroy) => cleanups.push(destroy),
  ): Promise<PreparedFork> {
    const s = await h().stack(name, forkProgram(name, prepare));
    destroyLater(() => discard(h(), s));
    const up = await s.up();
    return { uri: up.outputs.uri?.value as string, prepared: up.outputs.prepared?.value as Record<string, unknown>, stdout: up.stdout };
  }
  /** A fork whose preparation must fail: the failure's text, the state's, and no URL published. */
  async function refusedFork(name: string, prepare: object): Promise<RefusedFork> {
    const s = await h().stack(name, forkProgram(name, prepare));
    cleanups.push(() => discard(h(), s));
    const message = await s.up().then(
      () => "",
      (err: Error) => err.message,
    );
    const fork = (await s.exportState()).resources?.find((r) => r.type.endsWith("tigercloud:ServiceFork"));
    expect(fork?.outputs?.connectionUri).toBeUndefined();
    expect(fork?.outputs?.preparePending).toBe(true);
    return { message, state: s.rawState(), id: fork?.id };
  }
  return {
    get h() {
      return h();
    },
    cleanups,
    asSuperuser,
    inProduction,
    forkProgram,
    /** A stack's forks deleted and the stack removed, as its destroy would leave them. */
    discard: (s: Scenario) => discard(h(), s),
    preparedFork,
    refusedFork,
  };
}
