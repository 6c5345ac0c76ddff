// A local stand-in for the part of GitHub's REST API the workflows call: a pull request's comments
// (list, a page at a time, create, update), a pull request's state (open or closed), a file as it
// is at a commit (the contents route), the repository's default branch and a ref's commit (each read
// from the repository's git). Each job's
// GITHUB_TOKEN carries the job's `permissions:`, and, as on GitHub, writing a comment needs
// `pull-requests: write` (or `issues: write`), reading a private repository's pull request
// `pull-requests: read`, and its files `contents: read`: a job that did not ask for it gets
// GitHub's 403.
import { execFileSync } from "child_process";
import * as crypto from "crypto";
import * as http from "http";
import type { AddressInfo } from "net";

export interface Comment {
  id: number;
  /** owner/name: a comment is on one repository's pull request. */
  repository: string;
  issue: number;
  body: string;
  user: { login: string; type: "Bot" | "User" };
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

  /** Where each repository's git is, by owner/name: what the contents route reads. */
  private readonly repositories = new Map<string, string>();

  /** The repository `name` (owner/name) is the git repository at `dir`. */
  addRepository(name: string, dir: string): void {
    this.repositories.set(name, dir);
  }

  /** A comment a person wrote on pull request `issue` of `repository`. */
  commentAsUser(repository: string, issue: number, body: string): void {
    this.comments.push({ id: this.nextId++, repository, issue, body, user: { login: "someone", type: "User" } });
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
        const raw = (answer as { raw?: unknown }).raw;
        res.writeHead(status, { "content-type": typeof raw === "string" ? "application/vnd.github.raw" : "application/json" });
        res.end(typeof raw === "string" ? raw : JSON.stringify(answer));
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
    const list = /^\/repos\/([^/]+\/[^/]+)\/issues\/(\d+)\/comments$/.exec(url.pathname);
    const pull = /^\/repos\/([^/]+\/[^/]+)\/pulls\/(\d+)$/.exec(url.pathname);
    if (pull && req.method === "GET") {
      if (!permissions["pull-requests"]) return [403, { message: "Resource not accessible by integration" }];
      const state = this.pulls.get(`${pull[1]}#${pull[2]}`);
      return state ? [200, { number: Number(pull[2]), state }] : [404, { message: "Not Found" }];
    }
    const one = /^\/repos\/([^/]+\/[^/]+)\/issues\/comments\/(\d+)$/.exec(url.pathname);
    const canWrite = permissions["pull-requests"] === "write" || permissions.issues === "write";
    const forbidden: [number, unknown] = [403, { message: "Resource not accessible by integration" }];
    const contents = /^\/repos\/([^/]+\/[^/]+)\/contents\/(.+)$/.exec(url.pathname);
    if (contents && req.method === "GET") {
      if (!permissions.contents) return [403, { message: "Resource not accessible by integration" }];
      const dir = this.repositories.get(contents[1] as string);
      const ref = url.searchParams.get("ref") ?? "HEAD";
      const file = decodeURIComponent(contents[2] as string);
      if (!dir || !/^[0-9a-zA-Z._/-]+$/.test(ref) || file.split("/").includes("..")) return [404, { message: "Not Found" }];
      let text: string;
      try {
        text = execFileSync("git", ["show", `${ref}:${file}`], { cwd: dir, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] });
      } catch {
        return [404, { message: "Not Found" }];
      }
      // The raw media type answers the file itself; the default, its content in base64.
      if ((req.headers.accept ?? "").includes("raw")) return [200, { raw: text }];
      return [200, { type: "file", path: file, encoding: "base64", content: Buffer.from(text).toString("base64") }];
    }
    // The repository (metadata, which every token reads) and a commit's sha (contents: read), from its git.
    const repository = /^\/repos\/([^/]+\/[^/]+)$/.exec(url.pathname);
    const commit = /^\/repos\/([^/]+\/[^/]+)\/commits\/([^/]+)$/.exec(url.pathname);
    if ((repository || commit) && req.method === "GET") {
      const name = (repository ?? commit)?.[1] as string;
      const dir = this.repositories.get(name);
      if (!dir) return [404, { message: "Not Found" }];
      const git = (...args: string[]) =>
        execFileSync("git", args, { cwd: dir, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
      if (repository) return [200, { full_name: name, default_branch: git("symbolic-ref", "--short", "HEAD") }];
      if (!permissions.contents) return [403, { message: "Resource not accessible by integration" }];
      const ref = decodeURIComponent(commit?.[2] as string);
      if (!/^[0-9a-zA-Z._/-]+$/.test(ref)) return [404, { message: "Not Found" }];
      let sha: string;
      try {
        sha = git("rev-parse", "--verify", `${ref}^{commit}`);
      } catch {
        return [404, { message: "Not Found" }];
      }
      // The sha media type answers the commit's sha alone.
      if ((req.headers.accept ?? "").includes("sha")) return [200, { raw: sha }];
      return [200, { sha }];
    }
    if (list && req.method === "GET") {
      const perPage = Number(url.searchParams.get("per_page") ?? 30);
      const page = Number(url.searchParams.get("page") ?? 1);
      const onIt = this.comments.filter((c) => c.repository === list[1] && c.issue === Number(list[2]));
      return [200, onIt.slice((page - 1) * perPage, page * perPage)];
    }
    if (list && req.method === "POST") {
      if (!canWrite) return forbidden;
      const comment = {
        id: this.nextId++,
        repository: list[1] as string,
        issue: Number(list[2]),
        body: (JSON.parse(body) as { body: string }).body,
        user: { login: "github-actions[bot]", type: "Bot" as const },
      };
      this.comments.push(comment);
      return [201, comment];
    }
    if (one && req.method === "PATCH") {
      if (!canWrite) return forbidden;
      const comment = this.comments.find((c) => c.repository === one[1] && c.id === Number(one[2]));
      if (!comment) return [404, { message: "Not Found" }];
      comment.body = (JSON.parse(body) as { body: string }).body;
      return [200, comment];
    }
    return [404, { message: "Not Found" }];
  }
}
