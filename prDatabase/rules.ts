// The rules file (the fork's `prepare`, with sqlFiles read in), as it is at one commit: a pull
// request's database is prepared by its base's rules, a policy of the branch it would merge into,
// never by the code under review. Read through GitHub's contents API at that commit (contents:
// read), so no checkout depth matters. Checked here as far as can be without the database: its
// shape and each rule's form; whether its tables and columns exist is known only on the fork, at up.
import * as path from "path";
import { z } from "zod";
import { messageOf, printable } from "../provider/text";
// The package's public entry pulumi-tigercloud/preparation: a rules file is checked by the provider's own rules.
import { PreparationSchema } from "../provider/resources/serviceFork/preparation/schema";
import { type GitHub, fileAt } from "./github";
import { ActionError } from "./inputs";

export interface Rules {
  /** The rules file, from the repository's root. */
  file: string;
  /** The commit it was read at. */
  sha: string;
  /** The fork's `prepare`: the file's rules, its SQL files' texts joined to `sql`. */
  preparation: Record<string, unknown>;
  /** How many `sql` entries the file holds itself: the ones after are its sqlFiles', in order. */
  inlineSql: number;
  sqlFiles: string[];
  /** Every text read (the file, then its SQL files): what a comparison of two commits' rules compares. */
  texts: string[];
}

const RulesFileSchema = z.looseObject({
  sqlFiles: z.array(z.string(), { error: "sqlFiles must be a list of paths" }).optional(),
});

/** A path of the repository (from its root), or a failure naming it: nothing outside, nothing absolute. */
function inRepository(from: string, file: string, what: string): string {
  const joined = path.posix.normalize(path.posix.join(from, file));
  if (path.posix.isAbsolute(file) || joined === ".." || joined.startsWith("../") || joined === ".")
    throw new ActionError(`${what} ${printable(file)} is outside the repository: name a file of the repository, from its root`);
  return joined;
}

/** The rules file `file` at commit `sha` (named `where` in messages), read, its SQL files read in, and checked. */
export async function rulesAt(github: GitHub, file: string, sha: string, where: string): Promise<Rules> {
  const rulesFile = inRepository("", file, "prepare: the rules file");
  const text = await fileAt(github, rulesFile, sha);
  if (text === undefined)
    throw new ActionError(
      `prepare: ${printable(rulesFile)} does not exist at ${where}: a pull request's database is prepared by its base's rules, ` +
        "so the rules file must be merged before a pull request can have a database",
    );
  const { parse } = require("yaml") as typeof import("yaml");
  let parsed: unknown;
  try {
    parsed = parse(text);
  } catch (err) {
    throw new ActionError(`prepare: ${printable(rulesFile)} (${where}) is not YAML or JSON: ${printable(messageOf(err)).slice(0, 300)}`);
  }
  const rules = RulesFileSchema.safeParse(parsed ?? {});
  if (!rules.success)
    throw new ActionError(`prepare: ${printable(rulesFile)} (${where}): ${rules.error.issues.map((i) => i.message).join("; ")}`);
  const { sqlFiles = [], ...preparation } = rules.data;
  const texts = [text];
  const read: string[] = [];
  for (const f of sqlFiles) {
    const sqlFile = inRepository(path.posix.dirname(rulesFile), f, `prepare: ${printable(rulesFile)} names sqlFiles`);
    const sql = await fileAt(github, sqlFile, sha);
    if (sql === undefined)
      throw new ActionError(`prepare: ${printable(rulesFile)} names sqlFiles ${printable(f)}, which does not exist at ${where}`);
    read.push(sql);
    texts.push(sql);
  }
  const given = (preparation as { sql?: unknown }).sql;
  const inline = Array.isArray(given) ? given : [];
  const declared = { ...preparation, ...(read.length > 0 ? { sql: [...inline, ...read] } : {}) };
  // The provider's own rules (no other key, each rule's form), so that nothing but rules reaches the program.
  const checked = PreparationSchema.safeParse(declared);
  if (!checked.success)
    throw new ActionError(
      `prepare: ${printable(rulesFile)} (${where}): ` +
        checked.error.issues.map((i) => `${ruleLabel(i.path.map(String)) || "(the file)"} ${i.message}`).join("; "),
    );
  return { file: rulesFile, sha, preparation: declared, inlineSql: inline.length, sqlFiles, texts };
}

/** ["mask", "1", "column"] as a reader finds it in the file: mask[1].column. */
const ruleLabel = (parts: string[]) => parts.map((p, i) => (/^\d+$/.test(p) ? `[${p}]` : i === 0 ? p : `.${p}`)).join("");

/** Whether the rules file (or a SQL file it names) reads otherwise at `sha` than `rules` do: any failure to read it counts as a change. */
export async function changedAt(github: GitHub, rules: Rules, sha: string): Promise<boolean> {
  try {
    const other = await rulesAt(github, rules.file, sha, "the pull request's head");
    return other.texts.length !== rules.texts.length || other.texts.some((t, i) => t !== rules.texts[i]);
  } catch {
    return true;
  }
}

/**
 * Where a step of the preparation comes from in the rules file, as the provider names it
 * (prepare.mask[1], prepare.sql[2]): a rule, an inline SQL text, or a SQL file.
 */
export function sourceOfStep(rules: Rules, step: string): string {
  const mask = /^prepare\.mask\[(\d+)\]/.exec(step);
  if (mask) return `mask[${mask[1]}] of ${rules.file}`;
  const sql = /^prepare\.sql\[(\d+)\]/.exec(step);
  if (sql) {
    const i = Number(sql[1]);
    return i < rules.inlineSql ? `sql[${i}] of ${rules.file}` : `sqlFiles ${rules.sqlFiles[i - rules.inlineSql] ?? "?"} of ${rules.file}`;
  }
  const after = /^prepare\.sqlAfter\[(\d+)\]/.exec(step);
  if (after) return `sqlAfter[${after[1]}] of ${rules.file}`;
  if (step.startsWith("prepare.pauseJobs")) return `pauseJobs of ${rules.file}`;
  return rules.file;
}
