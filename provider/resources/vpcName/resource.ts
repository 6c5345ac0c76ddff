// VpcName: the name of an existing VPC (rename), read back so that refresh sees a rename made
// elsewhere. Destroying it makes no API call: a VPC cannot be unnamed. Its parts, wired into the
// lifecycle every host runs (../define.ts).
import { defineResource } from "../define";
import type { ResourceSpec } from "../spec";
import { VPC_DIFF_RULES, VpcInputsSchema } from "./inputs";
import { importName, keepName, readName, rename } from "./rename";
import { VpcNameStateSchema } from "./state";

/** What a program declares and gets back: one source for the SDKs, the schema and the docs. */
export const vpcNameSpec = {
  kind: "VpcName" as const,
  description:
    "The name of an existing VPC (rename), read back so that refresh sees a rename made elsewhere. Destroying it makes no API call: " +
    "a VPC cannot be unnamed, so it keeps the last name Pulumi gave it.",
  inputs: VpcInputsSchema,
  state: VpcNameStateSchema,
  internalState: [],
  secretOutputs: [],
} satisfies ResourceSpec<typeof VpcInputsSchema, typeof VpcNameStateSchema>;

/** @internal */
export const vpcName = defineResource({
  spec: vpcNameSpec,
  rules: VPC_DIFF_RULES,

  references: (inputs) => [{ type: "vpc", property: "vpcId", projectId: inputs.projectId, id: inputs.vpcId }],

  async create(ctx, inputs) {
    return { id: inputs.vpcId, state: await rename(ctx, inputs) };
  },
  read: readName,
  importFrom: importName,
  update: (ctx, _id, _olds, inputs) => rename(ctx, inputs),
  async delete(ctx, id) {
    keepName(ctx, id);
  },
});
