// Input checking and diffing, shared by the three resources. One parse serves check (at preview)
// and create/update (at apply), so that what check accepts is exactly what create sends.
import * as pulumi from "@pulumi/pulumi";
import { z } from "zod";
import { InvalidInputError } from "../errors";
import { SETTING_SOURCES } from "../settings";
import { printable } from "../text";
import type { Declarant } from "./claims";
import { defaultProjectId } from "../engine/host";

/**
 * Who declares a resource: its URN (`__resourceUrn`) and its name in the program
 * (`__resourceName`), which its constructor adds to the inputs, as the provider is never told them
 * otherwise (program/urn.ts). Bookkeeping for messages and claims; never diffed. State written before
 * the URN was recorded is known by its name alone.
 */
export function declarantOf(props: Record<string, unknown>): Declarant {
  const name = typeof props.__resourceName === "string" ? props.__resourceName : "(unnamed)";
  return { name, urn: typeof props.__resourceUrn === "string" ? props.__resourceUrn : `(named) ${name}` };
}

/** The bookkeeping inputs the resource classes add: kept through check into state, never sent. */
export const BOOKKEEPING_KEYS = ["__resourceName", "__resourceUrn"] as const;
const bookkeeping = (props: Record<string, unknown>) =>
  Object.fromEntries(BOOKKEEPING_KEYS.filter((k) => props[k] !== undefined).map((k) => [k, props[k]]));
const withoutBookkeeping = (props: Record<string, unknown>) =>
  Object.fromEntries(Object.entries(props).filter(([k]) => !(BOOKKEEPING_KEYS as readonly string[]).includes(k)));

/** The sentinel that stands for a value not known until apply. */
export const UNKNOWN = pulumi.runtime.unknownValue;
export const isUnknown = (v: unknown): boolean => v === UNKNOWN;

export interface CheckOutcome {
  inputs: Record<string, unknown>;
  failures: pulumi.dynamic.CheckFailure[];
}

/**
 * Validates inputs with a zod schema, skipping every value still unknown during preview: a rule
 * that involves an unknown value is not judged. Each failure names the property and the rule.
 * Cross-field rules report with `params: { involves: [...] }`. A missing projectId is taken from
 * stack config or the environment, and checked by the same rules.
 */
export function checkInputs(schema: z.ZodType, news: Record<string, unknown>): CheckOutcome {
  const { __provider, ...rest } = news;
  const raw = withoutBookkeeping(rest);
  const unknownKeys = new Set(Object.keys(raw).filter((k) => isUnknown(raw[k])));
  const known = Object.fromEntries(Object.entries(raw).filter(([k, v]) => !unknownKeys.has(k) && v !== undefined && v !== null));

  const failures: pulumi.dynamic.CheckFailure[] = [];
  if (known.projectId === undefined && !unknownKeys.has("projectId")) {
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
export function readInputs<T extends z.ZodType>(resource: string, schema: T, news: Record<string, unknown>): z.output<T> {
  const { inputs, failures } = checkInputs(schema, news);
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

// ---- rules shared by several inputs ------------------------------------------------------

/** Go-style durations: "90s", "30m", "1h30m", "500ms". */
const DURATION = /^(\d{1,9}(?:ms|h|m|s))+$/;
const MAX_DURATION_MS = 24 * 3_600_000;
export function parseDuration(text: string): number {
  let total = 0;
  for (const [, n, unit] of text.matchAll(/(\d+)(ms|h|m|s)/g)) {
    total += Number(n) * { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[unit as "ms" | "s" | "m" | "h"];
  }
  return total;
}
/**
 * A string checked by one rule that names its first problem. The problem is not fatal, so the
 * object's cross-field rules still run and preview reports every mistake at once.
 */
export function textSchema(problem: (s: string) => string | undefined, notAString = "must be a string") {
  return z.string({ error: notAString }).superRefine((s, ctx) => {
    const found = problem(s);
    if (found) ctx.addIssue({ code: "custom", message: found });
  });
}

export const durationSchema = textSchema((s) => {
  if (!DURATION.test(s)) return 'must be a duration such as "90s", "30m" or "1h30m"';
  if (parseDuration(s) <= 0) return "must be longer than zero";
  // Timers cannot wait longer than about 24 days; no operation of this API takes a day.
  if (parseDuration(s) > MAX_DURATION_MS) return "must be at most 24h";
  return undefined;
});

const CONTROL = /\p{C}/u;

/**
 * An ID that goes into a URL path: 1 to 128 printable characters, no whitespace, no `/`, and not
 * `.` or `..` (a dot segment would take the request to another route).
 */
export const idSchema = textSchema((s) => {
  if (s.length === 0) return "must not be empty";
  if (s.length > 128) return "must be at most 128 characters";
  if (/[\s/]/u.test(s) || CONTROL.test(s)) return "must not contain whitespace, control characters or '/'";
  if (s === "." || s === "..") return "must not be '.' or '..'";
  return undefined;
});

/** Control, format (zero-width joiners, direction marks) and line-separator characters: nothing a person sees. */
const INVISIBLE = /[\p{C}\p{Zl}\p{Zp}]/u;

/** A name a person reads: 1 to `max` characters, not blank, nothing invisible (named, with where it is). */
export function nameSchema(max: number) {
  return textSchema((s) => {
    if (s.length < 1 || s.length > max) return `must be 1 to ${max} characters`;
    if (s.trim() === "") return "must not be blank";
    const found = INVISIBLE.exec(s);
    if (found) {
      const code = `U+${(found[0].codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, "0")}`;
      return (
        `must not contain control characters or invisible ones (newlines, tabs, escape codes, zero-width joiners as in some emoji); ` +
        `it has ${code} at character ${[...s.slice(0, found.index)].length + 1}`
      );
    }
    return undefined;
  });
}

export const booleanSchema = z.boolean({ error: "must be true or false" });

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

function changedKeys(olds: Record<string, unknown>, news: Record<string, unknown>, rules: DiffRules, keys: readonly string[]): string[] {
  return keys.filter((k) => {
    if (rules.optionalDeclared?.includes(k) && news[k] === undefined) return false;
    return isUnknown(news[k]) || !same(olds[k], news[k]);
  });
}

export function diffInputs(olds: Record<string, unknown>, news: Record<string, unknown>, rules: DiffRules): pulumi.dynamic.DiffResult {
  const replaces = changedKeys(olds, news, rules, rules.replaceKeys);
  const updates = changedKeys(olds, news, rules, [...(rules.updateKeys ?? []), ...(rules.stateOnlyKeys ?? [])]);
  // A new release of this package changes the serialized provider: an update that calls no API.
  const providerChanged = olds.__provider !== news.__provider && !isUnknown(news.__provider);
  return { changes: replaces.length > 0 || updates.length > 0 || providerChanged, replaces, deleteBeforeReplace: false };
}

/**
 * True when check's inputs will make a new remote object: a create (no old inputs) or a change
 * to a replace key. A resource that stays, or is updated in place, refers to what it did before.
 */
export function makesNewObject(olds: Record<string, unknown>, inputs: Record<string, unknown>, rules: DiffRules): boolean {
  const { __provider: _provider, ...previous } = olds;
  return Object.keys(previous).length === 0 || changedKeys(olds, inputs, rules, rules.replaceKeys).length > 0;
}

/** The update and state-only keys (not replace keys) whose value changed. */
export function changedInPlaceKeys(olds: Record<string, unknown>, news: Record<string, unknown>, rules: DiffRules): string[] {
  return changedKeys(olds, news, rules, [...(rules.updateKeys ?? []), ...(rules.stateOnlyKeys ?? [])]);
}

/** True when only state-only keys or the provider changed: the update needs no API call. */
export function onlyStateChanged(olds: Record<string, unknown>, news: Record<string, unknown>, rules: DiffRules): boolean {
  return changedKeys(olds, news, rules, [...rules.replaceKeys, ...(rules.updateKeys ?? [])]).length === 0;
}
