// The test environment: jest's node environment, plus a check at a suite's end that it left
// nothing keeping its worker alive (a child process, a socket, a server, a timer). A worker holding
// one cannot exit when the run ends and jest kills it ("A worker process has failed to exit
// gracefully"), hiding which suite leaked. Here the suite waits for what is still closing (a server
// finishing its shutdown on a loaded machine), and fails naming what did not close.
const fs = require("fs");
const { TestEnvironment } = require("jest-environment-node");

const DRAIN_MS = Number(process.env.PULUMI_TIGERCLOUD_DRAIN_MS || 15_000);
const { setTimeout: sleep } = require("timers/promises");
const { setImmediate: immediately } = require("timers");

/** What keeps this process alive, by kind ("ProcessWrap", "TCPSocketWrap", "Timeout", ...), counted. */
function alive() {
  const counts = new Map();
  for (const kind of process.getActiveResourcesInfo()) counts.set(kind, (counts.get(kind) ?? 0) + 1);
  return counts;
}

/** The kinds present now beyond `before`. */
function beyond(before) {
  const extra = [];
  for (const [kind, n] of alive()) if (n > (before.get(kind) ?? 0)) extra.push(`${n - (before.get(kind) ?? 0)} ${kind}`);
  return extra;
}

/**
 * The worker's child processes still running, as "name (pid N)" (Linux's /proc; none where it is
 * not). A simulator's PostgreSQL servers are detached from the event loop (unref), so they keep no
 * worker alive, but one left running is stopped by the worker's exit hook, which then takes longer
 * than jest waits for on a loaded machine: a leak all the same.
 */
function children() {
  let pids;
  try {
    pids = fs.readdirSync("/proc").filter((p) => /^[0-9]+$/.test(p));
  } catch {
    return [];
  }
  const found = [];
  for (const pid of pids) {
    try {
      // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so read from its last ")".
      const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
      const close = stat.lastIndexOf(")");
      const [state, ppid] = stat.slice(close + 2).split(" ");
      if (Number(ppid) === process.pid && state !== "Z") found.push(`${stat.slice(stat.indexOf("(") + 1, close)} (pid ${pid})`);
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

/** The open handles, described enough to find the code that made them (no arguments: they may hold a test's secret). */
function describeHandles() {
  return process
    ._getActiveHandles()
    .map((h) => {
      const kind = h?.constructor?.name ?? typeof h;
      if (kind === "ChildProcess") return `child process ${h.spawnfile} (pid ${h.pid})`;
      if (kind === "Server") return `server ${JSON.stringify(h.address())}`;
      if (kind === "Socket" && h.remotePort) return `socket to ${h.remoteAddress}:${h.remotePort}`;
      return undefined;
    })
    .filter(Boolean);
}

/** The worker's size, in MB: the kernel's freeing of it is part of its exit, which jest waits 500 ms for. */
function memory() {
  const { rss, heapUsed } = process.memoryUsage();
  return { rssMB: Math.round(rss / 1e6), heapUsedMB: Math.round(heapUsed / 1e6) };
}

// Where CI asks (PULUMI_TIGERCLOUD_WORKER_RECORD, a folder): each worker writes, at each suite's
// end, that suite and everything then keeping it alive, and a mark when it exits; a worker jest had
// to kill has no mark, and its last record says what held it.
const RECORD = process.env.PULUMI_TIGERCLOUD_WORKER_RECORD;
if (RECORD) fs.mkdirSync(RECORD, { recursive: true });
// When jest's end message comes (jest-worker's CHILD_MESSAGE_END, 2), the worker leaves at once.
// Left to end by itself (jest only stops listening), it frees its whole heap first, which
// process.exit skips: after a run of end-to-end suites, on a loaded machine, that took longer than
// the 500 ms jest waits before killing it ("A worker process has failed to exit gracefully"),
// though nothing was left open. Its exit hooks (a simulator's stopping what it left running) run.
// The kernel's freeing of its memory is part of its exit too (about 180 ms a GB here, idle), so
// the record says how big it was.
let endedAt = 0;
let exitBegan = 0;
let terminatedAt = 0;
const onMessage = (m) => {
  if (!Array.isArray(m) || m[0] !== 2) return;
  endedAt = Date.now();
  process.removeListener("message", onMessage);
  // After jest's own listener has taken the message (it sends nothing after).
  immediately(() => process.exit());
};
// Killed by jest (SIGTERM, whose default skips exit hooks): its exit hooks run, and its record says when.
process.once("SIGTERM", () => {
  terminatedAt = Date.now();
  process.exit();
});
// With what is still pending then (a request on libuv's threadpool, which the process's end waits for, is one).
if (RECORD)
  process.on("exit", () =>
    fs.writeFileSync(
      `${RECORD}/${process.pid}.exited`,
      JSON.stringify({ endedAt, terminatedAt, exitBegan, exitedAt: Date.now(), pending: process.getActiveResourcesInfo(), ...memory() }),
    ),
  );
if (process.send) process.prependListener("message", onMessage);
process.prependOnceListener("exit", () => (exitBegan = Date.now()));

class LeakCheckingEnvironment extends TestEnvironment {
  constructor(config, context) {
    super(config, context);
    this.suite = context.testPath;
  }

  async setup() {
    await super.setup();
    // The standard streams open their pipes on first use (stdin only when read from, by some SDKs):
    // opened now, they are not taken for a suite's.
    void process.stdin;
    void process.stdout;
    void process.stderr;
    this.before = alive();
    this.childrenBefore = new Set(children());
  }

  async teardown() {
    await super.teardown();
    const deadline = Date.now() + DRAIN_MS;
    const left = () => [
      ...beyond(this.before),
      ...children()
        .filter((c) => !this.childrenBefore.has(c))
        .map((c) => `process ${c}`),
    ];
    let extra = left();
    while (extra.length && Date.now() < deadline) {
      await sleep(100);
      extra = left();
    }
    if (RECORD)
      fs.writeFileSync(
        `${RECORD}/${process.pid}.json`,
        JSON.stringify({
          suite: this.suite,
          at: Date.now(),
          alive: Object.fromEntries(alive()),
          handles: describeHandles(),
          children: children(),
          ...memory(),
        }),
      );
    if (extra.length)
      throw new Error(
        `the suite left ${extra.join(", ")} open ${DRAIN_MS / 1000} s after its end, which would keep its jest worker from exiting: ` +
          `${describeHandles().join("; ") || "no child process, server or socket of this process's loop"}. Close it in the suite's afterAll.`,
      );
  }
}

module.exports = LeakCheckingEnvironment;
