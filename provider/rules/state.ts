// State as the engine hands it back: written by this version or an earlier one, so every typed
// field is checked on the way in. Each resource declares its state's schema (stateSchema); the
// host boundary (resources/defineProvider.ts) reads the engine's state through it, once.
import { z } from "zod";
import { TigerCloudError } from "../errors";

/**
 * A field of a resource's state, of its type or absent: a value of another type (written by
 * something else, or edited) is read as absent, never taken for the type.
 */
export const recorded = <T extends z.ZodType>(type: T) => type.optional().catch(undefined);

/** The fields every resource's state holds: who declares it (rules/inputs.ts), and its project. */
const COMMON_STATE = {
  __resourceName: recorded(z.string()),
  __resourceUrn: recorded(z.string()),
  projectId: recorded(z.string()),
};

/**
 * A resource's state schema: the common fields and `fields`, each recorded (of its type, or
 * absent). Any other property is kept as it came.
 */
export function stateSchema<F extends Record<string, z.ZodType>>(fields: F) {
  return z.looseObject({ ...COMMON_STATE, ...recordedFields(fields) });
}

/** Each of `fields` recorded: of its type, or absent. */
export function recordedFields<F extends Record<string, z.ZodType>>(fields: F): { [K in keyof F]: z.ZodCatch<z.ZodOptional<F[K]>> } {
  return Object.fromEntries(Object.entries(fields).map(([k, type]) => [k, recorded(type)])) as {
    [K in keyof F]: z.ZodCatch<z.ZodOptional<F[K]>>;
  };
}

/** The recorded properties without `__provider`, parsed by the resource's state schema. */
export function stateFrom<T extends z.ZodType>(schema: T, props: Record<string, unknown>): z.output<T> {
  const { __provider: _provider, ...state } = props;
  const parsed = schema.parse(state) as Record<string, unknown>;
  // A field read as absent is absent, not a key holding undefined.
  for (const [key, value] of Object.entries(parsed)) if (value === undefined) delete parsed[key];
  return parsed as z.output<T>;
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
