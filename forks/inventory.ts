// What the janitor knows before it decides anything: the project's forks (from the API), the
// stacks that hold them (from the Pulumi backend), and for a PR stack whether its pull request
// is still open (from GitHub). Read once, whole; any failure to read ends the run.
import type { TigerCloudClient } from "../provider/api/client";
import type { Service } from "../provider/api/schemas";
import { type GitHubAccess, type PullState, pullRequestState } from "./github";
import { type Stack, ofThisProject, readStacks } from "./stacks";

/** Bounds each API request of the command, retries included. */
export const REQUEST_LIMIT_MS = 60_000;

/**
 * How a pipeline names its stacks and forks: a glob where `*` is a pull request's number (digits),
 * every other character itself. So `pr-*.acme.shop` is neither `pr-5.other.acme.shop` (a PR of
 * other/acme.shop: a repository's name may hold dots) nor a fork made by hand as `pr-old.acme.shop`.
 */
export class NamePattern {
  private readonly re: RegExp;
  constructor(readonly glob: string) {
    const parts = glob.split("*").map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
    this.re = new RegExp(`^${parts.join("([0-9]+)")}$`);
  }
  matches(name: string | undefined): boolean {
    return name !== undefined && this.re.test(name);
  }
  /** The pull request's number the first `*` stood for. */
  number(name: string): number | undefined {
    const n = this.re.exec(name)?.[1];
    return n === undefined ? undefined : Number(n);
  }
}

/** The pipeline's naming: its repository's PR stacks (`*` is the PR number), and its forks. */
export interface PullRequestStacks {
  repository: string;
  stacks: NamePattern;
}

export interface PullRequestStack {
  stack: Stack;
  number: number;
  state: PullState | "not asked";
}

export interface Inventory {
  projectId: string;
  /** Every fork of the project (of `source`, when one is given), standbys left out. */
  forks: Service[];
  /** The standbys of those sources: listed, never touched. */
  standbys: Service[];
  stacks: Stack[];
  pullRequests: PullRequestStack[];
  /** When it was read (ages are counted from then). */
  at: number;
}

export async function readInventory(options: {
  client: TigerCloudClient;
  projectId: string;
  source?: string | undefined;
  prStacks?: PullRequestStacks | undefined;
  github?: GitHubAccess | undefined;
  /** Where the Pulumi CLI runs. */
  projectDir: string;
}): Promise<Inventory> {
  const { client, projectId, source, prStacks, github, projectDir } = options;
  const at = Date.now();
  const services = await client.listServices(projectId, { deadline: Date.now() + REQUEST_LIMIT_MS });
  const ofSource = services.filter((s) => s.forked_from?.service_id && (source === undefined || s.forked_from.service_id === source));
  const stacks = await readStacks(projectDir);
  const pullRequests: PullRequestStack[] = [];
  // Only the PR project's own stacks are its pull requests': another project's stack of the same
  // name is never destroyed from here.
  for (const stack of stacks.filter(ofThisProject)) {
    const number = prStacks?.stacks.number(stack.name);
    if (prStacks === undefined || number === undefined) continue;
    const state = github ? await pullRequestState(github, prStacks.repository, number) : "not asked";
    pullRequests.push({ stack, number, state });
  }
  return {
    projectId,
    forks: ofSource.filter((s) => s.forked_from?.is_standby !== true),
    standbys: ofSource.filter((s) => s.forked_from?.is_standby === true),
    stacks,
    pullRequests,
    at,
  };
}

/** The stacks that hold a service. */
export const holdersOf = (inventory: Inventory, serviceId: string): Stack[] => inventory.stacks.filter((s) => s.serviceIds.has(serviceId));

/** The pull request of the first of these stacks that is a PR stack. */
export const pullRequestOf = (inventory: Inventory, stacks: Stack[]): PullRequestStack | undefined =>
  inventory.pullRequests.find((p) => stacks.includes(p.stack));
