// One table of behaviours, run against both hosts of the same lifecycles: the dynamic provider (its
// provider objects, called as the engine's dynamic-provider process calls them) and the provider
// plugin (its gRPC server, called as the engine calls a plugin). Each behaviour drives a host as
// the engine would for one `up`, against the simulator: fork, adopt, pause, HA handover on a
// rename, a change in place, preview's verification, and a create that fails after the fork
// exists (recorded, then finished without a second fork).
import * as grpc from "@grpc/grpc-js";
import { Struct } from "google-protobuf/google/protobuf/struct_pb";
import * as provproto from "@pulumi/pulumi/proto/provider_pb";
import * as statusproto from "@pulumi/pulumi/proto/status_pb";
import { setHostOptions, startRun } from "../provider/engine/host";
import { PartialFailureError } from "../provider/errors";
import { providers } from "../provider/runtime";
import { NO_DELAYS, Simulator } from "../simulator";
import { configureProviders } from "./helpers";
import { type Method, startPlugin, struct } from "./pluginClient";

type Kind = "ServiceFork" | "ServiceHA" | "VpcName";
type Bag = Record<string, unknown>;

/** A host as the engine meets it, one provider instance; `outs` are the state the engine records. */
interface Host {
  check(kind: Kind, name: string, olds: Bag, news: Bag): Promise<{ inputs: Bag; failures: string[] }>;
  diff(kind: Kind, name: string, id: string, olds: Bag, news: Bag): Promise<{ changes: boolean; replaces: string[] }>;
  /** A create; a failure after the object exists answers `partial` (what the engine records). */
  create(kind: Kind, name: string, news: Bag): Promise<{ id: string; outs: Bag } | { partial: { id: string; outs: Bag }; message: string }>;
  update(kind: Kind, name: string, id: string, olds: Bag, news: Bag): Promise<Bag>;
  delete(kind: Kind, name: string, id: string, props: Bag): Promise<void>;
  close(): Promise<void>;
}

const P = "serialized-provider-text";

/** The dynamic provider: stack config, inputs with the serialized provider and who declares them. */
async function dynamicHost(sim: Simulator): Promise<Host> {
  startRun();
  await configureProviders({
    "tigercloud:apiUrl": sim.url,
    "tigercloud:apiKey": sim.apiKey,
    "tigercloud:projectId": sim.defaults().projectId,
  });
  const urnOf = (kind: Kind, name: string) => `urn:pulumi:dev::p::pulumi-nodejs:dynamic/tigercloud:${kind}::${name}`;
  const declared = (kind: Kind, name: string, props: Bag) => ({
    ...props,
    __provider: P,
    __resourceName: name,
    __resourceUrn: urnOf(kind, name),
  });
  return {
    async check(kind, name, olds, news) {
      const r = await providers[kind].check(olds, declared(kind, name, news));
      return { inputs: r.inputs as Bag, failures: (r.failures ?? []).map((f) => `${f.property}: ${f.reason}`) };
    },
    async diff(kind, name, id, olds, news) {
      const r = await providers[kind].diff(id, olds, declared(kind, name, news));
      return { changes: Boolean(r.changes), replaces: r.replaces ?? [] };
    },
    async create(kind, name, news) {
      try {
        const r = await providers[kind].create(declared(kind, name, news));
        return { id: r.id, outs: r.outs as Bag };
      } catch (e) {
        if (!(e instanceof PartialFailureError)) throw e;
        return { partial: { id: e.id, outs: e.properties }, message: e.message };
      }
    },
    async update(kind, name, id, olds, news) {
      return (await providers[kind].update(id, olds, declared(kind, name, news))).outs as Bag;
    },
    delete: (kind, _name, id, props) => providers[kind].delete(id, props),
    close: async () => undefined,
  };
}

/** The plugin: its gRPC server on loopback, configured as the engine configures a provider. */
async function pluginHost(sim: Simulator): Promise<Host> {
  const plugin = await startPlugin();
  const call = <Res>(method: Method, req: unknown) => plugin.call<Res>(method, req);
  /** Secrets as plain values: what the engine would show with --show-secrets. */
  const plain = (s: Struct | undefined): Bag =>
    JSON.parse(JSON.stringify(s?.toJavaScript() ?? {}), (_k, v: unknown) =>
      typeof v === "object" && v !== null && "4dabf18193072939515e22adb298388d" in v ? (v as unknown as { value: unknown }).value : v,
    ) as Bag;
  const urnOf = (kind: Kind, name: string) => `urn:pulumi:dev::p::tigercloud:index:${kind}::${name}`;
  await call(
    "configure",
    new provproto.ConfigureRequest().setArgs(struct({ apiUrl: sim.url, apiKey: sim.apiKey, projectId: sim.defaults().projectId })),
  );
  return {
    async check(kind, name, olds, news) {
      const r = await call<provproto.CheckResponse>(
        "check",
        new provproto.CheckRequest().setUrn(urnOf(kind, name)).setOlds(struct(olds)).setNews(struct(news)),
      );
      return { inputs: plain(r.getInputs()), failures: r.getFailuresList().map((f) => `${f.getProperty()}: ${f.getReason()}`) };
    },
    async diff(kind, name, id, olds, news) {
      const req = new provproto.DiffRequest().setUrn(urnOf(kind, name)).setId(id).setOlds(struct(olds)).setNews(struct(news));
      const r = await call<provproto.DiffResponse>("diff", req);
      return { changes: r.getChanges() === provproto.DiffResponse.DiffChanges.DIFF_SOME, replaces: r.getReplacesList() };
    },
    async create(kind, name, news) {
      try {
        const r = await call<provproto.CreateResponse>(
          "create",
          new provproto.CreateRequest().setUrn(urnOf(kind, name)).setProperties(struct(news)),
        );
        return { id: r.getId(), outs: plain(r.getProperties()) };
      } catch (e) {
        const [bin] = (e as grpc.ServiceError).metadata?.get("grpc-status-details-bin") ?? [];
        if (!bin) throw e;
        const [detail] = statusproto.Status.deserializeBinary(bin as Uint8Array).getDetailsList();
        const failed = provproto.ErrorResourceInitFailed.deserializeBinary(detail?.getValue_asU8() as Uint8Array);
        return { partial: { id: failed.getId(), outs: plain(failed.getProperties()) }, message: (e as grpc.ServiceError).details };
      }
    },
    async update(kind, name, id, olds, news) {
      const req = new provproto.UpdateRequest().setUrn(urnOf(kind, name)).setId(id).setOlds(struct(olds)).setNews(struct(news));
      return plain((await call<provproto.UpdateResponse>("update", req)).getProperties());
    },
    async delete(kind, name, id, props) {
      await call("delete", new provproto.DeleteRequest().setUrn(urnOf(kind, name)).setId(id).setProperties(struct(props)));
    },
    close: async () => plugin.close(),
  };
}

let sim: Simulator;
let host: Host;
const saved = { ...process.env };

/** check, then create, as `up` does for a new resource; the create must succeed. */
async function made(kind: Kind, name: string, news: Bag): Promise<{ id: string; outs: Bag; inputs: Bag }> {
  const { inputs, failures } = await host.check(kind, name, {}, news);
  expect(failures).toEqual([]);
  const created = await host.create(kind, name, inputs);
  if ("partial" in created) throw new Error(created.message);
  return { ...created, inputs };
}

const forkInputs = (name: string, extra: Bag = {}) => ({
  sourceServiceId: sim.defaults().serviceId,
  forkStrategy: "NOW",
  name,
  readyWhen: "status",
  ...extra,
});
const forksNamed = (name: string) => sim.services(sim.defaults().projectId).filter((s) => s.name === name);

describe.each([
  ["the dynamic provider", dynamicHost],
  ["the provider plugin", pluginHost],
])("%s", (_label, makeHost) => {
  beforeEach(async () => {
    for (const key of Object.keys(process.env)) if (key.startsWith("TIGER_")) delete process.env[key];
    sim = new Simulator({ delays: { ...NO_DELAYS } });
    await sim.start();
    setHostOptions({ client: { baseDelayMs: 1, maxDelayMs: 5 }, poll: { firstPollMs: 20, maxPollMs: 50 } });
    host = await makeHost(sim);
  });
  afterEach(async () => {
    await host.close();
    setHostOptions({});
    await sim.stop();
    process.env = { ...saved };
  });

  test("fork: one forkService, a READY fork, its connection", async () => {
    const { id, outs } = await made("ServiceFork", "f", forkInputs("fork-1"));
    expect(sim.requests("forkService")).toHaveLength(1);
    expect(outs).toMatchObject({ serviceId: id, status: "READY", connectionUri: expect.stringMatching(/^postgresql:\/\/tsdbadmin:.+@/) });
  });

  test("adopt: a running fork of the declared name is taken over, not forked again", async () => {
    const existing = sim.outOfBand.addFork(sim.defaults().projectId, sim.defaults().serviceId, { name: "left-behind" });
    const { id, outs } = await made("ServiceFork", "f", forkInputs("left-behind"));
    expect(id).toBe(existing);
    expect(sim.requests("forkService")).toEqual([]);
    expect(outs.adopted).toMatchObject({ reason: expect.any(String) });
  });

  test("pause: paused: true is a change in place, a stop, and the fork PAUSED", async () => {
    const { id, outs, inputs } = await made("ServiceFork", "f", forkInputs("to-pause"));
    const news = { ...inputs, paused: true };
    expect(await host.diff("ServiceFork", "f", id, outs, news)).toEqual({ changes: true, replaces: [] });
    const after = await host.update("ServiceFork", "f", id, outs, news);
    expect(sim.requests("stop")).toHaveLength(1);
    expect(after).toMatchObject({ paused: true, status: "PAUSED" });
  });

  test("a change in place: a new name is a rename of the same fork", async () => {
    const { id, outs, inputs } = await made("ServiceFork", "f", forkInputs("before"));
    const news = { ...inputs, name: "after" };
    expect(await host.diff("ServiceFork", "f", id, outs, news)).toEqual({ changes: true, replaces: [] });
    await host.update("ServiceFork", "f", id, outs, news);
    expect(sim.requests("renameService")).toHaveLength(1);
    expect(forksNamed("after").map((s) => s.service_id)).toEqual([id]);
  });

  test("HA handover on a rename: the new resource's HA is made, and the old one's delete leaves it", async () => {
    const { serviceId } = sim.defaults();
    const old = await made("ServiceHA", "ha-old", { serviceId, replicaCount: 2 });
    await made("ServiceHA", "ha-new", { serviceId, replicaCount: 2 });
    await host.delete("ServiceHA", "ha-old", serviceId, old.outs);
    expect(sim.service(sim.defaults().projectId, serviceId)?.ha_replicas?.replica_count).toBe(2);
    expect(sim.requests("setHA").map((r) => (r.body as { replica_count?: number }).replica_count)).not.toContain(0);
  });

  test("preview verifies: a source that does not exist fails check, named, before any change", async () => {
    const { failures } = await host.check("ServiceFork", "f", {}, { ...forkInputs("x"), sourceServiceId: "svc-missing" });
    expect(failures).toEqual([expect.stringMatching(/^sourceServiceId: .*svc-missing/)]);
    expect(sim.requests().filter((r) => r.method !== "GET")).toEqual([]);
  });

  test("crash safety: a fork not READY in time is handed to the engine with its ID, and the next up finishes it without a second fork", async () => {
    sim.delays = { ...sim.delays, forkConfiguringMs: 1500 };
    const { inputs } = await host.check("ServiceFork", "f", {}, forkInputs("slow", { createTimeout: "1s" }));
    const created = await host.create("ServiceFork", "f", inputs);
    if (!("partial" in created)) throw new Error("the create did not fail");
    expect(created.message).toMatch(/Timed out after 1 s waiting for service svc-\w+ to be READY/);
    const { id, outs } = created.partial;
    expect(forksNamed("slow").map((s) => s.service_id)).toEqual([id]);
    const news = { ...inputs, createTimeout: "30s" };
    const finished = await host.update("ServiceFork", "f", id, outs, news);
    expect(finished).toMatchObject({ serviceId: id, status: "READY" });
    expect(sim.requests("forkService")).toHaveLength(1);
  });
});
