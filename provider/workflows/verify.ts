// What check verifies before a resource is created or replaced: that the objects it refers to
// exist (and, for a fork's source, can be forked). Only reads, each object at most once per
// provider process, within a short time limit. A missing object or refused credentials fail the
// check; anything that only says "not now" (a 5xx, a timeout, a busy service) is a warning.
import type * as pulumi from "@pulumi/pulumi";
import type { Service, Vpc } from "../api/schemas";
import type { TigerCloudClient } from "../api/client";
import { AuthenticationError, ConfigurationError, NotFoundError, PermissionDeniedError } from "../errors";
import { SETTING_SOURCES } from "../settings";
import { serviceUnlessGone, vpcUnlessGone } from "./gone";
import type { CallContext } from "../engine/host";
import { isKnownText } from "../rules/inputs";
import { runSlot } from "../run";

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

type Found = { object: Service | Vpc } | { gone: true } | { error: Error };

/** This run's reads, shared by every resource (even while one runs), and the warnings said. */
const LEARNT = runSlot(() => ({ reads: new Map<string, Promise<Found>>(), said: new Set<string>() }));

/** A warning said once per process, however many resources lead to it. */
async function warnOnce(ctx: CallContext, message: string): Promise<void> {
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
        const object = type === "service" ? await serviceUnlessGone(client, projectId, id) : await vpcUnlessGone(client, projectId, id);
        return object ? { object } : { gone: true };
      } catch (err) {
        return { error: err as Error };
      }
    })();
    reads.set(key, found);
  }
  return found;
}

/**
 * Verifies the known references of one resource of `kind`; returns the check failures. Values
 * still unknown are skipped. Turned off by tigercloud:verifyReferences / TIGER_VERIFY_REFERENCES.
 */
export async function verifyReferences(
  ctx: CallContext,
  kind: string,
  references: readonly Reference[],
): Promise<pulumi.dynamic.CheckFailure[]> {
  // The unknown sentinel is a string too.
  const known = references.filter((r): r is Reference & { projectId: string; id: string } => isKnownText(r.projectId) && isKnownText(r.id));
  if (known.length === 0) return [];
  const failAll = (why: string) => known.map((r) => ({ property: r.property, reason: `${r.property} could not be verified: ${why}` }));

  let client: TigerCloudClient;
  try {
    if (!ctx.verifyReferences) return [];
    client = ctx.client(VERIFY_LIMITS);
  } catch (err) {
    if (!(err instanceof ConfigurationError)) throw err;
    if (ctx.credentialSource === undefined) {
      // A pull request from a fork repository gets no secrets: its preview still passes.
      const { apiKey } = SETTING_SOURCES;
      await warnOnce(
        ctx,
        `references were not verified: no Tiger Cloud credentials (${apiKey.config} or ${apiKey.env}, or a key pair). \`pulumi up\` needs them.`,
      );
      return [];
    }
    return failAll(err.message);
  }

  const failures: pulumi.dynamic.CheckFailure[] = [];
  for (const ref of known) {
    const what = `${ref.type === "service" ? "service" : "VPC"} ${ref.id}`;
    const found = await read(ctx, client, ref.type, ref.projectId, ref.id);
    let judgement: Judgement = {};
    if ("object" in found) {
      if (ref.type === "service" && ref.judge) judgement = ref.judge(found.object as Service);
    } else if ("gone" in found) {
      judgement.failure = `names ${what}, which does not exist in project ${ref.projectId} (the API answered 404${ref.type === "service" ? ", and the project's service list does not hold it" : " twice"})`;
    } else {
      judgement = judgeError(ctx, kind, ref, what, found.error);
    }
    if (judgement.failure) failures.push({ property: ref.property, reason: `${ref.property} ${judgement.failure}` });
    if (judgement.warning) await warnOnce(ctx, judgement.warning);
  }
  return failures;
}

/** Refused credentials and a wrong URL fail the check: `up` would fail on them too. The rest may pass by `up`. */
function judgeError(ctx: CallContext, kind: string, ref: Reference & { projectId: string }, what: string, err: Error): Judgement {
  const source = ctx.credentialSource ?? "no credentials";
  const { apiKey } = SETTING_SOURCES;
  if (err instanceof AuthenticationError)
    return {
      failure:
        `could not be verified: the API refused the credentials from ${source} (401: ${err.apiMessage}). ` +
        `Set a valid key there (stack config wins over the environment: \`pulumi config set --secret ${apiKey.config} …\`, or ${apiKey.env}).`,
    };
  if (err instanceof PermissionDeniedError)
    return {
      failure:
        `could not be verified: the credentials from ${source} may not read ${what} in project ${ref.projectId} (403: ${err.apiMessage}). ` +
        `Use a key of that project there, or check the resource's projectId (default ${SETTING_SOURCES.projectId.config} / ${SETTING_SOURCES.projectId.env}).`,
    };
  if (err instanceof NotFoundError && !err.apiAnswered) return { failure: `could not be verified: ${err.message}` };
  return { warning: `${kind}: could not verify ${ref.property} (${what}): ${err.message}; \`up\` will try.` };
}
