// The VpcName provider: its parts wired into the engine's methods (resources/defineProvider.ts).
import { defineResource, dynamicProvider } from "../defineProvider";
import { VPC_DIFF_RULES, VpcInputsSchema } from "./inputs";
import { importName, keepName, readName, rename } from "./lifecycle";
import { VpcNameStateSchema } from "./state";

/** @internal */
export const vpcName = defineResource({
  kind: "VpcName",
  schema: VpcInputsSchema,
  state: VpcNameStateSchema,
  rules: VPC_DIFF_RULES,

  references: (inputs) => [{ type: "vpc", property: "vpcId", projectId: inputs.projectId, id: inputs.vpcId }],

  async create(ctx, inputs) {
    return { id: inputs.vpcId, outs: await rename(ctx, inputs) };
  },
  read: readName,
  importFrom: importName,
  update: (ctx, _id, _olds, inputs) => rename(ctx, inputs),
  async delete(ctx, id) {
    keepName(ctx, id);
  },
});

/** @internal */
export const vpcNameProvider = dynamicProvider(vpcName);
