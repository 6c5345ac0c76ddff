// What a provider method runs with in the engine's provider process: stack config (handed over by
// configure), a client made from it, and progress lines on stderr, which the engine shows.
import * as fs from "fs";
import type * as pulumi from "@pulumi/pulumi";
import { type ClientOptions, createClient, type TigerCloudClient } from "../client";
import { type ConfigLookup, resolveProjectId } from "../settings";
import { printable } from "../text";

/** How fast waits poll; a test passes smaller numbers through setHostOptions. */
export interface PollOptions {
  firstPollMs: number;
  maxPollMs: number;
  pollShare: number;
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
  endWithEngine();
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

let watching = false;
export const PROVIDER_PROCESS_TITLE = "pulumi-tigercloud dynamic-provider";

/**
 * The provider process ends with the engine that started it. The engine starts it in a process
 * group of its own, so a killed `pulumi up` leaves it running: without this it went on polling,
 * and a progress line to the dead engine's pipe raised EPIPE, whose report raised EPIPE again,
 * thousands of times a second. Only in the engine's provider process, not in a program or a test.
 */
function endWithEngine(): void {
  if (watching || !/dynamic-provider/.test(process.argv[1] ?? "")) return;
  watching = true;
  // Tells `ps` which provider processes run this package's code (and so watch their engine).
  process.title = PROVIDER_PROCESS_TITLE;
  for (const stream of [process.stdout, process.stderr]) stream.on("error", () => process.exit(1));
  // The engine is the parent, or the grandparent when a wrapper script starts node.
  const engine = ancestors(2);
  if (engine.length === 0) return;
  setInterval(() => {
    if (!engine.every(isAlive)) process.exit(1);
  }, 1000).unref();
}

/** This process's parent, grandparent… (Linux: read from /proc; elsewhere only the parent). */
function ancestors(count: number): number[] {
  const found = [process.ppid];
  while (found.length < count) {
    const ppid = parentOf(found[found.length - 1] as number);
    if (ppid === undefined || ppid <= 1) break;
    found.push(ppid);
  }
  return found;
}

function statOf(pid: number): string[] | undefined {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    // "pid (command) state ppid …": the command may hold spaces and parentheses.
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  } catch {
    return undefined;
  }
}

function parentOf(pid: number): number | undefined {
  const ppid = Number(statOf(pid)?.[1]);
  return Number.isInteger(ppid) ? ppid : undefined;
}

function isAlive(pid: number): boolean {
  const stat = statOf(pid);
  if (stat) return stat[0] !== "Z"; // a zombie is dead, only not yet reaped
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}
