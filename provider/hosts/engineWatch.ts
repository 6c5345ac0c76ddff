// The provider process ends with the engine that started it. Loaded by the first request (see
// host.ts), or earlier, at the process's start, by `pulumi-tigercloud/watchdog` (NODE_OPTIONS).
import * as fs from "fs";

let watching = false;
export const PROVIDER_PROCESS_TITLE = "pulumi-tigercloud dynamic-provider";
/** The provider plugin's process title (`ps` shows it; the kill tests look for it). */
export const PLUGIN_PROCESS_TITLE = "pulumi-resource-tigercloud";

/**
 * The provider process ends with the engine that started it. The engine starts it in a process
 * group of its own, so a killed `pulumi up` leaves it running: without this it went on polling,
 * and a progress line to the dead engine's pipe raised EPIPE, whose report raised EPIPE again,
 * thousands of times a second. Only in the engine's provider process, not in a program or a test:
 * the dynamic provider's (known by its arguments), or the provider plugin, which names its title.
 */
export function endWithEngine(title = PROVIDER_PROCESS_TITLE): void {
  if (watching || (title === PROVIDER_PROCESS_TITLE && !/dynamic-provider/.test(process.argv[1] ?? ""))) return;
  watching = true;
  // Tells `ps` which provider processes run this package's code (and so watch their engine).
  process.title = title;
  for (const stream of [process.stdout, process.stderr]) stream.on("error", () => process.exit(1));
  // The dynamic provider's engine is the parent, or the grandparent when a wrapper script starts
  // node; the plugin's wrapper execs node, so its engine is its parent, and only that is watched
  // (a grandparent, the user's shell, may end first: `nohup pulumi up &`).
  const engine = ancestors(title === PROVIDER_PROCESS_TITLE ? 2 : 1);
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
