// What keeps a copy of data the masking wrote, and so is refreshed after it: the materialized views
// and continuous aggregates that read, through any number of views, a table the masking wrote (or
// one above it), or another of them that is refreshed; and any that calls a function of the
// database's own, whose reads cannot be told. Worked out from the catalog's rows (statements.ts:
// READS, CONTINUOUS_AGGREGATES), in the order they are refreshed: each after what it reads.
import type { Table } from "./statements";

/** A view or materialized view, and what its query reads. */
export interface Reader extends Table {
  kind: string;
  reads: number[];
  /** It calls a function of the database's own: what that reads is not in the catalog. */
  opaque: boolean;
}

/** A continuous aggregate: its materialization hypertable (`oid`, `schema`, `name`), its query (`direct`, a view) and the view it is refreshed by. */
export interface Aggregate extends Table {
  view: string;
  direct: number;
}

export type Refresh = { kind: "materialized view"; table: Table } | { kind: "continuous aggregate"; aggregate: Aggregate };

/** What to refresh, given the tables the masking wrote (and those above them): each once, after everything it reads. */
export function toRefresh(written: ReadonlySet<number>, readers: Reader[], aggregates: Aggregate[]): Refresh[] {
  const byOid = new Map(readers.map((r) => [r.oid, r]));
  const views = new Set(readers.filter((r) => r.kind === "v").map((r) => r.oid));
  // What a relation reads: a view through its query, a continuous aggregate's table through its query.
  const aggregateOf = new Map(aggregates.map((a) => [a.oid, a]));
  const readsOf = (oid: number): { reads: number[]; opaque: boolean } => {
    const aggregate = aggregateOf.get(oid);
    const reader = byOid.get(aggregate ? aggregate.direct : oid);
    return { reads: reader?.reads ?? [], opaque: reader?.opaque ?? false };
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
  // Tainted: what the masking wrote, and each refreshed object once chosen; to a fixed point.
  const tainted = new Set(written);
  const chosen = new Set<number>();
  for (let changed = true; changed;) {
    changed = false;
    for (const [oid, { relations, opaque }] of of) {
      if (chosen.has(oid)) continue;
      if (!opaque && ![...relations].some((r) => tainted.has(r))) continue;
      chosen.add(oid);
      tainted.add(oid);
      changed = true;
    }
  }
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
  return [...chosen]
    .sort((a, b) => depthOf(a, new Set([a])) - depthOf(b, new Set([b])) || label(a).localeCompare(label(b)))
    .map((oid): Refresh => {
      const aggregate = aggregateOf.get(oid);
      if (aggregate) return { kind: "continuous aggregate", aggregate };
      const r = byOid.get(oid) as Reader;
      return { kind: "materialized view", table: { oid: r.oid, schema: r.schema, name: r.name, kind: "m" } };
    });
}
