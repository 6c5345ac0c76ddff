// What a failure looks like when it reaches the engine, from either host: escaped (no control
// character from outside reaches a terminal) and concealed (no value the program marked secret).
// Applied once, by the lifecycle every host runs (resources/define.ts), so no path can forget it.
import { TigerCloudError } from "../errors";
import { printable } from "../text";

/**
 * An error as it may reach the engine: its message (and, on a partial failure, its reasons) with
 * every control character escaped, its stack's first line too. The same object, so that what the
 * engine reads from it (a partial failure's id and properties) is kept; a thrown non-error becomes
 * a TigerCloudError. Applying it twice changes nothing: escapes hold no control character.
 */
export function escapedError(err: unknown, conceal: (text: string) => string = printable): Error {
  if (!(err instanceof Error)) return new TigerCloudError(conceal(String(err)));
  const raw = err.message;
  const message = conceal(raw);
  try {
    if (message !== raw) {
      err.message = message;
      // V8 writes the stack when it is first read: if it was read before, it still quotes the raw message.
      if (typeof err.stack === "string") err.stack = err.stack.replace(raw, () => message);
    }
    const holder = err as { reasons?: unknown };
    if (Array.isArray(holder.reasons)) holder.reasons = holder.reasons.map((r) => conceal(String(r)));
    return err;
  } catch {
    // A frozen error, or one whose message cannot be set: a new one says the same, escaped.
    return new TigerCloudError(message, { cause: err });
  }
}

/**
 * A check's result as it may reach the engine: every failure's property and reason escaped (and,
 * with a call's `conceal`, without the values the program marked secret).
 */
export function escapedFailures<R extends { failures?: readonly { property: string; reason: string }[] | undefined }>(
  result: R,
  conceal: (text: string) => string = printable,
): R {
  if (!result.failures) return result;
  return { ...result, failures: result.failures.map((f) => ({ property: printable(f.property), reason: conceal(f.reason) })) };
}

/** Runs a provider method: whatever it throws reaches the engine escaped (escapedError), and concealed by the call's `conceal`. */
export async function escapingErrors<T>(work: () => Promise<T>, conceal: (text: string) => string = printable): Promise<T> {
  try {
    return await work();
  } catch (err) {
    throw escapedError(err, conceal);
  }
}
