// The documentation every language's SDK is generated from (the plugin's schema): complete, in each
// language's words, with an example in every language and an import section per resource, and
// saying nothing of values, defaults and limits that the rules do not hold to: each value a
// description quotes, each default it states, each limit and list of counts it gives is tried
// against the inputs' rules themselves.
import * as fs from "fs";
import * as path from "path";
import { parse } from "yaml";
import type { z } from "zod";
import { RESOURCES } from "../../provider/resources/registry";

const ROOT = path.join(__dirname, "..", "..");
const SCHEMA = JSON.parse(fs.readFileSync(path.join(ROOT, "provider", "hosts", "plugin", "schema.json"), "utf8")) as Schema;
const TOKEN = (kind: string) => `tigercloud:index:${kind}`;

interface Property {
  description?: string;
  type?: string;
  $ref?: string;
  items?: Property;
  default?: unknown;
}
interface ObjectType {
  description?: string;
  properties?: Record<string, Property>;
  inputProperties?: Record<string, Property>;
  stateInputs?: { description?: string; properties: Record<string, Property> };
  enum?: { name: string; value: string; description?: string }[];
}
interface Schema {
  config: { variables: Record<string, Property> };
  provider: ObjectType;
  resources: Record<string, ObjectType>;
  types: Record<string, ObjectType>;
}

/** What the schema describes, each by a path that names it, with its description. */
function documented(): [string, string | undefined][] {
  const all: [string, string | undefined][] = [];
  const props = (owner: string, bag: Record<string, Property> | undefined) => {
    for (const [name, p] of Object.entries(bag ?? {})) all.push([`${owner}.${name}`, p.description]);
  };
  props("config", SCHEMA.config.variables);
  props("provider", SCHEMA.provider.inputProperties);
  for (const [token, r] of Object.entries(SCHEMA.resources)) {
    all.push([token, r.description]);
    props(`${token} input`, r.inputProperties);
    props(`${token} output`, r.properties);
    props(`${token} state`, r.stateInputs?.properties);
  }
  for (const [token, t] of Object.entries(SCHEMA.types)) {
    all.push([token, t.description]);
    props(token, t.properties);
    for (const e of t.enum ?? []) all.push([`${token}.${e.name}`, e.description]);
  }
  return all;
}

test("every resource, input, output, nested type and its properties, enum and enum value, and setting is documented", () => {
  const found = documented();
  expect(found.length).toBeGreaterThan(150);
  expect(found.filter(([, description]) => !description || description.trim().split(/\s+/).length < 2).map(([what]) => what)).toEqual([]);
  // Every resource has its outputs to look up by (the SDKs' ...State types): none is left empty.
  for (const r of Object.values(SCHEMA.resources))
    expect(Object.keys(r.stateInputs?.properties ?? {})).toEqual(Object.keys(r.properties ?? {}));
});

test("each resource's documentation has an example in every language and an import section, as the Registry's pages do", () => {
  for (const { spec } of RESOURCES) {
    const text = SCHEMA.resources[TOKEN(spec.kind)]?.description ?? "";
    const examples = /\{\{% examples %\}\}([\s\S]*)\{\{% \/examples %\}\}/.exec(text)?.[1] ?? "";
    const each = examples.split("{{% example %}}").slice(1);
    expect({ kind: spec.kind, examples: each.length }).toEqual({ kind: spec.kind, examples: expect.any(Number) });
    expect(each.length).toBeGreaterThanOrEqual(1);
    for (const example of each)
      for (const language of ["typescript", "python", "go", "csharp", "yaml"])
        expect({ kind: spec.kind, language, has: example.includes(`\`\`\`${language}\n`) }).toEqual({
          kind: spec.kind,
          language,
          has: true,
        });
    expect(text).toMatch(new RegExp(`## Import\\n[\\s\\S]*\\$ pulumi import tigercloud:index:${spec.kind} \\S+ \\S+`));
  }
});

test("every YAML example declares resources the schema has, with properties they take, the required ones included, and outputs they have", () => {
  const dir = path.join(ROOT, "sdk", "examples");
  const wrong: string[] = [];
  const names = fs.readdirSync(dir).sort();
  expect(names.length).toBeGreaterThanOrEqual(3);
  for (const name of names) {
    const program = parse(fs.readFileSync(path.join(dir, name, "Main.yaml"), "utf8")) as {
      resources: Record<string, { type: string; properties?: Record<string, unknown> }>;
      outputs?: Record<string, string>;
    };
    const kinds = new Map<string, ObjectType>();
    for (const [id, r] of Object.entries(program.resources)) {
      // YAML names a type of the package's index module either way: tigercloud:ServiceFork or tigercloud:index:ServiceFork.
      const resource = SCHEMA.resources[r.type.replace(/^tigercloud:(?!index:)/, "tigercloud:index:")];
      if (!resource) {
        wrong.push(`${name}: ${id} is a ${r.type}, which the schema has not`);
        continue;
      }
      kinds.set(id, resource);
      for (const p of Object.keys(r.properties ?? {})) if (!resource.inputProperties?.[p]) wrong.push(`${name}: ${r.type} takes no ${p}`);
      const required = (resource as { requiredInputs?: string[] }).requiredInputs ?? [];
      for (const p of required) if (!(p in (r.properties ?? {}))) wrong.push(`${name}: ${id} lacks ${p}`);
    }
    for (const [output, value] of Object.entries(program.outputs ?? {})) {
      const [, id, property] = /^\$\{(\w+)\.(\w+)\}$/.exec(value) ?? [];
      if (!id || !kinds.get(id)?.properties?.[property as string])
        wrong.push(`${name}: output ${output} is ${value}, which no resource has`);
    }
  }
  expect(wrong).toEqual([]);
});

// ---- what descriptions say, tried against the rules

/** The least a program declares of each resource, and what else some values need beside them. */
const MINIMAL: Record<string, object> = {
  ServiceFork: { projectId: "proj-1", sourceServiceId: "svc-1", forkStrategy: "NOW" },
  ServiceHA: { projectId: "proj-1", serviceId: "svc-1", replicaCount: 0 },
  VpcName: { projectId: "proj-1", vpcId: "1234567", name: "vpc" },
};
const COMPANIONS: Record<string, object[]> = {
  ServiceFork: [{}, { forkStrategy: "PITR", targetTime: "2026-01-01T00:00:00Z" }, { cpuMillis: "shared", memoryGbs: "shared" }],
  ServiceHA: [{}, { replicaCount: 2 }, { replicaCount: 1 }, { syncReplicaCount: 0 }],
  VpcName: [{}],
};
const inputsOf = (kind: string) => RESOURCES.find((r) => r.spec.kind === kind)?.spec.inputs as z.ZodType;
/** Whether the rules take `values` beside some companion (every companion is tried). */
const accepted = (kind: string, values: object) =>
  (COMPANIONS[kind] ?? [{}]).some((companion) => inputsOf(kind).safeParse({ ...MINIMAL[kind], ...companion, ...values }).success);
/** Whether the rules take `values` exactly as given, beside the minimal inputs alone. */
const acceptedAlone = (kind: string, values: object) => inputsOf(kind).safeParse({ ...MINIMAL[kind], ...values }).success;

/** A property's description with references written as the property's name (`{{% ref …/syncReplicaCount %}}`: syncReplicaCount). */
const plain = (text: string) => text.replace(/\{\{% ref #\/resources\/[^/]+\/(?:inputProperties|properties)\/(\w+) %\}\}/g, "$1");

/** What each input's description claims, and whether the rules hold to it. */
function claimsOf(kind: string): { claim: string; holds: boolean }[] {
  const resource = SCHEMA.resources[TOKEN(kind)] as ObjectType;
  const claims: { claim: string; holds: boolean }[] = [];
  const say = (property: string, claim: string, holds: boolean) => claims.push({ claim: `${kind}.${property}: ${claim}`, holds });
  const json = (require("zod") as typeof z).toJSONSchema(inputsOf(kind), { io: "input", unrepresentable: "any" }) as {
    properties: Record<string, { default?: unknown; type?: string }>;
  };
  for (const [property, p] of Object.entries(resource.inputProperties ?? {})) {
    const text = plain(p.description ?? "");
    const zodDefault = json.properties[property]?.default;
    // Each value quoted is one the rule takes (a placeholder such as "<parent name>-fork" is not a value).
    for (const [, value] of text.matchAll(/"([^"<>]+)"/g)) say(property, `takes "${value}"`, accepted(kind, { [property]: value }));
    // A default stated is the rule's.
    for (const [, value] of [...text.matchAll(/Default:? (true|false)\b|\((true|false), the default\)/g)].map((m) => [m[0], m[1] ?? m[2]]))
      say(property, `defaults to ${value}`, zodDefault === (value === "true"));
    for (const [, value] of [...text.matchAll(/"([^"<>]+)" \(default\)|Default: "([^"<>]+)"/g)].map((m) => [m[0], m[1] ?? m[2]]))
      say(property, `defaults to "${value}"`, zodDefault === value);
    // A limit: the value at it is taken, one past it is not.
    for (const [, hours] of text.matchAll(/at most "(\d+)h"/g)) {
      say(property, `takes "${hours}h"`, accepted(kind, { [property]: `${hours}h` }));
      say(property, `refuses "${Number(hours) + 1}h"`, !accepted(kind, { [property]: `${Number(hours) + 1}h` }));
    }
    for (const [, low, high] of text.matchAll(/(\d+) to (\d+) characters/g)) {
      say(property, `takes ${high} characters`, accepted(kind, { [property]: "x".repeat(Number(high)) }));
      say(property, `refuses ${Number(high) + 1} characters`, !accepted(kind, { [property]: "x".repeat(Number(high) + 1) }));
      if (Number(low) === 1) say(property, "refuses an empty one", !accepted(kind, { [property]: "" }));
    }
    if (p.type !== "integer") continue;
    // A list of counts ("0, 1 or 2"; "0, or 1 with X 2"): exactly the counts the rules take with some other count.
    const listed = /^[^.:]*: ((?:\d+,? (?:or )?)*\d+)/.exec(text)?.[1];
    if (listed) {
      const counts = [...listed.matchAll(/\d+/g)].map(Number);
      const others = Object.entries(resource.inputProperties ?? {})
        .filter(([k, o]) => k !== property && o.type === "integer")
        .map(([k]) => k);
      const takes = (n: number) =>
        [undefined, 0, 1, 2, 3].some((m) => acceptedAlone(kind, { [property]: n, ...Object.fromEntries(others.map((o) => [o, m])) }));
      const range = [0, 1, 2, 3, 4, 5];
      say(property, `takes exactly ${counts.join(", ")}`, JSON.stringify(range.filter(takes)) === JSON.stringify(counts));
    }
    // "not more than X": each count listed is taken with X at that count.
    for (const [, other] of text.matchAll(/not more than (\w+)/g))
      for (const n of listed ? [...listed.matchAll(/\d+/g)].map(Number) : [])
        say(property, `takes ${n} with ${other} ${n}`, acceptedAlone(kind, { [property]: n, [other as string]: n }));
    // "N with X M": N is taken with X at M, and with X at no other count.
    for (const [, n, other, m] of text.matchAll(/(\d+) with (\w+) (\d+)/g)) {
      const withOther = (k: number) => acceptedAlone(kind, { [property]: Number(n), [other as string]: k });
      say(property, `takes ${n} with ${other} ${m}`, withOther(Number(m)));
      say(
        property,
        `takes ${n} with ${other} at no other count`,
        [0, 1, 2, 3].filter((k) => k !== Number(m)).every((k) => !withOther(k)),
      );
    }
  }
  return claims;
}

test("what each input's description says of values, defaults, limits and counts holds against the rules", () => {
  const claims = RESOURCES.flatMap(({ spec }) => claimsOf(spec.kind));
  // Enough of them to mean something: every enum's values, every timeout's limit, the names' lengths, the counts.
  expect(claims.length).toBeGreaterThan(40);
  expect(claims.filter((c) => !c.holds).map((c) => c.claim)).toEqual([]);
});

test("an output or enum that names values names its own", () => {
  const wrong: string[] = [];
  for (const [token, r] of Object.entries(SCHEMA.resources))
    for (const [property, p] of Object.entries(r.properties ?? {})) {
      const values = p.$ref ? SCHEMA.types[p.$ref.replace("#/types/", "")]?.enum?.map((e) => e.value) : undefined;
      if (!values) continue;
      for (const [, quoted] of plain(p.description ?? "").matchAll(/"([^"<>]+)"/g))
        if (!values.includes(quoted as string)) wrong.push(`${token}.${property}: "${quoted}" is not one of ${values.join(", ")}`);
    }
  expect(wrong).toEqual([]);
});

// ---- each language's words

/** The inputs' and outputs' names as the program declares them (camelCase). */
const NAMES = new Set(
  Object.values(SCHEMA.resources).flatMap((r) => [...Object.keys(r.inputProperties ?? {}), ...Object.keys(r.properties ?? {})]),
);

/** The documentation lines of generated files: Go's and C#'s comments, Python's docstrings. */
function docLines(dir: string, ext: string, isDoc: (line: string, inDocstring: boolean) => boolean): string[] {
  const lines: string[] = [];
  const walk = (sub: string) => {
    for (const entry of fs.readdirSync(path.join(dir, sub), { withFileTypes: true })) {
      const rel = path.join(sub, entry.name);
      if (entry.isDirectory()) walk(rel);
      else if (entry.name.endsWith(ext)) {
        let inDocstring = false;
        for (const line of fs.readFileSync(path.join(dir, rel), "utf8").split("\n")) {
          if (/^\s*"""/.test(line)) inDocstring = !inDocstring || /""".*"""/.test(line.trim().slice(3)) ? !inDocstring : false;
          if (isDoc(line, inDocstring)) lines.push(`${rel}: ${line.trim()}`);
        }
      }
    }
  };
  walk("");
  return lines;
}

test("the Go, Python and .NET SDKs' documentation names the properties in their own words, and speaks no TypeScript", () => {
  const sdk = path.join(ROOT, "sdk");
  // Code in an example keeps its own words: only the prose is read (an example's lines are indented or fenced).
  const prose = (lines: string[]) => {
    let fenced = false;
    return lines.filter((l) => {
      if (/```/.test(l)) fenced = !fenced;
      return !fenced && !/```/.test(l);
    });
  };
  const go = prose(docLines(path.join(sdk, "go"), ".go", (l) => /^\s*\/\/ /.test(l)));
  const python = prose(docLines(path.join(sdk, "python"), ".py", (_l, inDocstring) => inDocstring));
  const dotnet = prose(docLines(path.join(sdk, "dotnet"), ".cs", (l) => /^\s*\/\/\/ /.test(l)));
  expect(go.length).toBeGreaterThan(100);
  expect(python.length).toBeGreaterThan(100);
  expect(dotnet.length).toBeGreaterThan(100);
  const camelNames = [...NAMES].filter((n) => /[a-z][A-Z]/.test(n));
  const inTypeScriptWords = (line: string) =>
    camelNames.some((n) => new RegExp(`(?<![":\\w])${n}\\b`).test(line)) ||
    /retainOnDelete|pulumi\.dynamic|dynamic resource|TypeScript/.test(line);
  expect({ go: go.filter(inTypeScriptWords), python: python.filter(inTypeScriptWords), dotnet: dotnet.filter(inTypeScriptWords) }).toEqual({
    go: [],
    python: [],
    dotnet: [],
  });
  // Where a description names a property, each language writes it its way.
  expect(python.join("\n")).toContain("sync_replica_count");
  expect(go.join("\n")).toContain("SyncReplicaCount");
  expect(dotnet.join("\n")).toContain("SyncReplicaCount");
});
