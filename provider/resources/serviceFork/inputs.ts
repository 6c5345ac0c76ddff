// A fork's inputs: their schema (one parse for check and create), the diff rules, and the rules
// on sizes and timeouts that create and update apply. Pure: no request, no engine.
import { z } from "zod";
import { ENVIRONMENT_TAGS, FORK_STRATEGIES, type ForkServiceRequest } from "../../api/schemas";
import type { DiffRules } from "../../rules/diff";
import { booleanSchema, durationSchema, idSchema, nameSchema, deadlineIn, textSchema } from "../../rules/inputSchemas";
import { WAIT_DEFAULTS } from "../../workflows/waiting";

const SIZE_RULE = {
  cpuMillis: 'must be a whole number of millicores >= 1 (a number, or a string of digits), or "shared"',
  memoryGbs: 'must be a positive plain decimal number of gigabytes such as 4 or 0.5 (a number or a string), or "shared"',
};
const PLAIN_DECIMAL = /^(0|[1-9][0-9]{0,8})(\.[0-9]{1,6})?$/;

/** Sizes travel as strings: what check returns is the exact text create sends. */
const cpuMillisSchema = z
  .union([z.number(), z.string()], { error: SIZE_RULE.cpuMillis })
  .transform(String)
  .refine((v) => /^([1-9][0-9]{0,8}|shared)$/.test(v), SIZE_RULE.cpuMillis);
const memoryGbsSchema = z
  .union([z.number(), z.string()], { error: SIZE_RULE.memoryGbs })
  .transform(String)
  .refine((v) => v === "shared" || (PLAIN_DECIMAL.test(v) && Number(v) > 0), SIZE_RULE.memoryGbs);

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?(?:[Zz]|[+-](\d{2}):(\d{2}))$/;
const MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"];

/** What is wrong with a date-time, each kind of mistake with its own reason; undefined when right. */
/** @internal */
export function dateTimeProblem(text: string): string | undefined {
  const m = RFC3339.exec(text);
  if (!m) return "must be an RFC 3339 date-time such as 2026-11-01T12:00:00Z";
  const [year, month, day, hour, minute, second, offsetHours, offsetMinutes] = [1, 2, 3, 4, 5, 6, 8, 9].map((i) =>
    Number(m[i] ?? 0),
  ) as number[];
  if (month! < 1 || month! > 12) return `has month ${m[2]}: months are 01 to 12`;
  const days = new Date(Date.UTC(year!, month!, 0)).getUTCDate();
  if (day! < 1 || day! > days) return `has day ${m[3]}, and ${MONTHS[month! - 1]} ${m[1]} has ${days} days`;
  if (hour! > 23) return `has hour ${m[4]}: hours are 00 to 23`;
  if (minute! > 59) return `has minute ${m[5]}: minutes are 00 to 59`;
  if (second! > 59) return `has second ${m[6]}: seconds are 00 to 59`;
  if (offsetHours! > 23 || offsetMinutes! > 59) return `has offset ${text.slice(-6)}: offsets are -23:59 to +23:59`;
  if (Date.parse(text) > Date.now()) return "must not be in the future";
  return undefined;
}

const targetTimeSchema = textSchema(dateTimeProblem);

/** @internal */
export const ForkInputsSchema = z
  .strictObject({
    projectId: idSchema,
    sourceServiceId: idSchema,
    forkStrategy: z.enum(FORK_STRATEGIES, { error: `must be one of ${FORK_STRATEGIES.join(", ")}` }),
    targetTime: targetTimeSchema.optional(),
    cpuMillis: cpuMillisSchema.optional(),
    memoryGbs: memoryGbsSchema.optional(),
    environmentTag: z.enum(ENVIRONMENT_TAGS, { error: "must be DEV or PROD" }).optional(),
    name: nameSchema(128).optional(),
    waitForReady: booleanSchema.default(true),
    readyWhen: z
      .enum(["login", "status"], { error: 'must be "login" (READY and a working login) or "status" (READY only)' })
      .default("login"),
    adoptExisting: booleanSchema.default(true),
    paused: booleanSchema.default(false),
    adoptServiceId: idSchema.optional(),
    passwordOnAdopt: z.enum(["reset", "keep"], { error: 'must be "reset" or "keep"' }).default("reset"),
    onDestroy: z
      .enum(["stop", "delete"], { error: 'must be "stop" (keep the fork, paused, data and all) or "delete" (delete it and its data)' })
      .default("stop"),
    createTimeout: durationSchema.default(WAIT_DEFAULTS.createTimeout),
    updateTimeout: durationSchema.default(WAIT_DEFAULTS.updateTimeout),
    deleteTimeout: durationSchema.default(WAIT_DEFAULTS.deleteTimeout),
  })
  .superRefine((v, ctx) => {
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

/** @internal */
export const FORK_DIFF_RULES: DiffRules = {
  // What the fork is a copy of: only a new fork can change it.
  replaceKeys: ["projectId", "sourceServiceId", "forkStrategy", "targetTime"],
  // Changed in place, in this order (see update): start, rename, resize, setEnvironment, stop.
  updateKeys: ["name", "cpuMillis", "memoryGbs", "environmentTag", "paused"],
  // adoptServiceId is bookkeeping once created; another service's ID replaces (keysThatReplace).
  stateOnlyKeys: [
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
    keys: ["forkStrategy", "targetTime"],
    imported: (olds) => (olds.adopted as { reason?: unknown } | undefined)?.reason === IMPORTED_REASON,
  },
};

/** How an imported fork's state says where it came from (its `adopted` output); diff reads it. */
export const IMPORTED_REASON = "imported: taken under management by its ID (pulumi import, or the import option)";

/** Two sizes are the same when equal as text or as numbers ("4" and "4.0"). */
export const sameSize = (a: unknown, b: unknown) =>
  a === b || (typeof a === "string" && typeof b === "string" && a !== "shared" && b !== "shared" && Number(a) === Number(b));

/** A whole number, however written: "8", "8.0" and "8.000" are all 8 GB, which resize can make. */
export const WHOLE = /^[0-9]+(\.0*)?$/;
/** resize takes its sizes as strings of digits only (the API's spec): "8.0" is sent as "8", the same size. */
export const resizeDigits = (size: string) => size.replace(/\.0*$/, "");

/** createTimeout bounds the whole create: waiting for a busy source, then for the fork. */
export const createDeadline = (inputs: ForkInputs) => deadlineIn(inputs.createTimeout, WAIT_DEFAULTS.createTimeout);

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
