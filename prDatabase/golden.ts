// The golden fork (golden: true): production forked and masked once a night by the default
// branch's rules, checked, then stopped; pull requests' databases are forks of it, so a PR's job
// masks nothing and takes the same seconds whatever production's size. One golden fork per
// repository and source, in its own stack (golden-<source>.<owner>.<repo>, beside the PR stacks);
// a refresh makes the new one before the old one goes, and a failed one leaves the old one serving.
import * as fs from "fs";
import * as path from "path";
import { z } from "zod";
import { messageOf, printable } from "../provider/text";
import { PreparationSchema, preparationDigest } from "../provider/resources/serviceFork/preparation/schema";
import { defaultBranchHead, type GitHub } from "./github";
import { ActionError, type Inputs } from "./inputs";
import { EngineFailure, goldenProgramText, locked, pulumiOk, selectOrCreate, stackNames, stackOutputs } from "./pulumi";
import { cell, command, notice, preparationFailure, say, summarize } from "./report";
import { type Rules, rulesAt } from "./rules";

/** The golden fork serving now, as its stack's outputs say. */
export interface Golden {
  stack: string;
  serviceId: string;
  /** When its data was taken from production (its creation: it forks NOW). */
  dataTakenAt: string;
  generation: string;
  /** The digest of the preparation it was made with (prepared.digest). */
  digest: string;
}

const GoldenOutputsSchema = z.object({
  serviceId: z.string().min(1),
  created: z.string().min(1),
  generation: z.string().min(1),
  prepared: z.looseObject({ digest: z.string().min(1) }),
});

export const goldenStackName = (source: string, suffix: string) => `golden-${source}.${suffix}`;

/** The golden fork serving now; undefined when none has been made yet (no stack, or no refresh has succeeded). */
export async function currentGolden(stack: string, cwd: string, env: NodeJS.ProcessEnv): Promise<Golden | undefined> {
  if (!(await stackNames(cwd, env)).includes(stack)) return undefined;
  const outputs = (await stackOutputs(stack, cwd, env)) as Record<string, unknown>;
  if (Object.keys(outputs).length === 0) return undefined;
  const parsed = GoldenOutputsSchema.safeParse(outputs);
  if (!parsed.success)
    throw new ActionError(
      `stack ${stack}'s outputs are not a golden fork's (${parsed.error.issues.map((i) => i.path.join(".")).join(", ")})`,
    );
  return {
    stack,
    serviceId: parsed.data.serviceId,
    dataTakenAt: parsed.data.created,
    generation: parsed.data.generation,
    digest: parsed.data.prepared.digest,
  };
}

/**
 * Whether a golden fork (the one serving, or the one a PR's database was forked from: `digest`, as
 * the provider recorded its preparation) was made by `rules` as they read now: a rule added since
 * the night must not wait for the next one to mask a PR's database.
 */
export function madeBy(made: { digest: string }, rules: Rules): boolean {
  return made.digest === goldenDigestOf(rules);
}

/**
 * The golden fork a new PR database is forked from: the one serving, unless none has been made yet
 * or (into the default branch) the default branch's rules changed since it was (then production,
 * masked in the PR's job). Only the default branch's rules outrank the golden fork's: a PR into
 * another branch (whose rules anyone who can push it may weaken) gets the golden fork, masked by the
 * default branch's. Says which in a notice.
 */
export async function goldenToForkFrom(
  stack: string,
  rules: Rules | undefined,
  fromDefaultBranch: boolean,
  cwd: string,
  env: NodeJS.ProcessEnv,
): Promise<Golden | undefined> {
  const golden = await currentGolden(stack, cwd, env);
  if (golden && rules && fromDefaultBranch && !madeBy(golden, rules)) {
    notice(
      "The rules changed since the golden fork was made",
      `golden fork ${golden.serviceId} (its data as of ${golden.dataTakenAt}) was masked by other rules than ${rules.file} holds at ${rules.sha.slice(0, 7)}: ` +
        "this database is forked from production and masked in this job; the next night's refresh takes the rules as they are",
    );
    return undefined;
  }
  if (!golden)
    notice(
      "No golden fork yet",
      "golden: true, but no golden fork has been made yet (the nightly run makes it): this database is forked from production and masked in this job",
    );
  return golden;
}

/** Whether a PR's database forked from a golden fork made by other rules than the default branch's now is to be forked anew (said in a notice). */
export function forkedByOtherRules(
  source: { serviceId: string; golden: boolean; goldenDigest: string },
  rules: Rules | undefined,
  fromDefaultBranch: boolean,
): boolean {
  if (!source.golden || !rules || !fromDefaultBranch || madeBy({ digest: source.goldenDigest }, rules)) return false;
  notice(
    "The rules changed since this database was made",
    `It was forked from golden fork ${source.serviceId}, masked by other rules than ${rules.file} holds at ${rules.sha.slice(0, 7)}: it is replaced by a new one`,
  );
  return true;
}

/** The digest the provider records of a golden fork's preparation made by `rules`. */
export const goldenDigestOf = (rules: Rules): string => preparationDigest(PreparationSchema.parse(goldenPreparation(rules)));

/** What the golden fork's preparation is: every rule of the file but sqlAfter, which each pull request's database runs itself. */
export function goldenPreparation(rules: Rules): Record<string, unknown> {
  const { sqlAfter: _each, ...once } = rules.preparation as { sqlAfter?: unknown };
  const mask = (once as { mask?: unknown[] }).mask;
  if (!Array.isArray(mask) || mask.length === 0)
    throw new ActionError(
      `golden: true needs masking rules: ${printable(rules.file)} declares none, and a golden fork is what every pull request's database is forked from`,
    );
  return once;
}

/** What a pull request's database forked from the golden fork runs itself: the rules file's sqlAfter (a seed, a migration), if any. */
export function prPreparationFromGolden(rules: Rules | undefined): Record<string, unknown> | undefined {
  const after = (rules?.preparation as { sqlAfter?: unknown[] } | undefined)?.sqlAfter;
  return Array.isArray(after) && after.length > 0 ? { sqlAfter: after } : undefined;
}

export interface Refreshed {
  before: Golden | undefined;
  after: Golden | undefined;
  /** Whether the golden fork serving before was read (a failure before that leaves it unknown, not absent). */
  known: boolean;
  /** Why the refresh failed; the golden fork serving is then `before`. */
  failure?: string;
  seconds: number;
}

/** A new golden fork of `source`, prepared by `rules` and checked, then the old one deleted; or, failing, the old one kept. */
export async function refreshGolden(
  inputs: Inputs,
  rules: Rules,
  stack: string,
  dir: string,
  env: NodeJS.ProcessEnv,
  now = new Date(),
): Promise<Refreshed> {
  const started = Date.now();
  let before: Golden | undefined;
  let known = false;
  // A generation to the second. Two refreshes at once take turns (the stack's lock); one of the same
  // second declares the golden fork the first made, and its up changes nothing.
  const generation = now.toISOString().replace(/[-:]/g, "").replace("T", "-").slice(0, 15);
  const suffix = stack.slice(stack.indexOf(".") + 1);
  try {
    const preparation = goldenPreparation(rules);
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, "Pulumi.yaml"), goldenProgramText(inputs, preparation, generation));
    before = await currentGolden(stack, dir, env);
    known = true;
    await selectOrCreate(stack, dir, env);
    const values = [
      `sourceServiceId=${inputs["source-service-id"]}`,
      `forkName=golden-${generation}.${suffix}`,
      `tigercloud:requireMasking=${inputs["require-masking"]}`,
    ];
    await pulumiOk(["config", "set-all", "--stack", stack, ...values.flatMap((v) => ["--plaintext", v])], dir, env, true);
    await locked(stack, ["up", "--stack", stack, "--yes"], dir, env);
    const after = await currentGolden(stack, dir, env);
    if (!after || after.generation !== generation)
      throw new ActionError(`the update of stack ${stack} ended, but its outputs do not name generation ${generation}`);
    return { before, after, known, seconds: (Date.now() - started) / 1000 };
  } catch (err) {
    return { before, after: before, known, failure: whyFailed(err, rules), seconds: (Date.now() - started) / 1000 };
  }
}

/**
 * A failed refresh's cause: a failed preparation's rule in the rules file and PostgreSQL's word, or
 * else the engine's own error lines where it ran (never a secret: the provider's errors hold none).
 */
export function whyFailed(err: unknown, rules: Rules): string {
  const prepared =
    err instanceof EngineFailure
      ? preparationFailure(
          err.output,
          rules,
          `fix it in ${rules.file} on the default branch; the next refresh makes the golden fork again.`,
        )
      : undefined;
  if (prepared) return prepared.slice(0, 1500);
  const said = err instanceof EngineFailure ? err.output.split("\n").filter((l) => /\berror:/.test(l)) : [];
  const lines = said.map((l) => l.replace(/^\s*error:\s*/, "").trim()).filter(Boolean);
  return printable(lines.length ? lines.slice(-2).join(" / ") : messageOf(err)).slice(0, 1500);
}

/** The night's word on the golden fork, for the job's summary. */
export function refreshReport(r: Refreshed, rules: Rules): string {
  const at = (g: Golden) => `\`${cell(g.serviceId)}\`, its data as of ${cell(g.dataTakenAt)}`;
  if (r.failure)
    return [
      "### The golden fork: refresh FAILED",
      "",
      `Making a new golden fork by \`${cell(rules.file)}\` (${rules.sha.slice(0, 7)}) failed after ${r.seconds.toFixed(1)} s: ${cell(r.failure)}`,
      "",
      r.before
        ? `Yesterday's golden fork ${at(r.before)}, keeps serving: new pull requests' databases are forked from it.`
        : !r.known
          ? "Which golden fork serves could not be read: nothing was changed."
          : "There is no golden fork yet: new pull requests' databases are forked from production and masked in their own job.",
    ].join("\n");
  return [
    "### The golden fork: refreshed",
    "",
    "| | |",
    "|---|---|",
    `| Serving now | ${r.after ? at(r.after) : "none"} |`,
    `| Rules | \`${cell(rules.file)}\` at ${rules.sha.slice(0, 7)} |`,
    `| Replaced | ${r.before ? `${at(r.before)}: deleted (pull requests' databases forked from it keep working)` : "nothing (the first one)"} |`,
    `| Took | ${r.seconds.toFixed(1)} s (forked, masked, checked, stopped) |`,
  ].join("\n");
}

/**
 * The night's golden fork (golden: true): a new one made by the default branch's rules at its head
 * (never those of the branch a manual run was started on), or, failing, the one serving kept and
 * said. Whether it failed.
 */
export async function refreshGoldenTonight(
  inputs: Inputs,
  github: GitHub,
  stack: string,
  dir: string,
  env: NodeJS.ProcessEnv,
  jobEnv: NodeJS.ProcessEnv,
): Promise<boolean> {
  if (inputs.prepare === "") throw new ActionError("golden: true needs prepare: the rules file that masks the golden fork");
  if (!github.token) throw new ActionError("github-token is empty: the rules file is read from the default branch through GitHub's API");
  const { branch, sha } = await defaultBranchHead(github);
  const rules = await rulesAt(github, inputs.prepare, sha, `the default branch, ${printable(branch)} (${sha.slice(0, 7)})`);
  if (jobEnv.GITHUB_REF && jobEnv.GITHUB_REF !== `refs/heads/${branch}`)
    notice(
      "The golden fork takes the default branch's rules",
      `This run is on ${printable(jobEnv.GITHUB_REF)}: the golden fork is masked as ${printable(rules.file)} says on ${printable(branch)} (${sha.slice(0, 7)}), as every pull request's database is`,
    );
  say(
    `== stack ${stack}: a new golden fork of ${printable(inputs["source-service-id"])}, masked as ${printable(rules.file)} says on ${printable(branch)} at ${sha.slice(0, 7)}`,
  );
  const refreshed = await refreshGolden(inputs, rules, stack, dir, env);
  summarize(jobEnv, refreshReport(refreshed, rules));
  if (!refreshed.failure) {
    say(`golden fork ${printable(refreshed.after?.serviceId ?? "")} serves from now on (${refreshed.seconds.toFixed(1)} s)`);
    return false;
  }
  say(
    `::error title=Golden fork not refreshed::${command(
      `${refreshed.failure}. ${refreshed.before ? `The golden fork ${refreshed.before.serviceId} (data as of ${refreshed.before.dataTakenAt}) keeps serving.` : "There is no golden fork yet."}`,
    )}`,
  );
  return true;
}
