#!/usr/bin/env node
// The test command's two lanes (npm test runs this after the type check and lint):
//   - the main lane: every suite, on today's toolchain (scripts/toolchain.js: the newest Node.js
//     LTS, @pulumi/pulumi and Pulumi CLI), with the arguments given here passed on to jest;
//   - the floor lane, beside it: the tests of test/support/lanes.js on the oldest toolchain the package
//     supports (Node.js 20, the oldest @pulumi/pulumi of the peer range), run in .tmp/floor, a
//     hard-linked copy of this checkout whose node_modules holds that SDK instead.
// Both run the same CLI. The floor lane's output follows the main lane's; the exit code is
// non-zero when either failed. PULUMI_TIGERCLOUD_FLOOR_LANE=off leaves the floor lane out, =only runs it alone.
const { spawn, spawnSync } = require("child_process");
const fs = require("fs");
const path = require("path");
const toolchain = require("./toolchain");
const { linkCopy, useSdk } = require("./lane-sdk");
const { floorLane } = require("../test/support/lanes");

const root = path.join(__dirname, "..");
const floorDir = path.join(root, ".tmp", "floor");
const step = (what) => process.stderr.write(`[test-lanes] ${what}\n`);
const withPulumi = path.join("scripts", "with-pulumi.js");

/** .tmp/floor: this checkout hard-linked (dist/ as built), with the floor SDK in its node_modules. */
function makeFloorTree() {
  fs.rmSync(floorDir, { recursive: true, force: true });
  fs.mkdirSync(floorDir, { recursive: true });
  const skip = new Set([".git", ".tmp", "node_modules"]);
  const entries = fs.readdirSync(root).filter((e) => !skip.has(e));
  // cp -a keeps the times, so with-pulumi there sees dist/ as current and does not build again.
  linkCopy(
    entries.map((e) => path.join(root, e)),
    floorDir,
  );
  linkCopy([path.join(root, "node_modules")], floorDir);
  useSdk(floorDir, toolchain.floor.sdk);
}

const escapeRegExp = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** Starts the floor lane in .tmp/floor; resolves to its exit code, its output in `log`. */
function startFloorLane(log, results) {
  const suites = [...new Set(floorLane.map((t) => t.suite))];
  const names = `^(${floorLane.map((t) => escapeRegExp(t.test)).join("|")})$`;
  const out = fs.openSync(log, "w");
  const child = spawn(
    process.execPath,
    [withPulumi, "jest", "--selectProjects", "e2e", "--maxWorkers=2", "--json", `--outputFile=${results}`, "-t", names, ...suites],
    {
      cwd: floorDir,
      env: { ...process.env, PULUMI_TIGERCLOUD_NODE: toolchain.floor.node, PULUMI_TIGERCLOUD_SDK: toolchain.floor.sdk },
      stdio: ["ignore", out, out],
    },
  );
  return ended(child);
}

/** Every floor-lane test ran and passed, by its results; what did not, named. */
function judgeFloorLane(results) {
  let report;
  try {
    report = JSON.parse(fs.readFileSync(results, "utf8"));
  } catch (e) {
    return { passed: 0, failed: floorLane.length, problems: [`no results from jest (${e.message})`] };
  }
  const outcomes = new Map();
  for (const suite of report.testResults)
    for (const t of suite.assertionResults) outcomes.set(`${path.relative(floorDir, suite.name)}\0${t.fullName}`, t.status);
  const problems = [];
  let passed = 0;
  for (const t of floorLane) {
    const status = outcomes.get(`${t.suite}\0${t.test}`);
    if (status === "passed") passed++;
    else problems.push(`${t.suite}: "${t.test}" ${status ? status : "did not run (renamed? test/support/lanes.js names it)"}`);
  }
  return { passed, failed: floorLane.length - passed, problems };
}

/** A lane's exit code; a signal this process gets (a CI runner's SIGTERM) is passed on to it meanwhile. */
function ended(child) {
  const forward = (signal) => child.kill(signal);
  const signals = ["SIGINT", "SIGTERM", "SIGHUP"];
  for (const signal of signals) process.on(signal, forward);
  return new Promise((resolve) =>
    child.on("exit", (code, signal) => {
      for (const s of signals) process.removeListener(s, forward);
      resolve(code ?? (signal ? 1 : 0));
    }),
  );
}

/** Arguments that narrow the main lane to some suites or tests (a path, -t): the floor lane then stays out. */
const narrowed = (args) =>
  args.some((a, i) => !a.startsWith("-") && !/^--?\w[\w-]*$/.test(args[i - 1] ?? "")) ||
  args.some((a) => /^(-t|--testNamePattern)/.test(a));

async function main() {
  fs.mkdirSync(path.join(root, ".tmp"), { recursive: true });
  const log = path.join(root, ".tmp", "floor-lane.log");
  const results = path.join(root, ".tmp", "floor-results.json");
  const judgedFile = path.join(root, ".tmp", "floor-lane.json");
  for (const f of [results, judgedFile]) fs.rmSync(f, { force: true });
  const args = process.argv.slice(2);
  if (process.env.PULUMI_TIGERCLOUD_FLOOR_LANE === "off" || narrowed(args)) {
    step("the floor lane is left out: the run is narrowed to some tests, or PULUMI_TIGERCLOUD_FLOOR_LANE=off");
    process.exit(await ended(spawn(process.execPath, [withPulumi, "--pack", "jest", ...args], { cwd: root, stdio: "inherit" })));
  }
  // Built, and the tools ready, once before both lanes start: the floor tree links dist/.
  const ready = spawnSync(process.execPath, [withPulumi, "true"], { cwd: root, stdio: "inherit" });
  if (ready.status !== 0) process.exit(ready.status ?? 1);
  makeFloorTree();
  step(
    `floor lane: ${floorLane.length} tests on Node.js ${toolchain.floor.node.split(".")[0]} with @pulumi/pulumi ${toolchain.floor.sdk}, beside the main lane (output: ${path.relative(root, log)})`,
  );
  const floor = startFloorLane(log, results);

  // PULUMI_TIGERCLOUD_FLOOR_LANE=only: the floor lane alone (its output is otherwise hard to see apart).
  const main =
    process.env.PULUMI_TIGERCLOUD_FLOOR_LANE === "only"
      ? 0
      : await ended(spawn(process.execPath, [withPulumi, "--pack", "jest", ...args], { cwd: root, stdio: "inherit" }));
  const floorCode = await floor;
  process.stdout.write(`\n---- floor lane (Node.js ${toolchain.floor.node.split(".")[0]}, @pulumi/pulumi ${toolchain.floor.sdk}) ----\n`);
  process.stdout.write(fs.readFileSync(log, "utf8"));
  const judged = judgeFloorLane(results);
  for (const p of judged.problems) process.stdout.write(`floor lane: ${p}\n`);
  process.stdout.write(`floor lane: ${judged.passed} passed, ${judged.failed} failed\n`);
  // What .ci/run's summary reports: the lane's own judgement, a test that did not run a failure.
  fs.writeFileSync(judgedFile, JSON.stringify({ passed: judged.passed, failed: judged.failed }));
  fs.rmSync(floorDir, { recursive: true, force: true });
  process.exit(main !== 0 ? main : floorCode !== 0 || judged.failed ? 1 : 0);
}

main().catch((e) => {
  step(`failed: ${e.stack || e}`);
  process.exit(1);
});
