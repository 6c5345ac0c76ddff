// When a fork expires: declared as a time (RFC 3339) or as a duration from the fork's creation
// ("72h", "7d"), recorded in state as a time (expiresAt). tigercloud-forks lists it, and its
// nightly sweep destroys the stacks whose forks have expired. Pure: no request.
import { calendarProblem } from "../../rules/inputSchemas";

/** "90m", "72h", "7d": how long after its creation a fork expires. */
const DURATION = /^([0-9]{1,5})(m|h|d)$/;
const UNIT_MS = { m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
const MIN_MS = 3_600_000;
const MAX_MS = 90 * 86_400_000;

const durationMs = (text: string): number | undefined => {
  const m = DURATION.exec(text);
  return m ? Number(m[1]) * UNIT_MS[m[2] as keyof typeof UNIT_MS] : undefined;
};

/** What is wrong with a declared expiry; undefined when right. */
export function expiresProblem(text: string): string | undefined {
  const ms = durationMs(text);
  if (ms !== undefined)
    return ms < MIN_MS || ms > MAX_MS ? 'must be a duration from 1h to 90d (after the fork\'s creation), such as "72h" or "7d"' : undefined;
  if (/^[0-9]/.test(text) && text.includes("T")) return calendarProblem(text);
  return 'must be a duration after the fork\'s creation such as "72h" or "7d" (minutes m, hours h, days d), or an RFC 3339 time such as 2026-12-01T00:00:00Z';
}

/** The time a fork declared `expires` expires, from its creation time (now, when the API gives none). */
export function expiresAt(expires: string | undefined, created: string | undefined): string | undefined {
  if (expires === undefined) return undefined;
  const ms = durationMs(expires);
  if (ms === undefined) return new Date(Date.parse(expires)).toISOString();
  const from = Date.parse(created ?? "");
  return new Date((Number.isNaN(from) ? Date.now() : from) + ms).toISOString();
}
