// What a provider method runs with in the engine's provider process: stack config (handed over by
// configure), a client made from it, progress lines on stderr, which the engine shows, and
// warnings through the engine's own log.
import * as crypto from "crypto";
import * as path from "path";
import type * as pulumi from "@pulumi/pulumi";
import { CLIENT_DEFAULTS, type ClientOptions, createClient, type TigerCloudClient } from "../api/client";
import { secretRedactor } from "../api/redaction";
import {
  type ConfigLookup,
  credentialSource,
  projectIdSource,
  resolveProjectId,
  resolveVerifyReferences,
  SETTING_SOURCES,
} from "../settings";
import type { RunMemory, RunSlot } from "../run";
import { printable } from "../text";
import { endWithEngine } from "./engineWatch";

/** How fast waits poll; a test passes smaller numbers through setHostOptions. */
export interface PollOptions {
  firstPollMs: number;
  maxPollMs: number;
  pollShare: number;
}

/** Options that change how the host behaves, not what it does (tests use them to go fast). */
export interface HostOptions {
  client?: Partial<ClientOptions>;
  poll?: Partial<PollOptions>;
  /** The login probe's backoff (workflows/connection.ts). */
  login?: Partial<LoginTiming>;
}

/** How the login probe backs off: from firstDelayMs, doubling, at most maxDelayMs; each attempt at most attemptTimeoutMs. */
export interface LoginTiming {
  firstDelayMs: number;
  maxDelayMs: number;
  attemptTimeoutMs: number;
}

/**
 * What a host's calls run with: its settings (the dynamic provider's stack config, or a plugin
 * provider instance's configuration), what its run has learnt, and where its warnings go.
 */
export interface HostSettings {
  config: ConfigLookup;
  /** What this run has learnt, by slot (run.ts). */
  learnt: Map<RunSlot<unknown>, unknown>;
  /** The engine's address, whose Log service takes warnings; none: warnings are progress lines. */
  engineAddress?: string | undefined;
  /** The gRPC library to reach it with: by default, the SDK's own (the dynamic provider runs on it). */
  grpc?: GrpcLibrary | undefined;
  /**
   * The resource a plugin's call works on: its progress goes to the engine's log as that
   * resource's status (the engine hides a plugin's stderr). Unset (the dynamic provider, whose
   * stderr the engine shows): progress lines go to stderr.
   */
  urn?: string | undefined;
  /** How messages name where a setting was read: "stack config" (default), "provider setting". */
  configWord?: string | undefined;
  /**
   * The values of this call's inputs and state that the program marked secret: no progress line,
   * warning, error or check failure shows them (see conceal).
   */
  secrets?: readonly string[] | undefined;
  /** The operation's own deadline (the plugin's customTimeouts): no request of the call outlives it. */
  deadline?: number | undefined;
}

/** The dynamic provider's: one per provider process, set by configure. */
let stackSettings: HostSettings = { config: () => undefined, learnt: new Map() };
let options: HostOptions = {};
let settingsDigest = "";

/** Starts a new run: everything learnt before is forgotten (new settings; a test's new "run"). */
export function startRun(): void {
  stackSettings.learnt = new Map();
}

/** Called from configure(): stack config is read from here on. */
export function configureFromStack(req: pulumi.dynamic.ConfigureRequest): void {
  endWithEngine();
  const config: ConfigLookup = (key) => {
    const value: unknown = req.config.get(key);
    return typeof value === "string" ? value : undefined;
  };
  stackSettings = { ...stackSettings, config, engineAddress: dynamicProviderEngineAddress() };
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

/** Replaces the host options (tests: fast backoff and polling). The defaults stay frozen. */
export function setHostOptions(next: HostOptions): void {
  options = next;
}

/**
 * A client with settings resolved now: the host's settings, then the environment. `limits` tighten
 * the client's own numbers (a caller that must answer quickly); they never loosen them.
 */
function clientFromSettings(
  config: ConfigLookup,
  progress: (message: string) => void,
  limits: ClientLimits = {},
  secrets: readonly string[] = [],
  deadline?: number,
): TigerCloudClient {
  const tightened = Object.fromEntries(
    Object.entries(limits).map(([key, limit]) => {
      const own = options.client?.[key as keyof typeof limits] ?? CLIENT_DEFAULTS[key as keyof typeof limits];
      return [key, Math.min(limit, own)];
    }),
  );
  return createClient({}, config, {
    onRetry: (e) =>
      progress(
        `${e.operation}: retrying (attempt ${e.attempt} of ${e.maxAttempts}) in ${(e.delayMs / 1000).toFixed(1)} s after: ${e.reason}`,
      ),
    ...options.client,
    ...tightened,
    secrets,
    ...(deadline === undefined ? {} : { deadline }),
  });
}

/** What the provider process's settings allow a call: `limits` tighten the client's own numbers. */
export type ClientLimits = Partial<Pick<ClientOptions, "requestTimeoutMs" | "maxAttempts" | "maxTotalMs">>;

/**
 * What one call of a provider method runs with, built by the host and handed to every lifecycle:
 * its settings, a client made from them, where progress and warnings go, and the host's options
 * (tests pass faster polling through them). Nothing below the
 * host reads settings or options any other way (test/structure.test.ts).
 */
export interface CallContext extends RunMemory {
  /** A client with this call's settings; `secrets` are redacted from its errors too. */
  client(limits?: ClientLimits, secrets?: readonly string[]): TigerCloudClient;
  progress(message: string): void;
  warning(message: string, urn?: string): Promise<void>;
  readonly options: Readonly<HostOptions>;
  /** Whether check verifies references (tigercloud:verifyReferences / TIGER_VERIFY_REFERENCES). */
  readonly verifyReferences: boolean;
  /** Where the credentials come from (a config key or a variable, never the value), if any. */
  readonly credentialSource: string | undefined;
  /** The project of stack config or the environment, for a resource that sets none. */
  readonly projectId: string | undefined;
  /** Where that project comes from (a config key or a variable), if any. */
  readonly projectIdSource: string | undefined;
  /** How messages name a setting's key: "stack config tigercloud:projectId", or the plugin's "provider setting …". */
  readonly configWord: string;
  /** The operation's deadline the host was given (the plugin's customTimeouts), if any. */
  readonly deadline: number | undefined;
  /** `text` without any value the program marked secret, and escaped: what a person may be shown. */
  conceal(text: string): string;
}

/** A function that takes the given secret values out of a text, and escapes it (printable). */
export function concealer(secrets: readonly string[] = []): (text: string) => string {
  const values = secrets.filter((s) => s.length > 0);
  if (values.length === 0) return printable;
  const redact = secretRedactor([...values]);
  // Before and after the escaping: an escape could break a value apart, or complete one.
  return (text) => redact(printable(redact(text)));
}

/**
 * The context of a call starting now, from a host's settings (by default the dynamic provider's
 * stack config) and the process's options.
 */
export function callContext(settings: HostSettings = stackSettings): CallContext {
  const { config, learnt } = settings;
  const conceal = concealer(settings.secrets);
  const progress = progressTo(settings, conceal);
  const configWord = settings.configWord ?? "stack config";
  return {
    client: (limits, secrets = []) =>
      clientFromSettings(config, progress, limits, [...secrets, ...(settings.secrets ?? [])], settings.deadline),
    progress,
    warning: (message, urn) => warning(settings, conceal(message), urn),
    conceal,
    configWord,
    deadline: settings.deadline,
    options,
    learnt<T>(slot: RunSlot<T>): T {
      if (!learnt.has(slot)) learnt.set(slot, slot.fresh());
      return learnt.get(slot) as T;
    },
    // Read when asked: a setting that is wrong fails where it is used (a check failure there).
    get verifyReferences() {
      return resolveVerifyReferences(config);
    },
    get credentialSource() {
      return credentialSource(config, process.env, configWord);
    },
    get projectIdSource() {
      return projectIdSource(config, process.env, configWord);
    },
    // The project a resource uses when its input leaves it unset: the settings, then the environment.
    get projectId() {
      return resolveProjectId(undefined, config);
    },
  };
}

/**
 * The values, as text, of the properties a dynamic program marked secret (`__secretInputs`, which
 * its resource classes add), in each of `bags`: a call's inputs, or its state.
 */
export function secretInputValues(...bags: Record<string, unknown>[]): string[] {
  const values: string[] = [];
  const collect = (v: unknown): void => {
    if (typeof v === "string" || typeof v === "number") values.push(String(v));
    else if (Array.isArray(v)) v.forEach(collect);
    else if (typeof v === "object" && v !== null) Object.values(v).forEach(collect);
  };
  for (const bag of bags) {
    const names = bag.__secretInputs;
    if (Array.isArray(names)) for (const name of names) if (typeof name === "string" && !name.startsWith("__")) collect(bag[name]);
  }
  return values;
}

/** The context of a dynamic provider's call: stack config, and the secret values of `bags` (its inputs, its state). */
export function dynamicCallContext(...bags: Record<string, unknown>[]): CallContext {
  return callContext({ ...stackSettings, secrets: secretInputValues(...bags) });
}

/** Progress lines a person can follow; anything from outside in them is escaped. */
function progressTo(settings: HostSettings, conceal: (text: string) => string): (message: string) => void {
  const { engineAddress, urn } = settings;
  const log = engineAddress !== undefined && urn !== undefined ? engineLog(engineAddress, settings.grpc) : null;
  if (log === null) return (message) => process.stderr.write(`[tigercloud] ${conceal(message)}\n`);
  // The resource's status in the engine's display (ephemeral: not kept among its diagnostics).
  return (message) =>
    log.client.log(log.request("info", `[tigercloud] ${conceal(message)}`, urn), log.metadata(), { deadline: Date.now() + 5000 }, () => {});
}

/** The engine's log service, as the provider process reaches it (see engineLog). */
interface EngineLog {
  log(request: unknown, metadata: unknown, options: { deadline: number }, done: (err: Error | null) => void): void;
}
type EngineLogClient = {
  client: EngineLog;
  /** A warning, or an ephemeral info line (a resource's status). */
  request: (kind: "warning" | "info", message: string, urn?: string) => unknown;
  metadata: () => unknown;
};
const engines = new Map<string, EngineLogClient | null>();

/**
 * A warning as the engine shows warnings: "warning: …", counted in the summary. A dynamic
 * provider's check can only return failures, and `pulumi.log.warn` in the provider process has no
 * engine to talk to (it falls back to console.warn: a plain line). But the engine passes its own
 * address as the provider process's first argument, and its Log service takes a warning from
 * anyone. Outside the provider process, or if that fails, the warning is a progress line. With
 * the resource's URN (`__resourceUrn`), the engine shows it under that resource.
 */
async function warning(settings: HostSettings, message: string, urn?: string): Promise<void> {
  const text = `[tigercloud] ${printable(message)}`;
  const log = settings.engineAddress === undefined ? null : engineLog(settings.engineAddress, settings.grpc);
  const delivered =
    log !== null &&
    (await new Promise<boolean>((resolve) =>
      log.client.log(log.request("warning", text, urn), log.metadata(), { deadline: Date.now() + 5000 }, (err) => resolve(!err)),
    ));
  if (!delivered) process.stderr.write(`warning: ${text}\n`);
}

/** urn:pulumi:<stack>::<project>::<type>::<name>, as the engine parses it. */
const WELL_FORMED_URN = /^urn:pulumi:[^:]+::[^:]+::[^:]+(:[^:]+)*::.+$/s;

/** The engine's address as the dynamic provider's process was given it (its first argument). */
function dynamicProviderEngineAddress(): string | undefined {
  const address = process.argv[2];
  return /dynamic-provider/.test(process.argv[1] ?? "") && address !== undefined ? address : undefined;
}

/** What the engine's log client needs of a gRPC library. */
export interface GrpcLibrary {
  credentials: { createInsecure(): unknown };
  Metadata: new () => unknown;
}

function engineLog(address: string, library?: GrpcLibrary): EngineLogClient | null {
  const known = engines.get(address);
  if (known !== undefined) return known;
  let engine: EngineLogClient | null = null;
  engines.set(address, engine);
  if (!/^[\w.[\]:-]+:\d+$/.test(address)) return engine;
  try {
    // The SDK's own gRPC stubs and library: the ones the provider process already runs on.
    const grpc =
      library ??
      (require(require.resolve("@grpc/grpc-js", { paths: [path.dirname(require.resolve("@pulumi/pulumi/package.json"))] })) as GrpcLibrary);
    const stubs = require("@pulumi/pulumi/proto/engine_grpc_pb") as {
      EngineClient: new (address: string, credentials: unknown) => EngineLog;
    };
    const proto = require("@pulumi/pulumi/proto/engine_pb") as typeof import("@pulumi/pulumi/proto/engine_pb");
    engine = {
      client: new stubs.EngineClient(address, grpc.credentials.createInsecure()),
      // With a URN, the engine shows the warning under that resource. Only a well-formed one:
      // the engine's display panics on a URN it cannot parse.
      request: (kind, message, urn) =>
        new proto.LogRequest()
          .setSeverity(kind === "warning" ? proto.LogSeverity.WARNING : proto.LogSeverity.INFO)
          .setEphemeral(kind === "info")
          .setMessage(message)
          .setUrn(urn !== undefined && WELL_FORMED_URN.test(urn) ? urn : ""),
      metadata: () => new grpc.Metadata(),
    };
  } catch {
    // An SDK laid out otherwise: warnings stay progress lines.
  }
  engines.set(address, engine);
  return engine;
}
