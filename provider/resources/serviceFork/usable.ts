// Making a fork usable: the steps it owes (READY, an adopted fork's new password, a login that
// works, its preparation) and, for a new fork declared paused, its stop. One sequence serves a create and the next
// `up` after a create that failed part-way: each owed step is recorded in state before it is tried
// and cleared once done, so a failure hands the engine the state as far as it got.
import type { Service } from "../../api/schemas";
import { READY } from "../../api/statuses";
import type { CallContext } from "../../context/context";
import { TigerCloudError } from "../../errors";
import type { Limit } from "../../rules/inputSchemas";
import { partialFailure } from "../../rules/state";
import { connectionUri, waitForLogin } from "../../policies/connection";
import { createLimit, deleteLimit, type ForkInputs } from "./inputs";
import type { Obtained } from "./obtain";
import { setNewPassword, stopFork, waitReady } from "./operations";
import { expiresAt } from "./expiry";
import { type MaskedSource, PreparationFailed, prepareFork } from "./preparation";
import { checkSourceMark, refuseUnmaskedProduction, type SourceMark } from "./masking";
import { liveInputs, passwordOf, type ServiceForkState, stateFromService } from "./state";

/** What a fork owes before it is usable, in the order a create does it. */
export type UsableStep = "ready" | "password" | "login" | "prepare";
/** The flag that records a step as owed; READY needs none: the recorded status tells. */
const FLAG_OF = { password: "passwordPending", login: "loginPending", prepare: "preparePending" } as const;
const flagOf = (step: UsableStep | "pause") => (step === "ready" || step === "pause" ? undefined : FLAG_OF[step]);

/**
 * The steps a fork owes, from what state records (and `marked`: whether requireMasking asks for
 * its source's mark, read as part of the preparation step): READY when it is not (and the program waits);
 * a new password for an adopted fork that has not had one yet (passwordOnAdopt "reset"); a login
 * when the program waits for one and any step before it was owed, or the login itself was; the
 * preparation, declared, for a new fork or one whose preparation has not finished (always after a
 * login: it logs in). A new fork is made usable even when declared paused (it is stopped after); a
 * recorded fork that stays stopped owes no wait.
 */
export function stepsOwed(state: ServiceForkState, inputs: ForkInputs, fork: "new" | "recorded", marked = false): UsableStep[] {
  const waits = inputs.waitForReady && (fork === "new" || !inputs.paused);
  const ready = waits && state.status !== READY;
  const password = state.passwordPending === true && inputs.passwordOnAdopt === "reset";
  // A recorded fork that stays stopped is prepared when it runs again: it takes no login before.
  const prepare =
    (inputs.prepare !== undefined || marked) && (fork === "new" || (state.preparePending === true && !(inputs.paused && state.paused)));
  const login = prepare || (waits && inputs.readyWhen === "login" && (fork === "new" || ready || password || state.loginPending === true));
  return (["ready", "password", "login", "prepare"] as const).filter((step) => ({ ready, password, login, prepare })[step]);
}

/**
 * A fork just made or adopted, as state records it from now on, made usable, then stopped when
 * declared paused. An adopted fork is recorded as it is (the next `up` changes in place what the
 * program declares otherwise), and its lost password is owed a reset from this moment on.
 */
export async function makeUsable(
  ctx: CallContext,
  inputs: ForkInputs,
  { fork, adopted }: Obtained,
  limit: Limit,
  mark?: SourceMark,
): Promise<ServiceForkState> {
  const recorded: ServiceForkState = {
    ...stateFromService(inputs, fork, undefined),
    ...(adopted ? { adopted, ...liveInputs(inputs, fork), ...(inputs.passwordOnAdopt === "reset" ? { passwordPending: true } : {}) } : {}),
  };
  const steps = [...stepsOwed(recorded, inputs, "new", mark !== undefined), ...(inputs.paused ? (["pause"] as const) : [])];
  return takeSteps(ctx, fork.service_id, recorded, inputs, steps, limit, mark);
}

/** A create recorded before its fork was usable (a partial failure) is finished here, by the same steps. */
export async function finishPendingCreate(
  ctx: CallContext,
  id: string,
  recorded: ServiceForkState,
  inputs: ForkInputs,
): Promise<ServiceForkState> {
  // A preparation owed and no longer declared (or declared without masking): the policy is judged
  // again, as for a new fork, before the connection strings are published.
  const mark =
    recorded.preparePending && !inputs.prepare?.mask?.length
      ? await refuseUnmaskedProduction(ctx, inputs, createLimit(ctx, inputs).deadline)
      : undefined;
  const steps = stepsOwed(recorded, inputs, "recorded", mark !== undefined);
  // A login no longer awaited (waitForReady or readyWhen changed) goes; a password reset owed stays
  // recorded under passwordOnAdopt "keep", so that going back to "reset" still resets it.
  const { loginPending: _owed, ...current } = recorded;
  let from = steps.includes("login") ? recorded : current;
  if (from.preparePending && !inputs.prepare && !mark) {
    const { preparePending: _dropped, ...rest } = from;
    from = withConnectionStrings(rest);
  }
  // An expiry changed in state alone: the time follows it.
  from = { ...from, expiresAt: expiresAt(from.expires, from.created) };
  return steps.length === 0 ? from : takeSteps(ctx, id, from, inputs, steps, createLimit(ctx, inputs), mark);
}

/**
 * The one sequence: every owed step is recorded first, then each is taken in order and cleared.
 * A step answers with the fork as it read it, which state then records, the one way every read is
 * recorded. A failure hands the engine the state as far as it got.
 */
async function takeSteps(
  ctx: CallContext,
  id: string,
  from: ServiceForkState,
  inputs: ForkInputs,
  steps: readonly (UsableStep | "pause")[],
  limit: Limit,
  mark?: SourceMark,
): Promise<ServiceForkState> {
  let state: ServiceForkState = { ...from };
  for (const step of steps) {
    const flag = flagOf(step);
    if (flag) state[flag] = true;
  }
  // Owed a preparation, the fork publishes no connection string and no password, even in a
  // failure's state: the password is kept aside until then.
  if (state.preparePending)
    state = {
      ...state,
      connectionUri: undefined,
      poolerConnectionUri: undefined,
      initialPassword: undefined,
      pendingPassword: passwordOf(state),
    };
  let taking: UsableStep | "pause" | undefined;
  try {
    for (const step of steps) {
      taking = step;
      let read: Service | undefined;
      let password = passwordOf(state);
      switch (step) {
        case "ready":
          read = await waitReady(ctx, inputs.projectId, id, limit);
          ctx.progress(`fork ${id} is READY`);
          break;
        case "password": {
          // Before the login, so that the login proves the new password.
          const reset = await setNewPassword(ctx, id, inputs.projectId, limit);
          [read, password] = [reset.read, reset.password];
          break;
        }
        case "login": {
          const target = { serviceId: id, host: state.host, port: state.port, password: password || undefined };
          await waitForLogin({ ctx, ...target, deadline: limit.deadline, timeoutInput: limit.setBy });
          break;
        }
        case "prepare": {
          const target = { serviceId: id, host: state.host, port: state.port, password: password || undefined };
          // requireMasking's look at the source's mark comes first: it is cheap, and it decides.
          let maskedSource: MaskedSource | undefined;
          if (mark) {
            if (target.host === undefined || target.port === undefined)
              throw new TigerCloudError(`Service ${id}: the API gives no endpoint to read its source's mark through (requireMasking).`);
            maskedSource = await checkSourceMark({ ...target, host: target.host, port: target.port }, mark, limit);
            ctx.progress(`fork ${id}: its source ${mark.serviceId} is a masked fork whose preparation was checked (its mark read)`);
          }
          const prepared = inputs.prepare
            ? await prepareFork(
                ctx,
                {
                  ...target,
                  sourceServiceId: inputs.sourceServiceId,
                  dataTakenAt: dataTakenAt(inputs, state),
                  sampledEarlier: state.sampledEarlier,
                },
                inputs.prepare,
                limit,
              )
            : undefined;
          if (!prepared && !mark) break;
          // Prepared (and its source's mark read): now, and only now, the connection strings.
          state = withConnectionStrings({ ...state, ...(prepared ? { prepared } : {}), ...(maskedSource ? { maskedSource } : {}) });
          break;
        }
        case "pause":
          read = await stopFork(ctx, id, inputs.projectId, inputs.waitForReady, deleteLimit(ctx, inputs));
          break;
      }
      const flag = flagOf(step);
      if (flag) delete state[flag];
      if (read) state = stateFromService(state, read, password);
    }
  } catch (err) {
    // Past its commit, what it sampled from production (as digests) for the next run to check against.
    if (err instanceof PreparationFailed && err.sampledEarlier) state = { ...state, sampledEarlier: err.sampledEarlier };
    // Owed a preparation, a fork that failed on the way to it (READY, its login) holds the source's
    // data as much as one whose preparation failed: both are stopped.
    if (taking === undefined || taking === "pause" || !state.preparePending) throw partialFailure(id, state, err);
    const why =
      taking === "prepare"
        ? PREPARATION_FAILED
        : `it failed before its preparation (${taking === "ready" ? "waiting for READY" : `its ${taking}`})`;
    const [stopped, said] = await stopUnprepared(ctx, id, state, inputs, why, err);
    throw partialFailure(id, stopped, said);
  }
  return state;
}

const PREPARATION_FAILED = "its preparation failed";

/**
 * A fork not prepared (its preparation failed, or a step before it did, `why`) holds the source's
 * data unmasked and is billed while it runs: it is stopped (not deleted: the next `up` starts it and
 * prepares it, with no second fork), its password still kept aside. A stop that fails is said
 * beside the step's own failure.
 */
export async function stopUnprepared(
  ctx: CallContext,
  id: string,
  state: ServiceForkState,
  inputs: ForkInputs,
  why: string,
  failure: unknown,
): Promise<[ServiceForkState, unknown]> {
  const said = failure instanceof Error ? failure.message : String(failure);
  try {
    const stopped = await stopFork(ctx, id, inputs.projectId, inputs.waitForReady, deleteLimit(ctx, inputs));
    if (!stopped) return [state, failure];
    // A preparation that failed may have committed its masking (its failure says what it kept).
    const data = why === PREPARATION_FAILED ? "its preparation did not finish" : "its data is not masked";
    ctx.progress(`fork ${id} was stopped: ${why}, and ${data}`);
    const note = ` Fork ${id} was stopped meanwhile (${data}); the next \`up\` starts it and prepares it.`;
    return [stateFromService(state, stopped, passwordOf(state)), new TigerCloudError(`${said}${note}`, { cause: failure })];
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    return [state, new TigerCloudError(`${said} Fork ${id} could not be stopped (${why}): it still runs, unprepared.`, { cause: failure })];
  }
}

/** When the fork's data was taken from its source: a PITR fork's targetTime, else its creation (a snapshot may be older). */
function dataTakenAt(inputs: ForkInputs, state: ServiceForkState): string | undefined {
  return inputs.forkStrategy === "PITR" && inputs.targetTime !== undefined ? inputs.targetTime : state.created;
}

/** The state with its password and connection strings published, from its endpoints and password. */
function withConnectionStrings(state: ServiceForkState): ServiceForkState {
  const { pendingPassword: _aside, sampledEarlier: _checked, ...published } = state;
  const password = passwordOf(state);
  return {
    ...published,
    initialPassword: password,
    connectionUri: connectionUri(state.endpoint, password),
    poolerConnectionUri: connectionUri(state.connectionPooler?.endpoint, password),
  };
}
