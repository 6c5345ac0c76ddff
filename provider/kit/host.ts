// What a provider method runs with in the engine's provider process: stack config (handed over by
// configure), a client made from it, and progress lines on stderr, which the engine shows.
import type * as pulumi from "@pulumi/pulumi";
import { type ClientOptions, createClient, type TigerCloudClient } from "../client";
import { type ConfigLookup, resolveProjectId } from "../settings";
import { printable } from "../text";

/** How fast waits poll; a test passes smaller numbers through setHostOptions. */
export interface PollOptions {
  firstPollMs: number;
  maxPollMs: number;
  factor: number;
}

/** Options that change how the host behaves, not what it does (tests use them to go fast). */
export interface HostOptions {
  client?: Partial<ClientOptions>;
  poll?: Partial<PollOptions>;
}

let stackConfig: ConfigLookup = () => undefined;
let options: HostOptions = {};

/** Called from configure(): stack config is read from here on. */
export function configureFromStack(req: pulumi.dynamic.ConfigureRequest): void {
  stackConfig = (key) => {
    const value: unknown = req.config.get(key);
    return typeof value === "string" ? value : undefined;
  };
}

/** Replaces the host options (tests: fast backoff and polling). The defaults stay frozen. */
export function setHostOptions(next: HostOptions): void {
  options = next;
}

export function hostOptions(): Readonly<HostOptions> {
  return options;
}

/** A client with settings resolved now: stack config, then the environment. */
export function clientNow(): TigerCloudClient {
  return createClient({}, stackConfig, {
    onRetry: (e) =>
      progress(
        `${e.operation}: retrying (attempt ${e.attempt} of ${e.maxAttempts}) in ${(e.delayMs / 1000).toFixed(1)} s after: ${e.reason}`,
      ),
    ...options.client,
  });
}

/** The project a resource uses when its input leaves it unset: stack config, then the environment. */
export function defaultProjectId(): string | undefined {
  return resolveProjectId(undefined, stackConfig);
}

/** A progress line a person can follow; anything from outside in it is escaped. */
export function progress(message: string): void {
  process.stderr.write(`[tigercloud] ${printable(message)}\n`);
}
