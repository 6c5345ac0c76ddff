#!/usr/bin/env node
// Runs a command with everything the real Pulumi engine needs: a maintained Node.js (found or
// unpacked by scripts/ensure-node.js), the CLI (found or built by scripts/ensure-pulumi), this
// package built to dist/ and linked by name, and PATH set so the engine finds the CLI, the
// dynamic-provider plugin shipped inside @pulumi/pulumi and that Node.js.
// Usage: node scripts/with-pulumi.js [--pack] <command> [args...]
//   --pack: also pack the package once (npm pack) and name the tarball in PULUMI_TIGERCLOUD_TARBALL,
//   for the suites that install it as a user would; the demo and the benchmark do not need it.
// PULUMI_TIGERCLOUD_NODE (a version such as 20.20.2) picks the lane's Node.js and
// PULUMI_TIGERCLOUD_SDK its @pulumi/pulumi, put in node_modules (scripts/lane-sdk.js); by default,
// the main lane's (scripts/toolchain.js).
const { execFileSync, spawn } = require("child_process");
const fs = require("fs");
const os = require("os");
const path = require("path");
const toolchain = require("./toolchain");
const { cacheRoot, ensureNode } = require("./ensure-node");
const { useSdk } = require("./lane-sdk");

const root = path.join(__dirname, "..");
const step = (what) => process.stderr.write(`[with-pulumi] ${what}\n`);

// Everything below, and everything it starts (jest, the engine's language host and provider
// processes, npm), runs on the lane's Node.js: this script starts itself again on it when the
// machine's is another.
const laneNode = ensureNode(process.env.PULUMI_TIGERCLOUD_NODE || toolchain.main.node);
if (laneNode.version !== process.version) {
  if (process.env.PULUMI_TIGERCLOUD_LANE_NODE_STARTED) {
    step(`started again on ${laneNode.dir}/node, this runs ${process.version}, not ${laneNode.version}: remove that folder and run again`);
    process.exit(1);
  }
  runForwardingSignals(path.join(laneNode.dir, "node"), [__filename, ...process.argv.slice(2)], {
    env: { ...process.env, PULUMI_TIGERCLOUD_LANE_NODE_STARTED: "1" },
  });
} else main();

/**
 * Runs a command with this process's stdio; a signal this process gets goes to it too (a CI runner
 * stops a job with SIGTERM to its first process), and its end is this process's end, a signal
 * included.
 */
function runForwardingSignals(command, args, options, after = () => {}) {
  const child = spawn(command, args, { stdio: "inherit", ...options });
  const signals = ["SIGINT", "SIGTERM", "SIGHUP"];
  const forward = (signal) => child.kill(signal);
  for (const signal of signals) process.on(signal, forward);
  child.on("error", (err) => {
    step(`${command} could not be started: ${err.message}`);
    after();
    process.exit(1);
  });
  child.on("exit", (code, signal) => {
    after();
    for (const s of signals) process.removeListener(s, forward);
    if (signal) process.kill(process.pid, signal);
    else process.exit(code ?? 1);
  });
}

function main() {
  const started = Date.now();
  // ensure-pulumi's last line: the directories to put first on PATH, the CLI's first.
  const toolDirs = execFileSync(path.join(__dirname, "ensure-pulumi"), {
    stdio: ["ignore", "pipe", "inherit"],
    encoding: "utf8",
    env: { ...process.env, PULUMI_VERSION: process.env.PULUMI_VERSION || toolchain.pulumiCli },
  })
    .trim()
    .split("\n")
    .pop()
    .split(path.delimiter);
  const pulumiBin = toolDirs[0];
  step(`Pulumi CLI ready in ${((Date.now() - started) / 1000).toFixed(1)} s: ${toolDirs.join(path.delimiter)}`);

  // Built once per change: dist/.built is touched when a build starts, so a build is skipped when no
  // source (the build's folders, its tsconfig, package.json) changed since. CI runs the demo and the
  // benchmark beside the tests, and a second build would rewrite dist/ while the suites load it.
  const stamp = path.join(root, "dist", ".built");
  if (builtSince(stamp)) step("the package is built (dist/ is newer than every source)");
  else {
    step("building the package (tsc -p tsconfig.build.json)");
    const buildStarted = new Date();
    // From an empty dist/: tsc never deletes what a removed or moved source once compiled to, and
    // `npm pack` would ship it.
    fs.rmSync(path.join(root, "dist"), { recursive: true, force: true });
    execFileSync(process.execPath, [require.resolve("typescript/bin/tsc"), "-p", "tsconfig.build.json"], { cwd: root, stdio: "inherit" });
    fs.writeFileSync(stamp, "");
    fs.utimesSync(stamp, buildStarted, buildStarted);
  }
  require("./link-self");
  useSdk(root, process.env.PULUMI_TIGERCLOUD_SDK || toolchain.main.sdk);

  /**
   * A folder holding only a \`node\` that is this process's, first on PATH: the folder of a \`pulumi\`
   * found on PATH (or the machine's node's own) may hold another node, which would win otherwise.
   */
  function laneNodeDir() {
    const dir = path.join(root, ".tmp", "node", process.version);
    const link = path.join(dir, "node");
    fs.mkdirSync(dir, { recursive: true });
    let current;
    try {
      current = fs.readlinkSync(link);
    } catch {
      current = undefined;
    }
    if (current !== process.execPath) {
      fs.rmSync(link, { force: true });
      try {
        fs.symlinkSync(process.execPath, link);
      } catch (err) {
        // Another run beside this one (the demo beside the tests) made the same link first.
        if (err.code !== "EEXIST" || fs.readlinkSync(link) !== process.execPath) throw err;
      }
    }
    return dir;
  }

  /** Whether the last build started after every file it reads was last changed. */
  function builtSince(stampFile) {
    let built;
    try {
      built = fs.statSync(stampFile).mtimeMs;
    } catch {
      return false;
    }
    const ts = require("typescript");
    const config = ts.readConfigFile(path.join(root, "tsconfig.build.json"), ts.sys.readFile).config;
    const sources = ["tsconfig.build.json", "tsconfig.json", "package.json", ...config.include];
    const newest = (p) => {
      const st = fs.statSync(p);
      if (!st.isDirectory()) return st.mtimeMs;
      return Math.max(st.mtimeMs, ...fs.readdirSync(p).map((e) => newest(path.join(p, e))));
    };
    return sources.every((s) => newest(path.join(root, s)) < built);
  }

  const pluginDir = path.dirname(require.resolve("@pulumi/pulumi/package.json", { paths: [root] }));
  const env = {
    ...process.env,
    // The plugin shipped in @pulumi/pulumi comes after the CLI's own directory, where a normal
    // install (and ensure-pulumi's build) keeps a copy the engine prefers.
    PATH: [laneNodeDir(), ...toolDirs, pluginDir, path.join(root, "node_modules", ".bin"), process.env.PATH].join(path.delimiter),
    PULUMI_SKIP_UPDATE_CHECK: "true",
    PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION: "true",
    // Node.js (22 and later; 20 ignores it) keeps each module's compiled code here: every engine run
    // starts a program and a provider process that load @pulumi/pulumi, each paying its compile again.
    NODE_COMPILE_CACHE: process.env.NODE_COMPILE_CACHE || path.join(cacheRoot, "node-compile-cache"),
  };
  const version = execFileSync(path.join(pulumiBin, "pulumi"), ["version"], { env, encoding: "utf8" }).trim();
  const sdkVersion = require(require.resolve("@pulumi/pulumi/package.json", { paths: [root] })).version;
  step(
    `engine: pulumi ${version} (${path.join(pulumiBin, "pulumi")}); SDK: @pulumi/pulumi ${sdkVersion}; Node.js ${process.version} (${process.execPath})`,
  );
  env.PULUMI_TIGERCLOUD_ENGINE_VERSION = version;
  // The CLI's directories alone: the workflow runner's jobs (test/support/gitops) get them from their
  // pulumi/actions step, as on GitHub, and have no pulumi before it.
  env.PULUMI_TIGERCLOUD_CLI_PATH = toolDirs.join(path.delimiter);

  const argv = process.argv.slice(2);
  const pack = argv[0] === "--pack";
  const [command, ...args] = pack ? argv.slice(1) : argv;
  let packDir;
  if (pack) {
    // The package as npm would serve it, packed once from that build: suites that install it
    // (projects.e2e, gitops.e2e) must not run `npm pack` themselves, whose prepack rebuilds dist/
    // while other suites, running beside them, load it.
    fs.mkdirSync(path.join(root, ".tmp"), { recursive: true });
    packDir = fs.mkdtempSync(path.join(root, ".tmp", "pack-"));
    const packed = execFileSync("npm", ["pack", "--ignore-scripts", "--silent", "--pack-destination", packDir], {
      cwd: root,
      encoding: "utf8",
    })
      .trim()
      .split("\n")
      .pop();
    step(`packed ${packed}`);
    env.PULUMI_TIGERCLOUD_TARBALL = path.join(packDir, packed);
  }
  if (!command) {
    step("usage: with-pulumi <command> [args...]");
    process.exit(2);
  }
  // The test suites' processes (engines, plugins, servers) get a temporary folder of their own,
  // removed when jest ends: what they leave behind there (a plugin's download the engine never
  // removed, 55 MB each run) does not pile up in the machine's.
  let tmpDir;
  if (path.basename(command) === "jest") {
    tmpDir = fs.mkdtempSync(path.join(os.tmpdir(), "tigercloud-tests-"));
    // The simulator's PostgreSQL servers run as the postgres user: they may pass through it to
    // their own folders, but no other user may list it or put anything in it.
    fs.chmodSync(tmpDir, 0o711);
    env.TMPDIR = tmpDir;
  }
  runForwardingSignals(command, args, { cwd: root, env }, () => {
    if (packDir) fs.rmSync(packDir, { recursive: true, force: true });
    if (tmpDir) fs.rmSync(tmpDir, { recursive: true, force: true });
  });
}
