// scripts/timescaledb-source in a clone with no ../shared beside it: TimescaleDB's release source
// downloaded from a stand-in of GitHub's archive (GitHub's layout: its prefix, and the .github/ and
// docs/ folders the vendored copy leaves out), taken only when its files hash as the release's do,
// kept in the cache and not downloaded again; an altered archive refused, nothing kept of it.
import { execFileSync, spawn } from "child_process";
import * as fs from "fs";
import * as http from "http";
import type { AddressInfo } from "net";
import * as os from "os";
import * as path from "path";

jest.setTimeout(120_000);
const SCRIPT = path.join(__dirname, "..", "..", "..", "scripts", "timescaledb-source");
const VENDORED = path.join(__dirname, "..", "..", "..", "..", "shared", "vendor", "timescaledb", "timescaledb-2.28.3.tar.gz");

let work: string;
let server: http.Server;
let url: string;
const served = new Map<string, Buffer>();
const requests: string[] = [];

/** An archive as GitHub's is laid out, from the vendored source; `alter` changes it first. */
function githubArchive(name: string, alter?: (dir: string) => void): void {
  const dir = path.join(work, `${name}-tree`);
  const top = path.join(dir, "timescaledb-2.28.3");
  fs.mkdirSync(dir);
  execFileSync("tar", ["xzf", VENDORED, "-C", dir]);
  fs.mkdirSync(path.join(top, ".github", "workflows"), { recursive: true });
  fs.writeFileSync(path.join(top, ".github", "workflows", "ci.yaml"), "on: push\n");
  fs.mkdirSync(path.join(top, "docs"), { recursive: true });
  fs.writeFileSync(path.join(top, "docs", "README.md"), "docs\n");
  alter?.(top);
  const file = path.join(work, `${name}.tar.gz`);
  execFileSync("tar", ["czf", file, "-C", dir, "timescaledb-2.28.3"]);
  served.set(`/${name}.tar.gz`, fs.readFileSync(file));
}

beforeAll(async () => {
  work = fs.mkdtempSync(path.join(os.tmpdir(), "tsdb-source-"));
  githubArchive("release");
  githubArchive("altered", (top) => fs.appendFileSync(path.join(top, "src", "extension.c"), "\n/* not the release */\n"));
  server = http.createServer((req, res) => {
    requests.push(req.url ?? "");
    const body = served.get(req.url ?? "");
    res.writeHead(body ? 200 : 404).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
  fs.rmSync(work, { recursive: true, force: true });
});

/** The script as it lies in a clone with nothing beside it. */
async function runInBareClone(archive: string, cache: string): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const clone = path.join(work, "clone", "main");
  fs.mkdirSync(path.join(clone, "scripts"), { recursive: true });
  fs.copyFileSync(SCRIPT, path.join(clone, "scripts", "timescaledb-source"));
  const child = spawn(path.join(clone, "scripts", "timescaledb-source"), [], {
    env: { PATH: process.env.PATH, PULUMI_TIGERCLOUD_CACHE: cache, PULUMI_TIGERCLOUD_TIMESCALEDB_URL: `${url}/${archive}.tar.gz` },
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d) => (stdout += String(d)));
  child.stderr.on("data", (d) => (stderr += String(d)));
  const status = await new Promise<number | null>((resolve) => child.on("close", resolve));
  return { status, stdout, stderr };
}

test("no ../shared beside the clone: the release's archive is downloaded, verified by its files, kept in the cache, and taken from there the next time", async () => {
  const cache = path.join(work, "cache");
  const first = await runInBareClone("release", cache);
  expect(first.stderr).toMatch(
    /no \.\.\/shared\/vendor\/timescaledb beside the clone: downloading TimescaleDB 2\.28\.3's release source from http/,
  );
  expect(first.stderr).toMatch(/source, verified: http:\/\/127\.0\.0\.1:\d+\/release\.tar\.gz \(downloaded once/);
  expect(first.status).toBe(0);
  expect(first.stdout.trim()).toBe(path.join(cache, "timescaledb-2.28.3-source.tar.gz"));
  const second = await runInBareClone("release", cache);
  expect(second.status).toBe(0);
  expect(second.stderr).not.toMatch(/downloading/);
  expect(requests.filter((r) => r === "/release.tar.gz")).toHaveLength(1);
});

test("an archive whose files are not the release's is refused, naming both digests, and nothing of it is kept", async () => {
  const cache = path.join(work, "cache-altered");
  const run = await runInBareClone("altered", cache);
  expect(run.status).toBe(1);
  expect(run.stderr).toMatch(/is not TimescaleDB 2\.28\.3's release: its files hash to [0-9a-f]{64}, the release's to [0-9a-f]{64}/);
  expect(run.stdout).toBe("");
  expect(fs.readdirSync(cache)).toEqual([]);
});
