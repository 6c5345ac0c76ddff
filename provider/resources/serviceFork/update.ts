// In-place changes to a fork: start, rename, resize, setEnvironment and stop, each sent only when
// its input changed. A failure part-way records what was done, and the next `up` does the rest.
import type { Service } from "../../api/schemas";
import { PAUSED, READY, STOPPED_OR_GONE, isStopped } from "../../api/statuses";
import type { CallContext } from "../../context/context";
import { BadRequestError, PartialFailureError, TigerCloudError } from "../../errors";
import { withDeclared } from "../../rules/diff";
import { partialFailure, toPlainJson } from "../../rules/state";
import { waitForLogin } from "../../policies/connection";
import { waitForService } from "../../policies/waiting";
import type { Limit } from "../../rules/inputSchemas";
import { MIN_ATTEMPT_TIMEOUT_MS } from "../../api/request";
import { createLimit, deleteLimit, FORK_DIFF_RULES, type ForkInputs, resizeDigits, sameSize, updateLimit } from "./inputs";
import { sendToFork, stopFork, waitReady } from "./operations";
import { liveSize, passwordOf, type ServiceForkState, stateFromService } from "./state";
import { finishPendingCreate, stopUnprepared } from "./usable";

/** Starts a stopped fork and, unless told not to wait, waits for READY. A running fork is success. */
async function startFork(ctx: CallContext, id: string, inputs: ForkInputs, password: string | undefined): Promise<Service> {
  const client = ctx.client();
  const { projectId } = inputs;
  const limit = createLimit(ctx, inputs);
  const { deadline } = limit;
  ctx.progress(`starting fork ${id} (paused: false)`);
  let answer: Service;
  try {
    // A fork still PAUSING (or RESUMING, started elsewhere) refuses with 409: wait for it to settle.
    answer = await sendToFork(ctx, id, projectId, "start", limit, (c, call) => c.start(projectId, id, call), {
      client,
      accepts: [PAUSED, READY],
    });
  } catch (err) {
    // 400 answers a start of a fork that is not stopped: confirmed by reading it.
    if (!(err instanceof BadRequestError)) throw err;
    answer = await client.getService(projectId, id, { deadline });
    if (isStopped(answer.status)) throw err;
    ctx.progress(`fork ${id} is already ${answer.status}`);
  }
  if (!inputs.waitForReady) return answer;
  const ready = answer.status === READY ? answer : await waitReady(ctx, projectId, id, limit);
  ctx.progress(`fork ${id} is READY`);
  if (inputs.readyWhen === "login") {
    // A resumed fork is ready as a new one is: when its database takes a login.
    const endpoint = { host: ready.endpoint?.host, port: ready.endpoint?.port };
    await waitForLogin({ ctx, serviceId: id, ...endpoint, password: password || undefined, deadline, timeoutInput: limit.setBy });
  }
  return ready;
}

/** Only the keys given, and only those set. */
const onlyKeys = (from: ForkInputs, keys: readonly (keyof ForkInputs)[]): Partial<ForkInputs> => {
  const picked: Partial<ForkInputs> = {};
  for (const k of keys) if (from[k] !== undefined) Object.assign(picked, { [k]: from[k] });
  return picked;
};

const sizeChanged = (before: ServiceForkState, inputs: ForkInputs) =>
  (inputs.cpuMillis !== undefined && !sameSize(inputs.cpuMillis, before.cpuMillis)) ||
  (inputs.memoryGbs !== undefined && !sameSize(inputs.memoryGbs, before.memoryGbs));

async function renameFork(ctx: CallContext, id: string, inputs: ForkInputs, name: string, limit: Limit): Promise<Service> {
  ctx.progress(`renaming fork ${id} to "${name}"`);
  return sendToFork(ctx, id, inputs.projectId, "rename", limit, (c, call) => c.renameService(inputs.projectId, id, name, call), {
    confirm: (seen) => (seen?.name === name ? { value: seen } : undefined),
  });
}

async function resizeFork(ctx: CallContext, id: string, inputs: ForkInputs, before: ServiceForkState, limit: Limit): Promise<Service> {
  // resize needs both sizes: one left unset keeps the fork's current one.
  const current = before.resources?.[0];
  const body = {
    cpu_millis: resizeDigits(inputs.cpuMillis ?? (current?.cpuMillis === undefined ? "" : String(current.cpuMillis))),
    memory_gbs: resizeDigits(inputs.memoryGbs ?? (current?.memoryGbs === undefined ? "" : String(current.memoryGbs))),
  };
  const missing = body.cpu_millis === "" ? "cpuMillis" : body.memory_gbs === "" ? "memoryGbs" : undefined;
  if (missing)
    throw new TigerCloudError(`Resizing fork ${id} needs both sizes, and its current ${missing} is not known: declare ${missing} too.`);
  const what = `${body.cpu_millis} millicores and ${body.memory_gbs} GB`;
  ctx.progress(`resizing fork ${id} to ${what}`);
  const client = ctx.client();
  const answer = await sendToFork(ctx, id, inputs.projectId, "resize", limit, (c, call) => c.resize(inputs.projectId, id, body, call), {
    client,
  });
  if (!inputs.waitForReady) return answer;
  const resized = await waitForService({
    ctx,
    client,
    projectId: inputs.projectId,
    serviceId: id,
    goal: `READY with ${what}`,
    done: (s) => s.status === READY && sameSize(liveSize(s).cpuMillis, body.cpu_millis) && sameSize(liveSize(s).memoryGbs, body.memory_gbs),
    hopeless: STOPPED_OR_GONE,
    timeoutMs: Math.max(0, limit.deadline - Date.now()),
    timeoutInput: limit.setBy,
  });
  ctx.progress(`fork ${id} is READY with ${what}`);
  return resized;
}

async function setForkEnvironment(
  ctx: CallContext,
  id: string,
  inputs: ForkInputs,
  environment: "DEV" | "PROD",
  limit: Limit,
): Promise<undefined> {
  ctx.progress(`tagging fork ${id} ${environment}`);
  await sendToFork(ctx, id, inputs.projectId, "set the environment of", limit, (c, call) =>
    c.setEnvironment(inputs.projectId, id, environment, call),
  );
  return undefined;
}

/**
 * Name, size, environment and running state change in place, in this order: start (when
 * resuming), rename, resize, setEnvironment, stop (when pausing). Each is sent only when its
 * input changed. A failure part-way records what was done, and the next `up` does the rest.
 */
export async function updateFork(ctx: CallContext, id: string, before: ServiceForkState, inputs: ForkInputs): Promise<ServiceForkState> {
  const password = passwordOf(before);
  let stateSoFar: ServiceForkState = { ...before, ...onlyKeys(inputs, FORK_DIFF_RULES.stateOnlyKeys ?? []) };
  let lastRead: Service | undefined;
  const applied = (keys: (keyof ForkInputs)[], service?: Service) => {
    stateSoFar = { ...stateSoFar, ...onlyKeys(inputs, keys) };
    if (service) lastRead = service;
  };
  const wasPaused = before.paused === true;
  // One limit for the changes made while it runs (rename, resize, environment) and the last read.
  const limit = updateLimit(ctx, inputs);
  try {
    if (wasPaused && !inputs.paused) applied(["paused"], await startFork(ctx, id, inputs, password));
    // Independent of each other: one refused does not keep the others from being made.
    const changes: [(keyof ForkInputs)[], () => Promise<Service | undefined>][] = [];
    const name = inputs.name;
    if (name !== undefined && name !== before.name) changes.push([["name"], () => renameFork(ctx, id, inputs, name, limit)]);
    if (sizeChanged(before, inputs)) changes.push([["cpuMillis", "memoryGbs"], () => resizeFork(ctx, id, inputs, before, limit)]);
    const environment = inputs.environmentTag;
    if (environment !== undefined && environment !== before.environmentTag)
      changes.push([["environmentTag"], () => setForkEnvironment(ctx, id, inputs, environment, limit)]);
    let refused: unknown;
    for (const [keys, change] of changes) {
      try {
        applied(keys, await change());
      } catch (err) {
        refused ??= err;
      }
    }
    if (refused) throw refused;
    if (!wasPaused && inputs.paused) {
      const stopped = await stopFork(ctx, id, inputs.projectId, inputs.waitForReady, deleteLimit(ctx, inputs));
      if (!stopped) throw new TigerCloudError(`Fork ${id} no longer exists (the API says so): it cannot be stopped.`);
      applied(["paused"], stopped);
    }
    const now = await ctx
      .client()
      .getService(inputs.projectId, id, { deadline: Math.max(limit.deadline, Date.now() + MIN_ATTEMPT_TIMEOUT_MS) });
    const updated = stateFromService(withDeclared(before, inputs, FORK_DIFF_RULES), now, password);
    // A preparation still owed (it failed before, or its source's mark was missing) is taken now, as an
    // update with nothing else would: finishPendingCreate judges what is owed, requireMasking included
    // (and stops the fork if that fails).
    return updated.preparePending ? await finishPendingCreate(ctx, id, updated, inputs) : updated;
  } catch (err) {
    // The owed steps' own failure carries the newest state (the fork they stopped, say).
    if (err instanceof PartialFailureError) throw err;
    const state = lastRead ? stateFromService(stateSoFar, lastRead, password) : toPlainJson(stateSoFar);
    // Running (started here, or left running by a stop that failed) while owed its preparation, it
    // holds the source's data unmasked: stopped.
    if (before.preparePending && !inputs.paused) {
      const [stopped, said] = await stopUnprepared(ctx, id, state, inputs, "the update failed before its preparation", err);
      throw partialFailure(id, stopped, said);
    }
    throw partialFailure(id, state, err);
  }
}
