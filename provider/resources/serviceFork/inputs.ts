// A fork's inputs: their schema (one parse for check and create), the diff rules, and the rules
// on sizes and timeouts that create and update apply. Pure: no request, no engine.
import { z } from "zod";
import { ENVIRONMENT_TAGS, FORK_STRATEGIES, type ForkServiceRequest } from "../../api/schemas";
import type { DiffRules } from "../../rules/diff";
import type { CallContext } from "../../context/context";
import { booleanSchema, calendarProblem, durationSchema, idSchema, limitOf, nameSchema, textSchema } from "../../rules/inputSchemas";
import { WAIT_DEFAULTS } from "../../policies/waiting";
import { expiresProblem } from "./expiry";
import { PreparationSchema } from "./preparation";

const SIZE_RULE = {
  cpuMillis: 'must be a whole number of millicores >= 1 (a number, or a string of digits), or "shared"',
  memoryGbs: 'must be a positive plain decimal number of gigabytes such as 4 or 0.5 (a number or a string), or "shared"',
};
const PLAIN_DECIMAL = /^(0|[1-9][0-9]{0,8})(\.[0-9]{1,6})?$/;

/** Sizes travel as strings: what check returns is the exact text create sends. */
const cpuMillisSchema = z
  .union([z.number().int({ error: SIZE_RULE.cpuMillis }), z.string()], { error: SIZE_RULE.cpuMillis })
  .transform(String)
  .refine((v) => /^([1-9][0-9]{0,8}|shared)$/.test(v), SIZE_RULE.cpuMillis);
const memoryGbsSchema = z
  .union([z.number(), z.string()], { error: SIZE_RULE.memoryGbs })
  .transform(String)
  .refine((v) => v === "shared" || (PLAIN_DECIMAL.test(v) && Number(v) > 0), SIZE_RULE.memoryGbs);

/** What is wrong with a date-time in the past, each kind of mistake with its own reason; undefined when right. */
/** @internal */
export function dateTimeProblem(text: string): string | undefined {
  const problem = calendarProblem(text);
  if (problem) return problem;
  if (Date.parse(text) > Date.now()) return "must not be in the future";
  return undefined;
}

const targetTimeSchema = textSchema(dateTimeProblem);

/** The defaults of the settings a fork records (its state holds them, from these, whatever wrote it). */
export const FORK_SETTING_DEFAULTS = {
  waitForReady: true,
  readyWhen: "login",
  createTimeout: WAIT_DEFAULTS.createTimeout,
  updateTimeout: WAIT_DEFAULTS.updateTimeout,
  deleteTimeout: WAIT_DEFAULTS.deleteTimeout,
  adoptExisting: true,
  passwordOnAdopt: "reset",
  onDestroy: "stop",
} as const;

/** The inputs' shape: each input's rule and, as its description, what a program's documentation says of it. */
const FORK_INPUTS = {
  projectId: idSchema.describe(
    "The project of the source service and of the fork. Default: the provider's project (stack config tigercloud:projectId, or TIGER_PROJECT_ID, else the key's project).",
  ),
  sourceServiceId: idSchema.describe("The service to fork."),
  forkStrategy: z
    .enum(FORK_STRATEGIES, { error: `must be one of ${FORK_STRATEGIES.join(", ")}` })
    .meta({
      typeDescription: "How a fork copies its source's data.",
      values: {
        LAST_SNAPSHOT: "The data as of the source's last snapshot.",
        NOW: "The data as it is now.",
        PITR: "The data as it was at a point in time, the target time declared: point-in-time recovery.",
      },
    })
    .describe('"LAST_SNAPSHOT", "NOW", or "PITR" (point in time: needs targetTime).'),
  targetTime: targetTimeSchema.optional().describe("RFC 3339 time to fork at; required with PITR and only with PITR; not in the future."),
  // The SDKs of other languages type the sizes as strings ("2000", "shared"): a union there would be
  // untyped in Go. A TypeScript program and a YAML program may give a number as well.
  cpuMillis: cpuMillisSchema
    .optional()
    .meta({ sdkType: "string" })
    .describe('The CPU, in whole millicores >= 1 such as "2000", or "shared" (with memoryGbs "shared" too). Default: the parent\'s.'),
  memoryGbs: memoryGbsSchema
    .optional()
    .meta({ sdkType: "string" })
    .describe(
      'The memory, in gigabytes, a positive plain decimal such as "8" or "0.5", or "shared" (with cpuMillis "shared" too). Default: the parent\'s.',
    ),
  environmentTag: z
    .enum(ENVIRONMENT_TAGS, { error: "must be DEV or PROD" })
    .optional()
    .meta({
      typeDescription: "The environment a service is tagged with.",
      values: { DEV: "A development service.", PROD: "A production service." },
    })
    .describe('"DEV" or "PROD". Unset: a new fork gets the API\'s default ("DEV"); an adopted fork keeps its tag.'),
  name: nameSchema(128)
    .optional()
    .describe('1 to 128 characters, not blank, no control or invisible characters (zero-width joiners). Default: "<parent name>-fork".'),
  waitForReady: booleanSchema
    .default(FORK_SETTING_DEFAULTS.waitForReady)
    .describe(
      "Wait for the API's work to finish: until the fork is READY after create, and until it is PAUSED after destroy. Default true.",
    ),
  readyWhen: z
    .enum(["login", "status"], { error: 'must be "login" (READY and a working login) or "status" (READY only)' })
    .default(FORK_SETTING_DEFAULTS.readyWhen)
    .meta({
      typeDescription: "What counts as ready when a fork's create waits for it.",
      values: { login: "READY, and then a working login as tsdbadmin (SELECT 1).", status: "READY only." },
    })
    .describe(
      'What counts as ready when create waits (waitForReady): "login" (default), READY and then a working login as tsdbadmin (`SELECT 1`); ' +
        'or "status", READY only. The service has been seen to report READY before its database accepts connections.',
    ),
  createTimeout: durationSchema
    .default(FORK_SETTING_DEFAULTS.createTimeout)
    .describe('How long create waits, for a busy source, for READY and for a login, e.g. "30m" (default); at most "24h".'),
  updateTimeout: durationSchema
    .default(FORK_SETTING_DEFAULTS.updateTimeout)
    .describe(
      'How long an in-place change (rename, resize, environment) waits, for a busy fork and then for READY with the new size, e.g. "30m" (default); at most "24h".',
    ),
  deleteTimeout: durationSchema
    .default(FORK_SETTING_DEFAULTS.deleteTimeout)
    .describe('How long destroy waits, for a busy fork and then for PAUSED, e.g. "10m" (default); at most "24h".'),
  adoptExisting: booleanSchema
    .default(FORK_SETTING_DEFAULTS.adoptExisting)
    .describe(
      "With a name: before forking, take over a running fork of the same source with that name (one left by a killed or failed `pulumi up`, " +
        "or made elsewhere) instead of making a second one. Default true. Two stacks that declare the same name from the same source share a fork.",
    ),
  paused: booleanSchema
    .default(false)
    .describe(
      "Keep the fork stopped (true) or running (false, the default). A change is made in place: `stop` then PAUSED (within deleteTimeout), " +
        "or `start` then READY (within createTimeout). A fork created paused is forked, waited for, then stopped. Refresh reads it back " +
        "from the status, so a fork paused elsewhere shows as drift.",
    ),
  adoptServiceId: idSchema
    .optional()
    .describe(
      "Take this existing fork under management instead of forking. It must be a running fork of sourceServiceId (named `name`, if that is given). " +
        "After create it is bookkeeping: removing it changes nothing; another ID replaces.",
    ),
  passwordOnAdopt: z
    .enum(["reset", "keep"], { error: 'must be "reset" or "keep"' })
    .default(FORK_SETTING_DEFAULTS.passwordOnAdopt)
    .meta({
      typeDescription: "What adopting a fork does to its password, which is not known.",
      values: { reset: "Set a new random one, recorded as a secret.", keep: "Leave it; the password output stays empty." },
    })
    .describe(
      'When a fork is adopted, its initial password is not known. "reset" (default): set a new random one (updatePassword), recorded as a ' +
        "secret like a new fork's. \"keep\": leave it; the password output stays empty. Two stacks sharing one fork reset each other's password.",
    ),
  prepare: PreparationSchema.optional().describe(
    "What is done to the fork before anyone gets it, as tsdbadmin: its TimescaleDB jobs paused (committed first), then SQL and masking " +
      "rules in one transaction. It runs once the fork accepts logins; initialPassword, connectionUri and poolerConnectionUri are published only after it. If it fails, the " +
      "fork stays recorded, nothing of it is kept, no connection string is published, and the next `up` runs it again. A new fork and a " +
      "fork taken over are prepared. A change of it replaces a prepared fork (a new copy of the source, prepared the new way: masked data " +
      "cannot be unmasked); while the preparation has not finished (it failed), the next `up` runs the new one on the same fork.",
  ),
  expires: textSchema(expiresProblem)
    .optional()
    .describe(
      'When the fork expires: a duration after its creation such as "72h" or "7d" (1h to 90d), or an RFC 3339 time. Recorded as ' +
        "expiresAt; `tigercloud-forks list` shows it, and `tigercloud-forks sweep` destroys the pull requests' stacks whose forks have expired. " +
        "Nothing else acts on it: a fork does not end by itself without the sweep.",
    ),
  unmaskedReason: nameSchema(500)
    .optional()
    .describe(
      "Why this fork of a service tagged PROD may hold production's data unmasked, where the provider's setting asks for masking " +
        "rules (TIGER_REQUIRE_MASKING): recorded in state and shown in the plan. Not needed otherwise.",
    ),
  onDestroy: z
    .enum(["stop", "delete"], { error: 'must be "stop" (keep the fork, paused, data and all) or "delete" (delete it and its data)' })
    .default(FORK_SETTING_DEFAULTS.onDestroy)
    .meta({
      typeDescription: "What destroying the resource does to the fork.",
      values: {
        stop: "Stop it: it stays, paused, with its data, and its storage is still billed.",
        delete: "Delete it, and its data, for good.",
      },
    })
    .describe(
      'What destroying this resource (or replacing it) does to the fork. "stop" (default): stop it; it stays, paused, with its data, and ' +
        'storage is still billed. "delete": delete it and wait until the API says DELETED (or no longer knows it); its data is gone for good. ' +
        "Only a fork of sourceServiceId is ever deleted, and never one another resource of the run holds or would take over. The value " +
        "recorded by the last `up` is the one destroy uses.",
    ),
};

/** @internal */
export const ForkInputsSchema = z.strictObject(FORK_INPUTS).superRefine((v, ctx) => {
  const involves = ["forkStrategy", "targetTime"];
  if (v.forkStrategy === "PITR" && v.targetTime === undefined) {
    ctx.addIssue({ code: "custom", path: ["targetTime"], message: "is required when forkStrategy is PITR", params: { involves } });
  }
  if (v.forkStrategy !== "PITR" && v.targetTime !== undefined) {
    ctx.addIssue({
      code: "custom",
      path: ["targetTime"],
      message: `is allowed only when forkStrategy is PITR (it is ${v.forkStrategy})`,
      params: { involves },
    });
  }
  if (v.prepare !== undefined && !v.waitForReady) {
    ctx.addIssue({
      code: "custom",
      path: ["waitForReady"],
      message: "must be true when prepare is declared: a fork is prepared once it is READY and accepts logins, before create ends",
      params: { involves: ["prepare"] },
    });
  }
  const shared = [v.cpuMillis === "shared", v.memoryGbs === "shared"];
  if (shared[0] !== shared[1]) {
    ctx.addIssue({
      code: "custom",
      path: [shared[0] ? "memoryGbs" : "cpuMillis"],
      message: 'must be "shared" too: cpuMillis and memoryGbs are both "shared" or neither',
      params: { involves: ["cpuMillis", "memoryGbs"] },
    });
  }
});
export type ForkInputs = z.output<typeof ForkInputsSchema>;
/** The inputs as a program declares them (before defaults). */
export type ForkDeclaration = z.input<typeof ForkInputsSchema>;

/** @internal */
export const FORK_DIFF_RULES: DiffRules<ForkInputs> = {
  // What the fork is a copy of: only a new fork can change it.
  replaceKeys: ["projectId", "sourceServiceId", "forkStrategy", "targetTime"],
  // Changed in place, in this order (see update): start, rename, resize, setEnvironment, stop.
  updateKeys: ["name", "cpuMillis", "memoryGbs", "environmentTag", "paused"],
  // adoptServiceId is bookkeeping once created; another service's ID replaces (the resource's diff).
  // prepare: run again in place while the fork's preparation has not finished; on a prepared
  // fork, a change replaces it (preview.ts): masked data cannot be unmasked.
  stateOnlyKeys: [
    "prepare",
    "unmaskedReason",
    "expires",
    "waitForReady",
    "readyWhen",
    "createTimeout",
    "updateTimeout",
    "deleteTimeout",
    "adoptExisting",
    "adoptServiceId",
    "passwordOnAdopt",
    "onDestroy",
  ],
  // Left unset, these have no opinion: any name (the default one), the size the fork has, the
  // fork already held.
  optionalDeclared: ["name", "cpuMillis", "memoryGbs", "environmentTag", "adoptServiceId"],
  // How the fork was made: for an imported fork (imported.ts), history the API does not keep.
  howMade: {
    keys: ["forkStrategy", "targetTime", "prepare"],
    imported: (recorded) => wasImported(recorded),
  },
};

/** How an imported fork's state says where it came from (its `adopted` output); diff reads it. */
export const IMPORTED_REASON = "imported: taken under management by its ID (pulumi import, or the import option)";

/** Whether recorded state says the fork was imported (its `adopted.reason`). */
function wasImported(recorded: object): boolean {
  const adopted = "adopted" in recorded ? recorded.adopted : undefined;
  return typeof adopted === "object" && adopted !== null && "reason" in adopted && adopted.reason === IMPORTED_REASON;
}

/** Two sizes are the same when equal as text or as numbers ("4" and "4.0"). */
export const sameSize = (a: unknown, b: unknown) =>
  a === b || (typeof a === "string" && typeof b === "string" && a !== "shared" && b !== "shared" && Number(a) === Number(b));

/** A whole number, however written: "8", "8.0" and "8.000" are all 8 GB, which resize can make. */
export const WHOLE = /^[0-9]+(\.0*)?$/;
/** resize takes its sizes as strings of digits only (the API's spec): "8.0" is sent as "8", the same size. */
export const resizeDigits = (size: string) => size.replace(/\.0*$/, "");

/** createTimeout (or the host's limit) bounds the whole create: waiting for a busy source, then for the fork. */
export const createLimit = (ctx: CallContext, inputs: ForkInputs) =>
  limitOf(ctx, inputs.createTimeout, WAIT_DEFAULTS.createTimeout, "createTimeout");
/** updateTimeout (or the host's limit) bounds an in-place change made while the fork runs. */
export const updateLimit = (ctx: CallContext, inputs: Pick<ForkInputs, "updateTimeout">) =>
  limitOf(ctx, inputs.updateTimeout, WAIT_DEFAULTS.updateTimeout, "updateTimeout");
/** deleteTimeout (or the host's limit) bounds a stop and a delete. */
export const deleteLimit = (ctx: CallContext, recorded: { deleteTimeout?: string | undefined }) =>
  limitOf(ctx, recorded.deleteTimeout, WAIT_DEFAULTS.deleteTimeout, "deleteTimeout");

/** The forkService body: the checked inputs, unchanged. */
export function forkRequest(inputs: ForkInputs): ForkServiceRequest {
  const body: ForkServiceRequest = { fork_strategy: inputs.forkStrategy };
  if (inputs.environmentTag !== undefined) body.environment_tag = inputs.environmentTag;
  if (inputs.targetTime !== undefined) body.target_time = inputs.targetTime;
  if (inputs.cpuMillis !== undefined) body.cpu_millis = inputs.cpuMillis;
  if (inputs.memoryGbs !== undefined) body.memory_gbs = inputs.memoryGbs;
  if (inputs.name !== undefined) body.name = inputs.name;
  return body;
}
