// Every refusal of a fork's preparation, declared once: what it looks for (a statement of
// statements.ts, or what the runner already read) and what it says, naming the object and the fix,
// never a value. The runner (run.ts) checks each at its step; a new guard is one entry here, and
// one case in its unit test (test/unit/resources/serviceFork/guards.test.ts, which fails for a
// guard without one).
import { printable } from "../../../text";
import type { MaskRule } from "./schema";
import * as sql from "./statements";
import { type Quoted, shownName, type Table } from "./statements";

export interface Guard<Input, Row = Record<string, unknown>> {
  /** What it refuses, in a few words: the unit test's name for it. */
  name: string;
  /** The statement that finds it and its parameters; none: it judges its input alone. */
  statement?: (input: Input) => readonly [text: string, params?: readonly unknown[]];
  /** The refusal's words, or undefined: nothing to refuse. */
  refuse: (rows: Row[], input: Input) => string | undefined;
}

/**
 * Where what a refusal asks to drop in prepare.sql is made again: prepare.sqlAfter runs once every
 * view, statistic and function is the masked data's again, as the URL's holder would find them.
 */
export const AGAIN = "in prepare.sqlAfter (it runs once nothing of production's is left)";

/** Names from the catalog, said printable and cut after escaping. */
const said = (text: string, max = 600) => printable(text).slice(0, max);
const list = <T>(items: T[], say: (item: T) => string) => items.map(say).join(", ");

export interface Subscription {
  name: string;
  owner: string;
  enabled: boolean;
  slot: boolean;
  here: boolean;
  ours: boolean;
  disable: sql.ServerStatement;
  detach: sql.ServerStatement;
}

const subscriptionsOfOthers: Guard<void, Subscription> = {
  name: "an enabled subscription tsdbadmin may not alter",
  statement: () => [sql.SUBSCRIPTIONS],
  refuse: (rows) => {
    const theirs = rows.filter((s) => s.enabled && !s.ours);
    if (!theirs.length) return undefined;
    return said(
      `the subscription ${list(theirs, (s) => `${s.name} (of role ${s.owner}${s.here ? "" : ", in another database"})`)} came with the fork ` +
        "enabled: its apply worker would take production's replication slot whenever production's pauses, and stream the publisher's rows " +
        "into the fork instead of production; tsdbadmin cannot disable it (only its owner can, in its database). In production, make it " +
        "tsdbadmin's (on PostgreSQL 16 and later) or drop it, then fork again",
      700,
    );
  },
};

const unfinishedSource: Guard<{ own: string }, { schema: string }> = {
  name: "a fork made of a fork whose preparation did not finish",
  statement: ({ own }) => [sql.OTHER_RECORDS, [own]],
  refuse: (rows) =>
    rows.length
      ? said(
          `the fork holds ${list(rows, (r) => r.schema)}, the record of a preparation that did not finish on the fork it was made of: ` +
            "that fork's data may be masked already, and what its preparation sampled from production is not here to check against; " +
            "fork from production, or from a fork whose preparation finished",
        )
      : undefined,
};

const platformSettings: Guard<void, { name: string; setting: string }> = {
  name: "a setting only a superuser may change, changing what the masking does",
  statement: () => [sql.PLATFORM_SETTINGS],
  refuse: (rows) =>
    rows.length
      ? said(
          `${list(rows, (r) => `${r.name} is ${r.setting}`)} for this role or database, and only a superuser may set it back: ` +
            "a masked key's cascade would not run (PostgreSQL's own triggers of foreign keys do not fire); have it reset in production, then fork again",
        )
      : undefined,
};

const pauseJobsWithoutTimescaleDB: Guard<{ timescaledb: boolean }> = {
  name: "pauseJobs on a fork without TimescaleDB",
  refuse: (_, { timescaledb }) =>
    timescaledb ? undefined : "the fork has no TimescaleDB (no timescaledb extension in tsdb), so no job to pause; leave pauseJobs out",
};

const jobsCheckedByOwn: Guard<void, { job_id: number; what: string; check: string }> = {
  name: "a job for which alter_job runs a function of the database's own",
  statement: () => [sql.JOBS_CHECKED_BY_OWN],
  refuse: (rows) =>
    rows.length
      ? said(
          `${rows.map((j) => `job ${j.job_id}'s ${j.what}, ${j.check},`).join(" and ")} is a function of the database's own, which ` +
            "TimescaleDB's alter_job runs as pauseJobs pauses the job, before anything is masked: it could read production's values; " +
            "take it off in production (a check_config: alter_job(job_id, check_config => 0); an integer_now: set_integer_now_func) " +
            "and set it again on the fork once it is published, or leave pauseJobs out",
        )
      : undefined,
};

const jobsConfigUnread: Guard<void, { job_id: number; key: string }> = {
  name: "a job with a check whose config names a hypertable in a form other than a number",
  statement: () => [sql.JOBS_CONFIG_UNREAD],
  refuse: (rows) =>
    rows.length
      ? said(
          `${rows.map((j) => `job ${j.job_id}'s config's ${j.key}`).join(" and ")} is not written as a number: TimescaleDB's check, ` +
            "which alter_job runs as pauseJobs pauses the job, reads it as a hypertable's ID all the same, so which integer_now function it " +
            "runs, before anything is masked, cannot be told; write it as a JSON number in production (alter_job(job_id, config => …)), " +
            "or leave pauseJobs out",
        )
      : undefined,
};

const standingOnDropped: Guard<{ hypertables: number[]; aggregates: number[]; tables: string[] }, { what: string; on: string }> = {
  name: "what stands on a chunk's table the preparation drops or makes anew",
  statement: ({ hypertables, aggregates, tables }) => [sql.STANDING_ON_DROPPED, [hypertables, aggregates, tables]],
  refuse: (rows) =>
    rows.length
      ? said(
          `${list(rows, (r) => `${r.what} on ${r.on}`)}: the preparation drops that table or makes it anew (TimescaleDB's ` +
            "decompress_chunk and compress_chunk as it masks a hypertable, a continuous aggregate's chunks before its refresh, a chunk " +
            "left empty or left behind), which what stands on it prevents or would not survive; drop it in prepare.sql and make it " +
            `again ${AGAIN}, on the hypertable rather than its chunk`,
        )
      : undefined,
};

const routinesOnChunks: Guard<void, { routine: string; on: string }> = {
  name: "a routine whose SQL-standard body reads a chunk's table",
  statement: () => [sql.ROUTINES_ON_CHUNKS],
  refuse: (rows) =>
    rows.length
      ? said(
          `${list(rows, (r) => `${r.routine} (on ${r.on})`)}: its SQL-standard body reads a chunk's table, which the preparation may ` +
            "drop or make anew as it masks (TimescaleDB's decompress_chunk and compress_chunk), and once held off it could not be " +
            `given back; drop it in prepare.sql and make it again ${AGAIN}, reading the hypertable rather than its chunk`,
        )
      : undefined,
};

const switchlessOnChunks: Guard<{ chunks: number[] }, { what: string; on: string; disabledOn: string | null }> = {
  name: "a trigger or rule of a chunk's own, or a chunk's copy left on of its hypertable's disabled trigger, which TimescaleDB lets no one switch off",
  statement: ({ chunks }) => [sql.SWITCHLESS_ON_CHUNKS, [chunks]],
  refuse: (rows) => {
    const own = rows.filter((r) => r.disabledOn === null);
    const leftOn = rows.filter((r) => r.disabledOn !== null);
    const ownSaid = own.length
      ? `${list(own, (r) => `${r.what} on ${r.on}`)}: a chunk's own (not the copy TimescaleDB makes of its hypertable's), it would ` +
        "run on every row the masking writes, and TimescaleDB lets no trigger or rule of a chunk be held off: drop it in " +
        `prepare.sql and make it again ${AGAIN}, on the hypertable rather than its chunk`
      : "";
    const leftOnSaid = leftOn.length
      ? `${list(leftOn, (r) => `${r.what} on ${r.on}`)}: enabled on that chunk though disabled on its hypertable (a chunk made after ` +
        "DISABLE TRIGGER gets an enabled copy), it would run on every row the masking writes, and TimescaleDB lets no trigger of " +
        `a chunk be switched: in prepare.sql, run ${list(leftOn, (r) => `ALTER TABLE ${r.disabledOn} DISABLE TRIGGER ${r.what.slice("trigger ".length)}`)} ` +
        "again (TimescaleDB passes it to every chunk), or ENABLE it there if it is meant to run"
      : "";
    return rows.length ? said([ownSaid, leftOnSaid].filter(Boolean).join("; "), 1200) : undefined;
  },
};

const emptyTreeStatistics: Guard<{ relations: number[]; columns: string[] }, { place: string }> = {
  name: "a parent whose tree holds no row but keeps statistics of its whole of a masked column",
  statement: ({ relations, columns }) => [sql.INHERITED_STATISTICS, [relations, columns]],
  refuse: (rows) =>
    rows.length
      ? said(
          `statistics of the whole, from before the masking, kept: ${rows.map((r) => r.place).join(", ")}: no table under it holds a row, ` +
            "so ANALYZE keeps them, and they could not be dropped (the preparation sets the column's type again, which a view over it " +
            "prevents): drop such a view in prepare.sql and make it again in prepare.sqlAfter, drop the empty parent, or give a table under it a row",
        )
      : undefined,
};

const jobsStillRunning: Guard<{ ids: number[]; timeIsUp: boolean }, { job_id: number }> = {
  name: "jobs still running when the time runs out",
  statement: ({ ids }) => [sql.RUNNING_JOBS, [ids]],
  refuse: (rows, { timeIsUp }) =>
    rows.length && timeIsUp ? `jobs ${rows.map((j) => j.job_id).join(", ")} were still running when the time ran out` : undefined,
};

export interface PreparedTransaction {
  owner: string;
  ours: boolean;
  rollback: sql.ServerStatement;
}

const preparedByAnotherRole: Guard<void, PreparedTransaction> = {
  name: "a transaction prepared in production by another role",
  statement: () => [sql.PREPARED_TRANSACTIONS],
  // Named by their place and role, never by their name: an application chooses it, and it may be data.
  refuse: (rows) => {
    const i = rows.findIndex((t) => !t.ours);
    if (i < 0) return undefined;
    return said(
      `a transaction ${i + 1} prepared in production (by role ${rows[i]?.owner}) is on the fork: committed there it would write ` +
        "production's rows over the masking, and only its role can roll it back; commit or roll it back in production, then fork again",
    );
  },
};

const sqlEndsTransaction: Guard<{ begun: string | undefined; now: string | undefined }> = {
  name: "SQL of the user's that ends the transaction",
  refuse: (_, { begun, now }) =>
    begun === now ? undefined : "it ends the transaction (COMMIT or ROLLBACK): the preparation must stay one transaction",
};

export interface Found extends Table {
  as_read: boolean;
}

const KINDS: Record<string, string> = { v: "a view", m: "a materialized view", S: "a sequence", i: "an index", c: "a composite type" };

/** A rule's table as PostgreSQL reads it: `schema.table`, lower case. */
export interface RuleTable {
  rule: MaskRule;
  schema: string;
  name: string;
  label: string;
}

const ruleTable: Guard<RuleTable, Found> = {
  name: "a rule's table that is not one table of the fork",
  statement: ({ schema, name }) => [sql.FIND_TABLE, [schema.toLowerCase(), name.toLowerCase(), schema, name]],
  refuse: (found, { rule, label }) => {
    const read = found.find((t) => t.as_read);
    const other = found.find((t) => !t.as_read);
    if (other && read)
      return (
        `the table ${rule.table} is read as ${label} (PostgreSQL lowers unquoted names), and ${shownName(other)} is another table: ` +
        `a rule cannot tell them apart; rename one of them, or mask ${shownName(other)} in prepare.sql`
      );
    if (!read)
      return other
        ? `there is no table ${label} (PostgreSQL reads ${rule.table} unquoted, in lower case); ${shownName(other)} has capitals: ` +
            `rename it to lower case, or mask it in prepare.sql`
        : `there is no table ${label} on the fork (schema.table, as PostgreSQL reads it)`;
    if (read.kind === "f")
      return `${label} is a foreign table: writing it would change another database's rows (production's); a rule masks tables of the fork`;
    if (read.kind !== "r" && read.kind !== "p")
      return `${label} is not a table (${KINDS[read.kind] ?? read.kind}); name the table that holds the data`;
    return undefined;
  },
};

const foreignUnder: Guard<{ oid: number; label: string }, Table> = {
  name: "a foreign table under a rule's table",
  statement: ({ oid }) => [sql.TREE, [oid]],
  refuse: (tree, { label }) => {
    const foreign = tree.find((t) => t.kind === "f");
    return foreign && `${label} holds a foreign table (${shownName(foreign)}): the masking would write another database's rows`;
  },
};

export interface Column {
  name: string;
  quoted: Quoted;
}

const ruleColumn: Guard<{ oid: number; label: string; rule: MaskRule }, Column> = {
  name: "a rule's column the table does not have",
  statement: ({ oid }) => [sql.COLUMNS, [oid]],
  refuse: (columns, { label, rule }) => {
    if (columns.some((c) => c.name === rule.column.toLowerCase())) return undefined;
    return columns.some((c) => c.name === rule.column)
      ? `${label} has no column ${rule.column.toLowerCase()} (PostgreSQL reads ${rule.column} in lower case); its column "${rule.column}" has capitals: rename it, or mask it in prepare.sql`
      : `${label} has no column ${rule.column.toLowerCase()}`;
  },
};

const maskedTwice: Guard<{ label: string; column: string; masked: string[] }> = {
  name: "a column two rules mask",
  refuse: (_, { label, column, masked }) =>
    masked.includes(column) ? `${label}.${column} is masked by two rules: one rule per column` : undefined,
};

/** A rule's column, resolved: its table's oid and what to call them. */
export interface RuleColumn {
  oid: number;
  label: string;
  column: string;
}

const textCast: Guard<RuleColumn, { type: string; function: string; way: "to" | "from" }> = {
  name: "a column whose conversion to or from text is a function of the database's own",
  statement: ({ oid, column }) => [sql.TEXT_CAST, [oid, column]],
  refuse: ([cast], { label, column }) =>
    cast &&
    said(
      cast.way === "to"
        ? `${label}.${column} is of type ${cast.type}, whose conversion to text runs ${cast.function}, a function of the database's own: ` +
            "the masking reads every value as text, through it; drop the cast in prepare.sql, or mask the column there"
        : `${label}.${column} is of type ${cast.type}, whose conversion from text runs ${cast.function}, a function of the database's own: ` +
            "what the masking writes is assigned to the column through it, on each row; drop the cast in prepare.sql, or mask the column there",
    ),
};

const partitionKey: Guard<RuleColumn, { declared: boolean }> = {
  name: "a column that partitions its table",
  statement: ({ oid, column }) => [sql.PARTITIONS_BY, [oid, column]],
  refuse: ([row], { label, column }) =>
    row?.declared
      ? `${label} is partitioned by ${column}: its partitions' bounds are production's values, which masking its rows cannot change; ` +
        "leave it out, or mask it another way in prepare.sql"
      : undefined,
};

const hypertableDimension: Guard<RuleColumn, { dimension: boolean }> = {
  name: "a column that is a hypertable's dimension",
  statement: ({ oid, column }) => [sql.HYPERTABLE_DIMENSION, [oid, column]],
  refuse: ([row], { label, column }) =>
    row?.dimension
      ? `${label} is partitioned by ${column}: its chunks' ranges are production's values, which masking its rows cannot change; ` +
        "leave it out, or mask it another way in prepare.sql"
      : undefined,
};

export interface ForeignServer {
  name: string;
  owner: string;
  ours: boolean;
  drop: sql.ServerStatement;
}

const foreignServersOfOthers: Guard<void, ForeignServer> = {
  name: "a foreign server tsdbadmin cannot drop",
  statement: () => [sql.FOREIGN_SERVERS],
  refuse: (servers) => {
    const theirs = servers.filter((f) => !f.ours);
    if (!theirs.length) return undefined;
    return said(
      `the foreign server ${list(theirs, (f) => `${f.name} (of role ${f.owner})`)} leads from the fork to another database ` +
        `(production's, perhaps), and tsdbadmin cannot drop it: only its owner can; drop it in production (or have its owner ` +
        "do so, or make it tsdbadmin's: ALTER SERVER … OWNER TO tsdbadmin), then fork again",
    );
  },
};

export interface LeftBehind {
  table: string;
  owner: string;
  ours: boolean;
  drop: sql.ServerStatement;
}

const chunksLeftBehindOfOthers: Guard<void, LeftBehind> = {
  name: "a chunk TimescaleDB left behind that tsdbadmin cannot drop",
  statement: () => [sql.CHUNKS_LEFT_BEHIND],
  refuse: (tables) => {
    const theirs = tables.filter((t) => !t.ours);
    if (!theirs.length) return undefined;
    return said(
      `${list(theirs, (t) => `${t.table} (of role ${t.owner})`)} is a chunk TimescaleDB no longer lists (left behind when what it belonged ` +
        "to was dropped): it may hold production's rows, and tsdbadmin cannot drop it; drop it in production, then fork again",
    );
  },
};

const cascadeToForeign: Guard<{ masked: number[] }, Table> = {
  name: "a key's cascade that would write a foreign table",
  statement: ({ masked }) => [sql.WRITTEN, [masked]],
  refuse: (written) => {
    const foreign = written.find((t) => t.kind === "f");
    return foreign && `a key's cascade would write the foreign table ${shownName(foreign)}: another database's rows`;
  },
};

/** What a key's check runs of the database's own, refused: the same words for each way it does. */
const keyCheckRuns = (rows: { place: string; function: string }[]) =>
  rows.length
    ? said(
        `${list(rows, (r) => `${r.place} (${r.function})`)}: a foreign key of its table references what the masking writes, and the ` +
          "key's check, on each row written, plans a query of it, which runs the function while the rows are not yet masked; " +
          `drop what calls it (or the foreign key) in prepare.sql and make it again ${AGAIN}`,
      )
    : undefined;

const keyCheckedCallingOwn: Guard<{ written: number[] }, { place: string; function: string }> = {
  name: "an index, statistics object, CHECK or partition key calling a function of the database's own, of a table a key's check reads",
  statement: ({ written }) => [sql.KEY_CHECKED_CALLING_OWN, [written]],
  refuse: keyCheckRuns,
};

const keyCastsCallingOwn: Guard<{ written: number[] }, { place: string; function: string }> = {
  name: "a key whose check or cascade casts or compares through a function of the database's own",
  statement: ({ written }) => [sql.KEY_CASTS_CALLING_OWN, [written]],
  refuse: keyCheckRuns,
};

const hiddenByOwner: Guard<void, { place: string; owner: string }> = {
  name: "a table, view or index whose owner's privileges tsdbadmin could take but the preparation could not lend itself",
  statement: () => [sql.HIDDEN_BY_OWNER],
  refuse: (hidden) =>
    hidden.length
      ? said(
          `${list(hidden, (h) => `${h.place} (of role ${h.owner})`)}: the preparation cannot take its owner's privileges (its owner a ` +
            "member of tsdbadmin itself, or reached through a NOINHERIT role), so its statistics are hidden from the checks, while the URL's " +
            "holder may take them (SET ROLE, or CREATEROLE); in production, make it tsdbadmin's or grant its owner to tsdbadmin directly " +
            "(revoking tsdbadmin from it), then fork again",
        )
      : undefined,
};

const keyCheckedPartitionedByOwn: Guard<{ written: number[] }, { place: string; function: string }> = {
  name: "a dimension partitioned by a function of the database's own, of a hypertable a key's check reads",
  statement: ({ written }) => [sql.KEY_CHECKED_PARTITIONED_BY_OWN, [written]],
  refuse: keyCheckRuns,
};

const functionsOnWrite: Guard<{ written: number[] }, { table: string; what: string; function: string; why: string }> = {
  name: "a function of the database's own run on each row the masking writes",
  statement: ({ written }) => [sql.FUNCTIONS_ON_WRITE, [written]],
  refuse: ([first, ...more]) =>
    first &&
    said(
      `${first.table}'s ${first.what} runs ${first.function}, ${first.why}, on each row the masking writes: ` +
        `it could read the rows not yet masked and copy them elsewhere; drop it in prepare.sql (and make it again ${AGAIN})` +
        (more.length ? `; so do ${more.length} more: ${list(more, (r) => `${r.table}'s ${r.what} (${r.function})`)}` : ""),
    ),
};

const domainChecksThatMayWrite: Guard<{ record: Quoted }, { domain: string; constraint: string; function: string; why: string }> = {
  name: "a domain's CHECK running a function that may write or run a query, which a value's input runs where no catalog names it",
  statement: ({ record }) => [sql.domainChecksThatMayWrite(record)],
  refuse: ([first, ...more]) =>
    first &&
    said(
      `the domain ${first.domain}'s CHECK ${first.constraint} runs ${first.function}, ${first.why}: a value's input runs a domain's ` +
        "CHECK where no catalog entry names the domain (a record's, TimescaleDB's compressed_data's, a validator's parse of a cast), " +
        `so it could read rows not yet masked and copy them elsewhere; drop it in prepare.sql (ALTER DOMAIN … DROP CONSTRAINT) and add it again ${AGAIN}` +
        (more.length ? `; so do ${more.length} more: ${list(more, (r) => `${r.domain}'s ${r.constraint} (${r.function})`)}` : ""),
    ),
};

/** A masked table's one scan after the masking: the statement (built with its parameters) and each rule's column. */
export interface MaskedScan {
  label: string;
  text: string;
  params: unknown[];
  columns: string[];
}

const rowsNotMasked: Guard<MaskedScan, Record<string, number>> = {
  name: "rows of a masked column that the rule did not write",
  statement: ({ text, params }) => [text, params],
  refuse: ([found], { label, columns }) => {
    const n = columns.findIndex((_, i) => (found?.[`bad${i}`] ?? 0) > 0);
    return n < 0
      ? undefined
      : `after the masking, ${found?.[`bad${n}`]} row(s) of ${label} still hold a ${columns[n]} that the rule did not write: something on the ` +
          `table (a trigger, a rule, a policy) kept or wrote other values`;
  },
};

const frozenStatistics: Guard<{ relations: number[] }, { place: string }> = {
  name: "statistics with a target of 0",
  statement: ({ relations }) => [sql.FROZEN_STATISTICS, [relations]],
  refuse: (frozen) =>
    frozen.length
      ? `statistics with a target of 0 keep what production's ANALYZE put there: ${said(
          list(frozen, (f) => f.place),
          300,
        )}; ` +
        "set their target back in prepare.sql (ALTER TABLE … ALTER COLUMN … SET STATISTICS -1, ALTER STATISTICS … SET STATISTICS -1)"
      : undefined,
};

/** Statistics to compare with production's values: of these columns of these tables, and of every column of `relations`; `of` says whose. */
export interface Compared {
  of: string | undefined;
  tables: number[];
  columns: string[];
  /** Production's values sampled by this run, and an earlier run's as digests under `key` (statements.ts, SAMPLE_DIGESTS). */
  values: string[];
  key: string;
  digests: string[];
  relations: number[];
}

const hiddenFromChecks: Guard<void, { place: string }> = {
  name: "a column of tsdbadmin's own that it may not read",
  statement: () => [sql.HIDDEN_COLUMNS],
  refuse: (hidden) =>
    hidden.length
      ? `${said(
          list(hidden, (h) => h.place),
          300,
        )}: tsdbadmin owns it but may not read it (or forces its row security on itself), so its statistics are hidden from the ` +
        "checks (and the URL's holder may undo that); grant it in prepare.sql (GRANT SELECT ON … TO tsdbadmin); row security forced in " +
        "production is lifted for the checks and forced again by the preparation itself: do not force it in prepare.sqlAfter"
      : undefined,
};

const statisticsKept: Guard<{ relations: number[] }, { place: string }> = {
  name: "statistics ANALYZE kept, having sampled no row",
  statement: ({ relations }) => [sql.KEPT_STATISTICS, [relations]],
  refuse: (kept) =>
    kept.length
      ? `${said(
          list(kept, (k) => k.place),
          300,
        )}: ANALYZE sampled none of its rows (an empty table whose statistics could not be dropped, an index whose predicate no masked ` +
        "row meets, a parent whose rows are all in its children) and kept the statistics it had, production's; give it a row, or drop " +
        "the index (or the statistics) in prepare.sql and make it again in prepare.sqlAfter"
      : undefined,
};

const statisticsCallingOwnOfOthers: Guard<{ tables: Array<Table & { analysable: boolean }> }> = {
  name: "a table whose ANALYZE runs a function of the database's own, that tsdbadmin may not analyse",
  refuse: (_, { tables }) => {
    const theirs = tables.filter((t) => !t.analysable);
    return theirs.length
      ? said(
          `${list(theirs, shownName)}: its index, extended statistics or range type call(s) a function of the database's own, whose ` +
            "statistics may hold what it read in production (masked values among them), and tsdbadmin may not ANALYZE it again (only its " +
            "owner or the database's may); make it tsdbadmin's, or drop that index or statistics, in prepare.sql",
        )
      : undefined;
  },
};

export interface OwnStatisticsObject extends Table {
  what: string;
  owned: boolean;
  kept: string | null;
  drop: sql.ServerStatement;
  make: sql.ServerStatement;
  after: sql.ServerStatement[];
}

const statisticsCallingOwnKept: Guard<{ objects: OwnStatisticsObject[] }> = {
  name: "an index or extended statistics calling a function of the database's own, that cannot be dropped and made again",
  refuse: (_, { objects }) => {
    const kept = objects.filter((o) => !o.owned || o.kept);
    return kept.length
      ? said(
          `${list(kept, (o) => `${o.what} of ${shownName(o)} (${o.kept ?? "not tsdbadmin's"})`)}: ` +
            "it calls a function of the database's own, which can read statistics still production's while it runs in a refresh or " +
            "ANALYZE, so the preparation drops it until everything else is made again, and it cannot; drop it in prepare.sql and make it " +
            `again ${AGAIN}, or make its table tsdbadmin's in production`,
        )
      : undefined;
  },
};

const viewsNotMadeAgain: Guard<{ views: sql.ViewMadeAgain[]; names: Map<number, string> }> = {
  name: "a materialized view calling a function of the database's own that cannot be made again with no data",
  refuse: (_, { views, names }) => {
    const remade = new Set(views.map((v) => v.oid));
    const why = (v: sql.ViewMadeAgain) =>
      [
        ...(v.owned ? [] : ["not tsdbadmin's: make it tsdbadmin's in production"]),
        ...(v.ownable
          ? []
          : [
              "tsdbadmin or an owner may not create in its schema or its statistics objects', and tsdbadmin may not let them: grant them CREATE there in production",
            ]),
        ...v.readers.filter((r) => !remade.has(r)).map((r) => `read by ${names.get(r) ?? `relation ${r}`}`),
        ...v.others.map((o) => `needed by ${o}`),
        ...(v.grantors.length ? [`granted on by ${v.grantors.join(", ")} (grant it as its owner in production)`] : []),
      ].join("; ");
    const kept = views.filter((v) => why(v) !== "");
    return kept.length
      ? // The names cut, never the fix.
        said(
          list(kept, (v) => `${v.place} (${why(v)})`),
          500,
        ) +
          ": its query calls a function of the database's own, which can read " +
          "statistics (its own among them) while it is refreshed; they are production's until the view is made again with no data, " +
          "and the preparation cannot make it again as it was. Drop what reads or needs it in prepare.sql and make that again " +
          AGAIN
      : undefined;
  },
};

const statisticsHolding: Guard<Compared, { place: string }> = {
  name: "statistics that still hold production's values",
  statement: ({ tables, columns, values, relations, key, digests }) => [
    sql.STATISTICS_HOLDING,
    [tables, columns, values, relations, key, digests],
  ],
  refuse: (holding, { of }) =>
    !holding.length
      ? undefined
      : of
        ? `statistics of ${of} still hold values from before the masking: ${said(
            list(holding, (h) => h.place),
            300,
          )}`
        : `statistics still hold values from before the masking: ${said(
            list(holding, (h) => h.place),
            300,
          )}; ` +
          `ANALYZE did not replace them (PostgreSQL keeps an empty table's): give such a table a row, or drop its statistics, in prepare.sql`,
};

const emptyViewWithStatistics: Guard<{ view: Quoted; oid: number; name: string }> = {
  name: "a materialized view or continuous aggregate its refresh left empty, holding statistics",
  statement: ({ view, oid }) => [sql.emptyWithStatistics(view), [oid]],
  refuse: (rows, { name }) =>
    rows.length
      ? `${said(name, 200)} is empty once refreshed from the masked data, and PostgreSQL keeps an empty table's old statistics ` +
        `(production's values): drop it in prepare.sql, or give what it reads rows in prepare.sqlAfter`
      : undefined,
};

const statisticsCopied: Guard<{ views: string[] }> = {
  name: "a materialized view or continuous aggregate whose query reads statistics",
  refuse: (_, { views }) =>
    views.length
      ? said(
          `${views.join(", ")} read(s) PostgreSQL's statistics (pg_stats, pg_stats_ext, pg_stats_ext_exprs): refreshed while the ` +
            "preparation makes the statistics again, it would copy those not yet made from the masked data (production's values); " +
            "make it a plain view, or drop it in prepare.sql",
        )
      : undefined,
};

const timescaleRoutinesShadowed: Guard<void, { routine: string; owner: string }> = {
  name: "a routine of the database's own named as TimescaleDB's, in its schema",
  statement: () => [sql.SHADOWED_ROUTINES, [sql.TIMESCALEDB_ROUTINES]],
  refuse: (rows) =>
    rows.length
      ? said(
          `${list(rows, (r) => `${r.routine} (of role ${r.owner})`)} stands beside TimescaleDB's routine of that name in its schema: ` +
            "a call the preparation makes to TimescaleDB's could run it instead; rename or drop it in production, then fork again",
        )
      : undefined,
};

const materializationCallingOwn: Guard<void, { view: string; what: string }> = {
  name: "a continuous aggregate whose materialization hypertable's index or statistics call a function of the database's own",
  statement: () => [sql.MATERIALIZATION_CALLING_OWN],
  refuse: (rows) =>
    rows.length
      ? said(
          `${list(rows, (r) => `${r.what} of continuous aggregate ${r.view}`)}: it calls a function of the database's own on the ` +
            "aggregate's materialization hypertable, which runs in its refresh or ANALYZE while other views' statistics may still be " +
            `production's, and keeps statistics of what it read; drop it in prepare.sql and make it again ${AGAIN}`,
        )
      : undefined,
};

const viewRowsHolding: Guard<
  { view: Quoted; columns: Quoted[]; values: string[]; key: string; digests: string[]; name: string },
  { n: number }
> = {
  name: "a refreshed view's rows holding production's values",
  statement: ({ view, columns, values, key, digests }) => [sql.rowsHolding(view, columns), [values, key, digests]],
  refuse: ([row], { name }) =>
    row?.n ? `${name} still holds ${row.n} row(s) with values from before the masking, after its refresh` : undefined,
};

const aggregateWithoutTimescaleDB: Guard<{ view: string; timescaledb: boolean }> = {
  name: "a continuous aggregate on a fork without TimescaleDB",
  refuse: (_, { view, timescaledb }) => (timescaledb ? undefined : `${view} is a continuous aggregate on a fork without TimescaleDB`),
};

const aggregatePlaceheld: Guard<{ view: string; hypertable: string; hazards: string[] }> = {
  name: "an emptied continuous aggregate whose materialization hypertable would run something on a row of its own",
  refuse: (_, { view, hypertable, hazards }) =>
    hazards.length
      ? said(
          `the continuous aggregate ${view} is refreshed once the database's own functions run again, which can read the statistics ` +
            `of its materialization hypertable ${hypertable}, production's until a row of the preparation's own is analysed there; ` +
            `that row would run, or be refused by, its ${list(hazards, (h) => h)}. In production, remove them from ${hypertable} ` +
            "(group by a domain's base type: cast the column in the aggregate's query), or make the aggregate's query call none of the database's own functions",
          700,
        )
      : undefined,
};

const refreshedLastThroughCycle: Guard<{ views: number[]; names: Map<number, string>; cycle: string }, { oid: number; name: string }> = {
  name: "a materialized view or continuous aggregate refreshed last, of an owner that is itself a member of tsdbadmin",
  statement: ({ views, cycle }) => [sql.OWNED_THROUGH_CYCLE, [views, cycle]],
  refuse: (rows, { names }) =>
    rows.length
      ? said(
          `${list(rows, (r) => names.get(r.oid) ?? r.name)}: refreshed last (it calls a function of the database's own), as its owner, ` +
            "a role that is itself a member of tsdbadmin, whose membership the preparation withholds while it acts as that owner and gives " +
            "back before the views refreshed last, so it could not be refreshed. In production, make it tsdbadmin's, or drop it in " +
            `prepare.sql and make it again ${AGAIN}`,
          700,
        )
      : undefined,
};

const refreshUnderRowSecurity: Guard<
  { views: number[]; names: Map<number, string> },
  { oid: number; view: string; table: string; reader: string; forced: boolean }
> = {
  name: "a refreshed materialized view or continuous aggregate reading a table whose row security applies to the role its refresh reads as",
  statement: ({ views }) => [sql.REFRESHES_UNDER_ROW_SECURITY, [views]],
  refuse: (rows, { names }) =>
    rows.length
      ? said(
          `${list(rows, (r) => `${names.get(r.oid) ?? r.view} reads ${r.table} as ${r.reader}, whose row security applies to it (${r.forced ? "forced on its owner" : "not its owner"})`)}: ` +
            "the preparation refreshes with row security off (a policy's expression could read statistics not yet made from the masked data), " +
            "so PostgreSQL would refuse the refresh. In production, have the table's owner own the view and not force row security " +
            `(ALTER TABLE … NO FORCE ROW LEVEL SECURITY), or drop the view in prepare.sql and make it again ${AGAIN}`,
          700,
        )
      : undefined,
};

/** Every guard, by name: what the runner checks, and what the unit test holds one case each of. */
export const GUARDS = {
  platformSettings,
  subscriptionsOfOthers,
  pauseJobsWithoutTimescaleDB,
  jobsCheckedByOwn,
  jobsConfigUnread,
  standingOnDropped,
  routinesOnChunks,
  switchlessOnChunks,
  emptyTreeStatistics,
  jobsStillRunning,
  preparedByAnotherRole,
  sqlEndsTransaction,
  ruleTable,
  foreignUnder,
  ruleColumn,
  maskedTwice,
  textCast,
  partitionKey,
  hypertableDimension,
  foreignServersOfOthers,
  chunksLeftBehindOfOthers,
  cascadeToForeign,
  functionsOnWrite,
  domainChecksThatMayWrite,
  keyCheckedCallingOwn,
  keyCheckedPartitionedByOwn,
  keyCastsCallingOwn,
  hiddenByOwner,
  rowsNotMasked,
  frozenStatistics,
  hiddenFromChecks,
  statisticsKept,
  statisticsCallingOwnOfOthers,
  statisticsCallingOwnKept,
  viewsNotMadeAgain,
  statisticsHolding,
  emptyViewWithStatistics,
  statisticsCopied,
  timescaleRoutinesShadowed,
  unfinishedSource,
  materializationCallingOwn,
  viewRowsHolding,
  aggregateWithoutTimescaleDB,
  aggregatePlaceheld,
  refreshUnderRowSecurity,
  refreshedLastThroughCycle,
};
