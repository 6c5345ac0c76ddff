// A fork's preparation, with a real PostgreSQL server behind every service: the parent holds
// customers' personal data and TimescaleDB's jobs (the simulator's stand-in of its catalog). A
// fork declared with masking rules hands out a URL whose database shows no production value of a
// masked column, and its jobs are paused while the source's run on; a failing rule leaves the fork
// recorded and no URL, and the next `up` finishes it in place; a change to a prepared fork's rules
// replaces it, as preview says.
import * as fs from "fs";
import * as path from "path";
import { customerRow, PERSONAL_ROWS, PERSONAL_TABLE } from "../../simulator/databases";
import { type EngineHarness, PASSPHRASE, tigercloud, writes } from "../support/lab/harness";
import { preparedForkProgram, readThrough as psql, startOnTimescaleDB } from "../support/lab/production";

jest.setTimeout(240_000);
let h: EngineHarness;

beforeAll(async () => {
  h = await startOnTimescaleDB({ forkQueuedMs: 200, forkConfiguringMs: 200 });
});
afterAll(async () => {
  await h?.close();
});

/** The source's own database, as its admin. */
function sourceUri(): string {
  const s = h.sim.service(h.ids.projectId, h.ids.serviceId);
  const password = h.sim.databases.password(h.ids.serviceId);
  if (!s || !password) throw new Error("the source has no database");
  return `postgresql://tsdbadmin:${encodeURIComponent(password)}@${s.endpoint.host}:${s.endpoint.port}/tsdb?sslmode=require`;
}

const PRODUCTION = Array.from({ length: PERSONAL_ROWS }, (_, i) => customerRow(i + 1));

const MASKING = [
  { table: PERSONAL_TABLE, column: "email", with: "email" },
  { table: `public.${PERSONAL_TABLE}`, column: "full_name", with: "keepFirst", chars: 8 },
  { table: PERSONAL_TABLE, column: "api_token", with: "hash" },
] as const;

const forkProgram = (name: string, prepare: object) => preparedForkProgram(h, name, prepare);

/** Every value of the masked columns, as the fork's database shows them. */
async function maskedValues(uri: string): Promise<string[]> {
  const row = `concat_ws('|', email, full_name, api_token)`;
  return (await psql(uri, `SELECT ${row} FROM ${PERSONAL_TABLE} ORDER BY id`)).split("\n");
}

test("masked before anyone has the URL: no production value of a masked column in the fork, uniqueness kept, jobs paused on the fork and running on the source", async () => {
  const s = await h.stack(
    "masked",
    forkProgram("pr-masked", { mask: MASKING, sql: ["CREATE TABLE prepared_by (note text)"], pauseJobs: true }),
  );
  const up = await s.up();
  expect(writes(up.requests)).toEqual(["forkService"]);
  const uri = up.outputs.uri?.value as string;
  expect(up.outputs.uri?.secret).toBe(true);
  const rows = await maskedValues(uri);
  expect(rows).toHaveLength(PERSONAL_ROWS);
  const everyValue = rows.flatMap((r) => r.split("|"));
  for (const person of PRODUCTION) for (const value of Object.values(person)) expect(everyValue).not.toContain(value);
  expect(await psql(uri, `SELECT count(*) FROM ${PERSONAL_TABLE} WHERE email LIKE '%prod-customers%' OR api_token LIKE 'tok_live_%'`)).toBe(
    "0",
  );
  // The e-mail stays unique (the column is UNIQUE); equal values hash equally; names keep their first 8 characters.
  expect(await psql(uri, `SELECT count(DISTINCT email) FROM ${PERSONAL_TABLE} WHERE email LIKE 'user-%@example.invalid'`)).toBe(
    String(PERSONAL_ROWS),
  );
  expect(await psql(uri, `SELECT DISTINCT full_name FROM ${PERSONAL_TABLE}`)).toBe("Customer");
  expect(await psql(uri, "SELECT count(*) FROM prepared_by")).toBe("0");
  // The source is untouched.
  expect(await psql(sourceUri(), `SELECT email FROM ${PERSONAL_TABLE} WHERE id = 1`)).toBe(PRODUCTION[0]!.email);
  // Jobs: the user's paused on the fork, TimescaleDB's own left alone; on the source, all scheduled.
  // The user's: production's seven policies and its user-defined action (simulator/production.ts).
  const userJobs = (
    await psql(sourceUri(), "SELECT string_agg(job_id::text, ',' ORDER BY job_id) FROM timescaledb_information.jobs WHERE job_id >= 1000")
  )
    .split(",")
    .map(Number);
  expect(userJobs).toHaveLength(8);
  const jobs = "SELECT string_agg(job_id || ':' || scheduled, ',' ORDER BY job_id) FROM timescaledb_information.jobs";
  expect(await psql(uri, jobs)).toBe(["1:true", "3:true", ...userJobs.map((j) => `${j}:false`)].join(","));
  expect(await psql(sourceUri(), jobs)).toBe(["1:true", "3:true", ...userJobs.map((j) => `${j}:true`)].join(","));
  // The outputs say what ran, never data.
  const prepared = up.outputs.prepared?.value as {
    digest: string;
    statements: number;
    masked: { rule: string; rows: number }[];
    jobsPaused: number[];
  };
  expect(prepared).toMatchObject({
    statements: 1,
    jobsPaused: userJobs,
    masked: [
      { rule: "public.customers.email", with: "email", rows: PERSONAL_ROWS },
      { rule: "public.customers.full_name", with: "keepFirst", rows: PERSONAL_ROWS },
      { rule: "public.customers.api_token", with: "hash", rows: PERSONAL_ROWS },
    ],
  });
  expect(prepared.digest).toMatch(/^[0-9a-f]{64}$/);
  expect(up.stdout).toMatch(/fork svc-[0-9a-f]+: prepared and checked in [0-9.]+ s; rows masked: public\.customers\.email 100/);
  // Where a slow preparation is looked into: its longest parts, by name.
  expect(up.stdout).toMatch(/prepared and checked in [^\n]*; longest: [^\n]+ [0-9.]+ s, [^\n]* [0-9.]+ s, [^\n]* [0-9.]+ s/);
  expect(s.rawState()).not.toContain("prod-customers");
  await s.stack.preview({ expectNoChanges: true });

  // A new rule on a prepared fork replaces it: preview says so.
  s.setProgram(
    forkProgram("pr-masked", { mask: [...MASKING, { table: PERSONAL_TABLE, column: "referred_by", with: "null" }], pauseJobs: true }),
  );
  const preview = await s.preview();
  expect(preview.changes.replace).toBe(1);
  expect(preview.stdout).toContain("prepare changed, so this fork will be replaced by a new one, prepared the new way");
  await s.destroy();
});

test("a failing rule: up fails naming the rule and PostgreSQL's error, the fork recorded with no URL, stopped, and nothing of the preparation kept; the next up, the rule fixed, starts and prepares the same fork", async () => {
  const wrong = [
    { table: PERSONAL_TABLE, column: "email", with: "email" },
    { table: PERSONAL_TABLE, column: "phone", with: "null" },
  ];
  const s = await h.stack("failing", forkProgram("pr-failing", { mask: wrong }));
  await expect(s.up()).rejects.toThrow(
    /Preparing fork svc-[0-9a-f]+ failed at prepare\.mask\[1\] \(customers\.phone, with null\): public\.customers has no column phone\. Nothing of its SQL and masking was kept/,
  );
  const state = await s.exportState();
  const fork = state.resources?.find((r) => r.type.endsWith("tigercloud:ServiceFork"));
  expect(fork?.id).toMatch(/^svc-/);
  expect(fork?.outputs?.connectionUri).toBeUndefined();
  expect(fork?.outputs?.poolerConnectionUri).toBeUndefined();
  expect(fork?.outputs?.preparePending).toBe(true);
  // No password either: state keeps it aside, secret, until the fork is prepared.
  const password = h.sim.databases.password(fork!.id!) ?? "";
  expect(fork?.outputs?.initialPassword).toBeUndefined();
  expect(JSON.stringify(fork?.outputs?.pendingPassword)).toContain(password);
  expect(s.rawState()).not.toContain(password);
  // Stopped: unmasked, it must not run (or be billed) until a preparation succeeds.
  expect(h.sim.service(h.ids.projectId, fork!.id!)?.status).toMatch(/^PAUS/);
  expect(fork?.outputs?.paused).toBe(true);
  // One transaction: the first rule's work was rolled back too (seen with the fork started by hand).
  await fetch(`${h.sim.url}/projects/${h.ids.projectId}/services/${fork!.id!}/start`, {
    method: "POST",
    headers: { Authorization: `Bearer ${h.sim.apiKey}` },
  });
  while (h.sim.service(h.ids.projectId, fork!.id!)?.status !== "READY") await new Promise((r) => setTimeout(r, 100));
  await h.sim.databases.settled(fork!.id!);
  const service = h.sim.service(h.ids.projectId, fork!.id!);
  const direct = `postgresql://tsdbadmin:${encodeURIComponent(password)}@${service!.endpoint.host}:${service!.endpoint.port}/tsdb?sslmode=require`;
  expect(await psql(direct, `SELECT email FROM ${PERSONAL_TABLE} WHERE id = 1`)).toBe(PRODUCTION[0]!.email);

  // Fixed, and renamed in the same up: the update (a rename) prepares the fork too.
  s.setProgram(forkProgram("pr-failing-fixed", { mask: [wrong[0], { table: PERSONAL_TABLE, column: "full_name", with: "null" }] }));
  const preview = await s.preview();
  expect(preview.changes.replace ?? 0).toBe(0);
  expect(preview.stdout).toContain("preparation has not finished: the new one runs on it, in place");
  const up = await s.up();
  // No second fork: the recorded one, started (already running here) and renamed.
  expect(writes(up.requests).filter((w) => w !== "start")).toEqual(["renameService"]);
  expect(up.outputs.password?.value).toBe(password);
  expect(up.outputs.id?.value).toBe(fork!.id);
  const uri = up.outputs.uri?.value as string;
  expect(await psql(uri, `SELECT count(*) FROM ${PERSONAL_TABLE} WHERE email LIKE '%prod-customers%' OR full_name IS NOT NULL`)).toBe("0");
  await s.destroy();
});

test("a fork owed its preparation whose login never comes: up fails at the login wait, the fork stopped with no URL; a start whose answer is lost stops it again; the next up starts and prepares the same fork", async () => {
  h.sim.delays = { ...h.sim.delays, loginLagMs: 60 * 60_000 };
  const s = await h.stack("no-login", preparedForkProgram(h, "pr-no-login", { mask: MASKING }, { createTimeout: "4s" }));
  const message = await s
    .up()
    .then(
      () => "",
      (err: Error) => err.message,
    )
    .finally(() => {
      h.sim.delays = { ...h.sim.delays, loginLagMs: 0 };
    });
  expect(message).toMatch(
    /Timed out after \d+ s waiting for a login to service (svc-\w+).* Fork \1 was stopped meanwhile \(its data is not masked\)/s,
  );
  const fork = (await s.exportState()).resources?.find((r) => r.type.endsWith("tigercloud:ServiceFork"));
  expect(fork?.outputs?.connectionUri).toBeUndefined();
  expect(fork?.outputs?.preparePending).toBe(true);
  expect(h.sim.service(h.ids.projectId, fork!.id!)?.status).toMatch(/^PAUS/);

  // The next up's start is carried out but its answer lost: the fork, running unprepared, is stopped again.
  h.sim.injectFault("start", { kind: "afterApplying", status: 403 });
  const lost = await s.up().then(
    () => "",
    (err: Error) => err.message,
  );
  h.sim.clearFaults();
  expect(lost).toMatch(/Fork svc-\w+ was stopped meanwhile \(its data is not masked\)/);
  expect(h.sim.service(h.ids.projectId, fork!.id!)?.status).toMatch(/^PAUS/);
  expect((await s.exportState()).resources?.find((r) => r.id === fork!.id)?.outputs?.connectionUri).toBeUndefined();

  const up = await s.up();
  expect(writes(up.requests)).toEqual(["start"]);
  expect(up.outputs.id?.value).toBe(fork!.id);
  const values = (await maskedValues(up.outputs.uri?.value as string)).join("|").split("|");
  for (const row of PRODUCTION) for (const value of [row.email, row.full_name, row.api_token]) expect(values).not.toContain(value);
  await s.destroy();
});

test("requireMasking holds for a fork whose preparation failed: its masking rules dropped, up refuses to publish it and stops it again", async () => {
  const s = await h.stack(
    "policy-pending",
    forkProgram("pr-pending", { mask: [{ table: PERSONAL_TABLE, column: "phone", with: "null" }] }),
    {
      env: { TIGER_REQUIRE_MASKING: "true" },
    },
  );
  await expect(s.up()).rejects.toThrow(/has no column phone/);
  s.setProgram(forkProgram("pr-pending", { sql: ["SELECT 1"] }));
  await expect(s.up()).rejects.toThrow(/tagged PROD, and fork "pr-pending" declares no masking rule.*Nothing was forked, or published\./);
  const fork = (await s.exportState()).resources?.find((r) => r.type.endsWith("tigercloud:ServiceFork"));
  expect(fork?.outputs?.connectionUri).toBeUndefined();
  expect(fork?.outputs?.preparePending).toBe(true);
  // The up started it (paused: false) before the policy refused: stopped again, and recorded so.
  expect(h.sim.service(h.ids.projectId, fork!.id!)?.status).toMatch(/^PAUS/);
  expect(fork?.outputs?.paused).toBe(true);
  await s.destroy();
});

test("preview refuses a wrong rule, naming it and the rule it breaks", async () => {
  const s = await h.stack(
    "refused",
    forkProgram("pr-refused", {
      mask: [
        { table: "customers; DROP TABLE customers", column: "email", with: "hash" },
        { table: PERSONAL_TABLE, column: "email", with: "constant" },
        { table: PERSONAL_TABLE, column: "full_name", with: "scramble" },
      ],
    }),
  );
  const failure = s.preview();
  await expect(failure).rejects.toThrow(/prepare\.mask\.0\.table must be a table as "name" or "schema\.name"/);
  await expect(failure).rejects.toThrow(/prepare\.mask\.1\.value is required with "constant" \(customers\.email, with constant\)/);
  await expect(failure).rejects.toThrow(/prepare\.mask\.2\.with must be one of null, constant, hash, email, keepFirst/);
  expect(h.sim.services(h.ids.projectId).filter((x) => x.name === "pr-refused")).toEqual([]);
});

test("a YAML program on the plugin: the rules and a SQL file (fn::readFile) run before the URL is published; no production value in the fork; a failure after the commit keeps what the next run checks against as a secret", async () => {
  const { yamlLab } = require("../support/lab/yaml") as typeof import("../support/lab/yaml");
  const lab = await yamlLab(h.sim, PASSPHRASE);
  try {
    const program = (sqlAfter: string[] = []) =>
      [
        "name: pr-masked-yaml",
        "runtime: yaml",
        "resources:",
        "  fork:",
        "    type: tigercloud:index:ServiceFork",
        "    properties:",
        `      sourceServiceId: ${h.ids.serviceId}`,
        "      forkStrategy: NOW",
        "      name: pr-yaml",
        "      onDestroy: delete",
        "      prepare:",
        "        sql:",
        "          - fn::readFile: ./prepare.sql",
        "        mask:",
        `          - { table: ${PERSONAL_TABLE}, column: email, with: email }`,
        `          - { table: ${PERSONAL_TABLE}, column: full_name, with: constant, value: "A. Person" }`,
        `          - { table: ${PERSONAL_TABLE}, column: api_token, with: "null" }`,
        "        pauseJobs: true",
        ...(sqlAfter.length ? ["        sqlAfter:", ...sqlAfter.map((text) => `          - ${JSON.stringify(text)}`)] : []),
        "outputs:",
        "  uri: ${fork.connectionUri}",
        "  masked: ${fork.prepared.masked}",
        "",
      ].join("\n");
    const dir = await lab.project("masked", program(["SELECT 1 / 0"]));
    fs.writeFileSync(
      path.join(dir, "prepare.sql"),
      // It runs again after a failure past the commit: written to run twice.
      "CREATE TABLE IF NOT EXISTS from_file (note text);\nDELETE FROM from_file;\nINSERT INTO from_file VALUES ('read from a file');\n",
    );
    // Failing after the commit, the preparation hands state the digests of what it sampled: the plugin records them as a secret.
    const failed = await lab.run(dir, ["up", "--yes", "--skip-preview"]);
    expect(failed.status).not.toBe(0);
    expect(failed.output.replace(/\s+/g, " ")).toMatch(
      /failed at prepare\.sqlAfter\[0\] \(SELECT 1 \/ 0\): SQLSTATE 22012 \(division_by_zero\)\. The masking was committed/,
    );
    const exported = JSON.parse(await lab.ok(dir, ["stack", "export", "--show-secrets"])) as {
      deployment: { resources?: { type: string; outputs?: Record<string, unknown> }[] };
    };
    const fork = exported.deployment.resources?.find((r) => r.type === "tigercloud:index:ServiceFork");
    const kept = JSON.parse((fork?.outputs?.sampledEarlier as { plaintext: string }).plaintext) as { key: string };
    expect(kept.key).toMatch(/^[0-9a-f]{32}$/);
    const stored = await lab.ok(dir, ["stack", "export"]);
    expect(stored.replace(/\s+/g, "")).toContain(
      '"sampledEarlier":{"4dabf18193072939515e22adb298388d":"1b47061264138c4ac30d75fd1eb44270","ciphertext"',
    );
    expect(stored).not.toContain(kept.key);
    fs.writeFileSync(path.join(dir, "Pulumi.yaml"), program());
    const up = await lab.ok(dir, ["up", "--yes", "--skip-preview"]);
    expect(up).toMatch(/prepared and checked in [0-9.]+ s; rows masked: public\.customers\.email 100, public\.customers\.full_name 100/);
    const uri = (await lab.ok(dir, ["stack", "output", "uri", "--show-secrets"])).trim();
    const everyValue = (await maskedValues(uri)).flatMap((r) => r.split("|"));
    for (const person of PRODUCTION) for (const value of Object.values(person)) expect(everyValue).not.toContain(value);
    expect(await psql(uri, "SELECT note FROM from_file")).toBe("read from a file");
    expect(await psql(uri, "SELECT count(*) FROM timescaledb_information.jobs WHERE scheduled AND job_id >= 1000")).toBe("0");
    await lab.ok(dir, ["destroy", "--yes", "--skip-preview"]);
  } finally {
    lab.close();
  }
});

test("requireMasking: a fork of the PROD source with no masking rule fails preview naming the fork and the setting, and up refuses before forking; a masking rule or an unmaskedReason passes", async () => {
  const policy = { env: { TIGER_REQUIRE_MASKING: "true" } };
  const s = await h.stack("policy", forkProgram("pr-policy", { sql: ["SELECT 1"] }), policy);
  const refusal =
    /sourceServiceId names service svc-parent1, tagged PROD, and fork "pr-policy" declares no masking rule: the provider setting requireMasking \(tigercloud:requireMasking \/ TIGER_REQUIRE_MASKING\) refuses an unmasked copy of production/;
  await expect(s.preview()).rejects.toThrow(refusal);
  // Without credentials preview reads nothing; up refuses, before forkService.
  const blind = await h.stack("policy-up", forkProgram("pr-policy", { sql: ["SELECT 1"] }), {
    env: { TIGER_REQUIRE_MASKING: "true", TIGER_VERIFY_REFERENCES: "false" },
  });
  await expect(blind.up()).rejects.toThrow(
    /tagged PROD, and fork "pr-policy" declares no masking rule.*Nothing was forked, or published\./,
  );
  expect(h.sim.services(h.ids.projectId).filter((x) => x.name === "pr-policy")).toEqual([]);

  // The stack and the fork.
  s.setProgram(forkProgram("pr-policy", { mask: [MASKING[0]] }));
  expect((await s.preview()).changes.create).toBe(2);
  const acknowledged = async () => {
    const { ServiceFork } = tigercloud();
    const f = new ServiceFork("f", {
      sourceServiceId: h.ids.serviceId,
      forkStrategy: "NOW",
      name: "pr-policy",
      unmaskedReason: "the sample holds no personal data",
    });
    return { id: f.serviceId };
  };
  s.setProgram(acknowledged);
  expect((await s.preview()).changes.create).toBe(2);
});
