// A VpcName's state: the checked inputs as recorded and the VPC as GET last answered. State from
// the engine is read once, here.
import type { Vpc } from "../../api/schemas";
import { toPlainJson } from "../../rules/outputs";
import { z } from "zod";
import { stateSchema } from "../../rules/state";

/** `name` is the one GET answered (after a rename, or as a refresh found it). */
export const VpcNameStateSchema = stateSchema({ vpcId: z.string(), name: z.string(), cidr: z.string(), regionCode: z.string() });
export type VpcNameState = z.output<typeof VpcNameStateSchema>;

/** State = the checked inputs + the VPC as GET answered. */
export function vpcStateFromApi(recorded: VpcNameState, vpc: Vpc): VpcNameState {
  return toPlainJson({ ...recorded, name: vpc.name, cidr: vpc.cidr, regionCode: vpc.region_code });
}
