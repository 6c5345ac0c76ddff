// The one request helper: every request to the API goes through ApiRequester.request, which
// holds the retry policy, the time limits, the schema check of the answer and the mapping of every
// failure to an error of ../errors, none of which carries a credential.
import type { AxiosResponse, AxiosStatic } from "axios";
import type { z } from "zod";
import {
  ApiError,
  ConnectionError,
  InvalidInputError,
  RateLimitError,
  SchemaValidationError,
  TigerCloudError,
  TimeoutError,
  apiErrorFor,
} from "../errors";
import { SETTING_SOURCES } from "../settings";
import { printable } from "../text";
import { sleep } from "../time";
import { PACKAGE_NAME, PACKAGE_VERSION } from "../version";
import { apiErrorBody, describeIssues, formatBytes } from "./answers";

// axios, loaded with the first request: the engine starts a provider process for every preview,
// and one with nothing to change (the common preview) sends none. Its load was about 60 ms of CPU.
// (Node's module cache makes every call after the first a lookup.)
const http = (): AxiosStatic => (require("axios") as { default: AxiosStatic }).default;

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
  /** Epoch ms: every call of this client ends by then, whatever deadline the call gives (an operation's own limit). */
  deadline?: number;
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
export type RetryPolicy = "safe" | "fork";

/** One request to the API: what is sent, what the answer must be, and which failures are retried. */
export interface ApiRequest<T> {
  /** The API's name for it (forkService, getService…), for retry messages. */
  operation: string;
  method: "GET" | "POST" | "DELETE";
  path: string;
  body?: object;
  /** The answer's shape, and how an error names it ("a Service"). */
  schema: z.ZodType<T>;
  expected: string;
  retry: RetryPolicy;
  /** False when a successful answer may hold a password: errors then describe it by field paths and types only. */
  quoteBody?: boolean;
  /** The answer has nothing to say (202, 204): an empty body, or JSON that is not read. */
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

/** How much of a body an error quotes, and of an API error message it keeps. */
const QUOTED_BODY_CHARS = 200;
const API_MESSAGE_CHARS = 1000;

/** Sends requests with one client's settings; the credentials stay in the closure it is given. */
export class ApiRequester {
  constructor(
    readonly apiUrl: string,
    private readonly options: ClientOptions,
    private readonly authorization: () => string,
    /** Removes every whole credential: cheap on a large text, so it runs before any cut. */
    private readonly redactWhole: (text: string) => string,
    /** Removes every credential, and every run of 6 or more of its characters. */
    private readonly redact: (text: string) => string,
  ) {}

  async request<T>(op: ApiRequest<T>, call: CallOptions = {}): Promise<T> {
    const { maxAttempts, maxTotalMs } = this.options;
    const deadline = earliest(call.deadline, this.options.deadline);
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
      this.options.onRetry?.({ operation: op.operation, attempt: attempt + 1, maxAttempts, delayMs, reason: failure.message });
      await (this.options.sleep ?? sleep)(delayMs);
    }
  }

  /** The request timeout, cut to the time left before the caller's deadline. */
  private attemptTimeout(deadline: number | undefined): number {
    const { requestTimeoutMs } = this.options;
    if (deadline === undefined) return requestTimeoutMs;
    return Math.min(requestTimeoutMs, Math.max(MIN_ATTEMPT_TIMEOUT_MS, deadline - Date.now()));
  }

  /** The wait before the next attempt, or undefined when this failure must not be retried. */
  private retryDelay(op: ApiRequest<unknown>, failure: TigerCloudError, attempt: number): number | undefined {
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

  private async send<T>(op: ApiRequest<T>, timeoutMs: number): Promise<T> {
    const headers: Record<string, string | false> = {
      Authorization: this.authorization(),
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
      response = await http().request<string>({
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
    // The API answers JSON, or nothing where it has nothing to say. Anything else (a proxy's or a
    // captive portal's page) is not its answer, even with a 2xx: a delete it "confirms" never
    // reached the API.
    const nothing = op.noContent === true && text.trim() === "";
    let json: unknown;
    if (!nothing) {
      try {
        json = JSON.parse(text);
      } catch {
        const { config, env } = SETTING_SOURCES.apiUrl;
        const problem = `the body is not JSON, so not the API's answer: the API URL (${config} / ${env}) may be wrong, or a proxy answered`;
        throw new SchemaValidationError(op.method, op.path, op.expected, problem, received());
      }
    }
    // A success that has nothing to say: whatever JSON came with it (`{}`, a message) is not read.
    if (op.noContent) return op.schema.parse(undefined);
    const parsed = op.schema.safeParse(json);
    if (!parsed.success) {
      throw new SchemaValidationError(op.method, op.path, op.expected, describeIssues(parsed.error.issues, json), received());
    }
    return parsed.data;
  }

  private httpError(op: ApiRequest<unknown>, status: number, text: string, contentType: unknown, retryAfter: unknown): ApiError {
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

  private transportError(op: ApiRequest<unknown>, err: unknown, timeoutMs: number): TigerCloudError {
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

  /**
   * Outside text kept in an error, escaped as the error's message is (an ApiError's fields are
   * printed on their own). Whole credentials go before the cut, so that no cut leaves part of one;
   * then every piece of one goes, before and again after the escaping: an escape (`\x1b`, `\"`)
   * could complete a piece of a credential holding such text, and redaction adds no control character.
   */
  private keep(text: string, maxChars: number, escape: (text: string) => string = printable): string {
    const whole = this.redactWhole(text);
    const cut = whole.length > maxChars ? `${whole.slice(0, maxChars)}…` : whole;
    return this.redact(escape(this.redact(cut)));
  }

  /** A body as an error quotes it: one line, redacted, cut, in quotes. */
  private quote(text: string): string {
    const flat = this.redactWhole(text).replace(/\s+/g, " ").trim();
    if (!flat) return "an empty body";
    // JSON.stringify leaves DEL, C1 controls and bidi overrides as they are: printable writes those.
    return this.keep(flat, QUOTED_BODY_CHARS, (cut) => printable(JSON.stringify(cut)));
  }

  /** "an HTML body "<html>…"", "an empty body": what kind of body came, and its start. */
  private describeBody(text: string, contentType: unknown): string {
    if (!text.trim()) return "an empty body";
    const type = typeof contentType === "string" ? contentType.toLowerCase() : "";
    const kind = type.includes("html") || /^\s*</.test(text) ? "an HTML body" : type.includes("json") ? "a JSON body" : "a body";
    return `${kind} ${this.quote(text)}`;
  }
}

/** The earlier of two deadlines, either of which may be unset. */
export const earliest = (a: number | undefined, b: number | undefined): number | undefined =>
  a === undefined ? b : b === undefined ? a : Math.min(a, b);

/** Retry-After: delta-seconds or an HTTP date. */
export function parseRetryAfter(value: unknown): number | undefined {
  if (typeof value !== "string" || value.trim() === "") return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now());
}
