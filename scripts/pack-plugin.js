#!/usr/bin/env node
// Packs the provider plugin into the archives that the engine downloads (from the release named by
// the schema's pluginDownloadURL) or that
//   pulumi plugin install resource tigercloud VERSION --file ARCHIVE
// installs, one per platform: the launcher `pulumi-resource-tigercloud` (a shell script;
// `pulumi-resource-tigercloud.cmd` on Windows), the plugin's code bundled into one file
// (plugin/main.ts: the provider/hosts/plugin/main.ts server and the commands, with axios, pg, zod and gRPC, by esbuild; the same file for every
// platform), the package's name and version, and the Node.js it runs on (the official binary of that
// platform from the npm registry, as scripts/toolchain.js's pluginNode names it), so that a Python,
// Go or YAML user needs no Node.js of their own.
//   node scripts/pack-plugin.js                       this machine's platform; prints the archive's path
//   node scripts/pack-plugin.js --all                 the six platforms; prints six paths
//   node scripts/pack-plugin.js --platform darwin-arm64 [--platform ...]
// (progress: stderr). An archive whose inputs (the bundle, that Node.js, the launcher) did not change
// is not packed again: not in this checkout (dist/plugin/, by its stamp), nor in any other sharing
// the project's cache, where every archive packed is kept by the digest of its inputs (the newest
// few of each platform; the bytes follow the inputs alone). A clean clone, as the release's job and
// the release's rehearsal make one, takes them from there instead of packing the six again.
const { execFileSync } = require("child_process");
const crypto = require("crypto");
const fs = require("fs");
const os = require("os");
const path = require("path");
const toolchain = require("./toolchain");
const { ensurePlatformNode, shown } = require("./ensure-node");

const root = path.join(__dirname, "..");
/** Archives packed in any checkout, by platform and the digest of their inputs (the project's cache). */
const STORE = path.join(
  process.env.PULUMI_TIGERCLOUD_CACHE || path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), ".cache"), "pulumi-tigercloud"),
  "plugin-archives",
);
/** How many archives of each platform the store keeps, the newest (several checkouts at once may each want their own). */
const STORE_KEEP = 3;
const say = (what) => process.stderr.write(`pack-plugin: ${what}\n`);
const NAME = "pulumi-resource-tigercloud";
/** Every entry's time in an archive (1980-01-01, zip's earliest, as the Python wheel's). */
const FIXED_MTIME = 315532800;
/** How archives are packed, in the stamp: an archive packed another way is packed again. */
const TAR_FORMAT = `gnu mtime=${FIXED_MTIME} owner=0 gzip-1-n`;
/** The platforms as the engine names them in an archive's name (os-arch, GOOS and GOARCH). */
const PLATFORMS = Object.keys(toolchain.pluginNode);
const OS = { linux: "linux", darwin: "darwin", win32: "windows" };
const ARCH = { x64: "amd64", arm64: "arm64" };

/** This machine's platform, as the engine names it. */
const hostPlatform = () => `${OS[process.platform] ?? process.platform}-${ARCH[process.arch] ?? process.arch}`;

/**
 * The archive's name that the engine asks a release for: standardAssetName in the Pulumi SDK's
 * go/common/workspace/plugins.go, "pulumi-%s-%s-v%s-%s-%s.tar.gz" of kind, name, version, os, arch.
 */
const archiveName = (version, platform) => `${NAME}-v${version}-${platform}.tar.gz`;

/**
 * The launcher, by its file name. On Windows the engine looks for the plugin's executable by its
 * name with ".exe", then ".cmd" (getCandidateExtensions and getPluginPath in the Pulumi SDK's
 * go/common/workspace/plugins.go) and starts what it found with exec.Command (pkg's
 * resource/plugin/plugin.go): a .cmd as Pulumi's own pulumi-resource-pulumi-nodejs.cmd is.
 */
function launcherOf(platform) {
  if (platform.startsWith("windows-")) {
    // %~dp0: this file's own folder, ending in a backslash. cmd.exe reads CRLF lines.
    const lines = [
      "@echo off",
      "rem The Tiger Cloud provider plugin: its own Node.js runs its bundled code.",
      '"%~dp0node\\node.exe" "%~dp0plugin.js" %*',
      "",
    ];
    return { file: `${NAME}.cmd`, text: lines.join("\r\n") };
  }
  const lines = [
    "#!/bin/sh",
    "# The Tiger Cloud provider plugin: its own Node.js runs its bundled code.",
    'here=$(dirname "$0")',
    'exec "$here/node/node" "$here/plugin.js" "$@"',
    "",
  ];
  return { file: NAME, text: lines.join("\n") };
}

/** `from` put at `to` whole (a hard link where it can be, else a copy), replacing what is there. */
function placeWhole(from, to) {
  const tmp = `${to}.${process.pid}.${crypto.randomBytes(4).toString("hex")}.tmp`;
  try {
    try {
      fs.linkSync(from, tmp);
    } catch (err) {
      if (err.code === "ENOENT") throw err;
      fs.copyFileSync(from, tmp);
    }
    fs.renameSync(tmp, to);
  } finally {
    fs.rmSync(tmp, { force: true });
  }
}

/** The store's archive of `platform` packed from inputs of `digest`, at `archive`; false when it holds none. */
function fromStore(platform, digest, archive) {
  try {
    placeWhole(path.join(STORE, `${platform}-${digest}.tar.gz`), archive);
    return true;
  } catch (err) {
    // None there (or pruned meanwhile), or not readable: packed here.
    if (err.code !== "ENOENT") say(`not taken from ${STORE}: ${err.message}`);
    return false;
  }
}

/** `archive` kept in the store; only the newest STORE_KEEP of its platform stay. Never fails the pack. */
function intoStore(platform, digest, archive) {
  try {
    fs.mkdirSync(STORE, { recursive: true });
    placeWhole(archive, path.join(STORE, `${platform}-${digest}.tar.gz`));
    const own = new RegExp(`^${platform}-[0-9a-f]{64}\\.tar\\.gz$`);
    const mine = fs
      .readdirSync(STORE)
      .filter((f) => own.test(f))
      .map((f) => ({ f, t: fs.statSync(path.join(STORE, f), { throwIfNoEntry: false })?.mtimeMs ?? 0 }))
      .sort((a, b) => b.t - a.t);
    for (const { f } of mine.slice(STORE_KEEP)) fs.rmSync(path.join(STORE, f), { force: true });
  } catch (err) {
    say(`not kept in ${STORE}: ${err.message}`);
  }
}

/**
 * Packs the archives of `platforms` (names in PLATFORMS) and returns their paths, in that order.
 * `reuse: false` packs each anew, neither this checkout's nor the store's taken (but kept after).
 */
function packPlugins(platforms = PLATFORMS, { reuse = true } = {}) {
  const unknown = platforms.filter((p) => !PLATFORMS.includes(p));
  if (unknown.length > 0)
    throw new Error(
      `no Node.js is named for ${unknown.map(shown).join(", ")} (scripts/toolchain.js's pluginNode has ${PLATFORMS.join(", ")})`,
    );
  const { version } = require("../package.json");
  const outDir = path.join(root, "dist", "plugin");
  fs.mkdirSync(outDir, { recursive: true });
  const stage = fs.mkdtempSync(path.join(outDir, ".stage-"));
  try {
    // One file: the plugin and what it loads, the same for every platform. pg's optional native
    // binding is not used. Without worker threads, buildSync runs esbuild as a child that ends with
    // the call; with them (the default) an esbuild service outlives the build, and the process that
    // packed (a test's jest worker) is left with a child it never stops. Read when esbuild loads.
    process.env.ESBUILD_WORKER_THREADS = "0";
    require("esbuild").buildSync({
      // The plugin's program and its commands (pr-database, forks, simulator), typed: plugin/main.ts.
      entryPoints: [path.join(root, "plugin", "main.ts")],
      outfile: path.join(stage, "plugin.js"),
      bundle: true,
      platform: "node",
      target: "node20",
      external: ["pg-native"],
      sourcemap: "inline",
      sourcesContent: false,
      legalComments: "eof",
      logLevel: "warning",
    });
    // version.ts reads the name and version from the package.json it finds above the code.
    fs.writeFileSync(path.join(stage, "package.json"), `${JSON.stringify({ name: "pulumi-tigercloud", version }, null, 2)}\n`);
    const bundleDigest = crypto
      .createHash("sha256")
      .update(fs.readFileSync(path.join(stage, "plugin.js")))
      .digest("hex");
    return platforms.map((platform) => packOne(platform, version, stage, bundleDigest, outDir, reuse));
  } finally {
    fs.rmSync(stage, { recursive: true, force: true });
  }
}

function packOne(platform, version, stage, bundleDigest, outDir, reuse) {
  const archive = path.join(outDir, archiveName(version, platform));
  const spec = toolchain.pluginNode[platform];
  const node = ensurePlatformNode(platform, spec);
  const launcher = launcherOf(platform);
  // Node.js by its package and, as cheaply as can be, by its files (a cache changed by hand repacks).
  const nodeFiles = node.files.map((f) => {
    const st = fs.statSync(path.join(node.dir, f));
    return `${f} ${st.size} ${st.mtimeMs}`;
  });
  const digest = crypto
    .createHash("sha256")
    .update([bundleDigest, version, `${spec.package}@${spec.version}`, ...nodeFiles, launcher.file, launcher.text, TAR_FORMAT].join("\n"))
    .digest("hex");
  const stamp = `${archive}.sha256`;
  if (reuse && fs.existsSync(archive) && fs.existsSync(stamp) && fs.readFileSync(stamp, "utf8") === digest) {
    say(`unchanged: ${path.relative(root, archive)}`);
    return archive;
  }
  if (reuse && fromStore(platform, digest, archive)) {
    fs.writeFileSync(stamp, digest);
    say(`unchanged, from ${STORE}: ${path.relative(root, archive)}`);
    return archive;
  }
  // The launcher in a folder of its own: each platform's beside the one bundle.
  const own = fs.mkdtempSync(path.join(stage, `${platform}-`));
  fs.writeFileSync(path.join(own, launcher.file), launcher.text);
  fs.chmodSync(path.join(own, launcher.file), 0o755);
  fs.chmodSync(stage, 0o755);
  // Each entry named, none found by walking a folder: the archive holds exactly these. Node.js is
  // read from the cache where it was unpacked, not copied. Owned by root, as a release's files are,
  // not by whoever packed it, every time fixed and gzip told to keep no name or time (-n): the same
  // inputs make the same bytes, so a release run again finds its archives already published.
  // gzip -1: Node.js is most of it, and a higher level buys little for seconds more. A name of this
  // process's own: suites beside each other may pack at once.
  const tmp = `${archive}.${process.pid}.tmp`;
  try {
    execFileSync("tar", [
      ...["--no-recursion", "--owner=0", "--group=0", "--numeric-owner", `--mtime=@${FIXED_MTIME}`],
      ...["--format=gnu", "-cf", tmp, "-I", "gzip -1 -n"],
      ...["-C", stage, ".", "./package.json", "./plugin.js"],
      ...["-C", own, `./${launcher.file}`],
      ...["-C", node.dir, "./node", ...node.files.map((f) => `./${f}`)],
    ]);
    fs.renameSync(tmp, archive);
  } finally {
    fs.rmSync(tmp, { force: true });
  }
  fs.writeFileSync(stamp, digest);
  intoStore(platform, digest, archive);
  say(`packed ${path.relative(root, archive)} (${(fs.statSync(archive).size / 1e6).toFixed(1)} MB, ${spec.package}@${spec.version})`);
  return archive;
}

/** Packs the archive of one platform, by default this machine's, and returns its path. */
const packPlugin = (platform = hostPlatform()) => packPlugins([platform])[0];

module.exports = { packPlugin, packPlugins, PLATFORMS, archiveName, hostPlatform };

if (require.main === module) {
  const args = process.argv.slice(2);
  const platforms = [];
  for (let i = 0; i < args.length; i++) {
    if (args[i] === "--all") platforms.push(...PLATFORMS);
    else if (args[i] === "--platform" && args[i + 1]) platforms.push(args[++i]);
    else {
      say(`usage: node scripts/pack-plugin.js [--all | --platform OS-ARCH ...] (platforms: ${PLATFORMS.join(", ")})`);
      process.exit(2);
    }
  }
  try {
    for (const archive of packPlugins(platforms.length > 0 ? [...new Set(platforms)] : [hostPlatform()]))
      process.stdout.write(`${archive}\n`);
  } catch (err) {
    say(err.message);
    process.exit(1);
  }
}
