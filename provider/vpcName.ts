// VpcName: the name of an existing VPC (rename), read back with GET so that refresh sees a rename
// made elsewhere. Destroying it makes no API call: a VPC cannot be unnamed, so it keeps the last
// name Pulumi gave it.
import * as pulumi from "@pulumi/pulumi";
import { z } from "zod";
import type { Vpc } from "./api/schemas";
import { defineProvider } from "./resources/defineProvider";
import { vpcUnlessGone } from "./workflows/gone";
import { clientNow, progress } from "./engine/host";
import { type DiffRules, idSchema, nameSchema, textSchema } from "./rules/inputs";
import { plain } from "./rules/outputs";
import { serializedProvider } from "./program/serializedProvider";

export interface VpcNameArgs {
  /** Default: tigercloud:projectId or TIGER_PROJECT_ID. */
  projectId?: pulumi.Input<string>;
  /** The VPC's ID: digits. */
  vpcId: pulumi.Input<string>;
  /** The name to give it: 1 to 128 characters, not blank, no control or invisible characters. */
  name: pulumi.Input<string>;
}

export class VpcName extends pulumi.dynamic.Resource {
  declare readonly projectId: pulumi.Output<string>;
  declare readonly vpcId: pulumi.Output<string>;
  /** The VPC's live name: refresh shows a rename made outside Pulumi. */
  declare readonly name: pulumi.Output<string>;
  declare readonly cidr: pulumi.Output<string | undefined>;
  declare readonly regionCode: pulumi.Output<string | undefined>;

  constructor(name: string, args: VpcNameArgs, opts?: pulumi.CustomResourceOptions) {
    super(serializedProvider("VpcName"), name, { cidr: undefined, regionCode: undefined, ...args }, opts, "tigercloud", "VpcName");
  }
}

// ---- provider implementation (runs in the provider process) -----------------------------

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

const RULES: DiffRules = { replaceKeys: ["projectId", "vpcId"], updateKeys: ["name"] };

function vpcOutputs(inputs: Record<string, unknown>, vpc: Vpc): Record<string, unknown> {
  return plain({ ...inputs, name: vpc.name, cidr: vpc.cidr, regionCode: vpc.region_code });
}

/** rename, then GET: today's rename answers only a message, and GET is the truth either way. */
async function rename(inputs: VpcInputs): Promise<Record<string, unknown>> {
  const client = clientNow();
  progress(`renaming VPC ${inputs.vpcId} to "${inputs.name}"`);
  await client.renameVpc(inputs.projectId, inputs.vpcId, inputs.name);
  return vpcOutputs(inputs, await client.getVpc(inputs.projectId, inputs.vpcId));
}

/** @internal */
export const vpcNameProvider = defineProvider({
  kind: "VpcName",
  schema: VpcInputsSchema,
  rules: RULES,

  references: (inputs) => [{ type: "vpc", property: "vpcId", projectId: inputs.projectId, id: inputs.vpcId }],

  async create(inputs) {
    return { id: inputs.vpcId, outs: await rename(inputs) };
  },

  async read(id, props) {
    const vpc = await vpcUnlessGone(clientNow(), String(props.projectId), id);
    if (!vpc) return {};
    const { __provider: _provider, ...state } = props;
    return { id, props: vpcOutputs(state, vpc) };
  },

  async update(_id, _olds, inputs) {
    return { outs: await rename(inputs) };
  },

  async delete(id) {
    progress(`VPC ${id} keeps its name: a VPC cannot be unnamed, so destroy makes no API call`);
  },
});
