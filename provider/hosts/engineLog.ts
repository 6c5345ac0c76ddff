// Where both hosts send what a person follows: the engine's own Log service, which shows a warning
// as "warning: …" (counted in the summary) and an ephemeral info line as a resource's status. A
// dynamic provider's check can only return failures, and `pulumi.log.warn` in its process has no
// engine to talk to; but the engine passes its own address to every provider process, and its Log
// service takes a message from anyone. Without an engine, or if that fails, messages go to stderr.
import * as path from "path";
import type { Reporter } from "../context/context";

/** What the engine's log client needs of a gRPC library (the plugin brings its own; the dynamic provider uses the SDK's). */
export interface GrpcLibrary {
  credentials: { createInsecure(): unknown };
  Metadata: new () => unknown;
}

/** The engine's log service, as a provider process reaches it. */
interface EngineLog {
  log(request: unknown, metadata: unknown, options: { deadline: number }, done: (err: Error | null) => void): void;
}
type EngineLogClient = {
  client: EngineLog;
  /** A warning, or an ephemeral info line (a resource's status). */
  request: (kind: "warning" | "info", message: string, urn: string | undefined) => unknown;
  metadata: () => unknown;
};
/** One client per engine address, for the process's life (a host's own memo). */
const engines = new Map<string, EngineLogClient | null>();

/** urn:pulumi:<stack>::<project>::<type>::<name>, as the engine parses it. */
const WELL_FORMED_URN = /^urn:pulumi:[^:]+::[^:]+::[^:]+(:[^:]+)*::.+$/s;

/**
 * A reporter to the engine at `engineAddress`. Progress goes to the engine as the resource's
 * status when `progressToEngine` (a plugin, whose stderr the engine hides), else to stderr as
 * `[tigercloud]` lines (a dynamic provider, whose stderr the engine shows). Messages come escaped.
 */
export function engineReporter(
  engineAddress: string | undefined,
  { grpc, progressToEngine }: { grpc?: GrpcLibrary | undefined; progressToEngine: boolean },
): Reporter {
  const log = engineAddress === undefined ? null : engineLog(engineAddress, grpc);
  return {
    progress(message, urn) {
      const text = `[tigercloud] ${message}`;
      if (log === null || !progressToEngine) process.stderr.write(`${text}\n`);
      else log.client.log(log.request("info", text, urn), log.metadata(), { deadline: Date.now() + 5000 }, () => {});
    },
    async warning(message, urn) {
      const text = `[tigercloud] ${message}`;
      const delivered =
        log !== null &&
        (await new Promise<boolean>((resolve) =>
          log.client.log(log.request("warning", text, urn), log.metadata(), { deadline: Date.now() + 5000 }, (err) => resolve(!err)),
        ));
      if (!delivered) process.stderr.write(`warning: ${text}\n`);
    },
  };
}

function engineLog(address: string, library?: GrpcLibrary): EngineLogClient | null {
  const known = engines.get(address);
  if (known !== undefined) return known;
  let engine: EngineLogClient | null = null;
  engines.set(address, engine);
  if (!/^[\w.[\]:-]+:\d+$/.test(address)) return engine;
  try {
    // The SDK's own gRPC stubs and library: the ones the provider process already runs on.
    const grpc =
      library ??
      (require(require.resolve("@grpc/grpc-js", { paths: [path.dirname(require.resolve("@pulumi/pulumi/package.json"))] })) as GrpcLibrary);
    const stubs = require("@pulumi/pulumi/proto/engine_grpc_pb") as {
      EngineClient: new (address: string, credentials: unknown) => EngineLog;
    };
    const proto = require("@pulumi/pulumi/proto/engine_pb") as typeof import("@pulumi/pulumi/proto/engine_pb");
    engine = {
      client: new stubs.EngineClient(address, grpc.credentials.createInsecure()),
      // With a URN, the engine shows the message under that resource. Only a well-formed one:
      // the engine's display panics on a URN it cannot parse.
      request: (kind, message, urn) =>
        new proto.LogRequest()
          .setSeverity(kind === "warning" ? proto.LogSeverity.WARNING : proto.LogSeverity.INFO)
          .setEphemeral(kind === "info")
          .setMessage(message)
          .setUrn(urn !== undefined && WELL_FORMED_URN.test(urn) ? urn : ""),
      metadata: () => new grpc.Metadata(),
    };
  } catch {
    // An SDK laid out otherwise: warnings go to stderr.
  }
  engines.set(address, engine);
  return engine;
}
