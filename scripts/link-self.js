// Makes node_modules/pulumi-tigercloud point at this repository, so that code which loads the
// package by name (the serialized provider does, at run time, from the program's directory)
// finds the build in dist/ here exactly as it finds the installed package in a user's program.
const fs = require("fs");
const path = require("path");

const link = path.join(__dirname, "..", "node_modules", "pulumi-tigercloud");
let current;
try {
  current = fs.readlinkSync(link);
} catch {
  current = undefined;
}
if (current !== "..") {
  fs.rmSync(link, { recursive: true, force: true });
  fs.symlinkSync("..", link, "dir");
}
