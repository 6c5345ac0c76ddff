// What check verifies before a resource is created or replaced: that the objects it refers to
// exist (and, for a fork's source, can be forked). Only reads, each object at most once per
// provider process, within a short time limit. A missing object or refused credentials fail the
// check; anything that only says "not now" (a 5xx, a timeout, a busy service) is a warning.
import type { Service, Vpc } from "../api/schemas";
import type { TigerCloudClient } from "../api/client";
import {
  AuthenticationError,
  ConfigurationError,
  isTransient,
  NotConfirmedGoneError,
  NotFoundError,
  PermissionDeniedError,
  SchemaValidationError,
  TigerCloudError,
} from "../errors";
import { SETTING_SOURCES } from "../settings";
import { serviceUnlessGone, vpcUnlessGone } from "./gone";
import type { CallContext } from "../context/context";
import { type Failure, isKnownText } from "../rules/inputs";
import { runSlot } from "../context/memory";
import { messageOf } from "../text";

/** What a resource says of an object it found: nothing, a failure of the check, or a warning. */
export interface Judgement {
  failure?: string;
  warning?: string;
}

/** An object a resource's inputs refer to. `projectId` and `id` may still be unknown (preview). */
export type Reference =
  | { type: "service"; property: string; projectId: unknown; id: unknown; judge?: (service: Service) => Judgement }
  | { type: "vpc"; property: string; projectId: unknown; id: unknown };

/** These reads answer a preview: a person waits for them, and `up` will try again anyway. */
export const VERIFY_LIMITS = Object.freeze({ requestTimeoutMs: 5000, maxAttempts: 2, maxTotalMs: 5000 });

type Found = { service: Service } | { vpc: Vpc } | { gone: true } | { error: Error };

/** This run's reads, shared by every resource (even while one runs), and the warnings said. */
const LEARNT = runSlot(() => ({ reads: new Map<string, Promise<Found>>(), said: new Set<string>() }));

/** A warning said once per run, however many resources lead to it. */
export async function warnOnce(ctx: CallContext, message: string): Promise<void> {
  const { said } = ctx.learnt(LEARNT);
  if (said.has(message)) return;
  said.add(message);
  await ctx.warning(message);
}

const keyOf = (type: string, projectId: string, id: string) => `${type} ${projectId} ${id}`;

/** One read per object: every resource that refers to it shares it, even while it runs. */
function read(ctx: CallContext, client: TigerCloudClient, type: Reference["type"], projectId: string, id: string): Promise<Found> {
  const key = keyOf(type, projectId, id);
  const { reads } = ctx.learnt(LEARNT);
  let found = reads.get(key);
  if (!found) {
    found = (async (): Promise<Found> => {
      try {
        if (type === "service") {
          const service = await serviceUnlessGone(client, projectId, id);
          return service ? { service } : { gone: true };
        }
        const vpc = await vpcUnlessGone(client, projectId, id);
        return vpc ? { vpc } : { gone: true };
      } catch (err) {
        return { error: err instanceof Error ? err : new Error(messageOf(err)) };
      }
    })();
    reads.set(key, found);
  }
  return found;
}

/**
 * Verifies the known references of one resource of `kind`; returns the check failures. Values
 * still unknown are skipped. Turned off by tigercloud:verifyReferences / TIGER_VERIFY_REFERENCES.
 * `projectFrom` says where the references' project came from (the resource, a setting, the key),
 * for the advice when the API does not know that project.
 */
export async function verifyReferences(
  ctx: CallContext,
  kind: string,
  references: readonly Reference[],
  projectFrom = "the resource's projectId",
): Promise<Failure[]> {
  if (references.length === 0) return [];
  // The unknown sentinel is a string too.
  const known = references.filter((r): r is Reference & { projectId: string; id: string } => isKnownText(r.projectId) && isKnownText(r.id));
  const failAll = (why: string) => known.map((r) => ({ property: r.property, reason: `${r.property} could not be verified: ${why}` }));

  let client: TigerCloudClient;
  try {
    if (!ctx.verifyReferences) return [];
    client = ctx.client(VERIFY_LIMITS);
  } catch (err) {
    if (!(err instanceof ConfigurationError)) throw err;
    if (ctx.credentialSource === undefined) {
      // A pull request from a fork repository gets no secrets: its preview still passes, and says
      // so once, whether or not the references are known yet (with no key, neither is the project).
      const { apiKey } = SETTING_SOURCES;
      await warnOnce(
        ctx,
        `references were not verified: no Tiger Cloud credentials (${apiKey.config} or ${apiKey.env}, or a key pair). \`pulumi up\` needs them.`,
      );
      return [];
    }
    return failAll(err.message);
  }
  if (known.length === 0) return [];

  const failures: Failure[] = [];
  for (const ref of known) {
    const what = `${ref.type === "service" ? "service" : "VPC"} ${ref.id}`;
    const found = await read(ctx, client, ref.type, ref.projectId, ref.id);
    let judgement: Judgement = {};
    if ("service" in found || "vpc" in found) {
      if ("service" in found && ref.type === "service" && ref.judge) judgement = ref.judge(found.service);
    } else if ("gone" in found) {
      judgement.failure = `names ${what}, which does not exist in project ${ref.projectId} (the API answered 404${ref.type === "service" ? ", and the project's service list does not hold it" : " twice"})`;
    } else {
      judgement = judgeError(ctx, kind, { ...ref, what, projectFrom }, found.error);
    }
    if (judgement.failure) failures.push({ property: ref.property, reason: `${ref.property} ${judgement.failure}` });
    if (judgement.warning) await warnOnce(ctx, judgement.warning);
  }
  return failures;
}

/** The reference a failed read was for, as the advice names it. */
interface Failed {
  property: string;
  projectId: string;
  what: string;
  projectFrom: string;
}

/**
 * What a failed read says of the check. Only what cannot be known now (a 5xx, a timeout, a
 * refused or dropped connection, a 429) is left to `up` with a warning; whatever the API itself
 * refused, or an answer that is not the API's at all, fails the check with the fix: `up` would
 * fail on it too.
 */
export function judgeError(ctx: CallContext, kind: string, ref: Failed, err: Error): Judgement {
  const source = ctx.credentialSource ?? "no credentials";
  const { apiKey, apiUrl, projectId } = SETTING_SOURCES;
  const prefix = "could not be verified:";
  // A 404 confirmed by the project's service list, which failed: what that list said decides.
  if (err instanceof NotConfirmedGoneError && err.listFailure instanceof TigerCloudError) {
    const listed = err.listFailure;
    if (listed instanceof NotFoundError && listed.apiAnswered)
      return {
        failure:
          `${prefix} project ${ref.projectId} does not exist, or the credentials from ${source} cannot see it ` +
          `(the API answered 404 to ${ref.what} and to the project's service list). The project comes from ${ref.projectFrom}: ` +
          `set it to the project the key belongs to (on the resource, or ${projectId.config} / ${projectId.env}).`,
      };
    if (listed instanceof TigerCloudError && !isTransient(listed)) return judgeError(ctx, kind, ref, listed);
  }
  if (err instanceof AuthenticationError)
    return {
      failure:
        `${prefix} the API refused the credentials from ${source} (401: ${err.apiMessage}). ` +
        `Set a valid key there (stack config wins over the environment: \`pulumi config set --secret ${apiKey.config} …\`, or ${apiKey.env}).`,
    };
  if (err instanceof PermissionDeniedError)
    return {
      failure:
        `${prefix} the credentials from ${source} may not read ${ref.what} in project ${ref.projectId} (403: ${err.apiMessage}). ` +
        `Use a key of that project there, or check the project, which comes from ${ref.projectFrom}.`,
    };
  if (err instanceof SchemaValidationError || (err instanceof NotFoundError && !err.apiAnswered))
    return {
      failure: err.message.includes(apiUrl.config)
        ? `${prefix} ${err.message}`
        : `${prefix} ${err.message}; the API URL (${apiUrl.config} / ${apiUrl.env}) may be wrong`,
    };
  if (isTransient(err) || err instanceof NotConfirmedGoneError)
    return { warning: `${kind}: could not verify ${ref.property} (${ref.what}): ${err.message}; \`up\` will try.` };
  return { failure: `${prefix} ${err.message}` };
}
