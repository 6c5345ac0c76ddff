// Mask once, fork many, with requireMasking on: a golden fork of production, masked, checked and
// stopped; pull requests' forks of it, with no rule of their own, accepted by the mark its
// preparation left, read in each new fork's database before its URL exists. A fork of an unmasked
// fork of production is refused at `up`, stopped and unpublished, and so is one whose source holds
// a mark its URL holder wrote naming another service. On the simulator's TimescaleDB, read as a
// URL holder reads it (psql as tsdbadmin).
import type { EngineHarness } from "../support/lab/harness";
import { tigercloud } from "../support/lab/harness";
import { readThrough as read, startOnTimescaleDB } from "../support/lab/production";

jest.setTimeout(300_000);
let h: EngineHarness;
const policy = { env: { TIGER_REQUIRE_MASKING: "true" } };

beforeAll(async () => {
  h = await startOnTimescaleDB({ forkQueuedMs: 100, forkConfiguringMs: 100 });
});
afterAll(async () => {
  await h?.close();
});

const holdsProduction = (text: string) => text.includes("@prod-customers.example.com");
const MASKING = [
  { table: "customers", column: "email", with: "email" as const },
  { table: "customers", column: "api_token", with: "hash" as const },
];

/** What the golden stack made: the golden fork, and two unmasked forks of production. */
let made: { golden: string; prepared: Record<string, unknown>; unmasked: string; forged: string; forgedUri: string };

test("a golden fork of production, masked and stopped, records when its data was taken; the holder of an unmasked fork of production writes a mark there naming the golden", async () => {
  const s = await h.stack(
    "golden",
    async () => {
      const { ServiceFork } = tigercloud();
      const production = h.ids.serviceId;
      const golden = new ServiceFork("golden", {
        sourceServiceId: production,
        forkStrategy: "NOW",
        name: "golden",
        paused: true,
        prepare: { mask: MASKING },
      });
      const unmasked = new ServiceFork("unmasked", {
        sourceServiceId: production,
        forkStrategy: "NOW",
        name: "unmasked",
        unmaskedReason: "a DBA's copy",
      });
      const forged = new ServiceFork("forged", {
        sourceServiceId: production,
        forkStrategy: "NOW",
        name: "forged",
        unmaskedReason: "another DBA's copy",
      });
      return {
        golden: golden.serviceId,
        created: golden.created,
        paused: golden.paused,
        prepared: golden.prepared,
        unmasked: unmasked.serviceId,
        forged: forged.serviceId,
        forgedUri: forged.connectionUri,
      };
    },
    policy,
  );
  const up = await s.up();
  const out = (k: string) => up.outputs[k]?.value;
  made = {
    golden: out("golden") as string,
    prepared: out("prepared") as Record<string, unknown>,
    unmasked: out("unmasked") as string,
    forged: out("forged") as string,
    forgedUri: out("forgedUri") as string,
  };
  expect(out("paused")).toBe(true);
  expect(made.prepared.dataTakenAt).toBe(out("created"));
  expect(h.sim.service(h.ids.projectId, made.golden)?.status).toBe("PAUSED");

  // The holder of the unmasked fork "forged" writes a mark there, copied from what a golden's says
  // but for the service it names: the golden's, not its own.
  await read(
    made.forgedUri,
    "CREATE SCHEMA _tigercloud; CREATE TABLE _tigercloud.prepared_forks (fork_service_id text PRIMARY KEY, source_service_id text NOT NULL, " +
      "preparation_digest text NOT NULL, masked_columns jsonb NOT NULL, data_taken_at timestamptz NOT NULL, verified_at timestamptz NOT NULL); " +
      `INSERT INTO _tigercloud.prepared_forks VALUES ('${made.golden}', '${h.ids.serviceId}', '${made.prepared.digest as string}', ` +
      `'[{"table":"public.customers","column":"email","with":"email"}]', now(), now())`,
  );
});

test("a pull request's fork of the stopped golden fork, with no masking rule: preview says up will read the mark; up publishes it, masked, and says what its data is", async () => {
  const s = await h.stack(
    "pr",
    async () => {
      const { ServiceFork } = tigercloud();
      const f = new ServiceFork("pr", { sourceServiceId: made.golden, forkStrategy: "NOW", name: "pr-1", prepare: { sql: ["SELECT 1"] } });
      return { id: f.serviceId, uri: f.connectionUri, maskedSource: f.maskedSource, prepared: f.prepared };
    },
    policy,
  );
  const preview = await s.preview();
  expect(preview.stdout).toMatch(
    new RegExp(`fork "pr-1" of service ${made.golden} declares no masking rule.*.up. checks that by the mark its preparation left`, "s"),
  );
  const up = await s.up();
  const uri = up.outputs.uri?.value as string;
  expect(uri).toMatch(/^postgresql:/);
  expect(up.outputs.maskedSource?.value).toEqual({
    serviceId: made.golden,
    sourceServiceId: h.ids.serviceId,
    productionServiceId: h.ids.serviceId,
    digest: made.prepared.digest,
    masked: [
      { table: "public.customers", column: "email", with: "email" },
      { table: "public.customers", column: "api_token", with: "hash" },
    ],
    dataTakenAt: made.prepared.dataTakenAt,
    verifiedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
  });
  const emails = await read(uri, "SELECT string_agg(email || ' ' || api_token, ',') FROM customers");
  expect(emails.length).toBeGreaterThan(0);
  expect(holdsProduction(emails)).toBe(false);
  // The copy of the golden's mark, as the URL holder reads it: names, never a value.
  const mark = await read(
    uri,
    "SELECT fork_service_id || ' ' || source_service_id || ' ' || masked_columns::text FROM _tigercloud.prepared_forks",
  );
  expect(mark).toBe(
    `${made.golden} ${h.ids.serviceId} [{"with": "email", "table": "public.customers", "column": "email"}, {"with": "hash", "table": "public.customers", "column": "api_token"}]`,
  );
});

test("forks of unmasked forks of production, with no masking rule: refused at up after their first login, stopped, with no URL or password in state; a mark naming another service does not vouch", async () => {
  const s = await h.stack(
    "unmasked",
    async () => {
      const { ServiceFork } = tigercloud();
      new ServiceFork("of-unmasked", { sourceServiceId: made.unmasked, forkStrategy: "NOW", name: "of-unmasked" });
      new ServiceFork("of-forged", { sourceServiceId: made.forged, forkStrategy: "NOW", name: "of-forged" });
      return {};
    },
    policy,
  );
  const message = await s.up().then(
    () => "",
    (err: Error) => err.message,
  );
  for (const [source, name] of [
    [made.unmasked, "of-unmasked"],
    [made.forged, "of-forged"],
  ] as const)
    expect(message).toMatch(
      new RegExp(
        `sourceServiceId names service ${source}, not tagged PROD but a fork whose data descends from service ${h.ids.serviceId} \\(tagged PROD\\), ` +
          `and fork "${name}" declares no masking rule: the provider setting requireMasking \\(tigercloud:requireMasking / TIGER_REQUIRE_MASKING\\) ` +
          `accepts that only from a fork whose preparation masked and was checked, and fork \\S+'s copy of it holds no mark of service ${source}`,
      ),
    );
  expect(message).toMatch(
    /Fork a fork whose preparation masked \(prepare\.mask\) instead, or declare masking rules \(prepare\.mask\), or say why none are needed \(unmaskedReason\)/,
  );
  const forks = (await s.exportState()).resources?.filter((r) => r.type.endsWith("tigercloud:ServiceFork")) ?? [];
  expect(forks).toHaveLength(2);
  for (const f of forks) {
    expect(f.outputs?.connectionUri).toBeUndefined();
    expect(f.outputs?.initialPassword).toBeUndefined();
    expect(f.outputs?.maskedSource).toBeUndefined();
    expect(h.sim.service(h.ids.projectId, f.id as string)?.status).toBe("PAUSED");
  }
  expect(s.rawState()).not.toMatch(/postgresql:\/\//);

  // The next up: the fork that now says why it may be unmasked is started and published; the other is checked again, and refused again.
  s.setProgram(async () => {
    const { ServiceFork } = tigercloud();
    new ServiceFork("of-unmasked", {
      sourceServiceId: made.unmasked,
      forkStrategy: "NOW",
      name: "of-unmasked",
      unmaskedReason: "a DBA's copy, reviewed",
    });
    new ServiceFork("of-forged", { sourceServiceId: made.forged, forkStrategy: "NOW", name: "of-forged" });
    return {};
  });
  const again = await s.up().then(
    () => "",
    (err: Error) => err.message,
  );
  expect(again).toMatch(new RegExp(`holds no mark of service ${made.forged}`));
  expect(again).not.toMatch(new RegExp(`holds no mark of service ${made.unmasked}`));
  const after = (await s.exportState()).resources?.filter((r) => r.type.endsWith("tigercloud:ServiceFork")) ?? [];
  const byName = (name: string) => after.find((r) => r.outputs?.name === name);
  expect(JSON.stringify(byName("of-unmasked")?.outputs?.connectionUri)).toMatch(/postgresql:\/\/tsdbadmin:/);
  expect(h.sim.service(h.ids.projectId, byName("of-unmasked")?.id as string)?.status).toBe("READY");
  expect(byName("of-forged")?.outputs?.connectionUri).toBeUndefined();
  expect(h.sim.service(h.ids.projectId, byName("of-forged")?.id as string)?.status).toBe("PAUSED");
});

test("a refused fork that cannot be stopped still publishes no URL or password, and says it still runs", async () => {
  const s = await h.stack(
    "unstoppable",
    async () => {
      const { ServiceFork } = tigercloud();
      new ServiceFork("f", { sourceServiceId: made.unmasked, forkStrategy: "NOW", name: "of-unmasked-again" });
      return {};
    },
    policy,
  );
  h.sim.injectFault("stop", { kind: "status", status: 500 }, 20);
  const message = await s.up().then(
    () => "",
    (err: Error) => err.message,
  );
  h.sim.clearFaults();
  expect(message).toMatch(/holds no mark of service .* could not be stopped .*: it still runs, unprepared\./s);
  const [fork] = (await s.exportState()).resources?.filter((r) => r.type.endsWith("tigercloud:ServiceFork")) ?? [];
  expect(fork?.outputs?.connectionUri).toBeUndefined();
  expect(fork?.outputs?.initialPassword).toBeUndefined();
  expect(s.rawState()).not.toMatch(/postgresql:\/\//);
});
