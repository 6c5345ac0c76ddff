// What goes into state: plain JSON, the engine's own `__provider` left to the engine.
import { PartialFailureError } from "../errors";
import { BOOKKEEPING_KEYS, type EngineInputs } from "./inputs";

/** Outputs must be plain JSON: no undefined anywhere. */
export function toPlainJson<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

/** The error create/update throw once the remote object exists: the engine records it in state. */
export function partialFailure(id: string, properties: Record<string, unknown>, news: EngineInputs, cause: unknown): PartialFailureError {
  return new PartialFailureError(id, toPlainJson({ ...withDeclarant(properties, news), __provider: news.__provider }), cause);
}

/** State keeps who declared the resource (its URN and name), so its delete can tell itself apart. */
export function withDeclarant(outs: Record<string, unknown>, news: EngineInputs): Record<string, unknown> {
  const kept = BOOKKEEPING_KEYS.filter((k) => news[k] !== undefined).map((k) => [k, news[k]]);
  return { ...outs, ...Object.fromEntries(kept) };
}
