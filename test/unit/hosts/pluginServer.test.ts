// The plugin's gRPC server, called as the engine calls it (a gRPC client on loopback, the SDK's
// generated stubs) against the simulator: where the SDK's own provider server falls short, this one
// must not. A Configure's settings reach the lifecycles (variables too, as older engines send them);
// a Read with no properties at all (an import, as engines up to 3.248 at least send it) imports; a
// provider setting that breaks a rule fails CheckConfig naming it; secrets go back as secrets; an
// operation's timeout stands in for the timeout input, and is not recorded.
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import * as grpc from "@grpc/grpc-js";
import type { Empty } from "google-protobuf/google/protobuf/empty_pb";
import { Struct } from "google-protobuf/google/protobuf/struct_pb";
import * as provproto from "@pulumi/pulumi/proto/provider_pb";
import { setHostOptions } from "../../../provider/hosts/dynamic/provider";
import { bookPath, booksFolder, claimBookOfRun } from "../../../provider/hosts/plugin/claimBook";
import { captureStderr } from "../../support/helpers";
import { NO_DELAYS, Simulator } from "../../../simulator";
import { type Method, type PluginClient, startPlugin, struct } from "../../support/pluginClient";

const SECRET = { "4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270" };
const FORK_URN = "urn:pulumi:dev::p::tigercloud:index:ServiceFork::f";
const VPC_URN = "urn:pulumi:dev::p::tigercloud:index:VpcName::v";

let sim: Simulator;
let plugin: PluginClient;
const saved = { ...process.env };

beforeEach(async () => {
  // The environment sets nothing: every setting comes from Configure.
  for (const key of Object.keys(process.env)) if (key.startsWith("TIGER_")) delete process.env[key];
  sim = new Simulator({ delays: { ...NO_DELAYS } });
  await sim.start();
  setHostOptions({ client: { baseDelayMs: 1, maxDelayMs: 5 }, poll: { firstPollMs: 20, maxPollMs: 50 } });
  plugin = await startPlugin();
});
afterEach(async () => {
  plugin.close();
  setHostOptions({});
  await sim.stop();
  process.env = { ...saved };
});

/** One call to this test's plugin (or `to`), as a promise: its answer, or its gRPC error. */
const call = <Res>(method: Method, req: unknown, to: PluginClient = plugin) => to.call<Res>(method, req);

const configure = (args: Record<string, unknown> | undefined, variables: Record<string, string> = {}, to = plugin) => {
  const req = new provproto.ConfigureRequest();
  if (args) req.setArgs(struct(args));
  for (const [k, v] of Object.entries(variables)) req.getVariablesMap().set(k, v);
  return call<provproto.ConfigureResponse>("configure", req, to);
};
const account = () => ({ apiUrl: sim.url, apiKey: sim.apiKey, projectId: sim.defaults().projectId });
const forkNews = (name: string, extra: Record<string, unknown> = {}) => ({
  projectId: sim.defaults().projectId,
  sourceServiceId: sim.defaults().serviceId,
  forkStrategy: "NOW",
  name,
  readyWhen: "status",
  ...extra,
});

const readVpc = (props?: Record<string, unknown>) => {
  const req = new provproto.ReadRequest().setId(sim.defaults().vpcId).setUrn(VPC_URN);
  if (props) req.setProperties(struct(props));
  return call<provproto.ReadResponse>("read", req);
};

test("Configure's args reach the lifecycles: the API URL, the key (a secret) and the project", async () => {
  await configure({ apiUrl: sim.url, apiKey: { ...SECRET, value: sim.apiKey }, projectId: sim.defaults().projectId });
  const read = await readVpc({ projectId: sim.defaults().projectId, vpcId: sim.defaults().vpcId, name: "x" });
  expect(read.getProperties()?.toJavaScript()).toMatchObject({ name: "main-vpc" });
});

test("Configure's variables are read when the engine sends no args", async () => {
  await configure(undefined, {
    "tigercloud:config:apiUrl": sim.url,
    "tigercloud:config:publicKey": sim.keyPair.publicKey,
    "tigercloud:config:secretKey": sim.keyPair.secretKey,
  });
  const read = await readVpc({ projectId: sim.defaults().projectId, vpcId: sim.defaults().vpcId, name: "x" });
  expect(read.getProperties()?.toJavaScript()).toMatchObject({ name: "main-vpc" });
});

test("a Read that carries no properties at all imports: the object by its ID in the settings' project, and the inputs that declare it", async () => {
  await configure({ apiUrl: sim.url, apiKey: sim.apiKey, projectId: sim.defaults().projectId });
  const read = await readVpc();
  expect(read.getId()).toBe(sim.defaults().vpcId);
  expect(read.getInputs()?.toJavaScript()).toEqual({ projectId: sim.defaults().projectId, vpcId: sim.defaults().vpcId, name: "main-vpc" });
  expect(read.getProperties()?.toJavaScript()).toMatchObject({ name: "main-vpc", cidr: "10.0.0.0/16" });
});

test("CheckConfig names each setting that breaks a rule, and one that is no setting", async () => {
  const req = new provproto.CheckRequest().setNews(struct({ apiUrl: "ftp://x", verifyReferences: "maybe", region: "eu" }));
  const failures = (await call<provproto.CheckResponse>("checkConfig", req)).getFailuresList().map((f) => [f.getProperty(), f.getReason()]);
  expect(failures.sort()).toEqual([
    ["region", expect.stringContaining("region is not a setting of the tigercloud provider")],
    ["verifyReferences", 'verifyReferences must be true or false (or "true" or "false")'],
  ]);
  const url = new provproto.CheckRequest().setNews(struct({ apiUrl: "http://api.example.com", apiKey: "k-secret-1234" }));
  const [failure] = (await call<provproto.CheckResponse>("checkConfig", url)).getFailuresList();
  expect([failure?.getProperty(), failure?.getReason()]).toEqual(["apiUrl", expect.stringContaining("plain http to api.example.com")]);
  expect(failure?.getReason()).not.toContain("k-secret-1234");
});

test("a create's answer sends the password outputs and every secret input back as secrets; the operation's timeout is not recorded", async () => {
  await configure({ apiUrl: sim.url, apiKey: sim.apiKey, projectId: sim.defaults().projectId });
  const props = {
    projectId: sim.defaults().projectId,
    sourceServiceId: sim.defaults().serviceId,
    forkStrategy: "NOW",
    name: { ...SECRET, value: "secret-name" },
    readyWhen: "status",
    createTimeout: "30m",
  };
  const req = new provproto.CreateRequest().setUrn(FORK_URN).setProperties(struct(props)).setTimeout(90);
  const outs = (await call<provproto.CreateResponse>("create", req)).getProperties()?.toJavaScript() as Record<string, unknown>;
  for (const key of ["initialPassword", "connectionUri", "name"]) expect(outs[key]).toMatchObject(SECRET);
  expect(outs.status).toBe("READY");
  expect(outs.createTimeout).toBe("30m");
  expect(Object.keys(outs).filter((k) => k.startsWith("__"))).toEqual([]);
});

test("a secret output hides only the password in it: a published fork's connection string keeps its host out of nothing but its password, and the digests a failed preparation keeps hide no column's name", async () => {
  await configure(account());
  const news = forkNews("f", { readyWhen: "status" });
  const made = await call<provproto.CreateResponse>("create", new provproto.CreateRequest().setUrn(FORK_URN).setProperties(struct(news)));
  const outs = made.getProperties()?.toJavaScript() as { connectionUri: { value: string }; initialPassword: { value: string } };
  const { hostname, password } = new URL(outs.connectionUri.value);
  const lines = captureStderr();
  try {
    // A rename whose progress names the fork's host: the olds hold the URI, as a secret.
    const olds = {
      ...(outs as unknown as Record<string, unknown>),
      name: `f at ${hostname}`,
      sampledEarlier: {
        ...SECRET,
        value: { key: "0".repeat(32), values: [{ column: "full_name", digest: "1".repeat(32), distinctive: true }] },
      },
    };
    const renamed = new provproto.UpdateRequest()
      .setUrn(FORK_URN)
      .setId(made.getId())
      .setOlds(struct(olds))
      .setNews(struct({ ...news, name: `g at ${hostname} ${password}` }));
    await call<provproto.UpdateResponse>("update", renamed);
    const said = lines.join("");
    expect(said).toContain(`renaming fork ${made.getId()} to "g at ${hostname} [REDACTED]"`);
    // A column named in the digests is still said.
    const check = new provproto.CheckRequest()
      .setUrn(FORK_URN)
      .setOlds(struct(olds))
      .setNews(struct(forkNews("f", { prepare: { mask: [{ table: "customers", column: "full_name", with: "constant" }] } })));
    const failures = (await call<provproto.CheckResponse>("check", check)).getFailuresList().map((f) => f.getReason());
    expect(failures).toEqual(['prepare.mask.0.value is required with "constant" (customers.full_name, with constant)']);
  } finally {
    jest.restoreAllMocks();
  }
});

test("an operation's timeout bounds it in place of the timeout input", async () => {
  await configure({ apiUrl: sim.url, apiKey: sim.apiKey, projectId: sim.defaults().projectId });
  sim.delays = { ...sim.delays, forkConfiguringMs: 60_000 };
  const props = {
    projectId: sim.defaults().projectId,
    sourceServiceId: sim.defaults().serviceId,
    forkStrategy: "NOW",
    name: "slow",
    readyWhen: "status",
  };
  const started = Date.now();
  const req = new provproto.CreateRequest().setUrn(FORK_URN).setProperties(struct(props)).setTimeout(1);
  const err = await call<provproto.CreateResponse>("create", req).then(
    () => undefined,
    (e: grpc.ServiceError) => e,
  );
  expect(err?.details).toMatch(/Timed out after 1 s waiting for service svc-\w+ to be READY/);
  expect(Date.now() - started).toBeLessThan(5000);
  // The fork exists: the error hands the engine its ID and state to record.
  expect(err?.metadata.get("grpc-status-details-bin")).toHaveLength(1);
});

test("an update's and a delete's timeouts bound them in place of updateTimeout and deleteTimeout", async () => {
  await configure({ apiUrl: sim.url, apiKey: sim.apiKey, projectId: sim.defaults().projectId });
  const { projectId, serviceId } = sim.defaults();
  const urn = "urn:pulumi:dev::p::tigercloud:index:ServiceHA::ha";
  const olds = {
    projectId,
    serviceId,
    replicaCount: 1,
    syncReplicaCount: 0,
    waitForReady: true,
    updateTimeout: "30m",
    deleteTimeout: "10m",
  };
  sim.delays = { ...sim.delays, setHAMs: 60_000 };
  const failure = (e: grpc.ServiceError) => e.details;
  let started = Date.now();
  const update = new provproto.UpdateRequest()
    .setId(serviceId)
    .setUrn(urn)
    .setOlds(struct(olds))
    .setNews(struct({ ...olds, replicaCount: 2 }))
    .setTimeout(1);
  expect(await call<provproto.UpdateResponse>("update", update).then(() => "updated", failure)).toMatch(/Timed out after 1 s/);
  expect(Date.now() - started).toBeLessThan(5000);
  started = Date.now();
  const remove = new provproto.DeleteRequest()
    .setId(serviceId)
    .setUrn(urn)
    .setProperties(struct({ ...olds, replicaCount: 2 }))
    .setTimeout(1);
  expect(await call<Empty>("delete", remove).then(() => "deleted", failure)).toMatch(/Timed out after 1 s/);
  expect(Date.now() - started).toBeLessThan(5000);
});

test("a credential given plainly comes back from CheckConfig as a secret: the engine stores it encrypted", async () => {
  const req = new provproto.CheckRequest().setNews(struct({ apiUrl: sim.url, publicKey: "pk-1", secretKey: "sk-plain-1234" }));
  const inputs = (await call<provproto.CheckResponse>("checkConfig", req)).getInputs()?.toJavaScript();
  expect(inputs).toEqual({ apiUrl: sim.url, publicKey: "pk-1", secretKey: { ...SECRET, value: "sk-plain-1234" } });
});

test("DiffConfig: new settings are a change in place, never a replacement of the provider", async () => {
  const diff = (olds: Record<string, unknown>, news: Record<string, unknown>) =>
    call<provproto.DiffResponse>(
      "diffConfig",
      new provproto.DiffRequest().setOldInputs(struct(olds)).setOlds(struct(olds)).setNews(struct(news)),
    );
  const changed = await diff({ apiKey: "a", projectId: "p" }, { apiKey: { ...SECRET, value: "b" }, projectId: "p" });
  expect([changed.getChanges(), changed.getDiffsList(), changed.getReplacesList()]).toEqual([
    provproto.DiffResponse.DiffChanges.DIFF_SOME,
    ["apiKey"],
    [],
  ]);
  const same = await diff({ apiKey: "a" }, { apiKey: { ...SECRET, value: "a" } });
  expect(same.getChanges()).toBe(provproto.DiffResponse.DiffChanges.DIFF_NONE);
});

test("preview's create and update make no request: a create's outputs are its inputs, an update keeps the object's", async () => {
  await configure(account());
  sim.clearLog();
  const create = new provproto.CreateRequest()
    .setUrn(FORK_URN)
    .setProperties(struct(forkNews("planned")))
    .setPreview(true);
  const planned = await call<provproto.CreateResponse>("create", create);
  expect([planned.getId(), planned.getProperties()?.toJavaScript()]).toEqual(["", forkNews("planned")]);
  const olds = { ...forkNews("before"), serviceId: "svc-1", host: "h" };
  const update = new provproto.UpdateRequest()
    .setUrn(FORK_URN)
    .setId("svc-1")
    .setOlds(struct(olds))
    .setNews(struct(forkNews("after")))
    .setPreview(true);
  expect((await call<provproto.UpdateResponse>("update", update)).getProperties()?.toJavaScript()).toMatchObject({
    serviceId: "svc-1",
    host: "h",
    name: "after",
  });
  expect(sim.requests()).toEqual([]);
});

test("ignoreChanges: an ignored input that refresh found changed is no change", async () => {
  await configure(account());
  const olds = { projectId: sim.defaults().projectId, vpcId: sim.defaults().vpcId, name: "renamed-in-console" };
  const news = { ...olds, name: "declared" };
  const diff = (ignored: string[]) =>
    call<provproto.DiffResponse>(
      "diff",
      new provproto.DiffRequest()
        .setUrn(VPC_URN)
        .setId(olds.vpcId)
        .setOlds(struct(olds))
        .setNews(struct(news))
        .setIgnorechangesList(ignored),
    );
  expect((await diff([])).getChanges()).toBe(provproto.DiffResponse.DiffChanges.DIFF_SOME);
  expect((await diff(["name"])).getChanges()).toBe(provproto.DiffResponse.DiffChanges.DIFF_NONE);
});

test("a refresh of an object the API confirms gone answers no ID: the engine drops it", async () => {
  await configure(account());
  const req = new provproto.ReadRequest()
    .setId("999")
    .setUrn(VPC_URN)
    .setProperties(struct({ projectId: sim.defaults().projectId, vpcId: "999", name: "x" }));
  expect((await call<provproto.ReadResponse>("read", req)).getId()).toBe("");
});

test("a custom timeout over 24h is taken as 24h, the most a timeout input may say", async () => {
  await configure(account());
  const req = new provproto.CreateRequest()
    .setUrn(FORK_URN)
    .setProperties(struct(forkNews("patient")))
    .setTimeout(48 * 3600);
  expect((await call<provproto.CreateResponse>("create", req)).getProperties()?.toJavaScript()).toMatchObject({ status: "READY" });
});

test("a fork renamed and moved to another provider of the run is adopted there, and the old resource's delete leaves it", async () => {
  // Two provider instances of one run: two plugin servers given the same engine.
  const engine = `127.0.0.1:${1 + Math.floor(Math.random() * 1000)}`;
  const [clientA, clientB] = await Promise.all([startPlugin(engine), startPlugin(engine)]);
  try {
    await configure(account(), {}, clientA);
    await configure(account(), {}, clientB);
    const news = forkNews("moving", { onDestroy: "delete" });
    const oldUrn = "urn:pulumi:dev::p::tigercloud:index:ServiceFork::old";
    const made = await call<provproto.CreateResponse>(
      "create",
      new provproto.CreateRequest().setUrn(oldUrn).setProperties(struct(news)),
      clientA,
    );
    // The engine checks, then creates, the new resource under provider B: it takes over the fork.
    const newUrn = "urn:pulumi:dev::p::tigercloud:index:ServiceFork::new";
    const checked = await call<provproto.CheckResponse>(
      "check",
      new provproto.CheckRequest().setUrn(newUrn).setOlds(struct({})).setNews(struct(news)),
      clientB,
    );
    await call("create", new provproto.CreateRequest().setUrn(newUrn).setProperties(checked.getInputs() as Struct), clientB);
    expect(sim.requests("forkService")).toHaveLength(1);
    // Then deletes the old one under provider A.
    await call(
      "delete",
      new provproto.DeleteRequest()
        .setUrn(oldUrn)
        .setId(made.getId())
        .setProperties(made.getProperties() as Struct),
      clientA,
    );
    expect(sim.service(sim.defaults().projectId, made.getId())?.status).toBe("READY");
    expect(sim.requests("deleteService")).toEqual([]);
  } finally {
    for (const c of [clientA, clientB]) c.close();
    const run = claimBookOfRun(engine);
    if ("book" in run) fs.rmSync(run.book.file, { force: true });
  }
});

describe("the run's book of declarations, in a temporary directory other users can write to", () => {
  let tmp: string;
  const engine = "127.0.0.1:7";
  beforeEach(() => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), "tigercloud-books-"));
    process.env.TMPDIR = tmp;
  });
  afterEach(() => fs.rmSync(tmp, { recursive: true, force: true }));

  test("a regular file where the folder goes: the plugin serves, keeps the run's declarations in its process, and warns once", async () => {
    fs.writeFileSync(booksFolder(tmp), "not a folder");
    expect(claimBookOfRun(engine, booksFolder(tmp))).toEqual({ problem: `${booksFolder(tmp)} is not a folder` });
    const lines = captureStderr();
    const served = await startPlugin(engine);
    try {
      await configure(account(), {}, served);
      for (const name of ["a", "b"]) {
        const req = new provproto.CheckRequest()
          .setUrn(FORK_URN)
          .setOlds(struct({}))
          .setNews(struct(forkNews(name)));
        expect((await call<provproto.CheckResponse>("check", req, served)).getFailuresList()).toEqual([]);
      }
    } finally {
      served.close();
      jest.restoreAllMocks();
    }
    const warned = lines.filter((l) => l.includes("the declarations of this run are kept in each provider process"));
    expect(warned).toHaveLength(1);
    expect(warned[0]).toContain(`${booksFolder(tmp)} is not a folder`);
  });

  test("a symbolic link where the folder goes: refused, and nothing in the folder it points to is removed", () => {
    const elsewhere = fs.mkdtempSync(path.join(tmp, "victim-"));
    const files = ["1-2-0123456789abcdef.jsonl", "keep.txt"].map((f) => path.join(elsewhere, f));
    const old = new Date(Date.now() - 30 * 24 * 3600 * 1000);
    for (const f of files) {
      fs.writeFileSync(f, "precious");
      fs.utimesSync(f, old, old);
    }
    fs.symlinkSync(elsewhere, booksFolder(tmp));
    expect(claimBookOfRun(engine, booksFolder(tmp))).toEqual({
      problem: `${booksFolder(tmp)} is a symbolic link, not a folder of this user's`,
    });
    for (const f of files) expect(fs.readFileSync(f, "utf8")).toBe("precious");
  });

  test("a folder another user made, open to all: a declaration planted in the run's book cannot spare a fork its delete", async () => {
    const folder = booksFolder(tmp);
    fs.mkdirSync(folder);
    fs.chmodSync(folder, 0o777);
    if (process.getuid?.() === 0) fs.chownSync(folder, 4242, 4242);
    expect(claimBookOfRun(engine, folder)).toMatchObject({
      problem: expect.stringMatching(/belongs to another user|may be entered by other users/),
    });
    const served = await startPlugin(engine);
    try {
      await configure(account(), {}, served);
      const made = await call<provproto.CreateResponse>(
        "create",
        new provproto.CreateRequest().setUrn(FORK_URN).setProperties(struct(forkNews("planted", { onDestroy: "delete" }))),
        served,
      );
      // Another user writes, in the run's book, that a resource of the run holds the fork.
      const line = {
        key: `ServiceFork ${sim.defaults().projectId}/${made.getId()}`,
        urn: "urn:pulumi:dev::p::tigercloud:index:ServiceFork::x",
        name: "x",
        value: true,
      };
      fs.writeFileSync(bookPath(engine, folder), `${JSON.stringify(line)}\n`);
      await call(
        "delete",
        new provproto.DeleteRequest()
          .setUrn(FORK_URN)
          .setId(made.getId())
          .setProperties(made.getProperties() as Struct),
        served,
      );
    } finally {
      served.close();
    }
    expect(sim.requests("deleteService")).toHaveLength(1);
  });
});

test("the run that imports changes nothing: a diff against what the program declares otherwise is no change, with a warning of what the next up will do", async () => {
  await configure(account());
  const { projectId, vpcId } = sim.defaults();
  const imported = await call<provproto.ReadResponse>("read", new provproto.ReadRequest().setId(vpcId).setUrn(VPC_URN));
  const state = imported.getProperties()?.toJavaScript() as Record<string, unknown>;
  expect(state).toMatchObject({ name: "main-vpc" });
  const diff = () =>
    call<provproto.DiffResponse>(
      "diff",
      new provproto.DiffRequest()
        .setUrn(VPC_URN)
        .setId(vpcId)
        .setOlds(struct(state))
        .setNews(struct({ projectId, vpcId, name: "renamed\u001b[2J" })),
    );
  const lines = captureStderr();
  const during = await diff();
  jest.restoreAllMocks();
  expect(during.getChanges()).toBe(provproto.DiffResponse.DiffChanges.DIFF_NONE);
  const said = lines.join("");
  expect(said).toContain(
    'VpcName "v" was imported as it is, and this run changes nothing in Tiger Cloud; the program declares otherwise: name "renamed\\x1b[2J" (it is "main-vpc").',
  );
  expect(said).toContain("The next `pulumi up` will make these changes");
  // The next run (a new configuration) plans the rename.
  await configure(account());
  expect((await diff()).getChanges()).toBe(provproto.DiffResponse.DiffChanges.DIFF_SOME);
  expect(sim.requests().filter((r) => r.method !== "GET")).toEqual([]);
});

test("customTimeouts bound a VpcName's requests too: a rename that never answers ends within the create's limit", async () => {
  await configure(account());
  sim.injectFault("renameVpc", { kind: "hang" });
  const { projectId, vpcId } = sim.defaults();
  const started = Date.now();
  const req = new provproto.CreateRequest()
    .setUrn(VPC_URN)
    .setProperties(struct({ projectId, vpcId, name: "slow" }))
    .setTimeout(3);
  const err = (await call("create", req).catch((e: grpc.ServiceError) => e)) as grpc.ServiceError;
  expect(err.details).toMatch(/Request timed out after \d+ ms: POST .*\/rename/);
  expect((Date.now() - started) / 1000).toBeLessThan(3.5);
});
