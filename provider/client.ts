// The Tiger Cloud API client: the only module that speaks HTTP. It encodes paths, authenticates,
// retries what is safe to retry, parses every response with zod, and turns every failure into one
// of the errors in ./errors, none of which carries a credential.
import axios, { type AxiosResponse } from "axios";
import { z } from "zod";
import {
  ErrorBodySchema,
  RenameResponseSchema,
  ServiceSchema,
  VpcSchema,
  type ForkServiceRequest,
  type RenameResponse,
  type Service,
  type SetHARequest,
  type Vpc,
} from "./api-schemas";
import {
  ApiError,
  ConnectionError,
  ForkOutcomeUnknownError,
  RateLimitError,
  SchemaValidationError,
  TigerCloudError,
  TimeoutError,
  apiErrorFor,
} from "./errors";
import { type ConfigLookup, type ConnectionSettings, type ResolvedSettings, resolveSettings, secretsOf } from "./settings";
import { PACKAGE_NAME, PACKAGE_VERSION } from "./version";

/** Every timing and retry number of the client, in one place. */
export const CLIENT_DEFAULTS = {
  /** Per-request timeout: a request with no answer by then fails with TimeoutError. */
  requestTimeoutMs: 30_000,
  /** Attempts per call, the first included. */
  maxAttempts: 5,
  /** Backoff before retry n is a random delay in [d/2, d], d = min(maxDelayMs, baseDelayMs * 2^(n-1)). */
  baseDelayMs: 500,
  maxDelayMs: 15_000,
  /** No retry starts after this much time since the first attempt (Retry-After included). */
  maxTotalMs: 120_000,
  /** Statuses retried for every retryable operation. 500 is retried for GETs only: a POST that
   *  failed with 500 may have half-happened, and the spec says nothing of idempotency. */
  retryStatuses: [408, 429, 502, 503, 504] as readonly number[],
  retryStatusesForGet: [500] as readonly number[],
};
export type ClientOptions = typeof CLIENT_DEFAULTS & {
  /** Called before each retry, for progress messages. */
  onRetry?: (event: RetryEvent) => void;
  /** Replaces setTimeout for backoff waits (tests). */
  sleep?: (ms: number) => Promise<void>;
};

export interface RetryEvent {
  operation: string;
  attempt: number;
  maxAttempts: number;
  delayMs: number;
  reason: string;
}

/**
 * Which failures an operation may retry. `safe`: the operation can be repeated without harm.
 * `fork`: retried only when the request surely created nothing (a 429, or a connection refused
 * before anything was sent); any other failure after sending is ForkOutcomeUnknownError.
 */
type RetryPolicy = "safe" | "fork";

interface Operation<T> {
  name: string;
  method: "GET" | "POST";
  path: string;
  body?: object;
  schema: z.ZodType<T>;
  expected: string;
  retry: RetryPolicy;
}

/** Builds a path from a template, URL-encoding every parameter: the one way paths are made. */
export function apiPath(strings: TemplateStringsArray, ...params: string[]): string {
  return strings.reduce((out, part, i) => out + part + (i < params.length ? encodeURIComponent(params[i] as string) : ""), "");
}

const sleepFor = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export class TigerCloudClient {
  readonly apiUrl: string;
  readonly projectId: string | undefined;
  private readonly options: ClientOptions;

  constructor(settings: ResolvedSettings, options: Partial<ClientOptions> = {}) {
    this.apiUrl = settings.apiUrl;
    this.projectId = settings.projectId;
    this.options = { ...CLIENT_DEFAULTS, ...options };
    // Credentials live only in this closure: not a property, so that no serializer, logger or
    // error formatter that walks the client can reach them.
    const authorization =
      settings.credentials.kind === "bearer"
        ? `Bearer ${settings.credentials.apiKey}`
        : `Basic ${Buffer.from(`${settings.credentials.publicKey}:${settings.credentials.secretKey}`).toString("base64")}`;
    const secrets = [...secretsOf(settings.credentials), authorization, authorization.split(" ")[1] as string];
    this.authorize = () => authorization;
    this.redact = (text) => secrets.reduce((t, s) => t.split(s).join("[REDACTED]"), text);
  }

  private readonly authorize: () => string;
  /** Removes every credential from a text that came from outside (an error body, a system message). */
  readonly redact: (text: string) => string;

  forkService(projectId: string, serviceId: string, body: ForkServiceRequest): Promise<Service> {
    return this.call({
      name: "forkService",
      method: "POST",
      path: apiPath`/projects/${projectId}/services/${serviceId}/forkService`,
      body,
      schema: ServiceSchema,
      expected: "a Service",
      retry: "fork",
    }).catch((err: unknown) => {
      throw forkFailure(err, projectId, serviceId, body.name);
    });
  }

  setHA(projectId: string, serviceId: string, body: SetHARequest): Promise<Service> {
    return this.call({
      name: "setHA",
      method: "POST",
      path: apiPath`/projects/${projectId}/services/${serviceId}/setHA`,
      body,
      schema: ServiceSchema,
      expected: "a Service",
      retry: "safe",
    });
  }

  stop(projectId: string, serviceId: string): Promise<Service> {
    return this.call({
      name: "stop",
      method: "POST",
      path: apiPath`/projects/${projectId}/services/${serviceId}/stop`,
      schema: ServiceSchema,
      expected: "a Service",
      retry: "safe",
    });
  }

  getService(projectId: string, serviceId: string): Promise<Service> {
    return this.call({
      name: "getService",
      method: "GET",
      path: apiPath`/projects/${projectId}/services/${serviceId}`,
      schema: ServiceSchema,
      expected: "a Service",
      retry: "safe",
    });
  }

  getVpc(projectId: string, vpcId: string): Promise<Vpc> {
    return this.call({
      name: "getVpc",
      method: "GET",
      path: apiPath`/projects/${projectId}/vpcs/${vpcId}`,
      schema: VpcSchema,
      expected: "a Vpc",
      retry: "safe",
    });
  }

  renameVpc(projectId: string, vpcId: string, name: string): Promise<RenameResponse> {
    return this.call({
      name: "renameVpc",
      method: "POST",
      path: apiPath`/projects/${projectId}/vpcs/${vpcId}/rename`,
      body: { name },
      schema: RenameResponseSchema,
      expected: "a Vpc or {message}",
      retry: "safe",
    });
  }

  private async call<T>(op: Operation<T>): Promise<T> {
    const { maxAttempts, maxTotalMs } = this.options;
    const started = Date.now();
    for (let attempt = 1; ; attempt++) {
      let failure: TigerCloudError;
      try {
        return await this.send(op);
      } catch (err) {
        if (!(err instanceof TigerCloudError)) throw err;
        failure = err;
      }
      const delayMs = this.retryDelay(op, failure, attempt);
      const withinBudget = delayMs !== undefined && Date.now() - started + delayMs <= maxTotalMs;
      if (attempt >= maxAttempts || !withinBudget) throw failure;
      this.options.onRetry?.({ operation: op.name, attempt: attempt + 1, maxAttempts, delayMs, reason: failure.message });
      await (this.options.sleep ?? sleepFor)(delayMs);
    }
  }

  /** The wait before the next attempt, or undefined when this failure must not be retried. */
  private retryDelay(op: Operation<unknown>, failure: TigerCloudError, attempt: number): number | undefined {
    const retryable =
      op.retry === "fork"
        ? failure instanceof RateLimitError || (failure instanceof ConnectionError && failure.connectionRefused)
        : failure instanceof ConnectionError ||
          failure instanceof TimeoutError ||
          (failure instanceof ApiError &&
            (this.options.retryStatuses.includes(failure.status) ||
              (op.method === "GET" && this.options.retryStatusesForGet.includes(failure.status))));
    if (!retryable) return undefined;
    if (failure instanceof ApiError && failure.retryAfterMs !== undefined) return failure.retryAfterMs;
    const ceiling = Math.min(this.options.maxDelayMs, this.options.baseDelayMs * 2 ** (attempt - 1));
    return Math.round(ceiling / 2 + Math.random() * (ceiling / 2));
  }

  private async send<T>(op: Operation<T>): Promise<T> {
    const headers: Record<string, string | false> = {
      Authorization: this.authorize(),
      Accept: "application/json",
      "User-Agent": `${PACKAGE_NAME}/${PACKAGE_VERSION}`,
      // Exactly the requests with a body say so; `false` stops axios adding its own default.
      "Content-Type": op.body === undefined ? false : "application/json",
    };

    let response: AxiosResponse<string>;
    try {
      response = await axios.request<string>({
        method: op.method,
        url: this.apiUrl + op.path,
        headers,
        data: op.body === undefined ? undefined : JSON.stringify(op.body),
        timeout: this.options.requestTimeoutMs,
        responseType: "text",
        transformResponse: (raw: unknown) => raw,
        validateStatus: () => true,
        maxRedirects: 0,
        transitional: { clarifyTimeoutError: true },
        proxy: false,
      });
    } catch (err) {
      // Never rethrow or wrap the axios error: its config holds the Authorization header.
      throw this.transportError(op, err);
    }

    const text = typeof response.data === "string" ? response.data : "";
    if (response.status < 200 || response.status > 299) throw this.httpError(op, response.status, text, response.headers["retry-after"]);

    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw new SchemaValidationError(op.method, op.path, op.expected, "the body is not JSON", describeBody(this.redact(text)));
    }
    const parsed = op.schema.safeParse(json);
    if (!parsed.success) {
      const problems = parsed.error.issues.map((i) => `${i.path.join(".") || "(body)"}: ${i.message}`).join("; ");
      throw new SchemaValidationError(op.method, op.path, op.expected, problems, describeBody(this.redact(text)));
    }
    return parsed.data;
  }

  private httpError(op: Operation<unknown>, status: number, text: string, retryAfter: unknown): ApiError {
    let code: string | undefined;
    let message: string | undefined;
    let details: string | undefined;
    try {
      const body = ErrorBodySchema.safeParse(JSON.parse(text));
      if (body.success) ({ code, message, details } = body.data);
    } catch {
      // Not JSON (an HTML page from a proxy, or nothing): summarised below.
    }
    return apiErrorFor({
      status,
      method: op.method,
      path: op.path,
      retryAfterMs: parseRetryAfter(retryAfter),
      code: code && this.redact(code),
      apiMessage: this.redact(message ?? `HTTP ${status}${text.trim() ? `, body ${describeBody(text)}` : ", empty body"}`),
      details: details && this.redact(details),
    });
  }

  private transportError(op: Operation<unknown>, err: unknown): TigerCloudError {
    const e = err as { code?: unknown; message?: unknown };
    const code = typeof e.code === "string" ? e.code : undefined;
    if (code === "ETIMEDOUT" || code === "ECONNABORTED") return new TimeoutError(op.method, op.path, this.options.requestTimeoutMs);
    const detail = this.redact(typeof e.message === "string" ? e.message : String(err));
    return new ConnectionError(op.method, op.path, code, detail);
  }
}

/** Retry-After: delta-seconds or an HTTP date. */
export function parseRetryAfter(value: unknown): number | undefined {
  if (typeof value !== "string" || value.trim() === "") return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now());
}

function describeBody(text: string): string {
  const flat = text.replace(/\s+/g, " ").trim();
  if (!flat) return "an empty body";
  return JSON.stringify(flat.length > 200 ? `${flat.slice(0, 200)}…` : flat);
}

/** A fork that failed after it was sent might exist: say so, unless the API surely refused it. */
function forkFailure(err: unknown, projectId: string, serviceId: string, name: string | undefined): unknown {
  const surelyNothing =
    (err instanceof ApiError && err.status >= 400 && err.status < 500) ||
    (err instanceof ConnectionError && err.connectionRefused) ||
    !(err instanceof TigerCloudError);
  return surelyNothing ? err : new ForkOutcomeUnknownError(projectId, serviceId, name, err as Error);
}

/** A client from explicit settings, then stack config, then the environment. */
export function createClient(
  explicit: ConnectionSettings = {},
  config: ConfigLookup = () => undefined,
  options: Partial<ClientOptions> = {},
): TigerCloudClient {
  return new TigerCloudClient(resolveSettings(explicit, config), options);
}
