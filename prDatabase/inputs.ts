// What the PR database action is asked: the event GitHub started it for (read first: a pull request
// from another repository gets no database, whatever the inputs), then its inputs (INPUT_*, as the
// composite action's step hands them over), each checked by a rule that names the input.
import * as fs from "fs";
import { z } from "zod";
import { printable } from "../provider/text";
import { duration, size } from "../rehearsal/cli";

/** A failure of the action, its message for the job's annotation. */
export class ActionError extends Error {
  override name = "ActionError";
}

/** The secret inputs: masked in the log from the start, whatever the workflow passed them from. */
export const SECRET_INPUTS = ["tiger-secret-key", "pulumi-config-passphrase", "pulumi-access-token", "github-token"] as const;

const REPOSITORY = /^[A-Za-z0-9_-]+\/[A-Za-z0-9._-]+$/;
const SHA = /^[0-9a-f]{7,64}$/;

const secret = (input: string, from: string) =>
  z.string().min(1, { error: `${input} is empty: pass it from the repository's secrets (${input}: \${{ secrets.${from} }})` });

const InputsSchema = z
  .object({
    command: z.enum(["auto", "up", "destroy", "nightly"], { error: 'command must be "auto", "up", "destroy" or "nightly"' }),
    "source-service-id": z.string().regex(/^[^\s/]{1,128}$/, {
      error: "source-service-id must be a service ID, such as svc-1234567890 (vars.SOURCE_SERVICE_ID unset?)",
    }),
    prepare: z.string(),
    "rules-from": z.enum(["base", "head"], { error: 'rules-from must be "base" (the default) or "head"' }),
    expires: z.string(),
    "require-masking": z.enum(["true", "false"], { error: 'require-masking must be "true" or "false"' }),
    "older-than": z.string(),
    golden: z.enum(["true", "false"], { error: 'golden must be "true" or "false"' }),
    "tiger-public-key": secret("tiger-public-key", "TIGER_PUBLIC_KEY"),
    "tiger-secret-key": secret("tiger-secret-key", "TIGER_SECRET_KEY"),
    "tiger-project-id": z.string(),
    "tiger-api-url": z.string().refine((u) => u === "" || /^https?:\/\/[^\s]+$/.test(u), { error: "tiger-api-url must be an http(s) URL" }),
    "pulumi-backend-url": z.string(),
    "pulumi-config-passphrase": z.string(),
    "pulumi-access-token": z.string(),
    "github-token": z.string(),
    // The migration rehearsed on each push (empty: none), and what its report flags.
    migrate: z.string(),
    "lock-threshold": duration("lock-threshold"),
    "rewrite-threshold": size("rewrite-threshold"),
    "fail-on-flag": z.enum(["true", "false"], { error: 'fail-on-flag must be "true" or "false"' }),
    version: z.string().regex(/^[0-9]+\.[0-9]+\.[0-9]+/, { error: "the plugin's version is not known" }),
    "plugin-download-url": z.string().min(1),
  })
  .superRefine((i, ctx) => {
    if (i["pulumi-backend-url"] === "" && i["pulumi-access-token"] === "")
      ctx.addIssue({
        code: "custom",
        message:
          "pulumi-backend-url and pulumi-access-token are both empty: give the state backend (a URL with its passphrase, or Pulumi Cloud's token)",
      });
    if (i["pulumi-backend-url"] !== "" && i["pulumi-config-passphrase"] === "")
      ctx.addIssue({
        code: "custom",
        message:
          "pulumi-config-passphrase is empty: a backend of your own (pulumi-backend-url) keeps each stack's secrets encrypted with it",
      });
  });
export type Inputs = z.output<typeof InputsSchema>;

const DEFAULTS: Record<string, string> = {
  command: "auto",
  "rules-from": "base",
  expires: "7d",
  "require-masking": "true",
  "older-than": "2d",
  golden: "false",
  "lock-threshold": "1s",
  "rewrite-threshold": "100MB",
  "fail-on-flag": "false",
  "plugin-download-url": "github://api.github.com/tigercloud/pulumi-tigercloud",
};

/** The run's inputs, from the action's environment (INPUT_NAME_WITH_UNDERSCORES), each checked. */
export function readInputs(env: NodeJS.ProcessEnv): Inputs {
  const given: Record<string, string> = {};
  for (const key of Object.keys(InputsSchema.shape)) {
    const value = env[`INPUT_${key.toUpperCase().replace(/-/g, "_")}`] ?? "";
    given[key] = value === "" ? (DEFAULTS[key] ?? "") : value;
  }
  const parsed = InputsSchema.safeParse(given);
  if (!parsed.success) throw new ActionError(parsed.error.issues.map((i) => i.message).join("; "));
  return parsed.data;
}

/** The environment the Pulumi CLI and the janitor run with: the inputs under the names they read, nothing else of them. */
export function settingsOf(inputs: Inputs): Record<string, string> {
  const named: Record<string, string> = {
    TIGER_PUBLIC_KEY: inputs["tiger-public-key"],
    TIGER_SECRET_KEY: inputs["tiger-secret-key"],
    TIGER_PROJECT_ID: inputs["tiger-project-id"],
    TIGER_API_URL: inputs["tiger-api-url"],
    PULUMI_BACKEND_URL: inputs["pulumi-backend-url"],
    PULUMI_CONFIG_PASSPHRASE: inputs["pulumi-config-passphrase"],
    PULUMI_ACCESS_TOKEN: inputs["pulumi-access-token"],
    GITHUB_TOKEN: inputs["github-token"],
  };
  return Object.fromEntries(Object.entries(named).filter(([, v]) => v !== ""));
}

const EventSchema = z.looseObject({
  action: z.string().optional(),
  number: z.number().int().optional(),
  pull_request: z
    .looseObject({
      number: z.number().int().optional(),
      base: z.looseObject({ sha: z.string().optional(), ref: z.string().optional() }).optional(),
      head: z
        .looseObject({ sha: z.string().optional(), ref: z.string().optional(), repo: z.looseObject({ full_name: z.string() }).nullish() })
        .optional(),
    })
    .optional(),
});

/** A pull request's two commits: the base it would merge into, and its head. */
export interface Commits {
  base: { sha: string; ref: string };
  head: { sha: string };
}

export type Todo =
  | { command: "skip"; pr: number; why: string }
  | { command: "up"; pr: number; commits: Commits }
  | { command: "destroy"; pr: number }
  | { command: "nightly" };

/**
 * What the event asks for. Read before any input is checked: GitHub hands a run for another
 * repository's pull request no secrets and no variables, and such a run must end with a word, not
 * a failure.
 */
export function whatToDo(env: NodeJS.ProcessEnv): Todo {
  const repository = env.GITHUB_REPOSITORY ?? "";
  if (!REPOSITORY.test(repository))
    throw new ActionError(`GITHUB_REPOSITORY must be owner/name (GitHub sets it); it is "${printable(repository)}"`);
  const command = env.INPUT_COMMAND || "auto";
  const name = env.GITHUB_EVENT_NAME ?? "";
  if (name === "pull_request" || name === "pull_request_target") {
    let raw: unknown;
    try {
      raw = JSON.parse(fs.readFileSync(env.GITHUB_EVENT_PATH ?? "", "utf8"));
    } catch {
      throw new ActionError("the pull_request event's payload (GITHUB_EVENT_PATH) could not be read");
    }
    const event = EventSchema.parse(raw);
    const pr = event.pull_request?.number ?? event.number;
    if (pr === undefined) throw new ActionError("the pull_request event carries no pull request number");
    const from = event.pull_request?.head?.repo?.full_name;
    if (from !== repository)
      return {
        command: "skip",
        pr,
        why:
          `Pull request #${pr} comes from another repository (${printable(from ?? "a deleted fork")}): GitHub gives a run for it no ` +
          "secrets and no variables (pull_request_target would hand them to code no one has reviewed), so it gets no database. " +
          `A maintainer can push its branch to this repository (git fetch origin pull/${pr}/head:pr-${pr} && git push origin pr-${pr}) ` +
          "and open a pull request from there, which gets one.",
      };
    if (command === "nightly") return { command: "nightly" };
    if (command === "destroy" || (command === "auto" && event.action === "closed")) return { command: "destroy", pr };
    if (command !== "auto" && command !== "up") throw new ActionError('command must be "auto", "up", "destroy" or "nightly"');
    const base = event.pull_request?.base;
    const head = event.pull_request?.head;
    if (!base?.sha || !SHA.test(base.sha) || !head?.sha || !SHA.test(head.sha))
      throw new ActionError("the pull_request event names no base and head commit (pull_request.base.sha, pull_request.head.sha)");
    return { command: "up", pr, commits: { base: { sha: base.sha, ref: base.ref ?? "the base branch" }, head: { sha: head.sha } } };
  }
  if (command === "auto") {
    if (name === "schedule" || name === "workflow_dispatch") return { command: "nightly" };
    throw new ActionError(`the ${printable(name)} event says nothing to do: set command (up, destroy or nightly)`);
  }
  if (command !== "nightly") throw new ActionError(`command ${printable(command)} needs a pull_request event (its number)`);
  return { command: "nightly" };
}
