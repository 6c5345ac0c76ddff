// Writing the simulator's answers: JSON bodies, and the API's error object, written here once for
// the server and the faults alike.
import type * as http from "http";
import { HttpFailure } from "./model";

/** `body` as JSON; none for a 204 or an undefined body. */
export function send(res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  if (status === 204 || body === undefined) {
    res.writeHead(status, headers).end();
    return;
  }
  res.writeHead(status, { ...headers, "Content-Type": "application/json" }).end(JSON.stringify(body));
}

/** The API's JSON error for a refusal (an HttpFailure); anything else is the simulator's own 500. */
export function sendFailure(res: http.ServerResponse, err: unknown): void {
  if (err instanceof HttpFailure) send(res, err.status, { code: err.code, message: err.message });
  else send(res, 500, { code: "INTERNAL", message: String(err) });
}
