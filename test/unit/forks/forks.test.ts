// The fork janitor (tigercloud-forks), run as its command runs: against the simulator's API, a
// stand-in of GitHub's, and a stand-in `pulumi` first on PATH that answers from a file of stacks
// and logs every call (the workflow runner runs it with the real CLI and backend).
import { spawnSync } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { main } from "../../../forks/cli";
import { NamePattern } from "../../../forks/inventory";
import { GitHubApi } from "../../support/gitops/githubApi";
import { Simulator } from "../../../simulator";

const ROOT = path.join(__dirname, "..", "..", "..");

const DAY = 86_400_000;
const TEN_DAYS_AGO = new Date(Date.now() - 10 * DAY);
let sim: Simulator;
let ids: ReturnType<Simulator["defaults"]>;
let github: GitHubApi;
let dir: string;
let out: string[];

interface StandInStack {
  name: string;
  lastUpdate?: string;
  resources: { urn: string; id?: string; outputs?: Record<string, unknown> }[];
}
interface StandInBackend {
  stacks: StandInStack[];
  /** A CLI run whose first words are the key fails with the value as its message. */
  fail?: Record<string, string>;
  /** Stacks that appear once a destroy has run (another pipeline's `up` meanwhile). */
  afterDestroy?: StandInStack[];
}

// The stand-in CLI: `stack ls --all --json`, `stack export --stack N`, `destroy --stack N`, `stack rm N`.
const STAND_IN = `#!/usr/bin/env node
const fs = require("fs");
const file = process.env.STAND_IN_BACKEND;
const args = process.argv.slice(2).filter((a) => a !== "--non-interactive");
fs.appendFileSync(file + ".calls", args.join(" ") + "\\n");
const backend = JSON.parse(fs.readFileSync(file, "utf8"));
const key = Object.keys(backend.fail || {}).find((k) => args.join(" ").startsWith(k));
if (key) { process.stderr.write("error: " + backend.fail[key] + "\\n"); process.exit(1); }
const named = (n) => backend.stacks.find((s) => s.name === n);
const save = () => fs.writeFileSync(file, JSON.stringify(backend));
if (args[0] === "stack" && args[1] === "ls") console.log(JSON.stringify(backend.stacks.map((s) => ({ name: s.name, lastUpdate: s.lastUpdate }))));
else if (args[0] === "stack" && args[1] === "export") console.log(JSON.stringify({ version: 3, deployment: { resources: named(args[3]).resources } }));
else if (args[0] === "destroy") { console.log("Destroying (" + args[2] + "): \\u001b[31mdone\\u001b[0m"); backend.stacks.push(...(backend.afterDestroy || [])); backend.afterDestroy = []; save(); }
else if (args[0] === "stack" && args[1] === "rm") { backend.stacks = backend.stacks.filter((s) => s.name !== args[2]); save(); }
else { process.stderr.write("stand-in: no such command " + args.join(" ")); process.exit(2); }
`;

const forkResource = (serviceId: string, onDestroy = "delete") => ({
  urn: `urn:pulumi:s::pr-fork::pulumi-nodejs:dynamic/tigercloud:ServiceFork::db`,
  id: serviceId,
  outputs: { serviceId, onDestroy },
});
const backendFile = () => path.join(dir, "backend.json");
const setBackend = (b: StandInBackend) => fs.writeFileSync(backendFile(), JSON.stringify(b));
const calls = () => (fs.existsSync(`${backendFile()}.calls`) ? fs.readFileSync(`${backendFile()}.calls`, "utf8").trim().split("\n") : []);
const stacksLeft = () => (JSON.parse(fs.readFileSync(backendFile(), "utf8")) as StandInBackend).stacks.map((s) => s.name);
const printed = () => out.join("");
const fork = (name: string, createdAt?: Date, standby = false) =>
  sim.outOfBand.addFork(ids.projectId, ids.serviceId, { name, ...(createdAt ? { createdAt } : {}), standby });
const status = (id: string) => sim.service(ids.projectId, id)?.status;
const sweep = (...extra: string[]) => main(["sweep", "--source", ids.serviceId, "--older-than", "2d", ...extra]);

let savedEnv: NodeJS.ProcessEnv;
beforeEach(async () => {
  sim = new Simulator({});
  await sim.start();
  ids = sim.defaults();
  github = new GitHubApi();
  await github.start();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "tigercloud-forks-"));
  fs.writeFileSync(path.join(dir, "pulumi"), STAND_IN, { mode: 0o755 });
  setBackend({ stacks: [] });
  savedEnv = { ...process.env };
  Object.assign(process.env, {
    PATH: `${dir}${path.delimiter}${process.env.PATH}`,
    STAND_IN_BACKEND: backendFile(),
    TIGER_API_URL: sim.url,
    TIGER_API_KEY: sim.apiKey,
    TIGER_PROJECT_ID: ids.projectId,
    GITHUB_REPOSITORY: "acme/shop",
    GITHUB_API_URL: github.url,
    GITHUB_TOKEN: github.issueToken({ "pull-requests": "read" }),
  });
  out = [];
  const capture = (chunk: string | Uint8Array) => {
    out.push(String(chunk));
    return true;
  };
  jest.spyOn(process.stdout, "write").mockImplementation(capture);
  jest.spyOn(process.stderr, "write").mockImplementation(capture);
});
afterEach(async () => {
  jest.restoreAllMocks();
  process.env = savedEnv;
  await sim.stop();
  await github.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

test("a pipeline's names: * is a PR number, every other character is itself", () => {
  const p = new NamePattern("pr-*.acme.shop");
  expect(p.matches("pr-12.acme.shop")).toBe(true);
  expect(p.number("pr-12.acme.shop")).toBe(12);
  expect(p.matches("pr-12.acmexshop")).toBe(false);
  expect(p.matches("pr-12.acme.shop.old")).toBe(false);
  // A PR of other/acme.shop (a repository's name may hold dots), and a fork a person named so.
  expect(p.matches("pr-5.other.acme.shop")).toBe(false);
  expect(p.matches("pr-old.acme.shop")).toBe(false);
});

test("list: every fork with its source, status, age, size, the stack that holds it and its PR; --json the same; a standby only counted", async () => {
  const held = fork("pr-7.acme.shop", TEN_DAYS_AGO);
  const loose = fork("scratch");
  fork("pr-9.acme.shop", TEN_DAYS_AGO, true);
  setBackend({ stacks: [{ name: "pr-7.acme.shop", lastUpdate: "t1", resources: [forkResource(held)] }] });
  github.pullRequestEvent("acme/shop", 7, "opened");
  expect(await main(["list"])).toBe(0);
  const rows = printed().split("\n");
  expect(rows).toContainEqual(
    expect.stringMatching(new RegExp(`^${held} +pr-7\\.acme\\.shop +${ids.serviceId} +READY +10d 0h +.*pr-7\\.acme\\.shop +#7 open$`)),
  );
  expect(rows).toContainEqual(expect.stringMatching(new RegExp(`^${loose} +scratch .*\\(none\\) +-$`)));
  expect(printed()).toContain("1 standby(s) of these sources not shown");
  // What the team pays for that no pipeline will remove: the simulator's forks have 2 CPU and 1 GB each.
  expect(printed()).toContain("held by no stack: 1 fork(s), 1 running (2 CPU), 1.0 GB of storage\n");

  out.length = 0;
  expect(await main(["list", "--json"])).toBe(0);
  const listed = JSON.parse(printed()) as { forks: { serviceId: string; stacks: string[]; pullRequest: unknown }[]; standbys: string[] };
  expect(listed.forks.find((f) => f.serviceId === held)).toMatchObject({
    stacks: ["pr-7.acme.shop"],
    pullRequest: { number: 7, state: "open" },
  });
  expect(listed.standbys).toHaveLength(1);
  expect((listed as unknown as { unheld: unknown }).unheld).toEqual({ forks: 1, running: 1, cpuMillis: 2000, storageMb: 1024 });
  expect(sim.requests().filter((r) => r.method !== "GET")).toEqual([]);
});

test("sweep: only an old fork of the source that no stack holds, named like the pipeline's, goes; the rest stay, each with its reason; a dry run changes nothing", async () => {
  const gone = fork("pr-3.acme.shop", TEN_DAYS_AGO);
  const held = fork("pr-7.acme.shop", TEN_DAYS_AGO);
  const young = fork("pr-8.acme.shop");
  const scratch = fork("scratch", TEN_DAYS_AGO);
  const web = fork("pr-4.acme.web", TEN_DAYS_AGO);
  const handMade = fork("pr-old.acme.shop", TEN_DAYS_AGO);
  const standby = fork("pr-5.acme.shop", TEN_DAYS_AGO, true);
  setBackend({ stacks: [{ name: "organization/other/preview", lastUpdate: "t1", resources: [forkResource(held)] }] });

  expect(await sweep()).toBe(0);
  expect(printed()).toContain("(a dry run: nothing is changed; --apply does it)");
  expect(printed()).toContain(
    `would delete fork ${gone} "pr-3.acme.shop": no stack holds it, it is 10d 0h old, and named like pr-*.acme.shop`,
  );
  expect(sim.requests().filter((r) => r.method !== "GET")).toEqual([]);

  out.length = 0;
  expect(await sweep("--apply")).toBe(0);
  expect(printed()).toContain(`DELETE fork ${gone} "pr-3.acme.shop"`);
  expect(printed()).toContain(`keep fork ${held} "pr-7.acme.shop": held by stack organization/other/preview\n`);
  expect(printed()).toContain(`keep fork ${young} "pr-8.acme.shop": no stack holds it, but it is 0m old, younger than 2d 0h`);
  expect(printed()).toContain(`keep fork ${scratch} "scratch": no stack holds it, but it is not named like pr-*.acme.shop`);
  expect(printed()).toContain(`keep fork ${web} "pr-4.acme.web": no stack holds it, but it is not named like`);
  expect(printed()).toContain(`keep fork ${handMade} "pr-old.acme.shop": no stack holds it, but it is not named like`);
  expect(printed()).toContain(`1 standby(s) of ${ids.serviceId} left alone`);
  expect(printed()).not.toContain(standby);
  expect(status(gone)).toMatch(/^DELET/);
  for (const kept of [held, young, scratch, web, handMade, standby]) expect(status(kept)).toBe("READY");

  // Told to stop rather than delete: stopped; once paused, kept.
  const stopped = fork("pr-6.acme.shop", TEN_DAYS_AGO);
  out.length = 0;
  expect(await sweep("--apply", "--unheld", "stop")).toBe(0);
  expect(printed()).toContain(`fork ${stopped} is stopping`);
  expect(sim.requests("stop")).toHaveLength(1);
  out.length = 0;
  expect(await sweep("--apply", "--unheld", "stop")).toBe(0);
  expect(printed()).toMatch(new RegExp(`keep fork ${stopped} "pr-6.acme.shop": no stack holds it, and it is already PAUS`));
});

test("a closed PR's stack is destroyed (destroy's lines escaped under it), an open one kept; another project's stack of the same name never", async () => {
  const closed = fork("pr-7.acme.shop", TEN_DAYS_AGO);
  setBackend({
    stacks: [
      { name: "pr-7.acme.shop", lastUpdate: "t1", resources: [forkResource(closed)] },
      { name: "pr-8.acme.shop", lastUpdate: "t1", resources: [] },
      { name: "organization/preview-app/pr-9.acme.shop", lastUpdate: "t1", resources: [] },
    ],
  });
  github.pullRequestEvent("acme/shop", 7, "closed");
  github.pullRequestEvent("acme/shop", 8, "opened");
  github.pullRequestEvent("acme/shop", 9, "closed");
  expect(await sweep("--apply")).toBe(0);
  expect(printed()).toContain(
    `DESTROY stack pr-7.acme.shop: pull request #7 is closed; its forks go as their onDestroy says: ${closed} (onDestroy: delete)`,
  );
  expect(printed()).toContain("| Destroying (pr-7.acme.shop): \\x1b[31mdone\\x1b[0m");
  expect(printed()).toContain("keep stack pr-8.acme.shop: pull request #8 is open");
  expect(printed()).toContain(`keep fork ${closed} "pr-7.acme.shop": held by stack pr-7.acme.shop (destroyed above`);
  expect(printed()).not.toContain("\u001b");
  expect(calls().filter((c) => !c.startsWith("stack ls") && !c.startsWith("stack export"))).toEqual([
    "destroy --stack pr-7.acme.shop --yes --skip-preview --suppress-progress",
    "stack rm pr-7.acme.shop --yes",
  ]);
  expect(stacksLeft()).toEqual(["pr-8.acme.shop", "organization/preview-app/pr-9.acme.shop"]);
});

test("expiry: list shows when each held fork expires; sweep destroys this repository's PR stacks whose forks expired (even while open), keeps and names any other stack of the project holding one, never another project's, nor one not yet expired", async () => {
  const [expired, later, elsewhere, loose, web] = [
    "pr-7.acme.shop",
    "pr-8.acme.shop",
    "pr-9.acme.shop",
    "investigation",
    "pr-7.acme.web",
  ].map((n) => fork(n, TEN_DAYS_AGO)) as [string, string, string, string, string];
  const expiring = (serviceId: string, expiresAt: Date) => {
    const r = forkResource(serviceId);
    return { ...r, outputs: { ...r.outputs, expiresAt: expiresAt.toISOString() } };
  };
  const past = new Date(Date.now() - 3 * 3_600_000);
  setBackend({
    stacks: [
      { name: "pr-7.acme.shop", lastUpdate: "t1", resources: [expiring(expired, past)] },
      { name: "pr-8.acme.shop", lastUpdate: "t1", resources: [expiring(later, new Date(Date.now() + 2 * DAY + 60_000))] },
      { name: "organization/other/pr-9.acme.shop", lastUpdate: "t1", resources: [expiring(elsewhere, past)] },
      { name: "incident-42", lastUpdate: "t1", resources: [expiring(loose, past)] },
      // Another repository's PR stack, in the same backend and project: its repository's sweep decides.
      { name: "pr-7.acme.web", lastUpdate: "t1", resources: [expiring(web, past)] },
    ],
  });
  github.pullRequestEvent("acme/shop", 7, "opened");
  github.pullRequestEvent("acme/shop", 8, "opened");
  expect(await main(["list"])).toBe(0);
  expect(printed()).toMatch(new RegExp(`^${expired} +pr-7\\.acme\\.shop +${ids.serviceId} +READY +10d 0h +EXPIRED 3h 0m ago `, "m"));
  expect(printed()).toMatch(new RegExp(`^${later} +pr-8\\.acme\\.shop +${ids.serviceId} +READY +10d 0h +in 2d 0h `, "m"));

  out.length = 0;
  expect(await sweep()).toBe(0);
  expect(printed()).toContain(`would destroy stack pr-7.acme.shop: fork ${expired} expired at ${past.toISOString()}`);
  expect(calls().filter((c) => c.startsWith("destroy"))).toEqual([]);
  out.length = 0;
  expect(await sweep("--apply")).toBe(0);
  expect(printed()).toContain(`DESTROY stack pr-7.acme.shop: fork ${expired} expired at`);
  // Not a pull request's stack: said, and kept (it may hold more than the fork).
  expect(printed()).toContain(
    `keep stack incident-42: fork ${loose} expired at ${past.toISOString()}, but the stack is not a pull request's`,
  );
  expect(printed()).toContain("keep stack pr-8.acme.shop: pull request #8 is open");
  expect(calls().filter((c) => c.startsWith("destroy"))).toEqual([
    "destroy --stack pr-7.acme.shop --yes --skip-preview --suppress-progress",
  ]);
  expect(stacksLeft()).toEqual(["pr-8.acme.shop", "organization/other/pr-9.acme.shop", "incident-42", "pr-7.acme.web"]);
});

test("the backend cannot be read: the run fails, nothing is changed", async () => {
  const old = fork("pr-3.acme.shop", TEN_DAYS_AGO);
  setBackend({ stacks: [], fail: { "stack ls": "could not reach s3://bucket: AccessDenied" } });
  expect(await sweep("--apply")).toBe(1);
  expect(printed()).toContain("pulumi stack ls --all --json failed: error: could not reach s3://bucket: AccessDenied");
  expect(printed()).toContain("Nothing was changed.");
  // A stack listed but not exported: the same.
  setBackend({ stacks: [{ name: "pr-4.acme.shop", resources: [] }], fail: { "stack export": "checkpoint is corrupt" } });
  expect(await sweep("--apply")).toBe(1);
  expect(sim.requests().filter((r) => r.method !== "GET")).toEqual([]);
  expect(status(old)).toBe("READY");
});

test("a failed action fails the run and the rest still run: a destroy that fails (its stack kept), a refused DELETE, a fork read again as a standby", async () => {
  const [a, b, c, d] = ["pr-1", "pr-2", "pr-3", "pr-4"].map((n) => fork(`${n}.acme.shop`, TEN_DAYS_AGO)) as [
    string,
    string,
    string,
    string,
  ];
  setBackend({ stacks: [{ name: "pr-7.acme.shop", resources: [] }], fail: { destroy: "the stack is locked" } });
  github.pullRequestEvent("acme/shop", 7, "closed");
  // The read just before a's delete says it is a standby now; the next DELETE (b's) is refused.
  const standbyNow = {
    service_id: a,
    status: "READY",
    forked_from: { service_id: ids.serviceId, project_id: ids.projectId, is_standby: true },
  };
  sim.injectFault("getService", { kind: "status", status: 200, body: JSON.stringify(standbyNow), contentType: "application/json" });
  const refusal = JSON.stringify({ code: "FORBIDDEN", message: "no \u001b[31m" });
  sim.injectFault("deleteService", { kind: "status", status: 403, body: refusal, contentType: "application/json" });
  expect(await sweep("--apply")).toBe(1);
  expect(printed()).toContain(
    "FAILED: pulumi destroy --stack pr-7.acme.shop --yes --skip-preview --suppress-progress failed: error: the stack is locked",
  );
  expect(calls()).not.toContainEqual(expect.stringMatching(/^stack rm/));
  expect(printed()).toContain(
    `FAILED: service ${a} is a standby of service ${ids.serviceId} (forked_from.is_standby), not a fork: left as it is`,
  );
  expect(printed()).toContain("FAILED: Request failed with status code 403 FORBIDDEN");
  expect(printed()).toContain("tigercloud-forks: 3 action(s) failed (see above); the others were carried out");
  expect(printed()).not.toContain("\u001b");
  expect([status(a), status(b), status(c), status(d)]).toEqual([
    "READY",
    "READY",
    expect.stringMatching(/^DELET/),
    expect.stringMatching(/^DELET/),
  ]);
});

test("a fork a stack took meanwhile (a reopened PR's up) is read again before the delete, and left", async () => {
  const taken = fork("pr-3.acme.shop", TEN_DAYS_AGO);
  setBackend({
    stacks: [{ name: "pr-7.acme.shop", resources: [] }],
    afterDestroy: [{ name: "pr-3.acme.shop", lastUpdate: "t2", resources: [forkResource(taken)] }],
  });
  github.pullRequestEvent("acme/shop", 7, "closed");
  expect(await sweep("--apply")).toBe(0);
  expect(printed()).toContain(`DELETE fork ${taken} "pr-3.acme.shop"`);
  expect(printed()).toContain("left as it is: stack pr-3.acme.shop holds it now");
  expect(status(taken)).toBe("READY");
  expect(sim.requests("deleteService")).toEqual([]);
});

test("the command refuses what it cannot do safely, naming the option: exit 2, nothing sent", async () => {
  expect(await main(["sweep", "--older-than", "7d"])).toBe(2);
  expect(printed()).toContain("sweep needs --source");
  expect(await main(["sweep", "--source", "svc-x"])).toBe(2);
  expect(printed()).toContain("sweep needs --older-than");
  expect(await main(["sweep", "--source", "svc-x", "--older-than", "30m"])).toBe(2);
  expect(printed()).toContain("--older-than must be at least 1h");
  expect(await main(["sweep", "--source", "svc-x", "--older-than", "7d", "--repository", "not a repo"])).toBe(2);
  expect(printed()).toContain("--repository (or GITHUB_REPOSITORY) must be OWNER/NAME");
  expect(await main(["sweep", "--source", "svc-x", "--older-than", "7d", "--\u001b[2Jx"])).toBe(2);
  expect(printed()).not.toContain("\u001b");
  expect(await main(["remove-everything"])).toBe(2);
  expect(sim.requests()).toEqual([]);
  expect(calls()).toEqual([]);
});

describe("the command as a person runs it", () => {
  const cli = (...args: string[]) =>
    spawnSync(process.execPath, ["-r", "ts-node/register/transpile-only", path.join(ROOT, "forks", "main.ts"), ...args], {
      cwd: ROOT,
      encoding: "utf8",
      env: { ...process.env, TIGER_API_URL: "http://127.0.0.1:9", TIGER_API_KEY: "unused" },
    });

  test("--help and -h print the usage on stdout and exit 0; --version prints the package's version", () => {
    for (const flag of ["--help", "-h", "list --help"]) {
      const help = cli(...flag.split(" "));
      expect({ flag, status: help.status, stderr: help.stderr }).toEqual({ flag, status: 0, stderr: "" });
      expect(help.stdout).toMatch(/^usage: tigercloud-forks list/);
      expect(help.stdout).toContain("tigercloud-forks sweep --source ID --older-than 7d");
    }
    const version = cli("--version");
    expect(version.status).toBe(0);
    const { version: packageVersion } = JSON.parse(fs.readFileSync(path.join(ROOT, "package.json"), "utf8")) as { version: string };
    expect(version.stdout).toBe(`tigercloud-forks (pulumi-tigercloud) ${packageVersion}\n`);
  });

  test("a wrong option exits 2 naming it, with the usage on stderr and nothing on stdout", () => {
    const wrong = cli("list", "--sauce", "svc-x");
    expect(wrong.status).toBe(2);
    expect(wrong.stdout).toBe("");
    expect(wrong.stderr).toMatch(/^tigercloud-forks: Unknown option '--sauce'/);
    expect(wrong.stderr).toContain("usage: tigercloud-forks list");
  });
});
