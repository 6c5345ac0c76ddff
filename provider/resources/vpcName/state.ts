// A VpcName's state: the checked inputs as recorded and the VPC as GET last answered. State from
// the engine is read once, here.
import type { Vpc } from "../../api/schemas";
import { toPlainJson } from "../../rules/outputs";
import { z } from "zod";
import { COMMON_STATE, recorded } from "../../rules/state";

/** Any other property is kept as it came. */
export const VpcNameStateSchema = z.looseObject({
  ...COMMON_STATE,
  vpcId: recorded(z.string()),
  /** The name GET answered (after a rename, or as a refresh found it). */
  name: recorded(z.string()),
  cidr: recorded(z.string()),
  regionCode: recorded(z.string()),
});
export type VpcNameState = z.output<typeof VpcNameStateSchema>;

/** State = the checked inputs + the VPC as GET answered. */
export function vpcStateFromApi(recorded: VpcNameState, vpc: Vpc): VpcNameState {
  return toPlainJson({ ...recorded, name: vpc.name, cidr: vpc.cidr, regionCode: vpc.region_code });
}
