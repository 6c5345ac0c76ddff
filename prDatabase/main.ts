// The PR database, one step of a user's workflow (actions/pr-database): on a pull request's open,
// push or reopen, a fork of the source, prepared as the rules file says at the PR's base (masking,
// SQL, jobs paused), its URL masked in the log and handed to the job's later steps, the job's
// summary and the PR's one comment saying what it is; on its close, the fork deleted and its stack
// removed; at night (schedule, workflow_dispatch), every PR's fork paused, then the project's forks
// listed and swept (tigercloud-forks). A pull request from another repository gets a notice. Run
// from the plugin's archive, with its own Node.js:
//   pulumi plugin run --kind resource tigercloud -- pr-database
// It carries its own program: a YAML program on this plugin, written for each run (one Pulumi
// project, pr-database; one stack, and one fork, per pull request: pr-<number>.<owner>.<repo>).
import * as fs from "fs";
import * as path from "path";
import { z } from "zod";
import { messageOf, printable } from "../provider/text";
import { main as forks } from "../forks/cli";
import { defaultBranchHead, type GitHub, upsertComment } from "./github";
import { ActionError, type Inputs, readInputs, SECRET_INPUTS, settingsOf, type Todo, whatToDo } from "./inputs";
import { forkedByOtherRules, goldenStackName, goldenToForkFrom, prPreparationFromGolden, refreshGoldenTonight } from "./golden";
import { EngineFailure, locked, programText, prNumbers, pulumiOk, recordedFork, selectOrCreate, stackNames, stackOutputs } from "./pulumi";
import {
  command,
  notice,
  OutputsSchema,
  preparationFailure,
  prFix,
  readyReport,
  rulesChangedNote,
  say,
  summarize,
  withNightNote,
} from "./report";
import { changedAt, type Rules, rulesAt } from "./rules";
import { markdown as rehearsalReport } from "../rehearsal/report";
import { migrationFailed, type Rehearsal, rehearse } from "../rehearsal/rehearse";
import { outputLine } from "../rehearsal/cli";

/** The job's outputs: appended to the file GitHub reads them from. */
function append(file: string | undefined, name: string, value: string): void {
  if (!file) return;
  fs.appendFileSync(file, `${name}=${value}\n`);
}

/** What a PR's database is forked from. */
interface Source {
  serviceId: string;
  /** A golden fork: its data masked already. */
  golden: boolean;
  /** When the golden fork's data was taken from production ("" for production itself). */
  dataTakenAt: string;
  /** The digest of the golden fork's preparation, as the action recorded it ("" for production, or unknown). */
  goldenDigest: string;
}

/**
 * The migration (the migrate input) run in the job's workspace against the PR's fork, watched. It
 * gets the job's environment and DATABASE_URL, none of the action's inputs (its secrets).
 */
async function rehearseMigration(inputs: Inputs, url: string, env: NodeJS.ProcessEnv): Promise<Rehearsal> {
  const jobEnv = Object.fromEntries(Object.entries(env).filter(([k]) => !k.startsWith("INPUT_")));
  say(`rehearsing the migration: ${printable(inputs.migrate)}`);
  return rehearse(
    url,
    inputs.migrate,
    { lockMs: inputs["lock-threshold"], rewriteBytes: inputs["rewrite-threshold"], intervalMs: 50, env: jobEnv },
    (line) => say(`  | ${outputLine(line)}`),
  );
}

/** The job's end: a failed migration fails it, naming the statement; a flag fails it with fail-on-flag, else warns. */
function rehearsalVerdict(r: Rehearsal, failOnFlag: boolean): number {
  if (migrationFailed(r)) {
    const n = r.statements.findIndex((s) => s.failed);
    // The error's line (a tool's CONTEXT or DETAIL lines may follow it), else the last one.
    const lines = r.output.trim().split("\n");
    const last = [...lines].reverse().find((l) => /\bERROR\b/i.test(l)) ?? lines[lines.length - 1] ?? "";
    say(
      `::error title=The migration failed::${command(
        printable(
          `${n >= 0 ? `statement ${n + 1}, ${r.statements[n]?.text},${r.statements[n]?.orNext ? " or one right after it too short to be seen," : ""} failed` : `the migration exited ${r.exitCode}`} on production's masked copy: ${last}`,
        ),
      )}`,
    );
    return 1;
  }
  for (const flag of r.flags) say(`::${failOnFlag ? "error" : "warning"} title=Migration rehearsal::${command(printable(flag))}`);
  return failOnFlag && r.flags.length ? 1 : 0;
}

/** What a PR's stack recorded of its source (outputs; older stacks have only sourceServiceId). */
const RecordedSchema = z.looseObject({
  sourceServiceId: z.string().optional(),
  goldenSource: z.union([z.boolean(), z.string()]).optional(),
  dataTakenAt: z.string().optional(),
  goldenDigest: z.string().optional(),
});

export async function runPrDatabase(env: NodeJS.ProcessEnv = process.env): Promise<number> {
  try {
    const todo = whatToDo(env);
    if (todo.command === "skip") {
      say(`::notice title=No database for this pull request::${command(todo.why)}`);
      summarize(env, `### No database for this pull request\n\n${todo.why}`);
      return 0;
    }
    const inputs = readInputs(env);
    // Masked from here on, whatever the workflow passed them from.
    for (const name of SECRET_INPUTS) if (inputs[name]) say(`::add-mask::${inputs[name]}`);
    return await run(todo, inputs, env);
  } catch (err) {
    process.stderr.write(`pr-database: ${printable(messageOf(err))}\n`);
    say(`::error title=PR database::${command(printable(messageOf(err)))}`);
    return 1;
  }
}

/** What every command of the job shares: its inputs, the CLI's environment, GitHub, the project's folder, and the stacks' sources. */
interface Job {
  inputs: Inputs;
  /** The job's own environment (GITHUB_*, RUNNER_*). */
  env: NodeJS.ProcessEnv;
  /** The CLI's: the settings, none of the action's inputs. */
  runEnv: NodeJS.ProcessEnv;
  settings: NodeJS.ProcessEnv;
  github: GitHub;
  /** owner.repo: what every stack and fork of this repository is named after. */
  suffix: string;
  dir: string;
  started: number;
  production: Source;
}

/** The event's command, with the job it runs in. */
const COMMANDS: {
  [C in Exclude<Todo, { command: "skip" }>["command"]]: (job: Job, todo: Extract<Todo, { command: C }>) => Promise<number>;
} = {
  up: prDatabaseUp,
  destroy: prDatabaseDestroy,
  nightly: nightly,
};

async function run(todo: Exclude<Todo, { command: "skip" }>, inputs: Inputs, env: NodeJS.ProcessEnv): Promise<number> {
  const repository = env.GITHUB_REPOSITORY as string;
  const settings = settingsOf(inputs);
  const runEnv: NodeJS.ProcessEnv = { ...env, ...settings, PULUMI_SKIP_UPDATE_CHECK: "true" };
  for (const k of Object.keys(runEnv)) if (k.startsWith("INPUT_")) delete runEnv[k];
  const dir = path.join(env.RUNNER_TEMP ?? env.GITHUB_WORKSPACE ?? process.cwd(), "pr-database");
  fs.mkdirSync(dir, { recursive: true });
  const job: Job = {
    inputs,
    env,
    runEnv,
    settings,
    github: { apiUrl: env.GITHUB_API_URL || "https://api.github.com", token: inputs["github-token"], repository },
    suffix: repository.replace("/", "."),
    dir,
    started: Date.now(),
    production: { serviceId: inputs["source-service-id"], golden: false, dataTakenAt: "", goldenDigest: "" },
  };
  return (COMMANDS[todo.command] as (job: Job, todo: Todo) => Promise<number>)(job, todo);
}

/** The config of a stack, set in this job (each job is a fresh runner; nothing is read from an earlier job's files). */
async function configure(job: Job, stack: string, pr: number, paused: boolean, source: Source): Promise<void> {
  const values = [
    `sourceServiceId=${source.serviceId}`,
    `forkName=pr-${pr}.${job.suffix}`,
    `paused=${paused}`,
    `goldenSource=${source.golden}`,
    `dataTakenAt=${source.dataTakenAt}`,
    `goldenDigest=${source.goldenDigest}`,
    `tigercloud:requireMasking=${job.inputs["require-masking"]}`,
  ];
  await pulumiOk(["config", "set-all", "--stack", stack, ...values.flatMap((v) => ["--plaintext", v])], job.dir, job.runEnv, true);
}

/**
 * The source of the fork a PR's stack holds (its state; its outputs add what the action recorded,
 * where they speak of that fork's source: a replacement that failed leaves them stale), so that
 * neither a push nor a pause forks anew from a changed source (a refreshed golden fork, another
 * source-service-id); undefined when it holds no fork.
 */
async function recordedSource(job: Job, stack: string): Promise<Source | undefined> {
  const { dir, runEnv } = job;
  if (!(await stackNames(dir, runEnv)).includes(stack)) return undefined;
  const forked = await recordedFork(stack, dir, runEnv);
  if (!forked) return undefined;
  const recorded = RecordedSchema.safeParse(await stackOutputs(stack, dir, runEnv));
  if (recorded.success && recorded.data.sourceServiceId === forked.sourceServiceId)
    return {
      serviceId: forked.sourceServiceId,
      golden: recorded.data.goldenSource === true || recorded.data.goldenSource === "true",
      dataTakenAt: recorded.data.dataTakenAt ?? "",
      goldenDigest: recorded.data.goldenDigest ?? "",
    };
  // Forked from production (this one or an earlier source-service-id), it declared masking rules.
  const golden = forked.sourceServiceId !== job.production.serviceId && !forked.masks;
  return { serviceId: forked.sourceServiceId, golden, dataTakenAt: "", goldenDigest: "" };
}

/** A new PR database's source: the golden fork serving now (golden: true) if it was made by the base's `rules`, or production. */
async function freshSource(job: Job, rules: Rules | undefined, fromDefaultBranch: boolean): Promise<Source> {
  if (job.inputs.golden !== "true") return job.production;
  const stack = goldenStackName(job.inputs["source-service-id"], job.suffix);
  const golden = await goldenToForkFrom(stack, rules, fromDefaultBranch, job.dir, job.runEnv);
  return golden
    ? { serviceId: golden.serviceId, golden: true, dataTakenAt: golden.dataTakenAt, goldenDigest: golden.digest }
    : job.production;
}

/** A pull request opened, pushed or reopened: its fork up (made, or kept), its URL handed on, its comment written; its migration rehearsed. */
async function prDatabaseUp(job: Job, { pr, commits }: Extract<Todo, { command: "up" }>): Promise<number> {
  const { inputs, env, runEnv, github, dir } = job;
  const stack = `pr-${pr}.${job.suffix}`;
  let rules: Rules | undefined;
  let rulesChanged = false;
  const rulesFrom = inputs["rules-from"];
  const baseRef = printable(commits.base.ref);
  if (inputs.prepare !== "") {
    if (!github.token)
      throw new ActionError("github-token is empty: the rules file is read from the pull request's base through GitHub's API");
    const sha = rulesFrom === "base" ? commits.base.sha : commits.head.sha;
    rules = await rulesAt(
      github,
      inputs.prepare,
      sha,
      rulesFrom === "base" ? `the base, ${baseRef} (${sha.slice(0, 7)})` : `the head (${sha.slice(0, 7)})`,
    );
    rulesChanged = await changedAt(github, rules, rulesFrom === "base" ? commits.head.sha : commits.base.sha);
    if (rulesChanged) notice("The rules file changes", rulesChangedNote(rules.file, rulesFrom));
  }
  // The project's file first: the CLI finds the stacks of the project it names.
  fs.writeFileSync(path.join(dir, "Pulumi.yaml"), programText(inputs, undefined, false));
  let source: Source | undefined = await recordedSource(job, stack);
  // A migration to rehearse starts from production's masked state on every push, never from what the
  // previous push's migration left: the previous push's fork deleted (a replacement in one update
  // would find it running under the same name and take it over), then a new one made below (of the
  // golden fork serving now, or of production, masked in this job).
  if (inputs.migrate !== "" && source) {
    say("the migration is rehearsed on a new fork: the previous push's fork is deleted first");
    await configure(job, stack, pr, false, source);
    await locked(stack, ["destroy", "--stack", stack, "--yes", "--skip-preview"], dir, runEnv);
    source = undefined;
  }
  // Into the default branch, a database forked from a golden fork made by other rules than the
  // base's now (a rule added since) is forked anew, as a changed prepare replaces a fork of production.
  const fromDefaultBranch =
    inputs.golden === "true" && rules !== undefined && commits.base.ref === (await defaultBranchHead(github)).branch;
  if (source && forkedByOtherRules(source, rules, fromDefaultBranch)) source = undefined;
  source ??= await freshSource(job, rules, fromDefaultBranch);
  // From a golden fork, the data is masked already: the PR's database runs only the rules' sqlAfter.
  const preparation = source.golden ? prPreparationFromGolden(rules) : rules?.preparation;
  say(
    printable(
      `pull request #${pr}: stack ${stack}, a fork of ` +
        (source.golden
          ? `golden fork ${source.serviceId} (production ${inputs["source-service-id"]} masked, its data as of ${source.dataTakenAt}): nothing to mask here`
          : `${source.serviceId}${rules ? `, prepared as ${rules.file} says at ${rules.sha.slice(0, 7)}` : ""}`),
    ),
  );
  fs.writeFileSync(path.join(dir, "Pulumi.yaml"), programText(inputs, preparation, false));
  await selectOrCreate(stack, dir, runEnv);
  await configure(job, stack, pr, false, source);
  try {
    // One engine run: up checks every resource before it changes any (a refused fork fails there),
    // and a separate preview would say each check's warnings twice.
    await locked(stack, ["up", "--stack", stack, "--yes", "--skip-preview"], dir, runEnv);
  } catch (err) {
    const said = err instanceof EngineFailure ? preparationFailure(err.output, rules, prFix(rulesFrom, baseRef)) : undefined;
    if (!said) throw err;
    summarize(env, `### No database for this pull request yet\n\nIts preparation failed: ${said}`);
    await upsertComment(github, pr, `### No database for this pull request yet\n\nIts preparation failed: ${said}`).then(say);
    throw new ActionError(said);
  }
  // Every output in one read (quiet: it holds the URL).
  const outputs = OutputsSchema.parse(
    JSON.parse(await pulumiOk(["stack", "output", "--stack", stack, "--json", "--show-secrets"], dir, runEnv, true)),
  );
  const url = outputs.databaseUrl;
  // Masked before it is written anywhere, and its password on its own (a later step may print
  // it apart from the URL): from here on GitHub prints *** where either would appear.
  say(`::add-mask::${url}`);
  const password = url.startsWith("postgresql://") ? new URL(url).password : "";
  if (password) for (const form of new Set([password, decodeURIComponent(password)])) say(`::add-mask::${form}`);
  append(env.GITHUB_ENV, "DATABASE_URL", url);
  append(env.GITHUB_OUTPUT, "service-id", outputs.serviceId);
  append(env.GITHUB_OUTPUT, "database-url", url);
  say(`fork ${printable(outputs.serviceId)} is ready: DATABASE_URL is set for the job's next steps (and the step's database-url output)`);
  const report = readyReport({
    pr,
    stack,
    source,
    production: inputs["source-service-id"],
    outputs,
    rules,
    rulesFrom,
    baseRef,
    rulesChanged,
    headSha: commits.head.sha,
    seconds: (Date.now() - job.started) / 1000,
  });
  const rehearsal = inputs.migrate === "" ? undefined : await rehearseMigration(inputs, url, env);
  const text = rehearsal ? `${report}\n\n${rehearsalReport(rehearsal)}` : report;
  summarize(env, text);
  say(await upsertComment(github, pr, text));
  return rehearsal ? rehearsalVerdict(rehearsal, inputs["fail-on-flag"] === "true") : 0;
}

/** A pull request closed: its fork and its data deleted (the program's onDestroy: "delete"), then its stack. */
async function prDatabaseDestroy(job: Job, { pr }: Extract<Todo, { command: "destroy" }>): Promise<number> {
  const { env, runEnv, github, dir } = job;
  fs.writeFileSync(path.join(dir, "Pulumi.yaml"), programText(job.inputs, undefined, false));
  const stack = `pr-${pr}.${job.suffix}`;
  if (!(await prNumbers(job.suffix, dir, runEnv)).includes(pr)) {
    say(`no stack ${stack}: nothing to delete`);
    return 0;
  }
  await pulumiOk(["stack", "select", stack], dir, runEnv, true);
  await configure(job, stack, pr, false, (await recordedSource(job, stack)) ?? job.production);
  await locked(stack, ["destroy", "--stack", stack, "--yes", "--skip-preview"], dir, runEnv);
  await pulumiOk(["stack", "rm", stack, "--yes"], dir, runEnv, true);
  say(`pull request #${pr}: its fork deleted, stack ${stack} removed`);
  summarize(
    env,
    `### Database for this pull request: deleted\n\nThe pull request closed: fork \`${stack}\` and its data deleted, its stack removed.`,
  );
  if (github.token)
    say(
      await upsertComment(
        github,
        pr,
        `### Database for this pull request: deleted\n\nThe pull request closed: the fork and its data were deleted.`,
      ),
    );
  return 0;
}

/** The night: the golden fork refreshed (golden: true), every PR's fork paused (kept, data and all; the PR's next push starts it), then the sweep. */
async function nightly(job: Job): Promise<number> {
  const { inputs, env, runEnv, github, dir, suffix, settings } = job;
  fs.writeFileSync(path.join(dir, "Pulumi.yaml"), programText(inputs, undefined, true));
  let failed = 0;
  if (
    inputs.golden === "true" &&
    (await refreshGoldenTonight(
      inputs,
      github,
      goldenStackName(inputs["source-service-id"], suffix),
      path.join(dir, "golden"),
      runEnv,
      env,
    ))
  )
    failed++;
  const paused: string[] = [];
  // Every source a PR's fork was made from (production, golden forks): each one's forks are swept.
  const sources = new Set([inputs["source-service-id"]]);
  for (const pr of await prNumbers(suffix, dir, runEnv)) {
    const stack = `pr-${pr}.${suffix}`;
    say(`== stack ${stack}: pause`);
    try {
      await pulumiOk(["stack", "select", stack], dir, runEnv, true);
      // The night only pauses: a stack that holds no fork (its first up failed before forking) gets none.
      const source = await recordedSource(job, stack);
      if (!source) {
        say(`stack ${stack} holds no fork: nothing to pause`);
        paused.push(`| \`${stack}\` | no fork: nothing to pause |`);
        continue;
      }
      sources.add(source.serviceId);
      await configure(job, stack, pr, true, source);
      await locked(stack, ["up", "--stack", stack, "--yes", "--skip-preview"], dir, runEnv);
      paused.push(`| \`${stack}\` | paused |`);
      if (github.token)
        say(
          await upsertComment(github, pr, (old) =>
            withNightNote(old, `paused ${new Date().toISOString()}, data and all: the next push starts it (a few minutes).`),
          ),
        );
    } catch (err) {
      failed++;
      say(`could not pause stack ${stack}: ${printable(messageOf(err))}`);
      paused.push(`| \`${stack}\` | NOT paused: ${printable(messageOf(err)).replace(/[|`]/g, "'")} |`);
    }
  }
  summarize(
    env,
    ["### The night's pause", "", ...(paused.length ? ["| Stack | |", "|---|---|", ...paused] : ["No pull request's stack."])].join("\n"),
  );
  Object.assign(process.env, settings);
  if (!settings.GITHUB_TOKEN) say("github-token is empty: the sweep cannot ask GitHub which pull requests are closed");
  const summary = env.GITHUB_STEP_SUMMARY ? ["--summary", env.GITHUB_STEP_SUMMARY] : [];
  const before = await prNumbers(suffix, dir, runEnv);
  for (const source of sources) {
    const common = ["--source", source, "--project-dir", dir];
    if ((await forks(["list", ...common])) !== 0) failed++;
    if ((await forks(["sweep", ...common, "--older-than", inputs["older-than"], "--apply", ...summary])) !== 0) failed++;
  }
  // A PR whose stack the sweep destroyed (expired, or closed without its close job) is told so: its comment offered a database.
  const after = new Set(await prNumbers(suffix, dir, runEnv));
  if (github.token)
    for (const pr of before.filter((n) => !after.has(n)))
      say(
        await upsertComment(github, pr, (old) =>
          withNightNote(
            old,
            `the sweep destroyed this database ${new Date().toISOString()} (expired, or its pull request closed); the next push makes a new one.`,
          ),
        ),
      );
  return failed === 0 ? 0 : 1;
}
