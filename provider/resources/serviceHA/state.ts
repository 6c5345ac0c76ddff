// A ServiceHA's state: the checked inputs as recorded and the counts and status the API last
// reported. State from the engine is read once, here.
import type { Service } from "../../api/schemas";
import { toPlainJson } from "../../rules/outputs";
import { z } from "zod";
import { stateSchema } from "../../rules/state";
import { liveCounts } from "./inputs";

/** The inputs state keeps. */
const KEPT = { serviceId: z.string(), waitForReady: z.boolean(), updateTimeout: z.string(), deleteTimeout: z.string() };
/** What the API reported after the last change or refresh: the live counts (declared or not), the status. */
const REPORTED = { replicaCount: z.number(), syncReplicaCount: z.number(), status: z.string() };
export const ServiceHAStateSchema = stateSchema({ ...KEPT, ...REPORTED });
export type ServiceHAState = z.output<typeof ServiceHAStateSchema>;

/** State = the checked inputs + the service's live counts and status. */
export function haStateFromService(recorded: ServiceHAState, s: Service): ServiceHAState {
  return toPlainJson({ ...recorded, ...liveCounts(s), status: s.status });
}
