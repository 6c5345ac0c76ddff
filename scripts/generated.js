#!/usr/bin/env node
// The TypeScript classes a program uses (provider/program/resources.ts) are generated from the
// resources' specifications (scripts/declarations.ts) and not kept in git: made here when missing,
// or when a module they are made from changed since. The build, the checks and the unit run call
// this first. `node scripts/generated.js` does it from a shell.
const { execFileSync } = require("child_process");
const fs = require("fs");
const path = require("path");

const root = path.join(__dirname, "..");
const PROGRAM = path.join(root, "provider", "program", "resources.ts");

/** The newest change to what the classes are made from: the provider's modules below its hosts and program side, and the script. */
function newestSource() {
  let newest = fs.statSync(path.join(__dirname, "declarations.ts")).mtimeMs;
  const visit = (dir) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const file = path.join(dir, entry.name);
      if (entry.isDirectory()) {
        if (!["hosts", "program"].includes(entry.name)) visit(file);
      } else if (entry.name.endsWith(".ts")) newest = Math.max(newest, fs.statSync(file).mtimeMs);
    }
  };
  visit(path.join(root, "provider"));
  return newest;
}

function ensureGenerated() {
  if (fs.existsSync(PROGRAM) && fs.statSync(PROGRAM).mtimeMs >= newestSource()) return false;
  process.stderr.write("[generated] writing provider/program/resources.ts from the resources' specifications\n");
  execFileSync(process.execPath, ["-r", "ts-node/register/transpile-only", path.join(__dirname, "declarations.ts"), "--program"], {
    cwd: root,
    stdio: ["ignore", "ignore", "inherit"],
  });
  return true;
}

module.exports = { ensureGenerated };
if (require.main === module) ensureGenerated();
