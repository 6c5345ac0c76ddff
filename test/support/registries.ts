// Real package registries on loopback, for the release's rehearsal: Verdaccio for npm and pypiserver
// for Python, each installed once into the project's cache from its own registry (npm, PyPI) and
// started fresh, with empty storage, in a folder of the test's. Packages the release does not
// publish come through them from the public registries (Verdaccio's uplink, pypiserver's fallback),
// as a user's company registry serves them.
import { type ChildProcess, execFileSync, spawn } from "child_process";
import * as fs from "fs";
import * as net from "net";
import * as os from "os";
import * as path from "path";

const CACHE =
  process.env.PULUMI_TIGERCLOUD_CACHE || path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), ".cache"), "pulumi-tigercloud");
/** Verdaccio 6.10 runs on Node.js 22 and later; its node-fetch@cjs tag is not on every mirror, so 2.7.0, the version it names. */
const VERDACCIO = "6.10.4";
const PYPISERVER = "2.4.2";

export interface Registry {
  url: string;
  /** What it logged (its own log lines), to see what came and went. */
  log(): string;
  stop(): Promise<void>;
}

/** A folder made once by `make(dir)` in a sibling, then renamed into place. */
function madeOnce(dir: string, make: (work: string) => void): string {
  if (fs.existsSync(dir)) return dir;
  fs.mkdirSync(path.dirname(dir), { recursive: true });
  const work = fs.mkdtempSync(`${dir}.tmp-`);
  try {
    make(work);
    fs.renameSync(work, dir);
  } catch (err) {
    if (!fs.existsSync(dir)) throw err;
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
  return dir;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** Starts `command`, its output kept; resolves once `ready()` holds, fails if it exits first or in 60 s. */
async function started(
  command: string,
  args: string[],
  cwd: string,
  ready: () => Promise<boolean>,
): Promise<{ child: ChildProcess; log: () => string }> {
  const child = spawn(command, args, { cwd, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  child.stdout?.on("data", (c: Buffer) => (out += c.toString()));
  child.stderr?.on("data", (c: Buffer) => (out += c.toString()));
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`${command} exited ${child.exitCode}:\n${out}`);
    if (await ready().catch(() => false)) return { child, log: () => out };
    await new Promise((r) => setTimeout(r, 200));
  }
  child.kill("SIGKILL");
  throw new Error(`${command} did not answer in 60 s:\n${out}`);
}

const stopped = (child: ChildProcess) =>
  new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once("exit", () => resolve());
    child.kill("SIGTERM");
  });

export interface Verdaccio extends Registry {
  /** A user's token, to publish with (NODE_AUTH_TOKEN). */
  token: string;
}

/** Verdaccio with empty storage; `pulumi-tigercloud` published only, everything else from the npm registry. */
export async function startVerdaccio(work: string): Promise<Verdaccio> {
  const home = madeOnce(path.join(CACHE, `verdaccio-${VERDACCIO}`), (dir) => {
    fs.writeFileSync(path.join(dir, "package.json"), JSON.stringify({ private: true, overrides: { "node-fetch": "2.7.0" } }));
    execFileSync("npm", ["install", "--no-audit", "--no-fund", "--loglevel=error", `verdaccio@${VERDACCIO}`], {
      cwd: dir,
      stdio: "ignore",
    });
  });
  const dir = fs.mkdtempSync(path.join(work, "verdaccio-"));
  fs.writeFileSync(
    path.join(dir, "config.yaml"),
    [
      "storage: ./storage",
      "auth:",
      "  htpasswd:",
      "    file: ./htpasswd",
      "uplinks:",
      "  npmjs:",
      "    url: https://registry.npmjs.org/",
      "packages:",
      "  pulumi-tigercloud:",
      "    access: $all",
      "    publish: $authenticated",
      "  '**':",
      "    access: $all",
      "    proxy: npmjs",
      "log: { type: stdout, format: pretty, level: http }",
      "",
    ].join("\n"),
  );
  const url = `http://127.0.0.1:${await freePort()}/`;
  const { child, log } = await started(
    process.execPath,
    [path.join(home, "node_modules", "verdaccio", "bin", "verdaccio"), "--config", "config.yaml", "--listen", new URL(url).host],
    dir,
    async () => (await fetch(`${url}-/ping`)).ok,
  );
  // A user, as `npm adduser` makes one: its token publishes.
  const added = await fetch(`${url}-/user/org.couchdb.user:release`, {
    method: "PUT",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ name: "release", password: "release-password-1" }),
  });
  const { token } = (await added.json()) as { token?: string };
  if (!token) throw new Error(`Verdaccio made no user: HTTP ${added.status}`);
  return { url, token, log, stop: () => stopped(child) };
}

/** pypiserver with an empty folder, uploads open (no passwords), and PyPI as its fallback for the rest. */
export async function startPypiServer(work: string, port?: number): Promise<Registry & { index: string; packages: string }> {
  const venv = madeOnce(path.join(CACHE, "python", `pypiserver-${PYPISERVER}`), (dir) => {
    execFileSync("python3", ["-m", "venv", dir], { stdio: "ignore" });
    execFileSync(
      path.join(dir, "bin", "python"),
      ["-m", "pip", "install", "--quiet", "--disable-pip-version-check", `pypiserver==${PYPISERVER}`],
      {
        stdio: "ignore",
      },
    );
  });
  const packages = fs.mkdtempSync(path.join(work, "pypi-"));
  const listen = port ?? (await freePort());
  const url = `http://127.0.0.1:${listen}/`;
  // By its module: a virtual environment renamed into place keeps its scripts' old paths.
  const { child, log } = await started(
    path.join(venv, "bin", "python"),
    ["-m", "pypiserver", "run", "--host", "127.0.0.1", "--port", String(listen), "--authenticate", ".", "--passwords", ".", packages],
    work,
    async () => (await fetch(`${url}simple/`)).ok,
  );
  return { url, index: `${url}simple/`, packages, log, stop: () => stopped(child) };
}
