// The plugin's gRPC server as the engine calls it, for the unit suites: a server on loopback, a
// client of the SDK's generated stubs, one call as a promise, and property bags as Structs.
import * as grpc from "@grpc/grpc-js";
import { Struct } from "google-protobuf/google/protobuf/struct_pb";
import * as provrpc from "@pulumi/pulumi/proto/provider_grpc_pb";
import type { HostOptions } from "../../provider/context/context";
import { RESOURCES } from "../../provider/resources/registry";
import { providerService, serve } from "../../provider/hosts/plugin/server";

export type Method = "configure" | "checkConfig" | "diffConfig" | "check" | "diff" | "read" | "create" | "update" | "delete";

/** A plugin server (one provider instance, given `engineAddress` if any) and a client of it. */
export interface PluginClient {
  call<Res>(method: Method, req: unknown): Promise<Res>;
  close(): void;
}

/** Fast enough for a test: the client's backoff, the waits' polling. */
export const FAST: HostOptions = { client: { baseDelayMs: 1, maxDelayMs: 5 }, poll: { firstPollMs: 20, maxPollMs: 50 } };

export async function startPlugin(engineAddress?: string, options: HostOptions = FAST): Promise<PluginClient> {
  const { port, server } = await serve(providerService(RESOURCES, engineAddress, options));
  const client = new provrpc.ResourceProviderClient(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  type Unary<Res> = (req: unknown, done: (err: grpc.ServiceError | null, res: Res) => void) => unknown;
  return {
    call<Res>(method: Method, req: unknown) {
      const send = (client[method] as unknown as Unary<Res>).bind(client);
      return new Promise<Res>((resolve, reject) => send(req, (err, res) => (err ? reject(err) : resolve(res))));
    },
    close() {
      client.close();
      server.forceShutdown();
    },
  };
}

export const struct = (value: Record<string, unknown>) => Struct.fromJavaScript(value as Parameters<typeof Struct.fromJavaScript>[0]);
