// State as the engine hands it back: written by this version or an earlier one, so every typed
// field is checked on the way in. Each resource reads its state once, through its own module.
import { TigerCloudError } from "../errors";

/** The type each typed field of a resource's state must have. */
export type FieldTypes = Record<string, "string" | "number" | "boolean" | "object">;

/** The recorded properties without `__provider`; a typed field of another type is read as absent. */
export function typedState<T>(props: Record<string, unknown>, fields: FieldTypes): T {
  const { __provider: _provider, ...state } = props;
  for (const [key, type] of Object.entries(fields)) if (state[key] !== undefined && typeof state[key] !== type) delete state[key];
  return state as T;
}

/**
 * A field every state of this resource holds (the project, the source). Missing, it is an error
 * naming it, before any request: never the text "undefined" in a request path.
 */
export function requiredField<T, K extends keyof T & string>(kind: string, id: string, state: T, field: K): NonNullable<T[K]> {
  const value = state[field];
  if (value === undefined || value === null)
    throw new TigerCloudError(
      `${kind} ${id}: its state in the stack holds no ${field}, which every version of this provider records; ` +
        `the state was edited or written by something else. Restore it (pulumi stack export, fix, pulumi stack import), ` +
        `or remove the resource from the stack (pulumi state delete) and take the object under management again.`,
    );
  return value as NonNullable<T[K]>;
}
