// The fork janitor's decisions and actions, against the simulator's services. The stacks are
// given as the Pulumi backend would hand them over (the workflow runner reads a real backend).
import { createClient } from "../provider/api/client";
import { ageMs, main, UsageError } from "../provider/forks/cli";
import { type Inventory, NamePattern } from "../provider/forks/inventory";
import type { Stack } from "../provider/forks/stacks";
import { type Decision, applySweep, planSweep, type SweepRules } from "../provider/forks/sweep";
import { Simulator } from "../simulator";

let sim: Simulator;
let ids: ReturnType<Simulator["defaults"]>;
beforeEach(async () => {
  sim = new Simulator({});
  await sim.start();
  ids = sim.defaults();
});
afterEach(() => sim.stop());

const DAY = 86_400_000;
const client = () => createClient({ apiUrl: sim.url, apiKey: sim.apiKey });
const stack = (shortName: string, serviceIds: string[], onDestroy: Record<string, string> = {}): Stack => ({
  name: `organization/pr-fork/${shortName}`,
  shortName,
  serviceIds: new Set(serviceIds),
  onDestroy: new Map(Object.entries(onDestroy)),
});
const rules = (extra: Partial<SweepRules> = {}): SweepRules => ({
  sourceServiceId: ids.serviceId,
  olderThanMs: 2 * DAY,
  forkNames: new NamePattern("pr-*.acme.shop"),
  unheld: "delete",
  ...extra,
});
async function inventory(stacks: Stack[], pullRequests: Inventory["pullRequests"] = []): Promise<Inventory> {
  const services = await client().listServices(ids.projectId);
  const forks = services.filter((s) => s.forked_from?.service_id);
  return {
    projectId: ids.projectId,
    forks: forks.filter((s) => !s.forked_from?.is_standby),
    standbys: forks.filter((s) => s.forked_from?.is_standby),
    stacks,
    pullRequests,
    at: Date.now(),
  };
}
const byFork = (decisions: Decision[]) =>
  Object.fromEntries(decisions.flatMap((d) => ("fork" in d ? [[d.fork.name, `${d.kind}: ${d.why}`]] : [])));

test("a pipeline's names: * is the PR number (no dot, no slash), every other character is itself", () => {
  const p = new NamePattern("pr-*.acme.shop");
  expect(p.matches("pr-12.acme.shop")).toBe(true);
  expect(p.number("pr-12.acme.shop")).toBe(12);
  expect(p.matches("pr-12.acmexshop")).toBe(false);
  expect(p.matches("pr-12.acme.shop.old")).toBe(false);
  expect(p.matches("pr-.acme.shop")).toBe(false);
  // A PR of other/acme.shop (a repository's name may hold dots) is not acme/shop's.
  expect(p.matches("pr-5.other.acme.shop")).toBe(false);
  expect(p.number("pr-x.acme.shop")).toBeUndefined();
});

test("only an old fork of the source that no stack holds, named like the pipeline's, is removed; the rest are kept, each with its reason", async () => {
  const old = new Date(Date.now() - 10 * DAY);
  const gone = sim.outOfBand.addFork(ids.projectId, ids.serviceId, { name: "pr-3.acme.shop", createdAt: old });
  const held = sim.outOfBand.addFork(ids.projectId, ids.serviceId, { name: "pr-7.acme.shop", createdAt: old });
  sim.outOfBand.addFork(ids.projectId, ids.serviceId, { name: "pr-8.acme.shop" });
  sim.outOfBand.addFork(ids.projectId, ids.serviceId, { name: "scratch", createdAt: old });
  sim.outOfBand.addFork(ids.projectId, ids.serviceId, { name: "pr-4.acme.web", createdAt: old });
  sim.outOfBand.addFork(ids.projectId, ids.serviceId, { name: "pr-5.acme.shop", createdAt: old, standby: true });
  const inv = await inventory([stack("pr-7.acme.shop", [held])]);
  const decided = byFork(planSweep(inv, rules()));
  expect(decided).toEqual({
    "pr-3.acme.shop": expect.stringMatching(/^delete: no stack holds it, it is 10d 0h old, and named like pr-\*\.acme\.shop$/),
    "pr-7.acme.shop": "keep: held by stack organization/pr-fork/pr-7.acme.shop",
    "pr-8.acme.shop": "keep: no stack holds it, but it is 0m old, younger than 2d 0h",
    scratch: "keep: no stack holds it, but it is not named like pr-*.acme.shop",
    "pr-4.acme.web": "keep: no stack holds it, but it is not named like pr-*.acme.shop",
  });
  // The standby is not among the forks at all; a fork of another source is not this sweep's.
  expect(inv.standbys.map((s) => s.name)).toEqual(["pr-5.acme.shop"]);
  expect(byFork(planSweep(inv, rules({ sourceServiceId: "svc-other" })))).toEqual({});
  // Told to stop rather than delete: the same fork, stopped; once paused, kept.
  expect(byFork(planSweep(inv, rules({ unheld: "stop" })))["pr-3.acme.shop"]).toMatch(/^stop: /);
  sim.outOfBand.setStatus(ids.projectId, gone, "PAUSED");
  const paused = byFork(planSweep(await inventory([stack("pr-7.acme.shop", [held])]), rules({ unheld: "stop" })));
  expect(paused["pr-3.acme.shop"]).toBe("keep: no stack holds it, and it is already PAUSED");
});

test("a fork whose forked_from names another project, or a standby slipped into the list, is kept by the fork rule itself", async () => {
  const moved = sim.outOfBand.addFork(ids.projectId, ids.serviceId, { name: "pr-3.acme.shop", createdAt: new Date(0) });
  sim.outOfBand.setForkedFrom(ids.projectId, moved, { project_id: "proj-elsewhere" });
  const standby = sim.outOfBand.addFork(ids.projectId, ids.serviceId, { name: "pr-4.acme.shop", createdAt: new Date(0), standby: true });
  const inv = await inventory([]);
  inv.forks.push(...inv.standbys);
  expect(byFork(planSweep(inv, rules()))).toEqual({
    "pr-3.acme.shop": expect.stringContaining("in project proj-elsewhere, not in project"),
    "pr-4.acme.shop": `keep: service ${standby} is a standby of service ${ids.serviceId} (forked_from.is_standby), not a fork`,
  });
});

test("PR stacks: a closed PR's stack is destroyed; an open one kept; one GitHub could not answer for is kept and fails the run", async () => {
  const s7 = stack("pr-7.acme.shop", ["svc-a"], { "svc-a": "delete" });
  const s8 = stack("pr-8.acme.shop", []);
  const s9 = stack("pr-9.acme.shop", []);
  const inv = await inventory(
    [s7, s8, s9],
    [
      { stack: s7, number: 7, state: "closed" },
      { stack: s8, number: 8, state: "open" },
      { stack: s9, number: 9, state: { unknown: "GitHub answered 502 for pull request #9 of acme/shop" } },
    ],
  );
  const decisions = planSweep(inv, rules());
  expect(decisions.map((d) => [d.kind, d.why])).toEqual([
    ["destroy stack", "pull request #7 is closed; its forks go as their onDestroy says: svc-a (onDestroy: delete)"],
    ["keep stack", "pull request #8 is open"],
    ["keep stack", "GitHub answered 502 for pull request #9 of acme/shop"],
  ]);
  const printed: string[] = [];
  const failed = await applySweep(
    decisions.slice(1),
    {
      client: client(),
      projectId: ids.projectId,
      sourceServiceId: ids.serviceId,
      projectDir: ".",
      print: (l) => printed.push(l),
      requestDeadlineMs: 5000,
    },
    true,
  );
  expect(failed).toBe(1);
  expect(printed).toEqual([
    "keep stack organization/pr-fork/pr-8.acme.shop: pull request #8 is open",
    "KEEP (could not decide) stack organization/pr-fork/pr-9.acme.shop: GitHub answered 502 for pull request #9 of acme/shop",
  ]);
});

test("--apply deletes (or stops) what the plan says, reading each fork again first; a failed action fails the run and the rest still run", async () => {
  const old = new Date(Date.now() - 10 * DAY);
  const a = sim.outOfBand.addFork(ids.projectId, ids.serviceId, { name: "pr-1.acme.shop", createdAt: old });
  const b = sim.outOfBand.addFork(ids.projectId, ids.serviceId, { name: "pr-2.acme.shop", createdAt: old });
  const c = sim.outOfBand.addFork(ids.projectId, ids.serviceId, { name: "pr-3.acme.shop", createdAt: old });
  const decisions = planSweep(await inventory([]), rules());
  expect(decisions.map((d) => d.kind)).toEqual(["delete", "delete", "delete"]);
  // Dry run: every action printed, nothing sent.
  const dry: string[] = [];
  const ctx = { client: client(), projectId: ids.projectId, sourceServiceId: ids.serviceId, projectDir: ".", requestDeadlineMs: 5000 };
  expect(await applySweep(decisions, { ...ctx, print: (l) => dry.push(l) }, false)).toBe(0);
  expect(dry.every((l) => l.startsWith("would delete fork "))).toBe(true);
  expect(sim.requests().filter((r) => r.method !== "GET")).toEqual([]);

  // Meanwhile b became a standby (the API's word changed): the read before the action refuses it.
  sim.outOfBand.setForkedFrom(ids.projectId, b, { is_standby: true });
  sim.injectFault("deleteService", {
    kind: "status",
    status: 403,
    body: JSON.stringify({ code: "FORBIDDEN", message: "no \u001b[31m" }),
    contentType: "application/json",
  });
  const printed: string[] = [];
  const failed = await applySweep(decisions, { ...ctx, print: (l) => printed.push(l) }, true);
  expect(failed).toBe(2);
  expect(printed.join("\n")).toContain(`FAILED: Request failed with status code 403 FORBIDDEN`);
  expect(printed.join("\n")).toContain(`FAILED: service ${b} is a standby of service ${ids.serviceId}`);
  expect(printed.join("\n")).not.toContain("\u001b");
  expect(printed).toContain(`    fork ${c} is being deleted`);
  expect(sim.service(ids.projectId, a)?.status).toBe("READY");
  expect(sim.service(ids.projectId, b)?.status).toBe("READY");
  expect(sim.service(ids.projectId, c)?.status).toMatch(/DELET/);
});

test("the command refuses what it cannot do safely, naming the option: exit 2, nothing read", async () => {
  const errors: string[] = [];
  jest.spyOn(process.stderr, "write").mockImplementation((chunk: string | Uint8Array) => {
    errors.push(String(chunk));
    return true;
  });
  try {
    expect(await main(["sweep", "--older-than", "7d", "--repository", "acme/shop"])).toBe(2);
    expect(errors.join("")).toContain("sweep needs --source");
    expect(await main(["sweep", "--source", "svc-x", "--repository", "acme/shop"])).toBe(2);
    expect(errors.join("")).toContain("sweep needs --older-than");
    expect(await main(["sweep", "--source", "svc-x", "--older-than", "7d", "--repository", "not a repo"])).toBe(2);
    expect(errors.join("")).toContain("--repository (or GITHUB_REPOSITORY) must be OWNER/NAME");
    expect(await main(["remove-everything"])).toBe(2);
    expect(sim.requests()).toEqual([]);
  } finally {
    jest.restoreAllMocks();
  }
  expect(() => ageMs("30m")).toThrow(UsageError);
  expect(() => ageMs("7")).toThrow(/at least 1h/);
  expect(ageMs("90m")).toBe(90 * 60_000);
  expect(ageMs("7d")).toBe(7 * DAY);
});
