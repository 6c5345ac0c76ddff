#!/usr/bin/env node
// .ci/run's closing lines, run from the clone's root after the tests: the slowest suites (where the
// time goes), the jest workers that did not exit by themselves, and, when a lane gave no results,
// the checks that failed and npm test's last lines; then each lane's counts and the plain closing
// line for both lanes, "tests: N passed, N failed", which is what CI reads.
const fs = require("fs");
const path = require("path");
const read = (f) => (fs.existsSync(f) ? JSON.parse(fs.readFileSync(f, "utf8")) : undefined);
const main = read(".tmp/jest-results.json");
// The floor lane as test-lanes judged it (a named test that did not run counts as failed);
// no judgement at all is a failure of the lane.
const floor = read(".tmp/floor-lane.json") ?? { passed: 0, failed: 1 };
if (main) {
  const suites = main.testResults
    .map((t) => ({ s: (t.endTime - t.startTime) / 1000, name: path.relative(process.cwd(), t.name) }))
    .sort((a, b) => b.s - a.s);
  console.log("slowest suites (main lane):");
  for (const t of suites.slice(0, 12)) console.log(`  ${t.s.toFixed(1).padStart(6)} s  ${t.name}`);
  const wall = (Math.max(...main.testResults.map((t) => t.endTime)) - main.startTime) / 1000;
  console.log(`jest: ${wall.toFixed(0)} s of wall time for ${suites.length} suites`);
}
const lanes = [
  ["main lane", main ? { passed: main.numPassedTests, failed: main.numFailedTests } : { passed: 0, failed: 1 }],
  ["floor lane", floor],
];
// A worker jest had to kill ("failed to exit gracefully"): what its last suite left alive.
const records = ".tmp/workers";
// And how long each that did took from the end message of jest to its exit (jest kills one after 0.5 s).
const took = [];
for (const f of fs.existsSync(records) ? fs.readdirSync(records).filter((n) => n.endsWith(".json")) : []) {
  const r = read(path.join(records, f));
  const exited = path.join(records, f.replace(/\.json$/, ".exited"));
  if (fs.existsSync(exited)) {
    const e = read(exited);
    if (e.terminatedAt)
      console.log(
        `worker ${f.replace(/\.json$/, "")} was killed (SIGTERM) ${e.endedAt ? `${e.terminatedAt - e.endedAt} ms after the end message of jest` : "before any end message"} (${e.rssMB} MB resident)`,
      );
    else if (e.endedAt)
      took.push({
        ms: e.exitedAt - e.endedAt,
        hooks: e.exitBegan ? e.exitedAt - e.exitBegan : undefined,
        pending: e.pending ?? [],
        rss: e.rssMB,
      });
    continue;
  }
  console.log(
    `worker ${f.replace(/\.json$/, "")} did not exit by itself: after ${path.relative(process.cwd(), r.suite)} it held ${JSON.stringify(r.alive)}; ${[...r.handles, ...r.children.map((c) => `process ${c}`)].join("; ") || "no child, server or socket"}`,
  );
}
if (took.length)
  console.log(
    `jest workers: ${took.length} exited by themselves, ${took
      .sort((a, b) => a.ms - b.ms)
      .map(
        (t) =>
          `${t.ms} ms${t.hooks === undefined ? "" : ` (${t.hooks} ms in exit hooks)`}${t.rss === undefined ? "" : `, ${t.rss} MB resident`}${t.pending.length ? ` [pending at its end: ${t.pending.join(" ")}]` : ""}`,
      )
      .join(", ")} after the end message of jest (which kills one after 500 ms)`,
  );
// jest's own process as it ended them: how long it waited for them (past 500 ms it kills one), and
// its longest event-loop stall meanwhile. A wait past 500 ms while every worker ran its last exit
// hook at once is the time a process takes to end after its exit hooks.
for (const f of fs.existsSync(records) ? fs.readdirSync(records).filter((n) => n.endsWith(".end")) : []) {
  const e = read(path.join(records, f));
  console.log(
    `jest (pid ${f.replace(/^jest-|\.end$/g, "")}): ${e.endedAt - e.lastResultAt} ms from the last suite's result to the run's end, its event loop stalled at most ${e.longestStallMs} ms`,
  );
}
// No results from a lane: what npm test printed last, and each check that failed, repeated here.
if (!main || !fs.existsSync(".tmp/floor-lane.json")) {
  const log = fs.existsSync(".tmp/test.log") ? fs.readFileSync(".tmp/test.log", "utf8").split("\n") : [];
  const failed = log.filter((l) => /^checks: .* failed$|^\[test-lanes\] failed/.test(l));
  console.log(`a lane gave no results; the last lines of npm test (all in .tmp/test.log):`);
  // Colour codes and other control characters are shown, not sent to the terminal.
  const shown = (l) =>
    // eslint-disable-next-line no-control-regex -- matching control characters is the point
    l.replace(/\x1b\[[0-9;]*m/g, "").replace(/[\x00-\x08\x0b-\x1f\x7f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`);
  for (const l of [...failed, "...", ...log.slice(-40)]) console.log(`  | ${shown(l)}`);
}
for (const [lane, r] of lanes) console.log(`${lane}: ${r.passed} passed, ${r.failed} failed`);
const sum = (key) => lanes.reduce((n, [, r]) => n + r[key], 0);
console.log(`tests: ${sum("passed")} passed, ${sum("failed")} failed`);
