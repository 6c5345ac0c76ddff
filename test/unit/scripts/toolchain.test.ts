// The toolchain the lanes run on: scripts/ensure-node.js picks the machine's Node.js or a cached
// one, and every test the floor lane names (test/support/lanes.js) is a test of its suite.
import { spawnSync } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";

const ROOT = path.join(__dirname, "..", "..", "..");
const ENSURE_NODE = path.join(ROOT, "scripts", "ensure-node.js");
const { floorLane } = require("../../support/lanes") as { floorLane: { suite: string; test: string }[] };

let tmp: string;
beforeEach(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), "ensure-node-"));
});
afterEach(() => {
  fs.rmSync(tmp, { recursive: true, force: true });
});

/** Runs ensure-node.js for `version` with its cache in tmp, and no npm on PATH (nothing downloaded). */
function ensureNode(version: string) {
  const r = spawnSync(process.execPath, [ENSURE_NODE, version], {
    encoding: "utf8",
    env: { PATH: "/nonexistent", HOME: tmp, PULUMI_TIGERCLOUD_CACHE: path.join(tmp, "cache") },
  });
  return { status: r.status, dir: r.stdout.trim(), stderr: r.stderr };
}

test("the machine's Node.js serves a version of its own major version", () => {
  const [major] = process.versions.node.split(".");
  expect(ensureNode(`${major}.0.0`)).toMatchObject({ status: 0, dir: path.dirname(process.execPath) });
});

test("another major version comes from the cache when unpacked there before, with no download", () => {
  const other = `${Number(process.versions.node.split(".")[0]) + 2}.1.0`;
  const bin = path.join(tmp, "cache", `node-v${other}-${process.platform}-${process.arch}`, "bin");
  fs.mkdirSync(bin, { recursive: true });
  fs.writeFileSync(path.join(bin, "node"), `#!/bin/sh\necho v${other}\n`, { mode: 0o755 });
  expect(ensureNode(other)).toMatchObject({ status: 0, dir: bin });
});

test("a cached Node.js that is not the version its folder names is not trusted: it is removed and fetched afresh", async () => {
  const other = `${Number(process.versions.node.split(".")[0]) + 2}.1.0`;
  const home = path.join(tmp, "cache", `node-v${other}-${process.platform}-${process.arch}`);
  fs.mkdirSync(path.join(home, "bin"), { recursive: true });
  fs.writeFileSync(path.join(home, "bin", "node"), "#!/bin/sh\necho v1.0.0\n", { mode: 0o755 });
  const r = ensureNode(other);
  // No npm here to fetch it with: the run fails, saying what it tried, and the wrong copy is gone.
  expect(r.status).not.toBe(0);
  expect(r.stderr).toContain(`unpacking node-${process.platform}-${process.arch}@${other}`);
  expect(fs.existsSync(home)).toBe(false);
});

test("another major version not cached is fetched with npm, and its failure is the run's, leaving nothing half-made", () => {
  const other = `${Number(process.versions.node.split(".")[0]) + 2}.1.0`;
  const r = ensureNode(other);
  expect(r.status).not.toBe(0);
  expect(r.stderr).toContain(`unpacking node-${process.platform}-${process.arch}@${other} from the npm registry`);
  // No npm here: nothing was unpacked, and no work folder is left in the cache.
  expect(fs.readdirSync(path.join(tmp, "cache"))).toEqual([]);
});

test("a version that is not one is refused, naming it", () => {
  const r = ensureNode("lts");
  expect(r.status).not.toBe(0);
  expect(r.stderr).toContain('"lts" is not a version such as 26.10.0');
});

test("every test the floor lane names is a test of its suite, named exactly", () => {
  expect(floorLane.length).toBeGreaterThan(0);
  for (const { suite, test: name } of floorLane) {
    const source = fs.readFileSync(path.join(ROOT, suite), "utf8");
    const quoted = [JSON.stringify(name), `'${name}'`, `\`${name}\``];
    expect({ suite, name, found: quoted.some((q) => source.includes(`test(${q}`)) }).toEqual({ suite, name, found: true });
  }
});
