// What the PR database action tells the people around a pull request: the job's summary
// ($GITHUB_STEP_SUMMARY), the pull request's one comment (the same text), and, when the
// preparation fails, an error annotation naming the rule and what to fix. Never a secret: no URL,
// no password, no value of the database; names from outside written printable and out of Markdown.
import * as fs from "fs";
import { z } from "zod";
import { printable } from "../provider/text";
import { type Rules, sourceOfStep } from "./rules";

/** A line of the job's log. */
export const say = (line: string) => process.stdout.write(`${line}\n`);

/** A workflow command's message: one line, as GitHub reads it (`%`, CR and LF escaped). */
export const command = (text: string) => text.replace(/%/g, "%25").replace(/\r/g, "%0D").replace(/\n/g, "%0A");

/** A notice in the job's log (GitHub shows it on the run), titled. */
export const notice = (title: string, text: string) => say(`::notice title=${title}::${command(text)}`);

/** Text from outside, in a Markdown table's cell or a code span: printable, no backtick or pipe to break out. */
export const cell = (text: string) => printable(text).replace(/[`|<>]/g, "'");

/** Appends Markdown to the job's summary (a no-op outside GitHub). */
export function summarize(env: NodeJS.ProcessEnv, markdown: string): void {
  if (env.GITHUB_STEP_SUMMARY) fs.appendFileSync(env.GITHUB_STEP_SUMMARY, `${markdown.trimEnd()}\n\n`);
}

/** The fork's outputs after `up`, as `pulumi stack output --json` gives them. */
export const OutputsSchema = z.object({
  databaseUrl: z.string().min(1),
  serviceId: z.string().min(1),
  created: z.string().nullish(),
  expiresAt: z.string().nullish(),
  prepared: z
    .object({
      statements: z.number().optional(),
      masked: z.array(z.object({ rule: z.string(), with: z.string(), rows: z.number() })).optional(),
      jobsPaused: z.array(z.number()).optional(),
    })
    .nullish(),
  /** A fork of a golden fork: what the golden fork's mark, checked by the provider before the URL was published, says it masked. */
  maskedSource: z
    .object({
      serviceId: z.string(),
      masked: z.array(z.object({ table: z.string(), column: z.string(), with: z.string() })),
      dataTakenAt: z.string().nullish(),
    })
    .nullish(),
});
export type Outputs = z.output<typeof OutputsSchema>;

export interface Ready {
  pr: number;
  stack: string;
  /** What it is forked from: production, or a golden fork (masked already) and when its data was taken. */
  source: { serviceId: string; golden: boolean; dataTakenAt: string };
  production: string;
  outputs: Outputs;
  /** The rules the fork was prepared by, and which commit they were read at. */
  rules: Rules | undefined;
  rulesFrom: "base" | "head";
  baseRef: string;
  /** The pull request changes the rules file (they apply once merged). */
  rulesChanged: boolean;
  headSha: string;
  seconds: number;
}

const short = (sha: string) => sha.slice(0, 7);

/** How long ago `at` was, in hours and minutes. */
function age(at: string, now = Date.now()): string {
  const minutes = Math.max(0, Math.round((now - Date.parse(at)) / 60_000));
  return Number.isFinite(minutes) ? `${Math.floor(minutes / 60)} h ${minutes % 60} min` : "an unknown time";
}

/** The pull request's database, as the summary and the comment say it. */
export function readyReport(r: Ready): string {
  const o = r.outputs;
  const masked = o.prepared?.masked ?? [];
  const lines = [
    `### Database for this pull request: \`${cell(r.stack)}\``,
    "",
    "| | |",
    "|---|---|",
    r.source.golden
      ? `| Fork | \`${cell(o.serviceId)}\` of golden fork \`${cell(r.source.serviceId)}\` (production \`${cell(r.production)}\`, masked once), its data as of ${cell(r.source.dataTakenAt)} (${age(r.source.dataTakenAt)} old) |`
      : `| Fork | \`${cell(o.serviceId)}\` of \`${cell(r.source.serviceId)}\`, its data as of ${cell(o.created ?? "its creation")} |`,
    `| Rules | ${
      r.rules
        ? `\`${cell(r.rules.file)}\` as on ${r.rulesFrom === "base" ? `the base, ${cell(r.baseRef)}` : "this pull request's head (rules-from: head)"} (${short(r.rules.sha)})`
        : "none (no rules file): nothing masked"
    } |`,
    `| Masked | ${r.source.golden ? goldenMasked(o) : masked.length ? masked.map((m) => `\`${cell(m.rule)}\` (${cell(m.with)}): ${m.rows} rows`).join("<br>") : "nothing"} |`,
    `| Jobs paused | ${o.prepared?.jobsPaused?.length ? o.prepared.jobsPaused.join(", ") : "none"} |`,
    `| SQL texts run | ${o.prepared?.statements ?? 0} |`,
    `| Expires | ${cell(o.expiresAt ?? "never")} (the nightly sweep then destroys it; the next push makes a new one) |`,
    `| Took | ${r.seconds.toFixed(1)} s, for ${short(r.headSha)} |`,
    "",
    "The job's later steps have its URL as `DATABASE_URL`; at night it is paused, and the next push starts it. It is deleted when the pull request closes.",
  ];
  if (r.rulesChanged) lines.push("", rulesChangedNote(r.rules?.file ?? "the rules file", r.rulesFrom));
  return lines.join("\n");
}

/** What a fork of a golden fork says it has masked: the golden fork's mark, as the provider checked it. */
function goldenMasked(o: Outputs): string {
  const columns = o.maskedSource?.masked.map((m) => `\`${cell(m.table)}.${cell(m.column)}\` (${cell(m.with)})`) ?? [];
  return `in the golden fork, by the default branch's rules when it was made${columns.length ? `: ${columns.join("<br>")}` : ""}; nothing masked in this job`;
}

/** What a pull request that changes the rules file is told. */
export function rulesChangedNote(file: string, rulesFrom: "base" | "head"): string {
  return rulesFrom === "base"
    ? `This pull request changes ${cell(file)}: its rules take effect once it is merged. This database is prepared by the base's rules.`
    : `This pull request changes ${cell(file)}, and this workflow takes the rules from the head (rules-from: head): this database is prepared by the pull request's own rules.`;
}

/** Where a pull request's rules are fixed, and what happens then. */
export const prFix = (rulesFrom: "base" | "head", baseRef: string) =>
  rulesFrom === "base"
    ? `fix it on ${baseRef} (the rules are read from the pull request's base), then push again: the next run prepares the same fork.`
    : "fix it in this pull request and push again: the next run prepares the same fork.";

/**
 * What the job's annotation says of a failed `up`: the preparation's failure mapped to the rule of
 * the rules file, then `fix` (where to fix it); undefined when the engine's output holds no such failure.
 */
export function preparationFailure(output: string, rules: Rules | undefined, fix: string): string | undefined {
  const flat = output.replace(/\s*\n\s*/g, " ");
  // The provider's words: what failed, then what was kept (a sentence of its own).
  const m = /Preparing fork (\S+) failed at (.+?): (.+?)\. (?=Nothing of|The masking was|No job|The jobs paused|The fork is recorded)/.exec(
    flat,
  );
  if (!m) return undefined;
  const [, fork, step, why] = m as unknown as [string, string, string, string];
  const where = rules ? sourceOfStep(rules, step) : step;
  const stopped = /was stopped meanwhile/.test(flat)
    ? ` Fork ${fork} is stopped and its URL was never handed out;`
    : ` Fork ${fork}'s URL was never handed out;`;
  return printable(`${where}: ${step}: ${why}.${stopped} ${fix}`);
}

/** The line the night writes at the top of a pull request's comment (the one before it replaced). */
const NIGHT_LINE = /^> \*\*At night\*\*:.*\n\n/;

/** A pull request's comment with the night's word on its database at its top; undefined where there is no comment. */
export function withNightNote(existing: string | undefined, note: string): string | undefined {
  if (existing === undefined) return undefined;
  return `> **At night**: ${cell(note)}\n\n${existing.replace(NIGHT_LINE, "")}`;
}
