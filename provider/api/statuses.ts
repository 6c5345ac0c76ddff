// The service statuses the API is known to report, each once, with its class. Every list of
// statuses elsewhere is derived from this table. A status added later by the API is in no class:
// it is kept as a plain string (api/schemas.ts), and no rule treats it as busy, stopped or gone.

export type StatusClass = "running" | "in transition" | "stopped" | "gone";

interface StatusRow {
  class: StatusClass;
  /** Busy with an operation: the API refuses another with 409, and the status passes by itself. */
  busy?: true;
}

const STATUS_TABLE: Readonly<Record<string, StatusRow>> = Object.freeze({
  READY: { class: "running" },
  OPTIMIZING: { class: "running" },
  QUEUED: { class: "in transition", busy: true },
  CONFIGURING: { class: "in transition", busy: true },
  RESUMING: { class: "in transition", busy: true },
  UPGRADING: { class: "in transition", busy: true },
  UNSTABLE: { class: "in transition", busy: true },
  // Stopping: `paused` reads true already, and the service is busy until PAUSED.
  PAUSING: { class: "stopped", busy: true },
  PAUSED: { class: "stopped" },
  DELETING: { class: "gone" },
  DELETED: { class: "gone" },
});

/** The statuses a request or a wait names as its goal. */
export const READY = "READY";
export const PAUSED = "PAUSED";
export const DELETED = "DELETED";

const where = (keep: (row: StatusRow) => boolean): readonly string[] =>
  Object.freeze(Object.keys(STATUS_TABLE).filter((status) => keep(STATUS_TABLE[status] as StatusRow)));

/** Busy with an operation: they pass by themselves. */
export const IN_TRANSITION = where((row) => row.busy === true);
/** Stopped, or stopping: a fork in these reads `paused: true`, and its HA cannot change. */
export const STOPPED = where((row) => row.class === "stopped");
/** Being deleted, or deleted: nothing waited for can be reached from them. */
export const GONE = where((row) => row.class === "gone");
/** Stopped or going away: no fork in these is adopted, and no HA or size change can finish. */
export const STOPPED_OR_GONE = where((row) => row.class === "stopped" || row.class === "gone");
/** Settled, running or stopped: a source in these can be forked, a fork stopped or deleted. */
export const SETTLED: readonly string[] = Object.freeze([READY, PAUSED]);

export const isStopped = (status: string): boolean => STOPPED.includes(status);
