// A ServiceHA's state: the checked inputs as recorded and the counts and status the API last
// reported. State from the engine is read once, here.
import type { Service } from "../../api/schemas";
import { toPlainJson } from "../../rules/outputs";
import { type FieldTypes, typedState } from "../../rules/state";
import { liveCounts } from "./inputs";

export interface ServiceHAState {
  projectId?: string | undefined;
  serviceId?: string | undefined;
  /** The live counts after the last change or refresh (declared or not). */
  replicaCount?: number | undefined;
  syncReplicaCount?: number | undefined;
  waitForReady?: boolean | undefined;
  updateTimeout?: string | undefined;
  deleteTimeout?: string | undefined;
  status?: string | undefined;
  /** The declarant (__resourceName, __resourceUrn), kept as it came. */
  [key: string]: unknown;
}

const FIELD_TYPES: FieldTypes = {
  projectId: "string",
  serviceId: "string",
  replicaCount: "number",
  syncReplicaCount: "number",
  waitForReady: "boolean",
  updateTimeout: "string",
  deleteTimeout: "string",
  status: "string",
};

export const haStateFrom = (props: Record<string, unknown>): ServiceHAState => typedState<ServiceHAState>(props, FIELD_TYPES);

/** State = the checked inputs + the service's live counts and status. */
export function haStateFromService(recorded: ServiceHAState, s: Service): ServiceHAState {
  return toPlainJson({ ...recorded, ...liveCounts(s), status: s.status });
}
