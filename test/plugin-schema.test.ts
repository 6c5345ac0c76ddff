// The plugin's package schema: the committed file is what scripts/plugin-schema.ts makes from the
// TypeScript declarations today, and those declarations agree with the rules the resources apply
// (their zod schemas): the same inputs, the same required ones, the same enum values, the same
// secret outputs and settings.
import * as fs from "fs";
import * as pulumi from "@pulumi/pulumi";
import type { z } from "zod";
import { SECRET_OUTPUTS } from "../provider/program/serviceFork";
import { HAInputsSchema } from "../provider/resources/serviceHA/inputs";
import { ForkInputsSchema } from "../provider/resources/serviceFork/inputs";
import { VpcInputsSchema } from "../provider/resources/vpcName/inputs";
import { UNKNOWN } from "../provider/rules/inputs";
import { SETTING_SOURCES } from "../provider/settings";
import { makeSchema, type PackageSchema, SCHEMA_FILE, TOKEN } from "../scripts/plugin-schema";

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

test("the committed schema is the one the declarations make (npm run plugin:schema writes it)", () => {
  expect(committed).toEqual(made);
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
    const enums = Object.entries(resource().inputProperties ?? {}).filter(([, p]) => "$ref" in p);
    for (const [name, property] of enums) {
      const ref = (property as { $ref: string }).$ref.replace("#/types/", "");
      const values = ((made.types[ref] as { enum?: { value: string }[] }).enum ?? []).map((e) => e.value);
      const options = (inner(rules.shape[name] as z.ZodType) as unknown as { options?: string[] }).options;
      expect({ name, values }).toEqual({ name, values: options });
    }
  });

  test("each whole-number input is one the rules hold whole: a fraction is refused", () => {
    const whole = Object.entries(resource().inputProperties ?? {}).filter(([, p]) => JSON.stringify(p).includes('"integer"'));
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
  expect(secretOf("ServiceFork").sort()).toEqual([...SECRET_OUTPUTS].sort());
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
