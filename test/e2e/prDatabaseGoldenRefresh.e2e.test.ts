// The PR database action with golden: true (the lab: test/support/lab/prDatabase.ts), when a
// refresh goes wrong: a refresh that fails, rules changed since the golden fork was made, a refresh
// the API refuses, a PR's rules changed on main, a PR whose first up forked nothing, a PR into
// another branch, and the next good night. The golden fork made and used as it should be is
// prDatabaseGolden.e2e.test.ts. One behaviour a test, in order: each goes on from the state the one
// before it left.
import * as fs from "fs";
import * as path from "path";
import { PERSONAL_ROWS, PERSONAL_TABLE } from "../../simulator/databases";
import {
  changeRules,
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
  sim,
  trigger,
  WITH,
  goldenOf,
} from "../support/lab/prDatabase";

jest.setTimeout(300_000);
prDatabaseLab("pr-database-golden-refresh.e2e");

describe("golden: true, when a refresh goes wrong", () => {
  const repo = "acme/golden";
  const { serving, night } = goldenOf(repo);
  let golden: string;

  test("a first night makes the golden fork the nights below start from, stopped", async () => {
    WITH[repo] = ["golden: true"];
    runnerOf(repo);
    const nightly = await night();
    const [made] = serving();
    expect(serving()).toHaveLength(1);
    expect(made?.status).toMatch(/^PAUS/);
    golden = made!.service_id;
    expect(nightly.summary).toContain(`| Serving now | \`${golden}\``);
  });

  /** The rules file as it was before the failing refresh's rule. */
  let good: string;
  /** The golden forks the failing refresh left, stopped. */
  let others: ReturnType<typeof serving>;
  let fromGolden: ReturnType<typeof forksNamed>[number] | undefined;

  test("a refresh that fails leaves yesterday's golden fork serving, says so in the job's summary, and leaves nothing running", async () => {
    const dir = repositories.get(repo) as string;
    good = fs.readFileSync(path.join(dir, RULES), "utf8");
    changeRules(
      repo,
      "main",
      (rules) => rules.replace(/^(mask:\n)/m, '$1  - { table: customers, column: phone, with: "null" }\n'),
      "phone",
    );
    const failed = await night(1);
    expect(failed.summary).toContain("### The golden fork: refresh FAILED");
    expect(failed.summary).toContain(`Yesterday's golden fork \`${golden}\``);
    // The rule and its cause, in the rules file's words, not the engine's last line ("update failed").
    expect(failed.annotations).toContainEqual(
      expect.objectContaining({
        level: "error",
        title: "Golden fork not refreshed",
        message: expect.stringMatching(
          /^mask\[0\] of \S+: prepare\.mask\[0\] \(customers\.phone, with null\): public\.customers has no column phone\./,
        ),
      }),
    );
    expect(failed.summary).toContain("public.customers has no column phone");
    expect(sim.service(ids.projectId, golden)?.status).toMatch(/^PAUS/);
    // The new one that failed its preparation is stopped, not running; the next good night deletes it.
    others = serving().filter((s) => s.service_id !== golden);
    expect(others.map((s) => s.status)).toEqual([expect.stringMatching(/^PAUS/)]);
  });

  test("a PR whose base's rules changed since the golden fork was made is forked from production and masked by them in its job (which fail here: it is stopped)", async () => {
    // Yesterday's golden fork lacks today's rule: a new PR's database is production's, masked by the
    // base's rules in its job (which name no column here: it fails, and is stopped).
    const refused = await trigger(repo, pullRequest(repo, 33, "opened"), 1);
    expect(refused.annotations).toContainEqual(
      expect.objectContaining({ level: "notice", title: "The rules changed since the golden fork was made" }),
    );
    expect(refused.annotations).toContainEqual(expect.objectContaining({ level: "error", message: expect.stringContaining("mask[0] of") }));
    expect(forksNamed("pr-33.acme.golden").map((s) => [s.forked_from?.service_id, s.status])).toEqual([
      [ids.serviceId, expect.stringMatching(/^PAUS/)],
    ]);
  });

  test("a refresh the API refuses: yesterday's golden fork still serves new PRs", async () => {
    // The rules as they were, and a refresh the API refuses: yesterday's still serves new PRs.
    changeRules(repo, "main", () => good, "phone is not a column");
    sim.injectFault("forkService", { kind: "status", status: 400 });
    const refusedNight = await night(1);
    sim.clearFaults();
    expect(refusedNight.summary).toContain(`Yesterday's golden fork \`${golden}\``);
    await trigger(repo, pullRequest(repo, 34, "opened"));
    [fromGolden] = forksNamed("pr-34.acme.golden");
    expect(fromGolden?.forked_from?.service_id).toBe(golden);
  });

  test("a rule changed on main: the next push replaces a PR's database forked from the golden fork by one forked from production, masked by the new rules", async () => {
    // A rule changed on main: the next push replaces PR 34's database, forked from production and
    // masked by the new rules (the golden fork has the old ones), as a changed prepare would.
    changeRules(repo, "main", (rules) => rules.replace("with: keepFirst, chars: 8", "with: keepFirst, chars: 4"), "shorter names");
    const replaced = await trigger(repo, pullRequest(repo, 34, "synchronize"));
    expect(replaced.annotations).toContainEqual(
      expect.objectContaining({ level: "notice", title: "The rules changed since this database was made" }),
    );
    expect(sim.service(ids.projectId, fromGolden!.service_id)?.status).toMatch(/^DELET/);
    const live = forksNamed("pr-34.acme.golden").filter((f) => f.status === "READY");
    expect(live.map((f) => f.forked_from?.service_id)).toEqual([ids.serviceId]);
    const names = (await psql(replaced.exported.DATABASE_URL ?? "", `SELECT DISTINCT length(full_name) FROM ${PERSONAL_TABLE}`)).split(
      "\n",
    );
    expect(names).toEqual(["4"]);
  });

  test("a PR whose first up fails before forking holds no fork", async () => {
    // A PR whose first up failed before forking holds no fork (the next good night pauses nothing there, and forks nothing).
    sim.injectFault("forkService", { kind: "status", status: 400 });
    await trigger(repo, pullRequest(repo, 35, "opened"), 1);
    sim.clearFaults();
    expect(forksNamed("pr-35.acme.golden")).toEqual([]);
  });

  test("a PR into another branch, whose rules anyone who can push it may weaken, gets the golden fork, masked by main's rules", async () => {
    changeRules(repo, "weaker-base", (rules) => rules.replace(/^ {2}- \{ table: customers, column: email,.*\n/m, ""), "email unmasked");
    const intoBranch = await trigger(repo, pullRequest(repo, 36, "opened", { branch: "weaker-base", base: "weaker-base" }));
    expect(forksNamed("pr-36.acme.golden").map((f) => f.forked_from?.service_id)).toEqual([golden]);
    const shown = (await psql(intoBranch.exported.DATABASE_URL ?? "", `SELECT email FROM ${PERSONAL_TABLE}`)).split("\n");
    expect(shown).toHaveLength(PERSONAL_ROWS);
    for (const value of PRODUCTION) expect(shown).not.toContain(value);
  });

  test("the next good night replaces the golden fork, deletes the failed refresh's, pauses nothing for the PR that holds no fork and forks nothing for it, and leaves a PR's production source as it was", async () => {
    const goodNight = await night();
    expect(goodNight.log).toContain("stack pr-35.acme.golden holds no fork: nothing to pause");
    expect(forksNamed("pr-35.acme.golden")).toEqual([]);
    expect(serving()).toHaveLength(1);
    expect(serving()[0]!.service_id).not.toBe(golden);
    for (const s of others) expect(sim.service(ids.projectId, s.service_id)?.status).toMatch(/^DELET/);
    // PR 33's stack, whose first up failed, kept its source (production) through the night: no new fork.
    expect(forksNamed("pr-33.acme.golden").map((s) => s.forked_from?.service_id)).toEqual([ids.serviceId]);
  });
});

test("every job of the suite ran on the plugin the first job downloaded: one download in all", () => {
  // The suite's last test: every job has run.
  expect(ran.filter((j) => j.repository === "acme/golden").length).toBeGreaterThan(5);
  expect(downloads()).toHaveLength(1);
});
