// What preview decides for a fork, before anything is made: what check says of the services it
// refers to, the claims a declaration records for the run, the warnings of a takeover or a
// deletion, and the changes that replace instead, or are refused, with the reason.
import type { Service } from "../../api/schemas";
import { GONE, SETTLED } from "../../api/statuses";
import type { CallContext } from "../../context/context";
import { runSlot } from "../../context/memory";
import { describeDeclarant } from "../../rules/claims";
import type { Key } from "../../rules/diff";
import { isKnownText, isUnknown, type Pending } from "../../rules/inputs";
import { type Judgement, type Reference, VERIFY_LIMITS } from "../../policies/verify";
import { adoptionProblem, hasIdentity } from "./identity";
import { maskingNote, maskingRefusal } from "./masking";
import { type ForkInputs, sameSize, WHOLE } from "./inputs";
import type { ServiceForkState } from "./state";

/** What check says of the source service it found (workflows/verify.ts). */
function judgeSource(source: Service): Judgement {
  if (SETTLED.includes(source.status)) return {};
  if (GONE.includes(source.status))
    return { failure: `names service ${source.service_id}, which is ${source.status}: it cannot be forked` };
  return {
    warning:
      `ServiceFork: source service ${source.service_id} is ${source.status}; it can be forked when READY or PAUSED, ` +
      `so \`up\` will wait for it (within createTimeout) before forking.`,
  };
}

/** The services check reads: the source, and the fork adoptServiceId names (preview tells now what create would refuse). */
export function forkReferences(inputs: Pending<ForkInputs>, ctx: CallContext): Reference[] {
  const source: Reference = {
    type: "service",
    property: "sourceServiceId",
    projectId: inputs.projectId,
    id: inputs.sourceServiceId,
    judge: (service) => {
      const judged = judgeSource(service);
      const refusal = judged.failure ? undefined : maskingRefusal(ctx, inputs, service);
      if (refusal) return { ...judged, failure: refusal };
      // Preview cannot read a database: it says what `up` will check.
      const note = judged.failure ? undefined : maskingNote(ctx, inputs, service);
      return note ? { ...judged, warning: [judged.warning, note].filter(Boolean).join(" ") } : judged;
    },
  };
  if (inputs.adoptServiceId === undefined) return [source];
  const judgeAdopted = (service: Service): Judgement => {
    const { projectId, sourceServiceId, name } = inputs;
    const problem =
      typeof sourceServiceId === "string" && typeof projectId === "string"
        ? adoptionProblem(service, { projectId, sourceServiceId, name: typeof name === "string" ? name : undefined })
        : undefined;
    return problem ? { failure: `cannot be taken under management: ${problem}` } : {};
  };
  return [
    source,
    { type: "service", property: "adoptServiceId", projectId: inputs.projectId, id: inputs.adoptServiceId, judge: judgeAdopted },
  ];
}

/** The project's services, read once per project and run for preview's warnings. */
const PREVIEW = runSlot(() => ({
  byProject: new Map<string, Promise<Service[]>>(),
  warned: new Set<string>(),
  replacing: new Set<string>(),
}));
function servicesOnce(ctx: CallContext, projectId: string): Promise<Service[]> {
  const { byProject } = ctx.learnt(PREVIEW);
  let services = byProject.get(projectId);
  if (!services) {
    services = ctx.client(VERIFY_LIMITS).listServices(projectId);
    byProject.set(projectId, services);
  }
  return services;
}

/**
 * The plan says "create", and `up` would take over a running fork (adoptExisting): preview says
 * which, what happens to its password, and that an alias keeps it as it is when the create is a
 * rename or a move. The fork a replacement stops first (deleteBeforeReplace) is not taken over.
 */
export async function warnOfTakeover(ctx: CallContext, olds: Pending<ForkInputs> | undefined, inputs: Pending<ForkInputs>): Promise<void> {
  const { resource } = ctx;
  const { projectId, sourceServiceId, name } = inputs;
  if (!isKnownText(projectId) || !isKnownText(sourceServiceId) || !isKnownText(name)) return;
  if (inputs.adoptExisting === false || inputs.adoptServiceId !== undefined || !ctx.verifyReferences) return;
  // A replacement keeping the identity stops its fork before forking anew (deleteBeforeReplace).
  // The engine checks it with the old inputs (not the fork's ID: the identity tells), then once
  // more, as a create, with none: that second check is remembered by the URN.
  const state = ctx.learnt(PREVIEW);
  if (olds && olds.projectId === projectId && olds.sourceServiceId === sourceServiceId && olds.name === name) {
    state.replacing.add(resource.urn);
    return;
  }
  if (!olds && state.replacing.has(resource.urn)) return;
  let running: Service[];
  try {
    running = (await servicesOnce(ctx, projectId)).filter((s) => hasIdentity(s, { projectId, sourceServiceId, name }));
  } catch {
    return; // no credentials, or the API unavailable: verifying the references has said so already
  }
  const fork = running[0];
  if (!fork) return;
  const password =
    inputs.passwordOnAdopt === "keep"
      ? `its password is kept (passwordOnAdopt: "keep"), so this resource's initialPassword and connection strings will have none`
      : `its password will be reset (passwordOnAdopt: "reset"): anything holding its current connection string can no longer log in`;
  const message =
    running.length > 1
      ? `ServiceFork ${describeDeclarant(resource)}: ${running.length} running forks named "${name}" of service ${sourceServiceId} exist ` +
        `(${running.map((s) => s.service_id).join(", ")}); \`up\` will refuse to choose and make none.`
      : `ServiceFork ${describeDeclarant(resource)} will take over running fork ${fork.service_id} ("${name}", ${fork.status}, a fork of service ${sourceServiceId}) ` +
        `instead of forking, and ${password}. If this is a rename or a move into or out of a component, give the resource an alias ` +
        `instead (aliases: [{ name: "<old name>" }] or [{ parent: <old parent> }]): it then keeps the fork and its password untouched.`;
  // Said once per resource and run, however often the engine checks it.
  const key = `${resource.urn}\n${message}`;
  if (state.warned.has(key)) return;
  state.warned.add(key);
  await ctx.warning(message, resource.urn);
}

/**
 * Changes the API cannot make, refused at preview with the reason rather than failed at `up` or
 * made harmful: a replacement that would re-adopt the fork it replaces; an in-place change to a
 * fork that stays paused (rename, resize and setEnvironment need it running).
 */
export function refusedChange(
  olds: ServiceForkState,
  news: Pending<ForkInputs>,
  replaces: string[],
  changed: string[],
): string | undefined {
  if (replaces.length > 0 && news.adoptServiceId !== undefined && news.adoptServiceId === olds.serviceId) {
    return (
      `ServiceFork: ${replaces.join(", ")} changed, which needs a new fork, but adoptServiceId names the fork this resource ` +
      `already holds (${String(olds.serviceId)}). Remove adoptServiceId (after create it is bookkeeping) to make a new fork, or undo the change.`
    );
  }
  const inPlace = changed.filter((k) => ["name", "cpuMillis", "memoryGbs", "environmentTag"].includes(k));
  if (inPlace.length > 0 && olds.paused === true && news.paused === true) {
    return (
      `ServiceFork ${String(olds.serviceId)} is paused, and ${inPlace.join(", ")} can be changed only while it runs. ` +
      `Set paused: false for this change (and true again afterwards), or make the change when it runs.`
    );
  }
  return undefined;
}

/** adoptServiceId set to another service than the one held replaces: that one is adopted, this one stopped. */
export async function replacedOnChange(
  ctx: CallContext,
  changed: Key<ForkInputs>[],
  olds: ServiceForkState,
  news: Pending<ForkInputs>,
): Promise<Key<ForkInputs>[]> {
  const adopting = news.adoptServiceId;
  const another = typeof adopting === "string" && changed.includes("adoptServiceId") && adopting !== olds.serviceId;
  return [
    ...(another ? (["adoptServiceId"] as const) : []),
    ...(await sizeChangesResizeCannotMake(ctx, changed, olds, news)),
    ...(await preparationChange(ctx, changed, olds)),
  ];
}

/**
 * A new preparation: a prepared fork is replaced (its data was masked the old way, and masking
 * cannot be undone); one whose preparation never finished gets the new one in place. Preview says which.
 */
async function preparationChange(ctx: CallContext, changed: Key<ForkInputs>[], olds: ServiceForkState): Promise<Key<ForkInputs>[]> {
  if (!changed.includes("prepare")) return [];
  if (olds.preparePending) {
    await ctx.warning(`prepare changed while fork ${olds.serviceId}'s preparation has not finished: the new one runs on it, in place`);
    return [];
  }
  await ctx.warning(
    `prepare changed, so this fork will be replaced by a new one, prepared the new way (its data copied afresh from the source: ` +
      `what the old preparation did cannot be undone in place)`,
  );
  return ["prepare"];
}

/**
 * resize takes whole millicores and whole gigabytes, never "shared": a move between "shared" and
 * a number, or to a fraction of a gigabyte, needs a new fork. Preview says why.
 */
async function sizeChangesResizeCannotMake(
  ctx: CallContext,
  changed: Key<ForkInputs>[],
  olds: ServiceForkState,
  news: Pending<ForkInputs>,
): Promise<Key<ForkInputs>[]> {
  const replaced: Key<ForkInputs>[] = [];
  for (const k of ["cpuMillis", "memoryGbs"] as const) {
    if (!changed.includes(k) || isUnknown(news[k])) continue;
    const [was, now] = [olds[k], news[k]];
    if (sameSize(was, now)) continue;
    let why: string | undefined;
    if ((was === "shared") !== (now === "shared") && was !== undefined)
      why = `from ${String(was)} to ${String(now)}: resize cannot move between "shared" and a size`;
    else if (now === "shared") why = `to "shared": resize cannot make a fork shared`;
    else if (typeof now === "string" && !WHOLE.test(now)) why = `to ${now}: resize takes whole numbers`;
    if (!why) continue;
    replaced.push(k);
    await ctx.warning(`${k} changes ${why}, so this fork will be replaced by a new one (its data copied afresh from the source)`);
  }
  return replaced;
}

/**
 * A replacement that keeps the name and the source would find the old fork running and adopt
 * it, then stop it: so the old one is stopped first, and the new one is forked afresh.
 */
export function deletesBeforeReplace(olds: ServiceForkState, news: Pending<ForkInputs>): boolean {
  const sameIdentity = (["projectId", "sourceServiceId", "name"] as const).every((k) => news[k] !== undefined && olds[k] === news[k]);
  return sameIdentity && news.adoptExisting !== false;
}

/** A replacement with onDestroy "delete" deletes the old fork and its data: preview says so. */
export async function warnOfDeletion(
  ctx: CallContext,
  id: string,
  olds: ServiceForkState,
  news: Pending<ForkInputs>,
  first: boolean,
): Promise<void> {
  if (olds.onDestroy !== "delete") return;
  await ctx.warning(
    `ServiceFork ${describeDeclarant(ctx.resource)} will be replaced, and its fork ${id} will be DELETED with its data ` +
      `(onDestroy: "delete"), ${first ? "before the new fork is made (same name and source)" : "after the new fork is made"}. ` +
      `Set onDestroy: "stop" and run \`up\` first to keep the old fork, paused.`,
    ctx.resource.urn,
  );
}
