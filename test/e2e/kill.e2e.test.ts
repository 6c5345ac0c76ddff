// `pulumi up` killed (SIGKILL, its whole process group) at many moments of a fork's creation, and
// of an update of its HA counts and VPC name, then what a user runs next: one fork per declared
// name, in state, READY, with its HA; no provider process left behind. A project directory inside the repository, run with the CLI as a person does.
import { spawn } from "child_process";
import * as fs from "fs";
import * as path from "path";
import { PROVIDER_PROCESS_TITLE } from "../../provider/engine/engineWatch";
import { NO_DELAYS, Simulator } from "../simulator/server";

jest.setTimeout(900_000);
const ROOT = path.join(__dirname, "..", "..");
let sim: Simulator;
let dir: string;
let env: NodeJS.ProcessEnv;

const PROGRAM = `import * as pulumi from "@pulumi/pulumi";
import { ServiceFork, ServiceHA, VpcName } from "pulumi-tigercloud";
const config = new pulumi.Config();
const fork = new ServiceFork("fork", { sourceServiceId: config.require("source"), forkStrategy: "NOW", name: config.require("forkName") });
const ha = new ServiceHA("ha", { serviceId: fork.serviceId, replicaCount: config.getNumber("replicas") ?? 1 });
new VpcName("vpc", { vpcId: config.require("vpc"), name: config.get("vpcName") ?? config.require("forkName") });
export const serviceId = fork.serviceId;
export const replicas = ha.replicaCount;
export const uri = fork.connectionUri;
`;

beforeAll(async () => {
  sim = new Simulator({ delays: { ...NO_DELAYS, forkQueuedMs: 1500, forkConfiguringMs: 1500, setHAMs: 1500, stopMs: 500 } });
  await sim.start();
  fs.mkdirSync(path.join(ROOT, ".tmp"), { recursive: true });
  // Inside the repository, so that the program and the provider find this package in ./node_modules.
  dir = fs.mkdtempSync(path.join(ROOT, ".tmp", "kill-"));
  fs.writeFileSync(
    path.join(dir, "Pulumi.yaml"),
    "name: kill-e2e\nmain: index.ts\nruntime:\n  name: nodejs\n  options:\n    typescript: true\n",
  );
  fs.writeFileSync(path.join(dir, "index.ts"), PROGRAM);
  fs.mkdirSync(path.join(dir, "state"));
  env = {
    ...process.env,
    PULUMI_BACKEND_URL: `file://${path.join(dir, "state")}`,
    PULUMI_HOME: path.join(dir, "home"),
    PULUMI_CONFIG_PASSPHRASE: "kill-e2e",
    PULUMI_SKIP_UPDATE_CHECK: "true",
    TIGER_API_URL: sim.url,
    TIGER_API_KEY: sim.apiKey,
    TIGER_PROJECT_ID: sim.defaults().projectId,
    // As the README asks of a pipeline: every provider process watches its engine from its start.
    NODE_OPTIONS: "--require=pulumi-tigercloud/watchdog",
  };
});
afterAll(async () => {
  await sim?.stop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

interface Run {
  status: number | null;
  output: string;
}

/** Starts `pulumi ...` in a process group of its own; `kill()` SIGKILLs the whole group. */
function start(args: string[]): { done: Promise<Run>; kill: () => void } {
  const child = spawn("pulumi", [...args, "--non-interactive"], { cwd: dir, env, detached: true });
  let output = "";
  child.stdout.on("data", (c: Buffer) => (output += c.toString()));
  child.stderr.on("data", (c: Buffer) => (output += c.toString()));
  const done = new Promise<Run>((resolve) => child.on("close", (status) => resolve({ status, output })));
  return { done, kill: () => process.kill(-(child.pid as number), "SIGKILL") };
}
const pulumi = (...args: string[]) => start(args).done;
async function ok(...args: string[]): Promise<string> {
  const r = await pulumi(...args);
  if (r.status !== 0) throw new Error(`pulumi ${args.join(" ")} exited ${r.status}:\n${r.output}`);
  return r.output;
}
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
async function until(what: () => boolean, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!what()) {
    if (Date.now() > deadline)
      throw new Error(
        `timed out waiting for a moment to kill; requests so far: ${sim
          .requests()
          .map((r) => r.operation)
          .join(", ")}`,
      );
    await sleep(20);
  }
}

/**
 * Dynamic-provider processes of this test's engine still running: `ours` had loaded this package
 * (it renames its process, see provider/engine/engineWatch.ts); `idle` never got a request, so never ran
 * our code: the SDK's provider process, killed with its engine before its first resource call.
 */
function providersLeft(): { ours: number[]; idle: number[] } {
  const left = { ours: [] as number[], idle: [] as number[] };
  for (const pid of fs
    .readdirSync("/proc")
    .filter((p) => /^\d+$/.test(p))
    .map(Number)) {
    try {
      const cmdline = fs.readFileSync(`/proc/${pid}/cmdline`, "utf8");
      if (cmdline.startsWith(PROVIDER_PROCESS_TITLE) && fs.readlinkSync(`/proc/${pid}/cwd`) === dir) left.ours.push(pid);
      else if (cmdline.includes("cmd/dynamic-provider") && fs.readlinkSync(`/proc/${pid}/cwd`) === dir) left.idle.push(pid);
    } catch {
      // gone meanwhile
    }
  }
  return left;
}

/** What a user runs after a cancelled pipeline: `up`; where the engine refuses, refresh then `up`. */
async function recover(stack: string): Promise<string> {
  let again = await pulumi("up", "--yes", "--stack", stack);
  if (again.status === 0) return again.output;
  // A killed update leaves the file backend's lock behind: `pulumi cancel` removes it.
  if (/currently locked/.test(again.output)) {
    await ok("cancel", "--yes", "--stack", stack);
    again = await pulumi("up", "--yes", "--stack", stack);
    if (again.status === 0) return again.output;
  }
  await ok("refresh", "--yes", "--clear-pending-creates", "--stack", stack);
  return ok("up", "--yes", "--stack", stack);
}

/** 1 when the stack's `uri` output logs in to its fork's database (the simulator's stand-in server). */
async function logsIn(stack: string): Promise<number> {
  const uri = (await ok("stack", "output", "uri", "--show-secrets", "--stack", stack)).trim();
  const { Client } = require("pg") as typeof import("pg");
  // The stand-in's certificate is self-signed: libpq's sslmode=require (encrypt, do not verify).
  const client = new Client({ connectionString: `${uri}&uselibpqcompat=true` });
  await client.connect();
  try {
    expect((await client.query("SELECT 1")).rows).toEqual([{ "?column?": 1 }]);
  } finally {
    await client.end();
  }
  return 1;
}

const forksNamed = (name: string) => sim.services(sim.defaults().projectId).filter((s) => s.name === name);
const sent = (operation: "forkService" | "setHA", name?: string) =>
  sim.requests(operation).some((r) => name === undefined || (r.body as { name?: string } | undefined)?.name === name);

// The moments: four chosen ones, then random times across the whole create.
const MOMENTS: [string, (name: string) => Promise<void>][] = [
  ["before forkService is sent", () => sleep(800)],
  ["just after forkService was sent", (name) => until(() => sent("forkService", name))],
  [
    "while waiting for READY",
    async (name) => {
      await until(() => sent("forkService", name));
      await sleep(1200);
    },
  ],
  [
    "while ServiceHA waits",
    async () => {
      const before = sim.requests("setHA").length;
      await until(() => sim.requests("setHA").length > before);
      await sleep(300);
    },
  ],
  ...Array.from({ length: 6 }, (_, i): [string, (name: string) => Promise<void>] => {
    const ms = 1000 + Math.round(Math.random() * 7000);
    return [`at a random moment (${i + 1}: ${ms} ms)`, () => sleep(ms)];
  }),
];

const tally = {
  kills: 0,
  updateKills: 0,
  destroyKills: 0,
  loginsAfterRecovery: 0,
  duplicates: 0,
  missingFromState: 0,
  providersLeft: 0,
  idleSdkProvidersLeft: 0,
};

async function initStack(stack: string, forkName: string): Promise<void> {
  await ok("stack", "init", stack);
  await ok("config", "set", "--stack", stack, "source", sim.defaults().serviceId);
  await ok("config", "set", "--stack", stack, "forkName", forkName);
  await ok("config", "set", "--stack", stack, "vpc", sim.defaults().vpcId);
}

/** Runs `pulumi up`, SIGKILLs its process group once `moment` resolves, and checks that no
 *  provider process outlives its engine by more than a few seconds. */
async function killUpAt(stack: string, moment: () => Promise<void>): Promise<void> {
  const run = start(["up", "--yes", "--stack", stack]);
  const ended = await Promise.race([moment().then(() => false), run.done.then(() => true)]).catch(async (err: Error) => {
    run.kill();
    throw new Error(`${err.message}\npulumi up said:\n${(await run.done).output}`);
  });
  if (ended) throw new Error(`pulumi up ended before the moment to kill it:\n${(await run.done).output}`);
  run.kill();
  await run.done;
  tally.kills++;
  // The provider process notices its engine is gone within seconds, and exits.
  await sleep(4000);
  const left = providersLeft();
  tally.providersLeft += left.ours.length;
  tally.idleSdkProvidersLeft += left.idle.length;
  for (const pid of left.idle) process.kill(pid, "SIGKILL");
  expect(left.ours).toEqual([]);
  expect(left.idle).toEqual([]);
}

/** After recovery: one live fork of that name, READY, in state, logging in; HA and VPC as declared;
 *  with `checkNoChanges`, nothing left for the next preview or refresh to change. */
async function expectRecovered(stack: string, forkName: string, declared: { replicas: number; vpcName: string; checkNoChanges?: boolean }) {
  const live = forksNamed(forkName).filter((s) => s.status !== "PAUSED");
  tally.duplicates += Math.max(0, live.length - 1);
  expect(live).toHaveLength(1);
  const fork = live[0] as (typeof live)[number];
  expect(fork).toMatchObject({ status: "READY", ha_replicas: { replica_count: declared.replicas } });
  const state = await ok("stack", "export", "--stack", stack);
  if (!state.includes(fork.service_id)) tally.missingFromState++;
  expect(state).toContain(fork.service_id);
  // The recovered fork's connection string logs in (an adopted fork's password was reset).
  tally.loginsAfterRecovery += await logsIn(stack);
  expect(sim.vpc(sim.defaults().projectId, sim.defaults().vpcId)?.name).toBe(declared.vpcName);
  expect((await ok("stack", "output", "replicas", "--stack", stack)).trim()).toBe(String(declared.replicas));
  if (declared.checkNoChanges) {
    await ok("preview", "--expect-no-changes", "--stack", stack);
    await ok("refresh", "--yes", "--expect-no-changes", "--stack", stack);
  }
  return fork;
}

/** The outputs the stack's state records for the resource named `name` in the program. */
async function recordedOutputs(stack: string, name: string): Promise<Record<string, unknown>> {
  const state = JSON.parse(await ok("stack", "export", "--stack", stack)) as {
    deployment: { resources?: { urn: string; outputs?: Record<string, unknown> }[] };
  };
  const resource = (state.deployment.resources ?? []).find((r) => r.urn.endsWith(`::${name}`));
  if (!resource) throw new Error(`no resource "${name}" in the state of stack ${stack}`);
  return resource.outputs ?? {};
}

/** Destroys the stack; with `killAfterMs`, first kills a destroy that long after its first API
 *  change (HA being reset or the fork stopped), then destroys again as a person would. Ends with
 *  the fork stopped, its HA reset and no resource of ours in state. */
async function destroyStack(stack: string, forkName: string, serviceId: string, killAfterMs?: number) {
  if (killAfterMs !== undefined) {
    const destroying = start(["destroy", "--yes", "--stack", stack]);
    const before = sim.requests().length;
    await until(() =>
      sim
        .requests()
        .slice(before)
        .some((r) => r.method === "POST"),
    );
    await sleep(killAfterMs);
    destroying.kill();
    await destroying.done;
    tally.destroyKills++;
    await sleep(4000);
    expect(providersLeft()).toEqual({ ours: [], idle: [] });
    const again = await pulumi("destroy", "--yes", "--stack", stack);
    if (again.status !== 0) {
      await ok("cancel", "--yes", "--stack", stack);
      await ok("destroy", "--yes", "--stack", stack);
    }
  } else {
    await ok("destroy", "--yes", "--stack", stack);
  }
  expect(forksNamed(forkName).map((s) => s.status)).toEqual(["PAUSED"]);
  expect(sim.service(sim.defaults().projectId, serviceId)?.ha_replicas).toEqual({ replica_count: 0, sync_replica_count: 0 });
  // No resource left in state. (A killed destroy may leave the engine's note of the delete it
  // was doing, `pending_operations`: bookkeeping that names the resource, not a resource.)
  const after = JSON.parse(await ok("stack", "export", "--stack", stack)) as { deployment: { resources?: { type: string }[] } };
  expect((after.deployment.resources ?? []).filter((r) => r.type.includes("tigercloud"))).toEqual([]);
}

test.each(MOMENTS.map(([label], i) => [label, i] as const))(
  "killed %s: the next up ends with one fork, in state, READY, HA set",
  async (_label, i) => {
    const stack = `kill-${i}`;
    const forkName = `kill-fork-${i}`;
    await initStack(stack, forkName);
    await killUpAt(stack, () => (MOMENTS[i]?.[1] as (name: string) => Promise<void>)(forkName));
    await recover(stack);
    const fork = await expectRecovered(stack, forkName, { replicas: 1, vpcName: forkName });
    // Destroy after recovery stops the one fork; every other one is killed once while HA is
    // being reset or the fork stopped.
    await destroyStack(stack, forkName, fork.service_id, i % 2 === 1 ? (i % 4 === 1 ? 200 : 900) : undefined);
  },
);

// Updates: HA counts 1 -> 2 and the VPC's name changed on a stack that holds its fork, `up` killed
// while they are in flight. ServiceHA and VpcName set the declared value, so the next `up` (or
// refresh, then up) finishes the change, on the same fork.
/** Resolves once `operation` is sent again, counting from the call. */
function sentFromNow(operation: "setHA" | "renameVpc"): Promise<void> {
  const count = sim.requests(operation).length;
  return until(() => sim.requests(operation).length > count);
}
// `unfinished`: what the killed `up` cannot have recorded yet, so the kill surely fell mid-change.
const UPDATES: {
  label: string;
  replicas: number;
  vpcName: boolean;
  moment: () => Promise<void>;
  unfinished?: "ha" | "vpc";
}[] = [
  {
    label: "while setHA waits for the new counts",
    replicas: 2,
    vpcName: false,
    unfinished: "ha",
    moment: async () => {
      await sentFromNow("setHA");
      await sleep(300);
    },
  },
  {
    label: "while the VPC rename is in flight, unanswered",
    replicas: 1,
    vpcName: true,
    unfinished: "vpc",
    moment: async () => {
      sim.injectFault("renameVpc", { kind: "slow", ms: 3000 });
      await sentFromNow("renameVpc");
      await sleep(200);
    },
  },
  {
    label: "just as the VPC rename was sent",
    replicas: 1,
    vpcName: true,
    moment: () => sentFromNow("renameVpc"),
  },
  ...Array.from({ length: 1 }, (_, i) => {
    const ms = Math.round(Math.random() * 2000);
    return {
      label: `at a random moment of both (${i + 1}: ${ms} ms after the first change was sent)`,
      replicas: 2,
      vpcName: true,
      moment: async () => {
        await Promise.race([sentFromNow("setHA"), sentFromNow("renameVpc")]);
        await sleep(ms);
      },
    };
  }),
];

test.each(UPDATES.map(({ label }, i) => [label, i] as const))(
  "an update killed %s: the next up sets HA and the VPC name on the same fork",
  async (_label, i) => {
    const update = UPDATES[i] as (typeof UPDATES)[number];
    const stack = `update-${i}`;
    const forkName = `update-fork-${i}`;
    await initStack(stack, forkName);
    await ok("up", "--yes", "--stack", stack);
    const [before] = forksNamed(forkName);
    expect(before?.ha_replicas.replica_count).toBe(1);

    const vpcName = update.vpcName ? `${forkName}-renamed` : forkName;
    await ok("config", "set", "--stack", stack, "replicas", String(update.replicas));
    await ok("config", "set", "--stack", stack, "vpcName", vpcName);
    await killUpAt(stack, update.moment);
    tally.updateKills++;
    if (update.unfinished === "ha") expect((await recordedOutputs(stack, "ha")).replicaCount).toBe(1);
    if (update.unfinished === "vpc") expect((await recordedOutputs(stack, "vpc")).name).toBe(forkName);
    await recover(stack);
    const after = await expectRecovered(stack, forkName, { replicas: update.replicas, vpcName, checkNoChanges: true });
    // The same fork throughout: an update never forks.
    expect(after.service_id).toBe(before?.service_id);
    expect(forksNamed(forkName)).toHaveLength(1);
    await destroyStack(stack, forkName, after.service_id, i % 2 === 0 ? 300 : undefined);
  },
);

test("an ambiguous 500 after the fork was made: one fork in state, one forkService request", async () => {
  const stack = "ambiguous";
  await ok("stack", "init", stack);
  await ok("config", "set", "--stack", stack, "source", sim.defaults().serviceId);
  await ok("config", "set", "--stack", stack, "forkName", "ambiguous-fork");
  await ok("config", "set", "--stack", stack, "vpc", sim.defaults().vpcId);
  sim.clearLog();
  sim.injectFault("forkService", { kind: "afterApplying", status: 500 });
  const out = await ok("up", "--yes", "--stack", stack);
  expect(out).toMatch(/adopting fork svc-\w+/);
  expect(sim.requests("forkService")).toHaveLength(1);
  const [fork] = forksNamed("ambiguous-fork");
  expect(forksNamed("ambiguous-fork")).toHaveLength(1);
  expect(await ok("stack", "export", "--stack", stack)).toContain(fork?.service_id);
  await ok("destroy", "--yes", "--stack", stack);
});

afterAll(() => {
  // The figures for the closing note.
  process.stdout.write(`kill test: ${JSON.stringify(tally)}\n`);
});
