// One fork per declared ServiceFork: a running fork with the same identity (project, source,
// name) is adopted instead of forked again, and a fork whose forkService answer was lost is
// found and recorded. Provider methods against the simulator, as the engine calls them.
import { DynamicPartialFailure } from "../../../../provider/hosts/dynamic/provider";
import { providers } from "../../../../provider/hosts/dynamic/runtime";
import { ForkOutcomeUnknownError, PartialFailureError, TigerCloudError } from "../../../../provider/errors";
import { rejectionOf, providerSimForEachTest, P, type Ids } from "../../../support/helpers";
import { Simulator } from "../../../../simulator";

const fork = providers.ServiceFork;

let sim: Simulator;
let ids: Ids;
let stderr: string[];
providerSimForEachTest((current) => ({ sim, ids, stderr } = current));
const stderrText = () => stderr.join("");

const inputsFor = async (extra: Record<string, unknown> = {}) =>
  (await fork.check({}, { __provider: P, sourceServiceId: ids.serviceId, forkStrategy: "NOW", name: "pr-5", ...extra })).inputs;
/** A fork made elsewhere (or by a create whose answer never came back), through the API. */
async function makeFork(name: string, extra: Record<string, unknown> = {}): Promise<string> {
  const res = await fetch(`${sim.url}/projects/${ids.projectId}/services/${ids.serviceId}/forkService`, {
    method: "POST",
    headers: { Authorization: `Bearer ${sim.apiKey}`, "Content-Type": "application/json" },
    body: JSON.stringify({ fork_strategy: "NOW", name, ...extra }),
  });
  return ((await res.json()) as { service_id: string }).service_id;
}

test("a running fork with the same name and source is adopted: no second forkService, outputs say so, its password reset", async () => {
  const existing = await makeFork("pr-5");
  const lost = sim.service(ids.projectId, existing)?.initial_password;
  sim.clearLog();
  const { id, outs } = await fork.create(await inputsFor());
  expect(id).toBe(existing);
  expect(sim.requests("forkService")).toEqual([]);
  expect(outs).toMatchObject({ serviceId: existing, status: "READY", adopted: { reason: expect.stringMatching(/already existed/) } });
  expect(Date.parse((outs.adopted as { at: string }).at)).toBeGreaterThan(Date.now() - 60_000);
  // A new password, set once, is the one recorded; the lost one is not.
  const sent = sim.requests("updatePassword");
  expect(sent).toHaveLength(1);
  expect(outs.initialPassword).toBe((sent[0]?.body as { password: string }).password);
  expect(Buffer.from(outs.initialPassword as string, "base64url").length).toBeGreaterThanOrEqual(16);
  expect(sim.service(ids.projectId, existing)?.initial_password).toBe(outs.initialPassword);
  expect(outs.initialPassword).not.toBe(lost);
  // The connection string carries the new password, to the fork's endpoint.
  const uri = new URL(outs.connectionUri as string);
  expect(decodeURIComponent(uri.password)).toBe(outs.initialPassword);
  expect(uri.hostname).toBe(sim.service(ids.projectId, existing)?.endpoint?.host);
  expect(outs).not.toHaveProperty("passwordPending");
  expect(stderrText()).toContain(`the password of fork ${existing} was reset`);
  expect(stderrText()).not.toContain(outs.initialPassword as string);
});

test("an adopted fork that is not READY in time keeps its new password owed: the partial failure records it, and the next up sets it before the login", async () => {
  const existing = await makeFork("pr-5");
  sim.outOfBand.setStatus(ids.projectId, existing, "CONFIGURING");
  sim.clearLog();
  const inputs = await inputsFor({ createTimeout: "1s", readyWhen: "login" });
  const err = await rejectionOf(fork.create(inputs));
  expect(err).toBeInstanceOf(PartialFailureError);
  const recorded = (err as DynamicPartialFailure).properties;
  expect(recorded).toMatchObject({ serviceId: existing, status: "CONFIGURING", passwordPending: true });
  expect(sim.requests("updatePassword")).toEqual([]);

  sim.outOfBand.setStatus(ids.projectId, existing, "READY");
  const news = (await fork.check(recorded, { __provider: P, sourceServiceId: ids.serviceId, forkStrategy: "NOW", name: "pr-5" })).inputs;
  const { outs } = await fork.update(existing, recorded, news);
  expect(sim.requests("updatePassword")).toHaveLength(1);
  expect(outs).toMatchObject({ status: "READY", initialPassword: sim.service(ids.projectId, existing)?.initial_password });
  expect(outs).not.toHaveProperty("passwordPending");
  expect(outs).not.toHaveProperty("loginPending");
});

test('a password reset still owed stays recorded under passwordOnAdopt "keep", and is made when it goes back to "reset"', async () => {
  const existing = await makeFork("pr-5");
  sim.outOfBand.setStatus(ids.projectId, existing, "CONFIGURING");
  const err = await rejectionOf(fork.create(await inputsFor({ createTimeout: "1s", readyWhen: "status" })));
  const recorded = (err as DynamicPartialFailure).properties;
  sim.outOfBand.setStatus(ids.projectId, existing, "READY");
  const checked = async (olds: Record<string, unknown>, passwordOnAdopt: string) =>
    (
      await fork.check(olds, {
        __provider: P,
        sourceServiceId: ids.serviceId,
        forkStrategy: "NOW",
        name: "pr-5",
        readyWhen: "status",
        passwordOnAdopt,
      })
    ).inputs;
  sim.clearLog();
  const kept = (await fork.update(existing, recorded, await checked(recorded, "keep"))).outs as Record<string, unknown>;
  expect(sim.requests("updatePassword")).toEqual([]);
  expect(kept).toMatchObject({ passwordPending: true });
  const reset = (await fork.update(existing, { ...kept, __provider: P }, await checked(kept, "reset"))).outs;
  expect(sim.requests("updatePassword")).toHaveLength(1);
  expect(reset).not.toHaveProperty("passwordPending");
});

test("an adopted PROD fork keeps its tag when the program declares none; a declared tag is set", async () => {
  const existing = await makeFork("pr-5", { environment_tag: "PROD" });
  const { id, outs } = await fork.create(await inputsFor());
  expect(id).toBe(existing);
  expect(outs).toMatchObject({ environmentTag: "PROD", environment: "PROD" });
  // The next preview: no change, and an update sends no setEnvironment.
  const olds = { ...outs, __provider: P };
  expect(await fork.diff(id, olds, await inputsFor())).toMatchObject({ changes: false });
  sim.clearLog();
  await fork.update(id, olds, await inputsFor({ createTimeout: "1h" }));
  expect(sim.requests("setEnvironment")).toEqual([]);
  expect(sim.service(ids.projectId, id)?.metadata).toEqual({ environment: "PROD" });
  // Declared, the tag is the program's.
  expect(await fork.diff(id, olds, await inputsFor({ environmentTag: "DEV" }))).toMatchObject({ changes: true, replaces: [] });
  await fork.update(id, olds, await inputsFor({ environmentTag: "DEV" }));
  expect(sim.requests("setEnvironment").map((r) => r.body)).toEqual([{ environment: "DEV" }]);
});

test('passwordOnAdopt "keep": no updatePassword, and no password output', async () => {
  await makeFork("pr-5");
  sim.clearLog();
  const { outs } = await fork.create(await inputsFor({ passwordOnAdopt: "keep" }));
  expect(sim.requests("updatePassword")).toEqual([]);
  expect(outs.initialPassword).toBeUndefined();
});

test("several running forks with the identity: fails at once naming them, and makes none", async () => {
  const [a, b] = [await makeFork("pr-5"), await makeFork("pr-5")];
  sim.clearLog();
  const err = await rejectionOf(fork.create(await inputsFor()));
  expect(err).toBeInstanceOf(TigerCloudError);
  expect(err.message).toMatch(/2 running forks of service svc-parent1 are named "pr-5"/);
  expect(err.message).toContain(a);
  expect(err.message).toContain(b);
  expect(err.message).toMatch(/created \d{4}-/);
  expect(sim.requests("forkService")).toEqual([]);
});

test("never adopted: a paused fork or a fork of another name; nor anything with adoptExisting false", async () => {
  const paused = await makeFork("pr-5");
  sim.outOfBand.setStatus(ids.projectId, paused, "PAUSED");
  await makeFork("pr-6");
  const created = await fork.create(await inputsFor());
  expect(created.id).not.toBe(paused);
  expect(created.outs.adopted).toBeUndefined();
  expect(created.outs.initialPassword).toEqual(expect.any(String));

  const again = await fork.create(await inputsFor({ adoptExisting: false }));
  expect(again.id).not.toBe(created.id);
  expect(sim.requests("forkService")).toHaveLength(4);
});

test("a standby of the source named like the fork is never adopted, by name or by adoptServiceId (preview says so too)", async () => {
  const standby = sim.outOfBand.addFork(ids.projectId, ids.serviceId, { name: "pr-5", standby: true });
  const created = await fork.create(await inputsFor());
  expect(created.id).not.toBe(standby);
  expect(created.outs.adopted).toBeUndefined();
  expect(sim.requests("forkService")).toHaveLength(1);

  const { failures } = await fork.check(
    {},
    { __provider: P, sourceServiceId: ids.serviceId, forkStrategy: "NOW", adoptServiceId: standby },
  );
  expect(failures).toEqual([
    { property: "adoptServiceId", reason: expect.stringContaining(`service ${standby} is a standby of service ${ids.serviceId}`) },
  ]);
  const err = await rejectionOf(fork.create(await inputsFor({ adoptServiceId: standby, name: undefined })));
  expect(err.message).toContain(`adoptServiceId ${standby} cannot be taken under management: service ${standby} is a standby`);
  expect(sim.requests("updatePassword")).toEqual([]);
});

test("two forks of one source with different names are never adopted into each other", async () => {
  const a = await fork.create(await inputsFor({ name: "pr-a" }));
  const b = await fork.create(await inputsFor({ name: "pr-b" }));
  expect(a.id).not.toBe(b.id);
  expect([a.outs.adopted, b.outs.adopted]).toEqual([undefined, undefined]);
});

test.each([
  ["a 500", 500],
  ["a dropped connection", 0],
])(
  "forkService made the fork but its answer was lost (%s): the fork is found and recorded; one forkService only",
  async (_what, status) => {
    sim.delays = { ...sim.delays, forkQueuedMs: 100 };
    sim.injectFault("forkService", { kind: "afterApplying", status });
    const { id, outs } = await fork.create(await inputsFor());
    expect(sim.requests("forkService")).toHaveLength(1);
    const forks = sim.services(ids.projectId).filter((s) => s.name === "pr-5");
    expect(forks.map((s) => s.service_id)).toEqual([id]);
    expect(outs).toMatchObject({ status: "READY", adopted: { reason: expect.stringMatching(/answer was lost/) } });
  },
);

test("an ambiguous failure with no fork made, or with no name to match, is still ForkOutcomeUnknownError", async () => {
  sim.injectFault("forkService", { kind: "status", status: 500 });
  expect(await rejectionOf(fork.create(await inputsFor()))).toBeInstanceOf(ForkOutcomeUnknownError);
  sim.injectFault("forkService", { kind: "afterApplying", status: 500 });
  const unnamed = { ...(await inputsFor()) };
  delete unnamed.name;
  expect(await rejectionOf(fork.create(unnamed))).toBeInstanceOf(ForkOutcomeUnknownError);
  expect(sim.requests("forkService")).toHaveLength(2);
});

test("a replacement that keeps the name and source stops the old fork first, so the new one is not the old one adopted", async () => {
  const olds = { ...(await inputsFor()), serviceId: "svc-old", status: "READY" };
  const news = await inputsFor({ forkStrategy: "LAST_SNAPSHOT" });
  expect(await fork.diff("svc-old", olds, news)).toMatchObject({ replaces: ["forkStrategy"], deleteBeforeReplace: true });
  expect(await fork.diff("svc-old", olds, { ...news, sourceServiceId: "svc-other" })).toMatchObject({ deleteBeforeReplace: false });
  expect(await fork.diff("svc-old", olds, { ...news, adoptExisting: false })).toMatchObject({ deleteBeforeReplace: false });
});
