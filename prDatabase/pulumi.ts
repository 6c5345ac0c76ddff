// The action's Pulumi side: the YAML program it writes for each run (one ServiceFork on the plugin of
// the action's version), and the CLI runs that drive it, a stack's lock waited through.
import { spawn } from "child_process";
import { z } from "zod";
import { messageOf, printable } from "../provider/text";
import { ActionError, type Inputs } from "./inputs";

/** How long to wait for a stack another run holds (a push and the nightly pause, say). */
const LOCK_WAIT_MS = Number(process.env.PR_DATABASE_LOCK_WAIT_SECONDS ?? 1800) * 1000;

const say = (line: string) => process.stdout.write(`${line}\n`);

/** A value in a YAML program's text: pulumi-yaml reads `$$` as `$` (and `${…}` as a reference), so every `$` is written `$$`. */
const escapedForYaml = (v: unknown): unknown =>
  typeof v === "string"
    ? v.split("$").join("$$")
    : Array.isArray(v)
      ? v.map(escapedForYaml)
      : typeof v === "object" && v !== null
        ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, escapedForYaml(x)]))
        : v;

/** The plugin, at the action's version, from the project's release: every program's resource options. */
const pluginOptions = (inputs: Inputs) => ({ version: inputs.version, pluginDownloadURL: inputs["plugin-download-url"] });

/** A program's text. JSON is YAML: the engine reads it as the program. */
const asProgram = (
  description: string,
  config: Record<string, unknown>,
  resources: Record<string, unknown>,
  outputs: Record<string, string>,
) => `${JSON.stringify({ name: "pr-database", description, runtime: "yaml", config, resources, outputs }, null, 2)}\n`;

/**
 * A pull request's program: one fork, prepared as `preparation` says, deleted with its stack. At
 * night there is no preparation to give (the night changes only `paused`): the one each fork
 * recorded is kept. What its source is (production, or a golden fork and when its data was taken)
 * is config, handed back as outputs: each job is a fresh runner, and reads it from there.
 */
export function programText(inputs: Inputs, preparation: Record<string, unknown> | undefined, nightly: boolean): string {
  const properties = {
    sourceServiceId: "${sourceServiceId}",
    forkStrategy: "NOW",
    name: "${forkName}",
    paused: "${paused}",
    environmentTag: "DEV",
    onDestroy: "delete",
    expires: escapedForYaml(inputs.expires),
    ...(preparation && !nightly ? { prepare: escapedForYaml(preparation) } : {}),
  };
  return asProgram(
    "A pull request's database: a fork of the source, prepared before anyone gets its URL (actions/pr-database).",
    {
      sourceServiceId: { type: "string" },
      forkName: { type: "string" },
      paused: { type: "boolean", default: false },
      goldenSource: { type: "boolean", default: false },
      dataTakenAt: { type: "string", default: "" },
      goldenDigest: { type: "string", default: "" },
    },
    {
      database: {
        type: "tigercloud:index:ServiceFork",
        options: { ...pluginOptions(inputs), ...(nightly ? { ignoreChanges: ["prepare"] } : {}) },
        properties,
      },
    },
    {
      serviceId: "${database.serviceId}",
      sourceServiceId: "${sourceServiceId}",
      goldenSource: "${goldenSource}",
      dataTakenAt: "${dataTakenAt}",
      goldenDigest: "${goldenDigest}",
      databaseUrl: "${database.connectionUri}",
      created: "${database.created}",
      expiresAt: "${database.expiresAt}",
      prepared: "${database.prepared}",
      maskedSource: "${database.maskedSource}",
    },
  );
}

/**
 * The golden fork's program: one fork of production, prepared by the default branch's rules, then
 * stopped until something forks it. Its resource is named by its generation (when it was made):
 * a refresh declares a new one, which the engine creates, prepares and checks before it deletes
 * the old one at the update's end; when the new one fails, the update stops there, and the old
 * one, still in state and in the stack's outputs, keeps serving.
 */
export function goldenProgramText(inputs: Inputs, preparation: Record<string, unknown>, generation: string): string {
  return asProgram(
    "A golden fork: production masked once, the source of pull requests' databases (actions/pr-database, golden: true).",
    { sourceServiceId: { type: "string" }, forkName: { type: "string" } },
    {
      [`golden-${generation}`]: {
        type: "tigercloud:index:ServiceFork",
        options: pluginOptions(inputs),
        properties: {
          sourceServiceId: "${sourceServiceId}",
          forkStrategy: "NOW",
          name: "${forkName}",
          paused: true,
          environmentTag: "DEV",
          onDestroy: "delete",
          prepare: escapedForYaml(preparation),
        },
      },
    },
    {
      serviceId: `\${golden-${generation}.serviceId}`,
      sourceServiceId: "${sourceServiceId}",
      generation,
      created: `\${golden-${generation}.created}`,
      prepared: `\${golden-${generation}.prepared}`,
    },
  );
}

export interface Ran {
  status: number;
  output: string;
}

/** Runs `pulumi`, its output shown as it comes (never a secret: the URL is read with --show-secrets only where quiet). */
export function pulumi(args: string[], cwd: string, env: NodeJS.ProcessEnv, quiet = false): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const child = spawn("pulumi", [...args, "--non-interactive"], { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    const take = (chunk: Buffer) => {
      output += chunk.toString();
      if (!quiet) process.stdout.write(chunk);
    };
    child.stdout.on("data", take);
    child.stderr.on("data", take);
    child.on("error", (err) =>
      reject(new ActionError(`pulumi could not be run (${messageOf(err)}): the action's pulumi/actions step puts it on PATH`)),
    );
    child.on("close", (code) => resolve({ status: code ?? 1, output }));
  });
}

/** `pulumi ARGS`, failing with its message unless it exits 0. */
export async function pulumiOk(args: string[], cwd: string, env: NodeJS.ProcessEnv, quiet = false): Promise<string> {
  const ran = await pulumi(args, cwd, env, quiet);
  if (ran.status !== 0) {
    const said = ran.output.trim().split("\n").slice(-5).join(" / ");
    throw new ActionError(
      `pulumi ${args.slice(0, 2).join(" ")} failed (exit ${ran.status})${quiet && said ? `: ${printable(said)}` : ": see above"}`,
    );
  }
  return ran.output;
}

/** A failed run of the engine, with what it said (the caller names the cause). */
export class EngineFailure extends ActionError {
  constructor(
    message: string,
    readonly output: string,
  ) {
    super(message);
  }
}

/** What pulumi says of a stack whose lock another run holds (the DIY backends, and Pulumi Cloud). */
const HELD = /currently locked|Another update is currently in progress/;

const stillLocked = (stack: string, waited: number) =>
  new ActionError(
    `stack ${stack} is still locked after ${waited} s. If no other run is working on it (a run cancelled half-way leaves its lock), ` +
      `clear it with \`pulumi cancel --stack ${stack} --yes\` and run this job again.`,
  );

/** A command that takes the stack's lock; while another run holds it, waits and tries again (at most LOCK_WAIT_MS). */
export async function locked(stack: string, args: string[], cwd: string, env: NodeJS.ProcessEnv): Promise<void> {
  const started = Date.now();
  for (;;) {
    const ran = await pulumi(args, cwd, env);
    if (ran.status === 0) return;
    if (!HELD.test(ran.output))
      throw new EngineFailure(`pulumi ${args[0]} of stack ${stack} failed (exit ${ran.status}): see above`, ran.output);
    const waited = Math.round((Date.now() - started) / 1000);
    if (Date.now() - started >= LOCK_WAIT_MS) throw stillLocked(stack, waited);
    say(`another run holds stack ${stack}; waiting (${waited} s so far)`);
    await new Promise((r) => setTimeout(r, 5000));
  }
}

/** How selectOrCreate waits for a lock: for at most `limitMs` in all, trying again every `everyMs`. */
export interface LockWait {
  limitMs: number;
  everyMs: number;
}

/**
 * Selects `stack`, made first if new; two runs making it at once both end with it selected. While
 * another run holds the stack's lock (the other of two runs that made it at once, already updating
 * it), pulumi refuses to select it: the lock is waited out, tried again every `wait.everyMs`, and
 * once `wait.limitMs` have gone by, an error says how to clear a lock that no run holds.
 */
export async function selectOrCreate(
  stack: string,
  cwd: string,
  env: NodeJS.ProcessEnv,
  wait: LockWait = { limitMs: LOCK_WAIT_MS, everyMs: 2000 },
): Promise<void> {
  const started = Date.now();
  for (;;) {
    let ran = await pulumi(["stack", "select", "--create", stack], cwd, env, true);
    // Made meanwhile by another run: selected as it is.
    if (ran.status !== 0 && /already exists/.test(ran.output)) ran = await pulumi(["stack", "select", stack], cwd, env, true);
    if (ran.status === 0) return;
    // Two runs making it at once: one read the stack's file while the other was writing it (a select is safe to repeat).
    const halfWritten = /could not create stack: unexpected end of JSON input/.test(ran.output);
    if (!HELD.test(ran.output) && !halfWritten)
      throw new ActionError(
        `pulumi stack select failed (exit ${ran.status}): ${printable(ran.output.trim().split("\n").slice(-5).join(" / "))}`,
      );
    const waited = Math.round((Date.now() - started) / 1000);
    if (Date.now() - started >= wait.limitMs) throw stillLocked(stack, waited);
    say(`another run holds stack ${stack}; waiting to select it (${waited} s so far)`);
    await new Promise((r) => setTimeout(r, wait.everyMs));
  }
}

/** This project's stacks in the backend, by name (another project's are named with a "/"). */
export async function stackNames(cwd: string, env: NodeJS.ProcessEnv): Promise<string[]> {
  const listed = JSON.parse(await pulumiOk(["stack", "ls", "--json"], cwd, env, true)) as { name: string }[];
  return listed.map((s) => s.name);
}

/** A stack's outputs (quiet: they may hold a URL). */
export async function stackOutputs(stack: string, cwd: string, env: NodeJS.ProcessEnv): Promise<unknown> {
  return JSON.parse(await pulumiOk(["stack", "output", "--stack", stack, "--json", "--show-secrets"], cwd, env, true));
}

const ExportSchema = z.looseObject({
  deployment: z.looseObject({
    resources: z
      .array(
        z.looseObject({
          type: z.string(),
          delete: z.boolean().optional(),
          inputs: z
            .looseObject({
              sourceServiceId: z.unknown().optional(),
              prepare: z.looseObject({ mask: z.array(z.unknown()).optional() }).nullish(),
            })
            .optional(),
        }),
      )
      .optional(),
  }),
});

/**
 * The fork a stack's state records (its source, and whether it declared masking rules): the truth
 * where outputs were never written (a first up that failed) or are stale (a replacement that
 * failed); undefined when it holds none.
 */
export async function recordedFork(
  stack: string,
  cwd: string,
  env: NodeJS.ProcessEnv,
): Promise<{ sourceServiceId: string; masks: boolean } | undefined> {
  const exported = ExportSchema.parse(JSON.parse(await pulumiOk(["stack", "export", "--stack", stack], cwd, env, true)));
  // The live one: after a replacement that failed, the one it was to replace waits marked for deletion.
  const fork = exported.deployment.resources?.find((r) => r.type === "tigercloud:index:ServiceFork" && r.delete !== true);
  const source = fork?.inputs?.sourceServiceId;
  if (typeof source !== "string" || source === "") return undefined;
  return { sourceServiceId: source, masks: (fork?.inputs?.prepare?.mask?.length ?? 0) > 0 };
}

/** This repository's PR stacks in the backend: their numbers (another repository's, of the same backend, are not ours). */
export async function prNumbers(suffix: string, cwd: string, env: NodeJS.ProcessEnv): Promise<number[]> {
  const numbers: number[] = [];
  for (const name of await stackNames(cwd, env)) {
    const m = /^pr-([0-9]+)\.(.+)$/.exec(name.replace(/^.*\//, ""));
    // Only this project's stacks are named without a "/".
    if (m && m[2] === suffix && !name.includes("/")) numbers.push(Number(m[1]));
  }
  return numbers.sort((a, b) => a - b);
}
