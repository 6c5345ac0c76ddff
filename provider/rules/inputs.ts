// Input checking, shared by the three resources. One parse serves check (at preview) and
// create/update (at apply), so that what check accepts is exactly what create sends. The
// properties a host hands over are read here, once, into the resource's typed inputs.
import { z } from "zod";
import { InvalidInputError } from "../errors";
import { SETTING_SOURCES } from "../settings";
import { printable } from "../text";

/** Where a missing projectId comes from (policies/keyProject.ts decides): a project, later, or a failure. */
export type ProjectSource = { projectId: string } | { deferred: true } | { failure: string; transient?: true };

/** A check failure: the property it names (none: the reason alone names it) and the rule broken. */
export interface Failure {
  property: string;
  reason: string;
}

/**
 * Inputs as check hands them on: the resource's inputs by name, each of no type known in advance.
 * During preview a value may be the engine's unknown sentinel (isKnownText tells), and where a rule
 * involving such a value was left unjudged, the others are as the program gave them.
 */
export type Pending<I> = { readonly [K in keyof I]?: unknown };

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

/** The properties of what a host handed over, by name: a plain object's own entries, or none. */
export function propertiesOf(given: unknown): Map<string, unknown> {
  return new Map(typeof given === "object" && given !== null && !Array.isArray(given) ? Object.entries(given) : []);
}

/** Whether a host handed over any property at all (none: a create's old inputs, an import's state). */
export const hasProperties = (given: unknown): boolean => propertiesOf(given).size > 0;

/** What check makes of the properties: the inputs it hands on, and what is wrong with them. */
export interface CheckOutcome<I> {
  inputs: Pending<I>;
  failures: Failure[];
}

/**
 * Validates inputs with a zod schema, skipping every value still unknown during preview: a rule
 * that involves an unknown value is not judged. Each failure names the property and the rule.
 * Cross-field rules report with `params: { involves: [...] }`. A missing projectId is taken from
 * `projectSource` (settings, the environment or the key's project: policies/keyProject.ts) and
 * checked by the same rules; where the source defers it to `up`, it stays unset and unjudged.
 */
export function checkInputs<T extends z.ZodType>(schema: T, given: unknown, projectSource?: ProjectSource): CheckOutcome<z.output<T>> {
  const all = propertiesOf(given);
  const unknownKeys = new Set([...all].filter(([, v]) => isUnknown(v)).map(([k]) => k));
  const known = new Map([...all].filter(([k, v]) => !unknownKeys.has(k) && v !== undefined && v !== null));

  const failures: Failure[] = [];
  if (!known.has("projectId") && !unknownKeys.has("projectId")) {
    if (projectSource && "projectId" in projectSource) known.set("projectId", projectSource.projectId);
    else if (!projectSource || !("deferred" in projectSource))
      failures.push({
        property: "projectId",
        reason:
          projectSource?.failure ??
          `projectId is required: set it on the resource, or set ${SETTING_SOURCES.projectId.config} (stack config) or ${SETTING_SOURCES.projectId.env}`,
      });
  }

  const parsed = schema.safeParse(Object.fromEntries(known));
  let inputs = Object.fromEntries(known) as Pending<z.output<T>>;
  if (parsed.success) {
    inputs = parsed.data as Pending<z.output<T>>;
  } else {
    for (const issue of parsed.error.issues) {
      const involves = [String(issue.path[0] ?? ""), ...((issue as { params?: { involves?: string[] } }).params?.involves ?? [])];
      if (involves.some((k) => unknownKeys.has(k))) continue;
      if (issue.path[0] === "projectId" && !known.has("projectId")) continue; // reported above
      if (issue.code === "unrecognized_keys") {
        for (const key of issue.keys)
          failures.push({ property: printable(key), reason: `${printable(key)} is not a property of this resource` });
        continue;
      }
      const property = printable(issue.path.map(String).join(".")) || "(inputs)";
      failures.push({ property, reason: ruleBroken(property, issue, known) });
    }
  }
  return { inputs: { ...inputs, ...Object.fromEntries([...unknownKeys].map((k) => [k, UNKNOWN])) }, failures };
}

/** The rule a property breaks; of the wrong type, what it was: missing (required), or `"2"` from config (a string). */
function ruleBroken(property: string, issue: z.core.$ZodIssue, known: Map<string, unknown>): string {
  const rule = `${property} ${issue.message}`;
  if (issue.code !== "invalid_type" || issue.path.length !== 1) return rule;
  const value = known.get(String(issue.path[0]));
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
export function readInputs<T extends z.ZodType>(resource: string, schema: T, given: unknown, projectSource?: ProjectSource): z.output<T> {
  const { inputs, failures } = checkInputs(schema, given, projectSource);
  const stillUnknown = Object.keys(inputs).filter((k) => isUnknown(inputs[k as keyof typeof inputs]));
  for (const k of stillUnknown) failures.push({ property: k, reason: `${k} is not known yet` });
  if (failures.length > 0) throw new InvalidInputError(resource, failures);
  return inputs as z.output<T>;
}
