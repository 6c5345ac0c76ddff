// Rules that several resources' inputs share: durations, IDs that go into a URL path, names a
// person reads, booleans. Each names its first problem, for check's failures.
import { z } from "zod";

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

/** The deadline a timeout input sets from now; `fallback` where state written by an older version lacks it. */
export const deadlineIn = (timeout: string | undefined, fallback: string) => Date.now() + parseDuration(timeout ?? fallback);

/** An operation's time limit: when it ends, and what set it (a timeout's error names it). */
export interface Limit {
  deadline: number;
  setBy: string;
}

/**
 * The limit of an operation: the host's where it set one (the plugin's customTimeouts stand in for
 * the timeout inputs), else the resource's timeout input `inputName`, `fallback` when unset.
 */
export function limitOf(
  host: { deadline: { at: number; setBy: string } | undefined },
  input: string | undefined,
  fallback: string,
  inputName: string,
): Limit {
  if (host.deadline) return { deadline: host.deadline.at, setBy: host.deadline.setBy };
  return { deadline: deadlineIn(input, fallback), setBy: inputName };
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

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?(?:[Zz]|[+-](\d{2}):(\d{2}))$/;
const MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"];

/** What is wrong with an RFC 3339 date-time, each kind of mistake with its own reason, the future allowed; undefined when right. */
export function calendarProblem(text: string): string | undefined {
  const m = RFC3339.exec(text);
  if (!m) return "must be an RFC 3339 date-time such as 2026-11-01T12:00:00Z";
  const [year, month, day, hour, minute, second, offsetHours, offsetMinutes] = [1, 2, 3, 4, 5, 6, 8, 9].map((i) =>
    Number(m[i] ?? 0),
  ) as number[];
  if (month! < 1 || month! > 12) return `has month ${m[2]}: months are 01 to 12`;
  const days = new Date(Date.UTC(year!, month!, 0)).getUTCDate();
  if (day! < 1 || day! > days) return `has day ${m[3]}, and ${MONTHS[month! - 1]} ${m[1]} has ${days} days`;
  if (hour! > 23) return `has hour ${m[4]}: hours are 00 to 23`;
  if (minute! > 59) return `has minute ${m[5]}: minutes are 00 to 59`;
  if (second! > 59) return `has second ${m[6]}: seconds are 00 to 59`;
  if (offsetHours! > 23 || offsetMinutes! > 59) return `has offset ${text.slice(-6)}: offsets are -23:59 to +23:59`;
  return undefined;
}
