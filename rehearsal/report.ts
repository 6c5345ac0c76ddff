// A rehearsal as a reviewer reads it: the verdict first, then each statement (time, the locks
// that matter, what it rewrote), rows changed, TimescaleDB's chunks and aggregates, and the
// schema's difference. Markdown, for a PR comment, a job summary or a terminal. Every text from
// the database or the command is made printable and kept out of the table's syntax.
import { printable } from "../provider/text";
import { type Rehearsal, megabytes, migrationFailed } from "./rehearse";

/** Inside a code span: printable, no backtick, no pipe that would end the table's cell. */
const cell = (text: string) => printable(text).replace(/\|/g, "\\|").replace(/`/g, "'");
/** A name from the database (a relation), as a code span: no HTML, link, mention or emphasis of it is rendered. */
const name = (text: string) => `\`${cell(text)}\``;
/** Free text holding names (a flag, PostgreSQL's error): no HTML, link, mention or emphasis either. */
const prose = (text: string) =>
  cell(text)
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/([[\]*_~!#\\])/g, "\\$1")
    .replace(/@/g, "@&#8203;");
const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
const mode = (m: string) =>
  m
    .replace(/Lock$/, "")
    .replace(/([a-z])([A-Z])/g, "$1 $2")
    .toUpperCase();

export function markdown(r: Rehearsal): string {
  const lines: string[] = [];
  const failed = migrationFailed(r);
  lines.push(
    `### Migration rehearsal: ${failed ? "**failed**" : r.flags.length ? `**${r.flags.length} flagged**` : "nothing flagged"}`,
    "",
    `\`${cell(r.command)}\` ran ${seconds(r.ms)} on production's masked copy; ${r.statements.length} statement(s) seen.`,
    "",
  );
  if (r.flags.length) lines.push(...r.flags.map((f) => `- ⚠️ ${prose(f)}`), "");
  if (failed && r.output) {
    const printed = r.output
      .trim()
      .split("\n")
      .slice(-12)
      .map((l) => printable(l))
      .join("\n");
    // A fence longer than any run of backticks in it: no line of the output closes it.
    const fence = "`".repeat(Math.max(3, ...[...printed.matchAll(/`+/g)].map((m) => m[0].length + 1)));
    lines.push("What the migration printed last:", "", fence, printed, fence, "");
  }
  if (r.statements.length) {
    lines.push("| # | statement | time | locks held (longest first) | waited for | rewrote / built |", "|---|---|---|---|---|---|");
    r.statements.forEach((s, i) => {
      const locks = [...s.locks]
        .sort((a, b) => b.ms - a.ms)
        .slice(0, 4)
        .map((l) => `${l.blocksWrites ? "**" : ""}${mode(l.mode)}${l.blocksWrites ? "**" : ""} ${name(l.relation)} ${seconds(l.ms)}`)
        .join("<br>");
      const waited = s.waited.map((w) => `${mode(w.mode)} ${name(w.relation)} ${seconds(w.ms)}`).join("<br>");
      const rewrote = s.rewrote.map((w) => `${w.kind} ${name(w.relation)} (${megabytes(w.bytes)})`).join("<br>");
      lines.push(
        `| ${i + 1}${s.failed ? " ❌" : s.flags.length ? " ⚠️" : ""} | \`${cell(s.text)}\` | ${seconds(s.ms)} | ${locks} | ${waited} | ${rewrote} |`,
      );
    });
    lines.push("");
  }
  if (r.otherRewrites.length)
    lines.push(
      `Also rewritten or built: ${r.otherRewrites.map((w) => `${w.kind} ${name(w.relation)} (${megabytes(w.bytes)})`).join(", ")}.`,
      "",
    );
  if (r.rows.length)
    lines.push(`Rows changed: ${r.rows.map((c) => `${name(c.table)} +${c.inserted} ~${c.updated} -${c.deleted}`).join(", ")}.`, "");
  for (const c of r.chunks)
    lines.push(
      `Chunks of ${name(c.hypertable)}: ${c.before?.compressed ?? 0} → ${c.after?.compressed ?? 0} compressed, ` +
        `${c.before?.partial ?? 0} → ${c.after?.partial ?? 0} partly (rows written into compressed chunks), of ${c.after?.chunks ?? 0}.`,
    );
  if (r.chunks.length) lines.push("");
  if (r.schema.length) {
    lines.push("<details><summary>The schema's difference</summary>", "", "```diff");
    for (const c of r.schema) {
      if (c.change !== "added") lines.push(`- ${printable(c.key)}: ${printable(c.before ?? "")}`);
      if (c.change !== "removed") lines.push(`+ ${printable(c.key)}: ${printable(c.after ?? "")}`);
    }
    lines.push("```", "", "</details>", "");
  } else lines.push("The schema is unchanged.", "");
  lines.push(
    "Locks that stop writes are in bold; a table counts as written by production where it holds rows or its write counters show writes. " +
      "Times are the copy's, not production's: its load and hardware differ.",
  );
  return lines.join("\n");
}
