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
import { DynamicPartialFailure, setHostOptions, startRun } from "../../../provider/hosts/dynamic/provider";
import { providers } from "../../../provider/hosts/dynamic/runtime";
import { NO_DELAYS, Simulator } from "../../../simulator";
import { captureStderr, configureProviders, P } from "../../support/helpers";
import { type Method, startPlugin, struct } from "../../support/pluginClient";

type Kind = "ServiceFork" | "ServiceHA" | "VpcName";
type Bag = Record<string, unknown>;

/**
 * What a call says beyond its properties, each in its host's own terms: the properties the program
 * marked secret, and the operation's time limit (a timeout input for the dynamic provider, the
 * engine's customTimeouts for the plugin).
 */
interface CallOptions {
  secret?: string[];
  timeoutSeconds?: number;
}

/** A host as the engine meets it, one provider instance; `outs` are the state the engine records. */
interface Host {
  check(kind: Kind, name: string, olds: Bag, news: Bag, options?: CallOptions): Promise<{ inputs: Bag; failures: string[] }>;
  diff(kind: Kind, name: string, id: string, olds: Bag, news: Bag): Promise<{ changes: boolean; replaces: string[] }>;
  /** A create; a failure after the object exists answers `partial` (what the engine records). */
  create(
    kind: Kind,
    name: string,
    news: Bag,
    options?: CallOptions,
  ): Promise<{ id: string; outs: Bag } | { partial: { id: string; outs: Bag }; message: string }>;
  update(kind: Kind, name: string, id: string, olds: Bag, news: Bag): Promise<Bag>;
  delete(kind: Kind, name: string, id: string, props: Bag, options?: CallOptions): Promise<void>;
  close(): Promise<void>;
}

/** The dynamic provider: stack config, inputs with the serialized provider and who declares them. */
async function dynamicHost(sim: Simulator): Promise<Host> {
  startRun();
  await configureProviders({
    "tigercloud:apiUrl": sim.url,
    "tigercloud:apiKey": sim.apiKey,
    "tigercloud:projectId": sim.defaults().projectId,
  });
  const urnOf = (kind: Kind, name: string) => `urn:pulumi:dev::p::pulumi-nodejs:dynamic/tigercloud:${kind}::${name}`;
  // The resource classes hand over the names of the secret inputs; a time limit is a timeout input.
  const declared = (kind: Kind, name: string, props: Bag, options: CallOptions = {}) => ({
    ...props,
    __provider: P,
    __resourceName: name,
    __resourceUrn: urnOf(kind, name),
    ...(options.secret ? { __secretInputs: options.secret } : {}),
  });
  const timed = (key: string, props: Bag, options: CallOptions = {}) =>
    options.timeoutSeconds === undefined ? props : { ...props, [key]: `${options.timeoutSeconds}s` };
  return {
    async check(kind, name, olds, news, options) {
      const r = await providers[kind].check(olds, declared(kind, name, news, options));
      return { inputs: r.inputs as Bag, failures: (r.failures ?? []).map((f) => `${f.property}: ${f.reason}`) };
    },
    async diff(kind, name, id, olds, news) {
      const r = await providers[kind].diff(id, olds, declared(kind, name, news));
      return { changes: Boolean(r.changes), replaces: r.replaces ?? [] };
    },
    async create(kind, name, news, options) {
      try {
        const r = await providers[kind].create(timed("createTimeout", declared(kind, name, news, options), options));
        return { id: r.id, outs: r.outs as Bag };
      } catch (e) {
        if (!(e instanceof DynamicPartialFailure)) throw e;
        return { partial: { id: e.id, outs: e.properties }, message: e.message };
      }
    },
    async update(kind, name, id, olds, news) {
      return (await providers[kind].update(id, olds, declared(kind, name, news))).outs as Bag;
    },
    delete: (kind, _name, id, props, options) => providers[kind].delete(id, timed("deleteTimeout", props, options)),
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
  // Secret properties travel wrapped, as the engine sends them.
  const wrapped = (props: Bag, options: CallOptions = {}) =>
    struct(
      Object.fromEntries(
        Object.entries(props).map(([k, v]) => [
          k,
          options.secret?.includes(k) ? { "4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270", value: v } : v,
        ]),
      ),
    );
  await call(
    "configure",
    new provproto.ConfigureRequest().setArgs(struct({ apiUrl: sim.url, apiKey: sim.apiKey, projectId: sim.defaults().projectId })),
  );
  return {
    async check(kind, name, olds, news, options) {
      const r = await call<provproto.CheckResponse>(
        "check",
        new provproto.CheckRequest().setUrn(urnOf(kind, name)).setOlds(struct(olds)).setNews(wrapped(news, options)),
      );
      return { inputs: plain(r.getInputs()), failures: r.getFailuresList().map((f) => `${f.getProperty()}: ${f.getReason()}`) };
    },
    async diff(kind, name, id, olds, news) {
      const req = new provproto.DiffRequest().setUrn(urnOf(kind, name)).setId(id).setOlds(struct(olds)).setNews(struct(news));
      const r = await call<provproto.DiffResponse>("diff", req);
      return { changes: r.getChanges() === provproto.DiffResponse.DiffChanges.DIFF_SOME, replaces: r.getReplacesList() };
    },
    async create(kind, name, news, options = {}) {
      try {
        const r = await call<provproto.CreateResponse>(
          "create",
          new provproto.CreateRequest()
            .setUrn(urnOf(kind, name))
            .setProperties(wrapped(news, options))
            .setTimeout(options.timeoutSeconds ?? 0),
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
    async delete(kind, name, id, props, options = {}) {
      const req = new provproto.DeleteRequest().setUrn(urnOf(kind, name)).setId(id).setProperties(wrapped(props, options));
      await call("delete", req.setTimeout(options.timeoutSeconds ?? 0));
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
  test("preview verifies: a project the API does not know fails check, naming the project and where it came from", async () => {
    const { failures } = await host.check("ServiceFork", "f", {}, { ...forkInputs("x"), projectId: "proj-nowhere" });
    expect(failures).toEqual([
      expect.stringMatching(
        /^sourceServiceId: sourceServiceId could not be verified: project proj-nowhere does not exist, or the credentials from .* cannot see it \(the API answered 404 to service svc-\w+ and to the project's service list\)\. The project comes from the resource's projectId/,
      ),
    ]);
  });

  test("preview verifies: an API URL that answers an HTML page with 200 (a sign-in proxy) fails check, naming the URL", async () => {
    sim.injectFault("getService", { kind: "status", status: 200, body: "<html><body>Sign in</body></html>" }, 5);
    const { failures } = await host.check("ServiceFork", "f", {}, forkInputs("x"));
    expect(failures).toEqual([
      expect.stringMatching(
        /^sourceServiceId: sourceServiceId could not be verified: .*not JSON.*the API URL \(tigercloud:apiUrl \/ TIGER_API_URL\)/,
      ),
    ]);
  });

  test("a name marked secret is never shown: not by the takeover warning at check, nor by the adoption's progress", async () => {
    const name = "s3cret-pr-name";
    sim.outOfBand.addFork(sim.defaults().projectId, sim.defaults().serviceId, { name });
    const lines = captureStderr();
    const { inputs, failures } = await host.check("ServiceFork", "f", {}, forkInputs(name), { secret: ["name"] });
    expect(failures).toEqual([]);
    const created = await host.create("ServiceFork", "f", inputs, { secret: ["name"] });
    expect("id" in created).toBe(true);
    jest.restoreAllMocks();
    const said = lines.join("");
    expect(said).toContain("will take over running fork");
    expect(said).toContain("adopting fork");
    expect(said).not.toContain(name);
  });

  test("a forkService that never answers ends within the create's time limit, one request, leaving time to look for the fork", async () => {
    sim.injectFault("forkService", { kind: "hang" });
    const { inputs } = await host.check("ServiceFork", "f", {}, forkInputs("hung"));
    const started = Date.now();
    const created = await host.create("ServiceFork", "f", inputs, { timeoutSeconds: 4 }).catch((e: Error) => e);
    const seconds = (Date.now() - started) / 1000;
    expect(created).toBeInstanceOf(Error);
    expect((created as Error).message).toMatch(/forkService of service svc-\w+ failed and a fork may have been created/);
    expect(seconds).toBeLessThan(4.5);
    expect(sim.requests("forkService")).toHaveLength(1);
    // The look for the fork its lost answer may have made, after the request and before the limit.
    const fork = sim.requests("forkService")[0]?.at ?? 0;
    expect(sim.requests("listServices").filter((r) => r.at > fork)).toHaveLength(1);
  });

  test("a DELETE whose answer never comes: the fork seen DELETING is a finished destroy, within the delete's time limit", async () => {
    const { id, outs } = await made("ServiceFork", "f", forkInputs("to-delete", { onDestroy: "delete" }));
    sim.injectFault("deleteService", { kind: "afterApplying", status: "hang" });
    const started = Date.now();
    await host.delete("ServiceFork", "f", id, outs, { timeoutSeconds: 4 });
    expect((Date.now() - started) / 1000).toBeLessThan(4.5);
    expect(sim.requests("deleteService")).toHaveLength(1);
    expect(["DELETING", "DELETED"]).toContain(sim.service(sim.defaults().projectId, id)?.status);
  });

  test("a stopped fork of the same name and source: the new fork is made, and a warning says nothing tells which is this resource's", async () => {
    const stopped = sim.outOfBand.addFork(sim.defaults().projectId, sim.defaults().serviceId, { name: "was-pausing" });
    sim.outOfBand.setStatus(sim.defaults().projectId, stopped, "PAUSED");
    const lines = captureStderr();
    const { id } = await made("ServiceFork", "f", forkInputs("was-pausing"));
    jest.restoreAllMocks();
    expect(id).not.toBe(stopped);
    expect(sim.requests("forkService")).toHaveLength(1);
    expect(lines.join("")).toContain(
      `a stopped fork named "was-pausing" of service ${sim.defaults().serviceId} exists: ${stopped} (PAUSED`,
    );
    expect(lines.join("")).toContain("nothing tells which");
  });
});
