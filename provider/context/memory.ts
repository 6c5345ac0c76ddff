// What a provider process learns in one run (preview's reads and warnings, the key's project, what
// the resources declare), asked for by slot. The host holds it (engine/host.ts) and every call's
// context hands it on: a module keeps its slot, never the state. A run is one configuration: the
// engine configures every resource kind's provider with the same settings, and only other
// settings (a test's) start a new run, with nothing known.

/** A slot for what one module learns in a run: `fresh()` fills it the first time it is asked for. */
export interface RunSlot<T> {
  readonly fresh: () => T;
}

export const runSlot = <T>(fresh: () => T): RunSlot<T> => Object.freeze({ fresh });

/** What the current run has learnt, by slot (every call's context is one). */
export interface RunMemory {
  learnt<T>(slot: RunSlot<T>): T;
}
