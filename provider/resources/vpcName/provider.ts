// The VpcName provider: its parts wired into the engine's methods (resources/defineProvider.ts).
import { defineProvider } from "../defineProvider";
import { VPC_DIFF_RULES, VpcInputsSchema } from "./inputs";
import { keepName, readName, rename } from "./lifecycle";

/** @internal */
export const vpcNameProvider = defineProvider({
  kind: "VpcName",
  schema: VpcInputsSchema,
  rules: VPC_DIFF_RULES,

  references: (inputs) => [{ type: "vpc", property: "vpcId", projectId: inputs.projectId, id: inputs.vpcId }],

  async create(ctx, inputs) {
    return { id: inputs.vpcId, outs: await rename(ctx, inputs) };
  },
  read: readName,
  async update(ctx, _id, _olds, inputs) {
    return { outs: await rename(ctx, inputs) };
  },
  async delete(ctx, id) {
    keepName(ctx, id);
  },
});
