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
   *  serves as node-<platform>-<arch>, the newest @pulumi/pulumi (package.json's devDependencies),
   *  and the newest Pulumi CLI that the Go module proxy builds. */
  main: { node: "26.10.0", sdk: pkg.devDependencies["@pulumi/pulumi"] },
  /** Both lanes' CLI: users upgrade the CLI apart from their programs' SDK. */
  pulumiCli: "3.274.1",
  /** The floor lane, the oldest a user may have: the oldest SDK the peer range admits, on the last
   *  Node.js it supports (newer SDKs declare Node >= 22). */
  floor: { node: "20.20.2", sdk: floorOf(pkg.peerDependencies["@pulumi/pulumi"]) },
};
