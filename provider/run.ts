// What a process learns in one run, kept in one place: in the provider process, the reference reads
// and warnings of preview, the key's project, what the resources declare; in the program, the
// provider objects it serializes. A run is one configuration: the engine configures every resource
// kind's provider with the same settings, and only other settings (a test's) start a new run, with
// nothing known (a program's process is one run). Every other module keeps no state of its own.

let learnt = new Map<object, unknown>();

/**
 * A getter of what one module learns in the current run, made with `fresh()` the first time it is
 * asked for in a run. Modules hold the getter, never the state.
 */
export function learntInRun<T>(fresh: () => T): () => T {
  const token = {};
  return () => {
    if (!learnt.has(token)) learnt.set(token, fresh());
    return learnt.get(token) as T;
  };
}

/** Starts a new run: everything learnt before is forgotten (new settings; a test's new "run"). */
export function startRun(): void {
  learnt = new Map();
}
