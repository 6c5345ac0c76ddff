// The dynamic provider host: the engine's dynamic-provider process configures each resource
// kind's provider object with the stack's config, then calls it with property bags in its own
// dialect (wire.ts). Each call runs the resource's lifecycle with a context made from the stack's
// settings and what the bags say of the call. This module holds the process's settings and what
// its run has learnt: a host's state, which nothing below it keeps.
import * as crypto from "crypto";
import type * as pulumi from "@pulumi/pulumi";
import { type CallContext, type HostOptions, type HostSettings, makeContext } from "../../context/context";
import type { RunSlot } from "../../context/memory";
import { PartialFailureError } from "../../errors";
import type { Lifecycle } from "../../resources/define";
import { isUnknown } from "../../rules/inputs";
import { type ConfigLookup, SETTING_SOURCES } from "../../settings";
import { engineReporter } from "../engineLog";
import { endWithEngine } from "../engineWatch";
import { answer, DynamicPartialFailure, type Received, receive } from "./wire";

export { DynamicPartialFailure };

/** The process's settings, set by configure; what its run has learnt; the options tests set. */
let settings: Pick<HostSettings, "config" | "memory"> = { config: () => undefined, memory: new Map<RunSlot<unknown>, unknown>() };
let options: HostOptions = {};
let settingsDigest = "";

/** Starts a new run: everything learnt before is forgotten (new settings; a test's new "run"). */
export function startRun(): void {
  settings = { ...settings, memory: new Map() };
}

/** Replaces the host's options (tests: fast backoff and polling). The defaults stay frozen. */
export function setHostOptions(next: HostOptions): void {
  options = next;
}

/** Called from configure(): stack config is read from here on. */
export function configureFromStack(req: pulumi.dynamic.ConfigureRequest): void {
  endWithEngine();
  const config: ConfigLookup = (key) => {
    const value: unknown = req.config.get(key);
    return typeof value === "string" ? value : undefined;
  };
  settings = { ...settings, config };
  // The engine configures each resource kind's provider object with the same config: only
  // different settings (a test's) make what was learned under the earlier ones stale. A digest,
  // so that no credential is kept beyond the config itself.
  const digest = crypto
    .createHash("sha256")
    .update(JSON.stringify(Object.values(SETTING_SOURCES).map((s) => config(s.config) ?? null)))
    .digest("hex");
  if (digest !== settingsDigest) startRun();
  settingsDigest = digest;
}

/** The engine's address as the dynamic provider's process was given it (its first argument). */
function engineAddress(): string | undefined {
  const address = process.argv[2];
  return /dynamic-provider/.test(process.argv[1] ?? "") && address !== undefined ? address : undefined;
}

/** A call's context: the stack's settings, and what the bags (its inputs, its state) say of the call. */
function contextOf(...received: Received[]): CallContext {
  const [first] = received;
  return makeContext(
    // Progress to stderr, which the engine shows; warnings through the engine's log.
    { ...settings, configWord: "stack config", options, reporter: engineReporter(engineAddress(), { progressToEngine: false }) },
    { resource: first?.resource ?? { name: "(unnamed)", urn: "(unnamed)" }, secrets: received.flatMap((r) => r.secrets) },
  );
}

/** Runs a create or update: a partial failure goes back with the dialect's keys, for the engine to record. */
async function recording<T>(from: Received, provider: unknown, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    throw err instanceof PartialFailureError ? new DynamicPartialFailure(err, from, provider) : err;
  }
}

/** A resource's lifecycle as the engine's dynamic-provider process calls it. */
export function dynamicProvider(lifecycle: Lifecycle): Required<pulumi.dynamic.ResourceProvider> {
  return {
    async configure(req) {
      configureFromStack(req);
    },
    async check(olds, news) {
      const [old, next] = [receive(olds), receive(news)];
      const checked = await lifecycle.check(contextOf(next, old), old.properties, next.properties);
      return { inputs: answer(checked.inputs, next, news.__provider), failures: checked.failures };
    },
    async diff(id, olds, news) {
      const [old, next] = [receive(olds), receive(news)];
      const found = await lifecycle.diff(contextOf(next, old), id, old.properties, next.properties);
      // A new release of this package changes the serialized provider: an update that calls no API.
      const providerChanged = olds.__provider !== news.__provider && !isUnknown(news.__provider);
      return { ...found, changes: found.changes || providerChanged };
    },
    async create(news) {
      const next = receive(news);
      const made = await recording(next, news.__provider, () => lifecycle.create(contextOf(next), next.properties));
      return { id: made.id, outs: answer(made.state, next) };
    },
    async read(id, props) {
      const recorded = receive(props);
      const found = await lifecycle.read(contextOf(recorded), id, recorded.properties);
      if (!found) return {};
      return {
        id: found.id,
        props: answer(found.state, recorded),
        ...(found.inputs ? { inputs: answer(found.inputs, recorded) } : {}),
      };
    },
    async update(id, olds, news) {
      const [old, next] = [receive(olds), receive(news)];
      const outs = await recording(next, news.__provider, () =>
        lifecycle.update(contextOf(next, old), id, old.properties, next.properties),
      );
      return { outs: answer(outs, next) };
    },
    async delete(id, props) {
      const recorded = receive(props);
      await lifecycle.delete(contextOf(recorded), id, recorded.properties);
    },
  };
}
