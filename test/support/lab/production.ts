// The lab of the suites that read a fork's database: the engine against a simulator whose services
// run TimescaleDB (checked: a suite on anything less proves nothing), psql through a URL as its
// holder reads it, and the program of a fork prepared as a test declares.
import { execFile } from "child_process";
import { promisify } from "util";
import type { Delays } from "../../../simulator";
import { type EngineHarness, startEngine, tigercloud } from "./harness";

const run = promisify(execFile);

/** The engine and a simulator running TimescaleDB behind every service. */
export async function startOnTimescaleDB(delays: Partial<Delays>): Promise<EngineHarness> {
  const h = await startEngine(delays, { databases: "postgres" });
  expect(h.sim.databases.kind).toBe("timescaledb");
  return h;
}

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
