// The stand-in behind a service's endpoint where there is no PostgreSQL server: just enough of
// PostgreSQL's wire protocol (TLS, a password login, `SELECT 1`) for a login probe. Used where
// PostgreSQL cannot be had, and by the unit tests and the benchmark, which make many forks and
// need no data.
import * as crypto from "crypto";
import type * as net from "net";
import * as tls from "tls";
import { selfSignedCertificate } from "./tls";

export class LoginStandIn {
  private secureContext: Promise<tls.SecureContext> | undefined;
  /** Set by tests: every login is refused with a message that quotes the password it got. */
  echoPasswordInErrors = false;

  /** Accepts a login as `user` to `database`, nothing else. */
  constructor(
    private readonly user: string,
    private readonly database: string,
  ) {}

  /** Serves one connection; `service.password` is read when the login comes (it may have changed). */
  async serve(raw: net.Socket, service: { readonly password: string }): Promise<void> {
    let socket: net.Socket = raw;
    let messages = new MessageReader(socket, true);
    let startup = await messages.next();
    if (startup?.code === SSL_REQUEST) {
      messages.detach();
      raw.write("S");
      // Made on the first TLS request only: a run that never asks pays no openssl.
      this.secureContext ??= Promise.resolve().then(() => {
        const [key, cert] = selfSignedCertificate();
        return tls.createSecureContext({ key, cert });
      });
      socket = new tls.TLSSocket(raw, { isServer: true, secureContext: await this.secureContext });
      socket.on("error", () => undefined);
      messages = new MessageReader(socket, true);
      startup = await messages.next();
    }
    if (!startup || startup.code !== PROTOCOL_3) return void socket.destroy();
    const params = startupParams(startup.body);
    const fatal = (code: string, message: string): void => void socket.end(errorResponse("FATAL", code, message));
    if (params.user !== this.user) return fatal("28000", `role "${params.user ?? ""}" does not exist`);
    if (params.database !== this.database) return fatal("3D000", `database "${params.database ?? ""}" does not exist`);
    socket.write(message("R", int32(3))); // a cleartext password, please (inside TLS)
    const answer = await messages.next();
    const given = answer?.type === "p" ? answer.body.subarray(0, answer.body.indexOf(0)).toString("utf8") : "";
    if (this.echoPasswordInErrors) return fatal("28P01", `password authentication failed for user "${this.user}" with password "${given}"`);
    if (given !== service.password) return fatal("28P01", `password authentication failed for user "${this.user}"`);
    socket.write(
      Buffer.concat([
        message("R", int32(0)),
        message("S", cstrings("server_version", "15.0 (tigercloud simulator stand-in)")),
        message("S", cstrings("client_encoding", "UTF8")),
        message("K", Buffer.concat([int32(process.pid), int32(crypto.randomInt(2 ** 31))])),
        message("Z", Buffer.from("I")),
      ]),
    );
    for (;;) {
      const m = await messages.next();
      if (!m || m.type === "X") return void socket.end();
      const sql = m.type === "Q" ? m.body.subarray(0, m.body.indexOf(0)).toString("utf8") : "";
      if (/^\s*select\s+1\s*;?\s*$/i.test(sql)) {
        const field = Buffer.concat([cstrings("?column?"), int32(0), int16(0), int32(23), int16(4), int32(-1), int16(0)]);
        socket.write(
          Buffer.concat([
            message("T", Buffer.concat([int16(1), field])),
            message("D", Buffer.concat([int16(1), int32(1), Buffer.from("1")])),
            message("C", cstrings("SELECT 1")),
            message("Z", Buffer.from("I")),
          ]),
        );
      } else {
        const note = "the simulator's stand-in answers only SELECT 1; run the simulator with PostgreSQL for real databases";
        socket.write(Buffer.concat([errorResponse("ERROR", "0A000", note), message("Z", Buffer.from("I"))]));
      }
    }
  }
}

// ---- PostgreSQL's wire protocol, the little the stand-in needs ---------------------------------

const SSL_REQUEST = 80877103;
const PROTOCOL_3 = 196608;

const int32 = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeInt32BE(n);
  return b;
};
const int16 = (n: number) => {
  const b = Buffer.alloc(2);
  b.writeInt16BE(n);
  return b;
};
const cstrings = (...texts: string[]) => Buffer.concat(texts.map((t) => Buffer.from(`${t}\0`, "utf8")));
const message = (type: string, body: Buffer) => Buffer.concat([Buffer.from(type), int32(body.length + 4), body]);
const errorResponse = (severity: string, code: string, text: string) =>
  message("E", Buffer.concat([cstrings(`S${severity}`, `V${severity}`, `C${code}`, `M${text}`), Buffer.from([0])]));

function startupParams(body: Buffer): Record<string, string> {
  const parts = body.toString("utf8").split("\0");
  const params: Record<string, string> = {};
  for (let i = 0; i + 1 < parts.length && parts[i]; i += 2) params[parts[i] as string] = parts[i + 1] as string;
  return params;
}

/** Reads whole messages off a socket: the first (startup) one has no type byte. */
class MessageReader {
  private buffered = Buffer.alloc(0);
  private waiting: (() => void) | undefined;
  private ended = false;

  constructor(
    private readonly socket: net.Socket,
    private startup: boolean,
  ) {
    socket.on("data", this.onData);
    socket.on("close", this.onClose);
  }

  private readonly wake = () => {
    const w = this.waiting;
    this.waiting = undefined;
    w?.();
  };
  private readonly onData = (d: Buffer) => {
    this.buffered = Buffer.concat([this.buffered, d]);
    this.wake();
  };
  private readonly onClose = () => {
    this.ended = true;
    this.wake();
  };

  /** Stops reading: the socket is handed on (to TLS). */
  detach(): void {
    this.socket.removeListener("data", this.onData);
    this.socket.removeListener("close", this.onClose);
  }

  /** The next message, or undefined when the connection ends first. */
  async next(): Promise<{ type?: string; code?: number; body: Buffer } | undefined> {
    for (;;) {
      const header = this.startup ? 4 : 5;
      if (this.buffered.length >= header) {
        const length = this.buffered.readInt32BE(header - 4);
        const total = length + header - 4;
        if (this.buffered.length >= total) {
          const whole = this.buffered.subarray(0, total);
          this.buffered = this.buffered.subarray(total);
          if (this.startup) {
            this.startup = false;
            return { code: whole.readInt32BE(4), body: whole.subarray(8) };
          }
          return { type: String.fromCharCode(whole[0] as number), body: whole.subarray(5) };
        }
      }
      if (this.ended) return undefined;
      await new Promise<void>((resolve) => (this.waiting = resolve));
    }
  }
}
