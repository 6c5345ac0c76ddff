// End-to-end harness: the real Pulumi engine (the `pulumi` CLI, through the Automation API) runs
// inline programs against the simulator. Each harness has its own file backend and PULUMI_HOME in
// a temporary directory inside the repository, so that the engine's provider process, which
// loads this package by name from the program's directory, finds it in ./node_modules.
import { execFileSync } from "child_process";
import * as fs from "fs";
import * as path from "path";
import { type EngineEvent, LocalWorkspace, PulumiCommand, type PulumiFn, Stack, type UpOptions } from "@pulumi/pulumi/automation";
import type { DatabaseMode } from "../../../simulator";
import { NO_DELAYS, type Delays, type LoggedRequest, Simulator } from "../../../simulator";
import { isolateEngineClients } from "../../../scripts/inlinePrograms";

isolateEngineClients();

const REPO = path.join(__dirname, "..", "..", "..");
export const PASSPHRASE = "e2e-test-passphrase";

// One handle on the CLI for every workspace of the process: LocalWorkspace.create otherwise runs
// `pulumi version` for each stack.
let pulumiCommand: Promise<PulumiCommand> | undefined;
const sharedPulumiCommand = () => (pulumiCommand ??= PulumiCommand.get({ skipVersionCheck: true }));

/** The signature Pulumi's state gives a secret value (`{ [SIG]: SECRET_SIG, ciphertext }`). */
const SECRET_SIG = ["4dabf18193072939515e22adb298388d", "1b47061264138c4ac30d75fd1eb44270"] as const;

export interface EngineHarness {
  sim: Simulator;
  ids: { projectId: string; serviceId: string; vpcId: string };
  dir: string;
  /** A stack running `program`. `env` adds to (or with undefined, removes from) the CLI's
   *  environment; `project` names the project (config keys are namespaced by it). */
  stack(name: string, program: PulumiFn, options?: { env?: Record<string, string | undefined>; project?: string }): Promise<Scenario>;
  close(): Promise<void>;
}

export interface Scenario {
  /** Automation's stack. Its up, refresh and destroy return no outputs or summary (skipped: CLI
   *  runs no test reads); the scenario's own methods give them. */
  stack: Stack;
  /** Runs the next operations with another program (same stack, same state). */
  setProgram(program: PulumiFn): void;
  preview(): Promise<Outcome & { changes: Record<string, number> }>;
  /** `outputs` is read when first touched (one `stack output` run), and must be read before the
   *  stack's next operation. */
  up(options?: UpOptions): Promise<Outcome & { readonly outputs: Outputs }>;
  refresh(): Promise<Outcome & { changes: Record<string, number> }>;
  destroy(): Promise<Outcome>;
  /** The stack's state file as stored by the backend (what an attacker with the bucket reads). */
  rawState(): string;
  /** `pulumi stack export` as a person runs it (no --show-secrets). */
  exportWithCli(): string;
  /** The `pulumi` CLI on this stack, as a person runs it: its standard output. */
  cli(args: string[]): string;
  /** The Automation API's export, which runs `stack export --show-secrets`: secrets in plaintext. */
  exportState(): Promise<{
    resources?: { urn: string; type: string; id?: string; outputs?: Record<string, unknown>; inputs?: Record<string, unknown> }[];
  }>;
}

export type Outputs = Record<string, { value: unknown; secret: boolean }>;

export interface Outcome {
  /** What the engine printed. */
  stdout: string;
  /** The API requests the operation made. */
  requests: LoggedRequest[];
}

/** `databases: "postgres"` puts a real PostgreSQL server behind every service (simulator/databases.ts). */
export async function startEngine(
  delays: Partial<Delays> = NO_DELAYS,
  options: { databases?: DatabaseMode; eventsRows?: number | undefined } = {},
): Promise<EngineHarness> {
  const sim = new Simulator({
    delays: { ...NO_DELAYS, ...delays },
    databases: options.databases ?? "stand-in",
    eventsRows: options.eventsRows,
  });
  await sim.start();
  fs.mkdirSync(path.join(REPO, ".tmp"), { recursive: true });
  const dir = fs.mkdtempSync(path.join(REPO, ".tmp", "e2e-"));
  const backend = path.join(dir, "state");
  const home = path.join(dir, "home");
  fs.mkdirSync(backend);
  fs.mkdirSync(home);
  const ids = sim.defaults();

  const baseEnv: Record<string, string> = {
    TIGER_API_URL: sim.url,
    TIGER_API_KEY: sim.apiKey,
    TIGER_PROJECT_ID: ids.projectId,
    PULUMI_CONFIG_PASSPHRASE: PASSPHRASE,
    PULUMI_SKIP_UPDATE_CHECK: "true",
    PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION: "true",
    PULUMI_AUTOMATION_API_SKIP_VERSION_CHECK: "false",
  };

  async function stack(
    name: string,
    program: PulumiFn,
    options: { env?: Record<string, string | undefined>; project?: string } = {},
  ): Promise<Scenario> {
    const env = options.env ?? {};
    const project = options.project ?? "e2e";
    const workDir = path.join(dir, name);
    fs.mkdirSync(workDir, { recursive: true });
    const envVars = Object.fromEntries(Object.entries({ ...baseEnv, ...env }).filter((e): e is [string, string] => e[1] !== undefined));
    // Variables removed for this stack must not leak in from the test process either.
    const removed = Object.keys(env).filter((k) => env[k] === undefined);
    const saved = removed.map((k) => [k, process.env[k]] as const);
    const ws = await LocalWorkspace.create({
      workDir,
      program,
      pulumiHome: home,
      envVars,
      pulumiCommand: await sharedPulumiCommand(),
      projectSettings: { name: project, runtime: "nodejs", backend: { url: `file://${backend}` } },
    });
    const s = await Stack.create(name, ws);
    const during = async <T>(op: () => Promise<T>): Promise<T> => {
      for (const k of removed) delete process.env[k];
      try {
        return await op();
      } finally {
        for (const [k, v] of saved) if (v !== undefined) process.env[k] = v;
      }
    };
    const cli = (args: string[]) =>
      execFileSync("pulumi", [...args, "--stack", name], {
        cwd: workDir,
        encoding: "utf8",
        env: { ...process.env, ...envVars, PULUMI_HOME: home },
      });
    // Automation's up, refresh and destroy end with CLI runs no test reads: `stack history`, for a
    // summary, and after up `stack output` twice (masked, then shown), each run decrypting the
    // stack's secrets. Skipped for every call, the scenario's and a test's own on `stack`: the
    // scenario reads an up's outputs once, when a test asks, and a refresh's changes from its events.
    let operations = 0;
    for (const op of ["up", "refresh", "destroy"] as const) {
      const automation = s[op].bind(s) as (options?: object) => Promise<unknown>;
      (s as unknown as Record<string, unknown>)[op] = async (options?: object) => {
        operations++;
        const { info, outputs } = s;
        s.info = async () => undefined;
        s.outputs = async () => ({});
        try {
          return await automation(options);
        } finally {
          Object.assign(s, { info, outputs });
        }
      };
    }
    const logged = async <T>(op: () => Promise<T>): Promise<[T, LoggedRequest[]]> => {
      sim.clearLog();
      const result = await during(op);
      return [result, sim.requests()];
    };
    /** The outputs as Automation gives them: values shown, and which are secret, read from the
     *  state (where a secret is stored under Pulumi's secret signature, as ciphertext). */
    const readOutputs = (): Outputs => {
      const state = JSON.parse(rawState()) as {
        checkpoint: { latest?: { resources?: { type: string; outputs?: Record<string, unknown> }[] } };
      };
      const stored = state.checkpoint.latest?.resources?.find((r) => r.type === "pulumi:pulumi:Stack")?.outputs ?? {};
      const isSecret = (v: unknown) =>
        typeof v === "object" && v !== null && (v as Record<string, unknown>)[SECRET_SIG[0]] === SECRET_SIG[1];
      // Without a secret anywhere, the state holds the values as the CLI would show them: no CLI run
      // (each one that shows secrets derives the passphrase's key).
      const shown = JSON.stringify(stored).includes(SECRET_SIG[0])
        ? (JSON.parse(cli(["stack", "output", "--json", "--show-secrets"])) as Record<string, unknown>)
        : stored;
      return Object.fromEntries(Object.entries(shown).map(([k, value]) => [k, { value, secret: isSecret(stored[k]) }]));
    };
    const rawState = () => fs.readFileSync(path.join(backend, ".pulumi", "stacks", project, `${name}.json`), "utf8");
    return {
      stack: s,
      setProgram: (p) => {
        ws.program = p;
      },
      async preview() {
        const [r, requests] = await logged(() => s.preview());
        return { stdout: r.stdout, changes: r.changeSummary as Record<string, number>, requests };
      },
      async up(options) {
        const [r, requests] = await logged(() => s.up(options));
        const after = operations;
        let outputs: Outputs | undefined;
        return {
          stdout: r.stdout,
          requests,
          get outputs() {
            if (!outputs && operations !== after) throw new Error("an up's outputs are read before the stack's next operation");
            return (outputs ??= readOutputs());
          },
        };
      },
      async refresh() {
        let changes: Record<string, number> | undefined;
        const onEvent = (e: EngineEvent) => {
          if (e.summaryEvent) changes = e.summaryEvent.resourceChanges as Record<string, number>;
        };
        const [r, requests] = await logged(() => s.refresh({ onEvent }));
        if (!changes) throw new Error("the engine's events of a refresh held no summary");
        return { stdout: r.stdout, changes, requests };
      },
      async destroy() {
        const [r, requests] = await logged(() => s.destroy());
        return { stdout: r.stdout, requests };
      },
      rawState,
      exportWithCli: () => cli(["stack", "export"]),
      cli,
      async exportState() {
        return (await s.exportStack()).deployment as Awaited<ReturnType<Scenario["exportState"]>>;
      },
    };
  }

  return {
    sim,
    ids,
    dir,
    stack,
    async close() {
      await sim.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The tarball `npm pack` made of this package, which scripts/with-pulumi.js packs once per run. */
export function packedTarball(): string {
  const tarball = process.env.PULUMI_TIGERCLOUD_TARBALL;
  if (!tarball || !fs.existsSync(tarball))
    throw new Error("run under `node scripts/with-pulumi.js --pack` (as npm test does), which packs the package once");
  return tarball;
}

/** The package as a user's program imports it: by name, from node_modules (the build in dist/). */
export function tigercloud(): typeof import("pulumi-tigercloud") {
  return require("pulumi-tigercloud");
}

/** The write requests among `requests` (every request but a GET: a POST or a DELETE), by operation: what an operation changed. */
export const writes = (requests: LoggedRequest[]): string[] => requests.filter((r) => r.method !== "GET").map((r) => r.operation);

/** A fork made through the API directly, as the console or the tiger CLI would: its 202 answer (and password) is not Pulumi's. */
export async function forkThroughApi(h: EngineHarness, parent: string, name: string, extra: Record<string, string> = {}): Promise<string> {
  const answer = await fetch(`${h.sim.url}/projects/${h.ids.projectId}/services/${parent}/forkService`, {
    method: "POST",
    headers: { Authorization: `Bearer ${h.sim.apiKey}`, "Content-Type": "application/json" },
    body: JSON.stringify({ fork_strategy: "NOW", name, ...extra }),
  });
  const id = ((await answer.json()) as { service_id: string }).service_id;
  await h.sim.databases.settled(id);
  return id;
}
