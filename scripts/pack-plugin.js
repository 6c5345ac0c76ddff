#!/usr/bin/env node
// Packs the provider plugin into the archive that
//   pulumi plugin install resource tigercloud VERSION --file ARCHIVE
// installs: the executable `pulumi-resource-tigercloud` (a shell script), the plugin's code bundled
// into one file (provider/hosts/plugin/main.ts with axios, pg, zod and gRPC, by esbuild), the package's
// name and version, and the Node.js it runs on (the main lane's, from the npm registry's
// node-<platform>-<arch>), so that a Python, Go or YAML user needs no Node.js of their own.
//   node scripts/pack-plugin.js   prints the archive's path (progress: stderr)
// An archive whose inputs (the bundle and that Node.js) did not change is not packed again.
const { execFileSync } = require("child_process");
const crypto = require("crypto");
const fs = require("fs");
const path = require("path");
const toolchain = require("./toolchain");
const { ensureNode } = require("./ensure-node");

const root = path.join(__dirname, "..");
const say = (what) => process.stderr.write(`pack-plugin: ${what}\n`);
const PLATFORMS = { linux: "linux", darwin: "darwin" };
const ARCHES = { x64: "amd64", arm64: "arm64" };

function packPlugin() {
  const { version } = require("../package.json");
  const platform = `${PLATFORMS[process.platform] ?? process.platform}-${ARCHES[process.arch] ?? process.arch}`;
  const outDir = path.join(root, "dist", "plugin");
  const archive = path.join(outDir, `pulumi-resource-tigercloud-v${version}-${platform}.tar.gz`);
  fs.mkdirSync(outDir, { recursive: true });
  const stage = fs.mkdtempSync(path.join(outDir, ".stage-"));
  try {
    // One file: the plugin and what it loads. pg's optional native binding is not used.
    require("esbuild").buildSync({
      entryPoints: [path.join(root, "provider", "hosts", "plugin", "main.ts")],
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
    const node = ensureNode(toolchain.main.node);
    const digest = crypto
      .createHash("sha256")
      .update(fs.readFileSync(path.join(stage, "plugin.js")))
      .update(`${node.version} ${version}`)
      .digest("hex");
    const stamp = `${archive}.sha256`;
    if (fs.existsSync(archive) && fs.existsSync(stamp) && fs.readFileSync(stamp, "utf8") === digest) {
      say(`unchanged: ${path.relative(root, archive)}`);
      return archive;
    }
    // version.ts reads the name and version from the package.json it finds above the code.
    fs.writeFileSync(path.join(stage, "package.json"), `${JSON.stringify({ name: "pulumi-tigercloud", version }, null, 2)}\n`);
    fs.mkdirSync(path.join(stage, "node"));
    fs.copyFileSync(path.join(node.dir, "node"), path.join(stage, "node", "node"));
    fs.chmodSync(path.join(stage, "node", "node"), 0o755);
    const license = path.join(node.dir, "..", "LICENSE");
    if (fs.existsSync(license)) fs.copyFileSync(license, path.join(stage, "node", "LICENSE"));
    const exe = path.join(stage, "pulumi-resource-tigercloud");
    fs.writeFileSync(
      exe,
      [
        "#!/bin/sh",
        "# The Tiger Cloud provider plugin: its own Node.js runs its bundled code.",
        'here=$(dirname "$0")',
        'exec "$here/node/node" "$here/plugin.js" "$@"',
        "",
      ].join("\n"),
    );
    fs.chmodSync(exe, 0o755);
    // gzip -1: the Node.js binary is most of it, and a higher level buys little for seconds more.
    // A name of this process's own: suites beside each other may pack at once.
    const tmp = `${archive}.${process.pid}.tmp`;
    execFileSync("tar", ["-C", stage, "-cf", tmp, "-I", "gzip -1", "."]);
    fs.renameSync(tmp, archive);
    fs.writeFileSync(stamp, digest);
    say(`packed ${path.relative(root, archive)} (${(fs.statSync(archive).size / 1e6).toFixed(1)} MB, Node.js ${node.version})`);
    return archive;
  } finally {
    fs.rmSync(stage, { recursive: true, force: true });
  }
}

module.exports = { packPlugin };

if (require.main === module) process.stdout.write(`${packPlugin()}\n`);
