// Making a fork, or taking one over instead: adoptServiceId names it, or a running fork with this
// resource's identity exists (adoptExisting), or forkService's answer was lost and the fork it
// made is found. Never a second forkService. Then what makes the fork usable (READY, an adopted
// fork's new password, a login), one sequence, which a failure leaves owed in state for the next
// `up` to finish (finishPendingCreate).
import * as crypto from "crypto";
import type { TigerCloudClient } from "../../api/client";
import type { ForkServiceRequest, Service } from "../../api/schemas";
import { SETTLED } from "../../api/statuses";
import type { CallContext } from "../../engine/host";
import type { Created } from "../defineProvider";
import { ForkOutcomeUnknownError, TigerCloudError } from "../../errors";
import { recordClaim } from "../../rules/claims";
import { declarantOf, type EngineInputs } from "../../rules/inputs";
import { partialFailure } from "../../rules/outputs";
import { sendWhenSettled } from "../../workflows/busy";
import { serviceUnlessGone } from "../../workflows/gone";
import { adoptionProblem, forkHeld, hasIdentity } from "./identity";
import { createDeadline, type ForkInputs } from "./inputs";
import { deadlineIn } from "../../rules/inputSchemas";
import { WAIT_DEFAULTS } from "../../workflows/waiting";
import { awaitLogin, busyFork, stopFork, waitReady } from "./operations";
import { liveInputs, markOwed, type ServiceForkState, settled, stateFromService, stepsOwed, type UsableStep } from "./state";

/** How far the API's clock may be behind ours when matching a fork to a lost forkService answer. */
const CLOCK_SKEW_MS = 5 * 60_000;

type Adoption = { at: string; reason: string };

/** The forkService body: the checked inputs, unchanged. */
function forkRequest(inputs: ForkInputs): ForkServiceRequest {
  const body: ForkServiceRequest = { fork_strategy: inputs.forkStrategy };
  if (inputs.environmentTag !== undefined) body.environment_tag = inputs.environmentTag;
  if (inputs.targetTime !== undefined) body.target_time = inputs.targetTime;
  if (inputs.cpuMillis !== undefined) body.cpu_millis = inputs.cpuMillis;
  if (inputs.memoryGbs !== undefined) body.memory_gbs = inputs.memoryGbs;
  if (inputs.name !== undefined) body.name = inputs.name;
  return body;
}

/** The running forks with this resource's identity: (project, source service, name). */
async function forksWithIdentity(client: TigerCloudClient, inputs: ForkInputs): Promise<Service[]> {
  const services = await client.listServices(inputs.projectId);
  return services.filter((s) => hasIdentity(s, inputs));
}

/** The create: fork or adopt, then, when declared paused, stop. A failure after the fork exists still records it. */
export async function createFork(ctx: CallContext, inputs: ForkInputs, news: EngineInputs): Promise<Created<ServiceForkState>> {
  const made = await forkOrAdopt(ctx, inputs, news);
  if (!inputs.paused) return made;
  // Declared stopped: forked (and waited for) first, then stopped. A failure here still
  // records the fork, running, so the next `up` stops it.
  const state = made.outs;
  try {
    const stopped = await stopFork(
      ctx,
      made.id,
      inputs.projectId,
      inputs.waitForReady,
      deadlineIn(inputs.deleteTimeout, WAIT_DEFAULTS.deleteTimeout),
    );
    return { id: made.id, outs: stopped ? stateFromService(state, stopped, state.initialPassword) : state };
  } catch (err) {
    throw partialFailure(made.id, state, news, err);
  }
}

/** Adopts the running fork with this identity, or forks; never sends forkService twice. */
async function forkOrAdopt(ctx: CallContext, inputs: ForkInputs, news: EngineInputs): Promise<Created<ServiceForkState>> {
  if (inputs.adoptServiceId !== undefined) return adoptById(ctx, inputs, news, inputs.adoptServiceId);
  const client = ctx.client();
  const adoptable = inputs.name !== undefined && inputs.adoptExisting;
  if (adoptable) {
    const existing = await forksWithIdentity(client, inputs);
    if (existing.length > 0) return adopt(ctx, inputs, news, existing, "a running fork with this name and source already existed");
  }
  ctx.progress(`forking service ${inputs.sourceServiceId} (${inputs.forkStrategy})`);
  const deadline = createDeadline(inputs);
  // A source busy with another operation refuses with 409 and makes nothing: wait and send again.
  const busy = {
    ctx,
    client,
    projectId: inputs.projectId,
    serviceId: inputs.sourceServiceId,
    role: "source",
    action: "fork",
    accepts: SETTLED,
    deadline,
    timeoutInput: "createTimeout",
  };
  let sentAt = Date.now();
  let forked: Service;
  try {
    forked = await sendWhenSettled(busy, () => {
      sentAt = Date.now();
      return client.forkService(inputs.projectId, inputs.sourceServiceId, forkRequest(inputs));
    });
  } catch (err) {
    // The answer was lost, but the fork may have been made: look for it rather than let the
    // next `up` make a second one. Never a second forkService here.
    if (!(err instanceof ForkOutcomeUnknownError) || !adoptable) throw err;
    ctx.progress(
      `forkService's answer was lost (${err.cause instanceof Error ? err.cause.message : "unknown"}); looking for the fork it may have made`,
    );
    const made = (await forksWithIdentity(client, inputs)).filter((s) => Date.parse(s.created ?? "") >= sentAt - CLOCK_SKEW_MS);
    if (made.length === 0) throw err;
    return adopt(ctx, inputs, news, made, "forkService's answer was lost, and the fork it made was found");
  }
  return finishCreate(ctx, inputs, news, forked, undefined, deadline);
}

/** adoptServiceId: the named fork, checked, taken under management; nothing recorded when a check fails. */
async function adoptById(ctx: CallContext, inputs: ForkInputs, news: EngineInputs, serviceId: string): Promise<Created<ServiceForkState>> {
  const service = await serviceUnlessGone(ctx.client(), inputs.projectId, serviceId);
  if (!service)
    throw new TigerCloudError(`adoptServiceId ${serviceId}: the API says no such service exists in project ${inputs.projectId}.`);
  const problem = adoptionProblem(service, inputs);
  if (problem) throw new TigerCloudError(`adoptServiceId ${serviceId} cannot be taken under management: ${problem}. Nothing was recorded.`);
  ctx.progress(
    `taking fork ${serviceId} ("${service.name}", ${service.status}) under management (adoptServiceId). ` +
      (inputs.passwordOnAdopt === "keep"
        ? `Its initial password is not known, and passwordOnAdopt is "keep": set a new one in the console or with the tiger CLI.`
        : `Its initial password is not known: a new one will be set.`),
  );
  return finishCreate(ctx, inputs, news, service, { at: new Date().toISOString(), reason: "taken under management with adoptServiceId" });
}

/** Takes over the one fork found; several are an error that names them, and nothing is made. */
async function adopt(
  ctx: CallContext,
  inputs: ForkInputs,
  news: EngineInputs,
  found: Service[],
  reason: string,
): Promise<Created<ServiceForkState>> {
  if (found.length > 1) {
    const list = found.map((s) => `${s.service_id} (created ${s.created ?? "at an unknown time"}, ${s.status})`).join(", ");
    throw new TigerCloudError(
      `${found.length} running forks of service ${inputs.sourceServiceId} are named "${inputs.name}" in project ${inputs.projectId}: ${list}. ` +
        `Pulumi cannot tell which one is this resource's, so it made none. Stop or delete all but one, or give this fork another name, ` +
        `or set adoptExisting: false to make a new one.`,
    );
  }
  const fork = found[0] as Service;
  ctx.progress(
    `adopting fork ${fork.service_id} ("${inputs.name}", ${fork.status}) instead of forking again: ${reason}. ` +
      (inputs.passwordOnAdopt === "keep"
        ? `Its initial password is not known (only the answer that made it held it), and passwordOnAdopt is "keep": set a new one in the Tiger Cloud console or with the tiger CLI.`
        : `Its initial password is not known (only the answer that made it held it): a new one will be set.`),
  );
  return finishCreate(ctx, inputs, news, fork, { at: new Date().toISOString(), reason });
}

/** From a fork that exists: recorded, then made usable (makeUsable); any failure still records it. */
async function finishCreate(
  ctx: CallContext,
  inputs: ForkInputs,
  news: EngineInputs,
  fork: Service,
  adopted: Adoption | undefined,
  deadline = createDeadline(inputs),
): Promise<Created<ServiceForkState>> {
  const id = fork.service_id;
  const state: ServiceForkState = {
    ...stateFromService(inputs, fork, undefined),
    // An adopted fork is recorded as it is: the next `up` changes in place what the program declares
    // otherwise. Its lost password is owed a reset from this moment on.
    ...(adopted ? { adopted, ...liveInputs(inputs, fork), ...(inputs.passwordOnAdopt === "reset" ? { passwordPending: true } : {}) } : {}),
  };
  if (!adopted) ctx.progress(`fork ${id} created, status ${fork.status}`);
  // From here on the fork exists: any failure must hand its ID to the engine, and a resource of
  // this run being deleted must not stop it (see delete).
  recordClaim(forkHeld(inputs.projectId, id), declarantOf(news), true);
  return { id, outs: await makeUsable(ctx, id, state, inputs, news, stepsOwed(state, inputs, "new"), deadline) };
}

/** A create recorded before its fork was usable (a partial failure) is finished here, by the same steps. */
export async function finishPendingCreate(
  ctx: CallContext,
  id: string,
  recorded: ServiceForkState,
  inputs: ForkInputs,
  news: EngineInputs,
): Promise<ServiceForkState> {
  const steps = stepsOwed(recorded, inputs, "recorded");
  // A login no longer awaited (waitForReady or readyWhen changed) goes; a password reset owed stays
  // recorded under passwordOnAdopt "keep", so that going back to "reset" still resets it.
  const current = steps.includes("login") ? recorded : settled(recorded, "login");
  return steps.length === 0 ? current : makeUsable(ctx, id, current, inputs, news, steps, createDeadline(inputs));
}

/**
 * The one sequence that makes a fork usable, for a create and for the next `up` after a create
 * that failed part-way: every step is recorded as owed first, then each is done in order and
 * cleared. A failure hands the engine the state as far as it got.
 */
async function makeUsable(
  ctx: CallContext,
  id: string,
  from: ServiceForkState,
  inputs: ForkInputs,
  news: EngineInputs,
  steps: readonly UsableStep[],
  deadline: number,
): Promise<ServiceForkState> {
  let state = markOwed(from, steps);
  try {
    for (const step of steps) {
      if (step === "ready") {
        state = stateFromService(state, await waitReady(ctx, inputs, id, deadline), state.initialPassword);
        ctx.progress(`fork ${id} is READY`);
      } else if (step === "password") {
        // Reset before the login, so that the login proves the new password.
        state = await resetAdoptedPassword(ctx, id, inputs, state, deadline);
      } else {
        await awaitLogin(ctx, id, { host: state.host, port: state.port, password: state.initialPassword }, deadline);
      }
      state = settled(state, step);
    }
  } catch (err) {
    throw partialFailure(id, state, news, err);
  }
  return state;
}

/**
 * An adopted fork's password was only in the answer that made it. With passwordOnAdopt "reset",
 * a new one (192 random bits, chosen before the request so a retry sends the same) is set and
 * recorded as a secret; the connection outputs and the login probe use it.
 */
async function resetAdoptedPassword(
  ctx: CallContext,
  id: string,
  inputs: ForkInputs,
  state: ServiceForkState,
  deadline: number,
): Promise<ServiceForkState> {
  const password = crypto.randomBytes(24).toString("base64url");
  const client = ctx.client({}, [password]);
  const busy = busyFork(ctx, id, inputs.projectId, "set the password of", deadline, { client, timeoutInput: "createTimeout" });
  await sendWhenSettled(busy, () => client.updatePassword(inputs.projectId, id, password));
  ctx.progress(`the password of fork ${id} was reset, as it was adopted (passwordOnAdopt: "reset"); it is in the secret outputs`);
  // The fork read again, so the connection outputs are built the one way every read builds them.
  return stateFromService(state, await client.getService(inputs.projectId, id, { deadline }), password);
}
