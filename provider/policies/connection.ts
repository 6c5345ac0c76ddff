// Connecting to a service: the connection URIs handed to users, and the wait for a working login.
// The service has been seen to report READY before PostgreSQL accepts connections (the official
// CLI's own tests wait for a real login after READY), so "ready" by default means that tsdbadmin
// can log in and run `SELECT 1`.
import { secretRedactor } from "../api/redaction";
import { DATABASE, USERNAME } from "../database/names";
import { failureOf, openSession } from "../database/session";
import { TigerCloudError, WaitError } from "../errors";
import { printable } from "../text";
import { secondsSince, sleep } from "../time";
import type { CallContext, LoginTiming } from "../context/context";

export { DATABASE, USERNAME };

export const LOGIN_DEFAULTS: Readonly<LoginTiming> = Object.freeze({
  // Tries are cheap (a connection refused, or a login): a wait of at most 1 s after the server is up
  // is most of a fork's time once there is nothing to mask (a fork of a golden fork takes seconds).
  firstDelayMs: 250,
  maxDelayMs: 1000,
  attemptTimeoutMs: 10_000,
});

/** How much of a failed attempt's message a progress line or an error quotes. */
const REASON_CHARS = 200;

export interface Endpoint {
  host?: string | undefined;
  port?: number | undefined;
}

/**
 * `postgresql://tsdbadmin:<password>@<host>:<port>/tsdb?sslmode=require`, as the official CLI builds
 * it: role and password percent-encoded. Without a password (an adopted fork) the URI has none.
 * Undefined when the endpoint lacks a host or a port.
 */
export function connectionUri(endpoint: Endpoint | undefined, password: string | undefined): string | undefined {
  if (!endpoint?.host || endpoint.port === undefined) return undefined;
  const host = endpoint.host.includes(":") ? `[${endpoint.host}]` : endpoint.host;
  const user = encodeURIComponent(USERNAME) + (password ? `:${encodeURIComponent(password)}` : "");
  return `postgresql://${user}@${host}:${endpoint.port}/${DATABASE}?sslmode=require`;
}

/** What one login attempt found. `code` is PostgreSQL's SQLSTATE, or a Node.js error code. */
export type Attempt = { ok: true } | { ok: false; code: string | undefined; reason: string };

/** "password authentication failed": the server is up and answers logins. */
const WRONG_PASSWORD = "28P01";

export interface LoginWait {
  ctx: CallContext;
  serviceId: string;
  /** Where the API says the database is; a service that gives none cannot be logged in to. */
  host: string | undefined;
  port: number | undefined;
  /** Undefined when not known (an adopted fork): then a server that refuses a login is up. */
  password: string | undefined;
  deadline: number;
  /** The input that sets the deadline, named in the timeout error. */
  timeoutInput: string;
  /** One login attempt (tests replace it); default: node-postgres, TLS as sslmode=require. */
  attempt?: (timeoutMs: number) => Promise<Attempt>;
  sleep?: (ms: number) => Promise<void>;
}

/** How the wait ended: a login worked, or (no password known) the server refused one, so it is up. */
export type LoginOutcome = "logged-in" | "answered";

/**
 * Tries to log in until it works or the deadline passes: at once, then after 0.25 s, 0.5 s, then
 * every 1 s. Each attempt gets only the time left. Progress lines say what is awaited and,
 * when it changes, why the last attempt failed. No password or connection string is ever in a
 * message: a failed attempt's text is redacted before it is cut.
 */
export async function waitForLogin(wait: LoginWait): Promise<LoginOutcome> {
  const { host, port } = wait;
  if (host === undefined || port === undefined) {
    throw new TigerCloudError(
      `Service ${wait.serviceId} is READY but the API gives no endpoint to log in to; set readyWhen: "status" to wait for READY only.`,
    );
  }
  const spec = { ...wait, host, port };
  const { progress } = spec.ctx;
  const timing = { ...LOGIN_DEFAULTS, ...spec.ctx.options.login };
  const redact = secretRedactor(spec.password ? [spec.password, encodeURIComponent(spec.password)] : []);
  const attempt = spec.attempt ?? ((ms: number) => pgAttempt(spec, ms));
  const pause = spec.sleep ?? sleep;
  const started = Date.now();
  const where = `${spec.host}:${spec.port}`;
  progress(
    spec.password
      ? `service ${spec.serviceId}: waiting until ${USERNAME} can log in to ${DATABASE} at ${where} (readyWhen: "login")`
      : `service ${spec.serviceId}: its password is not known (an adopted fork); waiting until its database at ${where} answers a login (readyWhen: "login")`,
  );
  let lastReason = "";
  let lastWords = "";
  let earlierReason = ""; // the latest failure that differs from the last one
  for (let tries = 0; ; tries++) {
    const budgetMs = Math.max(1, Math.min(timing.attemptTimeoutMs, spec.deadline - Date.now()));
    const result = await attempt(budgetMs);
    if (result.ok) {
      progress(`service ${spec.serviceId}: ${USERNAME} logged in and ran SELECT 1 (${secondsSince(started)} s after READY)`);
      return "logged-in";
    }
    if (!spec.password && result.code === WRONG_PASSWORD) {
      progress(
        `service ${spec.serviceId}: its database answers and refuses a login without the password: taken as up (${secondsSince(started)} s after READY)`,
      );
      return "answered";
    }
    const reason = redact(printable(result.reason)).slice(0, REASON_CHARS);
    if (reason !== lastReason) {
      // Said when what a person reads changes: two ways of "not up yet" are one line.
      const words = waitingWords(result.code, reason);
      if (words !== lastWords) progress(`service ${spec.serviceId}: ${words} (${secondsSince(started)} s elapsed)`);
      lastWords = words;
      if (lastReason) earlierReason = lastReason;
    }
    const wait = spec.deadline - Date.now();
    if (wait <= 0) {
      // Attempts squeezed into the deadline's last moments often fail only for want of time
      // ("timeout expired"); an earlier, different failure says what is really wrong.
      const failures =
        budgetMs < timing.attemptTimeoutMs && earlierReason
          ? `the last attempt, with ${budgetMs} ms left, failed: ${reason}; before that, one failed: ${earlierReason}`
          : `the last attempt failed: ${reason}`;
      throw new WaitError(
        `Timed out after ${secondsSince(started)} s waiting for a login to service ${spec.serviceId} at ${where} as ${USERNAME}; ` +
          `${failures}. It is READY, but its database does not accept the login yet. ` +
          `Raise ${spec.timeoutInput}, or set readyWhen: "status" to wait for READY only.`,
      );
    }
    lastReason = reason;
    await pause(Math.min(nextLoginDelay(tries, timing), wait));
  }
}

/** Connection closed or refused, or PostgreSQL saying it is starting: what a database that is not up yet answers. */
const STARTING = new Set(["ECONNREFUSED", "ECONNRESET", "57P03"]);

/** A wait's progress in plain words: a database still starting is not an error; anything else is said as it came. */
function waitingWords(code: string | undefined, reason: string): string {
  if (
    (code && STARTING.has(code)) ||
    /ECONNREFUSED|ECONNRESET|Connection terminated unexpectedly|the database system is starting up/i.test(reason)
  )
    return "its database is still starting, not taking logins yet";
  return `no login yet, the last attempt said: ${reason}`;
}

/** The pause after the attempt numbered `tries` (0 is the first): doubling from firstDelayMs, at most maxDelayMs. */
export function nextLoginDelay(tries: number, timing: LoginTiming = LOGIN_DEFAULTS): number {
  return Math.min(timing.maxDelayMs, timing.firstDelayMs * 2 ** Math.min(tries, 20));
}

/** One login and `SELECT 1`, in a session of its own. */
async function pgAttempt(spec: LoginWait & { host: string; port: number }, timeoutMs: number): Promise<Attempt> {
  try {
    const session = await openSession({ host: spec.host, port: spec.port, password: spec.password }, timeoutMs);
    try {
      await session.query("SELECT 1");
    } finally {
      await session.end();
    }
    return { ok: true };
  } catch (err) {
    const { code, message } = failureOf(err);
    return { ok: false, code, reason: message ?? String(err) };
  }
}
