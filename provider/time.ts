// Time, once for the whole provider: pausing, and the whole seconds a message reports.

/** Resolves after `ms` milliseconds. */
export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Whole seconds since `started` (a Date.now() value), as progress lines and errors report them. */
export const secondsSince = (started: number) => Math.round((Date.now() - started) / 1000);
