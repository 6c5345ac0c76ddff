// The PR database action (actions/pr-database), as a user's repository uses it, in the workflow
// runner with the action read from this checkout (the lab: test/support/lab/prDatabase.ts): the
// example's workflow at most 20 lines; open, push, a second repository's PR of the same number, the
// nightly pause and sweep, an expired fork destroyed at night, close. Each in a repository of its
// own: prDatabaseRepositories.e2e.test.ts; the golden fork: prDatabaseGolden.e2e.test.ts and
// prDatabaseGoldenRefresh.e2e.test.ts (four suites, so that jest runs them on its workers side by
// side).
import * as fs from "fs";
import * as path from "path";
import { PERSONAL_TABLE } from "../../simulator/databases";
import {
  api,
  downloads,
  EXAMPLE,
  forksNamed,
  ids,
  prDatabaseLab,
  PRODUCTION,
  psql,
  pullRequest,
  ran,
  releasedArchive,
  repositories,
  RULES,
  sh,
  sim,
  trigger,
  userRepository,
  VERSION,
  WORKFLOW,
} from "../support/lab/prDatabase";

jest.setTimeout(300_000);
prDatabaseLab("pr-database.e2e");

test("the user's workflow is at most 20 lines, hands the action no secret it does not need, and the repository holds nothing else but the rules file", () => {
  const text = fs.readFileSync(path.join(EXAMPLE, WORKFLOW), "utf8");
  expect(text.trimEnd().split("\n").length).toBeLessThanOrEqual(20);
  expect(text).not.toMatch(/toJSON\(\s*secrets\s*\)/);
  expect([...text.matchAll(/secrets\.(\w+)/g)].map((m) => m[1]).sort()).toEqual([
    "PULUMI_BACKEND_URL",
    "PULUMI_CONFIG_PASSPHRASE",
    "TIGER_PUBLIC_KEY",
    "TIGER_SECRET_KEY",
  ]);
  expect(sh(userRepository("acme/layout"), "ls-files").trim().split("\n").sort()).toEqual([RULES, WORKFLOW].sort());
});

let shopFork: string;
let shopUrl: string;

test("PR opened: a fork, masked before its URL is handed out (no production value of a masked column), jobs paused; DATABASE_URL masked in the log; pushed again: the same fork", async () => {
  expect(downloads()).toEqual([]);
  const opened = await trigger("acme/shop", pullRequest("acme/shop", 7, "opened"));
  // The first job installed the plugin as a user's runner does: downloaded from the release.
  expect(downloads()).toEqual([{ method: "GET", path: `/releases/download/v${VERSION}/${releasedArchive()}` }]);
  const url = opened.exported.DATABASE_URL ?? "";
  expect(url).toMatch(/^postgresql:\/\/tsdbadmin:.+@.+\/tsdb\?sslmode=require$/);
  const password = decodeURIComponent(new URL(url).password);
  expect(opened.masked).toEqual(expect.arrayContaining([url, password]));
  expect(opened.log).not.toContain(url);
  expect(opened.log).not.toContain(password);
  const made = forksNamed("pr-7.acme.shop");
  expect(made.map((s) => s.status)).toEqual(["READY"]);
  shopFork = made[0]!.service_id;
  shopUrl = url;
  expect(opened.log).toContain(`fork ${shopFork} is ready: DATABASE_URL is set`);
  const values = (await psql(url, `SELECT concat_ws('|', email, full_name, api_token) FROM ${PERSONAL_TABLE}`)).split(/[\n|]/);
  for (const value of PRODUCTION) expect(values).not.toContain(value);
  expect(await psql(url, "SELECT count(*) FROM timescaledb_information.jobs WHERE scheduled AND job_id >= 1000")).toBe("0");
  expect(await psql(url, "SELECT count(*) FROM pr_database")).toBe("0");

  const pushed = await trigger("acme/shop", pullRequest("acme/shop", 7, "synchronize"));
  expect(forksNamed("pr-7.acme.shop").map((s) => s.service_id)).toEqual([shopFork]);
  expect(pushed.exported.DATABASE_URL).toBe(url);
  expect(sim.requests("forkService")).toHaveLength(1);
  // The push's job used the plugin the first installed: no second download.
  expect(downloads()).toHaveLength(1);
});

test("another repository's PR 7, forking the same service: a fork of its own, never the first repository's", async () => {
  const web = await trigger("acme/web", pullRequest("acme/web", 7, "opened"));
  const webForks = forksNamed("pr-7.acme.web");
  expect(webForks).toHaveLength(1);
  expect(webForks[0]!.service_id).not.toBe(shopFork);
  expect(web.exported.DATABASE_URL).not.toBe(shopUrl);
  expect(forksNamed("pr-7.acme.shop").map((s) => s.status)).toEqual(["READY"]);
});

test("nightly: this repository's PR forks paused (the other repository's left running; a PR's own rules kept, though main's differ), then the sweep deletes an old fork no stack holds, named like the pipeline's", async () => {
  const leftBehind = sim.outOfBand.addFork(ids.projectId, ids.serviceId, {
    name: "pr-3.acme.shop",
    createdAt: new Date(Date.now() - 10 * 86_400_000),
  });
  // main's rules now differ from those the PR's fork was prepared with: the night pauses it all the same, never replaces it.
  const repo = repositories.get("acme/shop") as string;
  const rules = fs.readFileSync(path.join(repo, RULES), "utf8");
  fs.writeFileSync(path.join(repo, RULES), rules.replace("chars: 8", "chars: 6"));
  sh(repo, "commit", "--quiet", "-am", "rules changed on main");
  const nightly = await trigger("acme/shop", { name: "schedule", cron: "0 20 * * 1-5" });
  expect(forksNamed("pr-7.acme.shop").map((s) => s.service_id)).toEqual([shopFork]);
  expect(sim.service(ids.projectId, shopFork)?.status).toMatch(/^PAUS/);
  fs.writeFileSync(path.join(repo, RULES), rules);
  sh(repo, "commit", "--quiet", "-am", "rules as the PR has them");
  expect(forksNamed("pr-7.acme.web").map((s) => s.status)).toEqual(["READY"]);
  expect(nightly.log).toContain(`DELETE fork ${leftBehind} "pr-3.acme.shop": no stack holds it`);
  expect(nightly.log).toContain(`keep fork ${shopFork} "pr-7.acme.shop": held by stack pr-7.acme.shop`);
  // The night's summary lists this repository's forks only: acme/web's, of the same source, are counted.
  expect(nightly.summary).toContain(`| fork \`${shopFork}\` pr-7.acme.shop | keep |`);
  expect(nightly.summary).not.toContain("pr-7.acme.web");
  expect(nightly.summary).toMatch(/\d+ fork\(s\) of this source not named like pr-\*\.acme\.shop .* left alone, not listed/);
  expect(sim.service(ids.projectId, leftBehind)?.status).toMatch(/^DELET/);
  // The PR's comment says the night paused its database, above what it said of it.
  const comment = () => api.comments.find((c) => c.repository === "acme/shop" && c.issue === 7 && c.user.type === "Bot")?.body ?? "";
  expect(comment()).toMatch(/^<!-- tigercloud-pr-database -->\n> \*\*At night\*\*: paused \d{4}-\d\d-\d\dT.*the next push starts it/);
  expect(comment()).toContain("### Database for this pull request: `pr-7.acme.shop`");
  // The PR's next push starts its fork again, and the comment no longer says it is paused.
  await trigger("acme/shop", pullRequest("acme/shop", 7, "synchronize"));
  expect(sim.service(ids.projectId, shopFork)?.status).toBe("READY");
  expect(comment()).not.toContain("At night");
});

test("a fork that has expired: the night's sweep destroys its stack, and with it the fork, though its PR is open", async () => {
  const opened = await trigger("acme/ops", pullRequest("acme/ops", 5, "opened"));
  const [made] = forksNamed("pr-5.acme.ops");
  expect(made?.status).toBe("READY");
  // The SQL file's dollar signs reached the database as written.
  const url = opened.exported.DATABASE_URL ?? "";
  expect(await psql(url, "SELECT column_default FROM information_schema.columns WHERE table_name = 'dollar_quoted'")).toBe(
    "'${kept} $$1'::text",
  );
  const nightly = await trigger("acme/ops", { name: "schedule", cron: "0 20 * * 1-5" });
  expect(nightly.log).toContain(`DESTROY stack pr-5.acme.ops: fork ${made!.service_id} expired at 2026-01-01T00:00:00.000Z`);
  expect(nightly.log).toMatch(/EXPIRED \d+d \d+h ago/);
  expect(sim.service(ids.projectId, made!.service_id)?.status).toMatch(/^DELET/);
  // The PR's comment, which offered the database, says the sweep destroyed it.
  expect(api.comments.find((c) => c.repository === "acme/ops" && c.issue === 5 && c.user.type === "Bot")?.body).toMatch(
    /> \*\*At night\*\*: the sweep destroyed this database .*the next push makes a new one/,
  );
  // The other repositories' forks, in the same backend, are theirs to sweep.
  expect(forksNamed("pr-7.acme.web").map((s) => s.status)).toEqual(["READY"]);
});

test("PR closed: its fork deleted and its stack removed; the other repository's untouched; closed again: nothing to do", async () => {
  const closed = await trigger("acme/shop", pullRequest("acme/shop", 7, "closed"));
  expect(closed.log).toContain("pull request #7: its fork deleted, stack pr-7.acme.shop removed");
  expect(api.comments.filter((c) => c.repository === "acme/shop" && c.issue === 7).map((c) => c.body)).toEqual([
    expect.stringContaining("### Database for this pull request: deleted"),
  ]);
  expect(sim.service(ids.projectId, shopFork)?.status).toMatch(/^DELET/);
  expect(forksNamed("pr-7.acme.web").map((s) => s.status)).toEqual(["READY"]);
  const again = await trigger("acme/shop", pullRequest("acme/shop", 7, "closed"));
  expect(again.log).toContain("no stack pr-7.acme.shop: nothing to delete");
  await trigger("acme/web", pullRequest("acme/web", 7, "closed"));
  expect(forksNamed("pr-7.acme.web").map((s) => s.status)).toEqual(["DELETED"]);
});

test("every job of the suite ran on the plugin the first job downloaded: one download in all", () => {
  // The suite's last test: every repository's jobs have run.
  expect(ran.length).toBeGreaterThanOrEqual(10);
  expect(downloads()).toHaveLength(1);
});
