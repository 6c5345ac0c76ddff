// The PR database action's pure parts: what an event asks for (read before any input), the inputs'
// rules, where a failed preparation step is in the rules file, and text from outside in Markdown.
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { readInputs, settingsOf, whatToDo } from "../../../prDatabase/inputs";
import { cell, preparationFailure, prFix } from "../../../prDatabase/report";
import type { Rules } from "../../../prDatabase/rules";

let dir: string;
beforeAll(() => (dir = fs.mkdtempSync(path.join(os.tmpdir(), "pr-database-unit-"))));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
let events = 0;

function eventEnv(payload: object): NodeJS.ProcessEnv {
  const file = path.join(dir, `event-${++events}.json`);
  fs.writeFileSync(file, JSON.stringify(payload));
  return { GITHUB_REPOSITORY: "acme/shop", GITHUB_EVENT_NAME: "pull_request", GITHUB_EVENT_PATH: file };
}
const pr = (fullName: string | null, action = "opened") => ({
  action,
  number: 8,
  pull_request: {
    number: 8,
    base: { sha: "a".repeat(40), ref: "main" },
    head: { sha: "b".repeat(40), repo: fullName && { full_name: fullName } },
  },
});

test("a pull request from another repository (or a deleted one) is skipped with its reason, whatever the inputs: none is read", () => {
  for (const from of ["someone/shop", null]) {
    const todo = whatToDo(eventEnv(pr(from)));
    expect(todo.command).toBe("skip");
    expect(todo.command === "skip" && todo.why).toContain("A maintainer can push its branch to this repository");
  }
  // The same event from the repository itself needs its inputs, which an empty environment lacks.
  const own = eventEnv(pr("acme/shop"));
  expect(whatToDo(own)).toMatchObject({ command: "up", pr: 8, commits: { base: { sha: "a".repeat(40), ref: "main" } } });
  expect(() => readInputs(own)).toThrow(
    /source-service-id must be a service ID.*tiger-public-key is empty.*tiger-secret-key is empty.*state backend/,
  );
});

test("each input is named by the rule it breaks; the secrets reach the CLI under their own names only", () => {
  const env = {
    INPUT_SOURCE_SERVICE_ID: "svc-1",
    INPUT_TIGER_PUBLIC_KEY: "pub",
    INPUT_TIGER_SECRET_KEY: "sec",
    INPUT_PULUMI_BACKEND_URL: "file:///tmp/state",
    INPUT_VERSION: "0.1.0",
  };
  expect(() => readInputs(env)).toThrow("pulumi-config-passphrase is empty: a backend of your own (pulumi-backend-url)");
  expect(() => readInputs({ ...env, INPUT_PULUMI_CONFIG_PASSPHRASE: "p", INPUT_RULES_FROM: "branch" })).toThrow(
    'rules-from must be "base" (the default) or "head"',
  );
  const inputs = readInputs({ ...env, INPUT_PULUMI_CONFIG_PASSPHRASE: "p", INPUT_GITHUB_TOKEN: "ghs_x" });
  expect(inputs["rules-from"]).toBe("base");
  expect(settingsOf(inputs)).toEqual({
    TIGER_PUBLIC_KEY: "pub",
    TIGER_SECRET_KEY: "sec",
    PULUMI_BACKEND_URL: "file:///tmp/state",
    PULUMI_CONFIG_PASSPHRASE: "p",
    GITHUB_TOKEN: "ghs_x",
  });
});

const RULES: Rules = {
  file: ".github/pr-database.yml",
  sha: "a".repeat(40),
  preparation: {},
  inlineSql: 1,
  sqlFiles: ["seed.sql"],
  texts: [],
};

test("a failed preparation's annotation names the rule in the rules file (a SQL file's text by its file), and where to fix it", () => {
  const said = (step: string) =>
    `error: Preparing fork svc-1 failed at ${step}: public.customers has no column phone. Nothing of its SQL and masking was kept (one transaction, rolled back). The fork is recorded and its connection strings are not published. Fix prepare and run \`pulumi up\` again: it prepares the fork then. Fork svc-1 was stopped meanwhile`;
  expect(preparationFailure(said("prepare.mask[2] (customers.phone, with null)"), RULES, prFix("base", "main"))).toBe(
    "mask[2] of .github/pr-database.yml: prepare.mask[2] (customers.phone, with null): public.customers has no column phone. Fork svc-1 is stopped and its URL was never handed out; fix it on main (the rules are read from the pull request's base), then push again: the next run prepares the same fork.",
  );
  expect(preparationFailure(said("prepare.sql[1] (CREATE ...)"), RULES, prFix("head", "main"))).toMatch(
    /^sqlFiles seed\.sql of \.github\/pr-database\.yml: .*fix it in this pull request and push again/,
  );
  expect(preparationFailure("error: the backend is down", RULES, prFix("base", "main"))).toBeUndefined();
});

test("text from outside cannot break out of a Markdown cell or code span, nor move a terminal's cursor", () => {
  expect(cell("a|b`c<!--d\x1b[2J")).toBe("a'b'c'!--d\\x1b[2J");
});

describe("golden: true", () => {
  const { goldenPreparation, madeBy, prPreparationFromGolden, refreshReport, whyFailed } =
    require("../../../prDatabase/golden") as typeof import("../../../prDatabase/golden");
  const { goldenProgramText } = require("../../../prDatabase/pulumi") as typeof import("../../../prDatabase/pulumi");
  const rulesOf = (preparation: Record<string, unknown>): Rules => ({
    file: ".github/pr-database.yml",
    sha: "c".repeat(40),
    preparation,
    inlineSql: 0,
    sqlFiles: [],
    texts: [],
  });
  const mask = [{ table: "customers", column: "email", with: "email" }];

  test("the golden fork is prepared by every rule but sqlAfter, which each PR's database runs itself; no masking rule, no golden fork", () => {
    const rules = rulesOf({ mask, sql: ["CREATE TABLE t ()"], pauseJobs: true, sqlAfter: ["INSERT INTO t DEFAULT VALUES"] });
    expect(goldenPreparation(rules)).toEqual({ mask, sql: ["CREATE TABLE t ()"], pauseJobs: true });
    expect(prPreparationFromGolden(rules)).toEqual({ sqlAfter: ["INSERT INTO t DEFAULT VALUES"] });
    expect(prPreparationFromGolden(rulesOf({ mask }))).toBeUndefined();
    expect(() => goldenPreparation(rulesOf({ sql: ["SELECT 1"] }))).toThrow(
      /golden: true needs masking rules: \.github\/pr-database\.yml declares none/,
    );
  });

  test("its program declares one fork named by its generation, stopped once prepared, its outputs read from that one", () => {
    const inputs = { version: "0.1.0", "plugin-download-url": "github://api.github.com/x/y" } as Parameters<typeof goldenProgramText>[0];
    const program = JSON.parse(goldenProgramText(inputs, { mask, sql: ["SELECT '$1'"] }, "20261126-221500")) as {
      resources: Record<string, { properties: Record<string, unknown> }>;
      outputs: Record<string, string>;
    };
    expect(Object.keys(program.resources)).toEqual(["golden-20261126-221500"]);
    expect(program.resources["golden-20261126-221500"]!.properties).toMatchObject({
      paused: true,
      onDestroy: "delete",
      prepare: { sql: ["SELECT '$$1'"] },
    });
    expect(program.resources["golden-20261126-221500"]!.properties).not.toHaveProperty("expires");
    expect(program.outputs).toMatchObject({ serviceId: "${golden-20261126-221500.serviceId}", generation: "20261126-221500" });
  });

  test("a golden fork serves a PR only if made by the base's rules as they read now (sqlAfter aside): a rule added since, or a changed SQL, forks production", () => {
    const { PreparationSchema, preparationDigest } =
      require("../../../provider/resources/serviceFork/preparation/schema") as typeof import("../../../provider/resources/serviceFork/preparation/schema");
    const night = rulesOf({ mask, sql: ["CREATE TABLE t ()"], sqlAfter: ["SELECT 1"] });
    const golden = {
      stack: "s",
      serviceId: "svc-g",
      dataTakenAt: "x",
      generation: "1",
      digest: preparationDigest(PreparationSchema.parse(goldenPreparation(night))),
    };
    expect(madeBy(golden, night)).toBe(true);
    expect(madeBy(golden, rulesOf({ mask, sql: ["CREATE TABLE t ()"], sqlAfter: ["SELECT 2"] }))).toBe(true);
    expect(
      madeBy(golden, rulesOf({ mask: [...mask, { table: "customers", column: "phone", with: "null" }], sql: ["CREATE TABLE t ()"] })),
    ).toBe(false);
    expect(madeBy(golden, rulesOf({ mask, sql: ["CREATE TABLE u ()"] }))).toBe(false);
  });

  test("a refresh whose preparation failed names the rule in the rules file and PostgreSQL's cause, not the engine's last words", () => {
    const { EngineFailure } = require("../../../prDatabase/pulumi") as typeof import("../../../prDatabase/pulumi");
    const output = [
      "  pulumi-nodejs:dynamic/tigercloud:ServiceFork (golden):",
      "    error: 1 error occurred:",
      "    \t* Preparing fork svc-9 failed at prepare.mask[0] (public.customers.email, with email): statistics still hold values from before",
      "    the masking: public.customers (email). Nothing of its SQL and masking was kept (one transaction, rolled back). The fork is recorded",
      "  pulumi:pulumi:Stack (golden):",
      "    error: update failed",
    ].join("\n");
    const said = whyFailed(new EngineFailure("pulumi up failed", output), rulesOf({ mask }));
    expect(said).toMatch(
      /^mask\[0\] of \.github\/pr-database\.yml: prepare\.mask\[0\] \(public\.customers\.email, with email\): statistics still hold/,
    );
    expect(said).toContain("fix it in .github/pr-database.yml on the default branch");
    expect(said).not.toContain("update failed");
    // Anything else: the engine's own error lines, as before.
    expect(whyFailed(new EngineFailure("x", "error: the backend is down\nerror: update failed"), rulesOf({ mask }))).toBe(
      "the backend is down / update failed",
    );
  });

  test("the night's summary names the golden fork serving: the new one, or after a failure yesterday's (or none, or unknown)", () => {
    const rules = rulesOf({ mask });
    const old = { stack: "s", serviceId: "svc-old", dataTakenAt: "2026-11-25T20:00:00Z", generation: "1", digest: "d" };
    const fresh = { ...old, serviceId: "svc-new", generation: "2" };
    expect(refreshReport({ before: old, after: fresh, known: true, seconds: 12.3 }, rules)).toMatch(
      /Serving now \| `svc-new`.*\n.*\n\| Replaced \| `svc-old`, its data as of 2026-11-25T20:00:00Z: deleted/,
    );
    const failed = refreshReport({ before: old, after: old, known: true, failure: "boom | `x`", seconds: 3 }, rules);
    expect(failed).toContain("refresh FAILED");
    expect(failed).toContain("boom ' 'x'");
    expect(failed).toContain("Yesterday's golden fork `svc-old`, its data as of 2026-11-25T20:00:00Z, keeps serving");
    expect(refreshReport({ before: undefined, after: undefined, known: true, failure: "x", seconds: 1 }, rules)).toContain(
      "There is no golden fork yet",
    );
    expect(refreshReport({ before: undefined, after: undefined, known: false, failure: "x", seconds: 1 }, rules)).toContain(
      "could not be read",
    );
  });
});

describe("selecting a PR's stack while another run holds its lock", () => {
  /**
   * A `pulumi` on PATH that refuses `stack select` as the CLI does while another run holds the
   * stack's lock, the first `lockedFor` times it is run, then selects it; each run's arguments logged.
   */
  function fakePulumi(lockedFor: number): { env: NodeJS.ProcessEnv; calls: () => string[] } {
    const bin = fs.mkdtempSync(path.join(dir, "bin-"));
    const log = path.join(bin, "calls");
    fs.writeFileSync(
      path.join(bin, "pulumi"),
      [
        "#!/bin/sh",
        `echo "$*" >> "${log}"`,
        `n=$(wc -l < "${log}")`,
        `if [ "$n" -le ${lockedFor} ]; then`,
        "  echo 'error: the stack is currently locked by 1 lock(s). Either wait for the other process(es) to end or delete the lock file with `pulumi cancel`.' >&2",
        "  exit 255",
        "fi",
        "exit 0",
        "",
      ].join("\n"),
      { mode: 0o755 },
    );
    return { env: { PATH: `${bin}${path.delimiter}${process.env.PATH}` }, calls: () => fs.readFileSync(log, "utf8").trim().split("\n") };
  }

  test("waits while the lock is held and selects the stack once it is let go", async () => {
    const { selectOrCreate } = require("../../../prDatabase/pulumi") as typeof import("../../../prDatabase/pulumi");
    const { env, calls } = fakePulumi(2);
    const out = jest.spyOn(process.stdout, "write").mockImplementation(() => true);
    try {
      await selectOrCreate("pr-7.acme.shop", dir, env, { limitMs: 10_000, everyMs: 10 });
      expect(out.mock.calls.map((c) => String(c[0]))).toEqual([
        expect.stringMatching(/^another run holds stack pr-7\.acme\.shop; waiting to select it/),
        expect.stringMatching(/^another run holds stack pr-7\.acme\.shop; waiting to select it/),
      ]);
    } finally {
      out.mockRestore();
    }
    expect(calls()).toEqual(Array(3).fill("stack select --create pr-7.acme.shop --non-interactive"));
  });

  test("a lock that is never let go: a bounded wait, then an error that says how to clear it", async () => {
    const { selectOrCreate } = require("../../../prDatabase/pulumi") as typeof import("../../../prDatabase/pulumi");
    const { env, calls } = fakePulumi(1_000);
    const out = jest.spyOn(process.stdout, "write").mockImplementation(() => true);
    const failed = await selectOrCreate("pr-7.acme.shop", dir, env, { limitMs: 200, everyMs: 20 }).then(
      () => undefined,
      (e: Error) => e,
    );
    out.mockRestore();
    expect(failed?.message).toMatch(/^stack pr-7\.acme\.shop is still locked after \d+ s/);
    expect(failed?.message).toContain("pulumi cancel --stack pr-7.acme.shop --yes");
    expect(calls().length).toBeGreaterThan(1);
    expect(calls().length).toBeLessThan(50);
  });

  test("any other failure fails at once, with what pulumi said", async () => {
    const { selectOrCreate } = require("../../../prDatabase/pulumi") as typeof import("../../../prDatabase/pulumi");
    const bin = fs.mkdtempSync(path.join(dir, "bin-"));
    fs.writeFileSync(path.join(bin, "pulumi"), '#!/bin/sh\necho "error: the backend is down" >&2\nexit 1\n', { mode: 0o755 });
    await expect(selectOrCreate("s", dir, { PATH: `${bin}${path.delimiter}${process.env.PATH}` })).rejects.toThrow(
      "pulumi stack select failed (exit 1): error: the backend is down",
    );
  });
});
