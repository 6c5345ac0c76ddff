// For a process that runs inline programs (Automation API) one engine run after another. The
// SDK drops, never closes, its gRPC clients to the last run's engine; they keep retrying that
// engine's port through grpc-js's process-wide subchannel pool. When a later engine listens on
// that same port, a new client gets the pooled subchannel in its failure backoff and every call
// fails at once: "14 UNAVAILABLE: No connection established. Last error: null". Giving the
// SDK's clients a subchannel pool of their own keeps one run's channels out of the next's.

export function isolateEngineClients(): void {
  // Internal to the SDK (absent from its declarations): should it move, say so rather than flake.
  const settings = require("@pulumi/pulumi/runtime/settings") as { grpcClientOptions?: Record<string, unknown> };
  if (typeof settings.grpcClientOptions !== "object") {
    throw new Error("@pulumi/pulumi/runtime/settings no longer exports grpcClientOptions: isolateEngineClients needs another way in");
  }
  settings.grpcClientOptions["grpc.use_local_subchannel_pool"] = 1;
}
