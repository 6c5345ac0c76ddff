// The VpcName provider: rename, then GET. Destroy makes no API call (a VPC cannot be unnamed).
import { z } from "zod";
import { requiredField } from "../../rules/state";
import { clientFromSettings, progress } from "../../engine/host";
import type { DiffRules } from "../../rules/diff";
import { idSchema, nameSchema, textSchema } from "../../rules/inputSchemas";
import { vpcUnlessGone } from "../../workflows/gone";
import { defineProvider } from "../defineProvider";
import { type VpcNameState, vpcStateFrom, vpcStateFromApi } from "./state";

/** The API publishes no limit on a VPC's name; 128 matches a service's name. */
export const VPC_NAME_MAX = 128;

/** @internal */
export const VpcInputsSchema = z.strictObject({
  projectId: idSchema,
  vpcId: textSchema(
    (s) => (!/^[0-9]+$/.test(s) ? "must be a string of digits" : s.length > 64 ? "must be at most 64 digits" : undefined),
    "must be a string of digits",
  ),
  name: nameSchema(VPC_NAME_MAX),
});
type VpcInputs = z.output<typeof VpcInputsSchema>;

const VPC_DIFF_RULES: DiffRules = { replaceKeys: ["projectId", "vpcId"], updateKeys: ["name"] };

/** rename, then GET: today's rename answers only a message, and GET is the truth either way. */
async function rename(inputs: VpcInputs): Promise<VpcNameState> {
  const client = clientFromSettings();
  progress(`renaming VPC ${inputs.vpcId} to "${inputs.name}"`);
  await client.renameVpc(inputs.projectId, inputs.vpcId, inputs.name);
  return vpcStateFromApi(inputs, await client.getVpc(inputs.projectId, inputs.vpcId));
}

/** @internal */
export const vpcNameProvider = defineProvider({
  kind: "VpcName",
  schema: VpcInputsSchema,
  rules: VPC_DIFF_RULES,

  references: (inputs) => [{ type: "vpc", property: "vpcId", projectId: inputs.projectId, id: inputs.vpcId }],

  async create(inputs) {
    return { id: inputs.vpcId, outs: await rename(inputs) };
  },

  async read(id, props) {
    const recorded = vpcStateFrom(props);
    const vpc = await vpcUnlessGone(clientFromSettings(), requiredField("VpcName", id, recorded, "projectId"), id);
    if (!vpc) return {};
    return { id, props: vpcStateFromApi(recorded, vpc) };
  },

  async update(_id, _olds, inputs) {
    return { outs: await rename(inputs) };
  },

  async delete(id) {
    progress(`VPC ${id} keeps its name: a VPC cannot be unnamed, so destroy makes no API call`);
  },
});
