// The @pulumi/pulumi a lane runs, put in a tree's node_modules. `npm ci` installs package.json's
// devDependency, the peer range's oldest SDK, which installs without a warning on every Node.js the
// README names (newer SDKs declare Node.js >= 22); each lane's SDK (scripts/toolchain.js) is
// installed once into the cache, and with-pulumi puts it in node_modules before anything runs: the
// main lane's (the newest) in the checkout, the floor lane's in its copy of the checkout.
const { execFileSync } = require("child_process");
const fs = require("fs");
const path = require("path");
const { cacheRoot } = require("./ensure-node");

const step = (what) => process.stderr.write(`[lane-sdk] ${what}\n`);

/** node_modules holding @pulumi/pulumi at `version` and its dependencies, installed once into the cache. */
function sdkModules(version) {
  const dir = path.join(cacheRoot, `sdk-v${version}`);
  const modules = path.join(dir, "node_modules");
  if (versionIn(modules) === version) return modules;
  step(`installing @pulumi/pulumi ${version} into ${dir} (once)`);
  fs.mkdirSync(cacheRoot, { recursive: true });
  const work = fs.mkdtempSync(path.join(cacheRoot, ".sdk-"));
  try {
    fs.writeFileSync(path.join(work, "package.json"), JSON.stringify({ private: true, dependencies: { "@pulumi/pulumi": version } }));
    execFileSync("npm", ["install", "--no-audit", "--no-fund", "--loglevel=error"], { cwd: work, stdio: ["ignore", "inherit", "inherit"] });
    fs.rmSync(dir, { recursive: true, force: true });
    // Renamed into place whole: an install killed halfway is never taken for a finished one.
    fs.renameSync(work, dir);
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
  return modules;
}

/** The version of the package in folder `dir`, or undefined when there is none. */
function versionOf(dir) {
  try {
    return JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8")).version;
  } catch {
    return undefined;
  }
}

/** The version of the @pulumi/pulumi in `modules`, or undefined when there is none. */
const versionIn = (modules) => versionOf(path.join(modules, "@pulumi", "pulumi"));

/** Copies `sources` into `dest` as hard links, or as copies where they cannot be (another filesystem). */
function linkCopy(sources, dest) {
  if (!sources.length) return;
  try {
    execFileSync("cp", ["-al", ...sources, dest], { stdio: ["ignore", "ignore", "pipe"] });
  } catch {
    execFileSync("cp", ["-a", ...sources, dest]);
  }
}

/**
 * Makes `<tree>/node_modules/@pulumi/pulumi` the SDK at `version`, from the cache, hard-linked, with
 * its dependencies at the versions it was installed with. Made beside the old one and renamed into
 * its place; nothing when it is already there.
 */
function useSdk(tree, version) {
  const scope = path.join(tree, "node_modules", "@pulumi");
  if (versionIn(path.join(tree, "node_modules")) === version) return;
  const from = sdkModules(version);
  fs.mkdirSync(scope, { recursive: true });
  const made = fs.mkdtempSync(path.join(scope, ".pulumi-"));
  try {
    fs.chmodSync(made, 0o755);
    // "/." (not path.join's, which drops it): the SDK's contents, into the folder made for them.
    linkCopy([`${path.join(from, "@pulumi", "pulumi")}/.`], made);
    // Its dependencies at the versions the tree's node_modules already holds are left to resolve
    // there, as npm dedupes them (so the gRPC module this package's own code loads is the SDK's);
    // the others go inside its folder, where they take precedence for it. What npm nested inside
    // the SDK's folder already stays: it is the version the SDK asked for.
    const own = path.join(made, "node_modules");
    const packages = fs
      .readdirSync(from)
      .filter((e) => !e.startsWith("."))
      .flatMap((e) => (e.startsWith("@") ? fs.readdirSync(path.join(from, e)).map((p) => `${e}/${p}`) : [e]))
      .filter((p) => p !== "@pulumi/pulumi");
    for (const p of packages) {
      if (fs.existsSync(path.join(own, p)) || versionOf(path.join(tree, "node_modules", p)) === versionOf(path.join(from, p))) continue;
      fs.mkdirSync(path.dirname(path.join(own, p)), { recursive: true });
      linkCopy([path.join(from, p)], path.dirname(path.join(own, p)));
    }
    const old = path.join(scope, "pulumi");
    const trash = `${made}-old`;
    if (fs.existsSync(old)) fs.renameSync(old, trash);
    fs.renameSync(made, old);
    fs.rmSync(trash, { recursive: true, force: true });
    step(`@pulumi/pulumi ${version} put in ${path.relative(process.cwd(), scope) || scope} (from ${from})`);
  } finally {
    fs.rmSync(made, { recursive: true, force: true });
  }
}

module.exports = { linkCopy, useSdk };
