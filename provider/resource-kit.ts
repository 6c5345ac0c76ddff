// What the three resources share: the provider object that is serialized into state, the
// connection context it runs with, input validation that tolerates preview's unknown values,
// diffing, waiting for a service, progress messages and the partial-failure error.
import * as pulumi from "@pulumi/pulumi";
import { z } from "zod";
import type { Service } from "./api-schemas";
import { createClient, type TigerCloudClient } from "./client";
import { ApiError, ConnectionError, InternalServerError, NotFoundError, TimeoutError, WaitError } from "./errors";
import { type ConfigLookup, resolveProjectId, SETTING_SOURCES } from "./settings";
import { PACKAGE_NAME, PACKAGE_VERSION } from "./version";

export type ResourceKind = "ServiceFork" | "ServiceHA" | "VpcName";

/** The sentinel that stands for a value not known until apply. */
export const UNKNOWN = pulumi.runtime.unknownValue;
export const isUnknown = (v: unknown): boolean => v === UNKNOWN;

// ---- the serialized provider -------------------------------------------------------------

/**
 * The provider object Pulumi serializes into every resource's state (`__provider`). It holds two
 * strings, the resource kind and the package version, and loads the implementation by package
 * name when it runs, from the program's node_modules. So state carries no code of ours beyond
 * these few lines, no credential, and picks up fixes from the installed package; the version makes
 * the text change with each release, which `diff` turns into a no-API-call update.
 */
export function serializedProvider(kind: ResourceKind): pulumi.dynamic.ResourceProvider {
  const packageName = PACKAGE_NAME;
  const version = PACKAGE_VERSION;
  const implementation = (): Required<pulumi.dynamic.ResourceProvider> => {
    const provider = require(`${packageName}/runtime`).providers[kind];
    if (!provider)
      throw new Error(
        `State written by ${packageName} ${version} names a ${kind} resource, which the installed ${packageName} does not provide.`,
      );
    return provider;
  };
  return {
    configure: (req) => implementation().configure(req),
    check: (olds, news) => implementation().check(olds, news),
    diff: (id, olds, news) => implementation().diff(id, olds, news),
    create: (inputs) => implementation().create(inputs),
    read: (id, props) => implementation().read(id, props),
    update: (id, olds, news) => implementation().update(id, olds, news),
    delete: (id, props) => implementation().delete(id, props),
  };
}

// ---- connection context (provider process) -----------------------------------------------

let stackConfig: ConfigLookup = () => undefined;

/** Called from the provider's configure(): stack config is read from here on. */
export function configureFromStack(req: pulumi.dynamic.ConfigureRequest): void {
  stackConfig = (key) => {
    const value: unknown = req.config.get(key);
    return typeof value === "string" ? value : undefined;
  };
}

/** A client with settings resolved now: stack config, then the environment. */
export function clientNow(): TigerCloudClient {
  return createClient({}, stackConfig, {
    onRetry: (e) =>
      progress(
        `${e.operation}: retrying (attempt ${e.attempt} of ${e.maxAttempts}) in ${(e.delayMs / 1000).toFixed(1)} s after: ${e.reason}`,
      ),
  });
}

export function defaultProjectId(): string | undefined {
  return resolveProjectId(undefined, stackConfig);
}

/** Progress a person can follow: the engine shows a provider's stderr lines. */
export function progress(message: string): void {
  process.stderr.write(`[tigercloud] ${message}\n`);
}

/** configure, check and diff: the same for every resource but for its schema and diff rules. */
export function standardMethods(
  schema: z.ZodType,
  rules: DiffRules,
): Pick<Required<pulumi.dynamic.ResourceProvider>, "configure" | "check" | "diff"> {
  return {
    async configure(req) {
      configureFromStack(req);
    },
    async check(_olds, news) {
      return checkInputs(schema, news);
    },
    async diff(_id, olds, news) {
      return diffInputs(olds, news, rules);
    },
  };
}

// ---- check -------------------------------------------------------------------------------

export interface CheckOutcome {
  inputs: Record<string, unknown>;
  failures: pulumi.dynamic.CheckFailure[];
}

/**
 * Validates inputs with a zod schema, skipping every value still unknown during preview: a rule
 * that involves an unknown value is not judged. Each failure names the property and the rule.
 * Cross-field rules report with `params: { involves: [...] }`.
 */
export function checkInputs<T extends z.ZodType>(schema: T, news: Record<string, unknown>, withProjectId = true): CheckOutcome {
  const { __provider, ...raw } = news;
  const unknownKeys = new Set(Object.keys(raw).filter((k) => isUnknown(raw[k])));
  const known = Object.fromEntries(Object.entries(raw).filter(([k, v]) => !unknownKeys.has(k) && v !== undefined && v !== null));

  const failures: pulumi.dynamic.CheckFailure[] = [];
  if (withProjectId && known.projectId === undefined && !unknownKeys.has("projectId")) {
    const fallback = defaultProjectId();
    if (fallback) known.projectId = fallback;
    else
      failures.push({
        property: "projectId",
        reason: `projectId is required: set it on the resource, or set ${SETTING_SOURCES.projectId.config} (stack config) or ${SETTING_SOURCES.projectId.env}`,
      });
  }

  const parsed = schema.safeParse(known);
  let inputs: Record<string, unknown> = known;
  if (parsed.success) {
    inputs = parsed.data as Record<string, unknown>;
  } else {
    for (const issue of parsed.error.issues) {
      const involves = [String(issue.path[0] ?? ""), ...((issue as { params?: { involves?: string[] } }).params?.involves ?? [])];
      if (involves.some((k) => unknownKeys.has(k))) continue;
      if (issue.path[0] === "projectId" && known.projectId === undefined) continue; // reported above
      if (issue.code === "unrecognized_keys") {
        for (const key of issue.keys) failures.push({ property: key, reason: `${key} is not a property of this resource` });
        continue;
      }
      const property = issue.path.map(String).join(".") || "(inputs)";
      failures.push({ property, reason: `${property} ${issue.message}` });
    }
  }
  for (const k of unknownKeys) inputs[k] = UNKNOWN;
  return { inputs: { ...inputs, __provider }, failures };
}

/** Go-style durations: "90s", "30m", "1h30m", "500ms". */
const DURATION = /^(\d+(?:ms|h|m|s))+$/;
export function parseDuration(text: string): number {
  let total = 0;
  for (const [, n, unit] of text.matchAll(/(\d+)(ms|h|m|s)/g)) {
    total += Number(n) * { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[unit as "ms" | "s" | "m" | "h"];
  }
  return total;
}
export const durationSchema = z
  .string()
  .regex(DURATION, { message: 'must be a duration such as "90s", "30m" or "1h30m"', abort: true })
  .refine((s) => parseDuration(s) > 0, "must be longer than zero");

export const idSchema = z.string().min(1, "must not be empty");

// ---- diff --------------------------------------------------------------------------------

export interface DiffRules {
  /** A change here makes a new remote object. */
  replaceKeys: readonly string[];
  /** A change here is applied in place through the API. */
  updateKeys?: readonly string[];
  /** A change here is recorded in state with no API call (waiting controls). */
  stateOnlyKeys?: readonly string[];
  /** Outputs that share a name with an optional input: an input left unset has no opinion. */
  optionalDeclared?: readonly string[];
}

const same = (a: unknown, b: unknown) => JSON.stringify(a ?? null) === JSON.stringify(b ?? null);

export function diffInputs(olds: Record<string, unknown>, news: Record<string, unknown>, rules: DiffRules): pulumi.dynamic.DiffResult {
  const changed = (k: string) => {
    if (rules.optionalDeclared?.includes(k) && news[k] === undefined) return false;
    return isUnknown(news[k]) || !same(olds[k], news[k]);
  };
  const replaces = rules.replaceKeys.filter(changed);
  const updates = [...(rules.updateKeys ?? []), ...(rules.stateOnlyKeys ?? [])].filter(changed);
  // A new release of this package changes the serialized provider: update it in place, no API call.
  const providerChanged = olds.__provider !== news.__provider && !isUnknown(news.__provider);
  return {
    changes: replaces.length > 0 || updates.length > 0 || providerChanged,
    replaces,
    deleteBeforeReplace: false,
  };
}

/** True when only state-only keys or the provider changed: the update needs no API call. */
export function onlyStateChanged(olds: Record<string, unknown>, news: Record<string, unknown>, rules: DiffRules): boolean {
  const apiKeys = [...rules.replaceKeys, ...(rules.updateKeys ?? [])];
  return apiKeys.every((k) => (rules.optionalDeclared?.includes(k) && news[k] === undefined) || same(olds[k], news[k]));
}

// ---- outputs -----------------------------------------------------------------------------

/** Props without the serialized provider, which the engine manages. */
export function withoutProvider(props: Record<string, unknown>): Record<string, unknown> {
  const { __provider: _provider, ...rest } = props;
  return rest;
}

/** Outputs must be plain JSON: no undefined anywhere. */
export function plain<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

// ---- waiting -----------------------------------------------------------------------------

/** Polling for a service's status: every number in one place. */
export const WAIT_DEFAULTS = {
  firstPollMs: 1000,
  maxPollMs: 15_000,
  factor: 1.5,
  createTimeout: "30m",
  updateTimeout: "30m",
  deleteTimeout: "10m",
};

export interface WaitSpec {
  client: TigerCloudClient;
  projectId: string;
  serviceId: string;
  /** What is awaited, for messages: "READY", "PAUSED with 2 replicas"… */
  goal: string;
  done: (s: Service) => boolean;
  /** Statuses from which the goal cannot be reached. */
  hopeless: readonly string[];
  timeoutMs: number;
}

/**
 * Polls GET service with backoff until `done`. Transient failures (connection, timeout, 5xx)
 * keep polling until the deadline; a 404 or a hopeless status fails at once.
 */
export async function waitForService(spec: WaitSpec): Promise<Service> {
  const started = Date.now();
  const deadline = started + spec.timeoutMs;
  let delay = WAIT_DEFAULTS.firstPollMs;
  let lastStatus = "";
  let lastProblem: string;
  for (;;) {
    try {
      const service = await spec.client.getService(spec.projectId, spec.serviceId);
      if (spec.done(service)) return service;
      const status = service.status ?? "(none)";
      if (spec.hopeless.includes(status)) {
        throw new WaitError(`Service ${spec.serviceId} is ${status} while waiting for it to be ${spec.goal}; it will not get there.`);
      }
      if (status !== lastStatus)
        progress(
          `service ${spec.serviceId} is ${status}; waiting for ${spec.goal} (${Math.round((Date.now() - started) / 1000)} s elapsed)`,
        );
      lastStatus = status;
      lastProblem = "";
    } catch (err) {
      if (err instanceof NotFoundError) {
        throw new WaitError(`Service ${spec.serviceId} no longer exists (404) while waiting for it to be ${spec.goal}.`, { cause: err });
      }
      const transient =
        err instanceof ConnectionError ||
        err instanceof TimeoutError ||
        err instanceof InternalServerError ||
        (err instanceof ApiError && err.status === 429);
      if (!transient) throw err;
      lastProblem = (err as Error).message;
      progress(`reading service ${spec.serviceId} failed, still waiting: ${lastProblem}`);
    }
    if (Date.now() + delay > deadline) {
      const seen = lastProblem ? `the last read failed: ${lastProblem}` : `it is ${lastStatus}`;
      throw new WaitError(
        `Timed out after ${Math.round((Date.now() - started) / 1000)} s waiting for service ${spec.serviceId} to be ${spec.goal}; ${seen}. Raise the timeout input, or set waitForReady: false.`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, delay));
    delay = Math.min(WAIT_DEFAULTS.maxPollMs, delay * WAIT_DEFAULTS.factor);
  }
}

/** The service, or undefined when it is gone: a 404, or DELETED. Any other failure is thrown. */
export async function serviceUnlessGone(client: TigerCloudClient, projectId: string, serviceId: string): Promise<Service | undefined> {
  try {
    const service = await client.getService(projectId, serviceId);
    return service.status === "DELETED" ? undefined : service;
  } catch (err) {
    if (err instanceof NotFoundError) return undefined;
    throw err;
  }
}

// ---- partial failure ---------------------------------------------------------------------

/**
 * The remote object exists but a later step failed. Thrown from create/update with the object's
 * id and properties (with __provider) so that the engine records it in state instead of
 * orphaning it; the next `up` retries what failed.
 */
export function partialFailure(id: string, properties: Record<string, unknown>, news: Record<string, unknown>, cause: unknown): Error {
  const reason = cause instanceof Error ? cause.message : String(cause);
  return Object.assign(new Error(reason, { cause }), {
    id,
    properties: plain({ ...properties, __provider: news.__provider }),
    reasons: [reason],
  });
}
