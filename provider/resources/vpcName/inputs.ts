// VpcName's inputs: their schema and diff rules (pure).
import { z } from "zod";
import type { DiffRules } from "../../rules/diff";
import { idSchema, nameSchema, textSchema } from "../../rules/inputSchemas";

/** The API publishes no limit on a VPC's name; 128 matches a service's name. */
export const VPC_NAME_MAX = 128;

/** @internal */
export const VpcInputsSchema = z.strictObject({
  projectId: idSchema.describe(
    "The project of the VPC. Default: the provider's project (stack config tigercloud:projectId, or TIGER_PROJECT_ID, else the key's project).",
  ),
  // Digits, as text. A whole number is taken as its digits where it holds them all (a YAML
  // program's config hands digits over as a number); a larger one has lost digits already.
  vpcId: z
    .preprocess(
      (v) => (typeof v === "number" && Number.isSafeInteger(v) && v >= 0 ? String(v) : v),
      textSchema(
        (s) => (!/^[0-9]+$/.test(s) ? "must be a string of digits" : s.length > 64 ? "must be at most 64 digits" : undefined),
        "must be a string of digits",
      ),
    )
    .describe("The VPC's ID: digits."),
  name: nameSchema(VPC_NAME_MAX).describe("The name to give it: 1 to 128 characters, not blank, no control or invisible characters."),
});
export type VpcInputs = z.output<typeof VpcInputsSchema>;

/** The inputs as a program declares them. */
export type VpcDeclaration = z.input<typeof VpcInputsSchema>;

export const VPC_DIFF_RULES: DiffRules<VpcInputs> = { replaceKeys: ["projectId", "vpcId"], updateKeys: ["name"] };
