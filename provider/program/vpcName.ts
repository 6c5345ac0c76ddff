// VpcName, as a user's program declares it: the name of an existing VPC (rename), read back with
// GET so that refresh sees a rename made elsewhere. Destroying it makes no API call: a VPC cannot
// be unnamed, so it keeps the last name Pulumi gave it. The provider is resources/vpcName/.
import * as pulumi from "@pulumi/pulumi";
import { serializedProvider } from "./serializedProvider";
import { secretInputNames } from "./urn";

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
    const inputs = { cidr: undefined, regionCode: undefined, ...args, __secretInputs: secretInputNames(args) };
    super(serializedProvider("VpcName"), name, inputs, opts, "tigercloud", "VpcName");
  }
}
