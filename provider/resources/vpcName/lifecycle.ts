// VpcName's work on the API: rename, then GET; reading the name back. Destroy makes no API call
// (a VPC cannot be unnamed).
import type { CallContext } from "../../engine/host";
import { requiredField } from "../../rules/state";
import { vpcUnlessGone } from "../../workflows/gone";
import type { Refreshed } from "../defineProvider";
import type { VpcInputs } from "./inputs";
import { type VpcNameState, vpcStateFromApi } from "./state";

/** rename, then GET: today's rename answers only a message, and GET is the truth either way. */
export async function rename(ctx: CallContext, inputs: VpcInputs): Promise<VpcNameState> {
  const client = ctx.client();
  ctx.progress(`renaming VPC ${inputs.vpcId} to "${inputs.name}"`);
  await client.renameVpc(inputs.projectId, inputs.vpcId, inputs.name);
  return vpcStateFromApi(inputs, await client.getVpc(inputs.projectId, inputs.vpcId));
}

/** The VPC's name as it is now (drift shows on refresh); nothing when the VPC is gone. */
export async function readName(ctx: CallContext, id: string, recorded: VpcNameState): Promise<Refreshed<VpcNameState>> {
  const vpc = await vpcUnlessGone(ctx.client(), requiredField("VpcName", id, recorded, "projectId"), id);
  if (!vpc) return {};
  return { id, props: vpcStateFromApi(recorded, vpc) };
}

export function keepName(ctx: CallContext, id: string): void {
  ctx.progress(`VPC ${id} keeps its name: a VPC cannot be unnamed, so destroy makes no API call`);
}
