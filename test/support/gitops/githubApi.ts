// A local stand-in for the part of GitHub's REST API the workflows call: a pull request's comments
// (list, create, update), and a pull request's state (open or closed). Each job's GITHUB_TOKEN
// carries the job's `permissions:`, and, as on GitHub, writing a comment needs `pull-requests:
// write` (or `issues: write`), and reading a private repository's pull request `pull-requests:
// read`: a job that did not ask for it gets GitHub's 403.
import * as crypto from "crypto";
import * as http from "http";
import type { AddressInfo } from "net";

export interface Comment {
  id: number;
  issue: number;
  body: string;
  user: { login: string };
}
export interface ApiRequest {
  method: string;
  path: string;
  status: number;
}
export type Permissions = Record<string, string>;

export class GitHubApi {
  readonly comments: Comment[] = [];
  readonly requests: ApiRequest[] = [];
  private readonly tokens = new Map<string, Permissions>();
  /** Each pull request's state, by "owner/name#number", as its events left it. */
  private readonly pulls = new Map<string, "open" | "closed">();
  private server?: http.Server;
  private nextId = 1000;

  get url(): string {
    return `http://127.0.0.1:${(this.server?.address() as AddressInfo).port}`;
  }

  /** A job's GITHUB_TOKEN, good for what its permissions say. */
  issueToken(permissions: Permissions): string {
    const token = `ghs_${crypto.randomBytes(18).toString("hex")}`;
    this.tokens.set(token, permissions);
    return token;
  }

  /** A pull request's event happened: opened, reopened or synchronize leave it open; closed closes it. */
  pullRequestEvent(repository: string, number: number, action: string): void {
    this.pulls.set(`${repository}#${number}`, action === "closed" ? "closed" : "open");
  }

  async start(): Promise<void> {
    this.server = http.createServer((req, res) => {
      let body = "";
      req.on("data", (c: Buffer) => (body += c.toString()));
      req.on("end", () => {
        const [status, answer] = this.answer(req, body);
        this.requests.push({ method: req.method ?? "", path: req.url ?? "", status });
        res.writeHead(status, { "content-type": "application/json" });
        res.end(JSON.stringify(answer));
      });
    });
    await new Promise<void>((resolve) => this.server?.listen(0, "127.0.0.1", resolve));
  }

  async stop(): Promise<void> {
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  private answer(req: http.IncomingMessage, body: string): [number, unknown] {
    const token = /^(?:Bearer|token) (.+)$/.exec(req.headers.authorization ?? "")?.[1];
    const permissions = token === undefined ? undefined : this.tokens.get(token);
    if (!permissions) return [401, { message: "Bad credentials" }];
    const url = new URL(req.url ?? "/", "http://x");
    const list = /^\/repos\/[^/]+\/[^/]+\/issues\/(\d+)\/comments$/.exec(url.pathname);
    const pull = /^\/repos\/([^/]+\/[^/]+)\/pulls\/(\d+)$/.exec(url.pathname);
    if (pull && req.method === "GET") {
      if (!permissions["pull-requests"]) return [403, { message: "Resource not accessible by integration" }];
      const state = this.pulls.get(`${pull[1]}#${pull[2]}`);
      return state ? [200, { number: Number(pull[2]), state }] : [404, { message: "Not Found" }];
    }
    const one = /^\/repos\/[^/]+\/[^/]+\/issues\/comments\/(\d+)$/.exec(url.pathname);
    const canWrite = permissions["pull-requests"] === "write" || permissions.issues === "write";
    const forbidden: [number, unknown] = [403, { message: "Resource not accessible by integration" }];
    if (list && req.method === "GET") {
      const perPage = Number(url.searchParams.get("per_page") ?? 30);
      return [200, this.comments.filter((c) => c.issue === Number(list[1])).slice(0, perPage)];
    }
    if (list && req.method === "POST") {
      if (!canWrite) return forbidden;
      const comment = {
        id: this.nextId++,
        issue: Number(list[1]),
        body: (JSON.parse(body) as { body: string }).body,
        user: { login: "github-actions[bot]" },
      };
      this.comments.push(comment);
      return [201, comment];
    }
    if (one && req.method === "PATCH") {
      if (!canWrite) return forbidden;
      const comment = this.comments.find((c) => c.id === Number(one[1]));
      if (!comment) return [404, { message: "Not Found" }];
      comment.body = (JSON.parse(body) as { body: string }).body;
      return [200, comment];
    }
    return [404, { message: "Not Found" }];
  }
}
