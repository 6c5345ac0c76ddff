// The project of a resource that sets no projectId, where neither stack config nor the environment
// sets one either: the API key's own. A key belongs to exactly one project, and GET /auth/info
// names it (the official CLI asks the same); a user's OAuth token names none, and then projectId
// must be set. Asked at most once per provider process, with preview's short limits; a preview
// with verifyReferences off asks nothing.
import type { AuthInfo } from "../api/schemas";
import { SETTING_SOURCES } from "../settings";
import { printable } from "../text";
import type { CallContext } from "../engine/host";
import type { ProjectSource } from "../rules/inputs";
import { runSlot } from "../run";
import { VERIFY_LIMITS } from "./verify";

/** This run's question to the key, while one is under way or once it was answered. */
const ASKED = runSlot((): { answer?: Promise<ProjectSource> } => ({}));

/**
 * GET /auth/info, once per run (a provider process has one): every resource shares the answer,
 * and a request under way. A failure is not kept, so a later resource asks again: it is dropped
 * once settled, whether it came before any request was sent or from the API.
 */
function askTheKey(ctx: CallContext): Promise<ProjectSource> {
  const run = ctx.learnt(ASKED);
  if (run.answer) return run.answer;
  const answer = projectOfTheKey(ctx);
  run.answer = answer;
  void answer.then((source) => {
    if ("failure" in source && run.answer === answer) delete run.answer;
  });
  return answer;
}

async function projectOfTheKey(ctx: CallContext): Promise<ProjectSource> {
  const { config, env } = SETTING_SOURCES.projectId;
  const unset = `projectId is required: it is not set on the resource, nor in ${config} (stack config) or ${env}`;
  const fix = `Set projectId on the resource, or ${config} / ${env}.`;
  const source = ctx.credentialSource;
  let info: AuthInfo;
  try {
    info = await ctx.client(VERIFY_LIMITS).authInfo();
  } catch (err) {
    const tried = source
      ? `asking the API which project the key belongs to (GET /auth/info, with the credentials from ${source}) failed`
      : "the API cannot be asked which project a key belongs to (GET /auth/info) without one";
    return { failure: `${unset}, and ${tried}: ${(err as Error).message} ${fix}` };
  }
  const projectId = (info.api_key ?? info.apiKey)?.project.id;
  if (!projectId) {
    // Only an API key belongs to one project; a user's login (OAuth) may reach several.
    const credentials = source ? `the credentials from ${source}` : "these credentials";
    const type = printable(info.type.slice(0, 100));
    const oauth = info.type === "oauth" ? " (a user's login token, which belongs to no one project)" : "";
    return {
      failure: `${unset}, and ${credentials} name no project: GET /auth/info answers type "${type}" with no API key's project${oauth}. ${fix}`,
    };
  }
  ctx.progress(
    `projectId: ${projectId}, the project of the API key (GET /auth/info), as neither the resource nor ${config} / ${env} sets one`,
  );
  return { projectId };
}

/**
 * The project for a resource whose inputs leave projectId unset: stack config or the environment;
 * else, for a resource in state, the project it recorded (where it lives: a preview of an unchanged
 * stack asks nothing, and another key does not move it); else the key's project, asked at check
 * unless verifyReferences is off or no credential is set (then `up` asks). `recorded` is the
 * project in the resource's old inputs (check) or old outputs (update); `inState`, whether it has any.
 */
export async function projectIdFallback(
  ctx: CallContext,
  phase: "check" | "apply",
  recorded?: unknown,
  inState = false,
): Promise<ProjectSource> {
  const configured = ctx.projectId;
  if (configured) return { projectId: configured };
  if (typeof recorded === "string" && recorded !== "") return { projectId: recorded };
  // A resource in state whose recorded inputs hold no project learnt it at `up` (check deferred it):
  // its project is in its outputs, which diff and update read. Asking here would only risk another.
  if (phase === "check" && (inState || !ctx.verifyReferences || ctx.credentialSource === undefined)) return { deferred: true };
  return askTheKey(ctx);
}
