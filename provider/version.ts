// The package's name and version, read from its package.json (found by walking up, since this
// file runs both from provider/ in the repo and from dist/provider/ when installed).
import * as fs from "fs";
import * as path from "path";

function readOwnPackageJson(): { name: string; version: string } {
  for (let dir = __dirname; ; dir = path.dirname(dir)) {
    const candidate = path.join(dir, "package.json");
    if (fs.existsSync(candidate)) {
      const pkg = JSON.parse(fs.readFileSync(candidate, "utf8")) as { name?: string; version?: string };
      if (pkg.name === "pulumi-tigercloud" && pkg.version) return { name: pkg.name, version: pkg.version };
    }
    if (path.dirname(dir) === dir) return { name: "pulumi-tigercloud", version: "0.0.0-unknown" };
  }
}

const own = readOwnPackageJson();
export const PACKAGE_NAME = own.name;
export const PACKAGE_VERSION = own.version;
