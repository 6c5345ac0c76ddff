// The project of a resource that sets no projectId, where neither stack config nor the environment
// sets one either: the API key's own. A key belongs to exactly one project, and GET /auth/info
// names it (the official CLI asks the same); a user's OAuth token names none, and then projectId
// must be set. Asked at most once per provider process, with preview's short limits; a preview
// with verifyReferences off asks nothing.
import type { AuthInfo } from "../api/schemas";
import { SETTING_SOURCES } from "../settings";
import { messageOf, printable } from "../text";
import type { CallContext } from "../context/context";
import type { ProjectSource } from "../rules/inputs";
import { runSlot } from "../context/memory";
import { AuthenticationError, isTransient, NotFoundError, PermissionDeniedError, SchemaValidationError } from "../errors";
import { VERIFY_LIMITS, warnOnce } from "./verify";

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
  const credentials = source ? `the credentials from ${source}` : "these credentials";
  let info: AuthInfo;
  try {
    info = await ctx.client(VERIFY_LIMITS).authInfo();
  } catch (err) {
    if (!source) {
      const tried = "the API cannot be asked which project a key belongs to (GET /auth/info) without one";
      return { failure: `${unset}, and ${tried}: ${messageOf(err)} ${fix}` };
    }
    return keyNotAsked(credentials, err instanceof Error ? err : new Error(messageOf(err)), unset, fix);
  }
  const projectId = (info.api_key ?? info.apiKey)?.project.id;
  if (!projectId) {
    // Only an API key belongs to one project; a user's login (OAuth) may reach several.
    const type = printable(info.type.slice(0, 100));
    const oauth = info.type === "oauth" ? " (a user's login token, which belongs to no one project)" : "";
    return {
      failure: `${unset}, and ${credentials} name no project: GET /auth/info answers type "${type}" with no API key's project${oauth}. ${fix}`,
    };
  }
  ctx.progress(
    `projectId: ${projectId}, the project ${credentials} belong to (GET /auth/info), as neither the resource nor ${config} / ${env} sets one`,
  );
  return { projectId };
}

/**
 * GET /auth/info failed: the advice names the real fix. A refused key is the key's fault, an
 * answer that is not the API's the URL's; only what cannot be known now (a 5xx, a timeout, a
 * refused connection, a 429) is `transient`, which check leaves to `up` with a warning.
 */
function keyNotAsked(credentials: string, err: Error, unset: string, fix: string): ProjectSource {
  const asking = `asking the API which project ${credentials} belong to (GET /auth/info)`;
  const { apiKey, apiUrl } = SETTING_SOURCES;
  if (err instanceof AuthenticationError)
    return {
      failure:
        `The API refused ${credentials} (401: ${err.apiMessage}) when ${asking}. ` +
        `Set a valid key there (\`pulumi config set --secret ${apiKey.config} …\`, or ${apiKey.env}, or a key pair).`,
    };
  if (err instanceof PermissionDeniedError)
    return {
      failure: `The API refused ${asking} (403: ${err.apiMessage}): ${credentials} may not ask it. Use a project's API key, or set projectId.`,
    };
  if (err instanceof SchemaValidationError || (err instanceof NotFoundError && !err.apiAnswered))
    return {
      failure: `${asking} did not reach Tiger Cloud's API: ${err.message}. Check the API URL (${apiUrl.config} / ${apiUrl.env}).`,
    };
  const failure = `${unset}, and ${asking} failed: ${err.message} ${fix}`;
  return isTransient(err) ? { failure, transient: true } : { failure };
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
  const asked = await askTheKey(ctx);
  // At preview, what cannot be known now is left to `up`, said once.
  if (phase === "check" && "transient" in asked) {
    await warnOnce(ctx, `projectId was not verified: ${asked.failure} \`up\` will ask again.`);
    return { deferred: true };
  }
  return asked;
}
