// Shared test set-up: a simulator on loopback and a client pointed at it with fast retries.
import { createClient, type ClientOptions, type TigerCloudClient } from "../provider/client";
import { Simulator, type SimulatorOptions } from "./simulator/server";

export interface SimAndClient {
  sim: Simulator;
  client: TigerCloudClient;
  ids: { projectId: string; serviceId: string; vpcId: string };
  /** Backoff waits the client asked for, in order (the test's sleep returns at once). */
  sleeps: number[];
}

export async function startSimulator(options: SimulatorOptions = {}, clientOptions: Partial<ClientOptions> = {}): Promise<SimAndClient> {
  const sim = new Simulator(options);
  const url = await sim.start();
  const sleeps: number[] = [];
  const client = createClient({ apiUrl: url, apiKey: sim.apiKey }, () => undefined, {
    sleep: async (ms) => {
      sleeps.push(ms);
    },
    requestTimeoutMs: 2000,
    ...clientOptions,
  });
  return { sim, client, ids: sim.defaults(), sleeps };
}

/** Resolves with the error a promise rejects with; fails the test if it resolves. */
export async function rejectionOf(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (err) {
    return err as Error;
  }
  throw new Error("expected the promise to reject, but it resolved");
}
