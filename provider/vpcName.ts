// VpcName: the name of an existing VPC (rename), read back with GET so that refresh sees a rename
// made elsewhere. Destroying it makes no API call: a VPC cannot be unnamed, so it keeps the last
// name Pulumi gave it.
import * as pulumi from "@pulumi/pulumi";
import { z } from "zod";
import type { Vpc } from "./api-schemas";
import { NotFoundError } from "./errors";
import { type DiffRules, clientNow, idSchema, plain, progress, serializedProvider, standardMethods, withoutProvider } from "./resource-kit";

export interface VpcNameArgs {
  /** Default: tigercloud:projectId or TIGER_PROJECT_ID. */
  projectId?: pulumi.Input<string>;
  /** The VPC's ID: digits. */
  vpcId: pulumi.Input<string>;
  /** The name to give it: not empty. */
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

export const VpcInputsSchema = z.strictObject({
  projectId: idSchema,
  vpcId: z.string({ error: "must be a string of digits" }).regex(/^[0-9]+$/, "must be a string of digits"),
  name: z.string({ error: "must be a string" }).min(1, "must not be empty"),
});

const RULES: DiffRules = { replaceKeys: ["projectId", "vpcId"], updateKeys: ["name"] };

function vpcOutputs(inputs: Record<string, unknown>, vpc: Vpc): Record<string, unknown> {
  return plain({ ...inputs, name: vpc.name, cidr: vpc.cidr, regionCode: vpc.region_code });
}

/** rename, then GET: today's rename answers only a message, and GET is the truth either way. */
async function rename(news: Record<string, unknown>): Promise<Record<string, unknown>> {
  const inputs = VpcInputsSchema.parse(withoutProvider(news));
  const client = clientNow();
  progress(`renaming VPC ${inputs.vpcId} to "${inputs.name}"`);
  await client.renameVpc(inputs.projectId, inputs.vpcId, inputs.name);
  return vpcOutputs(inputs, await client.getVpc(inputs.projectId, inputs.vpcId));
}

export const vpcNameProvider: Required<pulumi.dynamic.ResourceProvider> = {
  ...standardMethods(VpcInputsSchema, RULES),

  async create(news) {
    const outs = await rename(news);
    return { id: String(outs.vpcId), outs };
  },

  async read(id, props) {
    try {
      return { id, props: vpcOutputs(withoutProvider(props), await clientNow().getVpc(String(props.projectId), id)) };
    } catch (err) {
      if (err instanceof NotFoundError) return {};
      throw err;
    }
  },

  async update(_id, _olds, news) {
    return { outs: await rename(news) };
  },

  async delete(id) {
    progress(`VPC ${id} keeps its name: a VPC cannot be unnamed, so destroy makes no API call`);
  },
};
