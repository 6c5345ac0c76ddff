// tigercloud-forks: the forks of a Tiger Cloud project held against what the Pulumi stacks hold,
// so that no fork outlives the pipeline that made it.
//   list    every fork: its source, status, age, size, when it expires, the stack that holds it and its PR
//   sweep   destroys the stacks of closed pull requests and the stacks whose forks have expired,
//           and removes old forks no stack holds that are named as the pipeline names its forks;
//           a dry run unless --apply
// Settings: TIGER_PUBLIC_KEY and TIGER_SECRET_KEY (or TIGER_API_KEY), TIGER_API_URL, and
// TIGER_PROJECT_ID (else the key's project); the Pulumi CLI as logged in, or PULUMI_BACKEND_URL;
// GITHUB_REPOSITORY, GITHUB_TOKEN and GITHUB_API_URL to ask GitHub about pull requests.
import * as fs from "fs";
import { parseArgs } from "util";
import { z } from "zod";
import { type TigerCloudClient, createClient } from "../provider/api/client";
import type { Service } from "../provider/api/schemas";
import { STOPPED_OR_GONE } from "../provider/api/statuses";
import { messageOf, printable } from "../provider/text";
import { PACKAGE_NAME, PACKAGE_VERSION } from "../provider/version";
import { type GitHubAccess } from "./github";
import {
  type Inventory,
  NamePattern,
  type PullRequestStacks,
  REQUEST_LIMIT_MS,
  holdersOf,
  pullRequestOf,
  readInventory,
} from "./inventory";
import { type Decision, type SweepRules, applySweep, describeAge, planSweep } from "./sweep";

const USAGE = `usage: tigercloud-forks list  [--source ID] [--json]
       tigercloud-forks sweep --source ID --older-than 7d [--fork-names GLOB] [--unheld delete|stop] [--apply] [--summary FILE]
       tigercloud-forks --help | --version
options: --project ID (default TIGER_PROJECT_ID, else the key's project), --repository OWNER/NAME
         (default GITHUB_REPOSITORY), --pr-stacks GLOB (default pr-*.OWNER.NAME; * is the PR number),
         --fork-names GLOB (sweep; default the same as --pr-stacks), --project-dir DIR (the PR stacks'
         Pulumi project, where the Pulumi CLI runs, and a sweep's \`pulumi destroy\`; default the
         current directory), --summary FILE (sweep: a Markdown table of what it kept and removed, and why,
         appended to FILE, such as $GITHUB_STEP_SUMMARY)`;

export class UsageError extends Error {}

/** "90m", "12h", "7d": how old an unheld fork must be before a sweep removes it. */
const AGE = /^([0-9]+)(m|h|d)$/;
/** A fork has no stack until the `up` that makes it ends: younger forks than this are never removed. */
const MIN_AGE_MS = 3_600_000;
export function ageMs(text: string): number {
  const m = AGE.exec(text);
  const ms = m ? Number(m[1]) * { m: 60_000, h: 3_600_000, d: 86_400_000 }[m[2] as "m" | "h" | "d"] : NaN;
  if (!(ms >= MIN_AGE_MS))
    throw new UsageError(
      `--older-than must be at least 1h, in minutes, hours or days, such as "90m", "12h" or "7d" (got "${printable(text)}"): ` +
        "a fork has no stack until the `up` that makes it ends, so a shorter limit could remove one being made",
    );
  return ms;
}
/** OWNER/NAME, as GITHUB_REPOSITORY gives it (an owner holds no "."), the same rule as examples/pr-fork's. */
const REPOSITORY = /^[A-Za-z0-9_-]+\/[A-Za-z0-9._-]+$/;

const OptionsSchema = z.object({
  project: z.string().min(1).optional(),
  source: z.string().min(1).optional(),
  repository: z.string().regex(REPOSITORY, "--repository (or GITHUB_REPOSITORY) must be OWNER/NAME").optional(),
  "pr-stacks": z.string().includes("*", { message: "--pr-stacks must hold a * where the PR number goes" }).optional(),
  "fork-names": z.string().min(1).optional(),
  "older-than": z.string().optional(),
  unheld: z.enum(["delete", "stop"], { message: '--unheld must be "delete" or "stop"' }).default("delete"),
  "project-dir": z.string().default("."),
  summary: z.string().min(1, { message: "--summary must name a file" }).optional(),
  apply: z.boolean().default(false),
  json: z.boolean().default(false),
});
type Options = z.infer<typeof OptionsSchema>;

/** What the command was asked: its usage or version (printed to stdout, exit 0), or a command to run. */
type Request = { command: "help" } | { command: "version" } | { command: "list" | "sweep"; options: Options };

function parseOptions(argv: string[]): Request {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        project: { type: "string" },
        source: { type: "string" },
        repository: { type: "string" },
        "pr-stacks": { type: "string" },
        "fork-names": { type: "string" },
        "older-than": { type: "string" },
        unheld: { type: "string" },
        "project-dir": { type: "string" },
        summary: { type: "string" },
        apply: { type: "boolean" },
        json: { type: "boolean" },
        help: { type: "boolean", short: "h" },
        version: { type: "boolean" },
      },
    });
  } catch (err) {
    throw new UsageError(printable(messageOf(err)));
  }
  // Asked for help or the version, a person gets it whatever else the line holds.
  if (parsed.values.help) return { command: "help" };
  if (parsed.values.version) return { command: "version" };
  const [command, ...extra] = parsed.positionals;
  if (!(command === "list" || command === "sweep") || extra.length > 0)
    throw new UsageError(`no such command: ${printable(argv.join(" "))}`);
  const env = (name: string) => (process.env[name] ? process.env[name] : undefined);
  const { help: _help, version: _version, ...values } = parsed.values;
  const given = { ...values, repository: values.repository ?? env("GITHUB_REPOSITORY") };
  const options = OptionsSchema.safeParse(given);
  if (!options.success) throw new UsageError(options.error.issues.map((i) => i.message).join("; "));
  return { command, options: options.data };
}

function prStacksOf(options: Options): PullRequestStacks | undefined {
  const { repository } = options;
  if (repository === undefined) return undefined;
  const glob = options["pr-stacks"] ?? `pr-*.${repository.replace("/", ".")}`;
  return { repository, stacks: new NamePattern(glob) };
}

function githubAccess(): GitHubAccess | undefined {
  const token = process.env.GITHUB_TOKEN || process.env.GH_TOKEN;
  return token ? { token, apiUrl: process.env.GITHUB_API_URL || "https://api.github.com" } : undefined;
}

async function projectOf(options: Options, client: TigerCloudClient): Promise<string> {
  const configured = options.project ?? (process.env.TIGER_PROJECT_ID || undefined);
  if (configured) return configured;
  const info = await client.authInfo({ deadline: Date.now() + REQUEST_LIMIT_MS });
  const project = (info.api_key ?? info.apiKey)?.project.id;
  if (!project)
    throw new Error(`these credentials (GET /auth/info: ${printable(info.type)}) name no project: set --project or TIGER_PROJECT_ID`);
  return project;
}

const size = (s: Service) => {
  const spec = s.resources?.[0]?.spec;
  return spec?.cpu_millis !== undefined && spec.memory_gbs !== undefined ? `${spec.cpu_millis / 1000} CPU/${spec.memory_gbs} GB` : "-";
};
/** "in 2d 3h", or "EXPIRED 5h 2m ago": when a held fork's declared expiry comes. */
const expiryIn = (ms: number) => (ms > 0 ? `in ${describeAge(ms)}` : `EXPIRED ${describeAge(-ms)} ago`);
const megabytes = (mb: number | undefined) => (mb === undefined ? "-" : mb >= 1024 ? `${(mb / 1024).toFixed(1)} GB` : `${mb} MB`);
const storage = (s: Service) => megabytes(s.metrics?.storage_mb);

/** One row per fork, as `list` shows it (the table, or --json). */
function rows(inventory: Inventory) {
  return inventory.forks.map((s) => {
    const holders = holdersOf(inventory, s.service_id);
    const pr = pullRequestOf(inventory, holders);
    const created = Date.parse(s.created ?? "");
    const expiresAt = holders.map((h) => h.expiresAt.get(s.service_id)).find((e) => e !== undefined);
    return {
      serviceId: s.service_id,
      name: s.name ?? "",
      sourceServiceId: s.forked_from?.service_id ?? "",
      status: s.status,
      created: s.created ?? null,
      age: Number.isNaN(created) ? "-" : describeAge(inventory.at - created),
      expiresAt: expiresAt ?? null,
      expires: expiresAt === undefined ? "-" : expiryIn(Date.parse(expiresAt) - inventory.at),
      compute: size(s),
      storage: storage(s),
      stacks: holders.map((h) => h.name),
      pullRequest: pr ? { number: pr.number, state: typeof pr.state === "string" ? pr.state : "unknown" } : null,
    };
  });
}

function table(header: string[], body: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((r) => (r[i] ?? "").length)));
  const line = (r: string[]) =>
    r
      .map((c, i) => c.padEnd(widths[i] ?? 0))
      .join("  ")
      .trimEnd();
  return [line(header), ...body.map(line)].join("\n");
}

/** What the forks no stack holds add up to: what a team pays for that no pipeline will remove. */
function unheldTotals(inventory: Inventory) {
  const unheld = inventory.forks.filter((s) => holdersOf(inventory, s.service_id).length === 0);
  const sum = (value: (s: Service) => number | undefined) => unheld.reduce((total, s) => total + (value(s) ?? 0), 0);
  return {
    forks: unheld.length,
    running: unheld.filter((s) => !STOPPED_OR_GONE.includes(s.status)).length,
    cpuMillis: sum((s) => (STOPPED_OR_GONE.includes(s.status) ? 0 : s.resources?.[0]?.spec?.cpu_millis)),
    storageMb: sum((s) => s.metrics?.storage_mb),
  };
}

function printList(inventory: Inventory, options: Options): void {
  const found = rows(inventory);
  const unheld = unheldTotals(inventory);
  if (options.json) {
    const standbys = inventory.standbys.map((s) => s.service_id);
    process.stdout.write(`${JSON.stringify({ projectId: inventory.projectId, forks: found, standbys, unheld }, null, 2)}\n`);
    return;
  }
  const of = options.source ? ` of service ${printable(options.source)}` : "";
  process.stdout.write(
    `${found.length} fork(s) in project ${printable(inventory.projectId)}${of}; ${inventory.stacks.length} stack(s) read\n`,
  );
  const body = found.map((r) => [
    r.serviceId,
    r.name,
    r.sourceServiceId,
    r.status,
    r.age,
    r.expires,
    r.compute,
    r.storage,
    r.stacks.join(", ") || "(none)",
    r.pullRequest ? `#${r.pullRequest.number} ${r.pullRequest.state}` : "-",
  ]);
  const printed = body.map((r) => r.map(printable));
  if (printed.length > 0)
    process.stdout.write(`${table(["ID", "NAME", "SOURCE", "STATUS", "AGE", "EXPIRES", "COMPUTE", "STORAGE", "STACK", "PR"], printed)}\n`);
  if (unheld.forks > 0)
    process.stdout.write(
      `held by no stack: ${unheld.forks} fork(s), ${unheld.running} running (${unheld.cpuMillis / 1000} CPU), ` +
        `${megabytes(unheld.storageMb)} of storage\n`,
    );
  if (inventory.standbys.length > 0)
    process.stdout.write(`${inventory.standbys.length} standby(s) of these sources not shown: part of their HA, never a fork\n`);
}

/** A sweep's rules from its options; every refusal comes before any request. */
function sweepRules(options: Options, prStacks: PullRequestStacks | undefined): SweepRules {
  const { source } = options;
  if (!source) throw new UsageError("sweep needs --source: the service whose forks it may remove");
  if (!options["older-than"])
    throw new UsageError("sweep needs --older-than: forks no stack holds are removed only when older (a fork being made has no stack yet)");
  const forkNames = options["fork-names"] ?? prStacks?.stacks.glob;
  if (!forkNames) throw new UsageError("sweep needs --fork-names (or --repository / GITHUB_REPOSITORY): how the pipeline names its forks");
  return {
    sourceServiceId: source,
    olderThanMs: ageMs(options["older-than"]),
    forkNames: new NamePattern(forkNames),
    unheld: options.unheld,
  };
}

async function sweep(client: TigerCloudClient, projectId: string, options: Options, rules: SweepRules, prStacks?: PullRequestStacks) {
  const github = githubAccess();
  const source = rules.sourceServiceId;
  const inventory = await readInventory({ client, projectId, source, prStacks, github, projectDir: options["project-dir"] });
  const print = (line: string) => process.stdout.write(`${line}\n`);
  print(
    `sweep of the forks of ${printable(source)} in project ${printable(projectId)}` +
      (options.apply ? "" : " (a dry run: nothing is changed; --apply does it)") +
      (prStacks && !github ? "; no GITHUB_TOKEN, so no PR stack is destroyed" : ""),
  );
  const decisions = planSweep(inventory, rules);
  if (decisions.length === 0) print("nothing to sweep: no PR stack, and no fork of this source");
  const rows: string[] = [];
  let elsewhere = 0;
  const context = {
    // The summary lists what is this pipeline's: another's forks of the same source are counted, not listed.
    outcome: (d: Decision, outcome: string) => (d.kind === "keep" && d.elsewhere ? elsewhere++ : rows.push(summaryRow(d, outcome))),
    client,
    projectId,
    sourceServiceId: source,
    stacks: inventory.stacks,
    pullRequests: prStacks && github ? { github, repository: prStacks.repository } : undefined,
    projectDir: options["project-dir"],
    print,
    requestDeadlineMs: REQUEST_LIMIT_MS,
  };
  const failed = await applySweep(decisions, context, options.apply);
  if (options.summary) {
    const head = `### Sweep of the forks of \`${cell(source)}\`${options.apply ? "" : " (a dry run)"}`;
    const table = rows.length ? ["| Stack or fork | Decision | Why | Outcome |", "|---|---|---|---|", ...rows] : ["Nothing to sweep."];
    const note = [
      ...(elsewhere
        ? [
            "",
            `${elsewhere} fork(s) of this source not named like ${cell(rules.forkNames.glob)} (another repository's or pipeline's) left alone, not listed.`,
          ]
        : []),
      ...(prStacks && !github
        ? ["", "No GitHub token: no pull request's state was asked, so no PR stack was destroyed for a closed PR."]
        : []),
    ];
    fs.appendFileSync(options.summary, `${[head, "", ...table, ...note].join("\n")}\n\n`);
  }
  if (inventory.standbys.length > 0)
    print(`${inventory.standbys.length} standby(s) of ${printable(source)} left alone: part of its HA, never a fork`);
  if (failed === 0) return 0;
  process.stderr.write(`tigercloud-forks: ${failed} action(s) failed (see above); the others were carried out\n`);
  return 1;
}

/** Text from outside in a Markdown table's cell: printable, no pipe or backtick to break out. */
const cell = (text: string) => printable(text).replace(/[`|<>]/g, "'");

function summaryRow(d: Decision, outcome: string): string {
  const what = "stack" in d ? `stack \`${cell(d.stack.name)}\`` : `fork \`${cell(d.fork.service_id)}\` ${cell(d.fork.name ?? "")}`;
  return `| ${what} | ${cell(d.kind)} | ${cell(d.why)} | ${cell(outcome)} |`;
}

export async function main(argv: string[]): Promise<number> {
  let client: TigerCloudClient | undefined;
  try {
    const request = parseOptions(argv);
    if (request.command === "help") {
      process.stdout.write(`${USAGE}\n`);
      return 0;
    }
    if (request.command === "version") {
      process.stdout.write(`tigercloud-forks (${PACKAGE_NAME}) ${PACKAGE_VERSION}\n`);
      return 0;
    }
    const { command, options } = request;
    const prStacks = prStacksOf(options);
    const rules = command === "sweep" ? sweepRules(options, prStacks) : undefined;
    client = createClient();
    const projectId = await projectOf(options, client);
    if (!rules) {
      printList(
        await readInventory({
          client,
          projectId,
          source: options.source,
          prStacks,
          github: githubAccess(),
          projectDir: options["project-dir"],
        }),
        options,
      );
      return 0;
    }
    return await sweep(client, projectId, options, rules, prStacks);
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(`tigercloud-forks: ${err.message}\n${USAGE}\n`);
      return 2;
    }
    const message = messageOf(err);
    process.stderr.write(`tigercloud-forks: ${printable(client ? client.redact(message) : message)}\nNothing was changed.\n`);
    return 1;
  }
}
