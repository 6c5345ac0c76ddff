// What each language's program sees of the resources, made from their one specification
// (provider/resources/*/resource.ts, listed by provider/resources/registry.ts): its inputs (rules,
// required, enum values, descriptions) and its state (which is also its outputs). Two files:
//   - provider/program/resources.ts: the TypeScript classes and Args interfaces a program uses,
//     kept in git, so that a clone shows what a program imports without a build;
//   - provider/hosts/plugin/schema.json: the plugin's Pulumi package schema, kept in git (the
//     plugin serves it, and Pulumi's generators write the Go, Python and .NET SDKs from it).
// `npm run declarations` writes both; `--program` only the classes; `--check` writes nothing and
// fails naming each file that is not what this makes now (a test runs it).
import * as fs from "fs";
import * as path from "path";
import { z } from "zod";
import { RESOURCES } from "../provider/resources/registry";
import type { ResourceSpec } from "../provider/resources/spec";
import { isSwitch, SETTING_SOURCES } from "../provider/settings";

const ROOT = path.join(__dirname, "..");
export const SCHEMA_FILE = path.join(ROOT, "provider", "hosts", "plugin", "schema.json");
export const PROGRAM_FILE = path.join(ROOT, "provider", "program", "resources.ts");
/** The example programs, in Pulumi's program language ("<Resource>.<slug>.pp", a "# <title>" line first). */
export const EXAMPLES_DIR = path.join(ROOT, "provider", "hosts", "plugin", "examples");
/** Each example as Pulumi's program generators write it in each language (scripts/gen-sdks/run). */
export const GENERATED_EXAMPLES_DIR = path.join(ROOT, "sdk", "examples");
/** The languages of an example, in the order the Registry shows them: the fence's name and the generated file. */
const EXAMPLE_LANGUAGES = [
  ["typescript", "index.ts"],
  ["python", "__main__.py"],
  ["go", "main.go"],
  ["csharp", "Program.cs"],
  ["yaml", "Main.yaml"],
] as const;
export const TOKEN = (name: string) => `tigercloud:index:${name}`;
/** Where the project lives: its source, its releases (the plugin's archives), its issues. */
export const REPOSITORY = "https://github.com/tigercloud/pulumi-tigercloud";
/** Inputs every resource leaves optional in a program: the provider's settings give a default. */
const FROM_SETTINGS = ["projectId"];

/** A property as JSON Schema describes it (what zod's toJSONSchema writes), with this package's meta. */
interface Json {
  type?: string | string[];
  enum?: string[];
  anyOf?: Json[];
  items?: Json;
  properties?: Record<string, Json>;
  required?: string[];
  description?: string;
  typeName?: string;
  typeDescription?: string;
  /** An enum's values, each described. */
  values?: Record<string, string>;
  /** The type the other languages' SDKs give a property the rule takes in more than one form. */
  sdkType?: "string";
  const?: unknown;
}

const jsonOf = (schema: z.ZodType, io: "input" | "output") =>
  z.toJSONSchema(schema, { io, unrepresentable: "any", reused: "inline" }) as Json;

/** An input's or output's name as a type's: replicaCount is ReplicaCount. */
const pascal = (name: string) => name.charAt(0).toUpperCase() + name.slice(1);

/** An enum value's name in the SDKs: LAST_SNAPSHOT is LastSnapshot, login is Login. */
const valueName = (value: string) =>
  value
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .map(pascal)
    .join("");

// ---- the Pulumi package schema

type TypeSpec =
  { type: "string" | "number" | "integer" | "boolean" } | { type: "array"; items: TypeSpec } | { $ref: string } | { oneOf: TypeSpec[] };
type PropertySpec = TypeSpec & { description?: string; secret?: boolean };
interface ObjectSpec {
  description?: string;
  properties: Record<string, PropertySpec>;
  required?: string[];
  inputProperties?: Record<string, PropertySpec>;
  requiredInputs?: string[];
  stateInputs?: { description: string; properties: Record<string, PropertySpec>; type: "object" };
}
type EnumSpec = { type: "string"; description?: string; enum: { value: string; name?: string; description?: string }[] };

export interface PackageSchema {
  name: string;
  displayName: string;
  publisher: string;
  version?: string;
  description: string;
  homepage?: string;
  repository?: string;
  pluginDownloadURL?: string;
  license: string;
  keywords: string[];
  config: { variables: Record<string, PropertySpec> };
  provider: ObjectSpec;
  resources: Record<string, ObjectSpec>;
  types: Record<string, (ObjectSpec & { type: "object" }) | EnumSpec>;
  language: Record<string, unknown>;
  meta: Record<string, unknown>;
}

/** The schema's types of one property (nested objects and enums go into `types`, by name). */
function schemaType(json: Json, owner: string, property: string, types: PackageSchema["types"]): TypeSpec {
  if (json.enum) {
    const enumName = json.typeName ?? pascal(property);
    const token = TOKEN(enumName);
    const known = types[token] as EnumSpec | undefined;
    if (known && JSON.stringify(known.enum.map((e) => e.value)) !== JSON.stringify(json.enum))
      throw new Error(`two enums named ${enumName} with other values (${owner}.${property})`);
    // The first that describes the enum and its values does (an input's rule; a state's repeats it).
    if (!known?.description)
      types[token] = {
        type: "string",
        ...(json.typeDescription ? { description: json.typeDescription } : {}),
        enum: json.enum.map((value) => ({
          name: valueName(value),
          value,
          ...(json.values?.[value] ? { description: json.values[value] } : {}),
        })),
      };
    return { $ref: `#/types/${token}` };
  }
  if (json.sdkType) return { type: json.sdkType };
  const alternatives = json.anyOf ?? (Array.isArray(json.type) ? json.type.map((type) => ({ type })) : undefined);
  // string first, as the SDKs' unions have always read (a string is what state keeps).
  if (alternatives)
    return {
      oneOf: alternatives
        .map((a) => schemaType(a, owner, property, types))
        .sort((a, b) => (JSON.stringify(a).includes("string") ? -1 : 0) - (JSON.stringify(b).includes("string") ? -1 : 0)),
    };
  switch (json.type) {
    case "string":
    case "boolean":
    case "integer":
    case "number":
      return { type: json.type };
    case "array":
      return { type: "array", items: schemaType(json.items ?? {}, owner, property.replace(/s$/, ""), types) };
    case "object": {
      const name = json.typeName ?? `${owner}${pascal(property)}`;
      const token = TOKEN(name);
      if (!types[token]) {
        types[token] = { type: "object", properties: {} };
        const properties = Object.fromEntries(
          Object.entries(json.properties ?? {}).map(([k, p]) => [k, described(schemaType(p, name, k, types), p.description)]),
        );
        types[token] = { type: "object", ...(json.typeDescription ? { description: json.typeDescription } : {}), properties };
      }
      return { $ref: `#/types/${token}` };
    }
  }
  throw new Error(`no schema type for ${JSON.stringify(json)} (${owner}.${property})`);
}

const described = <T extends TypeSpec>(spec: T, description: string | undefined): T & { description?: string } =>
  description ? { ...spec, description } : spec;

/** The outputs of a resource: its state, but the provider's own bookkeeping. */
function outputsOf(spec: ResourceSpec): { properties: Record<string, Json>; required: string[] } {
  const json = jsonOf(spec.state, "output");
  const internal = new Set(spec.internalState ?? []);
  const properties = Object.fromEntries(Object.entries(json.properties ?? {}).filter(([k]) => !internal.has(k)));
  return { properties, required: (json.required ?? []).filter((k) => !internal.has(k)) };
}

/** The inputs of a resource, as a program declares them, and which it must declare. */
function inputsOf(spec: ResourceSpec): { properties: Record<string, Json>; required: string[] } {
  const json = jsonOf(spec.inputs, "input");
  return { properties: json.properties ?? {}, required: (json.required ?? []).filter((k) => !FROM_SETTINGS.includes(k)) };
}

/**
 * A description with each name of the resource's inputs and outputs it mentions (a camelCase word,
 * or one word in backticks) made a reference, which each language's generator writes in its own
 * words: `syncReplicaCount` is sync_replica_count in Python, SyncReplicaCount in Go and .NET.
 */
export function withReferences(text: string, token: string, inputs: readonly string[], outputs: readonly string[]): string {
  const ref = (name: string, prefer: "inputProperties" | "properties") => {
    const where =
      prefer === "inputProperties"
        ? inputs.includes(name)
          ? "inputProperties"
          : "properties"
        : outputs.includes(name)
          ? "properties"
          : "inputProperties";
    return `{{% ref #/resources/${token}/${where}/${name} %}}`;
  };
  const known = (name: string) => inputs.includes(name) || outputs.includes(name);
  // Not a config key's part (tigercloud:projectId) nor a member's (x.serviceId): those are no property of this resource.
  return text.replace(/`([a-z][A-Za-z0-9]*)`|(?<![:.\w])([a-z]+(?:[A-Z][a-z0-9]*)+)\b/g, (match, quoted?: string, camel?: string) => {
    const name = (quoted ?? camel) as string;
    return known(name) ? ref(name, "inputProperties") : match;
  });
}

/** An example program: its title, and its text in each language that has been generated. */
export interface Example {
  name: string;
  title: string;
  code: { language: string; text: string }[];
}

/** The examples of a resource kind, with what scripts/gen-sdks/run last generated of each. */
export function examplesOf(kind: string): Example[] {
  if (!fs.existsSync(EXAMPLES_DIR)) return [];
  return fs
    .readdirSync(EXAMPLES_DIR)
    .filter((f) => f.startsWith(`${kind}.`) && f.endsWith(".pp"))
    .sort()
    .map((file) => {
      const name = file.slice(0, -".pp".length);
      const first = fs.readFileSync(path.join(EXAMPLES_DIR, file), "utf8").split("\n")[0] ?? "";
      const title = first.replace(/^# /, "");
      const code = EXAMPLE_LANGUAGES.flatMap(([language, generated]) => {
        const made = path.join(GENERATED_EXAMPLES_DIR, name, generated);
        return fs.existsSync(made) ? [{ language, text: fs.readFileSync(made, "utf8").trimEnd() }] : [];
      });
      return { name, title, code };
    });
}

/** How each resource is imported: Pulumi's import takes the object's ID, which for each is this. */
const IMPORT_IDS: Record<string, { id: string; example: string; name: string }> = {
  ServiceFork: { id: "the fork's service ID", example: "svc-a1b2c3d4e5", name: "prDatabase" },
  ServiceHA: { id: "the service's ID", example: "svc-a1b2c3d4e5", name: "ha" },
  VpcName: { id: "the VPC's ID", example: "1234567", name: "analytics" },
};

/**
 * A resource's documentation in the schema: what it is, its examples in every language (as the
 * Registry's pages and the SDKs show them, each language's generator keeping its own), and how it is
 * imported.
 */
function documentation(kind: string, description: string): string {
  const examples = examplesOf(kind);
  const parts = [description];
  if (examples.length > 0)
    parts.push(
      [
        "{{% examples %}}",
        "## Example Usage",
        ...examples.map((e) =>
          [
            "{{% example %}}",
            `### ${e.title}`,
            "",
            ...e.code.map((c) => `\`\`\`${c.language}\n${c.text}\n\`\`\``),
            "{{% /example %}}",
          ].join("\n"),
        ),
        "{{% /examples %}}",
      ].join("\n"),
    );
  const importing = IMPORT_IDS[kind];
  if (importing)
    parts.push(
      [
        "## Import",
        "",
        `An existing ${kind} is imported by ${importing.id}. The run that imports changes nothing in Tiger Cloud; where the program ` +
          "declares otherwise, it warns what the next update will change.",
        "",
        "```sh",
        `$ pulumi import tigercloud:index:${kind} ${importing.name} ${importing.example}`,
        "```",
      ].join("\n"),
    );
  return parts.join("\n\n");
}

/** The schema, from the resources' specifications as they are now. */
export function makeSchema(): PackageSchema {
  const types: PackageSchema["types"] = {};
  const resources: PackageSchema["resources"] = {};
  for (const { spec } of RESOURCES) {
    const inputs = inputsOf(spec);
    const outputs = outputsOf(spec);
    const token = TOKEN(spec.kind);
    const linked = (text: string | undefined) =>
      text && withReferences(text, token, Object.keys(inputs.properties), Object.keys(outputs.properties));
    const inputProperties = Object.fromEntries(
      Object.entries(inputs.properties).map(([k, p]) => [k, described(schemaType(p, spec.kind, k, types), linked(p.description))]),
    );
    const properties = Object.fromEntries(
      Object.entries(outputs.properties).map(([k, p]) => {
        const type = described(schemaType(p, spec.kind, k, types), linked(p.description));
        return [k, spec.secretOutputs?.includes(k) ? { ...type, secret: true } : type];
      }),
    );
    resources[token] = {
      description: documentation(spec.kind, linked(spec.description) as string),
      properties,
      required: [...outputs.required].sort(),
      inputProperties,
      requiredInputs: inputs.required,
      // What `get` of an existing resource may be given (Go's ServiceForkState, ...): its outputs.
      stateInputs: {
        description: `Input properties used for looking up and filtering ${spec.kind} resources.`,
        properties,
        type: "object",
      },
    };
  }
  const settings = Object.fromEntries(
    Object.entries(SETTING_SOURCES).map(([name, s]) => {
      const type: TypeSpec = isSwitch(name as keyof typeof SETTING_SOURCES) ? { type: "boolean" } : { type: "string" };
      return [name, { ...type, description: s.description, ...(s.secret ? { secret: true } : {}) }];
    }),
  );
  return {
    name: "tigercloud",
    displayName: "Tiger Cloud",
    publisher: "pulumi-tigercloud",
    description: "Fork Tiger Cloud (formerly Timescale Cloud) services, set their high availability, name VPCs.",
    license: "Apache-2.0",
    homepage: REPOSITORY,
    repository: REPOSITORY,
    // The engine fetches the plugin from the project's releases (pulumi-resource-tigercloud-vVERSION-OS-ARCH.tar.gz)
    // when a program needs it and it is not installed.
    pluginDownloadURL: "github://api.github.com/tigercloud/pulumi-tigercloud",
    keywords: ["pulumi", "tigercloud", "timescale", "postgresql", "category/database"],
    config: { variables: settings },
    provider: {
      description: "The Tiger Cloud provider: one set of credentials and settings.",
      properties: settings,
      inputProperties: settings,
    },
    resources,
    types,
    // The SDKs carry the package's version (the plugin's), so each program asks for that plugin.
    meta: { supportPack: true },
    language: {
      go: { importBasePath: "github.com/tigercloud/pulumi-tigercloud/sdk/go/tigercloud", generateResourceContainerTypes: false },
      python: { packageName: "pulumi_tigercloud", pyproject: { enabled: true } },
      // NuGet's Pulumi.* prefix is Pulumi's own: the company's name, then the package's, as community
      // packages do (Pulumiverse.Vercel). A program then aliases it TigerCloud, not Pulumi, which
      // would clash with the Pulumi namespace every program uses.
      csharp: { rootNamespace: "TigerData", namespaces: { tigercloud: "TigerCloud" } },
      // A TypeScript program uses this package (its classes have the same names and arguments).
      nodejs: { packageName: "pulumi-tigercloud" },
    },
  };
}

/** The schema as the file holds it: two-space JSON with a final newline. */
export const schemaText = (schema: PackageSchema) => `${JSON.stringify(schema, null, 2)}\n`;

// ---- the TypeScript program's classes

/** A doc comment: on one line where it fits, else wrapped; `code`, lines kept as they are, after it. */
function doc(text: string | undefined, indent: string, code: string[] = []): string {
  if (!text) return "";
  const safe = (t: string) => t.replace(/\*\//g, "* /");
  if (code.length === 0 && indent.length + safe(text).length + 7 <= 140) return `${indent}/** ${safe(text)} */\n`;
  const lines = [...wrap(safe(text), 100 - indent.length), ...code.map(safe)];
  return `${indent}/**\n${lines.map((l) => `${indent} * ${l}`.trimEnd()).join("\n")}\n${indent} */\n`;
}

/** The TypeScript examples of a resource kind, as a doc comment's lines. */
function typescriptExamples(kind: string): string[] {
  return examplesOf(kind).flatMap((e) => {
    const code = e.code.find((c) => c.language === "typescript");
    return code ? ["", `### ${e.title}`, "", "```typescript", ...code.text.split("\n"), "```"] : [];
  });
}

/** The enums' values by name, as each language's SDK has them (ForkStrategy.LastSnapshot is "LAST_SNAPSHOT"). */
function enumConstants(types: PackageSchema["types"]): string {
  return Object.entries(types)
    .flatMap(([token, t]) => {
      if (!("enum" in t)) return [];
      const name = token.split(":").pop() as string;
      const members = t.enum.map((e) => `${doc(e.description, "  ")}  ${e.name}: ${JSON.stringify(e.value)},\n`).join("");
      return [
        `${doc(t.description, "")}export const ${name} = {\n${members}} as const;\n` +
          `${doc(t.description, "")}export type ${name} = (typeof ${name})[keyof typeof ${name}];\n`,
      ];
    })
    .join("\n");
}

function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = "";
  for (const word of text.split(/\s+/)) {
    if (line && line.length + word.length + 1 > width) {
      lines.push(line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  if (line) lines.push(line);
  return lines;
}

/** A TypeScript type for a JSON Schema property; nested objects become named interfaces in `named`. */
function tsType(json: Json, owner: string, property: string, named: Map<string, string>): string {
  if (json.enum) return json.enum.map((v) => JSON.stringify(v)).join(" | ");
  const alternatives = json.anyOf ?? (Array.isArray(json.type) ? json.type.map((type) => ({ type })) : undefined);
  if (alternatives) return [...new Set(alternatives.map((a) => tsType(a, owner, property, named)))].join(" | ");
  switch (json.type) {
    case "string":
      return "string";
    case "boolean":
      return "boolean";
    case "integer":
    case "number":
      return "number";
    case "array":
      return `${tsType(json.items ?? {}, owner, property.replace(/s$/, ""), named)}[]`;
    case "object": {
      const name = json.typeName ?? `${owner}${pascal(property)}`;
      if (!named.has(name)) {
        named.set(name, "");
        const members = Object.entries(json.properties ?? {})
          .map(([k, p]) => `${doc(p.description, "  ")}  ${k}${json.required?.includes(k) ? "" : "?"}: ${tsType(p, name, k, named)};\n`)
          .join("");
        named.set(name, `${doc(json.typeDescription, "")}export interface ${name} {\n${members}}\n`);
      }
      return name;
    }
  }
  return "unknown";
}

/** provider/program/resources.ts, as this makes it now (formatted as the repository's prettier does). */
export async function makeProgram(): Promise<string> {
  const named = new Map<string, string>();
  const blocks: string[] = [];
  for (const { spec } of RESOURCES) {
    const inputs = inputsOf(spec);
    const outputs = outputsOf(spec);
    const args = Object.entries(inputs.properties)
      .map(
        ([k, p]) =>
          `${doc(p.description, "  ")}  ${k}${inputs.required.includes(k) ? "" : "?"}: pulumi.Input<${tsType(p, spec.kind, k, named)}>;\n`,
      )
      .join("");
    const fields = Object.entries(outputs.properties)
      .map(([k, p]) => {
        const type = tsType(p, spec.kind, k, named);
        return `${doc(p.description, "  ")}  declare readonly ${k}: pulumi.Output<${outputs.required.includes(k) ? type : `${type} | undefined`}>;\n`;
      })
      .join("");
    blocks.push(
      `/** The inputs of a {@link ${spec.kind}}. */\nexport interface ${spec.kind}Args {\n${args}}\n\n` +
        `${doc(spec.description, "", typescriptExamples(spec.kind))}export class ${spec.kind} extends pulumi.dynamic.Resource {\n${fields}\n` +
        `  constructor(name: string, args: ${spec.kind}Args, opts?: pulumi.CustomResourceOptions) {\n` +
        `    const outputs: string[] = ${JSON.stringify(Object.keys(outputs.properties))};\n` +
        `    const secret: string[] = ${JSON.stringify(spec.secretOutputs ?? [])};\n` +
        `    super(serializedProvider("${spec.kind}"), name, declaredInputs("${spec.kind}", name, args, outputs, opts), withSecretOutputs(opts, secret), "tigercloud", "${spec.kind}");\n` +
        `  }\n}\n`,
    );
  }
  const text =
    `// Generated by scripts/declarations.ts (npm run declarations) from the resources' specifications\n` +
    `// (provider/resources/*/resource.ts): what a TypeScript program declares and gets back. Do not edit.\n` +
    `import * as pulumi from "@pulumi/pulumi";\n` +
    `import { serializedProvider } from "../hosts/dynamic/serializedProvider";\n` +
    `import { declaredInputs, withSecretOutputs } from "./declare";\n\n` +
    enumConstants(makeSchema().types) +
    "\n" +
    [...named.values()].join("\n") +
    "\n" +
    blocks.join("\n");
  const prettier = require("prettier") as typeof import("prettier");
  const config = (await prettier.resolveConfig(PROGRAM_FILE)) ?? {};
  return prettier.format(text, { ...config, parser: "typescript" });
}

if (require.main === module) {
  void (async () => {
    const made: [string, string][] = [[PROGRAM_FILE, await makeProgram()]];
    if (!process.argv.includes("--program")) made.push([SCHEMA_FILE, schemaText(makeSchema())]);
    const check = process.argv.includes("--check");
    let stale = 0;
    for (const [file, text] of made) {
      const name = path.relative(ROOT, file);
      if (!check) {
        if (!fs.existsSync(file) || fs.readFileSync(file, "utf8") !== text) fs.writeFileSync(file, text);
        process.stdout.write(`wrote ${name}\n`);
      } else if (!fs.existsSync(file) || fs.readFileSync(file, "utf8") !== text) {
        process.stderr.write(`${name} is not what the specifications make: run npm run declarations\n`);
        stale++;
      }
    }
    process.exitCode = stale > 0 ? 1 : 0;
  })();
}
