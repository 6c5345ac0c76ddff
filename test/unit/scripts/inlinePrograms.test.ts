// A process that runs inline programs one engine run after another (the e2e harness, the demo):
// the SDK's dropped clients to the last engine must not break the next engine's clients when the
// next engine listens on the same port.
import * as grpc from "@grpc/grpc-js";
import { isolateEngineClients } from "../../../scripts/inlinePrograms";

const PING = {
  ping: {
    path: "/test.Engine/Ping",
    requestStream: false,
    responseStream: false,
    requestSerialize: (b: Buffer) => b,
    requestDeserialize: (b: Buffer) => b,
    responseSerialize: (b: Buffer) => b,
    responseDeserialize: (b: Buffer) => b,
  },
} as const;

/** A stand-in engine on `port` (0: any free one). */
async function engine(port: number): Promise<{ server: grpc.Server; port: number }> {
  const server = new grpc.Server();
  server.addService(PING, { ping: (_call: unknown, cb: (err: null, res: Buffer) => void) => cb(null, Buffer.from("pong")) });
  const bound = await new Promise<number>((resolve, reject) =>
    server.bindAsync(`127.0.0.1:${port}`, grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
  );
  return { server, port: bound };
}
const same = (b: Buffer) => b;
const ping = (c: grpc.Client) =>
  new Promise<string>((resolve) =>
    c.makeUnaryRequest(PING.ping.path, same, same, Buffer.from("x"), (err: grpc.ServiceError | null, res?: Buffer) =>
      resolve(err ? err.message : String(res)),
    ),
  );

/** Two engine runs on one port, the first run's client dropped but never closed, as the SDK does. */
async function secondRunOnTheSamePort(options: grpc.ClientOptions): Promise<string> {
  const first = await engine(0);
  const dropped = new grpc.Client(`127.0.0.1:${first.port}`, grpc.credentials.createInsecure(), options);
  expect(await ping(dropped)).toBe("pong");
  first.server.forceShutdown();
  expect(await ping(dropped)).toMatch(/UNAVAILABLE/); // now retrying a dead port, in backoff
  const second = await engine(first.port);
  const next = new grpc.Client(`127.0.0.1:${first.port}`, grpc.credentials.createInsecure(), options);
  try {
    return await ping(next);
  } finally {
    next.close();
    dropped.close();
    second.server.forceShutdown();
  }
}

test("without isolation, a new client to a reused port fails at once (the hazard is real)", async () => {
  expect(await secondRunOnTheSamePort({})).toMatch(/UNAVAILABLE: No connection established. Last error: null/);
});

test("with the SDK's client options isolated, the next engine run's client on a reused port answers", async () => {
  isolateEngineClients();
  const settings = require("@pulumi/pulumi/runtime/settings") as { grpcClientOptions: grpc.ClientOptions };
  const { interceptors: _interceptors, ...options } = settings.grpcClientOptions;
  expect(await secondRunOnTheSamePort(options)).toBe("pong");
});
