// The provider plugin's gRPC server: the engine's ResourceProvider calls, answered by the same
// lifecycles the dynamic provider runs (resources/defineProvider.ts), with a context made from
// this provider instance's settings.
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
import { Struct } from "google-protobuf/google/protobuf/struct_pb";
import * as plugproto from "@pulumi/pulumi/proto/plugin_pb";
import * as provrpc from "@pulumi/pulumi/proto/provider_grpc_pb";
import * as provproto from "@pulumi/pulumi/proto/provider_pb";
import * as statusproto from "@pulumi/pulumi/proto/status_pb";
import { callContext, type HostSettings } from "../engine/host";
import { PartialFailureError, escapedError } from "../errors";
import type { Lifecycle } from "../resources/defineProvider";
import { CLAIM_BOOK } from "../rules/claims";
import type { RunSlot } from "../run";
import { SETTING_SOURCES } from "../settings";
import { printable } from "../text";
import { PACKAGE_VERSION } from "../version";
import { claimBookOfRun } from "./claimBook";
import { lookupOf, readSettings, settingsOfConfigure } from "./settings";
import { type Bag, type Received, receive, send, withDeclarantOf } from "./wire";
import schema from "./schema.json";

/** A resource the plugin serves: its lifecycle, the outputs every program keeps secret, and the
 *  inputs that `customTimeouts` set for each operation. */
export interface ServedResource {
  lifecycle: Lifecycle;
  secretOutputs: readonly string[];
  timeoutInputs: Partial<Record<"create" | "update" | "delete", string>>;
}

const TOKEN = /^tigercloud:index:(\w+)$/;
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

/** The gRPC service of one plugin process (one provider instance). */
export function providerService(
  resources: Record<string, ServedResource>,
  engineAddress: string | undefined,
): grpc.UntypedServiceImplementation {
  // Unconfigured, a provider reads only the environment (as the dynamic provider before configure).
  // What the run learns starts empty, but for its declarations: the run's book, which all its
  // plugin processes share (claimBook.ts).
  // Where no private book can be had, the declarations stay in this process: said once, as a warning.
  let bookProblem: string | undefined;
  const freshRun = () => {
    const run = engineAddress === undefined ? undefined : claimBookOfRun(engineAddress);
    if (run && "problem" in run) bookProblem = run.problem;
    return new Map<RunSlot<unknown>, unknown>(run && "book" in run ? [[CLAIM_BOOK, run.book]] : []);
  };
  let host: HostSettings = { config: () => undefined, learnt: freshRun(), engineAddress, grpc, configWord: "provider setting" };
  /**
   * A call's context: this instance's settings, progress shown as the resource's status, the
   * values the call's properties hold as secrets (never shown), and the operation's deadline.
   */
  const context = async (urn: string, call: { secrets?: Received[]; timeoutSeconds?: number } = {}) => {
    const seconds = call.timeoutSeconds ?? 0;
    const ctx = callContext({
      ...host,
      urn,
      secrets: (call.secrets ?? []).flatMap((r) => r.secretValues),
      deadline: seconds > 0 ? Date.now() + Math.min(MAX_TIMEOUT_S, seconds) * 1000 : undefined,
    });
    if (bookProblem !== undefined) {
      const problem = bookProblem;
      bookProblem = undefined;
      await ctx.warning(
        `the declarations of this run are kept in each provider process, not shared between them: ${problem}. ` +
          `A fork renamed and moved to another provider in one run may then be stopped by the old resource's delete. ` +
          `Remove or fix that path (it must be a folder of this user's alone, mode 700), or set TMPDIR to a private folder.`,
      );
    }
    return ctx;
  };

  const served = (urn: string): ServedResource => {
    const kind = TOKEN.exec(typeOf(urn))?.[1];
    const found = kind === undefined ? undefined : resources[kind];
    if (!found)
      throw new Error(
        `the tigercloud provider serves no resource type ${printable(typeOf(urn))} (it serves ${Object.keys(resources)
          .map((k) => `tigercloud:index:${k}`)
          .join(", ")})`,
      );
    return found;
  };

  /** Inputs with a `customTimeouts` value in place of the resource's own timeout input. */
  const timedBy = (resource: ServedResource, op: "create" | "update" | "delete", seconds: number, props: Bag): Bag => {
    const key = resource.timeoutInputs[op];
    if (!key || !(seconds > 0)) return props;
    // At most what a timeout input may say (24h): a longer wait is no wait any API operation needs.
    return { ...props, [key]: `${Math.min(MAX_TIMEOUT_S, Math.max(1, Math.round(seconds)))}s` };
  };
  /** The outputs with the resource's own timeout input recorded, not the call's custom one. */
  const recordedAs = (resource: ServedResource, op: "create" | "update", outs: Bag, declared: Bag): Bag => {
    const key = resource.timeoutInputs[op];
    return key ? { ...outs, [key]: declared[key] } : outs;
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
      host = { config: lookupOf(settings), learnt: freshRun(), engineAddress, grpc, configWord: "provider setting" };
      return new provproto.ConfigureResponse()
        .setAcceptsecrets(true)
        .setAcceptresources(false)
        .setAcceptoutputs(false)
        .setSupportspreview(true);
    }),
    check: unary(async (req: provproto.CheckRequest) => {
      const { lifecycle } = served(req.getUrn());
      const [olds, news] = [receive(req.getOlds()), receive(req.getNews())];
      const ctx = await context(req.getUrn(), { secrets: [olds, news] });
      const result = await lifecycle.check(ctx, olds.props, withDeclarantOf(req.getUrn(), news.props));
      const resp = new provproto.CheckResponse().setInputs(send(result.inputs as Bag | undefined, news.secretKeys));
      return resp.setFailuresList(
        (result.failures ?? []).map((f) => new provproto.CheckFailure().setProperty(f.property).setReason(f.reason)),
      );
    }),
    diff: unary(async (req: provproto.DiffRequest) => {
      const { lifecycle } = served(req.getUrn());
      const oldsReceived = receive(req.getOlds());
      const newsReceived = receive(req.getNews());
      const olds = withDeclarantOf(req.getUrn(), oldsReceived.props);
      // ignoreChanges: the engine hands back the old input, but the diff compares the recorded
      // state (what refresh read): an ignored property is the recorded one, or it would be a change.
      const ignored = Object.fromEntries(
        req
          .getIgnorechangesList()
          .filter((k) => k in olds)
          .map((k) => [k, olds[k]]),
      );
      const news = withDeclarantOf(req.getUrn(), { ...newsReceived.props, ...ignored });
      const ctx = await context(req.getUrn(), { secrets: [oldsReceived, newsReceived] });
      const result = await lifecycle.diff(ctx, req.getId(), olds, news);
      const changes =
        result.changes === true
          ? provproto.DiffResponse.DiffChanges.DIFF_SOME
          : result.changes === false
            ? provproto.DiffResponse.DiffChanges.DIFF_NONE
            : provproto.DiffResponse.DiffChanges.DIFF_UNKNOWN;
      const resp = new provproto.DiffResponse().setChanges(changes).setDeletebeforereplace(Boolean(result.deleteBeforeReplace));
      if (result.replaces?.length) resp.setReplacesList(result.replaces);
      if (result.stables?.length) resp.setStablesList(result.stables);
      return resp;
    }),
    create: unary(async (req: provproto.CreateRequest) => {
      const resource = served(req.getUrn());
      const news = receive(req.getProperties());
      const declared = withDeclarantOf(req.getUrn(), news.props);
      const secret = [...news.secretKeys, ...resource.secretOutputs];
      // Preview: nothing is made; what the API will say is unknown until then.
      if (req.getPreview()) return new provproto.CreateResponse().setId("").setProperties(send(news.props, secret));
      try {
        const ctx = await context(req.getUrn(), { secrets: [news], timeoutSeconds: req.getTimeout() });
        const made = await resource.lifecycle.create(ctx, timedBy(resource, "create", req.getTimeout(), declared));
        return new provproto.CreateResponse()
          .setId(made.id)
          .setProperties(send(recordedAs(resource, "create", made.outs as Bag, declared), secret));
      } catch (e) {
        throw partialAs(e, secret, (outs) => recordedAs(resource, "create", outs, declared));
      }
    }),
    read: unary(async (req: provproto.ReadRequest) => {
      const resource = served(req.getUrn());
      // `pulumi import` and the import option send a Read with an ID and no properties: state
      // starts empty, and the lifecycle reads everything from the API.
      const props = receive(req.hasProperties() ? req.getProperties() : undefined);
      const inputs = receive(req.hasInputs() ? req.getInputs() : undefined);
      const secret = [...props.secretKeys, ...resource.secretOutputs];
      const ctx = await context(req.getUrn(), { secrets: [props, inputs] });
      const found = await resource.lifecycle.read(ctx, req.getId(), withDeclarantOf(req.getUrn(), props.props));
      const resp = new provproto.ReadResponse();
      if (!found.id) return resp;
      return resp
        .setId(found.id)
        .setProperties(send(found.props as Bag, secret))
        .setInputs(send((found.inputs as Bag | undefined) ?? inputs.props, inputs.secretKeys));
    }),
    update: unary(async (req: provproto.UpdateRequest) => {
      const resource = served(req.getUrn());
      const [olds, news] = [receive(req.getOlds()), receive(req.getNews())];
      const declared = withDeclarantOf(req.getUrn(), news.props);
      const secret = [...news.secretKeys, ...olds.secretKeys, ...resource.secretOutputs];
      // Preview: the object stays (its ID, its endpoint) with the new inputs; a resource that
      // refers to its outputs sees them known, and is not planned as a replacement.
      if (req.getPreview()) return new provproto.UpdateResponse().setProperties(send({ ...olds.props, ...news.props }, secret));
      try {
        const result = await resource.lifecycle.update(
          await context(req.getUrn(), { secrets: [olds, news], timeoutSeconds: req.getTimeout() }),
          req.getId(),
          withDeclarantOf(req.getUrn(), olds.props),
          timedBy(resource, "update", req.getTimeout(), declared),
        );
        return new provproto.UpdateResponse().setProperties(
          send(recordedAs(resource, "update", (result.outs ?? {}) as Bag, declared), secret),
        );
      } catch (e) {
        throw partialAs(e, secret, (outs) => recordedAs(resource, "update", outs, declared));
      }
    }),
    delete: unary(async (req: provproto.DeleteRequest) => {
      const resource = served(req.getUrn());
      const received = receive(req.getProperties());
      const props = withDeclarantOf(req.getUrn(), received.props);
      const ctx = await context(req.getUrn(), { secrets: [received], timeoutSeconds: req.getTimeout() });
      await resource.lifecycle.delete(ctx, req.getId(), timedBy(resource, "delete", req.getTimeout(), props));
      return new Empty();
    }),
    cancel: unary(async () => new Empty()),
    attach: unary(async () => new Empty()),
  };
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

/** A partial failure's properties as the engine records them: this host's outputs. */
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

function partialAs(e: unknown, secret: readonly string[], recorded: (outs: Bag) => Bag): unknown {
  if (!(e instanceof PartialFailureError)) return e;
  return new PluginPartialFailure(e.id, send(recorded(e.properties), secret), e.reasons, e.message);
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
