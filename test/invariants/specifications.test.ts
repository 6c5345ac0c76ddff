// What each language's program sees is made from the resources' one specification: the committed
// plugin schema and TypeScript classes are what scripts/declarations.ts makes today, and the schema
// agrees with the rules the resources apply (their zod schemas): the same inputs, the same
// required ones, the same enum values, the same secret outputs and settings.
import { spawnSync } from "child_process";
import * as fs from "fs";
import * as path from "path";
import * as pulumi from "@pulumi/pulumi";
import type { z } from "zod";
import { resourceOf } from "../../provider/resources/registry";
import { HAInputsSchema } from "../../provider/resources/serviceHA/inputs";
import { ForkInputsSchema } from "../../provider/resources/serviceFork/inputs";
import { VpcInputsSchema } from "../../provider/resources/vpcName/inputs";
import { UNKNOWN } from "../../provider/rules/inputs";
import { SETTING_SOURCES } from "../../provider/settings";
import { makeSchema, type PackageSchema, SCHEMA_FILE, TOKEN } from "../../scripts/declarations";

jest.setTimeout(60_000);
const committed = JSON.parse(fs.readFileSync(SCHEMA_FILE, "utf8")) as PackageSchema;
let made: PackageSchema;
beforeAll(() => {
  made = makeSchema();
});

const RULES: Record<string, z.ZodObject> = {
  ServiceFork: ForkInputsSchema as unknown as z.ZodObject,
  ServiceHA: HAInputsSchema as unknown as z.ZodObject,
  VpcName: VpcInputsSchema as unknown as z.ZodObject,
};

test("the committed schema and TypeScript classes are the ones the specifications make (npm run declarations writes them)", () => {
  expect(committed).toEqual(made);
  // In a process of its own: prettier, which lays out the classes, loads as an ES module.
  const root = path.join(__dirname, "..", "..");
  const run = spawnSync(process.execPath, ["-r", "ts-node/register/transpile-only", "scripts/declarations.ts", "--check"], {
    cwd: root,
    encoding: "utf8",
  });
  expect(run.stderr).not.toMatch(/is not what the specifications make/);
  expect(run.status).toBe(0);
});

/** A zod type with its defaults and optionals taken off: what the value itself must be. */
function inner(type: z.ZodType): z.ZodType {
  let t = type as unknown as { def: { innerType?: z.ZodType; in?: z.ZodType; out?: z.ZodType } };
  while (t.def.innerType) t = t.def.innerType as unknown as typeof t;
  return t as unknown as z.ZodType;
}

describe.each(Object.keys(RULES))("%s", (kind) => {
  const rules = RULES[kind] as z.ZodObject;
  const resource = () => made.resources[TOKEN(kind)] as NonNullable<PackageSchema["resources"][string]>;

  test("its inputs are the rules' inputs, and required where the rules need them (projectId: a setting's default)", () => {
    expect(Object.keys(resource().inputProperties ?? {}).sort()).toEqual(Object.keys(rules.shape).sort());
    const needed = Object.keys(rules.shape).filter((k) => k !== "projectId" && !(rules.shape[k] as z.ZodType).safeParse(undefined).success);
    expect([...(resource().requiredInputs ?? [])].sort()).toEqual(needed.sort());
  });

  test("each enum holds exactly the values the rules take", () => {
    // (A reference to a nested object's type is no enum.)
    const enums = Object.entries<PackageSchema["resources"][string]["properties"][string]>(resource().inputProperties ?? {}).filter(
      ([, p]) => "$ref" in p && "enum" in (made.types[(p as { $ref: string }).$ref.replace("#/types/", "")] ?? {}),
    );
    for (const [name, property] of enums) {
      const ref = (property as { $ref: string }).$ref.replace("#/types/", "");
      const values = ((made.types[ref] as { enum?: { value: string }[] }).enum ?? []).map((e) => e.value);
      const options = (inner(rules.shape[name] as z.ZodType) as unknown as { options?: string[] }).options;
      expect({ name, values }).toEqual({ name, values: options });
    }
  });

  test("each whole-number input is one the rules hold whole: a fraction is refused", () => {
    const whole = Object.entries<PackageSchema["resources"][string]["properties"][string]>(resource().inputProperties ?? {}).filter(
      ([, p]) => JSON.stringify(p).includes('"integer"'),
    );
    for (const [name] of whole)
      expect({ name, fraction: (rules.shape[name] as z.ZodType).safeParse(1.5).success }).toEqual({ name, fraction: false });
  });

  test("every type it refers to is in the schema", () => {
    const refs = JSON.stringify(resource()).match(/#\/types\/[\w:]+/g) ?? [];
    for (const ref of refs) expect(made.types).toHaveProperty([ref.replace("#/types/", "")]);
  });
});

test("the outputs every program keeps secret are the schema's secret outputs", () => {
  const secretOf = (kind: string) =>
    Object.entries(made.resources[TOKEN(kind)]?.properties ?? {})
      .filter(([, p]) => p.secret === true)
      .map(([name]) => name);
  // (A secret of the provider's own bookkeeping is kept secret in state, and is no output.)
  const spec = resourceOf("ServiceFork")?.spec;
  const internal = new Set<string>(spec?.internalState ?? []);
  expect(secretOf("ServiceFork").sort()).toEqual([...(spec?.secretOutputs ?? ["(none)"])].filter((k) => !internal.has(k)).sort());
  expect(secretOf("ServiceHA")).toEqual([]);
  expect(secretOf("VpcName")).toEqual([]);
});

test("the provider's settings are the Configuration table's, the credentials secret", () => {
  expect(Object.keys(made.config.variables).sort()).toEqual(Object.keys(SETTING_SOURCES).sort());
  expect(Object.keys(made.provider.inputProperties ?? {}).sort()).toEqual(Object.keys(SETTING_SOURCES).sort());
  const secret = Object.entries(made.provider.inputProperties ?? {})
    .filter(([, p]) => p.secret === true)
    .map(([name]) => name);
  expect(secret.sort()).toEqual(["apiKey", "secretKey"]);
});

test("the unknown sentinel the plugin knows is the engine's, as the SDK gives it", () => {
  expect(UNKNOWN).toBe(pulumi.runtime.unknownValue);
});
