// The fork this resource gets: the one adoptServiceId names, or a running fork with this
// resource's identity (adoptExisting), or a new one, or, when forkService's answer was lost, the
// fork it made, found. Never a second forkService.
import type { Service } from "../../api/schemas";
import { SETTLED, STOPPED } from "../../api/statuses";
import type { CallContext } from "../../context/context";
import { ForkOutcomeUnknownError, TigerCloudError } from "../../errors";
import { type BusySpec, sendWhenSettled } from "../../policies/busy";
import { serviceUnlessGone } from "../../policies/gone";
import { adoptionNote, adoptionProblem, hasIdentity, notAForkOf, oneToAdopt } from "./identity";
import type { Limit } from "../../rules/inputSchemas";
import { forkRequest, type ForkInputs } from "./inputs";

/** How far the API's clock may be behind ours when matching a fork to a lost forkService answer. */
const CLOCK_SKEW_MS = 5 * 60_000;
/** The reason an adopted fork records when adoptServiceId named it. */
const NAMED_BY_ID = "taken under management with adoptServiceId";

/** A fork taken over rather than made: when, and why. */
export type Adoption = { at: string; reason: string };

/** The fork, and how it was taken over when it was not made (its password then unknown). */
export interface Obtained {
  fork: Service;
  adopted?: Adoption;
}

export async function obtainFork(ctx: CallContext, inputs: ForkInputs, limit: Limit): Promise<Obtained> {
  const { deadline } = limit;
  const client = ctx.client();
  const { projectId, sourceServiceId, adoptServiceId } = inputs;
  let found: Service[] = [];
  let reason = NAMED_BY_ID;
  if (adoptServiceId !== undefined) {
    const service = await serviceUnlessGone(client, projectId, adoptServiceId, deadline);
    if (!service)
      throw new TigerCloudError(`adoptServiceId ${adoptServiceId}: the API says no such service exists in project ${projectId}.`);
    const problem = adoptionProblem(service, inputs);
    if (problem)
      throw new TigerCloudError(`adoptServiceId ${adoptServiceId} cannot be taken under management: ${problem}. Nothing was recorded.`);
    found = [service];
  } else {
    const adoptable = inputs.name !== undefined && inputs.adoptExisting;
    const running = async () => (await client.listServices(projectId, { deadline })).filter((s) => hasIdentity(s, inputs));
    if (adoptable) {
      const services = await client.listServices(projectId, { deadline });
      found = services.filter((s) => hasIdentity(s, inputs));
      reason = "a running fork with this name and source already existed";
      if (found.length === 0) await warnOfStoppedNamesakes(ctx, services, inputs);
    }
    if (found.length === 0) {
      ctx.progress(`forking service ${sourceServiceId} (${inputs.forkStrategy})`);
      // A source busy with another operation refuses with 409 and makes nothing: wait and send again.
      const busy: BusySpec = {
        ctx,
        client,
        projectId,
        serviceId: sourceServiceId,
        role: "source",
        action: "fork",
        accepts: SETTLED,
        deadline,
        timeoutInput: limit.setBy,
      };
      let sentAt = Date.now();
      try {
        // The request ends before the deadline, leaving room to look for the fork if its answer is lost.
        const fork = await sendWhenSettled(busy, (call) => {
          sentAt = Date.now();
          return client.forkService(projectId, sourceServiceId, forkRequest(inputs), call);
        });
        ctx.progress(`fork ${fork.service_id} created, status ${fork.status}`);
        return { fork };
      } catch (err) {
        // The answer was lost, but the fork may have been made: look for it rather than let the
        // next `up` make a second one. Never a second forkService here.
        if (!(err instanceof ForkOutcomeUnknownError) || !adoptable) throw err;
        const why = err.cause instanceof Error ? err.cause.message : "unknown";
        ctx.progress(`forkService's answer was lost (${why}); looking for the fork it may have made`);
        found = (await running()).filter((s) => Date.parse(s.created ?? "") >= sentAt - CLOCK_SKEW_MS);
        if (found.length === 0) throw err;
        reason = "forkService's answer was lost, and the fork it made was found";
      }
    }
  }
  const fork = oneToAdopt(found, inputs);
  ctx.progress(adoptionNote(fork, inputs.passwordOnAdopt, reason, adoptServiceId !== undefined));
  return { fork, adopted: { at: new Date().toISOString(), reason } };
}

/**
 * A stopped fork with this resource's identity is never adopted (only a running one is), so a new
 * fork is made beside it. It may be this resource's own, left by an `up` killed while it stopped
 * the fork (paused: true) before state recorded it: nothing can tell, so the warning says so.
 */
async function warnOfStoppedNamesakes(ctx: CallContext, services: Service[], inputs: ForkInputs): Promise<void> {
  const stopped = services.filter((s) => s.name === inputs.name && STOPPED.includes(s.status) && notAForkOf(s, inputs) === undefined);
  if (stopped.length === 0) return;
  const list = stopped.map((s) => `${s.service_id} (${s.status}, created ${s.created ?? "at an unknown time"})`).join(", ");
  await ctx.warning(
    `a stopped fork named "${inputs.name}" of service ${inputs.sourceServiceId} exists: ${list}. A stopped fork is never taken over, ` +
      `so a new one is made beside it. It may be this resource's own, left by an \`up\` killed while stopping it (paused: true), ` +
      `or another's: nothing tells which. If it is this resource's, delete it (or start it and name it with adoptServiceId instead).`,
  );
}
