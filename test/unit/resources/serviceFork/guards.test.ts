// Every refusal of a fork's preparation (preparation/guards.ts), one case each, run as the runner
// runs it: its statement sent to a recording session (with its parameters), the rows the session
// answers judged. A guard without a case fails the first test: a new guard comes with its case.
import { GUARDS, type Guard } from "../../../../provider/resources/serviceFork/preparation/guards";
import * as sql from "../../../../provider/resources/serviceFork/preparation/statements";
import { recordingSession } from "../../../support/helpers";

type Name = keyof typeof GUARDS;
/** One guard's case: its input, rows that it must refuse and what it then says, and rows it lets through. */
interface Case {
  input: unknown;
  refused: object[];
  says: RegExp;
  passes: object[];
  /** A second input judged against the same rows, when the input alone decides (no statement). */
  passingInput?: unknown;
  /** What its statement must be sent with, when it has one. */
  sends?: { text: string | RegExp; params?: unknown[] };
}

const rule = { table: "customers", column: "email", with: "email" as const };
const ruleTable = { rule, schema: "public", name: "customers", label: "public.customers" };
const column = { oid: 10, label: "public.customers", column: "email" };
const table = (kind: string, name = "customers") => ({ oid: 10, schema: "public", name, kind });
const subscription = (ours: boolean) => ({
  name: "prod_sub",
  owner: "postgres",
  enabled: true,
  slot: true,
  here: true,
  ours,
  disable: "",
  detach: "",
});
const remadeView = (oid: number, place: string) => ({
  oid,
  place,
  owned: true,
  ownable: true,
  readers: [],
  others: [],
  grantors: [],
  drop: "",
  make: [],
});
const compared = { tables: [10], columns: ["email"], values: ["a@prod.example.com"], key: "k", digests: ["d1"], relations: [20] };

const CASES: Record<Name, Case> = {
  unfinishedSource: {
    input: { own: "_tigercloud_preparing_mine" },
    refused: [{ schema: "_tigercloud_preparing_theirs" }],
    says: /^the fork holds _tigercloud_preparing_theirs, the record of a preparation that did not finish on the fork it was made of: .*fork from production, or from a fork whose preparation finished$/,
    passes: [],
    sends: { text: sql.OTHER_RECORDS, params: ["_tigercloud_preparing_mine"] },
  },
  platformSettings: {
    input: undefined,
    refused: [{ name: "session_replication_role", setting: "replica" }],
    says: /^session_replication_role is replica for this role or database, and only a superuser may set it back: a masked key's cascade would not run/,
    passes: [],
    sends: { text: sql.PLATFORM_SETTINGS },
  },
  subscriptionsOfOthers: {
    input: undefined,
    refused: [subscription(false)],
    says: /^the subscription prod_sub \(of role postgres\) came with the fork enabled: .*production's replication slot.*tsdbadmin cannot disable it/,
    passes: [subscription(true), { ...subscription(false), enabled: false }],
    sends: { text: sql.SUBSCRIPTIONS },
  },
  pauseJobsWithoutTimescaleDB: {
    input: { timescaledb: false },
    refused: [],
    says: /no TimescaleDB .* leave pauseJobs out/,
    passes: [],
    passingInput: { timescaledb: true },
  },
  jobsCheckedByOwn: {
    input: undefined,
    refused: [{ job_id: 1004, what: "check_config", check: "public.check_config_of(jsonb)" }],
    says: /^job 1004's check_config, public\.check_config_of\(jsonb\), is a function of the database's own, which TimescaleDB's alter_job runs as pauseJobs pauses the job/,
    passes: [],
    sends: { text: sql.JOBS_CHECKED_BY_OWN },
  },
  jobsConfigUnread: {
    input: undefined,
    refused: [{ job_id: 1004, key: "hypertable_id" }],
    says: /^job 1004's config's hypertable_id is not written as a number: TimescaleDB's check, .* write it as a JSON number in production/,
    passes: [],
    sends: { text: sql.JOBS_CONFIG_UNREAD },
  },
  standingOnDropped: {
    input: { hypertables: [10], aggregates: [20], tables: ["_timescaledb_internal.compress_hyper_2_4_chunk"] },
    refused: [{ what: "view public.v", on: "_timescaledb_internal.compress_hyper_2_4_chunk" }],
    says: /^view public\.v on _timescaledb_internal\.compress_hyper_2_4_chunk: the preparation drops that table or makes it anew .* drop it in prepare\.sql and make it again in prepare\.sqlAfter/,
    passes: [],
    sends: { text: sql.STANDING_ON_DROPPED, params: [[10], [20], ["_timescaledb_internal.compress_hyper_2_4_chunk"]] },
  },
  routinesOnChunks: {
    input: undefined,
    refused: [{ routine: "public.f(integer)", on: "_timescaledb_internal.compress_hyper_2_4_chunk" }],
    says: /^public\.f\(integer\) \(on _timescaledb_internal\.compress_hyper_2_4_chunk\): its SQL-standard body reads a chunk's table, .* drop it in prepare\.sql/,
    passes: [],
    sends: { text: sql.ROUTINES_ON_CHUNKS },
  },
  switchlessOnChunks: {
    input: { chunks: [30] },
    refused: [
      { what: "trigger tg", on: "_timescaledb_internal._hyper_1_2_chunk", disabledOn: null },
      { what: "trigger audit", on: "_timescaledb_internal._hyper_1_3_chunk", disabledOn: "public.events" },
    ],
    says: /^trigger tg on _timescaledb_internal\._hyper_1_2_chunk: a chunk's own \(not the copy .* TimescaleDB lets no trigger or rule of a chunk be held off: drop it in prepare\.sql and make it again in prepare\.sqlAfter.*; trigger audit on _timescaledb_internal\._hyper_1_3_chunk: enabled on that chunk though disabled on its hypertable .* run ALTER TABLE public\.events DISABLE TRIGGER audit again/,
    passes: [],
    sends: { text: sql.SWITCHLESS_ON_CHUNKS, params: [[30]] },
  },
  emptyTreeStatistics: {
    input: { relations: [10], columns: ["email"] },
    refused: [{ place: "public.signups (email)" }],
    says: /^statistics of the whole, from before the masking, kept: public\.signups \(email\): no table under it holds a row/,
    passes: [],
    sends: { text: sql.INHERITED_STATISTICS, params: [[10], ["email"]] },
  },
  keyCheckedCallingOwn: {
    input: { written: [10] },
    refused: [{ place: "public.newsletter's index newsletter_x", function: "public.suffix()" }],
    says: /^public\.newsletter's index newsletter_x \(public\.suffix\(\)\): a foreign key of its table references what the masking writes/,
    passes: [],
    sends: { text: sql.KEY_CHECKED_CALLING_OWN, params: [[10]] },
  },
  keyCastsCallingOwn: {
    input: { written: [10] },
    refused: [{ place: "public.subs's key subs_who_fkey", function: "public.addr_text(public.addr)" }],
    says: /^public\.subs's key subs_who_fkey \(public\.addr_text\(public\.addr\)\): a foreign key of its table references what the masking writes/,
    passes: [],
    sends: { text: sql.KEY_CASTS_CALLING_OWN, params: [[10]] },
  },
  hiddenByOwner: {
    input: undefined,
    refused: [{ place: "public.leads", owner: "ops" }],
    says: /^public\.leads \(of role ops\): the preparation cannot take its owner's privileges .*make it tsdbadmin's or grant its owner to tsdbadmin directly/,
    passes: [],
    sends: { text: sql.HIDDEN_BY_OWNER },
  },
  keyCheckedPartitionedByOwn: {
    input: { written: [10] },
    refused: [{ place: "public.visits's dimension email", function: "public.part(anyelement)" }],
    says: /^public\.visits's dimension email \(public\.part\(anyelement\)\): a foreign key of its table references what the masking writes, .*drop what calls it \(or the foreign key\) in prepare\.sql/,
    passes: [],
    sends: { text: sql.KEY_CHECKED_PARTITIONED_BY_OWN, params: [[10]] },
  },
  jobsStillRunning: {
    input: { ids: [1000, 1001], timeIsUp: true },
    refused: [{ job_id: 1001 }],
    says: /^jobs 1001 were still running when the time ran out$/,
    passes: [],
    sends: { text: sql.RUNNING_JOBS, params: [[1000, 1001]] },
  },
  preparedByAnotherRole: {
    input: undefined,
    refused: [
      { owner: "tsdbadmin", ours: true, rollback: "ROLLBACK PREPARED 'x'" },
      { owner: "app", ours: false, rollback: "ROLLBACK PREPARED 'y'" },
    ],
    says: /^a transaction 2 prepared in production \(by role app\) is on the fork: .*only its role can roll it back/,
    passes: [{ owner: "tsdbadmin", ours: true, rollback: "ROLLBACK PREPARED 'x'" }],
    sends: { text: sql.PREPARED_TRANSACTIONS },
  },
  sqlEndsTransaction: {
    input: { begun: "7", now: "8" },
    refused: [],
    says: /ends the transaction \(COMMIT or ROLLBACK\)/,
    passes: [],
    passingInput: { begun: "7", now: "7" },
  },
  ruleTable: {
    input: ruleTable,
    refused: [
      { ...table("r"), as_read: true },
      { ...table("r", "Customers"), as_read: false },
    ],
    says: /read as public\.customers .* public\."Customers" is another table: a rule cannot tell them apart/,
    passes: [{ ...table("r"), as_read: true }],
    sends: { text: sql.FIND_TABLE, params: ["public", "customers", "public", "customers"] },
  },
  foreignUnder: {
    input: { oid: 10, label: "public.customers" },
    refused: [table("p"), table("f", "customers_remote")],
    says: /^public\.customers holds a foreign table \(public\.customers_remote\)/,
    passes: [table("p"), table("r", "customers_1")],
    sends: { text: sql.TREE, params: [10] },
  },
  ruleColumn: {
    input: { oid: 10, label: "public.customers", rule: { ...rule, column: "Email" } },
    refused: [{ name: "Email", quoted: '"Email"' }],
    says: /has no column email \(PostgreSQL reads Email in lower case\); its column "Email" has capitals/,
    passes: [{ name: "email", quoted: '"email"' }],
    sends: { text: sql.COLUMNS, params: [10] },
  },
  maskedTwice: {
    input: { label: "public.customers", column: "email", masked: ["email"] },
    refused: [],
    says: /^public\.customers\.email is masked by two rules/,
    passes: [],
    passingInput: { label: "public.customers", column: "email", masked: ["name"] },
  },
  textCast: {
    input: column,
    refused: [{ type: "secret", function: "public.secret_text(secret)", way: "to" }],
    says: /email is of type secret, whose conversion to text runs public\.secret_text\(secret\)/,
    passes: [],
    sends: { text: sql.TEXT_CAST, params: [10, "email"] },
  },
  partitionKey: {
    input: column,
    refused: [{ declared: true }],
    says: /partitioned by email: its partitions' bounds are production's values/,
    passes: [{ declared: false }],
    sends: { text: sql.PARTITIONS_BY, params: [10, "email"] },
  },
  hypertableDimension: {
    input: column,
    refused: [{ dimension: true }],
    says: /partitioned by email: its chunks' ranges are production's values/,
    passes: [{ dimension: false }],
    sends: { text: sql.HYPERTABLE_DIMENSION, params: [10, "email"] },
  },
  foreignServersOfOthers: {
    input: undefined,
    refused: [
      { name: "mine", owner: "tsdbadmin", ours: true, drop: "" },
      { name: "platform_srv", owner: "postgres", ours: false, drop: "" },
    ],
    says: /^the foreign server platform_srv \(of role postgres\) leads from the fork to another database .*tsdbadmin cannot drop it.*drop it in production/,
    passes: [{ name: "mine", owner: "tsdbadmin", ours: true, drop: "" }],
    sends: { text: sql.FOREIGN_SERVERS },
  },
  chunksLeftBehindOfOthers: {
    input: undefined,
    refused: [
      { table: "_timescaledb_internal.compress_hyper_6_16_chunk", owner: "tsdbadmin", ours: true, drop: "" },
      { table: "_timescaledb_internal._hyper_9_2_chunk", owner: "postgres", ours: false, drop: "" },
    ],
    says: /^_timescaledb_internal\._hyper_9_2_chunk \(of role postgres\) is a chunk TimescaleDB no longer lists .*tsdbadmin cannot drop it; drop it in production/,
    passes: [{ table: "_timescaledb_internal.compress_hyper_6_16_chunk", owner: "tsdbadmin", ours: true, drop: "" }],
    sends: { text: sql.CHUNKS_LEFT_BEHIND },
  },
  cascadeToForeign: {
    input: { masked: [10] },
    refused: [table("r"), table("f", "orders_remote")],
    says: /^a key's cascade would write the foreign table public\.orders_remote/,
    passes: [table("r"), table("r", "orders")],
    sends: { text: sql.WRITTEN, params: [[10]] },
  },
  functionsOnWrite: {
    input: { written: [10, 11] },
    refused: [
      { table: "public.customers", what: "constraint c", function: "public.steal(text)", why: "a function of the database's own" },
      { table: "public.orders", what: "index i", function: "public.f(text)", why: "a function of the database's own" },
    ],
    says: /^public\.customers's constraint c runs public\.steal\(text\), .*; so do 1 more: public\.orders's index i \(public\.f\(text\)\)$/,
    passes: [],
    sends: { text: sql.FUNCTIONS_ON_WRITE, params: [[10, 11]] },
  },
  domainChecksThatMayWrite: {
    input: { record: sql.ident("_tigercloud_preparing_mine") },
    refused: [
      { domain: "public.dom", constraint: "c", function: "lo_from_bytea(oid,bytea)", why: "a function that may write (VOLATILE)" },
      {
        domain: "public.other",
        constraint: "d",
        function: "public.steal(text)",
        why: "a function of the database's own the preparation could not hold off",
      },
    ],
    says: /^the domain public\.dom's CHECK c runs lo_from_bytea\(oid,bytea\), a function that may write \(VOLATILE\): .*drop it in prepare\.sql \(ALTER DOMAIN … DROP CONSTRAINT\) and add it again in prepare\.sqlAfter.*; so do 1 more: public\.other's d \(public\.steal\(text\)\)$/,
    passes: [],
    sends: { text: sql.domainChecksThatMayWrite(sql.ident("_tigercloud_preparing_mine")) },
  },
  refreshedLastThroughCycle: {
    input: { views: [30, 31], names: new Map([[30, "public.c293"]]), cycle: "{16500}" },
    refused: [
      { oid: 30, name: "public._direct_view_5" },
      { oid: 31, name: "public.m" },
    ],
    says: /^public\.c293, public\.m: refreshed last .*, a role that is itself a member of tsdbadmin, .* In production, make it tsdbadmin's, or drop it in prepare\.sql and make it again in prepare\.sqlAfter/,
    passes: [],
    sends: { text: sql.OWNED_THROUGH_CYCLE, params: [[30, 31], "{16500}"] },
  },
  rowsNotMasked: {
    input: { label: "public.customers", text: "SELECT 1", params: ["tag"], columns: ["email", "name"] },
    refused: [{ n0: 5, bad0: 0, n1: 5, bad1: 2 }],
    says: /^after the masking, 2 row\(s\) of public\.customers still hold a name that the rule did not write/,
    passes: [{ n0: 5, bad0: 0, n1: 5, bad1: 0 }],
    sends: { text: "SELECT 1", params: ["tag"] },
  },
  frozenStatistics: {
    input: { relations: [10] },
    refused: [{ place: "public.customers (email)" }],
    says: /^statistics with a target of 0 keep what production's ANALYZE put there: public\.customers \(email\); set their target back/,
    passes: [],
    sends: { text: sql.FROZEN_STATISTICS, params: [[10]] },
  },
  statisticsHolding: {
    input: { of: undefined, ...compared },
    refused: [{ place: "_timescaledb_internal._hyper_1_1_chunk (email)" }],
    says: /^statistics still hold values from before the masking: _timescaledb_internal\._hyper_1_1_chunk \(email\); ANALYZE did not replace them/,
    passes: [],
    sends: { text: sql.STATISTICS_HOLDING, params: [[10], ["email"], ["a@prod.example.com"], [20], "k", ["d1"]] },
  },
  emptyViewWithStatistics: {
    input: { view: '"public"."report"', oid: 30, name: "public.report" },
    refused: [{ found: 1 }],
    says: /^public\.report is empty once refreshed from the masked data/,
    passes: [],
    sends: { text: /^SELECT 1 AS found WHERE NOT EXISTS \(SELECT 1 FROM "public"\."report"\)/, params: [30] },
  },
  hiddenFromChecks: {
    input: undefined,
    refused: [{ place: "public.rt_part_1 (email)" }],
    says: /^public\.rt_part_1 \(email\): tsdbadmin owns it but may not read it \(or forces its row security on itself\), so its statistics are hidden from the checks .*\(GRANT SELECT ON … TO tsdbadmin/,
    passes: [],
    sends: { text: sql.HIDDEN_COLUMNS },
  },
  statisticsKept: {
    input: { relations: [10, 20] },
    refused: [{ place: "public.customers_by_domain" }],
    says: /^public\.customers_by_domain: ANALYZE sampled none of its rows .* kept the statistics it had, production's; give it a row, or drop the index/,
    passes: [],
    sends: { text: sql.KEPT_STATISTICS, params: [[10, 20]] },
  },
  statisticsCallingOwnOfOthers: {
    input: {
      tables: [
        { ...table("r", "ids"), analysable: false },
        { ...table("r", "orders"), analysable: true },
      ],
    },
    refused: [],
    says: /^public\.ids: its index, extended statistics or range type call\(s\) a function of the database's own, .* make it tsdbadmin's, or drop that index or statistics, in prepare\.sql$/,
    passes: [],
    passingInput: { tables: [{ ...table("r", "orders"), analysable: true }] },
  },
  statisticsCallingOwnKept: {
    input: {
      objects: [
        {
          ...table("r", "ids"),
          what: "index public.ids_rev",
          owned: true,
          kept: "a constraint stands on it",
          drop: "",
          make: "",
          after: [],
        },
        { ...table("m", "names"), what: "statistics public.names_s", owned: false, kept: null, drop: "", make: "", after: [] },
        { ...table("r", "orders"), what: "index public.orders_rev", owned: true, kept: null, drop: "", make: "", after: [] },
      ],
    },
    refused: [],
    says: /^index public\.ids_rev of public\.ids \(a constraint stands on it\), statistics public\.names_s of public\.names \(not tsdbadmin's\): it calls a function of the database's own, .* drop it in prepare\.sql and make it again in prepare\.sqlAfter \(it runs once nothing of production's is left\)/,
    passes: [],
    passingInput: {
      objects: [{ ...table("r", "orders"), what: "index public.orders_rev", owned: true, kept: null, drop: "", make: "", after: [] }],
    },
  },
  viewsNotMadeAgain: {
    input: {
      views: [
        { ...remadeView(1, "public.a"), readers: [2, 3] },
        remadeView(2, "public.b"),
        { ...remadeView(4, "public.c"), owned: false, others: ["function public.f()"], grantors: ["ops"] },
        { ...remadeView(5, "public.d"), ownable: false },
      ],
      names: new Map([[3, "public.v"]]),
    },
    refused: [],
    says: /^public\.a \(read by public\.v\), public\.c \(not tsdbadmin's: make it tsdbadmin's in production; needed by function public\.f\(\); granted on by ops \(grant it as its owner in production\)\), public\.d \(tsdbadmin or an owner may not create in its schema or its statistics objects', and tsdbadmin may not let them: grant them CREATE there in production\): its query calls a function of the database's own, .* Drop what reads or needs it in prepare\.sql and make that again in prepare\.sqlAfter \(it runs once nothing of production's is left\)/,
    passes: [],
    // Read by another view made again with it: both are made again, in order.
    passingInput: { views: [{ ...remadeView(1, "public.a"), readers: [2] }, remadeView(2, "public.b")], names: new Map() },
  },
  statisticsCopied: {
    input: { views: ["public.stats_copy", "public.daily"] },
    refused: [],
    says: /^public\.stats_copy, public\.daily read\(s\) PostgreSQL's statistics .* make it a plain view, or drop it in prepare\.sql$/,
    passes: [],
    passingInput: { views: [] },
  },
  timescaleRoutinesShadowed: {
    input: undefined,
    refused: [{ routine: "public.refresh_continuous_aggregate(regclass,text,text,boolean)", owner: "tsdbadmin" }],
    says: /^public\.refresh_continuous_aggregate\(regclass,text,text,boolean\) \(of role tsdbadmin\) stands beside TimescaleDB's routine .* rename or drop it in production/,
    passes: [],
    sends: { text: sql.SHADOWED_ROUTINES, params: [sql.TIMESCALEDB_ROUTINES] },
  },
  materializationCallingOwn: {
    input: undefined,
    refused: [{ view: "public.events_daily", what: "index events_daily_hook" }],
    says: /^index events_daily_hook of continuous aggregate public\.events_daily: it calls a function of the database's own .* drop it in prepare\.sql and make it again in prepare\.sqlAfter \(it runs once nothing of production's is left\)/,
    passes: [],
    sends: { text: sql.MATERIALIZATION_CALLING_OWN },
  },
  viewRowsHolding: {
    input: {
      view: '"public"."report"',
      columns: ['"email"', '"id"'],
      values: ["a@prod.example.com"],
      key: "k",
      digests: ["d1"],
      name: "public.report",
    },
    refused: [{ n: 2 }],
    says: /^public\.report still holds 2 row\(s\) with values from before the masking/,
    passes: [{ n: 0 }],
    sends: {
      // Each value as its type's output function writes it: no cast, which may be a function of the database's own.
      text: /FROM "public"\."report" WHERE pg_catalog\.lower\(pg_catalog\.upper\(pg_catalog\.btrim\(format\('%s', "email"\), \(SELECT pg_catalog\.concat\(pg_catalog\.chr\(9\), .*\)\)\)\)\) IN \(SELECT value FROM production\) OR .*sha256.*format\('%s', "email"\).* OR pg_catalog\.lower\(pg_catalog\.upper\(pg_catalog\.btrim\(format\('%s', "id"\), .*IN \(SELECT d FROM earlier\)\)$/,
      params: [["a@prod.example.com"], "k", ["d1"]],
    },
  },
  aggregateWithoutTimescaleDB: {
    input: { view: "public.daily", timescaledb: false },
    refused: [],
    says: /^public\.daily is a continuous aggregate on a fork without TimescaleDB$/,
    passes: [],
    passingInput: { view: "public.daily", timescaledb: true },
  },
  aggregatePlaceheld: {
    input: {
      view: "public.daily",
      hypertable: "_timescaledb_internal._materialized_hypertable_7",
      hazards: ["column email of the domain public.address", "2 dimensions"],
    },
    refused: [],
    says: /^the continuous aggregate public\.daily is refreshed once .* its materialization hypertable _timescaledb_internal\._materialized_hypertable_7, .* its column email of the domain public\.address, 2 dimensions\. In production, remove them .*cast the column in the aggregate's query/,
    passes: [],
    passingInput: { view: "public.daily", hypertable: "_timescaledb_internal._materialized_hypertable_7", hazards: [] },
  },
  refreshUnderRowSecurity: {
    input: { views: [41, 42], names: new Map([[42, "public.daily"]]) },
    refused: [
      { oid: 41, view: "public.report", table: "public.tiers", reader: "tsdbadmin", forced: true },
      { oid: 42, view: "_timescaledb_internal._direct_view_3", table: "public.events", reader: "app", forced: false },
    ],
    says: /^public\.report reads public\.tiers as tsdbadmin, whose row security applies to it \(forced on its owner\), public\.daily reads public\.events as app, whose row security applies to it \(not its owner\): .* PostgreSQL would refuse the refresh\. In production, have the table's owner own the view and not force row security .* or drop the view in prepare\.sql and make it again in prepare\.sqlAfter/,
    passes: [],
    sends: { text: sql.REFRESHES_UNDER_ROW_SECURITY, params: [[41, 42]] },
  },
};

/** A guard checked as the runner checks it, against a session answering `rows`: what it sent, and its refusal. */
async function judge(guard: Guard<unknown, object>, input: unknown, rows: object[]) {
  const { sent, open } = recordingSession(() => rows);
  const session = await open();
  const params: (readonly unknown[] | undefined)[] = [];
  const statement = guard.statement?.(input);
  const answered = statement ? await session.query<object>(statement[0], statement[1]) : [];
  if (statement) params.push(statement[1]);
  return { sent, params, refusal: guard.refuse(answered, input) };
}

test("every guard has its case here", () => {
  expect(Object.keys(CASES).sort()).toEqual(Object.keys(GUARDS).sort());
});

describe.each(Object.keys(GUARDS) as Name[])("%s", (name) => {
  const guard = GUARDS[name] as Guard<unknown, object>;
  const c = CASES[name];

  test("refuses what it guards against, in words that name the object and the fix", async () => {
    const { sent, params, refusal } = await judge(guard, c.input, c.refused);
    expect(refusal).toMatch(c.says);
    if (c.sends) {
      const flat = (t: string) => t.replace(/\s+/g, " ").trim();
      expect(sent).toHaveLength(1);
      if (typeof c.sends.text === "string") expect(sent[0]).toBe(flat(c.sends.text));
      else expect(sent[0]).toMatch(c.sends.text);
      if (c.sends.params) expect(params[0]).toEqual(c.sends.params);
    } else expect(sent).toEqual([]);
  });

  test("lets through what it does not guard against", async () => {
    expect((await judge(guard, c.passingInput ?? c.input, c.passes)).refusal).toBeUndefined();
  });
});

test("names from the catalog reach a refusal escaped and cut: no terminal control, no endless text", async () => {
  const refusal = GUARDS.foreignServersOfOthers.refuse(
    [{ name: `evil\x1b[2J${"x".repeat(2000)}`, owner: "postgres", ours: false, drop: "" as sql.ServerStatement }],
    undefined,
  );
  expect(refusal).toContain("evil\\x1b[2J");
  expect(refusal).not.toContain("\x1b");
  expect(refusal?.length).toBeLessThanOrEqual(600);
});
