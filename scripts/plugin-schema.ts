// The provider plugin's Pulumi package schema, made from the declarations a TypeScript program
// uses: each resource class in provider/program/ (its outputs) and its Args interface (its inputs),
// with their doc comments, which inputs are required, the string enums, the nested output types;
// secret outputs from each class's SECRET_OUTPUTS, provider settings from settings.ts.
// `npm run plugin:schema` writes provider/plugin/schema.json; test/plugin-schema.test.ts holds
// the file equal to what this makes, and the schema to the resources' zod rules.
import * as fs from "fs";
import * as path from "path";
import * as ts from "typescript";
import { SECRET_OUTPUTS as FORK_SECRET_OUTPUTS } from "../provider/program/serviceFork";
import { SETTING_SOURCES } from "../provider/settings";

const ROOT = path.join(__dirname, "..");
export const SCHEMA_FILE = path.join(ROOT, "provider", "plugin", "schema.json");
const RESOURCES = ["ServiceFork", "ServiceHA", "VpcName"] as const;
const SOURCES: Record<(typeof RESOURCES)[number], string> = {
  ServiceFork: "provider/program/serviceFork.ts",
  ServiceHA: "provider/program/serviceHA.ts",
  VpcName: "provider/program/vpcName.ts",
};
/** Outputs the TypeScript classes keep secret: the schema marks them, and the plugin sends them as secrets. */
const SECRET_OUTPUTS: Record<string, readonly string[]> = { ServiceFork: FORK_SECRET_OUTPUTS };

/**
 * Numbers that are whole, as the API's spec types them (integer): a Go program writes
 * pulumi.Int(2), not pulumi.Float64(2). The schema test holds each such input to a rule that
 * refuses a fraction.
 */
const WHOLE_NUMBERS = new Set(["replicaCount", "syncReplicaCount", "port", "cpuMillis"]);

type TypeSpec =
  { type: "string" | "number" | "integer" | "boolean" } | { type: "array"; items: TypeSpec } | { $ref: string } | { oneOf: TypeSpec[] };
type PropertySpec = TypeSpec & { description?: string; secret?: boolean };
interface ObjectSpec {
  description?: string;
  properties: Record<string, PropertySpec>;
  required?: string[];
  inputProperties?: Record<string, PropertySpec>;
  requiredInputs?: string[];
}
type EnumSpec = { type: "string"; description?: string; enum: { value: string; name?: string }[] };

export interface PackageSchema {
  name: string;
  displayName: string;
  publisher: string;
  version?: string;
  description: string;
  homepage?: string;
  license: string;
  keywords: string[];
  config: { variables: Record<string, PropertySpec> };
  provider: ObjectSpec;
  resources: Record<string, ObjectSpec>;
  types: Record<string, (ObjectSpec & { type: "object" }) | EnumSpec>;
  language: Record<string, unknown>;
  meta: Record<string, unknown>;
}

export const TOKEN = (name: string) => `tigercloud:index:${name}`;

/** The schema, from the declarations as they are on disk now. */
export function makeSchema(): PackageSchema {
  const files = Object.values(SOURCES).map((f) => path.join(ROOT, f));
  const program = ts.createProgram(files, { strict: true, target: ts.ScriptTarget.ES2020, module: ts.ModuleKind.CommonJS, noEmit: true });
  const checker = program.getTypeChecker();
  const types: PackageSchema["types"] = {};

  const docOf = (symbol: ts.Symbol) => ts.displayPartsToString(symbol.getDocumentationComment(checker)).replace(/\s+/g, " ").trim();

  /** The type inside pulumi.Input<T> or pulumi.Output<T>, as the declaration wrote it. */
  const unwrap = (node: ts.TypeNode | undefined): ts.TypeNode | undefined => {
    if (node && ts.isTypeReferenceNode(node) && /^pulumi\.(Input|Output)$/.test(node.typeName.getText()) && node.typeArguments?.[0])
      return node.typeArguments[0];
    return node;
  };

  /** A schema type for a declared TypeScript type; `owner` and `property` name a nested or enum type. */
  function specOf(type: ts.Type, owner: string, property: string): TypeSpec {
    const parts = type.isUnion() ? type.types.filter((t) => !(t.flags & (ts.TypeFlags.Undefined | ts.TypeFlags.Null))) : [type];
    if (parts.length > 1 && parts.every((t) => t.flags & ts.TypeFlags.BooleanLiteral)) return { type: "boolean" };
    if (parts.length > 1 && parts.every((t) => t.isStringLiteral())) {
      const values = parts.map((t) => (t as ts.StringLiteralType).value);
      const name = property.charAt(0).toUpperCase() + property.slice(1);
      const known = types[TOKEN(name)];
      if (known && JSON.stringify((known as EnumSpec).enum?.map((e) => e.value)) !== JSON.stringify(values))
        throw new Error(`two enums named ${name} with other values (${owner}.${property})`);
      types[TOKEN(name)] = { type: "string", enum: values.map((value) => ({ name: pascalCase(value), value })) };
      return { $ref: `#/types/${TOKEN(name)}` };
    }
    if (parts.length > 1) return { oneOf: parts.map((t) => specOf(t, owner, property)) };
    const only = parts[0] as ts.Type;
    if (only.flags & ts.TypeFlags.String) return { type: "string" };
    if (only.flags & ts.TypeFlags.Number) return { type: WHOLE_NUMBERS.has(property) ? "integer" : "number" };
    if (only.flags & ts.TypeFlags.Boolean) return { type: "boolean" };
    if (checker.isArrayType(only)) {
      const element = checker.getTypeArguments(only as ts.TypeReference)[0] as ts.Type;
      return { type: "array", items: specOf(element, owner, property.replace(/s$/, "")) };
    }
    if (only.flags & ts.TypeFlags.Object) {
      // A named interface keeps its name (Endpoint); a literal type is named by where it is.
      const declared = only.aliasSymbol?.name ?? (only.symbol?.name !== "__type" ? only.symbol?.name : undefined);
      const name = declared ?? `${owner}${property.charAt(0).toUpperCase()}${property.slice(1)}`;
      if (!types[TOKEN(name)]) {
        types[TOKEN(name)] = { type: "object", properties: {} };
        const properties: Record<string, PropertySpec> = {};
        for (const member of checker.getPropertiesOfType(only)) {
          const memberType = checker.getTypeOfSymbol(member);
          properties[member.name] = withDoc(specOf(memberType, name, member.name), docOf(member));
        }
        types[TOKEN(name)] = { type: "object", properties };
      }
      return { $ref: `#/types/${TOKEN(name)}` };
    }
    throw new Error(`no schema type for ${checker.typeToString(type)} (${owner}.${property})`);
  }

  const resources: PackageSchema["resources"] = {};
  for (const kind of RESOURCES) {
    const source = program.getSourceFile(path.join(ROOT, SOURCES[kind])) as ts.SourceFile;
    const cls = source.statements.find((s): s is ts.ClassDeclaration => ts.isClassDeclaration(s) && s.name?.text === kind);
    const args = source.statements.find((s): s is ts.InterfaceDeclaration => ts.isInterfaceDeclaration(s) && s.name.text === `${kind}Args`);
    if (!cls || !args) throw new Error(`${SOURCES[kind]} declares no class ${kind} or interface ${kind}Args`);
    const classDoc = leadingComment(source);
    const inputProperties: Record<string, PropertySpec> = {};
    const requiredInputs: string[] = [];
    for (const member of args.members) {
      if (!ts.isPropertySignature(member)) continue;
      const name = member.name.getText();
      const node = unwrap(member.type) as ts.TypeNode;
      inputProperties[name] = withDoc(
        specOf(checker.getTypeFromTypeNode(node), kind, name),
        docOf(checker.getSymbolAtLocation(member.name) as ts.Symbol),
      );
      if (!member.questionToken) requiredInputs.push(name);
    }
    // Outputs: every input (state records them) and what the class declares beyond them.
    const properties: Record<string, PropertySpec> = { ...inputProperties };
    const required = new Set<string>();
    for (const member of cls.members) {
      if (!ts.isPropertyDeclaration(member) || !member.type) continue;
      const name = member.name.getText();
      const type = checker.getTypeFromTypeNode(unwrap(member.type) as ts.TypeNode);
      const optional = type.isUnion() && type.types.some((t) => t.flags & ts.TypeFlags.Undefined);
      const doc = docOf(checker.getSymbolAtLocation(member.name) as ts.Symbol) || inputProperties[name]?.description || "";
      properties[name] = withDoc(specOf(type, kind, name), doc);
      if (!optional) required.add(name);
    }
    for (const name of SECRET_OUTPUTS[kind] ?? []) {
      if (!properties[name]) throw new Error(`${kind} declares no output ${name}, named secret`);
      properties[name] = { ...properties[name], secret: true } as PropertySpec;
    }
    resources[TOKEN(kind)] = {
      description: classDoc,
      properties,
      required: [...required].sort(),
      inputProperties,
      requiredInputs,
    };
  }

  const settings = Object.fromEntries(
    Object.entries(SETTING_SOURCES).map(([name, s]) => {
      const type: TypeSpec = name === "allowInsecureHttp" || name === "verifyReferences" ? { type: "boolean" } : { type: "string" };
      return [name, { ...type, description: s.description, ...(s.secret ? { secret: true } : {}) }];
    }),
  );
  return {
    name: "tigercloud",
    displayName: "Tiger Cloud",
    publisher: "pulumi-tigercloud",
    description: "Fork Tiger Cloud (formerly Timescale Cloud) services, set their high availability, name VPCs.",
    license: "Apache-2.0",
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
      // NuGet's Pulumi.* prefix is Pulumi's own: the package is TigerCloud.Pulumi.
      csharp: { rootNamespace: "TigerCloud", namespaces: { tigercloud: "Pulumi" } },
      nodejs: { packageName: "@tigercloud/pulumi" },
    },
  };
}

/** An enum value's name in the SDKs: LAST_SNAPSHOT is LastSnapshot, login is Login. */
function pascalCase(value: string): string {
  return value
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .map((w) => w.charAt(0).toUpperCase() + w.slice(1))
    .join("");
}

function withDoc(spec: TypeSpec, description: string): PropertySpec {
  return description ? { ...spec, description } : spec;
}

/** A module's leading comment (its first lines of `//`), as the resource's description. */
function leadingComment(source: ts.SourceFile): string {
  const lines: string[] = [];
  for (const line of source.getFullText().split("\n")) {
    if (!line.startsWith("//")) break;
    lines.push(line.replace(/^\/\/\s?/, ""));
  }
  return lines
    .join(" ")
    .replace(/ The provider (that does the work )?is resources\/.*$/, "")
    .replace(/\s+/g, " ")
    .trim();
}

/** The schema as the file holds it: two-space JSON with a final newline. */
export const schemaText = (schema: PackageSchema) => `${JSON.stringify(schema, null, 2)}\n`;

if (require.main === module) {
  fs.writeFileSync(SCHEMA_FILE, schemaText(makeSchema()));
  process.stdout.write(`wrote ${path.relative(process.cwd(), SCHEMA_FILE)}\n`);
}
