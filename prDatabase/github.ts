// What the PR database action asks of GitHub's REST API, with the token the workflow hands it
// (`github-token`, by default the job's own): a file as it is at a commit and the default branch's
// head (contents: read), and the pull request's one comment, found by its marker and kept up to date (pull-requests: write).
import { z } from "zod";
import { messageOf, printable } from "../provider/text";
import { ActionError } from "./inputs";

export interface GitHub {
  apiUrl: string;
  token: string;
  /** owner/name */
  repository: string;
}

/** Opens the action's comment on a pull request: how a later run finds it again. Never shown. */
export const COMMENT_MARKER = "<!-- tigercloud-pr-database -->";
/** Comments read per page while looking for the marker. */
const PAGE = 100;

async function call(
  github: GitHub,
  method: "GET" | "POST" | "PATCH",
  route: string,
  { body, accept = "application/vnd.github+json" }: { body?: unknown; accept?: string } = {},
): Promise<{ status: number; text: string }> {
  const url = `${github.apiUrl.replace(/\/+$/, "")}/repos/${github.repository}${route}`;
  const res = await fetch(url, {
    method,
    headers: {
      Authorization: `Bearer ${github.token}`,
      Accept: accept,
      "User-Agent": "tigercloud-pr-database",
      ...(body === undefined ? {} : { "Content-Type": "application/json" }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    signal: AbortSignal.timeout(30_000),
  });
  return { status: res.status, text: await res.text() };
}

/** A path of the repository as the contents route takes it: each segment encoded. */
const encodedPath = (file: string) => file.split("/").map(encodeURIComponent).join("/");

/** The text of `file` at commit `ref`; undefined when it does not exist there. Anything else fails, naming what to grant. */
export async function fileAt(github: GitHub, file: string, ref: string): Promise<string | undefined> {
  let answer;
  try {
    answer = await call(github, "GET", `/contents/${encodedPath(file)}?ref=${encodeURIComponent(ref)}`, {
      accept: "application/vnd.github.raw+json",
    });
  } catch (err) {
    throw new ActionError(`GitHub could not be asked for ${printable(file)} at ${printable(ref)}: ${printable(messageOf(err))}`);
  }
  if (answer.status === 404) return undefined;
  if (answer.status !== 200) {
    const hint = answer.status === 401 || answer.status === 403 ? " (does the workflow grant contents: read to github-token?)" : "";
    throw new ActionError(`GitHub answered ${answer.status} for ${printable(file)} at ${printable(ref)}${hint}`);
  }
  return answer.text;
}

const RepositorySchema = z.looseObject({ default_branch: z.string().min(1) });

/**
 * The repository's default branch and the commit at its head: what the golden fork's rules are read
 * at, whatever branch the run was started on (a workflow_dispatch names any).
 */
export async function defaultBranchHead(github: GitHub): Promise<{ branch: string; sha: string }> {
  const ask = async (route: string, accept?: string) => {
    let answer;
    try {
      answer = await call(github, "GET", route, accept ? { accept } : {});
    } catch (err) {
      throw new ActionError(`GitHub could not be asked for the default branch: ${printable(messageOf(err))}`);
    }
    if (answer.status !== 200) {
      const hint = answer.status === 401 || answer.status === 403 ? " (does the workflow grant contents: read to github-token?)" : "";
      throw new ActionError(`GitHub answered ${answer.status} when asked for the default branch${hint}`);
    }
    return answer.text;
  };
  const repository = RepositorySchema.safeParse(JSON.parse(await ask("")));
  if (!repository.success) throw new ActionError("GitHub's answer for the repository names no default_branch");
  const branch = repository.data.default_branch;
  const sha = (await ask(`/commits/${encodeURIComponent(branch)}`, "application/vnd.github.sha")).trim();
  if (!/^[0-9a-f]{40,64}$/.test(sha)) throw new ActionError(`GitHub named no commit at the head of ${printable(branch)}`);
  return { branch, sha };
}

const CommentsSchema = z.array(
  z.looseObject({ id: z.number().int(), body: z.string().nullish(), user: z.looseObject({ type: z.string().optional() }).nullish() }),
);

/**
 * The action's comment on pull request `pr`: made the first time, updated after (found by its
 * marker, among comments a bot wrote), or changed from what it says (`body` a function of it).
 * Says what happened; a token that cannot write pull requests is no failure of the job.
 */
export async function upsertComment(
  github: GitHub,
  pr: number,
  body: string | ((existing: string | undefined) => string | undefined),
): Promise<string> {
  try {
    let found: { id: number; body?: string | null | undefined } | undefined;
    for (let page = 1; found === undefined; page++) {
      const listed = await call(github, "GET", `/issues/${pr}/comments?per_page=${PAGE}&page=${page}`);
      if (listed.status !== 200) return `no comment on the pull request: GitHub answered ${listed.status} to reading its comments`;
      const comments = CommentsSchema.parse(JSON.parse(listed.text));
      found = comments.find((c) => c.user?.type === "Bot" && (c.body ?? "").startsWith(COMMENT_MARKER));
      if (comments.length < PAGE) break;
    }
    // A change of the comment there is (the night's word on it): none, nothing to change.
    const said = typeof body === "string" ? body : body(found?.body?.slice(COMMENT_MARKER.length).replace(/^\n/, ""));
    if (said === undefined) return "the pull request has no comment of ours to change";
    const text = `${COMMENT_MARKER}\n${said}`;
    const written =
      found === undefined
        ? await call(github, "POST", `/issues/${pr}/comments`, { body: { body: text } })
        : await call(github, "PATCH", `/issues/comments/${found.id}`, { body: { body: text } });
    if (written.status === 403)
      return "no comment on the pull request: the token cannot write pull requests (grant pull-requests: write to have one)";
    if (written.status >= 300) return `no comment on the pull request: GitHub answered ${written.status}`;
    return found === undefined ? "the pull request's comment was made" : "the pull request's comment was updated";
  } catch (err) {
    return `no comment on the pull request: ${printable(messageOf(err))}`;
  }
}
