// The Tiger Cloud API client: the only module that speaks HTTP. It encodes paths, authenticates,
// retries what is safe to retry, parses every response with zod, and turns every failure into one
// of the errors in ./errors, none of which carries a credential.
import axios, { type AxiosResponse } from "axios";
import { z } from "zod";
import {
  type EnvironmentTag,
  MessageResponseSchema,
  type MessageResponse,
  type ResizeRequest,
  RenameResponseSchema,
  ServiceSchema,
  VpcSchema,
  type ForkServiceRequest,
  type RenameResponse,
  type Service,
  type SetHARequest,
  type Vpc,
} from "./schemas";
import {
  ApiError,
  ConnectionError,
  ForkOutcomeUnknownError,
  InvalidInputError,
  RateLimitError,
  SchemaValidationError,
  TigerCloudError,
  TimeoutError,
  apiErrorFor,
} from "../errors";
import {
  type ConfigLookup,
  type ConnectionSettings,
  type ResolvedSettings,
  SETTING_SOURCES,
  resolveSettings,
  secretsOf,
} from "../settings";
import { PACKAGE_NAME, PACKAGE_VERSION } from "../version";

/** Every timing, size and retry number of the client. */
export interface ClientTuning {
  /** Per-request timeout, body included: a request not complete by then fails with TimeoutError. */
  readonly requestTimeoutMs: number;
  /** Attempts per call, the first included. */
  readonly maxAttempts: number;
  /** Backoff before retry n is a random delay in [d/2, d], d = min(maxDelayMs, baseDelayMs * 2^(n-1)). */
  readonly baseDelayMs: number;
  readonly maxDelayMs: number;
  /** No retry starts after this much time since the first attempt (Retry-After included). */
  readonly maxTotalMs: number;
  /** Statuses retried for every retryable operation. */
  readonly retryStatuses: readonly number[];
  /** Statuses retried for GETs only: a POST that failed with 500 may have half-happened, and
   *  nothing says the API's POSTs are idempotent. */
  readonly retryStatusesForGet: readonly number[];
  /** Larger response bodies are refused as they arrive, never buffered whole. */
  readonly maxResponseBytes: number;
}

/** The defaults, in one place. Frozen: tests and callers pass options instead of changing them. */
export const CLIENT_DEFAULTS: ClientTuning = Object.freeze({
  requestTimeoutMs: 30_000,
  maxAttempts: 5,
  baseDelayMs: 500,
  maxDelayMs: 15_000,
  maxTotalMs: 120_000,
  retryStatuses: Object.freeze([408, 429, 502, 503, 504]),
  retryStatusesForGet: Object.freeze([500]),
  maxResponseBytes: 10 * 1024 * 1024,
});
export type ClientOptions = ClientTuning & {
  /** Called before each retry, for progress messages. */
  onRetry?: (event: RetryEvent) => void;
  /** Replaces setTimeout for backoff waits (tests). */
  sleep?: (ms: number) => Promise<void>;
  /** More values no error may show (a password this client is about to send). */
  secrets?: readonly string[];
};

/** Per-call limits, given by callers that wait against a clock of their own. */
export interface CallOptions {
  /**
   * Epoch ms. No retry starts whose backoff would end after it, and each attempt's timeout
   * shrinks to the time left (but never below MIN_ATTEMPT_TIMEOUT_MS): a wait that polls with it
   * ends within its own timeout plus at most one request timeout.
   */
  deadline?: number | undefined;
}

/** An attempt shorter than this could not get an answer even from a healthy API. */
export const MIN_ATTEMPT_TIMEOUT_MS = 1000;

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
  method: "GET" | "POST" | "DELETE";
  path: string;
  body?: object;
  schema: z.ZodType<T>;
  expected: string;
  retry: RetryPolicy;
  /** False when a successful answer may hold a password: errors then describe it by field paths and types only. */
  quoteBody?: boolean;
  /** The answer has no body (204): nothing to parse. */
  noContent?: boolean;
}

/**
 * Builds a path from a template, URL-encoding every parameter: the one way paths are made. Each
 * parameter is named, `${{ serviceId }}`, so a refusal can say which. Percent-encoding keeps a
 * `/` inside one segment, but `.`, `..` and an empty segment would still name another path (a
 * server or proxy resolves `/services/..` to the project): they are refused before any request,
 * with an InvalidInputError naming the parameter, whoever calls.
 */
export function apiPath(strings: TemplateStringsArray, ...params: Record<string, string>[]): string {
  const template = strings.reduce((out, part, i) => out + part + (i < params.length ? `{${Object.keys(params[i] ?? {})[0]}}` : ""), "");
  return strings.reduce((out, part, i) => {
    if (i >= params.length) return out + part;
    const [name, value] = Object.entries(params[i] ?? {})[0] ?? ["(unnamed)", undefined];
    const rule = segmentRule(value);
    if (rule) {
      throw new InvalidInputError("TigerCloudClient", [
        {
          property: name,
          reason: `${name} ${rule}: it is one segment of the request path ${template}, and ".", ".." or an empty segment would name another path. No request was made.`,
        },
      ]);
    }
    return out + part + encodeURIComponent(value as string);
  }, "");
}

/** Why a value cannot be a path segment, or undefined when it can. */
function segmentRule(value: unknown): string | undefined {
  if (typeof value !== "string") return `must be a string (it is ${value === null ? "null" : typeof value})`;
  if (value === "") return "must not be empty";
  if (value === "." || value === "..") return `must not be "${value}"`;
  return undefined;
}

const sleepFor = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** How much of a body an error quotes, and of an API error message it keeps. */
const QUOTED_BODY_CHARS = 200;
const API_MESSAGE_CHARS = 1000;
/** No run of this many characters of a credential may survive redaction. */
const SECRET_FRAGMENT_CHARS = 6;
const REDACTED = "[REDACTED]";

/**
 * Every method answers with a promise: a refused argument (an ID that cannot be a path segment,
 * see apiPath) is a rejection like any failure, and nothing is sent.
 */
export class TigerCloudClient {
  readonly apiUrl: string;
  private readonly options: ClientOptions;

  constructor(settings: ResolvedSettings, options: Partial<ClientOptions> = {}) {
    this.apiUrl = settings.apiUrl;
    this.options = { ...CLIENT_DEFAULTS, ...options };
    // Credentials live only in this closure: not a property, so that no serializer, logger or
    // error formatter that walks the client can reach them.
    const token =
      settings.credentials.kind === "bearer"
        ? settings.credentials.apiKey
        : Buffer.from(`${settings.credentials.publicKey}:${settings.credentials.secretKey}`).toString("base64");
    const authorization = `${settings.credentials.kind === "bearer" ? "Bearer" : "Basic"} ${token}`;
    const secrets = [...secretsOf(settings.credentials), token, ...(options.secrets ?? [])];
    const redactWhole = wholeRedactor(secrets);
    const redactFragments = fragmentRedactor(secrets);
    this.authorize = () => authorization;
    this.redactWhole = redactWhole;
    this.redact = (text) => redactFragments(redactWhole(text));
  }

  private readonly authorize: () => string;
  /** Removes every whole credential: cheap on a large text, so it runs before any cut. */
  private readonly redactWhole: (text: string) => string;
  /** Removes every credential, and every run of 6 or more of its characters, from a text that came from outside. */
  readonly redact: (text: string) => string;

  async forkService(projectId: string, serviceId: string, body: ForkServiceRequest, call?: CallOptions): Promise<Service> {
    return this.call(
      {
        name: "forkService",
        method: "POST",
        path: apiPath`/projects/${{ projectId }}/services/${{ serviceId }}/forkService`,
        body,
        schema: ServiceSchema,
        expected: "a Service",
        retry: "fork",
        // The answer carries the fork's initial password.
        quoteBody: false,
      },
      call,
    ).catch((err: unknown) => {
      throw forkFailure(err, projectId, serviceId, body.name);
    });
  }

  async setHA(projectId: string, serviceId: string, body: SetHARequest, call?: CallOptions): Promise<Service> {
    return this.call(
      {
        name: "setHA",
        method: "POST",
        path: apiPath`/projects/${{ projectId }}/services/${{ serviceId }}/setHA`,
        body,
        schema: ServiceSchema,
        expected: "a Service",
        retry: "safe",
      },
      call,
    );
  }

  async stop(projectId: string, serviceId: string, call?: CallOptions): Promise<Service> {
    return this.call(
      {
        name: "stop",
        method: "POST",
        path: apiPath`/projects/${{ projectId }}/services/${{ serviceId }}/stop`,
        schema: ServiceSchema,
        expected: "a Service",
        retry: "safe",
      },
      call,
    );
  }

  /**
   * Deletes a service: 202 and no body promised; DELETING, then DELETED or a 404. Final: its data
   * goes. Retried like stop: a repeat meets DELETING (202) or the 404 of a service already gone.
   */
  async deleteService(projectId: string, serviceId: string, call?: CallOptions): Promise<void> {
    await this.call(
      {
        name: "deleteService",
        method: "DELETE",
        path: apiPath`/projects/${{ projectId }}/services/${{ serviceId }}`,
        schema: z.unknown(),
        expected: "no content",
        retry: "safe",
        noContent: true,
      },
      call,
    );
  }

  /** Starts a stopped service: PAUSED, then RESUMING, then READY. Idempotent, so retried like stop. */
  async start(projectId: string, serviceId: string, call?: CallOptions): Promise<Service> {
    return this.call(
      {
        name: "start",
        method: "POST",
        path: apiPath`/projects/${{ projectId }}/services/${{ serviceId }}/start`,
        schema: ServiceSchema,
        expected: "a Service",
        retry: "safe",
      },
      call,
    );
  }

  /** Renames a service in place. Idempotent (the same name twice is harmless), so retried. */
  async renameService(projectId: string, serviceId: string, name: string, call?: CallOptions): Promise<Service> {
    return this.call(
      {
        name: "renameService",
        method: "POST",
        path: apiPath`/projects/${{ projectId }}/services/${{ serviceId }}/rename`,
        body: { name },
        schema: ServiceSchema,
        expected: "a Service",
        retry: "safe",
      },
      call,
    );
  }

  /** Resizes a service in place (a transition, then READY). The same size twice is harmless, so retried. */
  async resize(projectId: string, serviceId: string, body: ResizeRequest, call?: CallOptions): Promise<Service> {
    return this.call(
      {
        name: "resize",
        method: "POST",
        path: apiPath`/projects/${{ projectId }}/services/${{ serviceId }}/resize`,
        body,
        schema: ServiceSchema,
        expected: "a Service",
        retry: "safe",
      },
      call,
    );
  }

  /** Tags a service DEV or PROD. Idempotent, so retried. */
  async setEnvironment(projectId: string, serviceId: string, environment: EnvironmentTag, call?: CallOptions): Promise<MessageResponse> {
    return this.call(
      {
        name: "setEnvironment",
        method: "POST",
        path: apiPath`/projects/${{ projectId }}/services/${{ serviceId }}/setEnvironment`,
        body: { environment },
        schema: MessageResponseSchema,
        expected: "a message",
        retry: "safe",
      },
      call,
    );
  }

  /**
   * Sets the password of the service's tsdbadmin role (204, no body). Make the client with the
   * password among its `secrets`, so no error can show it. Idempotent (the same password), so retried.
   */
  async updatePassword(projectId: string, serviceId: string, password: string, call?: CallOptions): Promise<unknown> {
    return this.call(
      {
        name: "updatePassword",
        method: "POST",
        path: apiPath`/projects/${{ projectId }}/services/${{ serviceId }}/updatePassword`,
        body: { password },
        schema: z.unknown(),
        expected: "no content",
        retry: "safe",
        noContent: true,
      },
      call,
    );
  }

  async getService(projectId: string, serviceId: string, call?: CallOptions): Promise<Service> {
    return this.call(
      {
        name: "getService",
        method: "GET",
        path: apiPath`/projects/${{ projectId }}/services/${{ serviceId }}`,
        schema: ServiceSchema,
        expected: "a Service",
        retry: "safe",
      },
      call,
    );
  }

  /** Every service of the project, with no filter and no paging. */
  async listServices(projectId: string, call?: CallOptions): Promise<Service[]> {
    return this.call(
      {
        name: "listServices",
        method: "GET",
        path: apiPath`/projects/${{ projectId }}/services`,
        schema: z.array(ServiceSchema),
        expected: "an array of Service",
        retry: "safe",
      },
      call,
    );
  }

  async getVpc(projectId: string, vpcId: string, call?: CallOptions): Promise<Vpc> {
    return this.call(
      {
        name: "getVpc",
        method: "GET",
        path: apiPath`/projects/${{ projectId }}/vpcs/${{ vpcId }}`,
        schema: VpcSchema,
        expected: "a Vpc",
        retry: "safe",
      },
      call,
    );
  }

  async renameVpc(projectId: string, vpcId: string, name: string, call?: CallOptions): Promise<RenameResponse> {
    return this.call(
      {
        name: "renameVpc",
        method: "POST",
        path: apiPath`/projects/${{ projectId }}/vpcs/${{ vpcId }}/rename`,
        body: { name },
        schema: RenameResponseSchema,
        expected: "a Vpc or {message}",
        retry: "safe",
      },
      call,
    );
  }

  private async call<T>(op: Operation<T>, call: CallOptions = {}): Promise<T> {
    const { maxAttempts, maxTotalMs } = this.options;
    const { deadline } = call;
    const started = Date.now();
    for (let attempt = 1; ; attempt++) {
      let failure: TigerCloudError;
      try {
        return await this.send(op, this.attemptTimeout(deadline));
      } catch (err) {
        // Only a bug of this module lands here; its message goes through redaction like any other text.
        if (!(err instanceof TigerCloudError)) throw new TigerCloudError(`${op.method} ${op.path} failed: ${this.redact(String(err))}`);
        failure = err;
      }
      const delayMs = this.retryDelay(op, failure, attempt);
      const now = Date.now();
      const withinBudget =
        delayMs !== undefined && now - started + delayMs <= maxTotalMs && (deadline === undefined || now + delayMs <= deadline);
      if (attempt >= maxAttempts || !withinBudget) throw failure;
      this.options.onRetry?.({ operation: op.name, attempt: attempt + 1, maxAttempts, delayMs, reason: failure.message });
      await (this.options.sleep ?? sleepFor)(delayMs);
    }
  }

  /** The request timeout, cut to the time left before the caller's deadline. */
  private attemptTimeout(deadline: number | undefined): number {
    const { requestTimeoutMs } = this.options;
    if (deadline === undefined) return requestTimeoutMs;
    return Math.min(requestTimeoutMs, Math.max(MIN_ATTEMPT_TIMEOUT_MS, deadline - Date.now()));
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

  private async send<T>(op: Operation<T>, timeoutMs: number): Promise<T> {
    const headers: Record<string, string | false> = {
      Authorization: this.authorize(),
      Accept: "application/json",
      "User-Agent": `${PACKAGE_NAME}/${PACKAGE_VERSION}`,
      // Exactly the requests with a body say so; `false` stops axios adding its own default.
      "Content-Type": op.body === undefined ? false : "application/json",
    };

    // A wall clock over the whole exchange: axios's own timeout stops at the headers, so a body
    // that trickles in would keep the call open forever.
    const abort = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      abort.abort();
    }, timeoutMs);
    let response: AxiosResponse<string>;
    try {
      response = await axios.request<string>({
        method: op.method,
        url: this.apiUrl + op.path,
        headers,
        data: op.body === undefined ? undefined : JSON.stringify(op.body),
        signal: abort.signal,
        maxContentLength: this.options.maxResponseBytes,
        responseType: "text",
        transformResponse: (raw: unknown) => raw,
        validateStatus: () => true,
        maxRedirects: 0,
        proxy: false,
      });
    } catch (err) {
      // Never rethrow or wrap the axios error: its config holds the Authorization header.
      throw timedOut ? new TimeoutError(op.method, op.path, timeoutMs) : this.transportError(op, err, timeoutMs);
    } finally {
      clearTimeout(timer);
    }

    const text = typeof response.data === "string" ? response.data : "";
    const contentType = response.headers["content-type"];
    if (response.status < 200 || response.status > 299) {
      throw this.httpError(op, response.status, text, contentType, response.headers["retry-after"]);
    }

    const received = () =>
      op.quoteBody === false ? `${Buffer.byteLength(text)} bytes, not quoted: this answer may hold a password` : this.quote(text);
    // A success that has nothing to say: whatever body came with it is not read.
    if (op.noContent) return op.schema.parse(undefined);
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw new SchemaValidationError(op.method, op.path, op.expected, "the body is not JSON", received());
    }
    const parsed = op.schema.safeParse(json);
    if (!parsed.success) {
      throw new SchemaValidationError(op.method, op.path, op.expected, describeIssues(parsed.error.issues, json), received());
    }
    return parsed.data;
  }

  private httpError(op: Operation<unknown>, status: number, text: string, contentType: unknown, retryAfter: unknown): ApiError {
    const retryAfterMs = parseRetryAfter(retryAfter);
    const answer = apiErrorBody(text);
    if (answer) {
      return apiErrorFor({
        status,
        method: op.method,
        path: op.path,
        retryAfterMs,
        code: answer.code && this.keep(answer.code, API_MESSAGE_CHARS),
        apiMessage:
          answer.message === undefined
            ? `HTTP ${status} with ${this.describeBody(text, contentType)}`
            : this.keep(answer.message, API_MESSAGE_CHARS),
        details: answer.details && this.keep(answer.details, API_MESSAGE_CHARS),
        apiAnswered: true,
      });
    }
    // Not the API's own error object: a gateway, a proxy, or a wrong base URL answered. For a
    // refusal such as a 404 that matters: it says nothing about the object asked for.
    const refusal = status >= 400 && status < 500 && status !== 408 && status !== 429;
    const { config, env } = SETTING_SOURCES.apiUrl;
    const hint = refusal ? `: not the API's own answer; the API URL (${config} / ${env}) may be wrong, or a proxy answered` : "";
    return apiErrorFor({
      status,
      method: op.method,
      path: op.path,
      retryAfterMs,
      apiMessage: `HTTP ${status} with ${this.describeBody(text, contentType)}${hint}`,
      apiAnswered: false,
    });
  }

  private transportError(op: Operation<unknown>, err: unknown, timeoutMs: number): TigerCloudError {
    const e = err as { code?: unknown; message?: unknown };
    const code = typeof e.code === "string" ? e.code : undefined;
    const message = typeof e.message === "string" ? e.message : String(err);
    if (code === "ETIMEDOUT" || code === "ECONNABORTED") return new TimeoutError(op.method, op.path, timeoutMs);
    if (code === "ERR_BAD_RESPONSE" && message.startsWith("maxContentLength")) {
      const cap = formatBytes(this.options.maxResponseBytes);
      return new SchemaValidationError(
        op.method,
        op.path,
        op.expected,
        `the body is larger than ${cap}, the most this client reads`,
        undefined,
      );
    }
    return new ConnectionError(op.method, op.path, code, this.redact(message));
  }

  /** Outside text kept in an error: credentials removed first, then cut, so no cut can leave part of one. */
  private keep(text: string, maxChars: number): string {
    const whole = this.redactWhole(text);
    return this.redact(whole.length > maxChars ? `${whole.slice(0, maxChars)}…` : whole);
  }

  /** A body as an error quotes it: one line, redacted, cut. */
  private quote(text: string): string {
    const flat = this.redactWhole(text).replace(/\s+/g, " ").trim();
    if (!flat) return "an empty body";
    return JSON.stringify(this.keep(flat, QUOTED_BODY_CHARS));
  }

  /** "an HTML body "<html>…"", "an empty body": what kind of body came, and its start. */
  private describeBody(text: string, contentType: unknown): string {
    if (!text.trim()) return "an empty body";
    const type = typeof contentType === "string" ? contentType.toLowerCase() : "";
    const kind = type.includes("html") || /^\s*</.test(text) ? "an HTML body" : type.includes("json") ? "a JSON body" : "a body";
    return `${kind} ${this.quote(text)}`;
  }
}

/** The API's own error object (`{code, message, details}`, a string code or message at least), or undefined. */
function apiErrorBody(text: string): { code: string | undefined; message: string | undefined; details: string | undefined } | undefined {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof json !== "object" || json === null || Array.isArray(json)) return undefined;
  const o = json as Record<string, unknown>;
  const str = (v: unknown) => (typeof v === "string" ? v : undefined);
  const answer = { code: str(o.code), message: str(o.message), details: str(o.details) };
  return answer.code === undefined && answer.message === undefined ? undefined : answer;
}

/** What is wrong with a body, by field path and type only: never a value, which could be a password. */
function describeIssues(issues: readonly z.core.$ZodIssue[], json: unknown): string {
  return issues
    .map((issue) => {
      const where = issue.path.map(String).join(".") || "(body)";
      const value = valueAt(json, issue.path);
      const got = typeName(value);
      if (issue.code === "invalid_type") return `${where}: expected ${issue.expected}, got ${got}`;
      if (issue.code === "too_small" && typeof value === "string")
        return `${where}: expected at least ${issue.minimum} characters, got ${value.length}`;
      if (issue.code === "invalid_union") return `${where}: matches none of the accepted forms, got ${got}`;
      return `${where}: ${issue.code.replace(/_/g, " ")}, got ${got}`;
    })
    .join("; ");
}

function valueAt(json: unknown, path: readonly PropertyKey[]): unknown {
  let here = json;
  for (const key of path) {
    if (typeof here !== "object" || here === null) return undefined;
    here = (here as Record<PropertyKey, unknown>)[key];
  }
  return here;
}

function typeName(value: unknown): string {
  if (value === undefined) return "nothing";
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  return typeof value;
}

function formatBytes(bytes: number): string {
  const MiB = 1024 * 1024;
  if (bytes >= MiB && bytes % MiB === 0) return `${bytes / MiB} MiB`;
  if (bytes >= 1024 && bytes % 1024 === 0) return `${bytes / 1024} KiB`;
  return `${bytes} bytes`;
}

/** Replaces each secret, whole or in pieces of 6 characters, with [REDACTED]: for any text that may quote one. */
export function secretRedactor(secrets: string[]): (text: string) => string {
  const whole = wholeRedactor(secrets);
  const fragments = fragmentRedactor(secrets);
  return (text) => fragments(whole(text));
}

/** Replaces every whole occurrence of each secret, longest first. */
function wholeRedactor(secrets: string[]): (text: string) => string {
  const ordered = [...new Set(secrets.filter((s) => s.length > 0))].sort((a, b) => b.length - a.length);
  return (text) => ordered.reduce((t, s) => t.split(s).join(REDACTED), text);
}

/** Replaces every run of characters made of overlapping 6-character pieces of a secret: a secret cut short by whoever echoed it still goes. */
function fragmentRedactor(secrets: string[]): (text: string) => string {
  const pieces = new Set<string>();
  for (const s of secrets) for (let i = 0; i + SECRET_FRAGMENT_CHARS <= s.length; i++) pieces.add(s.slice(i, i + SECRET_FRAGMENT_CHARS));
  return (text) => {
    if (pieces.size === 0) return text;
    const hidden = new Uint8Array(text.length);
    let found = false;
    for (let i = 0; i + SECRET_FRAGMENT_CHARS <= text.length; i++) {
      if (pieces.has(text.slice(i, i + SECRET_FRAGMENT_CHARS))) {
        hidden.fill(1, i, i + SECRET_FRAGMENT_CHARS);
        found = true;
      }
    }
    if (!found) return text;
    let out = "";
    let i = 0;
    while (i < text.length) {
      let j = i;
      const flag = hidden[i];
      while (j < text.length && hidden[j] === flag) j++;
      out += flag ? REDACTED : text.slice(i, j);
      i = j;
    }
    return out;
  };
}

/** Retry-After: delta-seconds or an HTTP date. */
export function parseRetryAfter(value: unknown): number | undefined {
  if (typeof value !== "string" || value.trim() === "") return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now());
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
