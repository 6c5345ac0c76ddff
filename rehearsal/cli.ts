// tigercloud-rehearse: a migration run against a database (a PR's masked copy of production)
// while the database is watched, then what it did: each statement's time, the locks it held and
// waited for, what it rewrote, rows changed, TimescaleDB's chunks and aggregates, the schema's
// difference, and the statements a reviewer should look at flagged.
import * as fs from "fs";
import { parseArgs } from "util";
import { z } from "zod";
import { messageOf, printable } from "../provider/text";
import { markdown } from "./report";
import { migrationFailed, rehearse } from "./rehearse";

const USAGE = `usage: tigercloud-rehearse --command "npx prisma migrate deploy" [--url URL] [--lock-threshold 1s]
                          [--rewrite-threshold 100MB] [--fail-on-flag] [--json FILE] [--summary FILE] [--interval 50ms]
Runs the command through the shell with DATABASE_URL set to the database (--url, default $DATABASE_URL),
watching it from a session of its own, then prints the report (Markdown). Exit 1 when the migration
failed (or, with --fail-on-flag, when anything was flagged); 2 for a wrong option.`;

export class UsageError extends Error {}

/** A line the command printed, for a log GitHub's runner reads: printable, and no workflow command in
 *  its older form (`##[command]`, found anywhere in a line; the `::command::` form must start one). */
export const outputLine = (line: string) => printable(line).replace(/##\[/g, "##\\[");

const DURATION = /^([0-9]+(?:\.[0-9]+)?)(ms|s)$/;
const SIZE = /^([0-9]+(?:\.[0-9]+)?)(kB|MB|GB)$/;
/** A duration such as "1s" or "250ms", in milliseconds; `name` is the option or input as its user writes it. */
export const duration = (name: string) =>
  z.string().transform((text, ctx) => {
    const m = DURATION.exec(text);
    if (!m) {
      ctx.addIssue({ code: "custom", message: `${name} is a duration such as "1s" or "250ms" (got "${printable(text)}")` });
      return z.NEVER;
    }
    return Number(m[1]) * (m[2] === "s" ? 1000 : 1);
  });

/** A size such as "100MB", in bytes. */
export const size = (name: string) =>
  z.string().transform((text, ctx) => {
    const m = SIZE.exec(text);
    if (!m) {
      ctx.addIssue({ code: "custom", message: `${name} is a size such as "100MB" (got "${printable(text)}")` });
      return z.NEVER;
    }
    return Number(m[1]) * { kB: 1024, MB: 1024 ** 2, GB: 1024 ** 3 }[m[2] as "kB" | "MB" | "GB"];
  });

const Options = z.object({
  command: z
    .string({ message: '--command is required: the migration to rehearse, such as "npx prisma migrate deploy"' })
    .min(1, "--command is empty"),
  url: z
    .string({ message: "--url (or DATABASE_URL) is required: the database to rehearse on" })
    .regex(/^postgres(ql)?:\/\//, "--url is a postgresql:// URL"),
  lockMs: duration("--lock-threshold"),
  rewriteBytes: size("--rewrite-threshold"),
  intervalMs: duration("--interval").refine((ms) => ms >= 10 && ms <= 1000, "--interval is between 10ms and 1s"),
  failOnFlag: z.boolean(),
  json: z.string().optional(),
  summary: z.string().optional(),
});

export async function main(
  argv: string[],
  env: NodeJS.ProcessEnv = process.env,
  out = process.stdout,
  err = process.stderr,
): Promise<number> {
  let options: z.infer<typeof Options>;
  try {
    const { values } = parseArgs({
      args: argv,
      options: {
        command: { type: "string" },
        url: { type: "string" },
        "lock-threshold": { type: "string", default: "1s" },
        "rewrite-threshold": { type: "string", default: "100MB" },
        interval: { type: "string", default: "50ms" },
        "fail-on-flag": { type: "boolean", default: false },
        json: { type: "string" },
        summary: { type: "string" },
        help: { type: "boolean", short: "h" },
      },
    });
    if (values.help) {
      out.write(`${USAGE}\n`);
      return 0;
    }
    const parsed = Options.safeParse({
      command: values.command,
      url: values.url ?? env.DATABASE_URL,
      lockMs: values["lock-threshold"],
      rewriteBytes: values["rewrite-threshold"],
      intervalMs: values.interval,
      failOnFlag: values["fail-on-flag"],
      json: values.json,
      summary: values.summary,
    });
    if (!parsed.success) throw new UsageError(parsed.error.issues.map((i) => i.message).join("; "));
    options = parsed.data;
  } catch (e) {
    err.write(`tigercloud-rehearse: ${printable(messageOf(e))}\n${USAGE}\n`);
    return 2;
  }
  try {
    err.write(`tigercloud-rehearse: running ${printable(options.command)}, watched every ${options.intervalMs} ms\n`);
    const r = await rehearse(options.url, options.command, options, (line) => err.write(`  | ${outputLine(line)}\n`));
    const text = markdown(r);
    out.write(`${text}\n`);
    if (options.json) fs.writeFileSync(options.json, `${JSON.stringify(r, null, 2)}\n`);
    if (options.summary) fs.appendFileSync(options.summary, `${text}\n`);
    return migrationFailed(r) || (options.failOnFlag && r.flags.length) ? 1 : 0;
  } catch (e) {
    // The URL's password never reaches the terminal.
    const password = decodeURIComponent(new URL(options.url).password);
    const said = password ? messageOf(e).split(password).join("***") : messageOf(e);
    err.write(`tigercloud-rehearse: the rehearsal could not run: ${printable(said)}\n`);
    return 1;
  }
}
