// Whether a pull request is still open, from GitHub's REST API (GITHUB_API_URL, as Actions sets
// it, and a token that may read pull requests). Any failure is "unknown", never "closed".
import { z } from "zod";
import { messageOf } from "../provider/text";

export type PullState = "open" | "closed" | { unknown: string };

const PullSchema = z.looseObject({ state: z.enum(["open", "closed"]) });

export interface GitHubAccess {
  apiUrl: string;
  token: string;
}

export async function pullRequestState(github: GitHubAccess, repository: string, number: number): Promise<PullState> {
  const url = `${github.apiUrl.replace(/\/+$/, "")}/repos/${repository}/pulls/${number}`;
  try {
    const res = await fetch(url, {
      headers: { Authorization: `Bearer ${github.token}`, Accept: "application/vnd.github+json", "User-Agent": "tigercloud-forks" },
      signal: AbortSignal.timeout(30_000),
    });
    const text = await res.text();
    if (!res.ok) {
      const hint = res.status === 403 || res.status === 404 ? " (does the token have pull-requests: read?)" : "";
      return { unknown: `GitHub answered ${res.status} for pull request #${number} of ${repository}${hint}` };
    }
    const parsed = PullSchema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data.state : { unknown: `GitHub's answer for pull request #${number} has no state open or closed` };
  } catch (err) {
    return { unknown: `GitHub could not be asked about pull request #${number}: ${messageOf(err)}` };
  }
}
