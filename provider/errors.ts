// The errors this package throws. None of them ever holds a credential: they are built from
// plain values (status, code, message, method, path), never from an HTTP library's error object,
// whose request config carries the Authorization header. Their messages may quote API text or
// user-given names, so the base class escapes control characters: no message can forge a line.
import { printable } from "./text";

/** Base class of every error thrown by this package. */
export class TigerCloudError extends Error {
  override name = "TigerCloudError";
  // { cause } rather than ErrorOptions: the declarations must compile in a program whose lib is
  // older than ES2022 (Pulumi's TypeScript template targets ES2020).
  constructor(message: string, options?: { cause?: unknown }) {
    super(printable(message), options);
  }
}

/** The connection settings are missing or malformed; no request was made. */
export class ConfigurationError extends TigerCloudError {
  override name = "ConfigurationError";
}

/**
 * A resource's inputs, or a client call's arguments (an ID that cannot be a path segment), break a
 * rule; each failure names the property or parameter and the rule. No request was made.
 */
export class InvalidInputError extends TigerCloudError {
  override name = "InvalidInputError";
  constructor(
    readonly resource: string,
    readonly failures: readonly { property: string; reason: string }[],
  ) {
    super(`Invalid ${resource} inputs: ${failures.map((f) => f.reason).join("; ")}`);
  }
}

/**
 * The remote object exists but a later step failed. Thrown from create and update with the
 * object's `id` and state: the host hands both to the engine, which records the object in state
 * instead of orphaning it, and the next `pulumi up` finishes what failed.
 */
export class PartialFailureError extends TigerCloudError {
  override name = "PartialFailureError";
  readonly reasons: string[];
  /** Private, so out of reach of JSON.stringify and util.inspect: it holds the initial password. */
  readonly #state: object;
  constructor(
    readonly id: string,
    state: object,
    cause: unknown,
  ) {
    super(cause instanceof Error ? cause.message : String(cause), { cause });
    this.reasons = [this.message];
    this.#state = state;
  }
  /** The object's state as far as it got, for the engine to record (read by the hosts). */
  get state(): object {
    return this.#state;
  }
}

export interface ApiErrorFields {
  status: number;
  method: string;
  path: string;
  /** Machine-readable code from the error body, e.g. `NOT_FOUND`. */
  code?: string | undefined;
  /** Human-readable message from the error body, or a summary of a body that had none. */
  apiMessage: string;
  details?: string | undefined;
  /** From a Retry-After header, when the API sent one. */
  retryAfterMs?: number | undefined;
  /** The body was the API's own JSON error object; default false. */
  apiAnswered?: boolean | undefined;
}

/** The API answered with a status outside 2xx. Its code, apiMessage and details are escaped as its message is. */
export class ApiError extends TigerCloudError {
  override name = "ApiError";
  readonly status: number;
  readonly method: string;
  readonly path: string;
  readonly code: string | undefined;
  readonly apiMessage: string;
  readonly details: string | undefined;
  readonly retryAfterMs: number | undefined;
  /**
   * True when the body was the API's own JSON error object. A 404 without it came from a wrong
   * URL or a proxy and says nothing about whether the object exists.
   */
  readonly apiAnswered: boolean;

  constructor(fields: ApiErrorFields) {
    const code = fields.code ? ` ${fields.code}` : "";
    const details = fields.details ? ` (${fields.details})` : "";
    super(`Request failed with status code ${fields.status}${code}: ${fields.method} ${fields.path}: ${fields.apiMessage}${details}`);
    this.status = fields.status;
    this.method = fields.method;
    this.path = fields.path;
    // Escaped as the message is: a script prints these fields on their own.
    this.code = fields.code === undefined ? undefined : printable(fields.code);
    this.apiMessage = printable(fields.apiMessage);
    this.details = fields.details === undefined ? undefined : printable(fields.details);
    this.retryAfterMs = fields.retryAfterMs;
    this.apiAnswered = fields.apiAnswered ?? false;
  }

  toJSON(): Pick<ApiError, "name" | "message" | "status" | "code" | "method" | "path" | "details" | "apiAnswered"> {
    return {
      name: this.name,
      message: this.message,
      status: this.status,
      code: this.code,
      method: this.method,
      path: this.path,
      details: this.details,
      apiAnswered: this.apiAnswered,
    };
  }
}

export class BadRequestError extends ApiError {
  override name = "BadRequestError";
}
export class AuthenticationError extends ApiError {
  override name = "AuthenticationError";
}
export class PermissionDeniedError extends ApiError {
  override name = "PermissionDeniedError";
}
export class NotFoundError extends ApiError {
  override name = "NotFoundError";
}
export class ConflictError extends ApiError {
  override name = "ConflictError";
}
export class RateLimitError extends ApiError {
  override name = "RateLimitError";
}
export class InternalServerError extends ApiError {
  override name = "InternalServerError";
}

/** One status -> one class; other statuses are a plain ApiError. */
export function apiErrorFor(fields: ApiErrorFields): ApiError {
  const s = fields.status;
  if (s === 400) return new BadRequestError(fields);
  if (s === 401) return new AuthenticationError(fields);
  if (s === 403) return new PermissionDeniedError(fields);
  if (s === 404) return new NotFoundError(fields);
  if (s === 409) return new ConflictError(fields);
  if (s === 429) return new RateLimitError(fields);
  if (s >= 500) return new InternalServerError(fields);
  return new ApiError(fields);
}

/** No HTTP answer at all: refused, reset, DNS failure. `connectionRefused` means nothing was sent. */
export class ConnectionError extends TigerCloudError {
  override name = "ConnectionError";
  constructor(
    readonly method: string,
    readonly path: string,
    /** The system error code, e.g. ECONNREFUSED, ECONNRESET. */
    readonly systemCode: string | undefined,
    detail: string,
  ) {
    super(`Connection failed: ${method} ${path}: ${detail}`);
  }
  get connectionRefused(): boolean {
    return this.systemCode === "ECONNREFUSED";
  }
}

/** The request was sent but no answer came within the per-request timeout. */
export class TimeoutError extends TigerCloudError {
  override name = "TimeoutError";
  constructor(
    readonly method: string,
    readonly path: string,
    readonly timeoutMs: number,
  ) {
    super(`Request timed out after ${timeoutMs} ms: ${method} ${path}`);
  }
}

/** A failure that may pass by itself (no answer, a timeout, a 5xx, a 429): a wait reads again. (A request's own retries follow the client's configurable statuses: api/request.ts.) */
export function isTransient(err: unknown): boolean {
  return (
    err instanceof ConnectionError ||
    err instanceof TimeoutError ||
    err instanceof InternalServerError ||
    (err instanceof ApiError && err.status === 429)
  );
}

/** The request worked but the response body is not what the API describes (or is larger than the client accepts). */
export class SchemaValidationError extends TigerCloudError {
  override name = "SchemaValidationError";
  constructor(
    readonly method: string,
    readonly path: string,
    expected: string,
    problems: string,
    /** A description of the body, or undefined when it must not be quoted. */
    received: string | undefined,
  ) {
    super(
      `Unexpected response to ${method} ${path}: expected ${expected}; ${problems}${received === undefined ? "" : `; received ${received}`}`,
    );
  }
}

/**
 * forkService failed in a way that does not tell whether a fork was created (a timeout, a 5xx,
 * a dropped connection). It is never retried: a retry could create a second fork.
 */
export class ForkOutcomeUnknownError extends TigerCloudError {
  override name = "ForkOutcomeUnknownError";
  constructor(projectId: string, sourceServiceId: string, forkName: string | undefined, cause: Error) {
    const named = forkName ? ` named "${forkName}"` : "";
    super(
      `forkService of service ${sourceServiceId} failed and a fork may have been created: ${cause.message}. ` +
        `It was not retried, to avoid creating a second fork. Check project ${projectId} for a service${named} ` +
        `whose forked_from.service_id is ${sourceServiceId} (Tiger Cloud console, or 'tiger service list'); ` +
        `if one exists, stop or delete it, or import it, before running again.`,
      { cause },
    );
  }
}

/** The API answered 404, but not in a way that confirms the object is gone (see provider/policies/gone.ts). */
export class NotConfirmedGoneError extends TigerCloudError {
  override name = "NotConfirmedGoneError";
  /** The failure of the project's service list, when that list is what could not confirm it. */
  readonly listFailure: unknown;
  constructor(message: string, options?: { cause?: unknown; listFailure?: unknown }) {
    super(message, options);
    this.listFailure = options?.listFailure;
  }
}

/** A service did not reach the awaited status in time, or reached a status it cannot leave. */
export class WaitError extends TigerCloudError {
  override name = "WaitError";
}
