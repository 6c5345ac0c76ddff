// A ServiceHA's state: the checked inputs as recorded and the counts and status the API last
// reported. State from the engine is read once, here.
import type { Service } from "../../api/schemas";
import { toPlainJson } from "../../rules/outputs";
import { z } from "zod";
import { COMMON_STATE, recorded } from "../../rules/state";
import { liveCounts } from "./inputs";

/** Any other property is kept as it came. */
export const ServiceHAStateSchema = z.looseObject({
  ...COMMON_STATE,
  serviceId: recorded(z.string()),
  /** The live counts after the last change or refresh (declared or not). */
  replicaCount: recorded(z.number()),
  syncReplicaCount: recorded(z.number()),
  waitForReady: recorded(z.boolean()),
  updateTimeout: recorded(z.string()),
  deleteTimeout: recorded(z.string()),
  status: recorded(z.string()),
});
export type ServiceHAState = z.output<typeof ServiceHAStateSchema>;

/** State = the checked inputs + the service's live counts and status. */
export function haStateFromService(recorded: ServiceHAState, s: Service): ServiceHAState {
  return toPlainJson({ ...recorded, ...liveCounts(s), status: s.status });
}
