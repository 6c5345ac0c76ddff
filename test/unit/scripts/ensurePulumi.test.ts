// scripts/ensure-pulumi's order of search, with stand-in `pulumi` executables (no build):
// PATH at a supported version first, then a cached build; an older PATH CLI is passed over.
import { spawn, spawnSync } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";

const SCRIPT = path.join(__dirname, "..", "..", "..", "scripts", "ensure-pulumi");
// The version the script provides when none is asked for: the one the lanes run (scripts/toolchain.js).
const { pulumiCli } = require("../../../scripts/toolchain") as { pulumiCli: string };
const newer = pulumiCli.replace(/\d+$/, (patch) => String(Number(patch) + 1));

function fakePulumi(dir: string, version: string): string {
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, "pulumi"), `#!/bin/sh\n[ "$1" = version ] && echo v${version}\n`, { mode: 0o755 });
  return dir;
}

/** A PATH folder with only the tools the script itself uses: no pulumi, go, node or npx. */
function basicTools(dir: string): string {
  if (fs.existsSync(dir)) return dir;
  fs.mkdirSync(dir);
  for (const tool of ["bash", "env", "dirname", "sort", "head", "tr", "sed", "date", "mkdir", "rm", "mv", "cat", "cp", "chmod", "cut"]) {
    const found = ["/usr/bin", "/bin"].map((d) => path.join(d, tool)).find((p) => fs.existsSync(p));
    if (found) fs.symlinkSync(found, path.join(dir, tool));
  }
  return dir;
}

function run(pathDirs: string[], cache: string) {
  const result = spawnSync(SCRIPT, {
    encoding: "utf8",
    env: { PATH: [...pathDirs, basicTools(path.join(tmp, "tools"))].join(":"), HOME: tmp, PULUMI_TIGERCLOUD_CACHE: cache },
  });
  return { status: result.status, dir: result.stdout.trim().split("\n").pop(), stderr: result.stderr };
}

function fakeHost(dir: string): string {
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, "pulumi-language-nodejs"), "#!/bin/sh\n", { mode: 0o755 });
  return dir;
}

let tmp: string;
beforeEach(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), "ensure-pulumi-"));
});
afterEach(() => {
  fs.rmSync(tmp, { recursive: true, force: true });
});

test("a pulumi on PATH at a supported version is used", () => {
  const onPath = fakePulumi(path.join(tmp, "path"), newer);
  const r = run([onPath], path.join(tmp, "cache"));
  expect(r).toMatchObject({ status: 0, dir: onPath });
  expect(r.stderr).toContain(`using pulumi ${newer} from PATH`);
});

test("an older pulumi on PATH is passed over for a cached build of the tested version", () => {
  const onPath = fakePulumi(path.join(tmp, "path"), "3.100.0");
  const cached = fakePulumi(path.join(tmp, "cache", `pulumi-v${pulumiCli}`, "bin"), pulumiCli);
  const r = run([onPath], path.join(tmp, "cache"));
  expect(r).toMatchObject({ status: 0, dir: cached });
  expect(r.stderr).toContain(`pulumi on PATH is 3.100.0; need >= ${pulumiCli}`);
  expect(r.stderr).toContain(`using cached pulumi ${pulumiCli}`);
});

test("with no CLI, no Go and no npx, it fails saying what to install", () => {
  const r = run([], path.join(tmp, "cache"));
  expect(r.status).not.toBe(0);
  expect(r.stderr).toMatch(/no Go toolchain/);
  expect(r.stderr).toContain("Install one of:");
  expect(r.stderr).toContain(`the Pulumi CLI >= ${pulumiCli}`);
  expect(r.stderr).toContain("Go >= 1.25");
});

test("the language host beside the CLI is preferred; without one, a cached host is added to PATH; with none, a note", () => {
  const onPath = fakePulumi(path.join(tmp, "path"), newer);
  const cache = path.join(tmp, "cache");
  let r = run([onPath], cache);
  expect(r).toMatchObject({ status: 0, dir: onPath });
  expect(r.stderr).toMatch(/no Go toolchain to build the language host/);
  expect(r.stderr).toMatch(/note: no Node\.js language host/);

  const cachedHost = fakeHost(path.join(cache, "pulumi-language-nodejs-sdk-v3.68.0", "bin"));
  r = run([onPath], cache);
  expect(r).toMatchObject({ status: 0, dir: `${onPath}:${cachedHost}` });

  fakeHost(onPath);
  r = run([onPath], cache);
  expect(r).toMatchObject({ status: 0, dir: onPath });
  expect(r.stderr).toMatch(/using the language host beside the CLI/);
});

test("two first runs into one cache take turns: the second waits for the first's lock, then goes on (scripts/cache-lock.sh, sourced by ensure-pulumi and ensure-timescaledb)", async () => {
  const lockScript = path.join(path.dirname(SCRIPT), "cache-lock.sh");
  for (const script of ["ensure-pulumi", "ensure-timescaledb"])
    expect(fs.readFileSync(path.join(path.dirname(SCRIPT), script), "utf8")).toMatch(
      /\n\. "\$\(dirname "\$0"\)\/cache-lock\.sh"\ncache_lock /,
    );
  const cache = path.join(tmp, "shared-cache");
  const log = path.join(tmp, "turns.log");
  const go = path.join(tmp, "turns.go");
  const lines = () => (fs.existsSync(log) ? fs.readFileSync(log, "utf8").trim().split("\n") : []);
  // Each holds the lock until the test lets it go: the order below is the lock's, not the clock's.
  const holder = (name: string) => {
    const child = spawn("bash", [
      "-c",
      `CACHE_ROOT="$1"; . "$2"; cache_lock ensure-x; echo "${name} in" >> "$3"; until [ -e "$4" ]; do sleep 0.05; done; echo "${name} out" >> "$3"`,
      "_",
      cache,
      lockScript,
      log,
      go,
    ]);
    const run = { stderr: "", ended: new Promise<void>((resolve) => child.on("exit", () => resolve())) };
    child.stderr.on("data", (d: Buffer) => (run.stderr += d.toString()));
    return run;
  };
  const until = async (what: () => boolean) => {
    for (const deadline = Date.now() + 20_000; !what();) {
      if (Date.now() > deadline) throw new Error(`timed out; the log: ${lines().join(", ")}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  };
  const first = holder("a");
  await until(() => lines().includes("a in"));
  const second = holder("b");
  // Either the second says it waits, or (no lock) it goes in beside the first.
  await until(() => second.stderr.includes("waiting") || lines().includes("b in"));
  fs.writeFileSync(go, "");
  await Promise.all([first.ended, second.ended]);
  expect(lines()).toEqual(["a in", "a out", "b in", "b out"]);
  expect(second.stderr).toContain(`ensure-x: waiting for another run that builds into ${cache}`);
});
