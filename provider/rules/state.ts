// State as the engine hands it back: written by this version or an earlier one, so every typed
// field is checked on the way in. Each resource reads its state once, through its own module.

/** The type each typed field of a resource's state must have. */
export type FieldTypes = Record<string, "string" | "number" | "boolean" | "object">;

/** The recorded properties without `__provider`; a typed field of another type is read as absent. */
export function typedState<T>(props: Record<string, unknown>, fields: FieldTypes): T {
  const { __provider: _provider, ...state } = props;
  for (const [key, type] of Object.entries(fields)) if (state[key] !== undefined && typeof state[key] !== type) delete state[key];
  return state as T;
}
