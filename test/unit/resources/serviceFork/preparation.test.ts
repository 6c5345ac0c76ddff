// The SQL a fork's preparation sends, read without a database: the masking expressions and checks
// (identifiers quoted, every value a parameter), how a failure is said (never PostgreSQL's text),
// and the runner's order and what its failures say were kept, against a session that records.
import type { DatabaseFailure } from "../../../../provider/database/session";
import { PreparationFailed, prepareFork } from "../../../../provider/resources/serviceFork/preparation";
import { describeFailure } from "../../../../provider/resources/serviceFork/preparation/failures";
import type { MaskRule } from "../../../../provider/resources/serviceFork/preparation/schema";
import * as sql from "../../../../provider/resources/serviceFork/preparation/statements";
import { recordingSession, testContext } from "../../../support/helpers";

/** A name as the catalog's queries hand it over, quoted by the server. */
const quoted = (name: string) => name as sql.Quoted;

describe("statements", () => {
  test("every rule's value is a parameter, the hashing key and the tag too; the column is what the caller quoted", () => {
    const rules: MaskRule[] = [
      { table: "t", column: "c", with: "constant", value: "x'); DROP TABLE t; --" },
      { table: "t", column: "c", with: "hash" },
      { table: "t", column: "c", with: "email" },
      { table: "t", column: "c", with: "keepFirst", chars: 3 },
      { table: "t", column: "c", with: "null" },
    ];
    const { values, param } = sql.parameters({ key: "the-key", tag: "the-tag" });
    const written = rules.map((r) => sql.maskExpression(r, sql.ident("c"), param));
    expect(written).toEqual([
      `CASE WHEN "c" IS NULL THEN "c" ELSE $1 END`,
      `COALESCE((SELECT p.hash FROM pg_temp.tigercloud_pseudonyms p WHERE p.value = "c"::text), "c")`,
      `COALESCE((SELECT p.email FROM pg_temp.tigercloud_pseudonyms p WHERE p.value = "c"::text), "c")`,
      `left("c"::text, $2::int)`,
      "NULL",
    ]);
    expect(values).toEqual(["x'); DROP TABLE t; --", 3]);
    expect(written.join(" ")).not.toContain("DROP");
    const numbered = sql.pseudonymTable(
      [
        { table: quoted('"public"."t"'), columns: [quoted('"c"'), quoted('"e"')] },
        { table: quoted('"public"."u"'), columns: [quoted('"d"')] },
      ],
      param,
    );
    expect(numbered).toBe(
      "CREATE TEMPORARY TABLE pg_temp.tigercloud_pseudonyms ON COMMIT DROP AS " +
        "SELECT value, 'h' || $3 || '-' || n::text AS hash, 'user-' || $4 || '-' || n::text || '@example.invalid' AS email " +
        "FROM (SELECT value, row_number() OVER (ORDER BY md5($5 || value), value) AS n " +
        `FROM (SELECT DISTINCT value FROM (SELECT unnest(ARRAY["c"::text, "e"::text]) AS value FROM "public"."t" UNION ALL ` +
        `SELECT unnest(ARRAY["d"::text]) AS value FROM "public"."u") a WHERE value IS NOT NULL) d) v`,
    );
    expect(values.slice(2)).toEqual(["the-tag", "the-tag", "the-key"]);
  });

  test("the check after masking accepts only what each rule writes", () => {
    const { values, param } = sql.parameters({ key: "k", tag: "0a1b2c3d" });
    expect(sql.maskedCondition({ table: "t", column: "c", with: "null" }, quoted('"c"'), param)).toBe('"c" IS NULL');
    // What it passes, against real text, is masking.e2e's: here, that the tag is its one parameter.
    const hash = sql.maskedCondition({ table: "t", column: "c", with: "hash" }, quoted('"c"'), param);
    expect(hash).toMatch(/^\("c" IS NULL OR /);
    expect(hash.match(/\$\d+/g)).toEqual(["$1", "$1", "$1"]);
    expect(sql.maskedCondition({ table: "t", column: "c", with: "keepFirst", chars: 8 }, quoted('"c"'), param)).toBe(
      `("c" IS NULL OR length("c"::text) <= $2::int)`,
    );
    expect(values).toEqual(["0a1b2c3d", 8]);
  });

  test("identifiers are quoted whatever they hold; no statement takes a literal written here; a trigger or rule goes back to the mode it had", () => {
    expect(sql.ident('we"ird name')).toBe('"we""ird name"');
    // ROLLBACK PREPARED's gid is quoted by the server (format's %L); the refreshed view is read from a setting.
    expect(sql.PREPARED_TRANSACTIONS).toContain("format('ROLLBACK PREPARED %L', gid)");
    expect(sql.triggerSwitch(quoted('"public"."t"'), quoted('"audit"'), "D")).toBe('ALTER TABLE ONLY "public"."t" DISABLE TRIGGER "audit"');
    expect(sql.triggerSwitch(quoted('"public"."t"'), quoted('"audit"'), "A")).toBe(
      'ALTER TABLE ONLY "public"."t" ENABLE ALWAYS TRIGGER "audit"',
    );
    expect(sql.triggerSwitch(quoted('"public"."t"'), quoted('"audit"'), "O")).toBe('ALTER TABLE ONLY "public"."t" ENABLE TRIGGER "audit"');
    expect(sql.ruleSwitch(quoted('"public"."t"'), quoted('"r"'), "R")).toBe('ALTER TABLE "public"."t" ENABLE REPLICA RULE "r"');
    expect(sql.refreshContinuousAggregate(quoted('"ts"'))).toBe(
      `CALL "ts".refresh_continuous_aggregate(pg_catalog.current_setting('tigercloud.refreshed')::pg_catalog.regclass, NULL, NULL, force => true)`,
    );
  });
});

describe("a failure's words", () => {
  test("the SQLSTATE, its condition and the objects PostgreSQL names; never its message, which may quote a row", () => {
    const failure: DatabaseFailure = {
      code: "23505",
      message: 'duplicate key value violates unique constraint "u" Key (email)=(someone@prod.example.com)',
      schema: "public",
      table: "customers",
      constraint: "customers_email_key",
    };
    const said = describeFailure(failure);
    expect(said).toBe("SQLSTATE 23505 (unique_violation), schema public, table customers, constraint customers_email_key");
    expect(said).not.toContain("prod.example.com");
    expect(describeFailure({ code: "P0001", message: "cannot change someone@prod.example.com" })).toBe("SQLSTATE P0001 (raise_exception)");
  });

  test("a syntax error points into the user's own SQL", () => {
    expect(describeFailure({ code: "42601", message: "syntax error", position: "8" }, "SELECT FROMM customers")).toBe(
      'SQLSTATE 42601 (syntax_error), at character 8: "SELECT FROMM customers"',
    );
  });
});

/** A statement as the recording session keeps it: its spaces and line breaks one space. */
const flat = (text: string) => text.replace(/\s+/g, " ").trim();

describe("the runner", () => {
  const recording = recordingSession;
  const target = { serviceId: "svc-1", host: "127.0.0.1", port: 5432, password: "pw-123456789" };
  const limit = { deadline: Date.now() + 60_000, setBy: "createTimeout" };

  test("pausing jobs is one transaction: when one alter_job fails, the failure says no job was paused", async () => {
    const { sent, open } = recording((text, params) => {
      if (text === sql.TIMESCALEDB_SCHEMA) return [{ schema: "public", quoted: '"public"' }];
      if (text === sql.SCHEDULED_JOBS) return [{ job_id: 1000 }, { job_id: 1001 }];
      if (text.startsWith(`SELECT "public".alter_job(`) && params?.[0] === 1001)
        return { code: "42501", message: "insufficient permissions to alter job 1001" };
      return [];
    });
    await expect(prepareFork(testContext(), target, { pauseJobs: true }, limit, open)).rejects.toThrow(
      /failed at prepare\.pauseJobs \(alter_job\(1001, scheduled => false\)\): SQLSTATE 42501 \(insufficient_privilege\)\. No job was paused \(the pause is one transaction, rolled back\)\./,
    );
    expect(sent.filter((s) => /^(BEGIN|COMMIT)/.test(s))).toEqual(["BEGIN"]);
  });

  const events = { oid: 10, schema: "public", name: "events", quoted: '"public"."events"', kind: "r" };
  /** A continuous aggregate over events: its materialization table (oid), the view it is read by, its direct view (oid + 10). */
  const aggregateOver = (oid: number, view: string) => ({
    oid,
    schema: "_timescaledb_internal",
    name: `_materialized_hypertable_${oid}`,
    quoted: `"_timescaledb_internal"."_materialized_hypertable_${oid}"`,
    kind: "r",
    view,
    direct: oid + 10,
    runsOwn: false,
  });
  /**
   * A fork whose events table (masked, a hypertable with one compressed chunk and a trigger) is read by
   * these aggregates, each with one compressed chunk before its refresh and a new one after it.
   */
  const eventsFork = (
    aggregates: ReturnType<typeof aggregateOver>[],
    failing?: { session: number; text: string; failure?: { code: string; message: string; table?: string; constraint?: string } },
    views: {
      readers: object[];
      owed: number[];
      heldOff?: object[];
      /** What SAMPLE_DIGESTS answers, in the order of the values sent. */
      digests?: string[];
      /** The record's grants to other roles, as RECORD_GRANTS says them, each time it is asked. */
      recordGrants?: string[][];
    } = {
      readers: [],
      owed: [],
    },
  ) => {
    const refreshedOn = new Set<string>();
    const params: { text: string; params: readonly unknown[] | undefined }[] = [];
    const fork = recording((text, given, session) => {
      params.push({ text: text.replace(/\s+/g, " ").trim(), params: given });
      return answer(text, given, session);
    });
    const answer = (text: string, params: readonly unknown[] | undefined, session: number | undefined) => {
      if (text === sql.NAMED_OBJECTS)
        return [{ schema: false, table: params?.[1] === "customers", column: false, constraint: true, type: false }];
      if (text === sql.SAMPLE_DIGESTS) return (views.digests ?? []).map((digest, i) => ({ i: i + 1, digest }));
      if (text === sql.RECORD_GRANTS) return (views.recordGrants?.shift() ?? []).map((revoke) => ({ revoke }));
      // Nothing stands on the chunks' tables.
      if (text === sql.STANDING_ON_DROPPED || text === sql.ROUTINES_ON_CHUNKS || text === sql.SWITCHLESS_ON_CHUNKS) return [];
      if (text.includes('FROM (SELECT "customer_email"::text AS v')) return [{ v: "new@prod.example.com" }];
      if (failing && session === failing.session && text.includes(failing.text))
        return failing.failure ?? { code: "53100", message: "disk full" };
      if (text.includes(".routines h JOIN pg_proc p ON p.oid = h.routine ORDER BY 1")) return views.heldOff ?? [];
      if (text === sql.RECORD_PRESENT) return [{ present: views.owed.length > 0 }];
      if (text.includes(".views o JOIN pg_class")) return views.owed.map((oid) => ({ oid }));
      if (text === sql.TIMESCALEDB_SCHEMA) return [{ schema: "public", quoted: '"public"' }];
      if (text.includes("as_read")) return [{ ...events, as_read: true }];
      if (text.includes("WITH RECURSIVE tree")) return [aggregates.find((a) => a.oid === params?.[0]) ?? events];
      if (text.includes("written(oid)")) return [events];
      if (text.includes("timescaledb_information.hypertables")) return [{ n: 1 }];
      if (text.includes("FROM _timescaledb_catalog.hypertable h JOIN pg_class")) return [events];
      if (text.includes("FROM pg_attribute WHERE attrelid = $1 AND")) return [{ name: "customer_email", quoted: '"customer_email"' }];
      if (text.includes("attrelid = $1::regclass")) return [{ name: "customer_email" }];
      if (text === sql.CONTINUOUS_AGGREGATES) return aggregates;
      if (text.includes("FROM pg_trigger")) return [{ oid: 10, name: "audit", quoted: '"audit"', mode: "O" }];
      if (text.includes('SELECT count("customer_email")::int AS n0')) return [{ n0: 5, bad0: 0 }];
      if (text.includes("set_config('tigercloud.refreshed'")) refreshedOn.add(String(params?.[0]));
      if (text.includes("range_start_integer")) {
        const a = aggregates.find((x) => x.schema === params?.[0] && x.name === params?.[1]);
        if (!a) return [];
        const n = refreshedOn.has(a.view) ? 9 : 5;
        const chunk = `_timescaledb_internal._hyper_${a.oid}_${n}_chunk`;
        return [{ chunk, compressed: !refreshedOn.has(a.view), start: "2026-01-01", start_integer: null, drop: `DROP TABLE ${chunk}` }];
      }
      if (text === sql.COMPRESSED_CHUNKS) return [{ chunk: "_timescaledb_internal._hyper_1_1_chunk" }];
      if (text.includes("LIMIT 1) x")) return [{ n: 1 }];
      if (text.includes("FROM pg_rewrite w JOIN pg_class"))
        return [
          ...views.readers,
          ...aggregates.map((a) => ({
            oid: a.direct,
            schema: "_timescaledb_internal",
            name: `_direct_view_${a.oid}`,
            quoted: `"_timescaledb_internal"."_direct_view_${a.oid}"`,
            kind: "v",
            reads: [10],
            opaque: false,
            populated: true,
            statistics: false,
          })),
        ];
      if (text === sql.MATERIALIZATION_CALLING_OWN) return [];
      if (text.includes("user_view_schema")) return aggregates;
      if (text.includes("txid_current")) return [{ id: "7" }];
      if (text.includes("count(*)::int AS n")) return [{ n: 0 }];
      return [];
    };
    return { ...fork, params };
  };
  const maskEvents = { mask: [{ table: "events", column: "customer_email", with: "email" as const }], pauseJobs: false };

  test("a masked table: names resolved in pg_catalog alone, triggers held off, compressed chunks decompressed, one UPDATE, compressed again, triggers back, statistics made again, every row checked, then COMMIT; its space given back and the aggregate that reads it refreshed after", async () => {
    const { sent, open } = eventsFork([aggregateOver(2, "public.events_daily")]);
    const prepared = await prepareFork(testContext(), target, maskEvents, limit, open);
    expect(prepared.masked).toEqual([{ rule: "public.events.customer_email", with: "email", rows: 5 }]);
    expect(prepared.refreshed).toEqual(["public.events_daily"]);
    const order = [
      flat(sql.RESET_SETTINGS),
      flat(sql.PIN_SETTINGS),
      flat(sql.SUBSCRIPTIONS),
      "BEGIN",
      'ALTER TABLE "public"."events" DISABLE TRIGGER "audit"',
      "CREATE TEMPORARY TABLE pg_temp.tigercloud_pseudonyms ON COMMIT DROP AS " +
        "SELECT value, 'h' || $1 || '-' || n::text AS hash, 'user-' || $2 || '-' || n::text || '@example.invalid' AS email " +
        "FROM (SELECT value, row_number() OVER (ORDER BY md5($3 || value), value) AS n " +
        `FROM (SELECT DISTINCT value FROM (SELECT unnest(ARRAY["customer_email"::text]) AS value FROM "public"."events") a WHERE value IS NOT NULL) d) v`,
      "CREATE UNIQUE INDEX ON pg_temp.tigercloud_pseudonyms (value)",
      'SELECT "public".decompress_chunk($1::regclass)',
      `UPDATE "public"."events" AS masked_row SET "customer_email" = COALESCE((SELECT p.email FROM pg_temp.tigercloud_pseudonyms p WHERE p.value = masked_row."customer_email"::text), masked_row."customer_email") WHERE "customer_email" IS NOT NULL`,
      "ANALYZE _timescaledb_internal._hyper_1_1_chunk",
      'SELECT "public".compress_chunk($1::regclass)',
      "DROP TABLE pg_temp.tigercloud_pseudonyms",
      'ALTER TABLE "public"."events" ENABLE TRIGGER "audit"',
      'ANALYZE "public"."events"',
      sql.maskedRows(
        quoted('"public"."events"'),
        [{ rule: { table: "events", column: "customer_email", with: "email" }, column: quoted('"customer_email"') }],
        () => "$1",
      ),
      "COMMIT",
      'VACUUM (FULL) "public"."events"',
      "DROP TABLE _timescaledb_internal._hyper_2_5_chunk",
      sql.SET_REFRESHED,
      sql.refreshContinuousAggregate(quoted('"public"')),
      // A new chunk, compressed where the old one was: its companion is analysed (below), not its empty table.
      'SELECT "public".compress_chunk($1::regclass)',
      'ANALYZE "_timescaledb_internal"."_materialized_hypertable_2"',
    ];
    // Each in the order given, one after the other (a statement sent twice is found again further on).
    let from = 0;
    const missing = order.filter((s) => {
      const at = sent.indexOf(s, from);
      if (at >= 0) from = at + 1;
      return at < 0;
    });
    expect(missing).toEqual([]);
    // No statement carries a value: the hashing key went as a parameter.
    expect(sent.join("\n")).not.toMatch(/[0-9a-f]{32}/);
  });

  test("the values sampled stay out of the fork: a failure past the commit hands the state their keyed digests, never the values, and a run again checks against those digests as well as its own, now masked, samples", async () => {
    const digest = "0123456789abcdef0123456789abcdef";
    const fork = eventsFork([], { session: 0, text: "VACUUM (FULL)" }, { readers: [], owed: [], digests: [digest] });
    const failed = await prepareFork(testContext(), target, maskEvents, limit, fork.open).catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(PreparationFailed);
    const kept = (failed as PreparationFailed).sampledEarlier;
    expect(kept?.key).toMatch(/^[0-9a-f]{32}$/);
    expect(kept?.values).toEqual([{ column: "customer_email", digest, distinctive: true }]);
    // The digests are the server's, of the values it was sent; no value is written into the fork.
    const digested = fork.params.find((c) => c.text === flat(sql.SAMPLE_DIGESTS));
    expect(digested?.params).toEqual([kept?.key, ["new@prod.example.com"]]);
    expect(
      fork.params.some((c) => /^(INSERT|CREATE TABLE)/.test(c.text) && JSON.stringify(c.params ?? []).includes("prod.example.com")),
    ).toBe(false);

    // A failure before the commit keeps nothing: the next run samples production again.
    const early = eventsFork([], { session: 0, text: 'UPDATE "public"."events"' }, { readers: [], owed: [] });
    const before = await prepareFork(testContext(), target, maskEvents, limit, early.open).catch((e: unknown) => e);
    expect((before as PreparationFailed).sampledEarlier).toBeUndefined();

    const again = eventsFork([], undefined, { readers: [], owed: [] });
    await prepareFork(testContext(), { ...target, sampledEarlier: kept }, maskEvents, limit, again.open);
    const checks = again.params.filter((c) => c.text === flat(sql.STATISTICS_HOLDING));
    expect(checks.length).toBeGreaterThan(0);
    for (const c of checks) expect(c.params?.slice(4)).toEqual([kept?.key, [digest]]);
  });

  test("a failure past the commit leaves the record there, made again in a transaction of its own once the failure is handled, whatever dropped it; one before the commit leaves none of its own making", async () => {
    const made = (c: { text: string }) => /^CREATE SCHEMA IF NOT EXISTS "_tigercloud_preparing_[0-9a-f]{24}"$/.test(c.text);
    const late = eventsFork([], { session: 0, text: "VACUUM (FULL)" }, { readers: [], owed: [] });
    await expect(prepareFork(testContext(), target, maskEvents, limit, late.open)).rejects.toThrow(PreparationFailed);
    const texts = late.params.map((c) => c.text);
    const failedAt = texts.findIndex((t) => t.includes("VACUUM (FULL)"));
    const again = late.params.findIndex((c, i) => i > failedAt && made(c));
    expect(again).toBeGreaterThan(failedAt);
    expect(texts.slice(failedAt + 1, again)).toContain("BEGIN");
    // First, what runs beside the preparation and could drop it after: the other sessions this role may end, ended.
    expect(texts.slice(failedAt + 1, again)).toContain(flat(sql.endOtherSessions(true)));
    expect(texts.slice(again)).toContain("COMMIT");

    // With pauseJobs: what runs ended before the jobs scheduled since are paused (one running could schedule another as fast), then again.
    const paused = eventsFork([], { session: 0, text: "VACUUM (FULL)" }, { readers: [], owed: [] });
    await expect(prepareFork(testContext(), target, { ...maskEvents, pauseJobs: true }, limit, paused.open)).rejects.toThrow(
      PreparationFailed,
    );
    const pausedTexts = paused.params.map((c) => c.text);
    const pausedAt = pausedTexts.findIndex((t) => t.includes("VACUUM (FULL)"));
    const remade = paused.params.findIndex((c, i) => i > pausedAt && made(c));
    const between = pausedTexts
      .slice(pausedAt + 1, remade)
      .filter((t) => t === flat(sql.endOtherSessions(true)) || t === sql.SCHEDULED_JOBS);
    expect(between).toEqual([flat(sql.endOtherSessions(true)), sql.SCHEDULED_JOBS, flat(sql.endOtherSessions(true))]);

    const early = eventsFork([], { session: 0, text: 'UPDATE "public"."events"' }, { readers: [], owed: [] });
    await expect(prepareFork(testContext(), target, maskEvents, limit, early.open)).rejects.toThrow(PreparationFailed);
    const earlyAt = early.params.findIndex((c) => c.text.includes('UPDATE "public"."events"'));
    expect(early.params.filter((c, i) => i > earlyAt && made(c))).toEqual([]);
  });

  test("a language's validator run on a function held off fails the preparation naming what to drop, never with its bare SQLSTATE", async () => {
    const validated = { code: "42501", message: "language validation function 2248 called for language 13563 instead of 13562" };
    const fork = eventsFork([], { session: 0, text: 'UPDATE "public"."events"', failure: validated }, { readers: [], owed: [] });
    const failed = (await prepareFork(testContext(), target, maskEvents, limit, fork.open).catch((e: unknown) => e)) as Error;
    expect(failed.message).toMatch(
      /a language's validator \(such as fmgr_sql_validator\) ran on a function of the database's own while the preparation held it off: .*drop what calls it \(a view, a CHECK constraint\) in prepare\.sql/,
    );
    expect(failed.message).not.toMatch(/SQLSTATE/);
    // Another 42501 is said as PostgreSQL's condition.
    const denied = eventsFork([], {
      session: 0,
      text: 'UPDATE "public"."events"',
      failure: { code: "42501", message: "permission denied" },
    });
    const other = (await prepareFork(testContext(), target, maskEvents, limit, denied.open).catch((e: unknown) => e)) as Error;
    expect(other.message).toMatch(/SQLSTATE 42501 \(insufficient_privilege\)/);
  });

  test("a failure says only the objects the catalog has of those PostgreSQL's error named: a RAISE's table set to a value it read is not said", async () => {
    const raised = { code: "P0001", message: "nothing to see", table: "customer1@prod.example.com", constraint: "events_pkey" };
    const fork = eventsFork([], { session: 0, text: 'UPDATE "public"."events"', failure: raised }, { readers: [], owed: [] });
    const failed = (await prepareFork(testContext(), target, maskEvents, limit, fork.open).catch((e: unknown) => e)) as Error;
    expect(failed.message).toMatch(/SQLSTATE P0001 \(raise_exception\), constraint events_pkey[.] /);
    expect(failed.message).not.toContain("prod.example.com");
    const asked = fork.params.find((c) => c.text === flat(sql.NAMED_OBJECTS));
    expect(asked?.params).toEqual([null, "customer1@prod.example.com", null, "events_pkey", null]);
  });

  test("the record is readable by its owner alone: a grant production's default privileges gave another role on it is revoked, one that stays refuses the fork", async () => {
    const revoke = 'REVOKE ALL ON TABLE "_tigercloud_preparing_x"."samples" FROM "analyst"';
    const fork = eventsFork([], undefined, { readers: [], owed: [], recordGrants: [[revoke], []] });
    await prepareFork(testContext(), target, maskEvents, limit, fork.open);
    const texts = fork.params.map((c) => c.text);
    expect(texts).toContain(revoke);

    const stuck = eventsFork([], undefined, { readers: [], owed: [], recordGrants: [[revoke], [revoke]] });
    await expect(prepareFork(testContext(), target, maskEvents, limit, stuck.open)).rejects.toThrow(
      /stays readable by another role after revoking \(1 grant\(s\) it did not make\)/,
    );
  });

  test("the materialized views about to be emptied are recorded first, in a transaction of their own, and the record dropped once all are refreshed; one an earlier preparation emptied and left unpopulated is refreshed as the populated view it was", async () => {
    const view = (oid: number, name: string, populated: boolean) => ({
      oid,
      schema: "public",
      name,
      quoted: `"public"."${name}"`,
      kind: "m",
      reads: [10],
      opaque: false,
      populated,
      statistics: false,
    });
    const fork = eventsFork([], undefined, { readers: [view(50, "report", true), view(51, "left_empty", false)], owed: [51] });
    const prepared = await prepareFork(testContext(), target, maskEvents, limit, fork.open);
    expect(prepared.refreshed).toEqual(["public.left_empty", "public.report"]);
    const record = '"_tigercloud_preparing_' + require("crypto").createHash("sha256").update("svc-1").digest("hex").slice(0, 24) + '"';
    const order = [
      "COMMIT",
      "BEGIN",
      `CREATE SCHEMA IF NOT EXISTS ${record}`,
      `CREATE TABLE IF NOT EXISTS ${record}.views (view oid PRIMARY KEY)`,
      `CREATE TABLE IF NOT EXISTS ${record}.routines (routine oid PRIMARY KEY, definition text NOT NULL)`,
      `CREATE TABLE IF NOT EXISTS ${record}.lent (kind text NOT NULL, object oid NOT NULL, PRIMARY KEY (kind, object))`,
      `INSERT INTO ${record}.views SELECT unnest($1::oid[]) ON CONFLICT DO NOTHING`,
      "COMMIT",
      'REFRESH MATERIALIZED VIEW "public"."left_empty" WITH NO DATA',
      'REFRESH MATERIALIZED VIEW "public"."report" WITH NO DATA',
      'REFRESH MATERIALIZED VIEW "public"."left_empty"',
      `DROP SCHEMA IF EXISTS ${record} CASCADE`,
    ];
    let from = 0;
    expect(order.filter((x) => (from = fork.sent.indexOf(x, from) + 1) === 0)).toEqual([]);
    expect(fork.sent.filter((x) => x === 'REFRESH MATERIALIZED VIEW "public"."report"')).toHaveLength(1);
  });

  test("the database's own functions are held off after prepare.sql, in the masking's transaction, and given back once everything else is refreshed; one that runs all the same is named from the record, never from PostgreSQL's text", async () => {
    const heldOff = [{ routine: "public.other(text)" }, { routine: "public.trap()" }];
    const passing = eventsFork([aggregateOver(2, "public.events_daily")], undefined, { readers: [], owed: [], heldOff });
    await prepareFork(testContext(), target, { ...maskEvents, sql: ["SELECT 1"] }, limit, passing.open);
    const at = (pattern: RegExp) => passing.sent.findIndex((t) => pattern.test(t));
    const held = at(/^DO \$hold\$/);
    expect(held).toBeGreaterThan(passing.sent.indexOf("SELECT 1"));
    expect(held).toBeLessThan(passing.sent.indexOf("COMMIT"));
    expect(at(/^DO \$give\$/)).toBeGreaterThan(passing.sent.indexOf(sql.refreshContinuousAggregate(quoted('"public"'))));

    const failing = eventsFork(
      [aggregateOver(2, "public.events_daily")],
      {
        session: 0,
        text: "refresh_continuous_aggregate",
        failure: { code: "TGHLD", message: "held off by the preparation: public.trap()" },
      },
      { readers: [], owed: [], heldOff },
    );
    const said = await prepareFork(testContext(), target, maskEvents, limit, failing.open).then(
      () => "published",
      (err: Error) => err.message,
    );
    expect(said).toMatch(
      /failed at prepare\.mask \(refreshing the continuous aggregate public\.events_daily\): public\.trap\(\), a function of the database's own, ran where the preparation lets none run .* drop it, or what calls it, in prepare\.sql/,
    );
    expect(said).not.toContain("other(text)");
    // Given back though it failed: the fork's functions are not left without EXECUTE.
    expect(failing.sent.filter((t) => /^DO \$give\$/.test(t))).toHaveLength(1);
  });

  test("two aggregates that read none of each other: refreshed at once, the second over a session of its own, its settings pinned as the first's, ended after", async () => {
    const { bySession, open } = eventsFork([aggregateOver(2, "public.events_daily"), aggregateOver(3, "public.events_by_address")]);
    const prepared = await prepareFork(testContext(), target, maskEvents, limit, open);
    expect(prepared.refreshed).toEqual(["public.events_by_address", "public.events_daily"]);
    expect(bySession.length).toBe(2);
    const [first, second] = bySession as [(typeof bySession)[0], (typeof bySession)[0]];
    const calls = (x: { sent: string[] }) => x.sent.filter((t) => t === sql.refreshContinuousAggregate(quoted('"public"'))).length;
    expect([calls(first), calls(second)]).toEqual([1, 1]);
    // Pinned before its first refresh; nothing of the masking's transaction on it.
    expect(second.sent.slice(0, 3)).toEqual([flat(sql.PIN_SEARCH_PATH), flat(sql.RESET_SETTINGS), flat(sql.PIN_SETTINGS)]);
    expect(second.sent.filter((t) => /^(BEGIN|COMMIT|UPDATE)/.test(t))).toEqual([]);
    expect(second.ended).toBe(true);
  });

  test("a refresh failing on the second session: the failure names its step, the first session's refresh is waited for, both sessions ended", async () => {
    const { bySession, open } = eventsFork([aggregateOver(2, "public.events_daily"), aggregateOver(3, "public.events_by_address")], {
      session: 1,
      text: "refresh_continuous_aggregate",
    });
    await expect(prepareFork(testContext(), target, maskEvents, limit, open)).rejects.toThrow(
      /failed at prepare\.mask \(refreshing the continuous aggregate public\.events_(daily|by_address)\): SQLSTATE 53100\b.*The masking was committed and checked/,
    );
    // The first session's refresh ran to its end (its chunks compressed again) before the failure was said.
    expect((bySession[0]?.sent ?? []).filter((t) => t.startsWith(`SELECT "public".compress_chunk`)).length).toBe(2);
    expect(bySession.map((x) => x.ended)).toEqual([true, true]);
  });
});

describe("what is refreshed after the masking", () => {
  const { statisticsReaders, toRefresh, unpopulatedInputs } =
    require("../../../../provider/resources/serviceFork/preparation/derived") as typeof import("../../../../provider/resources/serviceFork/preparation/derived");
  const table = (oid: number, name: string) => ({ oid, schema: "public", name, quoted: quoted(`"public"."${name}"`), kind: "r" });
  const reader = (oid: number, name: string, kind: "v" | "m", reads: number[], opaque = false, populated = true, statistics = false) => ({
    ...table(oid, name),
    kind,
    reads,
    opaque,
    populated,
    statistics,
  });
  // 1 customers (masked), 2 pageviews (not), 3 metrics (not).
  const readers = [
    reader(10, "direct_views_by_email", "v", [2, 1]), // an aggregate's query joining the masked table
    reader(11, "views_by_email", "v", [20]), // its user view, over its materialization
    reader(12, "report", "m", [11]), // a materialized view over the aggregate
    reader(13, "mailing_list", "m", [], true), // through a function of the database's own
    reader(14, "direct_metrics", "v", [3]), // an aggregate over unmasked data only
    reader(15, "metric_report", "m", [3]), // a materialized view over unmasked data: refreshed all the same
    reader(16, "never_filled", "m", [1], false, false), // made WITH NO DATA: nothing to refresh
  ];
  const aggregates = [
    {
      oid: 20,
      schema: "_timescaledb_internal",
      name: "_materialized_hypertable_1",
      quoted: quoted('"_timescaledb_internal"."_materialized_hypertable_1"'),
      kind: "r",
      view: quoted("public.views_by_email"),
      direct: 10,
      runsOwn: false,
    },
    {
      oid: 21,
      schema: "_timescaledb_internal",
      name: "_materialized_hypertable_2",
      quoted: quoted('"_timescaledb_internal"."_materialized_hypertable_2"'),
      kind: "r",
      view: quoted("public.metrics_daily"),
      direct: 14,
      runsOwn: false,
    },
  ];

  test("every populated materialized view, and the aggregates that read a written table (through views, a join, a function of the database's own), each after what it reads; one calling a function of the database's own last", () => {
    const plan = toRefresh(new Set([1]), readers, aggregates).map((r) =>
      r.kind === "continuous aggregate" ? r.aggregate.view : `${r.table.schema}.${r.table.name}`,
    );
    // mailing_list's function may read any of the others: by its turn they are refreshed.
    expect(plan).toEqual(["public.metric_report", "public.views_by_email", "public.report", "public.mailing_list"]);
    // Checked afterwards for production's values: those that read what was written (or cannot be told), not the one over unmasked data.
    expect(toRefresh(new Set([1]), readers, aggregates).map((r) => r.checked)).toEqual([false, true, true, true]);
    // metric_report and views_by_email read none of each other: refreshed at once; report reads views_by_email; mailing_list alone, last.
    expect(toRefresh(new Set([1]), readers, aggregates).map((r) => r.wave)).toEqual([1, 1, 2, 3]);
    expect(toRefresh(new Set([1]), readers, aggregates).map((r) => r.opaque)).toEqual([false, false, false, true]);
  });

  test("an aggregate whose materialization hypertable has a trigger calling a function of the database's own is refreshed, alone and last, though it reads nothing written", () => {
    const triggered = aggregates.map((a) => (a.view === "public.metrics_daily" ? { ...a, runsOwn: true } : a));
    const plan = toRefresh(new Set([1]), readers, triggered);
    const daily = plan.find((r) => r.kind === "continuous aggregate" && r.aggregate.view === "public.metrics_daily");
    expect(daily?.opaque).toBe(true);
    expect(plan.at(-1)?.opaque).toBe(true);
    expect(
      toRefresh(new Set([1]), readers, aggregates).some(
        (r) => r.kind === "continuous aggregate" && r.aggregate.view === "public.metrics_daily",
      ),
    ).toBe(false);
  });

  test("nothing written: the materialized views all the same (what one reads cannot always be told), no aggregate", () => {
    expect(toRefresh(new Set(), readers, aggregates).map((r) => r.kind)).toEqual([
      "materialized view",
      "materialized view",
      "materialized view",
    ]);
  });

  test("an unpopulated materialized view's refresh first populates the unpopulated ones it reads, through views and each other, each after what it reads; a populated one is read as it is", () => {
    const chain = [
      ...readers,
      reader(40, "top", "m", [41, 44], false, false), // reads a view over an unpopulated one, and a populated one
      reader(41, "through", "v", [42]),
      reader(42, "middle", "m", [43], false, false),
      reader(43, "bottom", "m", [1], false, false),
      reader(44, "filled", "m", [45]),
      reader(45, "under_filled", "m", [1], false, false), // read by a populated view only: not needed
    ];
    expect(unpopulatedInputs(40, chain).map((r) => r.name)).toEqual(["bottom", "middle"]);
    expect(unpopulatedInputs(43, chain)).toEqual([]);
  });

  test("a materialized view or aggregate reading statistics, itself or through views, populated or not, is named; one reading views that do not is not", () => {
    const withStatistics = [
      ...readers,
      reader(30, "stats_view", "v", [], false, true, true), // a view over pg_stats: read live, not refreshed
      reader(31, "stats_copy", "m", [30]), // a materialized view over it
      reader(32, "stats_direct", "m", [], false, false, true), // over pg_stats itself, WITH NO DATA
      reader(33, "direct_stats_daily", "v", [2, 30]), // an aggregate's query joining it
    ];
    const daily = { ...(aggregates[0] as (typeof aggregates)[number]), oid: 22, view: quoted("public.stats_daily"), direct: 33 };
    expect(statisticsReaders(withStatistics, [...aggregates, daily])).toEqual([
      "public.stats_copy",
      "public.stats_direct",
      "public.stats_daily",
    ]);
    expect(statisticsReaders(readers, aggregates)).toEqual([]);
  });
});
