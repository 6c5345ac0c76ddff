// The sweep: what to do with each PR stack and each fork, decided from the inventory alone (so a
// dry run and --apply decide alike), then done one by one. A PR stack is destroyed when its pull
// request is closed, or when a fork it holds has expired (the fork's declared expiry). It never touches a service without
// forked_from, a standby, a fork any stack holds, one younger than the limit, one named unlike
// the pipeline's forks, or one of another source or project.
import { notAForkOf, type TigerCloudClient } from "../provider/api/client";
import type { Service } from "../provider/api/schemas";
import { GONE, STOPPED } from "../provider/api/statuses";
import { ConflictError } from "../provider/errors";
import { messageOf, printable } from "../provider/text";
import { serviceUnlessGone } from "../provider/policies/gone";
import { type GitHubAccess, pullRequestState } from "./github";
import { type Inventory, type NamePattern, type PullRequestStack, holdersOf } from "./inventory";
import { type Stack, destroyStack, holdersNow, ofThisProject, readStack } from "./stacks";

export interface SweepRules {
  sourceServiceId: string;
  /** A fork no stack holds is removed only when older than this. */
  olderThanMs: number;
  /** ...and only when named as the pipeline names its forks. */
  forkNames: NamePattern;
  /** What removing an unheld fork means. */
  unheld: "delete" | "stop";
}

export type Decision =
  | { kind: "destroy stack"; stack: Stack; why: string; pr?: PullRequestStack; expired?: { serviceId: string; at: string } }
  | { kind: "keep stack"; stack: Stack; why: string; failed?: boolean }
  | { kind: "delete" | "stop"; fork: Service; why: string }
  | { kind: "keep"; fork: Service; why: string; elsewhere?: true };

const DAY_MS = 86_400_000;
/** "3d 4h", "5h 10m", "12m": an age a person reads at a glance. */
export function describeAge(ms: number): string {
  const d = Math.floor(ms / DAY_MS);
  const h = Math.floor((ms % DAY_MS) / 3_600_000);
  const m = Math.floor((ms % 3_600_000) / 60_000);
  return d > 0 ? `${d}d ${h}h` : h > 0 ? `${h}h ${m}m` : `${m}m`;
}

export const forkLabel = (s: Service) => `fork ${printable(s.service_id)} "${printable(s.name ?? "")}"`;

/** The first fork of the sweep's source that `stack` holds and that has expired by `at`. */
function expiredFork(inventory: Inventory, stack: Stack, at: number): { serviceId: string; at: string } | undefined {
  for (const [serviceId, expiry] of stack.expiresAt)
    if (Date.parse(expiry) <= at && inventory.forks.some((f) => f.service_id === serviceId)) return { serviceId, at: expiry };
  return undefined;
}

export function planSweep(inventory: Inventory, rules: SweepRules): Decision[] {
  const decisions: Decision[] = [];
  const fates = (stack: Stack) => {
    const held = [...stack.onDestroy].map(([id, mode]) => `${printable(id)} (onDestroy: ${printable(mode)})`);
    return held.length > 0 ? `; its forks go as their onDestroy says: ${held.join(", ")}` : "";
  };
  for (const pr of inventory.pullRequests) {
    const { stack, number, state } = pr;
    const expired = expiredFork(inventory, stack, inventory.at);
    if (state === "closed") {
      decisions.push({ kind: "destroy stack", stack, pr, why: `pull request #${number} is closed${fates(stack)}` });
    } else if (expired) {
      const why = `fork ${printable(expired.serviceId)} expired at ${printable(expired.at)}${fates(stack)}`;
      decisions.push({ kind: "destroy stack", stack, expired, why });
    } else if (state === "open") decisions.push({ kind: "keep stack", stack, why: `pull request #${number} is open` });
    else if (state === "not asked")
      decisions.push({ kind: "keep stack", stack, why: `whether pull request #${number} is open was not asked (no GITHUB_TOKEN)` });
    else decisions.push({ kind: "keep stack", stack, why: printable(state.unknown), failed: true });
  }
  // The project's other stacks (not this repository's pull requests'): an expired fork is said, and
  // the stack kept. It may hold more than the fork (production's HA, say): a person destroys it.
  const asPullRequest = new Set(inventory.pullRequests.map((p) => p.stack));
  for (const stack of inventory.stacks.filter((s) => ofThisProject(s) && !asPullRequest.has(s))) {
    const expired = expiredFork(inventory, stack, inventory.at);
    if (expired)
      decisions.push({
        kind: "keep stack",
        stack,
        why:
          `fork ${printable(expired.serviceId)} expired at ${printable(expired.at)}, but the stack is not a pull request's of this ` +
          `repository: it may hold more than the fork, so destroy it yourself (pulumi destroy --stack ${printable(stack.name)})`,
      });
  }
  const destroyed = new Set(decisions.flatMap((d) => (d.kind === "destroy stack" ? [d.stack] : [])));
  for (const fork of inventory.forks) decisions.push(decide(inventory, rules, fork, destroyed));
  return decisions;
}

function decide(inventory: Inventory, rules: SweepRules, fork: Service, destroyed: Set<Stack>): Decision {
  // One not named like this pipeline's forks is another repository's or pipeline's on the same source
  // (held by its stack, or not): its own sweep's to report.
  const elsewhere = rules.forkNames.matches(fork.name) ? {} : { elsewhere: true as const };
  const keep = (why: string): Decision => ({ kind: "keep", fork, why, ...elsewhere });
  const notOurs = notAForkOf(fork, { projectId: inventory.projectId, sourceServiceId: rules.sourceServiceId });
  if (notOurs) return keep(printable(notOurs));
  const holders = holdersOf(inventory, fork.service_id);
  if (holders.length > 0) {
    const fate = holders.every((s) => destroyed.has(s)) ? " (destroyed above: the fork goes as its onDestroy says)" : "";
    return keep(`held by stack ${holders.map((s) => printable(s.name)).join(", ")}${fate}`);
  }
  if (!rules.forkNames.matches(fork.name)) return keep(`no stack holds it, but it is not named like ${printable(rules.forkNames.glob)}`);
  const created = Date.parse(fork.created ?? "");
  if (Number.isNaN(created)) return keep("no stack holds it, but the API gives no creation time to count its age from");
  const age = inventory.at - created;
  if (age < rules.olderThanMs)
    return keep(`no stack holds it, but it is ${describeAge(age)} old, younger than ${describeAge(rules.olderThanMs)}`);
  if (GONE.includes(fork.status)) return keep(`it is already ${printable(fork.status)}`);
  if (rules.unheld === "stop" && STOPPED.includes(fork.status))
    return keep(`no stack holds it, and it is already ${printable(fork.status)}`);
  return {
    kind: rules.unheld,
    fork,
    why: `no stack holds it, it is ${describeAge(age)} old, and named like ${printable(rules.forkNames.glob)}`,
  };
}

export interface SweepContext {
  client: TigerCloudClient;
  projectId: string;
  sourceServiceId: string;
  /** The stacks as the inventory read them: one changed since is read again before an action. */
  stacks: Stack[];
  /** To ask again, just before a destroy, whether the pull request is still closed. */
  pullRequests?: { github: GitHubAccess; repository: string } | undefined;
  /** Where the PR stacks' Pulumi project lives (its dependencies run the destroy). */
  projectDir: string;
  print: (line: string) => void;
  /** Told what became of each decision (a summary's row): kept, done, would be done, or failed. */
  outcome?: (d: Decision, outcome: string) => void;
  /** Bounds each API action of the sweep. */
  requestDeadlineMs: number;
}

/** Carries out each decision, printing it; returns how many failed. A failure never stops the rest. */
export async function applySweep(decisions: Decision[], ctx: SweepContext, apply: boolean): Promise<number> {
  let failed = 0;
  for (const d of decisions) {
    const line = describeDecision(d, apply);
    if (d.kind === "keep" || d.kind === "keep stack") {
      ctx.print(line);
      if (d.kind === "keep stack" && d.failed) failed++;
      ctx.outcome?.(d, d.kind === "keep stack" && d.failed ? "kept: could not decide" : "kept");
      continue;
    }
    ctx.print(line);
    if (!apply) {
      ctx.outcome?.(d, "not done (a dry run)");
      continue;
    }
    try {
      const done = await carryOut(d, ctx);
      ctx.print(`    ${done}`);
      ctx.outcome?.(d, done.split("\n").at(-1)?.trim() ?? "done");
    } catch (err) {
      failed++;
      const why = printable(ctx.client.redact(messageOf(err)));
      ctx.print(`    FAILED: ${why}`);
      ctx.outcome?.(d, `FAILED: ${why}`);
    }
  }
  return failed;
}

export function describeDecision(d: Decision, apply: boolean): string {
  const would = apply ? "" : "would ";
  switch (d.kind) {
    case "destroy stack":
      return `${apply ? "DESTROY" : "would destroy"} stack ${printable(d.stack.name)}: ${d.why}`;
    case "keep stack":
      return `${d.failed ? "KEEP (could not decide)" : "keep"} stack ${printable(d.stack.name)}: ${d.why}`;
    case "delete":
      return `${apply ? "DELETE" : `${would}delete`} ${forkLabel(d.fork)}: ${d.why}`;
    case "stop":
      return `${apply ? "STOP" : `${would}stop`} ${forkLabel(d.fork)}: ${d.why}`;
    case "keep":
      return `keep ${forkLabel(d.fork)}: ${d.why}`;
  }
}

async function carryOut(d: Extract<Decision, { kind: "destroy stack" | "delete" | "stop" }>, ctx: SweepContext): Promise<string> {
  if (d.kind === "destroy stack") return d.expired ? destroyExpired(d.stack, d.expired, ctx) : destroyClosed(d.stack, d.pr, ctx);
  // Read again just before: what was read at the start may have changed meanwhile.
  const deadline = Date.now() + ctx.requestDeadlineMs;
  const id = d.fork.service_id;
  const now = await serviceUnlessGone(ctx.client, ctx.projectId, id, deadline);
  if (!now) return `fork ${printable(id)} no longer exists`;
  const notOurs = notAForkOf(now, { projectId: ctx.projectId, sourceServiceId: ctx.sourceServiceId });
  if (notOurs) throw new Error(`${notOurs}: left as it is`);
  if (GONE.includes(now.status)) return `fork ${printable(id)} is already ${printable(now.status)}`;
  const holders = await holdersNow(id, ctx.stacks, ctx.projectDir);
  if (holders.length > 0) return `left as it is: stack ${holders.map(printable).join(", ")} holds it now`;
  try {
    if (d.kind === "delete") {
      await ctx.client.deleteService(ctx.projectId, id, { deadline });
      return `fork ${printable(id)} is being deleted`;
    }
    await ctx.client.stop(ctx.projectId, id, { deadline });
    return `fork ${printable(id)} is stopping (PAUSED soon; its storage is still billed)`;
  } catch (err) {
    if (!(err instanceof ConflictError)) throw err;
    throw new Error(
      `fork ${printable(id)} is busy with another operation (the API answered 409); nothing was done, the next sweep tries again`,
      {
        cause: err,
      },
    );
  }
}

/** Destroys a closed pull request's stack, once GitHub has said again that it is closed (it may have been reopened meanwhile). */
async function destroyClosed(stack: Stack, pr: PullRequestStack | undefined, ctx: SweepContext): Promise<string> {
  const name = printable(stack.name);
  if (!pr) throw new Error(`stack ${name} was not found to be a pull request's: left as it is`);
  if (ctx.pullRequests) {
    const now = await pullRequestState(ctx.pullRequests.github, ctx.pullRequests.repository, pr.number);
    if (now !== "closed") {
      const said = typeof now === "string" ? `it is ${now} now` : printable(now.unknown);
      throw new Error(`pull request #${pr.number} was asked about again before the destroy: ${said}; stack ${name} was left as it is`);
    }
  }
  return destroyAndSay(stack, ctx);
}

/** Destroys a stack whose fork expired, once its state, read again, still says so (a later `up` may have moved the expiry). */
async function destroyExpired(stack: Stack, expired: { serviceId: string; at: string }, ctx: SweepContext): Promise<string> {
  const now = await readStack(stack.name, stack.lastUpdate, ctx.projectDir);
  const expiry = now.expiresAt.get(expired.serviceId);
  if (expiry === undefined || Date.parse(expiry) > Date.now())
    throw new Error(
      `stack ${printable(stack.name)} was read again before the destroy: fork ${printable(expired.serviceId)} ` +
        `${expiry === undefined ? "is no longer held or declares no expiry" : `now expires at ${printable(expiry)}`}; the stack was left as it is`,
    );
  return destroyAndSay(stack, ctx);
}

/** `pulumi destroy` of the stack; what it said (the provider's progress lines among it), indented under the decision. */
async function destroyAndSay(stack: Stack, ctx: SweepContext): Promise<string> {
  const said = await destroyStack(stack.name, ctx.projectDir);
  const lines = said.split("\n").filter((l) => l.trim() !== "");
  return [...lines.map((l) => `| ${printable(ctx.client.redact(l))}`), `stack ${printable(stack.name)} destroyed and removed`].join(
    "\n    ",
  );
}
