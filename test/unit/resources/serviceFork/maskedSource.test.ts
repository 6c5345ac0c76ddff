// requireMasking through a chain of forks: the walk from a fork's source back to a service tagged
// PROD (through the simulator's API, as the provider reads it), what it does with a read it cannot
// take for an answer, the mark a masking preparation writes last, and what a mark read in a new
// fork's database must be to vouch for its source. The mark's SQL on a real database is the
// masked-source e2e suite's.
import type { Service } from "../../../../provider/api/schemas";
import { makeContext } from "../../../../provider/context/context";
import type { Session } from "../../../../provider/database/session";
import { serviceUnlessGone } from "../../../../provider/policies/gone";
import type { ForkInputs } from "../../../../provider/resources/serviceFork/inputs";
import { checkSourceMark, productionAncestry, refuseUnmaskedProduction } from "../../../../provider/resources/serviceFork/masking";
import { prepareFork } from "../../../../provider/resources/serviceFork/preparation";
import { type MarkRow, markOf } from "../../../../provider/resources/serviceFork/preparation/mark";
import { SETTING_SOURCES } from "../../../../provider/settings";
import { recordingSession, rejectionOf, type SimAndClient, startSimulator, testContext } from "../../../support/helpers";

let lab: SimAndClient;
beforeAll(async () => {
  lab = await startSimulator();
});
afterAll(async () => {
  await lab.sim.stop();
});
afterEach(() => lab.sim.clearFaults());

const DIGEST = "a".repeat(64);
/** A chain made in the simulator: production, a fork of it, a fork of that. */
function chain() {
  const { projectId, serviceId: production } = lab.ids;
  const golden = lab.sim.outOfBand.addFork(projectId, production, { name: `golden-${Math.random()}` });
  lab.sim.outOfBand.setEnvironment(projectId, golden, "DEV");
  const pr = lab.sim.outOfBand.addFork(projectId, golden, { name: `pr-${Math.random()}` });
  lab.sim.outOfBand.setEnvironment(projectId, pr, "DEV");
  return { projectId, production, golden, pr };
}
const read = (projectId: string) => (id: string) => serviceUnlessGone(lab.client, projectId, id);
const service = (projectId: string, id: string) => lab.client.getService(projectId, id);

describe("the walk back to production", () => {
  test("a fork of a fork of a PROD service: every service on the way, production last", async () => {
    const { projectId, production, golden, pr } = chain();
    const walked = await productionAncestry(projectId, await service(projectId, pr), read(projectId));
    expect(walked?.map((s) => s.service_id)).toEqual([pr, golden, production]);
  });

  test("a service that is no fork and not PROD: no production behind it", async () => {
    const { projectId, serviceId: production } = lab.ids;
    const lone: Service = {
      ...(await service(projectId, production)),
      metadata: { environment: "DEV" },
      forked_from: undefined,
    } as Service;
    expect(await productionAncestry(projectId, lone, read(projectId))).toBeUndefined();
  });

  test("a standby is no fork, but holds its primary's data: the walk goes through it", async () => {
    const { projectId, golden } = chain();
    const standby = lab.sim.outOfBand.addFork(projectId, golden, { name: `standby-${Math.random()}`, standby: true });
    lab.sim.outOfBand.setEnvironment(projectId, standby, "DEV");
    const walked = await productionAncestry(projectId, await service(projectId, standby), read(projectId));
    expect(walked?.at(-1)?.service_id).toBe(lab.ids.serviceId);
  });

  test("a parent that cannot be read is never taken for 'not production': a failed read, one gone, another project's, a loop", async () => {
    const { projectId, golden, pr } = chain();
    const source = await service(projectId, pr);
    lab.sim.injectFault("getService", { kind: "status", status: 500 }, 10);
    expect((await rejectionOf(productionAncestry(projectId, source, read(projectId)))).message).toMatch(
      new RegExp(`reading service ${golden}, which service ${pr} was made from, failed`),
    );
    lab.sim.clearFaults();

    const elsewhere = { ...source, forked_from: { ...source.forked_from, project_id: "another-project" } } as Service;
    expect((await rejectionOf(productionAncestry(projectId, elsewhere, read(projectId)))).message).toMatch(
      /of project another-project, which is not followed/,
    );

    const looped = { ...source, forked_from: { ...source.forked_from, service_id: pr } } as Service;
    expect((await rejectionOf(productionAncestry(projectId, looped, read(projectId)))).message).toMatch(/does not end within 32 services/);

    lab.sim.outOfBand.deleteService(projectId, golden);
    expect((await rejectionOf(productionAncestry(projectId, source, read(projectId)))).message).toMatch(
      new RegExp(`service ${golden}, which service ${pr} was made from, no longer exists`),
    );
  });
});

describe("the policy before forking", () => {
  const ctx = () => {
    const settings: Record<string, string> = {
      [SETTING_SOURCES.apiUrl.config]: lab.sim.url,
      [SETTING_SOURCES.apiKey.config]: lab.sim.apiKey,
      [SETTING_SOURCES.requireMasking.config]: "true",
    };
    const base = testContext({ client: { maxAttempts: 1, requestTimeoutMs: 2000 } });
    return makeContext(
      {
        config: (key) => settings[key],
        configWord: "stack config",
        memory: new Map(),
        options: base.options,
        reporter: { progress: () => undefined, warning: async () => undefined },
      },
      { resource: base.resource },
    );
  };
  const declared = (projectId: string, sourceServiceId: string, more: Partial<ForkInputs> = {}) =>
    ({ projectId, sourceServiceId, name: "pr-7", forkStrategy: "NOW", ...more }) as ForkInputs;

  test("a fork of a fork descended from PROD, unmasked: forked, owing its source's mark; with rules or a reason, nothing asked", async () => {
    const { projectId, production, golden } = chain();
    const asked = await refuseUnmaskedProduction(ctx(), declared(projectId, golden), Date.now() + 10_000);
    expect(asked).toEqual({ serviceId: golden, forkedFrom: production, production, fork: 'fork "pr-7"' });
    expect(
      await refuseUnmaskedProduction(ctx(), declared(projectId, golden, { unmaskedReason: "no personal data" }), Date.now() + 10_000),
    ).toBeUndefined();
  });

  test("a fork of PROD itself, unmasked: refused before forking, as before", async () => {
    const { projectId, production } = chain();
    await expect(refuseUnmaskedProduction(ctx(), declared(projectId, production), Date.now() + 10_000)).rejects.toThrow(
      /tagged PROD, and fork "pr-7" declares no masking rule.*Nothing was forked, or published\./,
    );
  });

  test("a fork of a fork whose parent cannot be read: refused before forking, naming what could not be told", async () => {
    const { projectId, golden, pr } = chain();
    lab.sim.outOfBand.deleteService(projectId, golden);
    await expect(refuseUnmaskedProduction(ctx(), declared(projectId, pr), Date.now() + 10_000)).rejects.toThrow(
      new RegExp(
        `sourceServiceId names service ${pr}, a fork.*cannot be told \\(service ${golden}, which service ${pr} was made from, no longer exists.*` +
          `requireMasking \\(tigercloud:requireMasking / TIGER_REQUIRE_MASKING\\) does not take that for "not production".*Nothing was forked`,
      ),
    );
  });
});

describe("a mark, read in the new fork", () => {
  const required = { serviceId: "svc-golden", forkedFrom: "svc-prod", production: "svc-prod", fork: 'fork "pr-7"' };
  const row = (over: Partial<MarkRow> = {}): MarkRow => ({
    fork: "svc-golden",
    source: "svc-prod",
    digest: DIGEST,
    masked: JSON.stringify([{ table: "public.customers", column: "email", with: "email" }]),
    taken: 1_760_000_000,
    verified: 1_760_000_100,
    ...over,
  });

  test("the source's own mark, naming the source the API reports: what maskedSource says", () => {
    expect(markOf([row({ fork: "svc-other" }), row()], required)).toEqual({
      mark: {
        serviceId: "svc-golden",
        sourceServiceId: "svc-prod",
        productionServiceId: "svc-prod",
        digest: DIGEST,
        masked: [{ table: "public.customers", column: "email", with: "email" }],
        dataTakenAt: "2025-10-09T08:53:20.000Z",
        verifiedAt: "2025-10-09T08:55:00.000Z",
      },
    });
  });

  test("no mark, another service's, one naming another source, two, one not of the provider's shape: none vouches", () => {
    const problem = (rows: MarkRow[]) =>
      "problem" in markOf(rows, required) ? (markOf(rows, required) as { problem: string }).problem : "vouched";
    expect(problem([])).toBe("holds no mark of service svc-golden");
    expect(problem([row({ fork: "svc-dev" })])).toBe("holds no mark of service svc-golden");
    expect(problem([row({ source: "svc-elsewhere" })])).toMatch(
      /naming another source than the one the API reports it was forked from \(svc-prod\)/,
    );
    expect(problem([row(), row()])).toMatch(/more than one mark/);
    expect(problem([row({ masked: "[]" })])).toMatch(/not one the provider writes \(masked\)/);
    expect(problem([row({ masked: JSON.stringify([{ table: "public.customers", column: "email", with: "email", value: "x" }]) })])).toMatch(
      /not one the provider writes/,
    );
    expect(problem([row({ digest: "not-a-digest" })])).toMatch(/not one the provider writes \(digest\)/);
  });

  const session = recordingSession;
  const target = { serviceId: "svc-pr", host: "127.0.0.1", port: 5432, password: "pw-123456789" };
  const limit = { deadline: Date.now() + 60_000, setBy: "createTimeout" };

  test("read with names pinned to pg_catalog, one small table, by the source's ID", async () => {
    const { sent, open } = session((text, params) => {
      if (text.includes("relkind")) return [{ kind: "r" }];
      if (text.includes("FROM _tigercloud.prepared_forks")) return params?.[0] === "svc-golden" ? [row()] : [];
      return [];
    });
    expect((await checkSourceMark(target, required, limit, open)).serviceId).toBe("svc-golden");
    expect(sent[0]).toBe("SET search_path = pg_catalog");
    expect(sent.join("\n")).not.toMatch(/customers/);
  });

  test("no table: refused naming the source, the setting and the ways out; a view in its place: refused", async () => {
    const none = session(() => []);
    const refusal = await rejectionOf(checkSourceMark(target, required, limit, none.open));
    expect(refusal.message).toMatch(
      /sourceServiceId names service svc-golden, not tagged PROD but a fork whose data descends from service svc-prod \(tagged PROD\), and fork "pr-7" declares no masking rule: the provider setting requireMasking \(tigercloud:requireMasking \/ TIGER_REQUIRE_MASKING\).*holds no mark of service svc-golden.*Fork a fork whose preparation masked.*or declare masking rules \(prepare\.mask\), or say why none are needed \(unmaskedReason\)/,
    );
    const view = session((text) => (text.includes("relkind") ? [{ kind: "v" }] : [row()]));
    expect((await rejectionOf(checkSourceMark(target, required, limit, view.open))).message).toMatch(/as something other than a table/);
  });

  test("a read that fails is said as a failure (SQLSTATE, never PostgreSQL's text), not as a missing mark", async () => {
    const failing = session((text) =>
      text.includes("relkind")
        ? [{ kind: "r" }]
        : text.includes("prepared_forks")
          ? { code: "42501", message: "permission denied for pw-123456789" }
          : [],
    );
    const said = (await rejectionOf(checkSourceMark(target, required, limit, failing.open))).message;
    expect(said).toMatch(/Reading the mark of service svc-golden in fork svc-pr .* failed: SQLSTATE 42501 \(insufficient_privilege\)/);
    expect(said).not.toMatch(/no mark|pw-123456789/);
  });
});

describe("the mark a masking preparation writes", () => {
  function recording(bad: number) {
    const sent: { text: string; params?: readonly unknown[] }[] = [];
    const events = { oid: 10, schema: "public", name: "customers", quoted: '"public"."customers"', kind: "r" };
    const s: Session = {
      query: async <Row extends object>(text: string, params?: readonly unknown[]) => {
        sent.push({ text: text.replace(/\s+/g, " ").trim(), ...(params ? { params } : {}) });
        const answer = (): object[] => {
          if (text.includes("as_read")) return [{ ...events, as_read: true }];
          if (text.includes("WITH RECURSIVE tree")) return [events];
          if (text.includes("written(oid)")) return [events];
          if (text.includes("FROM pg_attribute WHERE attrelid = $1 AND")) return [{ name: "email", quoted: '"email"' }];
          if (text.includes('SELECT count("email")::int AS n0')) return [{ n0: 3, bad0: bad }];
          if (text.includes("txid_current")) return [{ id: "7" }];
          if (text.includes("LIMIT 1) x")) return [{ n: 1 }];
          return [];
        };
        return answer() as Row[];
      },
      end: async () => undefined,
    };
    return { sent, open: async () => s };
  }
  const target = {
    serviceId: "svc-golden",
    host: "127.0.0.1",
    port: 5432,
    password: "pw-123456789",
    sourceServiceId: "svc-prod",
    dataTakenAt: "2026-01-02T03:04:05.000Z",
  };
  const limit = { deadline: Date.now() + 60_000, setBy: "createTimeout" };
  const p = { mask: [{ table: "customers", column: "email", with: "email" as const }], pauseJobs: false };

  test("last, in a transaction of its own after everything else is committed and checked: the fork, its source, the digest, the columns and rules, the times; no value", async () => {
    const { sent, open } = recording(0);
    const prepared = await prepareFork(testContext(), target, p, limit, open);
    expect(prepared.dataTakenAt).toBe("2026-01-02T03:04:05.000Z");
    const texts = sent.map((x) => x.text);
    const insert = texts.findIndex((t) => t.startsWith("INSERT INTO _tigercloud.prepared_forks"));
    expect(texts.slice(insert - 4, insert + 2)).toEqual([
      "CREATE SCHEMA IF NOT EXISTS _tigercloud",
      expect.stringMatching(/^CREATE TABLE IF NOT EXISTS _tigercloud\.prepared_forks \(fork_service_id text PRIMARY KEY/),
      expect.stringMatching(/^COMMENT ON TABLE _tigercloud\.prepared_forks/),
      "DELETE FROM _tigercloud.prepared_forks WHERE fork_service_id = $1",
      expect.stringMatching(/^INSERT INTO/),
      "COMMIT",
    ]);
    expect(texts[insert - 5]).toBe("BEGIN");
    // After the masking's own COMMIT and the space given back.
    expect(texts.indexOf('VACUUM (FULL) "public"."customers"')).toBeLessThan(insert - 5);
    expect(sent[insert]?.params).toEqual([
      "svc-golden",
      "svc-prod",
      prepared.digest,
      JSON.stringify([{ table: "public.customers", column: "email", with: "email" }]),
      "2026-01-02T03:04:05.000Z",
    ]);
  });

  test("a preparation whose check fails leaves no mark", async () => {
    const { sent, open } = recording(2);
    await expect(prepareFork(testContext(), target, p, limit, open)).rejects.toThrow(/still hold a email that the rule did not write/);
    expect(sent.map((x) => x.text).join("\n")).not.toMatch(/prepared_forks/);
  });

  test("a preparation that masks nothing leaves no mark", async () => {
    const { sent, open } = recording(0);
    await prepareFork(testContext(), target, { sql: ["SELECT 1"], pauseJobs: false }, limit, open);
    expect(sent.map((x) => x.text).join("\n")).not.toMatch(/prepared_forks/);
  });
});
