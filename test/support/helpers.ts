// Shared test set-up: a simulator on loopback and a client pointed at it with fast retries; and the
// scan that proves no part of a secret reaches any text a person or a log could see.
import { providers } from "../../provider/hosts/dynamic/runtime";
import type * as pulumi from "@pulumi/pulumi";
import { type CallContext, type HostOptions, makeContext } from "../../provider/context/context";
import { setHostOptions } from "../../provider/hosts/dynamic/provider";
import { inspect } from "util";
import { createClient, type ClientOptions, type TigerCloudClient } from "../../provider/api/client";
import { Simulator, type SimulatorOptions } from "../../simulator";
import type { DatabaseFailure, Session } from "../../provider/database/session";

const serviceForkProvider = providers.ServiceFork;

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

/** How many consecutive characters of a secret count as a leak. */
export const SECRET_FRAGMENT_CHARS = 6;

/**
 * Fails, naming the text and the fragment, if any run of 6 consecutive characters of any secret
 * appears in any of the texts. Secrets shorter than that must not appear whole.
 */
export function expectNoSecretFragments(texts: readonly string[], secrets: readonly string[]): void {
  for (const secret of secrets) {
    const size = Math.min(SECRET_FRAGMENT_CHARS, secret.length);
    for (let i = 0; i + size <= secret.length; i++) {
      const fragment = secret.slice(i, i + size);
      const leaking = texts.findIndex((text) => text.includes(fragment));
      if (leaking >= 0) {
        const text = texts[leaking] as string;
        const at = text.indexOf(fragment);
        throw new Error(
          `text ${leaking} holds "${fragment}", ${size} characters of a secret, at ${at}: …${text.slice(Math.max(0, at - 60), at + 60)}…`,
        );
      }
    }
  }
}

/** Every form an error takes when printed or logged: message, stack, JSON, util.inspect; the same for each error in its cause chain. */
export function errorTexts(err: unknown): string[] {
  const texts: string[] = [];
  const seen = new Set<unknown>();
  for (let e: unknown = err; e !== undefined && e !== null && !seen.has(e); e = (e as { cause?: unknown }).cause) {
    seen.add(e);
    if (e instanceof Error) texts.push(e.message, e.stack ?? "");
    texts.push(String(e));
    try {
      texts.push(JSON.stringify(e) ?? "");
    } catch (jsonError) {
      texts.push(`JSON.stringify threw: ${String(jsonError)}`);
    }
    texts.push(inspect(e, { depth: 20, showHidden: true }));
  }
  return texts;
}

/** Stack config as configure() receives it from the engine, by full key; every resource shares it. */
export async function configureProviders(values: Record<string, string>): Promise<void> {
  const req = { config: { get: (k: string) => values[k], require: (k: string) => values[k] as string } };
  await serviceForkProvider.configure(req as unknown as pulumi.dynamic.ConfigureRequest);
}

/** A simulator on loopback, the providers configured for it, and fast backoff and polling; with
 *  `captureStderr`, the progress lines written from now on are collected in `stderr`. */
export async function startProviderSim(
  options: SimulatorOptions = {},
  { captureStderr: capture = false } = {},
): Promise<{ sim: Simulator; ids: ReturnType<Simulator["defaults"]>; stderr: string[] }> {
  const sim = new Simulator(options);
  await sim.start();
  const ids = sim.defaults();
  await configureProviders({ "tigercloud:apiUrl": sim.url, "tigercloud:apiKey": sim.apiKey, "tigercloud:projectId": ids.projectId });
  setHostOptions({ client: { baseDelayMs: 1, maxDelayMs: 5 }, poll: { firstPollMs: 20, maxPollMs: 50 } });
  return { sim, ids, stderr: capture ? captureStderr() : [] };
}

/** The serialized provider's text, as the engine hands it back in a dynamic provider's bags. */
export const P = "serialized-provider-text";

/** The simulator's default IDs (its project, its service, its VPC). */
export type Ids = ReturnType<Simulator["defaults"]>;

/** A dynamic provider's check failures for `news`, each as "property: reason". */
export async function failuresOf(
  provider: {
    check(olds: Record<string, unknown>, news: Record<string, unknown>): Promise<{ failures?: { property?: string; reason: string }[] }>;
  },
  news: Record<string, unknown>,
): Promise<string[]> {
  return ((await provider.check({}, { __provider: P, ...news })).failures ?? []).map((f) => `${f.property}: ${f.reason}`);
}

/** The simulator, its default IDs, and the progress lines so far, for the test that is running. */
export interface ProviderSim {
  sim: Simulator;
  ids: ReturnType<Simulator["defaults"]>;
  stderr: string[];
}

/**
 * A fresh simulator for each test of the suite, with the providers configured for it and stderr
 * captured: `take` receives each test's, and it is stopped after the test.
 */
export function providerSimForEachTest(take: (current: ProviderSim) => void): void {
  let sim: Simulator | undefined;
  beforeEach(async () => {
    const current = await startProviderSim({}, { captureStderr: true });
    sim = current.sim;
    take(current);
  });
  afterEach(() => stopProviderSim(sim));
}

/** Undoes startProviderSim, its stderr capture included. */
export async function stopProviderSim(sim: Simulator | undefined): Promise<void> {
  jest.restoreAllMocks();
  setHostOptions({});
  await sim?.stop();
}

/** Captures what is written to stderr (progress lines) until jest.restoreAllMocks(); returns the lines so far. */
export function captureStderr(): string[] {
  const lines: string[] = [];
  jest.spyOn(process.stderr, "write").mockImplementation((chunk: string | Uint8Array) => {
    lines.push(String(chunk));
    return true;
  });
  return lines;
}

/** Resolves once `holds()` is true, polled; fails naming `what` after `timeoutMs`: a wait on state, not on a timer. */
export async function eventually(what: string, holds: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!holds()) {
    if (Date.now() > deadline) throw new Error(`not so within ${timeoutMs} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** The ID of the fork named `name` once the simulator holds it (a create still under way made it). */
export async function forkAppears(sim: Simulator, projectId: string, name: string, timeoutMs = 10_000): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = sim.services(projectId).find((s) => s.name === name);
    if (found) return found.service_id;
    if (Date.now() > deadline) throw new Error(`no fork named ${name} appeared within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** A call's context with no settings (the environment's only), `options`, and progress and warnings on stderr: for a policy called on its own. */
export function testContext(options: HostOptions = {}): CallContext {
  const reporter = {
    progress: (message: string) => void process.stderr.write(`[tigercloud] ${message}\n`),
    warning: async (message: string) => void process.stderr.write(`warning: [tigercloud] ${message}\n`),
  };
  return makeContext(
    { config: () => undefined, configWord: "stack config", memory: new Map(), options, reporter },
    { resource: { urn: "urn:pulumi:test::test::test:index:Test::test", name: "test" } },
  );
}

/**
 * A PostgreSQL session that answers as `answer` says (rows, or a failure to throw), recording each
 * statement it was sent (whitespace folded): the SQL a runner sends, without a server.
 */
export function recordingSession(answer: (text: string, params?: readonly unknown[], session?: number) => object[] | DatabaseFailure) {
  /** Every statement, in the order sent; `bySession[i]`, those the i-th session opened sent, and whether it was ended. */
  const sent: string[] = [];
  const bySession: { sent: string[]; ended: boolean }[] = [];
  const open = async (): Promise<Session> => {
    const mine = { sent: [] as string[], ended: false };
    const index = bySession.push(mine) - 1;
    return {
      query: async <Row extends object>(text: string, params?: readonly unknown[]) => {
        const flat = text.replace(/\s+/g, " ").trim();
        sent.push(flat);
        mine.sent.push(flat);
        // A turn of the event loop, as a server's answer takes: another session's statement may come first.
        await new Promise((resolve) => setImmediate(resolve));
        const result = answer(text, params, index);
        if (!Array.isArray(result)) throw Object.assign(new Error(result.message ?? "failed"), result);
        return result as Row[];
      },
      end: async () => {
        mine.ended = true;
      },
    };
  };
  return { sent, bySession, open };
}
