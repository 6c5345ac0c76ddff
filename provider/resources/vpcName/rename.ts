// VpcName's work on the API: rename, then GET; reading the name back; an import. Destroy makes no
// API call (a VPC cannot be unnamed).
import type { CallContext } from "../../context/context";
import { vpcUnlessGone } from "../../policies/gone";
import { TigerCloudError } from "../../errors";
import type { Imported, Refreshed } from "../define";
import { type VpcDeclaration, type VpcInputs, VpcInputsSchema } from "./inputs";
import { type VpcNameState, vpcStateFromApi } from "./state";

/** rename, then GET: today's rename answers only a message, and GET is the truth either way. */
export async function rename(ctx: CallContext, inputs: VpcInputs): Promise<VpcNameState> {
  const client = ctx.client();
  ctx.progress(`renaming VPC ${inputs.vpcId} to "${inputs.name}"`);
  await client.renameVpc(inputs.projectId, inputs.vpcId, inputs.name);
  return vpcStateFromApi(inputs, await client.getVpc(inputs.projectId, inputs.vpcId));
}

/** The VPC's name as it is now (drift shows on refresh); nothing when the VPC is gone. */
export async function readName(ctx: CallContext, id: string, recorded: VpcNameState): Promise<Refreshed<VpcNameState> | undefined> {
  const vpc = await vpcUnlessGone(ctx.client(), recorded.projectId, id);
  if (!vpc) return undefined;
  return { id, state: vpcStateFromApi(recorded, vpc) };
}

export function keepName(ctx: CallContext, id: string): void {
  ctx.progress(`VPC ${id} keeps its name: a VPC cannot be unnamed, so destroy makes no API call`);
}

/** A VPC's name taken under management by the VPC's ID (pulumi import, the import option): the name it has now. */
export async function importName(ctx: CallContext, id: string, projectId: string): Promise<Imported<VpcDeclaration, VpcNameState>> {
  const vpc = await vpcUnlessGone(ctx.client(), projectId, id);
  if (!vpc) throw new TigerCloudError(`VpcName ${id}: project ${projectId} has no such VPC to import`);
  if (vpc.name === undefined)
    throw new TigerCloudError(`VpcName ${id}: the VPC has no name to import; declare the VpcName with the name it should have`);
  const declared = { projectId, vpcId: id, name: vpc.name };
  return { state: vpcStateFromApi(VpcInputsSchema.parse(declared), vpc), inputs: declared };
}
