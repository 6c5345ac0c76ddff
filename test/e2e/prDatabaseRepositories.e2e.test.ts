// The PR database action (actions/pr-database), each case in a user's repository of its own (the
// lab: test/support/lab/prDatabase.ts): a pull request whose head drops a masking rule, one from
// another repository with no variable and no secret, a closed pull request's stack swept at night,
// a rule naming no column, the pull request's one comment.
import { customerRow, PERSONAL_ROWS, PERSONAL_TABLE } from "../../simulator/databases";
import {
  api,
  changeRules,
  downloads,
  forksNamed,
  ids,
  prDatabaseLab,
  psql,
  pullRequest,
  ran,
  repositories,
  runnerOf,
  sh,
  sim,
  trigger,
} from "../support/lab/prDatabase";

jest.setTimeout(300_000);
prDatabaseLab("pr-database-repositories.e2e");

test("a PR whose head drops a masking rule gets a database masked by its base's rules, and a notice that its rules take effect once merged", async () => {
  const repo = "acme/rules";
  runnerOf(repo);
  changeRules(repo, "drop-email", (rules) => rules.replace(/^ {2}- \{ table: customers, column: email.*\n/m, ""), "email unmasked");
  const job = await trigger(repo, pullRequest(repo, 11, "opened", { branch: "drop-email" }));
  const url = job.exported.DATABASE_URL ?? "";
  const emails = (await psql(url, `SELECT email FROM ${PERSONAL_TABLE}`)).split("\n");
  expect(emails.length).toBe(PERSONAL_ROWS);
  for (const row of Array.from({ length: PERSONAL_ROWS }, (_, i) => customerRow(i + 1))) expect(emails).not.toContain(row.email);
  expect(job.annotations).toContainEqual(
    expect.objectContaining({
      level: "notice",
      title: "The rules file changes",
      message: expect.stringContaining("take effect once it is merged"),
    }),
  );
  expect(job.summary).toContain("This pull request changes .github/pr-database.yml: its rules take effect once it is merged");
  expect(job.summary).toContain("`public.customers.email` (email)");
});

test("a PR from another repository, whose runs GitHub gives no variable and no secret: no database, a notice says why and what a maintainer can do, and the job succeeds", async () => {
  const repo = "acme/public";
  runnerOf(repo, true);
  const before = sim.requests("forkService").length;
  const job = await trigger(repo, pullRequest(repo, 8, "opened", { fromFork: true }));
  const notice = job.annotations.find((a) => a.title === "No database for this pull request");
  expect(notice?.level).toBe("notice");
  expect(notice?.message).toContain("no secrets and no variables");
  expect(notice?.message).toContain("A maintainer can push its branch to this repository");
  expect(job.annotations.filter((a) => a.level === "error")).toEqual([]);
  expect(job.summary).toContain("### No database for this pull request");
  expect(sim.requests("forkService")).toHaveLength(before);
});

test("the nightly sweep destroys a closed PR's stack (its close job never ran), asking GitHub with the job's own token, and its summary says what it kept and destroyed and why", async () => {
  const repo = "acme/closed";
  await trigger(repo, pullRequest(repo, 4, "opened"));
  const [fork] = forksNamed("pr-4.acme.closed");
  // Closed, and its close job lost: the night finds the stack of a closed pull request.
  api.pullRequestEvent(repo, 4, "closed");
  const nightly = await trigger(repo, { name: "schedule", cron: "0 20 * * 1-5" });
  expect(api.requests).toContainEqual({ method: "GET", path: `/repos/${repo}/pulls/4`, status: 200 });
  expect(nightly.log).toContain("DESTROY stack pr-4.acme.closed: pull request #4 is closed");
  expect(sim.service(ids.projectId, fork!.service_id)?.status).toMatch(/^DELET/);
  expect(nightly.summary).toContain("| `pr-4.acme.closed` | paused |");
  expect(nightly.summary).toMatch(
    /\| stack `pr-4\.acme\.closed` \| destroy stack \| pull request #4 is closed.*\| stack pr-4\.acme\.closed destroyed and removed \|/,
  );
  expect(nightly.summary).toMatch(new RegExp(`\\| fork \`${fork!.service_id}\` pr-4\\.acme\\.closed \\| keep \\|`));
});

test("a rule naming no column: no fork left running, an annotation naming the rule and what to fix; the rule fixed on main, the next push prepares the same fork", async () => {
  const repo = "acme/bad";
  runnerOf(repo);
  const bad = '  - { table: customers, column: phone, with: "null" }\n';
  changeRules(repo, "main", (rules) => rules.replace(/^(mask:\n)/m, `$1${bad}`), "phone masked");
  const failed = await trigger(repo, pullRequest(repo, 6, "opened"), 1);
  const [fork] = forksNamed("pr-6.acme.bad");
  expect(sim.service(ids.projectId, fork!.service_id)?.status).toMatch(/^PAUS/);
  expect(failed.exported.DATABASE_URL).toBeUndefined();
  const error = failed.annotations.find((a) => a.level === "error");
  expect(error?.message).toContain("mask[0] of .github/pr-database.yml: prepare.mask[0] (customers.phone, with null)");
  expect(error?.message).toContain("public.customers has no column phone");
  expect(error?.message).toContain("fix it on main");
  const comment = () => api.comments.filter((c) => c.repository === repo && c.issue === 6).map((c) => c.body);
  expect(comment()).toEqual([expect.stringContaining("Its preparation failed: mask[0] of .github/pr-database.yml")]);
  changeRules(repo, "main", (rules) => rules.replace(bad, ""), "phone is not a column");
  const fixed = await trigger(repo, pullRequest(repo, 6, "synchronize"));
  expect(forksNamed("pr-6.acme.bad").map((s) => [s.service_id, s.status])).toEqual([[fork!.service_id, "READY"]]);
  expect(comment()).toEqual([expect.stringContaining("### Database for this pull request: `pr-6.acme.bad`")]);
  const emails = await psql(
    fixed.exported.DATABASE_URL ?? "",
    `SELECT count(*) FROM ${PERSONAL_TABLE} WHERE email LIKE '%@example.invalid'`,
  );
  expect(emails).toBe(String(PERSONAL_ROWS));
});

test("the PR's comment: made once, found again by its marker and updated on the next push (a person's comment left alone), with nothing secret", async () => {
  const repo = "acme/comment";
  runnerOf(repo);
  api.commentAsUser(repo, 21, "Looks good; <!-- tigercloud-pr-database --> quoted");
  changeRules(repo, "feature", (rules) => rules, "first push");
  const opened = await trigger(repo, pullRequest(repo, 21, "opened", { branch: "feature" }));
  const ours = () => api.comments.filter((c) => c.repository === repo && c.issue === 21 && c.user.type === "Bot");
  expect(ours()).toHaveLength(1);
  const first = ours()[0]!.body;
  expect(first).toContain("### Database for this pull request: `pr-21.acme.comment`");
  expect(first).toContain("`public.customers.full_name` (keepFirst):");
  expect(first).toMatch(/\| Jobs paused \| \d+/);
  expect(first).toMatch(/\| Expires \| \d{4}-\d\d-\d\dT/);
  const url = opened.exported.DATABASE_URL ?? "";
  expect(first).not.toContain(url);
  expect(first).not.toContain(decodeURIComponent(new URL(url).password));
  changeRules(repo, "feature", (rules) => rules, "second push");
  const headNow = sh(repositories.get(repo), "rev-parse", "feature").trim();
  await trigger(repo, pullRequest(repo, 21, "synchronize", { branch: "feature" }));
  expect(ours()).toHaveLength(1);
  expect(ours()[0]!.body).toContain(`for ${headNow.slice(0, 7)}`);
  expect(api.requests.filter((r) => r.method === "PATCH" && r.path.startsWith(`/repos/${repo}/`))).toHaveLength(1);
  expect(api.comments.filter((c) => c.repository === repo && c.issue === 21 && c.user.type === "User")[0]?.body).toBe(
    "Looks good; <!-- tigercloud-pr-database --> quoted",
  );
});

test("every job of the suite ran on the plugin the first job downloaded: one download in all", () => {
  // The suite's last test: every repository's jobs have run.
  expect(ran.length).toBeGreaterThanOrEqual(8);
  expect(downloads()).toHaveLength(1);
});
