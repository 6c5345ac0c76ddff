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
import { currentGolden, goldenDigestOf, goldenStackName, madeBy, prPreparationFromGolden, refreshGolden, refreshReport } from "./golden";
import { EngineFailure, locked, programText, prNumbers, pulumiOk, recordedFork, selectOrCreate, stackNames, stackOutputs } from "./pulumi";
import { OutputsSchema, preparationFailure, prFix, readyReport, rulesChangedNote, summarize, withNightNote } from "./report";
import { changedAt, type Rules, rulesAt } from "./rules";
import { markdown as rehearsalReport } from "../rehearsal/report";
import { migrationFailed, type Rehearsal, rehearse } from "../rehearsal/rehearse";
import { outputLine } from "../rehearsal/cli";

const say = (line: string) => process.stdout.write(`${line}\n`);

/** The job's outputs: appended to the file GitHub reads them from. */
function append(file: string | undefined, name: string, value: string): void {
  if (!file) return;
  fs.appendFileSync(file, `${name}=${value}\n`);
}

/** A workflow command's message: one line, as GitHub reads it (`%`, CR and LF escaped). */
const command = (text: string) => text.replace(/%/g, "%25").replace(/\r/g, "%0D").replace(/\n/g, "%0A");

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

async function run(todo: Exclude<Todo, { command: "skip" }>, inputs: Inputs, env: NodeJS.ProcessEnv): Promise<number> {
  const repository = env.GITHUB_REPOSITORY as string;
  const settings = settingsOf(inputs);
  const runEnv: NodeJS.ProcessEnv = { ...env, ...settings, PULUMI_SKIP_UPDATE_CHECK: "true" };
  for (const k of Object.keys(runEnv)) if (k.startsWith("INPUT_")) delete runEnv[k];
  const github: GitHub = { apiUrl: env.GITHUB_API_URL || "https://api.github.com", token: inputs["github-token"], repository };
  const suffix = repository.replace("/", ".");
  const dir = path.join(env.RUNNER_TEMP ?? env.GITHUB_WORKSPACE ?? process.cwd(), "pr-database");
  fs.mkdirSync(dir, { recursive: true });
  const started = Date.now();

  /** The config of a stack, set in this job (each job is a fresh runner; nothing is read from an earlier job's files). */
  const configure = async (stack: string, pr: number, paused: boolean, source: Source) => {
    const values = [
      `sourceServiceId=${source.serviceId}`,
      `forkName=pr-${pr}.${suffix}`,
      `paused=${paused}`,
      `goldenSource=${source.golden}`,
      `dataTakenAt=${source.dataTakenAt}`,
      `goldenDigest=${source.goldenDigest}`,
      `tigercloud:requireMasking=${inputs["require-masking"]}`,
    ];
    await pulumiOk(["config", "set-all", "--stack", stack, ...values.flatMap((v) => ["--plaintext", v])], dir, runEnv, true);
  };
  const production: Source = { serviceId: inputs["source-service-id"], golden: false, dataTakenAt: "", goldenDigest: "" };
  /**
   * The source of the fork a PR's stack holds (its state; its outputs add what the action recorded,
   * where they speak of that fork's source: a replacement that failed leaves them stale), so that
   * neither a push nor a pause forks anew from a changed source (a refreshed golden fork, another
   * source-service-id); undefined when it holds no fork.
   */
  const recordedSource = async (stack: string): Promise<Source | undefined> => {
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
    const golden = forked.sourceServiceId !== production.serviceId && !forked.masks;
    return { serviceId: forked.sourceServiceId, golden, dataTakenAt: "", goldenDigest: "" };
  };
  /** A new PR database's source: the golden fork serving now (golden: true) if it was made by the base's `rules`, or production. */
  const freshSource = async (rules?: Rules, fromDefaultBranch = false): Promise<Source> => {
    if (inputs.golden !== "true") return production;
    const golden = await currentGolden(goldenStackName(inputs["source-service-id"], suffix), dir, runEnv);
    // Only the default branch's rules outrank the golden fork's: a PR into another branch (whose
    // rules anyone who can push it may weaken) gets the golden fork, masked by the default branch's.
    if (golden && rules && fromDefaultBranch && !madeBy(golden, rules)) {
      say(
        `::notice title=The rules changed since the golden fork was made::${command(
          `golden fork ${golden.serviceId} (its data as of ${golden.dataTakenAt}) was masked by other rules than ${rules.file} holds at ${rules.sha.slice(0, 7)}: ` +
            "this database is forked from production and masked in this job; the next night's refresh takes the rules as they are",
        )}`,
      );
      return production;
    }
    if (golden) return { serviceId: golden.serviceId, golden: true, dataTakenAt: golden.dataTakenAt, goldenDigest: golden.digest };
    say(
      `::notice title=No golden fork yet::${command(
        "golden: true, but no golden fork has been made yet (the nightly run makes it): this database is forked from production and masked in this job",
      )}`,
    );
    return production;
  };

  if (todo.command === "up") {
    const { pr, commits } = todo;
    const stack = `pr-${pr}.${suffix}`;
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
      if (rulesChanged) say(`::notice title=The rules file changes::${command(rulesChangedNote(rules.file, rulesFrom))}`);
    }
    // The project's file first: the CLI finds the stacks of the project it names.
    fs.writeFileSync(path.join(dir, "Pulumi.yaml"), programText(inputs, undefined, false));
    let source: Source | undefined = await recordedSource(stack);
    // A migration to rehearse starts from production's masked state on every push, never from what the
    // previous push's migration left: the previous push's fork deleted (a replacement in one update
    // would find it running under the same name and take it over), then a new one made below (of the
    // golden fork serving now, or of production, masked in this job).
    if (inputs.migrate !== "" && source) {
      say("the migration is rehearsed on a new fork: the previous push's fork is deleted first");
      await configure(stack, pr, false, source);
      await locked(stack, ["destroy", "--stack", stack, "--yes", "--skip-preview"], dir, runEnv);
      source = undefined;
    }
    // Into the default branch, a database forked from a golden fork made by other rules than the
    // base's now (a rule added since) is forked anew, as a changed prepare replaces a fork of production.
    const fromDefaultBranch =
      inputs.golden === "true" && rules !== undefined && commits.base.ref === (await defaultBranchHead(github)).branch;
    if (source?.golden && rules && fromDefaultBranch && source.goldenDigest !== goldenDigestOf(rules)) {
      say(
        `::notice title=The rules changed since this database was made::${command(
          `It was forked from golden fork ${source.serviceId}, masked by other rules than ${rules.file} holds at ${rules.sha.slice(0, 7)}: it is replaced by a new one`,
        )}`,
      );
      source = undefined;
    }
    source ??= await freshSource(rules, fromDefaultBranch);
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
    await configure(stack, pr, false, source);
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
      seconds: (Date.now() - started) / 1000,
    });
    const rehearsal = inputs.migrate === "" ? undefined : await rehearseMigration(inputs, url, env);
    const text = rehearsal ? `${report}\n\n${rehearsalReport(rehearsal)}` : report;
    summarize(env, text);
    say(await upsertComment(github, pr, text));
    return rehearsal ? rehearsalVerdict(rehearsal, inputs["fail-on-flag"] === "true") : 0;
  }

  fs.writeFileSync(path.join(dir, "Pulumi.yaml"), programText(inputs, undefined, todo.command === "nightly"));
  if (todo.command === "destroy") {
    const stack = `pr-${todo.pr}.${suffix}`;
    if (!(await prNumbers(suffix, dir, runEnv)).includes(todo.pr)) {
      say(`no stack ${stack}: nothing to delete`);
      return 0;
    }
    await pulumiOk(["stack", "select", stack], dir, runEnv, true);
    await configure(stack, todo.pr, false, (await recordedSource(stack)) ?? production);
    // The program's onDestroy: "delete": the fork and its data go; then the stack.
    await locked(stack, ["destroy", "--stack", stack, "--yes", "--skip-preview"], dir, runEnv);
    await pulumiOk(["stack", "rm", stack, "--yes"], dir, runEnv, true);
    say(`pull request #${todo.pr}: its fork deleted, stack ${stack} removed`);
    summarize(
      env,
      `### Database for this pull request: deleted\n\nThe pull request closed: fork \`${stack}\` and its data deleted, its stack removed.`,
    );
    if (github.token)
      say(
        await upsertComment(
          github,
          todo.pr,
          `### Database for this pull request: deleted\n\nThe pull request closed: the fork and its data were deleted.`,
        ),
      );
    return 0;
  }
  // Nightly: the golden fork refreshed (golden: true), every PR's fork paused (kept, data and all;
  // the PR's next push starts it), then the sweep.
  let failed = 0;
  if (inputs.golden === "true") {
    if (inputs.prepare === "") throw new ActionError("golden: true needs prepare: the rules file that masks the golden fork");
    if (!github.token) throw new ActionError("github-token is empty: the rules file is read from the default branch through GitHub's API");
    // The default branch's rules, at its head: never those of the branch a manual run was started on.
    const { branch, sha } = await defaultBranchHead(github);
    const rules = await rulesAt(github, inputs.prepare, sha, `the default branch, ${printable(branch)} (${sha.slice(0, 7)})`);
    if (env.GITHUB_REF && env.GITHUB_REF !== `refs/heads/${branch}`)
      say(
        `::notice title=The golden fork takes the default branch's rules::${command(
          `This run is on ${printable(env.GITHUB_REF)}: the golden fork is masked as ${printable(rules.file)} says on ${printable(branch)} (${sha.slice(0, 7)}), as every pull request's database is`,
        )}`,
      );
    const stack = goldenStackName(inputs["source-service-id"], suffix);
    say(
      `== stack ${stack}: a new golden fork of ${printable(inputs["source-service-id"])}, masked as ${printable(rules.file)} says on ${printable(branch)} at ${sha.slice(0, 7)}`,
    );
    const refreshed = await refreshGolden(inputs, rules, stack, path.join(dir, "golden"), runEnv);
    summarize(env, refreshReport(refreshed, rules));
    if (refreshed.failure) {
      failed++;
      say(
        `::error title=Golden fork not refreshed::${command(
          `${refreshed.failure}. ${refreshed.before ? `The golden fork ${refreshed.before.serviceId} (data as of ${refreshed.before.dataTakenAt}) keeps serving.` : "There is no golden fork yet."}`,
        )}`,
      );
    } else say(`golden fork ${printable(refreshed.after?.serviceId ?? "")} serves from now on (${refreshed.seconds.toFixed(1)} s)`);
  }
  const paused: string[] = [];
  // Every source a PR's fork was made from (production, golden forks): each one's forks are swept.
  const sources = new Set([inputs["source-service-id"]]);
  for (const pr of await prNumbers(suffix, dir, runEnv)) {
    const stack = `pr-${pr}.${suffix}`;
    say(`== stack ${stack}: pause`);
    try {
      await pulumiOk(["stack", "select", stack], dir, runEnv, true);
      // The night only pauses: a stack that holds no fork (its first up failed before forking) gets none.
      const source = await recordedSource(stack);
      if (!source) {
        say(`stack ${stack} holds no fork: nothing to pause`);
        paused.push(`| \`${stack}\` | no fork: nothing to pause |`);
        continue;
      }
      sources.add(source.serviceId);
      await configure(stack, pr, true, source);
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
