// A thirty-fourth red team's ways through a masked fork's preparation (docs/masking.md), each read
// through the fork's published URL as its holder reads it, each asserting the safe outcome (so each
// fails where its way works): the fork published with what production holds, or refused naming what
// it cannot make safe and the fix, with no bare SQLSTATE. Each leaves production as it found it. The
// attacker, or a team with an ordinary production, has tsdbadmin's SQL in production. The target:
// round 33's switching of a hypertable's triggers with its chunks, and the chunks the masking
// compresses again or drops.
//  1. (compression's rollup, timescaledb.compress_chunk_time_interval: compress_chunk merges a chunk
//     into a compressed neighbour, whose table then goes) a masked hypertable whose chunks were
//     compressed one by one before its team set a rollup interval: the masking compresses them again,
//     the second merged into the first, and the statistics made again after named a table gone;
//  2. (a chunk's trigger is its hypertable's copy only in the same mode) a trigger of the masked
//     hypertable enabled ALWAYS, and one enabled REPLICA, on a hypertable that made a chunk since:
//     TimescaleDB gives the new chunk a plainly enabled copy, and the preparation took it for a
//     chunk's own;
//  3. (the same, disabled) a trigger disabled on the masked hypertable, its copy on a chunk made since
//     enabled: the masking, which holds off only what is on, must not run it on every row it writes;
//  4. (what STANDING_ON_DROPPED names when a chunk is dropped whole) a rule of tsdbadmin's on a chunk
//     of a continuous aggregate the preparation refreshes (its chunks dropped before);
//  5. (the same) an index of tsdbadmin's made on a chunk of a masked hypertable (its chunks in public),
//     emptied in production: dropped as empty.
// As found: way 1 failed with a bare SQLSTATE ("failed at prepare.mask (statistics made again):
// SQLSTATE 42P01 (undefined_table)"); ways 2 and 3 were refused as "a chunk's own (not the copy
// TimescaleDB makes of its hypertable's) … drop it in prepare.sql", a wrong cause and a fix that
// cannot be made (the copy is TimescaleDB's); ways 4 and 5 were published with the rule and the index lost
// ("published, 0"), named nowhere.
import { EVENTS_TABLE } from "../../simulator/production";
import { readThrough as read } from "../support/lab/production";
import { DROP_LEFT_BEHIND, RULES, onFirstAggregateChunk, redTeamLab, expectPublishedOrNamed } from "../support/lab/redTeam";

jest.setTimeout(600_000);
const { cleanups, inProduction, outcome } = redTeamLab();

/** A hypertable of tsdbadmin's, public.<name>, of 1-day chunks, its e-mails production's: `days` days of rows. */
const hypertable = (name: string, days: number) => `
    CREATE TABLE public.${name} (time timestamptz NOT NULL, email text);
    SELECT create_hypertable('public.${name}', by_range('time', interval '1 day'));
    INSERT INTO public.${name} SELECT timestamptz '2026-11-20' + g * interval '10 minutes', '${name}-' || (g % 300) || '@prod-customers.example.com'
      FROM generate_series(0, ${days * 144 - 1}) g;`;
const productionValues = (name: string) => `(SELECT count(*) FROM public.${name} WHERE email LIKE '%prod-customers.example.com')`;

test("a masked hypertable whose chunks were compressed before its compression's rollup was set: the fork is published masked, with production's chunks and rollup, each chunk compressed again alone", async () => {
  const drop = "DROP TABLE IF EXISTS public.ru341;";
  cleanups.push(() => inProduction(drop));
  await inProduction(`${drop}
    ${hypertable("ru341", 4)}
    ALTER TABLE public.ru341 SET (timescaledb.compress, timescaledb.compress_orderby = 'time');
    SELECT count(compress_chunk(c)) FROM show_chunks('public.ru341') c;
    ALTER TABLE public.ru341 SET (timescaledb.compress_chunk_time_interval = '7 days');
    ANALYZE public.ru341;`);
  const shape = `SELECT count(*) || ' chunks, ' || count(*) FILTER (WHERE is_compressed) || ' compressed, rollup '
      || (SELECT d.compress_interval_length FROM _timescaledb_catalog.dimension d JOIN _timescaledb_catalog.hypertable h ON h.id = d.hypertable_id
           WHERE h.schema_name = 'public' AND h.table_name = 'ru341')
    FROM timescaledb_information.chunks WHERE hypertable_schema = 'public' AND hypertable_name = 'ru341'`;
  const atSource = await inProduction(shape);
  // Four chunks, each compressed alone, and a week's rollup that would merge them as each is compressed again.
  expect(atSource).toBe("4 chunks, 4 compressed, rollup 604800000000");
  expect(Number(await inProduction(`SELECT ${productionValues("ru341")}`))).toBeGreaterThan(0);
  const rules = [...RULES, { table: "ru341", column: "email", with: "email" }];
  const result = await outcome(
    "pr-redteam34-rollup",
    { mask: rules, pauseJobs: true },
    async (uri) => `${await read(uri, shape)}; production's values ${await read(uri, `SELECT ${productionValues("ru341")}::text`)}`,
  );
  expect(result).toBe(`published, ${atSource}; production's values 0`);
});

/** The triggers of public.<name> (its own, by name and mode), how many copies its chunks have, and what the triggers logged. */
const triggersOf = (name: string) => `SELECT (SELECT string_agg(tgname || ' ' || tgenabled::text, ', ' ORDER BY tgname) FROM pg_trigger
      WHERE tgrelid = 'public.${name}'::regclass) || '; copies ' || (SELECT count(*) FROM pg_trigger t JOIN pg_inherits i ON i.inhrelid = t.tgrelid
      WHERE i.inhparent = 'public.${name}'::regclass) || '; logged ' || (SELECT count(*) FROM public.log_${name})`;
/** Triggers of public.<name> logging each row's old address, switched to their modes, then a day's rows in a new chunk. */
const loggingTriggers = (name: string, modes: Record<string, string>) => `
    ${hypertable(name, 2)}
    CREATE TABLE public.log_${name} (old text);
    CREATE FUNCTION public.tf_${name}() RETURNS trigger LANGUAGE plpgsql AS $f$ BEGIN INSERT INTO public.log_${name} VALUES (OLD.email); RETURN NEW; END $f$;
    ${Object.entries(modes)
      .map(
        ([trigger, mode]) => `CREATE TRIGGER ${trigger} BEFORE UPDATE ON public.${name} FOR EACH ROW EXECUTE FUNCTION public.tf_${name}();
    ALTER TABLE public.${name} ${mode} TRIGGER ${trigger};`,
      )
      .join("\n    ")}
    INSERT INTO public.${name} VALUES (timestamptz '2026-11-25', '${name}-new@prod-customers.example.com');
    ANALYZE public.${name};`;
const modesOfNewChunk = (name: string) => `SELECT string_agg(t.tgname || ' ' || t.tgenabled::text, ', ' ORDER BY t.tgname) FROM pg_trigger t
   WHERE t.tgrelid = (SELECT format('%I.%I', chunk_schema, chunk_name)::regclass FROM timescaledb_information.chunks
                       WHERE hypertable_schema = 'public' AND hypertable_name = '${name}' ORDER BY range_start DESC LIMIT 1)`;

test("triggers of the masked hypertable enabled ALWAYS and REPLICA, a chunk made since (its copies plainly enabled): the fork is published masked, with them as production has them on the hypertable, and neither ran during the masking", async () => {
  const drop = "DROP TABLE IF EXISTS public.tm342, public.log_tm342; DROP FUNCTION IF EXISTS public.tf_tm342();";
  cleanups.push(() => inProduction(drop));
  await inProduction(`${drop}
    ${loggingTriggers("tm342", { tg342a: "ENABLE ALWAYS", tg342r: "ENABLE REPLICA" })}`);
  const atSource = await inProduction(triggersOf("tm342"));
  // Three chunks, two triggers: six copies; the newest chunk's plainly enabled.
  expect(atSource).toBe("tg342a A, tg342r R; copies 6; logged 0");
  expect(await inProduction(modesOfNewChunk("tm342"))).toBe("tg342a O, tg342r O");
  const rules = [...RULES, { table: "tm342", column: "email", with: "email" }];
  const result = await outcome(
    "pr-redteam34-trigger-modes",
    { mask: rules, pauseJobs: true },
    async (uri) =>
      `${await read(uri, triggersOf("tm342"))}; production's values ${await read(uri, `SELECT ${productionValues("tm342")}::text`)}`,
  );
  expect(result).toBe(`published, ${atSource}; production's values 0`);
});

test("a trigger disabled on the masked hypertable, its copy on a chunk made since enabled: refused before anything is masked, naming the trigger, the chunk and the statement that disables it, with no bare SQLSTATE; with that statement in prepare.sql, published masked, and it never ran", async () => {
  const drop = "DROP TABLE IF EXISTS public.td343, public.log_td343; DROP FUNCTION IF EXISTS public.tf_td343();";
  cleanups.push(() => inProduction(drop));
  await inProduction(`${drop}
    ${loggingTriggers("td343", { tg343: "DISABLE" })}`);
  expect(await inProduction(modesOfNewChunk("td343"))).toBe("tg343 O");
  const rules = [...RULES, { table: "td343", column: "email", with: "email" }];
  const refused = await outcome("pr-redteam34-trigger-disabled", { mask: rules, pauseJobs: true }, (uri) => read(uri, triggersOf("td343")));
  expect(refused).toMatch(
    /trigger tg343 on _timescaledb_internal\._hyper_\d+_\d+_chunk: enabled on that chunk though disabled on its hypertable .* run ALTER TABLE (public\.)?td343 DISABLE TRIGGER tg343 again/,
  );
  expect(refused).toMatch(/Nothing of its SQL and masking was kept/);
  expect(refused).not.toMatch(/SQLSTATE/);
  const fixed = await outcome(
    "pr-redteam34-trigger-disabled-fixed",
    { sql: ["ALTER TABLE public.td343 DISABLE TRIGGER tg343"], mask: rules, pauseJobs: true },
    async (uri) =>
      `${await read(uri, triggersOf("td343"))}; production's values ${await read(uri, `SELECT ${productionValues("td343")}::text`)}`,
  );
  expect(fixed).toBe("published, tg343 D; copies 3; logged 0; production's values 0");
});

test("a rule of tsdbadmin's on a chunk of a continuous aggregate the preparation refreshes (its chunks dropped first): the fork is published with it, or refused naming it", async () => {
  const drop = "DROP MATERIALIZED VIEW IF EXISTS public.c344;";
  cleanups.push(() => inProduction(drop));
  await inProduction(`${drop}
    CREATE MATERIALIZED VIEW public.c344 WITH (timescaledb.continuous) AS
      SELECT time_bucket('1 day', time) AS day, customer_email AS e, count(*) AS n
        FROM public.${EVENTS_TABLE} WHERE customer_id % 10 = 0 GROUP BY 1, 2 WITH NO DATA;
    CALL refresh_continuous_aggregate('public.c344', NULL, NULL);
    ${onFirstAggregateChunk("c344", "CREATE RULE r344 AS ON INSERT TO %s DO ALSO NOTIFY r344")}`);
  const made = "SELECT count(*)::text FROM pg_rewrite WHERE rulename = 'r344'";
  expect(await inProduction(made)).toBe("1");
  const result = await outcome("pr-redteam34-rule-on-aggregate-chunk", { mask: RULES, pauseJobs: true }, (uri) => read(uri, made));
  expectPublishedOrNamed(result, "published, 1", /rule r344 on _timescaledb_internal\._hyper_\d+_\d+_chunk/);
});

test("an index of tsdbadmin's made on a chunk of a masked hypertable (its chunks in public), the chunk emptied in production (dropped, empty): the fork is published with it, or refused naming it", async () => {
  const drop = `DROP TABLE IF EXISTS public.del345; ${DROP_LEFT_BEHIND};`;
  cleanups.push(() => inProduction(drop));
  await inProduction(`${drop}
    CREATE TABLE public.del345 (time timestamptz NOT NULL, email text);
    SELECT create_hypertable('public.del345', 'time', chunk_time_interval => interval '1 day', associated_schema_name => 'public');
    INSERT INTO public.del345 SELECT timestamptz '2026-11-20' + g * interval '10 minutes', 'del345-' || (g % 300) || '@prod-customers.example.com'
      FROM generate_series(0, 800) g;
    ANALYZE public.del345;
    DO $d$ BEGIN
      EXECUTE (SELECT pg_catalog.format('CREATE INDEX i345 ON %I.%I (email)', chunk_schema, chunk_name)
        FROM timescaledb_information.chunks WHERE hypertable_schema = 'public' AND hypertable_name = 'del345' ORDER BY range_start LIMIT 1);
    END $d$;
    DELETE FROM public.del345 WHERE time < timestamptz '2026-11-21';
    ANALYZE public.del345;`);
  const made = "SELECT count(*)::text FROM pg_class WHERE relname = 'i345'";
  expect(await inProduction(made)).toBe("1");
  const rules = [...RULES, { table: "del345", column: "email", with: "email" }];
  const result = await outcome("pr-redteam34-index-on-emptied-chunk", { mask: rules, pauseJobs: true }, (uri) => read(uri, made));
  expectPublishedOrNamed(result, "published, 1", /index public\.i345 on public\._hyper_\d+_\d+_chunk/);
});
