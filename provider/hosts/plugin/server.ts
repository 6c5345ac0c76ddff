// The provider plugin's gRPC server: the engine's ResourceProvider calls, answered by the
// lifecycles of the registry (resources/registry.ts), the same the dynamic provider runs, with a
// context made from this provider instance's settings and what the request says of the call.
//
// A server of our own on the SDK's generated stubs (@pulumi/pulumi/proto), not the SDK's
// `provider.main`: that server (sdk/nodejs/provider/server.ts, 3.248 to 3.270 at least) answers
// Configure without handing the provider its settings, fails a Read that carries no properties
// (every `pulumi import`) before the provider runs, ignores the operation timeouts the engine
// sends (`customTimeouts`), and passes secrets through as their wire wrappers. Each of those is
// handled below, where the request is read.
import * as grpc from "@grpc/grpc-js";
import { Any } from "google-protobuf/google/protobuf/any_pb";
import { Empty } from "google-protobuf/google/protobuf/empty_pb";
import type { Struct } from "google-protobuf/google/protobuf/struct_pb";
import * as plugproto from "@pulumi/pulumi/proto/plugin_pb";
import * as provrpc from "@pulumi/pulumi/proto/provider_grpc_pb";
import * as provproto from "@pulumi/pulumi/proto/provider_pb";
import * as statusproto from "@pulumi/pulumi/proto/status_pb";
import { type CallContext, type HostOptions, type HostSettings, makeContext } from "../../context/context";
import { escapedError } from "../../context/escaping";
import type { RunSlot } from "../../context/memory";
import { PartialFailureError } from "../../errors";
import type { Lifecycle } from "../../resources/define";
import { CLAIM_BOOK } from "../../rules/claims";
import { SETTING_SOURCES } from "../../settings";
import { printable } from "../../text";
import { PACKAGE_VERSION } from "../../version";
import { engineReporter } from "../engineLog";
import { claimBookOfRun } from "./claimBook";
import { lookupOf, readSettings } from "./settings";
import { type Received, receive, send, settingsOfConfigure } from "./wire";
import schema from "./schema.json";

const TOKEN = /^tigercloud:index:(\w+)$/;
/** The longest customTimeouts value taken: a longer wait is no wait any API operation needs. */
const MAX_TIMEOUT_S = 24 * 3600;
/** The provider settings that are credentials (settings.ts marks them). */
const SECRET_SETTINGS = Object.entries(SETTING_SOURCES)
  .filter(([, s]) => s.secret)
  .map(([name]) => name);

/** The type token of a resource URN: urn:pulumi:stack::project::[parent$]type::name. */
function typeOf(urn: string): string {
  const qualified = urn.split("::")[2] ?? "";
  return qualified.split("$").pop() ?? "";
}

/** Who declares the resource of a URN: the URN, and the name it ends with. */
const declarantOf = (urn: string) => ({ urn, name: urn.split("::").slice(3).join("::") || urn });

/** The gRPC service of one plugin process (one provider instance) serving `resources`. */
export function providerService(
  resources: readonly Lifecycle[],
  engineAddress: string | undefined,
  options: HostOptions = {},
): grpc.UntypedServiceImplementation {
  // Where no private book can be had, the declarations stay in this process: said once, as a warning.
  let bookProblem: string | undefined;
  /** What a run learns starts empty, but for its declarations: the run's book, which all its plugin processes share. */
  const freshRun = () => {
    const run = engineAddress === undefined ? undefined : claimBookOfRun(engineAddress);
    if (run && "problem" in run) bookProblem = run.problem;
    return new Map<RunSlot<unknown>, unknown>(run && "book" in run ? [[CLAIM_BOOK, run.book]] : []);
  };
  // Progress as each resource's status, warnings as warnings: the engine hides a plugin's stderr.
  const reporter = engineReporter(engineAddress, { grpc, progressToEngine: true });
  // Unconfigured, a provider reads only the environment (as the dynamic provider before configure).
  let host: HostSettings = { config: () => undefined, configWord: "provider setting", memory: freshRun(), options, reporter };

  /**
   * A call's context: this instance's settings, the resource of the URN, the values the call's
   * properties hold as secrets (never shown), and the operation's deadline from `customTimeouts`.
   */
  const context = async (urn: string, call: { secrets?: Received[]; timeout?: { seconds: number; op: string } } = {}) => {
    const seconds = Math.min(MAX_TIMEOUT_S, call.timeout?.seconds ?? 0);
    const passwordOnly = new Set(lifecycleOf(urn)?.spec.passwordOnlySecrets ?? []);
    const ctx = makeContext(host, {
      resource: declarantOf(urn),
      // Of a connection string only its password: its pieces would hide the host's name (and "timescale") from every message.
      secrets: (call.secrets ?? []).flatMap((r) =>
        [...r.secretValues].flatMap(([key, values]) => (passwordOnly.has(key) ? values.flatMap(passwordsIn) : values)),
      ),
      deadline: seconds > 0 ? { at: Date.now() + seconds * 1000, setBy: `customTimeouts.${call.timeout?.op}` } : undefined,
    });
    await warnOfBook(ctx);
    return ctx;
  };
  const warnOfBook = async (ctx: CallContext) => {
    if (bookProblem === undefined) return;
    const problem = bookProblem;
    bookProblem = undefined;
    await ctx.warning(
      `the declarations of this run are kept in each provider process, not shared between them: ${problem}. ` +
        `A fork renamed and moved to another provider in one run may then be stopped by the old resource's delete. ` +
        `Remove or fix that path (it must be a folder of this user's alone, mode 700), or set TMPDIR to a private folder.`,
    );
  };

  const lifecycleOf = (urn: string): Lifecycle | undefined => {
    const kind = TOKEN.exec(typeOf(urn))?.[1];
    return resources.find((r) => r.spec.kind === kind);
  };
  const served = (urn: string): Lifecycle => {
    const found = lifecycleOf(urn);
    if (!found)
      throw new Error(
        `the tigercloud provider serves no resource type ${printable(typeOf(urn))} (it serves ${resources
          .map((r) => `tigercloud:index:${r.spec.kind}`)
          .join(", ")})`,
      );
    return found;
  };

  return {
    getPluginInfo: unary(async () => new plugproto.PluginInfo().setVersion(PACKAGE_VERSION)),
    getSchema: unary(async (req: provproto.GetSchemaRequest) => {
      if (req.getVersion() !== 0) throw new Error(`unsupported schema version ${req.getVersion()}`);
      return new provproto.GetSchemaResponse().setSchema(JSON.stringify({ ...schema, version: PACKAGE_VERSION }));
    }),
    checkConfig: unary(async (req: provproto.CheckRequest) => {
      const news = receive(req.getNews());
      const { failures } = readSettings(news.props);
      // The keys are kept as secrets, however the program gave them (a plain YAML literal too).
      const resp = new provproto.CheckResponse().setInputs(send(news.props, [...news.secretKeys, ...SECRET_SETTINGS]));
      return resp.setFailuresList(failures.map((f) => new provproto.CheckFailure().setProperty(f.property).setReason(printable(f.reason))));
    }),
    diffConfig: unary(async (req: provproto.DiffRequest) => {
      const [olds, news] = [receive(req.getOldInputs() ?? req.getOlds()).props, receive(req.getNews()).props];
      const keys = [...new Set([...Object.keys(olds), ...Object.keys(news)])].filter((k) => k !== "version");
      const diffs = keys.filter((k) => JSON.stringify(olds[k]) !== JSON.stringify(news[k]));
      // New settings change how the API is reached, never what the resources are: no replacement.
      return new provproto.DiffResponse()
        .setChanges(diffs.length > 0 ? provproto.DiffResponse.DiffChanges.DIFF_SOME : provproto.DiffResponse.DiffChanges.DIFF_NONE)
        .setDiffsList(diffs);
    }),
    configure: unary(async (req: provproto.ConfigureRequest) => {
      const given = settingsOfConfigure(receive(req.getArgs()).props, new Map(req.getVariablesMap().toArray()));
      const { settings, failures } = readSettings(given);
      if (failures.length > 0) throw new Error(failures.map((f) => f.reason).join("; "));
      host = { ...host, config: lookupOf(settings), memory: freshRun() };
      return new provproto.ConfigureResponse()
        .setAcceptsecrets(true)
        .setAcceptresources(false)
        .setAcceptoutputs(false)
        .setSupportspreview(true);
    }),
    check: unary(async (req: provproto.CheckRequest) => {
      const lifecycle = served(req.getUrn());
      const [olds, news] = [receive(req.getOlds()), receive(req.getNews())];
      const result = await lifecycle.check(await context(req.getUrn(), { secrets: [olds, news] }), olds.props, news.props);
      const resp = new provproto.CheckResponse().setInputs(send(result.inputs, news.secretKeys));
      return resp.setFailuresList(result.failures.map((f) => new provproto.CheckFailure().setProperty(f.property).setReason(f.reason)));
    }),
    diff: unary(async (req: provproto.DiffRequest) => {
      const lifecycle = served(req.getUrn());
      const [olds, news] = [receive(req.getOlds()), receive(req.getNews())];
      // ignoreChanges: the engine hands back the old input, but the diff compares the recorded
      // state (what refresh read): an ignored property is the recorded one, or it would be a change.
      const ignored = Object.fromEntries(
        req
          .getIgnorechangesList()
          .filter((k) => k in olds.props)
          .map((k) => [k, olds.props[k]]),
      );
      const ctx = await context(req.getUrn(), { secrets: [olds, news] });
      const result = await lifecycle.diff(ctx, req.getId(), olds.props, { ...news.props, ...ignored });
      const changes = result.changes ? provproto.DiffResponse.DiffChanges.DIFF_SOME : provproto.DiffResponse.DiffChanges.DIFF_NONE;
      const resp = new provproto.DiffResponse().setChanges(changes).setDeletebeforereplace(result.deleteBeforeReplace);
      if (result.replaces.length > 0) resp.setReplacesList(result.replaces);
      return resp;
    }),
    create: unary(async (req: provproto.CreateRequest) => {
      const lifecycle = served(req.getUrn());
      const news = receive(req.getProperties());
      const secret = [...news.secretKeys, ...(lifecycle.spec.secretOutputs ?? [])];
      // Preview: nothing is made; what the API will say is unknown until then.
      if (req.getPreview()) return new provproto.CreateResponse().setId("").setProperties(send(news.props, secret));
      const ctx = await context(req.getUrn(), { secrets: [news], timeout: { seconds: req.getTimeout(), op: "create" } });
      try {
        const made = await lifecycle.create(ctx, news.props);
        return new provproto.CreateResponse().setId(made.id).setProperties(send(made.state, secret));
      } catch (e) {
        throw partialAs(e, secret);
      }
    }),
    read: unary(async (req: provproto.ReadRequest) => {
      const lifecycle = served(req.getUrn());
      // `pulumi import` and the import option send a Read with an ID and no properties: state
      // starts empty, and the lifecycle reads everything from the API.
      const props = receive(req.hasProperties() ? req.getProperties() : undefined);
      const inputs = receive(req.hasInputs() ? req.getInputs() : undefined);
      const secret = [...props.secretKeys, ...(lifecycle.spec.secretOutputs ?? [])];
      const found = await lifecycle.read(await context(req.getUrn(), { secrets: [props, inputs] }), req.getId(), props.props);
      const resp = new provproto.ReadResponse();
      if (!found) return resp;
      return resp
        .setId(found.id)
        .setProperties(send(found.state, secret))
        .setInputs(send(found.inputs ?? inputs.props, inputs.secretKeys));
    }),
    update: unary(async (req: provproto.UpdateRequest) => {
      const lifecycle = served(req.getUrn());
      const [olds, news] = [receive(req.getOlds()), receive(req.getNews())];
      const secret = [...news.secretKeys, ...olds.secretKeys, ...(lifecycle.spec.secretOutputs ?? [])];
      // Preview: the object stays (its ID, its endpoint) with the new inputs; a resource that
      // refers to its outputs sees them known, and is not planned as a replacement.
      if (req.getPreview()) return new provproto.UpdateResponse().setProperties(send({ ...olds.props, ...news.props }, secret));
      const ctx = await context(req.getUrn(), { secrets: [olds, news], timeout: { seconds: req.getTimeout(), op: "update" } });
      try {
        return new provproto.UpdateResponse().setProperties(send(await lifecycle.update(ctx, req.getId(), olds.props, news.props), secret));
      } catch (e) {
        throw partialAs(e, secret);
      }
    }),
    delete: unary(async (req: provproto.DeleteRequest) => {
      const lifecycle = served(req.getUrn());
      const props = receive(req.getProperties());
      const ctx = await context(req.getUrn(), { secrets: [props], timeout: { seconds: req.getTimeout(), op: "delete" } });
      await lifecycle.delete(ctx, req.getId(), props.props);
      return new Empty();
    }),
    cancel: unary(async () => new Empty()),
    attach: unary(async () => new Empty()),
  };
}

/** A URL's password as it is written in it and as it reads; nothing of a text that is no URL with one. */
function passwordsIn(text: string): string[] {
  const password = URL.canParse(text) ? new URL(text).password : "";
  if (!password) return [];
  try {
    return [password, decodeURIComponent(password)];
  } catch {
    return [password];
  }
}

/** A handler for a unary call: its answer, or its failure escaped (a partial failure with its details). */
function unary<Req, Res>(handle: (req: Req) => Promise<Res>) {
  return (call: grpc.ServerUnaryCall<Req, Res>, callback: grpc.sendUnaryData<Res>) => {
    handle(call.request).then(
      (res) => callback(null, res),
      (err: unknown) => callback(asGrpcError(err)),
    );
  };
}

/** A partial failure's state as the engine records it: this host's outputs. */
class PluginPartialFailure extends Error {
  constructor(
    readonly id: string,
    readonly properties: Struct,
    readonly reasons: string[],
    message: string,
  ) {
    super(message);
  }
}

function partialAs(e: unknown, secret: readonly string[]): unknown {
  if (!(e instanceof PartialFailureError)) return e;
  return new PluginPartialFailure(e.id, send(e.state, secret), e.reasons, e.message);
}

/**
 * The engine's form of an error: its message escaped; for a partial failure (the object exists,
 * a later step failed), the object's ID and state in `ErrorResourceInitFailed`, so the engine
 * records it instead of orphaning it.
 */
function asGrpcError(err: unknown): Partial<grpc.StatusObject> {
  const escaped = escapedError(err);
  const metadata = new grpc.Metadata();
  if (escaped instanceof PluginPartialFailure) {
    const detail = new provproto.ErrorResourceInitFailed()
      .setId(escaped.id)
      .setProperties(escaped.properties)
      .setReasonsList(escaped.reasons.map((r) => printable(r)));
    const any = new Any();
    any.pack(detail.serializeBinary(), "pulumirpc.ErrorResourceInitFailed");
    const status = new statusproto.Status().setCode(grpc.status.UNKNOWN).setMessage(escaped.message);
    status.addDetails(any);
    metadata.add("grpc-status-details-bin", Buffer.from(status.serializeBinary()));
  }
  return { code: grpc.status.UNKNOWN, details: escaped.message, metadata };
}

/** Serves `service` on a loopback port; resolves with the port. */
export async function serve(service: grpc.UntypedServiceImplementation): Promise<{ port: number; server: grpc.Server }> {
  const server = new grpc.Server({ "grpc.max_receive_message_length": 400 * 1024 * 1024 });
  server.addService(provrpc.ResourceProviderService as unknown as grpc.ServiceDefinition, service);
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
  );
  return { port, server };
}
