// A VpcName's state: the checked inputs as recorded and the VPC as GET last answered. State from
// the engine is read once, here.
import type { Vpc } from "../../api/schemas";
import { toPlainJson } from "../../rules/outputs";
import { type FieldTypes, typedState } from "../../rules/state";

export interface VpcNameState {
  projectId?: string | undefined;
  vpcId?: string | undefined;
  /** The name GET answered (after a rename, or as a refresh found it). */
  name?: string | undefined;
  cidr?: string | undefined;
  regionCode?: string | undefined;
  /** The declarant (__resourceName, __resourceUrn), kept as it came. */
  [key: string]: unknown;
}

const FIELD_TYPES: FieldTypes = { projectId: "string", vpcId: "string", name: "string", cidr: "string", regionCode: "string" };

export const vpcStateFrom = (props: Record<string, unknown>): VpcNameState => typedState<VpcNameState>(props, FIELD_TYPES);

/** State = the checked inputs + the VPC as GET answered. */
export function vpcStateFromApi(recorded: VpcNameState, vpc: Vpc): VpcNameState {
  return toPlainJson({ ...recorded, name: vpc.name, cidr: vpc.cidr, regionCode: vpc.region_code });
}
