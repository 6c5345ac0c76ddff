// A VpcName's state, which is also its outputs: the checked inputs as recorded and the VPC as GET
// last answered. What the engine hands back is read by this schema once.
import { z } from "zod";
import type { Vpc } from "../../api/schemas";
import { reported, toPlainJson } from "../../rules/state";

export const VpcNameStateSchema = z.object({
  projectId: z.string().describe("The project of the VPC."),
  vpcId: z.string().describe("The VPC's ID."),
  // The one GET answered (after a rename, or as a refresh found it).
  name: z.string().describe("The VPC's live name: refresh shows a rename made outside Pulumi."),
  cidr: reported(z.string()).describe("The VPC's CIDR block."),
  regionCode: reported(z.string()).describe("The region the VPC is in."),
});
export type VpcNameState = z.output<typeof VpcNameStateSchema>;

/** State = the checked inputs + the VPC as GET answered. */
export function vpcStateFromApi(recorded: Pick<VpcNameState, "projectId" | "vpcId" | "name">, vpc: Vpc): VpcNameState {
  return toPlainJson({ ...recorded, name: vpc.name ?? recorded.name, cidr: vpc.cidr, regionCode: vpc.region_code });
}
