// VpcName: the name of an existing VPC (rename), read back so that refresh sees a rename made
// elsewhere. Destroying it makes no API call: a VPC cannot be unnamed. Its parts, wired into the
// lifecycle every host runs (resources/define.ts).
import { defineResource } from "../define";
import { VPC_DIFF_RULES, VpcInputsSchema } from "./inputs";
import { importName, keepName, readName, rename } from "./rename";
import { VpcNameStateSchema } from "./state";

/** @internal */
export const vpcName = defineResource({
  // What a program declares and gets back: one source for the SDKs, the schema and the docs.
  kind: "VpcName",
  description:
    "The name of an existing VPC (rename), read back so that refresh sees a rename made elsewhere. Destroying it makes no API call: " +
    "a VPC cannot be unnamed, so it keeps the last name Pulumi gave it.",
  inputs: VpcInputsSchema,
  state: VpcNameStateSchema,

  rules: VPC_DIFF_RULES,

  // At preview, the VPC read.
  check: async (_ctx, inputs, { creates, verify }) =>
    creates ? verify([{ type: "vpc", property: "vpcId", projectId: inputs.projectId, id: inputs.vpcId }]) : [],

  async create(ctx, inputs) {
    return { id: inputs.vpcId, state: await rename(ctx, inputs) };
  },
  read: readName,
  import: importName,
  update: (ctx, _id, olds, inputs, through) => (through === "api" ? rename(ctx, inputs) : Promise.resolve(olds)),
  async delete(ctx, id) {
    keepName(ctx, id);
  },
});
