// The PR database action with golden: true (the lab: test/support/lab/prDatabase.ts): production
// masked once a night into a golden fork, and every PR's database forked from it; a refresh by hand
// from a branch. What goes wrong with a refresh, and the PRs it meets then, is
// prDatabaseGoldenRefresh.e2e.test.ts. One behaviour a test, in order: each goes on from the state
// the one before it left.
import * as fs from "fs";
import * as path from "path";
import { PERSONAL_ROWS, PERSONAL_TABLE } from "../../simulator/databases";
import {
  downloads,
  forksNamed,
  ids,
  prDatabaseLab,
  PRODUCTION,
  psql,
  pullRequest,
  ran,
  repositories,
  RULES,
  runnerOf,
  sh,
  sim,
  trigger,
  WITH,
  WORKFLOW,
  goldenOf,
} from "../support/lab/prDatabase";

jest.setTimeout(300_000);
prDatabaseLab("pr-database-golden.e2e");

describe("golden: true, production masked once a night and every PR's database forked from it", () => {
  const repo = "acme/golden";
  const { goldenForks, serving, night } = goldenOf(repo);
  let golden: string;
  let prFork: string;
  let prUrl: string;

  test("the night makes a golden fork of production, masked, checked and stopped (two nights at once take turns)", async () => {
    WITH[repo] = ["golden: true"];
    runnerOf(repo);
    // Two nights at once (a manual run beside the schedule): the stack's lock makes one wait; one golden fork serves after.
    const both = await Promise.all([night(), night()]);
    expect(both.map((n) => n.log).join("\n")).toContain(`another run holds stack golden-${ids.serviceId}.acme.golden`);
    // The suite's first jobs, at once on a fresh runner: each downloaded the plugin, none had installed it yet.
    expect(downloads()).toHaveLength(2);
    const [made] = serving();
    expect(serving()).toHaveLength(1);
    expect(made?.forked_from?.service_id).toBe(ids.serviceId);
    expect(made?.status).toMatch(/^PAUS/);
    golden = made!.service_id;
    for (const g of goldenForks()) if (g.service_id !== golden) expect(g.status).toMatch(/^DELET/);
    const nightly = both.find((n) => n.summary.includes(`| Serving now | \`${golden}\``)) ?? both[0]!;
    expect(nightly.summary).toContain("### The golden fork: refreshed");
    expect(nightly.summary).toContain(`| Serving now | \`${golden}\``);
    // The sweep lists it, held by its stack: never swept.
    expect(nightly.log).toContain(`keep fork ${golden} "${made!.name}": held by stack golden-${ids.serviceId}.acme.golden`);
  });

  test("a PR's database is forked from the golden fork, masks nothing itself and shows no production value", async () => {
    const opened = await trigger(repo, pullRequest(repo, 31, "opened"));
    const [fork] = forksNamed("pr-31.acme.golden");
    expect(fork?.forked_from?.service_id).toBe(golden);
    expect(fork?.status).toBe("READY");
    prFork = fork!.service_id;
    prUrl = opened.exported.DATABASE_URL ?? "";
    expect(opened.log).toContain(`a fork of golden fork ${golden}`);
    // requireMasking's note on a fork of a fork with no rule of its own: one engine run, so one
    // warning in the engine's diagnostics (which also shows it on the stack's progress line).
    const note = `\n    warning: [tigercloud] ServiceFork: fork "pr-31.acme.golden" of service ${golden} declares no masking rule`;
    expect(opened.log.split(note)).toHaveLength(2);
    expect(opened.summary).toContain(`of golden fork \`${golden}\``);
    expect(opened.summary).toContain("nothing masked in this job");
    expect(opened.summary).toMatch(/its data as of \d{4}-\d\d-\d\dT[^|]+\(0 h \d+ min old\)/);
    const values = (await psql(prUrl, `SELECT concat_ws('|', email, full_name, api_token) FROM ${PERSONAL_TABLE}`)).split(/[\n|]/);
    expect(values.length).toBe(PERSONAL_ROWS * 3);
    for (const value of PRODUCTION) expect(values).not.toContain(value);
    // The golden fork's jobs were paused when it was made: its copies are.
    expect(await psql(prUrl, "SELECT count(*) FROM timescaledb_information.jobs WHERE scheduled AND job_id >= 1000")).toBe("0");
  });

  test("a refresh started by hand on a branch whose rules mask less replaces the golden fork by main's rules (the old one deleted)", async () => {
    const dir = repositories.get(repo) as string;
    const main = sh(dir, "rev-parse", "main").trim();
    sh(dir, "checkout", "--quiet", "-b", "weaker");
    const edit = (file: string, change: (text: string) => string) =>
      fs.writeFileSync(path.join(dir, file), change(fs.readFileSync(path.join(dir, file), "utf8")));
    edit(WORKFLOW, (text) => text.replace(/^on:\n/m, "on:\n  workflow_dispatch: {}\n"));
    edit(RULES, (text) => text.replace(/^ {2}- \{ table: customers, column: email,.*\n/m, ""));
    expect(fs.readFileSync(path.join(dir, RULES), "utf8")).not.toContain("column: email");
    sh(dir, "commit", "--quiet", "-am", "a manual refresh; email unmasked");
    sh(dir, "checkout", "--quiet", "main");
    const nightly = await trigger(repo, { name: "workflow_dispatch", workflow: path.basename(WORKFLOW), branch: "weaker" });
    expect(nightly.annotations).toContainEqual(
      expect.objectContaining({ level: "notice", title: "The golden fork takes the default branch's rules" }),
    );
    expect(nightly.summary).toContain(`at ${main.slice(0, 7)} |`);
    const [fresh] = serving();
    expect(serving()).toHaveLength(1);
    expect(fresh!.service_id).not.toBe(golden);
    expect(sim.service(ids.projectId, golden)?.status).toMatch(/^DELET/);
    expect(nightly.summary).toMatch(new RegExp(`\\| Replaced \\| \`${golden}\`.*deleted`));
    golden = fresh!.service_id;
  });

  test("after the golden fork was replaced, the open PR's database keeps working (its next push starts the same fork) and a new PR's is forked from the new one, masked", async () => {
    const pushed = await trigger(repo, pullRequest(repo, 31, "synchronize"));
    expect(forksNamed("pr-31.acme.golden").map((s) => [s.service_id, s.status])).toEqual([[prFork, "READY"]]);
    expect(pushed.exported.DATABASE_URL).toBe(prUrl);
    expect(await psql(prUrl, `SELECT count(*) FROM ${PERSONAL_TABLE}`)).toBe(String(PERSONAL_ROWS));
    const next = await trigger(repo, pullRequest(repo, 32, "opened"));
    expect(forksNamed("pr-32.acme.golden")[0]?.forked_from?.service_id).toBe(golden);
    expect(next.summary).toContain(`of golden fork \`${golden}\``);
    const url = next.exported.DATABASE_URL ?? "";
    const values = (await psql(url, `SELECT concat_ws('|', email, full_name, api_token) FROM ${PERSONAL_TABLE}`)).split(/[\n|]/);
    expect(values.length).toBe(PERSONAL_ROWS * 3);
    for (const value of PRODUCTION) expect(values).not.toContain(value);
  });
});

test("every job of the suite after its first two (at once) ran on the plugin they downloaded: no download after theirs", () => {
  // The suite's last test: every job has run.
  expect(ran.filter((j) => j.repository === "acme/golden").length).toBeGreaterThan(5);
  expect(downloads()).toHaveLength(2);
});
