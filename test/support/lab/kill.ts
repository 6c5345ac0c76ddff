// The kill suites' shared ground (kill-create and kill-update): a project directory inside the
// repository, run with the `pulumi` CLI as a person does, `pulumi up` SIGKILLed (its whole process
// group) at a chosen moment, then what a user runs next. Each case keeps a transcript of every
// command it ran; a failing case prints its moment and what the engine said, kill included.
import { spawn } from "child_process";
import * as fs from "fs";
import * as path from "path";
import { PROVIDER_PROCESS_TITLE } from "../../../provider/hosts/engineWatch";
import { type Delays, NO_DELAYS, Simulator } from "../../../simulator";

const ROOT = path.join(__dirname, "..", "..", "..");

// JavaScript, not TypeScript: what these suites test is the engine being killed, and ts-node's
// type check costs each `up` about 2 s of CPU. The examples' suites run TypeScript programs.
const PROGRAM = `const pulumi = require("@pulumi/pulumi");
const { ServiceFork, ServiceHA, VpcName } = require("pulumi-tigercloud");
const config = new pulumi.Config();
const fork = new ServiceFork("fork", { sourceServiceId: config.require("source"), forkStrategy: "NOW", name: config.require("forkName") });
const ha = new ServiceHA("ha", { serviceId: fork.serviceId, replicaCount: config.getNumber("replicas") ?? 1 });
new VpcName("vpc", { vpcId: config.require("vpc"), name: config.get("vpcName") ?? config.require("forkName") });
exports.serviceId = fork.serviceId;
exports.replicas = ha.replicaCount;
exports.uri = fork.connectionUri;
`;

export interface Run {
  status: number | null;
  output: string;
}

export const tally = {
  kills: 0,
  updateKills: 0,
  destroyKills: 0,
  loginsAfterRecovery: 0,
  duplicates: 0,
  missingFromState: 0,
  providersLeft: 0,
  idleSdkProvidersLeft: 0,
  /** Empty `.attrs` sidecars a kill left in the file backend, removed as docs/pr-databases.md says. */
  emptySidecarsRemoved: 0,
  /** The engine's language hosts still running at the end (Pulumi's; they outlive a killed `up`). */
  languageHostsLeft: 0,
};

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** One suite's simulator and project directory; `start` and `stop` go in beforeAll/afterAll. */
export class KillLab {
  sim!: Simulator;
  dir = "";
  private env: NodeJS.ProcessEnv = {};
  /** Every command of the running case, with what it printed: a failure's evidence. */
  private transcript: string[] = [];

  constructor(private readonly delays: Partial<Delays>) {}

  async start(): Promise<void> {
    this.sim = new Simulator({ delays: { ...NO_DELAYS, ...this.delays } });
    await this.sim.start();
    fs.mkdirSync(path.join(ROOT, ".tmp"), { recursive: true });
    // Inside the repository, so that the program and the provider find this package in ./node_modules.
    this.dir = fs.mkdtempSync(path.join(ROOT, ".tmp", "kill-"));
    fs.writeFileSync(
      path.join(this.dir, "Pulumi.yaml"),
      "name: kill-e2e\nmain: index.js\nruntime:\n  name: nodejs\n  options:\n    typescript: false\n",
    );
    fs.writeFileSync(path.join(this.dir, "index.js"), PROGRAM);
    fs.mkdirSync(path.join(this.dir, "state"));
    this.env = {
      ...process.env,
      PULUMI_BACKEND_URL: `file://${path.join(this.dir, "state")}`,
      PULUMI_HOME: path.join(this.dir, "home"),
      PULUMI_CONFIG_PASSPHRASE: "kill-e2e",
      PULUMI_SKIP_UPDATE_CHECK: "true",
      TIGER_API_URL: this.sim.url,
      TIGER_API_KEY: this.sim.apiKey,
      TIGER_PROJECT_ID: this.sim.defaults().projectId,
      // As docs/pr-databases.md asks of a pipeline: every provider process watches its engine from its start.
      NODE_OPTIONS: "--require=pulumi-tigercloud/watchdog",
    };
  }

  async stop(): Promise<void> {
    await this.sim?.stop();
    if (!this.dir) return;
    // The engine's Node.js language host (Pulumi's, not ours) outlives a SIGKILLed `pulumi up`,
    // idle, for good: counted in the tally, then ended, so that runs do not pile them up.
    const hosts = this.processesIn((cmdline) => cmdline.includes("pulumi-language-nodejs"));
    tally.languageHostsLeft += hosts.length;
    for (const pid of hosts) process.kill(pid, "SIGKILL");
    fs.rmSync(this.dir, { recursive: true, force: true });
  }

  /** Processes running in this lab's directory whose command line `matches`. */
  processesIn(matches: (cmdline: string) => boolean): number[] {
    const found: number[] = [];
    for (const pid of fs
      .readdirSync("/proc")
      .filter((p) => /^\d+$/.test(p))
      .map(Number)) {
      try {
        if (fs.readlinkSync(`/proc/${pid}/cwd`) === this.dir && matches(fs.readFileSync(`/proc/${pid}/cmdline`, "utf8"))) found.push(pid);
      } catch {
        // gone meanwhile
      }
    }
    return found;
  }

  /** Runs one case; a failure is rethrown with the case's moment and its transcript. */
  async inCase(moment: string, body: () => Promise<void>): Promise<void> {
    this.transcript = [];
    try {
      await body();
      // KILL_TRANSCRIPTS=FILE keeps each passing case's commands too: which way recovery went.
      if (process.env.KILL_TRANSCRIPTS)
        fs.appendFileSync(
          process.env.KILL_TRANSCRIPTS,
          `==== killed ${moment}\n${this.transcript.map((t) => t.split("\n")[0]).join("\n")}\n`,
        );
    } catch (err) {
      const e = err as Error;
      e.message = `killed ${moment}: ${e.message}\n\n---- what the engine printed, command by command ----\n${this.transcript.join("\n")}`;
      throw e;
    }
  }

  /** Starts `pulumi ...` in a process group of its own; `kill()` SIGKILLs the whole group. */
  spawnPulumi(args: string[], options: { secretOutput?: boolean } = {}): { done: Promise<Run>; kill: () => void } {
    const child = spawn("pulumi", [...args, "--non-interactive"], { cwd: this.dir, env: this.env, detached: true });
    let output = "";
    let killed = false;
    const began = Date.now();
    child.stdout.on("data", (c: Buffer) => (output += c.toString()));
    child.stderr.on("data", (c: Buffer) => (output += c.toString()));
    const done = new Promise<Run>((resolve) =>
      child.on("close", (status) => {
        const shown = options.secretOutput ? "(output withheld: it holds a secret)" : output.trimEnd();
        const how = killed ? "was killed" : `exited ${status}`;
        this.transcript.push(`$ pulumi ${args.join(" ")}   # ${how} after ${Date.now() - began} ms\n${shown}`);
        resolve({ status, output });
      }),
    );
    return {
      done,
      kill: () => {
        killed = true;
        process.kill(-(child.pid as number), "SIGKILL");
      },
    };
  }

  pulumi(...args: string[]): Promise<Run> {
    return this.spawnPulumi(args).done;
  }

  async ok(...args: string[]): Promise<string> {
    const r = await this.pulumi(...args);
    if (r.status !== 0) throw new Error(`pulumi ${args.join(" ")} exited ${r.status}:\n${r.output}`);
    return r.output;
  }

  /** Resolves once `what` holds; fails naming the requests seen, after `timeoutMs`. */
  async until(what: () => boolean, timeoutMs = 60_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!what()) {
      if (Date.now() > deadline)
        throw new Error(
          `timed out waiting for a moment to kill; requests so far: ${this.sim
            .requests()
            .map((r) => r.operation)
            .join(", ")}`,
        );
      await sleep(20);
    }
  }

  /** Resolves once `operation` is sent again, counting from the call. */
  sentFromNow(operation: "setHA" | "renameVpc"): Promise<void> {
    const count = this.sim.requests(operation).length;
    return this.until(() => this.sim.requests(operation).length > count);
  }

  sent(operation: "forkService" | "setHA", name?: string): boolean {
    return this.sim.requests(operation).some((r) => name === undefined || (r.body as { name?: string } | undefined)?.name === name);
  }

  forksNamed(name: string) {
    return this.sim.services(this.sim.defaults().projectId).filter((s) => s.name === name);
  }

  /**
   * Dynamic-provider processes of this lab's engine still running: `ours` had loaded this package
   * (it renames its process, see provider/hosts/engineWatch.ts); `idle` never got a request, so
   * never ran our code: the SDK's provider process, killed with its engine before its first call.
   */
  providersLeft(): { ours: number[]; idle: number[] } {
    return {
      ours: this.processesIn((cmdline) => cmdline.startsWith(PROVIDER_PROCESS_TITLE)),
      idle: this.processesIn((cmdline) => !cmdline.startsWith(PROVIDER_PROCESS_TITLE) && cmdline.includes("cmd/dynamic-provider")),
    };
  }

  /** The provider processes outlive their killed engine by at most a few seconds (they check every second). */
  async expectNoProviderLeft(): Promise<void> {
    const deadline = Date.now() + 10_000;
    let left = this.providersLeft();
    while ((left.ours.length > 0 || left.idle.length > 0) && Date.now() < deadline) {
      await sleep(100);
      left = this.providersLeft();
    }
    tally.providersLeft += left.ours.length;
    tally.idleSdkProvidersLeft += left.idle.length;
    for (const pid of [...left.ours, ...left.idle]) process.kill(pid, "SIGKILL");
    expect(left).toEqual({ ours: [], idle: [] });
  }

  /**
   * Runs `pulumi <args>` as a person does after a cancelled pipeline (docs/pr-databases.md, "After a cancelled or
   * killed run"): where the engine refuses, the repair it asks for, then the command again. A
   * killed run's lock: `pulumi cancel`. An empty sidecar a kill left: deleted. Pending creates
   * (`up` only): `refresh --clear-pending-creates`.
   */
  async againAfterKill(stack: string, command: "up" | "destroy"): Promise<string> {
    const repaired = new Set<string>();
    for (;;) {
      // One engine run, no preview of its own, as the PR action runs them (prDatabase/main.ts). The
      // killed `up` keeps its preview, so that its moments fall where they always did.
      const again = await this.pulumi(command, "--yes", "--skip-preview", "--stack", stack);
      if (again.status === 0) return again.output;
      if (/currently locked/.test(again.output) && !repaired.has("lock")) {
        repaired.add("lock");
        await this.ok("cancel", "--yes", "--stack", stack);
      } else if (/failed to load checkpoint: EOF/.test(again.output) && !repaired.has("sidecar")) {
        repaired.add("sidecar");
        this.removeEmptySidecars();
      } else if (command === "up" && !repaired.has("pending")) {
        repaired.add("pending");
        await this.ok("refresh", "--yes", "--skip-preview", "--clear-pending-creates", "--stack", stack);
      } else throw new Error(`pulumi ${command} exited ${again.status} after ${[...repaired].join(", ") || "no"} repair:\n${again.output}`);
    }
  }

  /** What a user runs after a cancelled pipeline: `up` again, with the repairs the engine asks for. */
  recover(stack: string): Promise<string> {
    return this.againAfterKill(stack, "up");
  }

  /**
   * The file backend (gocloud's fileblob) writes each file's metadata beside it, `<file>.attrs`, by
   * truncating and then writing it: a SIGKILL in between leaves it empty, and every later read of
   * the stack fails with "failed to load checkpoint: EOF", although the checkpoint itself, written to
   * a temporary file and renamed, is whole. Deleting the empty sidecar is safe (a missing one reads
   * as no metadata). Recorded in the transcript and the tally.
   */
  removeEmptySidecars(): string[] {
    const removed = this.stateFiles().filter((f) => f.endsWith(".attrs") && fs.statSync(f).size === 0);
    for (const file of removed) fs.rmSync(file);
    tally.emptySidecarsRemoved += removed.length;
    const shown = removed.map((f) => path.relative(this.dir, f)).join(" ");
    this.transcript.push(
      `$ rm ${shown}   # the empty .attrs sidecar(s) a kill left (docs/pr-databases.md: After a cancelled or killed run)`,
    );
    return removed;
  }

  /** The file backend's sidecars of a stack's checkpoint (`<stack>.json.attrs`). */
  sidecarsOf(stack: string): string[] {
    return this.stateFiles().filter((f) => path.basename(f) === `${stack}.json.attrs`);
  }

  /** Every file of the lab's state backend. */
  private stateFiles(): string[] {
    const root = path.join(this.dir, "state");
    return fs
      .readdirSync(root, { recursive: true })
      .map((f) => path.join(root, String(f)))
      .filter((f) => fs.statSync(f).isFile());
  }

  /**
   * `op` on a simulator without status delays (restored after it): for what only sets a case up,
   * such as the first create of a stack whose update is the one killed. The delays are there so
   * that a kill can fall at every moment of a change; a change no kill interrupts only waits on them.
   */
  async withoutDelays<T>(op: () => Promise<T>): Promise<T> {
    const delays = this.sim.delays;
    this.sim.delays = { ...NO_DELAYS };
    try {
      return await op();
    } finally {
      this.sim.delays = delays;
    }
  }

  async initStack(stack: string, forkName: string): Promise<void> {
    await this.ok("stack", "init", stack);
    const { serviceId, vpcId } = this.sim.defaults();
    await this.ok(
      "config",
      "set-all",
      "--stack",
      stack,
      "--plaintext",
      `source=${serviceId}`,
      "--plaintext",
      `forkName=${forkName}`,
      "--plaintext",
      `vpc=${vpcId}`,
    );
  }

  /** Runs `pulumi up`, SIGKILLs its process group once `moment` resolves, and checks that no
   *  provider process outlives its engine by more than a few seconds. */
  async killUpAt(stack: string, moment: () => Promise<void>): Promise<void> {
    const run = this.spawnPulumi(["up", "--yes", "--stack", stack]);
    const ended = await Promise.race([moment().then(() => false), run.done.then(() => true)]).catch(async (err: Error) => {
      run.kill();
      await run.done;
      throw err;
    });
    if (ended) throw new Error("pulumi up ended before the moment to kill it");
    run.kill();
    await run.done;
    tally.kills++;
    await this.expectNoProviderLeft();
  }

  /** The stack's state and its outputs, secrets shown (the transcript withholds them): one CLI run for both. */
  async stateAndOutputs(stack: string): Promise<{ state: string; outputs: { serviceId?: string; replicas?: number; uri?: string } }> {
    const r = await this.spawnPulumi(["stack", "export", "--show-secrets", "--stack", stack], { secretOutput: true }).done;
    if (r.status !== 0) throw new Error(`pulumi stack export exited ${r.status}`);
    const resources = (JSON.parse(r.output) as { deployment: { resources?: { type: string; outputs?: Record<string, unknown> }[] } })
      .deployment.resources;
    // A secret shown by the export: Pulumi's secret signature beside its value, as JSON text.
    const shown = (v: unknown) =>
      typeof v === "object" && v !== null && typeof (v as { plaintext?: unknown }).plaintext === "string"
        ? (JSON.parse((v as { plaintext: string }).plaintext) as unknown)
        : v;
    const outputs = resources?.find((x) => x.type === "pulumi:pulumi:Stack")?.outputs ?? {};
    return { state: r.output, outputs: Object.fromEntries(Object.entries(outputs).map(([k, v]) => [k, shown(v)])) };
  }

  /** 1 when the stack's `uri` output logs in to its fork's database (the simulator's stand-in server). */
  async logsIn(uri: string): Promise<number> {
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

  /** After recovery: one live fork of that name, READY, in state, logging in; HA and VPC as declared;
   *  with `checkNoChanges`, nothing left for the next preview or refresh to change. */
  async expectRecovered(stack: string, forkName: string, declared: { replicas: number; vpcName: string; checkNoChanges?: boolean }) {
    const live = this.forksNamed(forkName).filter((s) => s.status !== "PAUSED");
    tally.duplicates += Math.max(0, live.length - 1);
    expect(live).toHaveLength(1);
    const fork = live[0] as (typeof live)[number];
    expect(fork).toMatchObject({ status: "READY", ha_replicas: { replica_count: declared.replicas } });
    const { state, outputs } = await this.stateAndOutputs(stack);
    if (!state.includes(fork.service_id)) tally.missingFromState++;
    expect(state).toContain(fork.service_id);
    // The recovered fork's connection string logs in (an adopted fork's password was reset).
    tally.loginsAfterRecovery += await this.logsIn(outputs.uri ?? "");
    expect(this.sim.vpc(this.sim.defaults().projectId, this.sim.defaults().vpcId)?.name).toBe(declared.vpcName);
    expect(outputs.replicas).toBe(declared.replicas);
    if (declared.checkNoChanges) {
      await this.ok("preview", "--expect-no-changes", "--stack", stack);
      await this.ok("refresh", "--yes", "--skip-preview", "--expect-no-changes", "--stack", stack);
    }
    return fork;
  }

  /** The outputs the stack's state records for the resource named `name` in the program. */
  async recordedOutputs(stack: string, name: string): Promise<Record<string, unknown>> {
    let exported = await this.pulumi("stack", "export", "--stack", stack);
    // Read right after a kill: the repair docs/pr-databases.md gives for an empty sidecar comes first.
    if (/failed to load checkpoint: EOF/.test(exported.output)) {
      this.removeEmptySidecars();
      exported = await this.pulumi("stack", "export", "--stack", stack);
    }
    if (exported.status !== 0) throw new Error(`pulumi stack export exited ${exported.status}:\n${exported.output}`);
    const state = JSON.parse(exported.output) as {
      deployment: { resources?: { urn: string; outputs?: Record<string, unknown> }[] };
    };
    const resource = (state.deployment.resources ?? []).find((r) => r.urn.endsWith(`::${name}`));
    if (!resource) throw new Error(`no resource "${name}" in the state of stack ${stack}`);
    return resource.outputs ?? {};
  }

  /** Destroys the stack; with `killAfterMs`, first kills a destroy that long after its first API
   *  change (HA being reset or the fork stopped), then destroys again as a person would. Ends with
   *  the fork stopped, its HA reset and no resource of ours in state. */
  async destroyStack(stack: string, forkName: string, serviceId: string, killAfterMs?: number) {
    if (killAfterMs !== undefined) {
      const destroying = this.spawnPulumi(["destroy", "--yes", "--skip-preview", "--stack", stack]);
      const before = this.sim.requests().length;
      await this.until(() =>
        this.sim
          .requests()
          .slice(before)
          .some((r) => r.method === "POST"),
      );
      await sleep(killAfterMs);
      destroying.kill();
      await destroying.done;
      tally.destroyKills++;
      await this.expectNoProviderLeft();
      await this.againAfterKill(stack, "destroy");
    } else {
      await this.ok("destroy", "--yes", "--skip-preview", "--stack", stack);
    }
    expect(this.forksNamed(forkName).map((s) => s.status)).toEqual(["PAUSED"]);
    expect(this.sim.service(this.sim.defaults().projectId, serviceId)?.ha_replicas).toEqual({ replica_count: 0, sync_replica_count: 0 });
    // No resource left in state. (A killed destroy may leave the engine's note of the delete it
    // was doing, `pending_operations`: bookkeeping that names the resource, not a resource.)
    const after = JSON.parse(await this.ok("stack", "export", "--stack", stack)) as { deployment: { resources?: { type: string }[] } };
    expect((after.deployment.resources ?? []).filter((r) => r.type.includes("tigercloud"))).toEqual([]);
  }
}

/** A suite's lab: started before its cases, stopped after them, with the tally printed (the figures for the closing note). */
export function useKillLab(suite: string): KillLab {
  jest.setTimeout(600_000);
  // Status delays long enough that every moment of a create or an update can be hit.
  const lab = new KillLab({ forkQueuedMs: 1500, forkConfiguringMs: 1500, setHAMs: 1500, stopMs: 500 });
  beforeAll(() => lab.start());
  afterAll(async () => {
    await lab.stop();
    process.stdout.write(`kill test (${suite}): ${JSON.stringify(tally)}\n`);
  });
  return lab;
}
