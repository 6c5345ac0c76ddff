// The PR database, one step of a user's workflow (actions/pr-database): on a pull request's open,
// push or reopen, a fork of the source, prepared as the repository's rules file says (masking, SQL,
// jobs paused), its URL masked in the log and handed to the job's later steps; on its close, the
// fork deleted and its stack removed; at night (schedule, workflow_dispatch), every PR's fork
// paused, then the project's forks listed and swept (tigercloud-forks). Run from the plugin's
// archive, with its own Node.js:
//   pulumi plugin run --kind resource tigercloud -- pr-database
// It carries its own program: a YAML program on this plugin, written for each run (one Pulumi
// project, pr-database; one stack, and one fork, per pull request: pr-<number>.<owner>.<repo>),
// so that a user copies no program and no script.
import { spawn } from "child_process";
import * as fs from "fs";
import * as path from "path";
import { z } from "zod";
import { messageOf, printable } from "../provider/text";
import { PreparationSchema } from "../provider/resources/serviceFork/preparation";
import { main as forks } from "./cli";

/**
 * What the action reads from the secrets it is given (toJSON(secrets)); nothing else is used. The
 * key pair, never a bearer TIGER_API_KEY, which expires.
 */
export const SETTINGS = [
  "TIGER_PUBLIC_KEY",
  "TIGER_SECRET_KEY",
  "TIGER_API_URL",
  "TIGER_PROJECT_ID",
  "PULUMI_BACKEND_URL",
  "PULUMI_CONFIG_PASSPHRASE",
  "PULUMI_ACCESS_TOKEN",
  "GITHUB_TOKEN",
] as const;

const REPOSITORY = /^[A-Za-z0-9_-]+\/[A-Za-z0-9._-]+$/;
/** How long to wait for a stack another run holds (a push and the nightly pause, say). */
const LOCK_WAIT_MS = Number(process.env.PR_DATABASE_LOCK_WAIT_SECONDS ?? 1800) * 1000;

const InputsSchema = z.object({
  command: z.enum(["auto", "up", "destroy", "nightly"], { error: 'command must be "auto", "up", "destroy" or "nightly"' }),
  sourceServiceId: z.string().regex(/^[^\s/]{1,128}$/, { error: "source-service-id must be a service ID, such as svc-1234567890" }),
  prepare: z.string(),
  expires: z.string(),
  requireMasking: z.enum(["true", "false"], { error: 'require-masking must be "true" or "false"' }),
  olderThan: z.string(),
  version: z.string().regex(/^[0-9]+\.[0-9]+\.[0-9]+/, { error: "the plugin's version is not known" }),
  pluginDownloadUrl: z.string().min(1),
});
type Inputs = z.output<typeof InputsSchema>;

/** The rules file: what the fork's `prepare` gets (its rules, checked here as preview checks them), and SQL files read into it. */
const RulesFileSchema = z.looseObject({
  sqlFiles: z.array(z.string(), { error: "sqlFiles must be a list of paths" }).optional(),
});

/** `file` (relative to `from`) as a path inside the workspace, or a failure naming it. */
function insideWorkspace(workspace: string, from: string, file: string, what: string): string {
  const where = path.resolve(from, file);
  const root = path.resolve(workspace);
  if (where !== root && !where.startsWith(`${root}${path.sep}`))
    throw new ActionError(`${what} ${printable(file)} is outside the repository: name a file of the repository`);
  if (!fs.existsSync(where)) throw new ActionError(`${what} ${printable(file)} does not exist in the repository`);
  return where;
}

class ActionError extends Error {}

/** The program's outputs after `up`, as `pulumi stack output --json` gives them. */
const OutputsSchema = z.object({ databaseUrl: z.string().min(1), serviceId: z.string().min(1) });

const say = (line: string) => process.stdout.write(`${line}\n`);

/** The run's inputs, from the action's environment (INPUT_*), each checked. */
function readInputs(env: NodeJS.ProcessEnv): Inputs {
  const given = {
    command: env.INPUT_COMMAND || "auto",
    sourceServiceId: env.INPUT_SOURCE_SERVICE_ID ?? "",
    prepare: env.INPUT_PREPARE ?? "",
    expires: env.INPUT_EXPIRES || "7d",
    requireMasking: env.INPUT_REQUIRE_MASKING || "true",
    olderThan: env.INPUT_OLDER_THAN || "2d",
    version: env.INPUT_VERSION ?? "",
    pluginDownloadUrl: env.INPUT_PLUGIN_DOWNLOAD_URL || "github://api.github.com/tigercloud/pulumi-tigercloud",
  };
  const parsed = InputsSchema.safeParse(given);
  if (!parsed.success) throw new ActionError(parsed.error.issues.map((i) => i.message).join("; "));
  return parsed.data;
}

/** The settings the secrets give (only SETTINGS' names), for the `pulumi` runs' environment. */
function settingsOf(secretsJson: string | undefined): Record<string, string> {
  if (!secretsJson) return {};
  let secrets: unknown;
  try {
    secrets = JSON.parse(secretsJson);
  } catch {
    throw new ActionError("secrets must be the workflow's secrets as JSON: secrets: ${{ toJSON(secrets) }}");
  }
  const found: Record<string, string> = {};
  if (typeof secrets !== "object" || secrets === null) return found;
  for (const name of SETTINGS) {
    const value = (secrets as Record<string, unknown>)[name];
    if (typeof value === "string" && value !== "") found[name] = value;
  }
  return found;
}

/** What the event asks for: the PR's number, and what to do. */
function whatToDo(inputs: Inputs, env: NodeJS.ProcessEnv): { command: "up" | "destroy" | "nightly" | "skip"; pr?: number; why?: string } {
  const event = JSON.parse(fs.readFileSync(env.GITHUB_EVENT_PATH ?? "", "utf8")) as {
    action?: string;
    number?: number;
    pull_request?: { number?: number; head?: { repo?: { full_name?: string } } };
  };
  if (env.GITHUB_EVENT_NAME === "pull_request" || env.GITHUB_EVENT_NAME === "pull_request_target") {
    const pr = event.pull_request?.number ?? event.number;
    if (typeof pr !== "number") throw new ActionError("the pull_request event carries no pull request number");
    if (event.pull_request?.head?.repo?.full_name !== env.GITHUB_REPOSITORY)
      return {
        command: "skip",
        pr,
        why:
          `Pull request #${pr} comes from a fork repository: GitHub gives its code no secrets (and pull_request_target would hand ` +
          "them to it), so it gets no database. A maintainer can push its branch to this repository to get one.",
      };
    const command = inputs.command === "auto" ? (event.action === "closed" ? "destroy" : "up") : inputs.command;
    return { command, pr };
  }
  if (inputs.command === "auto") {
    if (env.GITHUB_EVENT_NAME === "schedule" || env.GITHUB_EVENT_NAME === "workflow_dispatch") return { command: "nightly" };
    throw new ActionError(`the ${printable(env.GITHUB_EVENT_NAME ?? "")} event says nothing to do: set command (up, destroy or nightly)`);
  }
  if (inputs.command !== "nightly") throw new ActionError(`command ${inputs.command} needs a pull_request event (its number)`);
  return { command: "nightly" };
}

/** A value in a YAML program's text: pulumi-yaml reads `$$` as `$` (and `${…}` as a reference), so every `$` is written `$$`. */
const escapedForYaml = (v: unknown): unknown =>
  typeof v === "string"
    ? v.split("$").join("$$")
    : Array.isArray(v)
      ? v.map(escapedForYaml)
      : typeof v === "object" && v !== null
        ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, escapedForYaml(x)]))
        : v;

/** The fork's `prepare`, from the rules file (YAML or JSON), its SQL files read in; undefined without a file. */
function preparationFrom(file: string, workspace: string): Record<string, unknown> | undefined {
  if (file === "") return undefined;
  const where = insideWorkspace(workspace, workspace, file, "prepare: the rules file");
  // Bundled into the plugin's archive, where this runs; loaded only here (the npm package does not ship it).
  const { parse } = require("yaml") as typeof import("yaml");
  let parsed: unknown;
  try {
    parsed = parse(fs.readFileSync(where, "utf8"));
  } catch (err) {
    throw new ActionError(`prepare: ${printable(file)} is not YAML or JSON: ${printable(messageOf(err)).slice(0, 300)}`);
  }
  const rules = RulesFileSchema.safeParse(parsed ?? {});
  if (!rules.success) throw new ActionError(`prepare: ${printable(file)}: ${rules.error.issues.map((i) => i.message).join("; ")}`);
  const { sqlFiles, ...preparation } = rules.data;
  const read = (sqlFiles ?? []).map((f) =>
    fs.readFileSync(insideWorkspace(workspace, path.dirname(where), f, `prepare: ${printable(file)} names sqlFiles`), "utf8"),
  );
  const given = preparation as { sql?: unknown };
  const declared = { ...preparation, ...(read.length > 0 ? { sql: [...(Array.isArray(given.sql) ? given.sql : []), ...read] } : {}) };
  // The provider's own rules (no other key, each rule checked), so that nothing but rules reaches the program.
  const checked = PreparationSchema.safeParse(declared);
  if (!checked.success)
    throw new ActionError(
      `prepare: ${printable(file)}: ${checked.error.issues.map((i) => `${i.path.map(String).join(".") || "(the file)"} ${i.message}`).join("; ")}`,
    );
  return declared;
}

/** The program: one fork, as the rules file prepares it, deleted with its stack. */
function programText(inputs: Inputs, preparation: Record<string, unknown> | undefined, nightly: boolean): string {
  const properties = {
    sourceServiceId: "${sourceServiceId}",
    forkStrategy: "NOW",
    name: "${forkName}",
    paused: "${paused}",
    environmentTag: "DEV",
    onDestroy: "delete",
    expires: escapedForYaml(inputs.expires),
    ...(preparation ? { prepare: escapedForYaml(preparation) } : {}),
  };
  const program = {
    name: "pr-database",
    description: "A pull request's database: a fork of the source, prepared before anyone gets its URL (actions/pr-database).",
    runtime: "yaml",
    config: {
      sourceServiceId: { type: "string" },
      forkName: { type: "string" },
      paused: { type: "boolean", default: false },
    },
    resources: {
      database: {
        type: "tigercloud:index:ServiceFork",
        // At night the program comes from the default branch: a PR's own rules (its branch's) are kept.
        options: {
          version: inputs.version,
          pluginDownloadURL: inputs.pluginDownloadUrl,
          ...(nightly ? { ignoreChanges: ["prepare"] } : {}),
        },
        properties,
      },
    },
    outputs: {
      serviceId: "${database.serviceId}",
      sourceServiceId: "${sourceServiceId}",
      databaseUrl: "${database.connectionUri}",
    },
  };
  // JSON is YAML: the engine reads it as the program.
  return `${JSON.stringify(program, null, 2)}\n`;
}

interface Ran {
  status: number;
  output: string;
}

/** Runs `pulumi`, its output shown as it comes (never a secret: the URL is read with --show-secrets only where masked). */
function pulumi(args: string[], cwd: string, env: NodeJS.ProcessEnv, quiet = false): Promise<Ran> {
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
async function pulumiOk(args: string[], cwd: string, env: NodeJS.ProcessEnv, quiet = false): Promise<string> {
  const ran = await pulumi(args, cwd, env, quiet);
  if (ran.status !== 0) {
    const said = ran.output.trim().split("\n").slice(-5).join(" / ");
    throw new ActionError(
      `pulumi ${args.slice(0, 2).join(" ")} failed (exit ${ran.status})${quiet && said ? `: ${printable(said)}` : ": see above"}`,
    );
  }
  return ran.output;
}

/** A command that takes the stack's lock; while another run holds it, waits and tries again (at most LOCK_WAIT_MS). */
async function locked(stack: string, args: string[], cwd: string, env: NodeJS.ProcessEnv): Promise<void> {
  const started = Date.now();
  for (;;) {
    const ran = await pulumi(args, cwd, env);
    if (ran.status === 0) return;
    if (!/currently locked|Another update is currently in progress/.test(ran.output))
      throw new ActionError(`pulumi ${args[0]} of stack ${stack} failed (exit ${ran.status}): see above`);
    const waited = Math.round((Date.now() - started) / 1000);
    if (Date.now() - started >= LOCK_WAIT_MS)
      throw new ActionError(
        `stack ${stack} is still locked after ${waited} s. If no other run is working on it (a run cancelled half-way leaves its lock), ` +
          `clear it with \`pulumi cancel --stack ${stack} --yes\` and run this job again.`,
      );
    say(`another run holds stack ${stack}; waiting (${waited} s so far)`);
    await new Promise((r) => setTimeout(r, 5000));
  }
}

/** This repository's PR stacks in the backend: their numbers (another repository's, of the same backend, are not ours). */
async function prNumbers(suffix: string, cwd: string, env: NodeJS.ProcessEnv): Promise<number[]> {
  const listed = JSON.parse(await pulumiOk(["stack", "ls", "--json"], cwd, env, true)) as { name: string }[];
  const numbers: number[] = [];
  for (const { name } of listed) {
    const m = /^pr-([0-9]+)\.(.+)$/.exec(name.replace(/^.*\//, ""));
    // Only this project's stacks are named without a "/".
    if (m && m[2] === suffix && !name.includes("/")) numbers.push(Number(m[1]));
  }
  return numbers.sort((a, b) => a - b);
}

/** The job's outputs: appended to the file GitHub reads them from. */
function append(file: string | undefined, name: string, value: string): void {
  if (!file) return;
  fs.appendFileSync(file, `${name}=${value}\n`);
}

export async function runPrDatabase(env: NodeJS.ProcessEnv = process.env): Promise<number> {
  try {
    const inputs = readInputs(env);
    const repository = env.GITHUB_REPOSITORY ?? "";
    if (!REPOSITORY.test(repository))
      throw new ActionError(`GITHUB_REPOSITORY must be owner/name (GitHub sets it); it is "${printable(repository)}"`);
    const todo = whatToDo(inputs, env);
    if (todo.command === "skip") {
      say(`::notice title=No database for this pull request::${todo.why}`);
      return 0;
    }
    const settings = settingsOf(env.INPUT_SECRETS);
    const runEnv: NodeJS.ProcessEnv = { ...env, ...settings, PULUMI_SKIP_UPDATE_CHECK: "true" };
    for (const k of Object.keys(runEnv)) if (k.startsWith("INPUT_")) delete runEnv[k];
    const suffix = repository.replace("/", ".");
    const workspace = env.GITHUB_WORKSPACE ?? process.cwd();
    const dir = path.join(env.RUNNER_TEMP ?? workspace, "pr-database");
    fs.mkdirSync(dir, { recursive: true });
    const preparation = preparationFrom(inputs.prepare, workspace);
    fs.writeFileSync(path.join(dir, "Pulumi.yaml"), programText(inputs, preparation, todo.command === "nightly"));

    /** The config of a stack, set in this job (each job is a fresh checkout; nothing is read from an earlier job's files). */
    const configure = async (stack: string, pr: number, paused: boolean, source: string) => {
      const values = [
        `sourceServiceId=${source}`,
        `forkName=pr-${pr}.${suffix}`,
        `paused=${paused}`,
        `tigercloud:requireMasking=${inputs.requireMasking}`,
      ];
      await pulumiOk(["config", "set-all", "--stack", stack, ...values.flatMap((v) => ["--plaintext", v])], dir, runEnv, true);
    };
    /** The source a stack was made with (its output), so that a pause never forks anew from a changed source. */
    const sourceOf = async (stack: string) => {
      const ran = await pulumi(["stack", "output", "--stack", stack, "sourceServiceId"], dir, runEnv, true);
      return ran.status === 0 && ran.output.trim() !== "" ? ran.output.trim() : inputs.sourceServiceId;
    };

    if (todo.command === "up" && todo.pr !== undefined) {
      const stack = `pr-${todo.pr}.${suffix}`;
      say(
        `pull request #${todo.pr}: stack ${stack}, a fork of ${inputs.sourceServiceId}${preparation ? `, prepared as ${inputs.prepare} says` : ""}`,
      );
      await pulumiOk(["stack", "select", "--create", stack], dir, runEnv, true);
      await configure(stack, todo.pr, false, inputs.sourceServiceId);
      await locked(stack, ["preview", "--stack", stack], dir, runEnv);
      await locked(stack, ["up", "--stack", stack, "--yes", "--skip-preview"], dir, runEnv);
      // Both outputs in one read (quiet: it holds the URL).
      const outputs = OutputsSchema.parse(
        JSON.parse(await pulumiOk(["stack", "output", "--stack", stack, "--json", "--show-secrets"], dir, runEnv, true)),
      );
      const { databaseUrl: url, serviceId } = outputs;
      // Masked before it is written anywhere, and its password on its own (a later step may print
      // it apart from the URL): from here on GitHub prints *** where either would appear.
      say(`::add-mask::${url}`);
      const password = url.startsWith("postgresql://") ? new URL(url).password : "";
      if (password) for (const form of new Set([password, decodeURIComponent(password)])) say(`::add-mask::${form}`);
      append(env.GITHUB_ENV, "DATABASE_URL", url);
      append(env.GITHUB_OUTPUT, "service-id", serviceId);
      append(env.GITHUB_OUTPUT, "database-url", url);
      say(`fork ${serviceId} is ready: DATABASE_URL is set for the job's next steps (and the step's database-url output)`);
      return 0;
    }
    if (todo.command === "destroy" && todo.pr !== undefined) {
      const stack = `pr-${todo.pr}.${suffix}`;
      if (!(await prNumbers(suffix, dir, runEnv)).includes(todo.pr)) {
        say(`no stack ${stack}: nothing to delete`);
        return 0;
      }
      await pulumiOk(["stack", "select", stack], dir, runEnv, true);
      await configure(stack, todo.pr, false, await sourceOf(stack));
      // The program's onDestroy: "delete": the fork and its data go; then the stack.
      await locked(stack, ["destroy", "--stack", stack, "--yes", "--skip-preview"], dir, runEnv);
      await pulumiOk(["stack", "rm", stack, "--yes"], dir, runEnv, true);
      say(`pull request #${todo.pr}: its fork deleted, stack ${stack} removed`);
      return 0;
    }
    // Nightly: every PR's fork paused (kept, data and all; the PR's next push starts it), then the sweep.
    let failed = 0;
    for (const pr of await prNumbers(suffix, dir, runEnv)) {
      const stack = `pr-${pr}.${suffix}`;
      say(`== stack ${stack}: pause`);
      try {
        await pulumiOk(["stack", "select", stack], dir, runEnv, true);
        await configure(stack, pr, true, await sourceOf(stack));
        await locked(stack, ["up", "--stack", stack, "--yes", "--skip-preview"], dir, runEnv);
      } catch (err) {
        failed++;
        say(`could not pause stack ${stack}: ${printable(messageOf(err))}`);
      }
    }
    Object.assign(process.env, settings);
    const common = ["--source", inputs.sourceServiceId, "--project-dir", dir];
    if ((await forks(["list", ...common])) !== 0) failed++;
    if ((await forks(["sweep", ...common, "--older-than", inputs.olderThan, "--apply"])) !== 0) failed++;
    return failed === 0 ? 0 : 1;
  } catch (err) {
    process.stderr.write(`pr-database: ${printable(messageOf(err))}\n`);
    say(`::error title=PR database::${printable(messageOf(err))}`);
    return 1;
  }
}
