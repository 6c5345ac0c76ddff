// Ports for what binds the same port again later: a service's endpoints, which a stop closes and a
// start opens again, and its PostgreSQL server, restarted on its port.
import * as net from "net";

/**
 * Drawn below the kernel's ephemeral range (32768-60999 by default), from which every `listen(0)`
 * and outgoing connection of the machine takes its ports: with an ephemeral one, another process
 * can take the port while the service is stopped, and the start's listen then fails. (The likely
 * cause of one CI hang, a resumed fork whose login never came; not reproduced.)
 */
const STABLE_PORTS = { from: 20000, to: 32767 };

/** Listens on 127.0.0.1 at a free port of the stable range; resolves to that port. */
export async function listenOnStablePort(server: net.Server): Promise<number> {
  let last: Error | undefined;
  for (let attempt = 0; attempt < 100; attempt++) {
    const port = STABLE_PORTS.from + Math.floor(Math.random() * (STABLE_PORTS.to - STABLE_PORTS.from + 1));
    const failure = await new Promise<Error | undefined>((resolve) => {
      server.once("error", resolve);
      server.listen(port, "127.0.0.1", () => {
        server.off("error", resolve);
        resolve(undefined);
      });
    });
    if (!failure) return port;
    last = failure;
  }
  throw new Error(`no port to listen on between ${STABLE_PORTS.from} and ${STABLE_PORTS.to} after 100 tries: ${last?.message}`);
}

/** A port for a PostgreSQL server (which binds it itself), from the same range. */
export async function freeStablePort(): Promise<number> {
  const probe = net.createServer();
  const port = await listenOnStablePort(probe);
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}
