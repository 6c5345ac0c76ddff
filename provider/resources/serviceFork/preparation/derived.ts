// What keeps a copy of data the masking wrote, and so is refreshed after it: every populated
// materialized view (what one reads cannot always be told: a catalog such as pg_stats, an
// operator's function, a query given as text), and the continuous aggregates that read, through
// any number of views, a table the masking wrote (or one above it), or another of them that is
// refreshed, or that call a function of the database's own. Worked out from the catalog's rows (statements.ts:
// READS, CONTINUOUS_AGGREGATES), in the order they are refreshed: each after what it reads (in
// waves: those of one wave read none of each other), and those calling a function of the
// database's own last, one at a time.
import type { Quoted, Table } from "./statements";

/** A view or materialized view, and what its query reads. */
export interface Reader extends Table {
  kind: string;
  reads: number[];
  /** It calls a function of the database's own: what that reads is not in the catalog. */
  opaque: boolean;
  /** False for a materialized view made WITH NO DATA: it holds nothing. */
  populated: boolean;
  /** Its query reads what ANALYZE keeps (pg_stats and its kin). */
  statistics: boolean;
}

/** A continuous aggregate: its materialization hypertable (`oid`, `schema`, `name`), its query (`direct`, a view) and the view it is refreshed by. */
export interface Aggregate extends Table {
  view: Quoted;
  direct: number;
  /** Its materialization hypertable has a trigger calling a function of the database's own. */
  runsOwn: boolean;
}

/**
 * One refresh. `checked`: it reads what the masking wrote (as the catalog tells, or through a
 * function whose reads cannot be told), so it must then hold no production value of a masked
 * column; a materialized view refreshed only because what it reads cannot always be told may
 * rightly hold values of columns no rule masks.
 */
export type Refresh = {
  checked: boolean;
  /** Those of one wave read none of each other, so they may be refreshed at once; each wave after the one before. */
  wave: number;
  /** It runs a function of the database's own (its query, its indexes, its table's triggers), or reads one that does: refreshed after all the others, alone. */
  opaque: boolean;
} & ({ kind: "materialized view"; table: Table } | { kind: "continuous aggregate"; aggregate: Aggregate });

/** What to refresh, given the tables the masking wrote (and those above them): each once, after everything it reads. */
export function toRefresh(written: ReadonlySet<number>, readers: Reader[], aggregates: Aggregate[]): Refresh[] {
  const byOid = new Map(readers.map((r) => [r.oid, r]));
  const views = new Set(readers.filter((r) => r.kind === "v").map((r) => r.oid));
  // What a relation reads: a view through its query, a continuous aggregate's table through its query.
  const aggregateOf = new Map(aggregates.map((a) => [a.oid, a]));
  const readsOf = (oid: number): { reads: number[]; opaque: boolean } => {
    const aggregate = aggregateOf.get(oid);
    const reader = byOid.get(aggregate ? aggregate.direct : oid);
    return { reads: reader?.reads ?? [], opaque: (reader?.opaque ?? false) || (aggregate?.runsOwn ?? false) };
  };
  // The refreshed objects each one reads, through views (a view is read live: it is not refreshed).
  const refreshable = new Set([...readers.filter((r) => r.kind === "m").map((r) => r.oid), ...aggregateOf.keys()]);
  const inputs = (oid: number): { relations: Set<number>; opaque: boolean } => {
    const relations = new Set<number>();
    let opaque = false;
    const walk = (from: number, seen: Set<number>) => {
      const { reads, opaque: o } = readsOf(from);
      opaque ||= o;
      for (const r of reads) {
        if (seen.has(r)) continue;
        seen.add(r);
        relations.add(r);
        if (views.has(r) && !aggregateOf.has(r)) walk(r, seen);
      }
    };
    walk(oid, new Set([oid]));
    return { relations, opaque };
  };
  const of = new Map([...refreshable].map((oid) => [oid, inputs(oid)]));
  // What reads one refreshed last goes after it (else it would be refreshed from it emptied): last too.
  for (let changed = true; changed;) {
    changed = false;
    for (const input of of.values())
      if (!input.opaque && [...input.relations].some((r) => of.get(r)?.opaque)) {
        input.opaque = true;
        changed = true;
      }
  }
  // One made WITH NO DATA holds nothing, and refreshing it would fill it: left as it is.
  for (const r of readers) if (r.kind === "m" && !r.populated) of.delete(r.oid);
  // Tainted: what the masking wrote, and each refreshed object once chosen; to a fixed point.
  const tainted = new Set(written);
  const checked = new Set<number>();
  for (let changed = true; changed;) {
    changed = false;
    for (const [oid, { relations, opaque }] of of) {
      if (checked.has(oid)) continue;
      if (!opaque && ![...relations].some((r) => tainted.has(r))) continue;
      checked.add(oid);
      tainted.add(oid);
      changed = true;
    }
  }
  // And every other populated materialized view: a dependency PostgreSQL records is not all it may
  // read (a catalog such as pg_stats, an operator's function, a query given as text).
  const chosen = new Set([...checked, ...[...of.keys()].filter((oid) => byOid.get(oid)?.kind === "m")]);
  // Each after the chosen ones it reads: by depth, then by name (a cycle cannot be: PostgreSQL refuses one).
  const depth = new Map<number, number>();
  const depthOf = (oid: number, path: Set<number>): number => {
    const known = depth.get(oid);
    if (known !== undefined) return known;
    const before = [...(of.get(oid)?.relations ?? [])].filter((r) => chosen.has(r) && !path.has(r));
    const d = 1 + Math.max(0, ...before.map((r) => depthOf(r, new Set([...path, r]))));
    depth.set(oid, d);
    return d;
  };
  const label = (oid: number) => aggregateOf.get(oid)?.view ?? `${byOid.get(oid)?.schema}.${byOid.get(oid)?.name}`;
  // One whose function's reads cannot be told goes after all the others (everything is emptied
  // before the first refresh: what it reads is refreshed by then, or empty).
  const opaque = (oid: number) => (of.get(oid)?.opaque ? 1 : 0);
  const sorted = [...chosen].sort(
    (a, b) => opaque(a) - opaque(b) || depthOf(a, new Set([a])) - depthOf(b, new Set([b])) || label(a).localeCompare(label(b)),
  );
  // A wave per depth; each opaque one a wave of its own, after them all (what it reads may be any of the others).
  const deepest = Math.max(0, ...sorted.filter((oid) => !opaque(oid)).map((oid) => depthOf(oid, new Set([oid]))));
  let alone = deepest;
  return sorted.map((oid): Refresh => {
    const common = { checked: checked.has(oid), wave: opaque(oid) ? ++alone : depthOf(oid, new Set([oid])), opaque: opaque(oid) === 1 };
    const aggregate = aggregateOf.get(oid);
    if (aggregate) return { kind: "continuous aggregate", aggregate, ...common };
    const r = byOid.get(oid) as Reader;
    return { kind: "materialized view", table: { oid: r.oid, schema: r.schema, name: r.name, quoted: r.quoted, kind: "m" }, ...common };
  });
}

/**
 * The materialized views and continuous aggregates whose query reads, itself or through views,
 * what ANALYZE keeps (pg_stats and its kin): refreshed while the preparation runs, such a copy
 * would hold the statistics of what is not yet made again from the masked data (production's values).
 */
export function statisticsReaders(readers: Reader[], aggregates: Aggregate[]): string[] {
  const byOid = new Map(readers.map((r) => [r.oid, r]));
  const reads = (oid: number, seen: Set<number>): boolean => {
    const r = byOid.get(oid);
    if (!r || seen.has(oid)) return false;
    seen.add(oid);
    return r.statistics || r.reads.some((x) => byOid.get(x)?.kind === "v" && reads(x, seen));
  };
  return [
    ...readers.filter((r) => r.kind === "m" && reads(r.oid, new Set())).map((r) => `${r.schema}.${r.name}`),
    ...aggregates.filter((a) => reads(a.direct, new Set())).map((a) => a.view),
  ];
}

/**
 * The materialized views left unpopulated that `view` reads (through views, and through each
 * other), in the order they must be populated for its own refresh to run, each after what it
 * reads: a refresh reading an unpopulated view fails (SQLSTATE 55000).
 */
export function unpopulatedInputs(view: number, readers: Reader[]): Reader[] {
  const byOid = new Map(readers.map((r) => [r.oid, r]));
  const order: Reader[] = [];
  const seen = new Set<number>([view]);
  const visit = (oid: number) => {
    for (const read of byOid.get(oid)?.reads ?? []) {
      const reader = byOid.get(read);
      if (seen.has(read) || !reader) continue;
      seen.add(read);
      // A populated one is read as it is: what it reads is not needed.
      if (reader.kind === "v" || !reader.populated) visit(read);
      if (reader.kind === "m" && !reader.populated) order.push(reader);
    }
  };
  visit(view);
  return order;
}
