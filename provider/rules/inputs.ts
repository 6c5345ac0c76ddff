// Input checking, shared by the three resources. One parse serves check (at preview) and
// create/update (at apply), so that what check accepts is exactly what create sends.
import type * as pulumi from "@pulumi/pulumi";
import { z } from "zod";
import { InvalidInputError } from "../errors";
import { SETTING_SOURCES } from "../settings";
import { printable } from "../text";
import type { Declarant } from "./claims";

/** Where a missing projectId comes from (workflows/keyProject.ts decides): a project, later, or a failure. */
export type ProjectSource = { projectId: string } | { deferred: true } | { failure: string; transient?: true };

/**
 * Who declares a resource: its URN (`__resourceUrn`) and its name in the program
 * (`__resourceName`), which its constructor adds to the inputs, as the provider is never told them
 * otherwise (program/urn.ts). Bookkeeping for messages and claims; never diffed. State written before
 * the URN was recorded is known by its name alone.
 */
/**
 * What the engine's inputs carry beside the declared ones: the serialized provider, and the
 * declarant the resource classes add (kept through check into state, never sent).
 */
export interface EngineInputs {
  readonly __provider?: unknown;
  readonly __resourceName?: unknown;
  readonly __resourceUrn?: unknown;
  /** The names of the inputs the program marked secret (a dynamic provider is told no secret). */
  readonly __secretInputs?: unknown;
}

export function declarantOf(props: EngineInputs): Declarant {
  const name = typeof props.__resourceName === "string" ? props.__resourceName : "(unnamed)";
  return { name, urn: typeof props.__resourceUrn === "string" ? props.__resourceUrn : `(named) ${name}` };
}

/** The bookkeeping inputs the resource classes add: kept through check into state, never sent. */
export const BOOKKEEPING_KEYS = ["__resourceName", "__resourceUrn", "__secretInputs"] as const;
const bookkeeping = (props: Record<string, unknown>) =>
  Object.fromEntries(BOOKKEEPING_KEYS.filter((k) => props[k] !== undefined).map((k) => [k, props[k]]));
const withoutBookkeeping = (props: Record<string, unknown>) =>
  Object.fromEntries(Object.entries(props).filter(([k]) => !(BOOKKEEPING_KEYS as readonly string[]).includes(k)));

/**
 * The sentinel that stands for a value not known until apply: the engine's, on the wire and in a
 * dynamic provider alike (`pulumi.runtime.unknownValue`, written out so that the plugin, which
 * loads no SDK, knows it; a unit test holds the two equal).
 */
export const UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9";
export const isUnknown = (v: unknown): boolean => v === UNKNOWN;
/** A string known at preview: not the unknown sentinel, which is a string too. */
export const isKnownText = (v: unknown): v is string => typeof v === "string" && !isUnknown(v);

/** A value the engine may repeat to a terminal as it is: nothing in it needs escaping. */
export function echoSafe(value: unknown): boolean {
  if (value === undefined || value === null || typeof value === "number" || typeof value === "boolean") return true;
  const text = typeof value === "string" ? value : JSON.stringify(value);
  return typeof text === "string" && printable(text) === text;
}

export interface CheckOutcome {
  inputs: Record<string, unknown>;
  failures: pulumi.dynamic.CheckFailure[];
}

/**
 * Validates inputs with a zod schema, skipping every value still unknown during preview: a rule
 * that involves an unknown value is not judged. Each failure names the property and the rule.
 * Cross-field rules report with `params: { involves: [...] }`. A missing projectId is taken from
 * `projectSource` (stack config, the environment or the key's project: workflows/keyProject.ts) and
 * checked by the same rules; where the source defers it to `up`, it stays unset and unjudged.
 */
export function checkInputs(schema: z.ZodType, news: Record<string, unknown>, projectSource?: ProjectSource): CheckOutcome {
  const { __provider, ...rest } = news;
  const raw = withoutBookkeeping(rest);
  const unknownKeys = new Set(Object.keys(raw).filter((k) => isUnknown(raw[k])));
  const known = Object.fromEntries(Object.entries(raw).filter(([k, v]) => !unknownKeys.has(k) && v !== undefined && v !== null));

  const failures: pulumi.dynamic.CheckFailure[] = [];
  if (known.projectId === undefined && !unknownKeys.has("projectId")) {
    if (projectSource && "projectId" in projectSource) known.projectId = projectSource.projectId;
    else if (!projectSource || !("deferred" in projectSource))
      failures.push({
        property: "projectId",
        reason:
          projectSource?.failure ??
          `projectId is required: set it on the resource, or set ${SETTING_SOURCES.projectId.config} (stack config) or ${SETTING_SOURCES.projectId.env}`,
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
        for (const key of issue.keys)
          failures.push({ property: printable(key), reason: `${printable(key)} is not a property of this resource` });
        continue;
      }
      const property = printable(issue.path.map(String).join(".")) || "(inputs)";
      failures.push({ property, reason: ruleBroken(property, issue, known) });
    }
  }
  for (const k of unknownKeys) inputs[k] = UNKNOWN;
  return { inputs: { ...inputs, __provider, ...bookkeeping(news) }, failures };
}

/** The rule a property breaks; of the wrong type, what it was: missing (required), or `"2"` from config (a string). */
function ruleBroken(property: string, issue: z.core.$ZodIssue, known: Record<string, unknown>): string {
  const rule = `${property} ${issue.message}`;
  if (issue.code !== "invalid_type" || issue.path.length !== 1) return rule;
  const value = known[String(issue.path[0])];
  if (value === undefined) return `${property} is required: it ${issue.message}`;
  const type = Array.isArray(value) ? "array" : typeof value;
  // A fraction where an integer is wanted is a number all the same: the rule says enough.
  if (type === (issue.expected === "int" ? "number" : issue.expected)) return rule;
  return `${rule} (it is ${type === "array" || type === "object" ? "an" : "a"} ${type})`;
}

/**
 * The inputs create and update work with: the same parse as check, so they cannot disagree. The
 * engine hands them what check returned, so a failure here means inputs that skipped check.
 */
export function readInputs<T extends z.ZodType>(
  resource: string,
  schema: T,
  news: Record<string, unknown>,
  projectSource?: ProjectSource,
): z.output<T> {
  const { inputs, failures } = checkInputs(schema, news, projectSource);
  const stillUnknown = Object.keys(inputs).filter((k) => isUnknown(inputs[k]));
  for (const k of stillUnknown) failures.push({ property: k, reason: `${k} is not known yet` });
  if (failures.length > 0)
    throw new InvalidInputError(
      resource,
      failures.map((f) => ({ property: f.property ?? "", reason: f.reason })),
    );
  const { __provider: _provider, ...rest } = inputs;
  return withoutBookkeeping(rest) as z.output<T>;
}
