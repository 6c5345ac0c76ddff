// What goes into state: plain JSON, the engine's own `__provider` left to the engine.
import { PartialFailureError } from "../errors";

/** Props without the serialized provider, which the engine manages. */
export function withoutProvider(props: Record<string, unknown>): Record<string, unknown> {
  const { __provider: _provider, ...rest } = props;
  return rest;
}

/** Outputs must be plain JSON: no undefined anywhere. */
export function plain<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

/** The error create/update throw once the remote object exists: the engine records it in state. */
export function partialFailure(
  id: string,
  properties: Record<string, unknown>,
  news: Record<string, unknown>,
  cause: unknown,
): PartialFailureError {
  return new PartialFailureError(id, plain({ ...withResourceName(properties, news), __provider: news.__provider }), cause);
}

/** State keeps the resource's name in the program (`__resourceName`), so its delete can tell itself apart. */
export function withResourceName(outs: Record<string, unknown>, news: Record<string, unknown>): Record<string, unknown> {
  return news.__resourceName === undefined ? outs : { ...outs, __resourceName: news.__resourceName };
}
