// Runs a repository's GitHub workflows the way GitHub does, on this machine: for an event, every
// workflow under .github/workflows/ whose `on:` matches, each job whose `if:` holds, in a fresh
// clone of the repository with a fresh HOME, and with only the environment GitHub gives a job (its
// runner variables) and the workflow, job and step `env:` declare, evaluated with the secrets and
// variables the test supplies. The `run:` steps come from the YAML as committed; the `uses:`
// steps our workflows take are stood in for by what they do: checkout makes the clone,
// setup-node, setup-go and setup-python check the version of the tool on PATH, pulumi/actions puts
// the Pulumi CLI on PATH (before it, the job has no `pulumi`), and actions/cache restores and saves.
// Any other action is a composite action of a repository the test names (`actions`): its action.yml
// read from there, as GitHub fetches it at the ref, and its steps run with its inputs. Workflow
// commands are read from the output: `::add-mask::` hides a value from the rest of the job's log, as
// do the secrets; `::notice` and `::error` become annotations. GITHUB_ENV carries variables to the
// next steps, GITHUB_OUTPUT a step's outputs.
import { spawn } from "child_process";
import * as crypto from "crypto";
import * as fs from "fs";
import * as path from "path";
import { parse } from "yaml";
import { condition, type Contexts, FUNCTIONS, interpolate, type Status } from "./expressions";
import type { Permissions } from "./githubApi";

interface Step {
  id?: string;
  name?: string;
  uses?: string;
  run?: string;
  shell?: string;
  if?: string | boolean;
  env?: Record<string, string>;
  with?: Record<string, unknown>;
  "working-directory"?: string;
}
interface Job {
  if?: string | boolean;
  env?: Record<string, string>;
  permissions?: Permissions | "read-all" | "write-all" | Record<string, never>;
  concurrency?: string | { group: string; "cancel-in-progress"?: boolean | string };
  defaults?: { run?: { "working-directory"?: string } };
  steps: Step[];
}
interface Workflow {
  name?: string;
  on: Record<string, unknown>;
  env?: Record<string, string>;
  permissions?: Job["permissions"];
  concurrency?: Job["concurrency"];
  defaults?: Job["defaults"];
  jobs: Record<string, Job>;
}

/** An event as the test triggers it. `workflow` names the file a workflow_dispatch runs, `branch` the branch it runs on (main when none). */
export type GitHubEvent =
  | { name: "pull_request"; payload: { action: string; number: number; pull_request: Record<string, unknown> } }
  | { name: "push"; ref: string }
  | { name: "schedule"; cron: string }
  | { name: "workflow_dispatch"; workflow: string; inputs?: Record<string, string>; branch?: string };

export interface Annotation {
  level: "notice" | "warning" | "error";
  title: string;
  message: string;
}

export interface JobRun {
  /** owner/name of the repository it ran for (GitHub keeps concurrency groups per repository). */
  repository: string;
  workflow: string;
  job: string;
  /** False when its `if:` did not hold; the rest is then empty. */
  ran: boolean;
  /** 0 when every step succeeded, else the failed step's exit status. */
  status: number;
  /** The job's log as GitHub shows it: masked values as ***. */
  log: string;
  /** The values `::add-mask::` hid, unmasked, for the test to compare. */
  masked: string[];
  annotations: Annotation[];
  /** The variables GITHUB_ENV gave the job's later steps, by name. */
  exported: Record<string, string>;
  permissions: Permissions;
  /** The job's concurrency group, evaluated (or the workflow's). */
  concurrencyGroup: string | undefined;
  /** Each step that ran, with its title and how long it took, as GitHub lists them. */
  steps: { title: string; seconds: number }[];
  /** The job's summary: what its steps wrote to GITHUB_STEP_SUMMARY, in order, masked as the log is. */
  summary: string;
}

export interface RunnerOptions {
  /** The repository (a path git can clone). */
  repository: string;
  /** owner/name, as GitHub names the repository. */
  repositoryName: string;
  secrets: Record<string, string>;
  vars: Record<string, string>;
  githubApiUrl: string;
  /** Mints each job's GITHUB_TOKEN for its permissions. */
  issueToken: (permissions: Permissions) => string;
  /** A runner's PATH before any setup step (no pulumi), and what pulumi/actions adds. */
  basePath: string;
  pulumiPath: string;
  /** Where jobs' clones, homes and temp directories go. */
  work: string;
  /** The npm cache jobs share, as setup-node's cache restores one. */
  npmCache: string;
  /** What the runner machine's own environment adds to every job's (a self-hosted runner's certificate authority, say). */
  machineEnv?: Record<string, string>;
  /** Where the composite actions of a repository are, by owner/name (its checkout at the ref the workflows name). */
  actions?: Record<string, string>;
  /**
   * Where the Pulumi plugins a job installed are kept for the jobs after it (the runners of one
   * test may share it). The first job to end with a plugin installed installs it as a user's runner
   * does (a fresh PULUMI_HOME, the plugin downloaded from its release); its PULUMI_HOME's plugins/
   * is kept here, and each later job starts with it (linked, as a cache restores it), so that its
   * `pulumi plugin install` finds the plugin there and installs nothing. Unset: every job downloads.
   */
  pluginCache?: string;
}

/** A composite action's action.yml, as far as the runner reads it. */
interface CompositeAction {
  inputs?: Record<string, { required?: boolean; default?: string }>;
  outputs?: Record<string, { value: string }>;
  runs: { using: string; steps: Step[] };
}

/**
 * A runner's PATH before any setup step: this process's, without the Pulumi CLI (pulumi/actions adds
 * it: `pulumiPath`), the checkout's own tools (under `root`), or any directory holding a `pulumi`.
 * Under scripts/with-pulumi.js, which finds the CLI.
 */
export function runnerPaths(root: string): { basePath: string; pulumiPath: string } {
  const pulumiPath = process.env.PULUMI_TIGERCLOUD_CLI_PATH;
  if (!pulumiPath) throw new Error("run under scripts/with-pulumi.js (npm test), which finds the Pulumi CLI");
  const cliDirs = pulumiPath.split(path.delimiter);
  const basePath = (process.env.PATH ?? "")
    .split(path.delimiter)
    .filter((d) => d && !cliDirs.includes(d) && !d.startsWith(root) && !fs.existsSync(path.join(d, "pulumi")))
    .join(path.delimiter);
  return { basePath, pulumiPath };
}

/** GitHub's default for a job that declares no permissions (the restricted setting). */
const DEFAULT_PERMISSIONS: Permissions = { contents: "read", metadata: "read" };

function permissionsOf(declared: Job["permissions"]): Permissions {
  if (declared === undefined) return DEFAULT_PERMISSIONS;
  if (declared === "read-all" || declared === "write-all") throw new Error(`the runner does not model permissions: ${declared}`);
  return { metadata: "read", ...declared };
}

function git(cwd: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn("git", args, { cwd });
    let out = "";
    child.stdout.on("data", (c: Buffer) => (out += c.toString()));
    child.stderr.on("data", (c: Buffer) => (out += c.toString()));
    child.on("error", reject);
    child.on("close", (code) => (code === 0 ? resolve(out.trim()) : reject(new Error(`git ${args.join(" ")}: ${out}`))));
  });
}

/** What GITHUB_ENV asks for: NAME=value lines and NAME<<DELIMITER heredocs. */
export function readGithubEnv(text: string): Record<string, string> {
  const found: Record<string, string> = {};
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] as string;
    const heredoc = /^([^=<]+)<<(.+)$/.exec(line);
    if (heredoc) {
      const value: string[] = [];
      while (++i < lines.length && lines[i] !== heredoc[2]) value.push(lines[i] as string);
      found[heredoc[1] as string] = value.join("\n");
    } else if (line.includes("=")) found[line.slice(0, line.indexOf("="))] = line.slice(line.indexOf("=") + 1);
  }
  return found;
}

export class WorkflowRunner {
  private runs = 0;
  constructor(private readonly options: RunnerOptions) {}

  /** Runs every job the event starts, one after another, and says what each left. */
  async trigger(event: GitHubEvent): Promise<JobRun[]> {
    // Each event's number, its own: events may run at once (two nights, say).
    const run = ++this.runs;
    const head = path.join(this.options.work, `event-${run}`);
    await git(this.options.work, ["clone", "--quiet", this.options.repository, head]);
    // A pull request's run reads its workflows, and checks out, the PR's head (GitHub's merge
    // commit, which is the head when the branch is up to date with its base); a manual run, its branch.
    const at = checkedOutAt(event);
    if (at) await git(head, ["checkout", "--quiet", at]);
    const sha = await git(head, ["rev-parse", "HEAD"]);
    const dir = path.join(head, ".github", "workflows");
    // Every job the event starts runs at once, each on a runner of its own, as on GitHub.
    const started: Promise<JobRun>[] = [];
    for (const file of fs.readdirSync(dir).sort()) {
      const workflow = parse(fs.readFileSync(path.join(dir, file), "utf8")) as Workflow;
      if (!this.starts(workflow, file, event)) continue;
      for (const [id, job] of Object.entries(workflow.jobs)) started.push(this.runJob(run, file, workflow, id, job, event, sha));
    }
    const results = await Promise.all(started);
    fs.rmSync(head, { recursive: true, force: true });
    return results;
  }

  /** The repository's caches, as actions/cache keeps them: by key, each with the ref that saved it. */
  private readonly caches = new Map<string, { ref: string; dir: string }>();

  /** A cache an earlier run on `ref` saved from `dir` under `key` (linked, as saves are). */
  async seedCache(key: string, ref: string, dir: string): Promise<void> {
    await this.saveCache(key, ref, dir);
  }

  /**
   * actions/cache's restore: an exact key saved by this ref or by the default branch (a pull
   * request's run reads main's caches, never another pull request's). A copy, as GitHub's archive is.
   */
  private async restoreCache(key: string, ref: string, dir: string): Promise<boolean> {
    const entry = this.caches.get(`${ref} ${key}`) ?? this.caches.get(`refs/heads/main ${key}`);
    if (!entry) return false;
    fs.mkdirSync(path.dirname(dir), { recursive: true });
    await linkTree(entry.dir, dir);
    return true;
  }

  /** actions/cache's post step, as the job ends: saves `dir` under key for this ref, once (a key is
   *  never overwritten). The job's workspace is then removed; the links keep the files. */
  private async saveCache(key: string, ref: string, dir: string): Promise<void> {
    if (this.caches.has(`${ref} ${key}`) || !fs.existsSync(dir)) return;
    const saved = path.join(this.options.work, "caches", `${this.caches.size}-${crypto.randomUUID()}`);
    fs.mkdirSync(path.dirname(saved), { recursive: true });
    await linkTree(dir, saved);
    if (!this.caches.has(`${ref} ${key}`)) this.caches.set(`${ref} ${key}`, { ref, dir: saved });
  }

  private starts(workflow: Workflow, file: string, event: GitHubEvent): boolean {
    if (!(event.name in workflow.on)) return false;
    const filter = (workflow.on[event.name] ?? {}) as { types?: string[]; branches?: string[] } | { cron: string }[];
    switch (event.name) {
      case "pull_request":
        return ((filter as { types?: string[] }).types ?? ["opened", "synchronize", "reopened"]).includes(event.payload.action);
      case "push": {
        const { branches, tags } = filter as { branches?: string[]; tags?: string[] };
        // A filter of tags only starts on tags, of branches only on branches (GitHub's rule).
        const tag = /^refs\/tags\/(.+)$/.exec(event.ref)?.[1];
        if (tag !== undefined) return tags !== undefined ? tags.some((glob) => globMatches(glob, tag)) : !branches;
        return branches !== undefined ? branches.includes(event.ref.replace(/^refs\/heads\//, "")) : !tags;
      }
      case "schedule":
        return (filter as { cron: string }[]).some((s) => s.cron === event.cron);
      case "workflow_dispatch":
        return event.workflow === file;
    }
  }

  private github(event: GitHubEvent, file: string, sha: string): Contexts {
    const [owner, name] = this.options.repositoryName.split("/") as [string, string];
    // The repository, as GitHub's payload of these events carries it.
    const repository = { full_name: this.options.repositoryName, name, owner: { login: owner } };
    const branch = event.name === "workflow_dispatch" ? (event.branch ?? "main") : "main";
    const payload =
      event.name === "pull_request"
        ? { repository, ...event.payload }
        : event.name === "schedule"
          ? { schedule: event.cron }
          : event.name === "workflow_dispatch"
            ? { repository, ref: `refs/heads/${event.branch ?? "main"}`, inputs: event.inputs ?? {} }
            : { repository, ref: event.ref };
    return {
      event_name: event.name,
      event: payload,
      repository: this.options.repositoryName,
      repository_owner: owner,
      sha,
      ref:
        event.name === "push"
          ? event.ref
          : event.name === "pull_request"
            ? `refs/pull/${event.payload.number}/merge`
            : `refs/heads/${branch}`,
      ref_name: event.name === "push" ? event.ref.replace(/^refs\/(heads|tags)\//, "") : branch,
      ref_type: event.name === "push" && event.ref.startsWith("refs/tags/") ? "tag" : "branch",
      workflow: file,
      api_url: this.options.githubApiUrl,
    };
  }

  private async runJob(
    run: number,
    file: string,
    workflow: Workflow,
    id: string,
    job: Job,
    event: GitHubEvent,
    sha: string,
  ): Promise<JobRun> {
    const github = this.github(event, file, sha);
    const root = path.join(this.options.work, `job-${run}-${file.replace(/\.ya?ml$/, "")}-${id}`);
    const workspace = path.join(root, "workspace");
    github.workspace = workspace;
    const inputs = event.name === "workflow_dispatch" ? (event.inputs ?? {}) : {};
    const base: Contexts = { github, inputs, vars: this.options.vars, needs: {}, env: {} };
    const permissions = permissionsOf(job.permissions ?? workflow.permissions);
    const concurrency = job.concurrency ?? workflow.concurrency;
    const group = concurrency && interpolate(typeof concurrency === "string" ? concurrency : concurrency.group, base);
    const result: JobRun = {
      repository: this.options.repositoryName,
      workflow: file,
      job: id,
      ran: false,
      status: 0,
      log: "",
      masked: [],
      annotations: [],
      exported: {},
      permissions,
      concurrencyGroup: group,
      steps: [],
      summary: "",
    };
    if (!condition(job.if, base, "success")) return result;
    result.ran = true;

    const home = path.join(root, "home");
    const temp = path.join(root, "temp");
    // The workspace exists, empty, before any checkout, as on a runner.
    for (const d of [workspace, home, temp]) fs.mkdirSync(d, { recursive: true });
    fs.symlinkSync(this.options.npmCache, path.join(home, ".npm"));
    const plugins = path.join(home, ".pulumi", "plugins");
    const cachedPlugins = this.options.pluginCache && path.join(this.options.pluginCache, "plugins");
    const pluginsCached = cachedPlugins !== undefined && fs.existsSync(cachedPlugins);
    if (pluginsCached) {
      fs.mkdirSync(path.dirname(plugins), { recursive: true });
      await linkTree(cachedPlugins, plugins);
    }
    const githubEnv = path.join(temp, "github_env");
    const eventPath = path.join(temp, "event.json");
    fs.writeFileSync(eventPath, JSON.stringify(github.event));
    const token = this.options.issueToken(permissions);
    github.token = token;
    const secrets = { ...this.options.secrets, GITHUB_TOKEN: token };
    const hide = [...Object.values(secrets).filter((v) => v.length > 0)];
    // What every job's steps get from the runner, before any `env:`.
    let env: Record<string, string> = {
      ...this.options.machineEnv,
      PATH: this.options.basePath,
      HOME: home,
      // The Pulumi CLI finds its home from the user database, not HOME: a fresh runner has no plugin.
      PULUMI_HOME: path.join(home, ".pulumi"),
      CI: "true",
      GITHUB_ACTIONS: "true",
      GITHUB_WORKSPACE: workspace,
      GITHUB_ENV: githubEnv,
      GITHUB_EVENT_NAME: event.name,
      GITHUB_EVENT_PATH: eventPath,
      GITHUB_REPOSITORY: this.options.repositoryName,
      GITHUB_SHA: sha,
      GITHUB_REF: github.ref as string,
      GITHUB_REF_NAME: github.ref_name as string,
      GITHUB_REF_TYPE: github.ref_type as string,
      GITHUB_API_URL: this.options.githubApiUrl,
      GITHUB_SERVER_URL: "https://github.com",
      GITHUB_JOB: id,
      RUNNER_OS: "Linux",
      RUNNER_TEMP: temp,
    };
    // Each step's outputs, by its id; `hashFiles` reads the workspace, as on GitHub. A composite
    // action's steps have a scope of their own: its inputs, its steps' outputs, its path.
    interface Scope {
      inputs: Record<string, unknown>;
      steps: Record<string, { outputs: Record<string, string> }>;
      actionPath?: string;
    }
    const hashFiles = ([pattern]: unknown[]) => hashFilesIn(workspace, String(pattern));
    const contextsIn = (scope: Scope): Contexts => ({
      ...base,
      github: scope.actionPath ? { ...github, action_path: scope.actionPath } : github,
      inputs: scope.inputs,
      secrets,
      env,
      steps: scope.steps,
      runner: { os: "Linux", temp },
      [FUNCTIONS]: { hashFiles },
    });
    const jobScope: Scope = { inputs, steps: {} };
    const contexts = () => contextsIn(jobScope);
    // actions/cache steps that missed: saved after the job, if it succeeded (the action's post step).
    const toSave: { key: string; dir: string }[] = [];
    for (const scope of [workflow.env, job.env])
      for (const [k, v] of Object.entries(scope ?? {})) env = { ...env, [k]: interpolate(String(v), contexts()) };

    let status: Status = "success";
    let scripts = 0;
    const log: string[] = [];
    const summaries: string[] = [];
    const runSteps = async (list: Step[], scope: Scope): Promise<void> => {
      for (const step of list) {
        if (!condition(step.if, contextsIn(scope), status)) continue;
        const stepEnv = { ...env };
        for (const [k, v] of Object.entries(step.env ?? {})) stepEnv[k] = interpolate(String(v), { ...contextsIn(scope), env: stepEnv });
        // The step's title as GitHub shows it: its name with expressions evaluated.
        const title =
          step.name !== undefined
            ? interpolate(step.name, { ...contextsIn(scope), env: stepEnv })
            : (step.uses ?? step.run?.split("\n")[0]);
        log.push(`##[group]${title}`);
        const stepStarted = Date.now();
        let exit = 0;
        if (step.uses) {
          const action = step.uses.replace(/@.*/, "");
          if (action === "actions/checkout") {
            await git(workspace, ["clone", "--quiet", this.options.repository, "."]);
            // The run's commit (GITHUB_SHA), as actions/checkout takes it.
            await git(workspace, ["checkout", "--quiet", sha]);
          } else if (action === "actions/setup-node") {
            const wanted = String(step.with?.["node-version"] ?? "");
            if (wanted.split(".")[0] !== process.versions.node.split(".")[0])
              throw new Error(`${file}: node ${wanted} wanted, ${process.versions.node} here`);
          } else if (action === "actions/setup-go" || action === "actions/setup-python") {
            // The machine's own, at the version the step asks for (major.minor), as the action would install it.
            const [tool, args] = action === "actions/setup-go" ? ["go", ["version"]] : ["python3", ["--version"]];
            const wanted = String(step.with?.[action === "actions/setup-go" ? "go-version" : "python-version"] ?? "");
            const found = (await runTool(tool, args, env.PATH as string)).match(/(\d+\.\d+)(\.\d+)?/)?.[1];
            if (found !== wanted) throw new Error(`${file}: ${tool} ${wanted} wanted, ${found ?? "none"} here`);
          } else if (action === "pulumi/actions") env.PATH = `${this.options.pulumiPath}${path.delimiter}${env.PATH}`;
          else if (action === "actions/cache") {
            const key = interpolate(String(step.with?.key ?? ""), contextsIn(scope));
            const dir = path.join(workspace, interpolate(String(step.with?.path ?? ""), contextsIn(scope)));
            const hit = await this.restoreCache(key, github.ref as string, dir);
            if (!hit) toSave.push({ key, dir });
            if (step.id) scope.steps[step.id] = { outputs: { "cache-hit": String(hit) } };
            log.push(hit ? `Cache restored from key: ${key}` : `Cache not found for input keys: ${key}`);
          } else {
            // A composite action: its inputs from `with:` (evaluated here) and its defaults, its steps, its outputs.
            const [owner, name, ...sub] = action.split("/");
            const repo = this.options.actions?.[`${owner}/${name}`];
            if (!repo) throw new Error(`${file}: the runner cannot stand in for ${step.uses}`);
            const actionPath = path.join(repo, ...sub);
            const definition = parse(fs.readFileSync(path.join(actionPath, "action.yml"), "utf8")) as CompositeAction;
            if (definition.runs.using !== "composite") throw new Error(`${step.uses}: the runner runs composite actions only`);
            const given: Record<string, unknown> = {};
            for (const [k, v] of Object.entries(step.with ?? {})) given[k] = interpolate(String(v), { ...contextsIn(scope), env: stepEnv });
            const inner: Scope = { inputs: {}, steps: {}, actionPath };
            for (const [k, spec] of Object.entries(definition.inputs ?? {})) {
              const value = given[k] ?? (spec.default !== undefined ? interpolate(String(spec.default), contextsIn(inner)) : "");
              if (spec.required && value === "") throw new Error(`${step.uses}: input ${k} is required`);
              inner.inputs[k] = value;
            }
            const unknown = Object.keys(given).filter((k) => !(k in (definition.inputs ?? {})));
            if (unknown.length > 0) throw new Error(`${step.uses}: no such input ${unknown.join(", ")}`);
            await runSteps(
              definition.runs.steps.map((s) => ({ ...s, env: { ...s.env, GITHUB_ACTION_PATH: actionPath } })),
              inner,
            );
            if (step.id)
              scope.steps[step.id] = {
                outputs: Object.fromEntries(
                  Object.entries(definition.outputs ?? {}).map(([k, o]) => [k, interpolate(o.value, contextsIn(inner))]),
                ),
              };
          }
        } else if (step.run !== undefined) {
          if (scope.actionPath && step.shell !== "bash") throw new Error(`${file}: a composite action's run step needs shell: bash`);
          const dir =
            step["working-directory"] ?? job.defaults?.run?.["working-directory"] ?? workflow.defaults?.run?.["working-directory"];
          const script = path.join(temp, `step-${scripts++}.sh`);
          fs.writeFileSync(script, interpolate(step.run, { ...contextsIn(scope), env: stepEnv }));
          const githubOutput = path.join(temp, "github_output");
          // One summary file per step, as GitHub gives; the job's summary is theirs in order.
          const stepSummary = path.join(temp, `step_summary_${scripts}`);
          fs.writeFileSync(githubEnv, "");
          fs.writeFileSync(githubOutput, "");
          fs.writeFileSync(stepSummary, "");
          const out = await runScript(script, dir && !scope.actionPath ? path.join(workspace, interpolate(dir, contexts())) : workspace, {
            ...stepEnv,
            PATH: env.PATH as string,
            GITHUB_OUTPUT: githubOutput,
            GITHUB_STEP_SUMMARY: stepSummary,
          });
          summaries.push(fs.readFileSync(stepSummary, "utf8"));
          exit = out.status;
          for (const line of out.output.split("\n")) {
            const command = /^::(add-mask|notice|warning|error)( [^:]*)?::(.*)$/.exec(line);
            if (command?.[1] === "add-mask") {
              result.masked.push(command[3] as string);
              hide.push(command[3] as string);
              continue;
            }
            if (command) {
              const title = /title=([^,]*)/.exec(command[2] ?? "")?.[1] ?? "";
              result.annotations.push({ level: command[1] as Annotation["level"], title, message: command[3] as string });
            }
            log.push(line);
          }
          const exported = readGithubEnv(fs.readFileSync(githubEnv, "utf8"));
          Object.assign(result.exported, exported);
          env = { ...env, ...exported };
          if (step.id) scope.steps[step.id] = { outputs: readGithubEnv(fs.readFileSync(githubOutput, "utf8")) };
        }
        result.steps.push({ title: String(title), seconds: (Date.now() - stepStarted) / 1000 });
        if (exit !== 0) {
          log.push(`##[error]Process completed with exit code ${exit}.`);
          status = "failure";
          result.status = exit;
        }
      }
    };
    await runSteps(job.steps, jobScope);
    if (status === "success") for (const { key, dir } of toSave) await this.saveCache(key, github.ref as string, dir);
    if (cachedPlugins && !pluginsCached) await keepPlugins(plugins, cachedPlugins);
    const masking = (text: string) => hide.filter((v) => v.length > 0).reduce((t, value) => t.split(value).join("***"), text);
    result.log = masking(log.join("\n"));
    result.summary = masking(summaries.join(""));
    fs.rmSync(root, { recursive: true, force: true });
    return result;
  }
}

/** The commit a pull request's run checks out: its head, when the event names it. */
function checkedOutAt(event: GitHubEvent): string | undefined {
  // A manual run reads its workflows, and checks out, the branch it was started on.
  if (event.name === "workflow_dispatch") return event.branch ? `origin/${event.branch}` : undefined;
  if (event.name !== "pull_request") return undefined;
  const head = event.payload.pull_request.head as { sha?: unknown } | undefined;
  return typeof head?.sha === "string" ? head.sha : undefined;
}

/**
 * GitHub's hashFiles() for the plain paths our workflows give it (no glob): the SHA-256 of the
 * matched files' SHA-256s; '' when none matches.
 */
function hashFilesIn(workspace: string, pattern: string): string {
  if (/[*?[\]!]/.test(pattern)) throw new Error(`the runner's hashFiles() takes plain paths only: ${pattern}`);
  const file = path.join(workspace, pattern);
  if (!fs.existsSync(file)) return "";
  const digest = crypto.createHash("sha256").update(fs.readFileSync(file)).digest();
  return crypto.createHash("sha256").update(digest).digest("hex");
}

/** A copy of a directory tree made of hard links to its files (`cp -al`): actions/cache archives
 *  a copy, and no job writes into a saved or restored node_modules, so links serve the same; a
 *  real copy cost about 10 s a job. `cp`, not fs.cpSync, which held the event loop, and with it the
 *  simulator and GitHub's stand-in, which answer from this process. */
function linkTree(from: string, to: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn("cp", ["-al", from, to], { stdio: ["ignore", "ignore", "pipe"] });
    let errors = "";
    child.stderr.on("data", (c: Buffer) => (errors += c.toString()));
    child.on("error", reject);
    child.on("close", (code) => (code === 0 ? resolve() : reject(new Error(`cp -al ${from} ${to} exited ${code}: ${errors}`))));
  });
}

/**
 * A job's PULUMI_HOME plugins/, kept in `cached` for the jobs after it, once: only when it holds a
 * plugin, and no install left unfinished (Pulumi's `.partial` marks one). Linked into a folder of
 * its own, then renamed into place whole: a job that starts meanwhile sees it all, or not at all.
 */
async function keepPlugins(plugins: string, cached: string): Promise<void> {
  if (fs.existsSync(cached) || !fs.existsSync(plugins)) return;
  const entries = fs.readdirSync(plugins);
  if (!entries.some((e) => fs.statSync(path.join(plugins, e)).isDirectory()) || entries.some((e) => e.endsWith(".partial"))) return;
  fs.mkdirSync(path.dirname(cached), { recursive: true });
  const staging = `${cached}.${crypto.randomUUID()}`;
  await linkTree(plugins, staging);
  try {
    fs.renameSync(staging, cached);
  } catch {
    // Another job kept its plugins first: theirs serve.
    fs.rmSync(staging, { recursive: true, force: true });
  }
}

/** A glob of GitHub's filters (`v*.*.*`): `*` is any run of characters but `/`, `**` any run. */
function globMatches(glob: string, value: string): boolean {
  const pattern = glob
    .split("**")
    .map((part) =>
      part
        .split("*")
        .map((s) => s.replace(/[.+?^${}()|[\]\\]/g, "\\$&"))
        .join("[^/]*"),
    )
    .join(".*");
  return new RegExp(`^${pattern}$`).test(value);
}

/** A tool's output (stdout and stderr), found on `pathList`. */
function runTool(command: string, args: string[], pathList: string): Promise<string> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { env: { PATH: pathList } });
    let out = "";
    child.stdout.on("data", (c: Buffer) => (out += c.toString()));
    child.stderr.on("data", (c: Buffer) => (out += c.toString()));
    child.on("error", () => resolve(""));
    child.on("close", () => resolve(out));
  });
}

/** A `run:` step as GitHub runs it on Linux: bash --noprofile --norc -eo pipefail, stdout and stderr as one log. */
function runScript(script: string, cwd: string, env: Record<string, string>): Promise<{ status: number; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn("bash", ["--noprofile", "--norc", "-eo", "pipefail", script], { cwd, env });
    let output = "";
    child.stdout.on("data", (c: Buffer) => (output += c.toString()));
    child.stderr.on("data", (c: Buffer) => (output += c.toString()));
    child.on("error", reject);
    child.on("close", (code, signal) => resolve({ status: code ?? (signal ? 128 : 1), output }));
  });
}
