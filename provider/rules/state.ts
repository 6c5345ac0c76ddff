// State as a host hands it back: written by this version or an earlier one, read once by the
// resource's state schema (required fields required, each of its type), and written back as plain
// JSON. A state that does not parse fails naming what is wrong and how to mend it, before any
// request: never the text "undefined" in a request path.
import { z } from "zod";
import { PartialFailureError, TigerCloudError } from "../errors";

/**
 * A field of state that the API reported, of its type or absent: a value of another type (an API
 * that changed, a state edited by hand) is read as absent, never taken for the type.
 */
export const reported = <T extends z.ZodType>(type: T) => type.optional().catch(undefined);

/** Some of a state's fields, each possibly undefined: what a state is built up from. */
export type Partly<S> = { [K in keyof S]?: S[K] | undefined };

/** `given` read as a state of `schema`; what is wrong with it, named. */
export function readState<T extends z.ZodType>(kind: string, id: string, schema: T, given: unknown): z.output<T> {
  const parsed = schema.safeParse(given);
  if (parsed.success) return parsed.data;
  const fields = [...new Set(parsed.error.issues.map((i) => i.path.map(String).join(".") || "(state)"))];
  throw new TigerCloudError(
    `${kind} ${id}: its state in the stack holds no ${fields.join(", ")} of the right type, which every version of this provider records; ` +
      `the state was edited or written by something else. Restore it (pulumi stack export, fix, pulumi stack import), ` +
      `or remove the resource from the stack (pulumi state delete) and take the object under management again.`,
  );
}

/** Outputs must be plain JSON: no undefined anywhere. */
export function toPlainJson<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

/** The error create and update throw once the remote object exists: the host hands the engine its state to record. */
export function partialFailure(id: string, state: object, cause: unknown): PartialFailureError {
  return new PartialFailureError(id, toPlainJson(state), cause);
}
