// What one call of a resource's lifecycle runs with, whichever host serves it: the host's settings
// (stack config, or a plugin provider instance's configuration), a client made from them, where
// progress and warnings go, what the run has learnt, and what the host knows of the call (who
// declares the resource, the operation's deadline, the values the program marked secret). Every
// part is an argument: nothing here is kept between calls, and nothing defaults to a host.
import { CLIENT_DEFAULTS, type ClientOptions, createClient, type TigerCloudClient } from "../api/client";
import { secretRedactor } from "../api/redaction";
import {
  type ConfigLookup,
  credentialSource,
  projectIdSource,
  resolveProjectId,
  resolveRequireMasking,
  resolveVerifyReferences,
} from "../settings";
import { printable } from "../text";
import type { RunMemory, RunSlot } from "./memory";

/** How fast waits poll; a test passes smaller numbers in its host's options. */
export interface PollOptions {
  firstPollMs: number;
  maxPollMs: number;
  pollShare: number;
}

/** How the login probe backs off: from firstDelayMs, doubling, at most maxDelayMs; each attempt at most attemptTimeoutMs. */
export interface LoginTiming {
  firstDelayMs: number;
  maxDelayMs: number;
  attemptTimeoutMs: number;
}

/** Options that change how a host behaves, not what it does (tests use them to go fast). */
export interface HostOptions {
  client?: Partial<ClientOptions>;
  poll?: Partial<PollOptions>;
  /** The login probe's backoff (policies/connection.ts). */
  login?: Partial<LoginTiming>;
}

/** Who declares a resource: its URN (its identity, as the engine knows it) and its name in the program. */
export interface Declarant {
  urn: string;
  name: string;
}

/** Where a host sends what a person follows: progress (a resource's status) and warnings. Texts come concealed and escaped. */
export interface Reporter {
  progress(message: string, urn: string): void;
  warning(message: string, urn: string | undefined): Promise<void>;
}

/** What a host's calls run with: its settings, what its run has learnt, how it behaves, where its messages go. */
export interface HostSettings {
  config: ConfigLookup;
  /** How messages name where a setting was read: "stack config", "provider setting". */
  configWord: string;
  /** What this run has learnt, by slot (memory.ts). */
  memory: Map<RunSlot<unknown>, unknown>;
  options: HostOptions;
  reporter: Reporter;
}

/** A deadline a host sets an operation (the plugin's customTimeouts), and what set it, for messages. */
export interface HostDeadline {
  at: number;
  setBy: string;
}

/** What the host knows of one call beyond its properties. */
export interface CallSettings {
  resource: Declarant;
  /** The values of the call's inputs and state that the program marked secret: never shown. */
  secrets?: readonly string[] | undefined;
  /** The operation's own deadline (the plugin's customTimeouts): no request of the call outlives it. */
  deadline?: HostDeadline | undefined;
}

/**
 * What one call of a lifecycle runs with: built by a host, handed to every lifecycle, and read by
 * everything below it. Nothing below the hosts reads settings or options any other way
 * (test/invariants/structure.test.ts).
 */
export interface CallContext extends RunMemory {
  /** The resource the call is for. */
  readonly resource: Declarant;
  /** The operation's deadline the host was given (the plugin's customTimeouts), if any. */
  readonly deadline: HostDeadline | undefined;
  /** A client with this call's settings; `secrets` are redacted from its errors too. */
  client(limits?: ClientLimits, secrets?: readonly string[]): TigerCloudClient;
  /** A line of progress, shown as the resource's status. */
  progress(message: string): void;
  /** A warning as the engine shows warnings; under the resource of `urn`, if given. */
  warning(message: string, urn?: string): Promise<void>;
  readonly options: Readonly<HostOptions>;
  /** Whether check verifies references (tigercloud:verifyReferences / TIGER_VERIFY_REFERENCES). */
  readonly verifyReferences: boolean;
  /** Whether a fork of a PROD service must be masked or say why not (tigercloud:requireMasking / TIGER_REQUIRE_MASKING). */
  readonly requireMasking: boolean;
  /** Where the credentials come from (a config key or a variable, never the value), if any. */
  readonly credentialSource: string | undefined;
  /** The project of the settings or the environment, for a resource that sets none. */
  readonly projectId: string | undefined;
  /** Where that project comes from (a config key or a variable), if any. */
  readonly projectIdSource: string | undefined;
  /** How messages name a setting's key: "stack config tigercloud:projectId", or the plugin's "provider setting …". */
  readonly configWord: string;
  /** `text` without any value the program marked secret, and escaped: what a person may be shown. */
  conceal(text: string): string;
}

/** What a caller that must answer quickly may ask of its client: `limits` tighten the client's own numbers. */
export type ClientLimits = Partial<Pick<ClientOptions, "requestTimeoutMs" | "maxAttempts" | "maxTotalMs">>;

/** A function that takes the given secret values out of a text, and escapes it (printable). */
export function concealer(secrets: readonly string[] = []): (text: string) => string {
  const values = secrets.filter((s) => s.length > 0);
  if (values.length === 0) return printable;
  const redact = secretRedactor([...values]);
  // Before and after the escaping: an escape could break a value apart, or complete one.
  return (text) => redact(printable(redact(text)));
}

/** The context of one call, from its host's settings and what the host knows of the call. */
export function makeContext(host: HostSettings, call: CallSettings): CallContext {
  const { config, memory, options, reporter, configWord } = host;
  const conceal = concealer(call.secrets);
  const progress = (message: string) => reporter.progress(conceal(message), call.resource.urn);
  const secrets = call.secrets ?? [];
  return {
    resource: call.resource,
    deadline: call.deadline,
    client: (limits = {}, more = []) => clientFrom(config, options, progress, limits, [...more, ...secrets], call.deadline?.at),
    progress,
    warning: (message, urn) => reporter.warning(conceal(message), urn),
    conceal,
    configWord,
    options,
    learnt<T>(slot: RunSlot<T>): T {
      if (!memory.has(slot)) memory.set(slot, slot.fresh());
      return memory.get(slot) as T;
    },
    // Read when asked: a setting that is wrong fails where it is used (a check failure there).
    get verifyReferences() {
      return resolveVerifyReferences(config);
    },
    get requireMasking() {
      return resolveRequireMasking(config);
    },
    get credentialSource() {
      return credentialSource(config, process.env, configWord);
    },
    // The project a resource uses when its input leaves it unset: the settings, then the environment.
    get projectId() {
      return resolveProjectId(undefined, config);
    },
    get projectIdSource() {
      return projectIdSource(config, process.env, configWord);
    },
  };
}

/**
 * A client with settings resolved now: the host's settings, then the environment. `limits` tighten
 * the client's own numbers (a caller that must answer quickly); they never loosen them.
 */
function clientFrom(
  config: ConfigLookup,
  options: HostOptions,
  progress: (message: string) => void,
  limits: ClientLimits,
  secrets: readonly string[],
  deadline: number | undefined,
): TigerCloudClient {
  const tighter = (key: keyof ClientLimits) => {
    const limit = limits[key];
    return limit === undefined ? {} : { [key]: Math.min(limit, options.client?.[key] ?? CLIENT_DEFAULTS[key]) };
  };
  const tightened: Partial<ClientOptions> = { ...tighter("requestTimeoutMs"), ...tighter("maxAttempts"), ...tighter("maxTotalMs") };
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
