// A ServiceHA's state, which is also its outputs: the checked inputs as recorded and the counts
// and status the API last reported. What the engine hands back is read by this schema once.
import { z } from "zod";
import type { Service } from "../../api/schemas";
import { type Partly, reported, toPlainJson } from "../../rules/state";
import { WAIT_DEFAULTS } from "../../policies/waiting";
import { liveCounts } from "./inputs";

export const ServiceHAStateSchema = z.object({
  projectId: z.string().describe("The project of the service."),
  serviceId: z.string().describe("The service whose HA is set."),
  // The live counts, declared or not: refresh shows a change made outside Pulumi.
  replicaCount: reported(z.number().int()).describe("HA replicas, as the service has them (a change made elsewhere shows on refresh)."),
  syncReplicaCount: reported(z.number().int()).describe("Synchronous HA replicas, as the service has them."),
  status: reported(z.string()).describe("The service's status as last seen."),
  // The settings, recorded after their defaults: a state of a version that did not record one has its default.
  waitForReady: z.boolean().default(true).catch(true).describe("Whether create, update and destroy wait for the counts."),
  updateTimeout: z
    .string()
    .default(WAIT_DEFAULTS.updateTimeout)
    .catch(WAIT_DEFAULTS.updateTimeout)
    .describe("How long create and update wait."),
  deleteTimeout: z.string().default(WAIT_DEFAULTS.deleteTimeout).catch(WAIT_DEFAULTS.deleteTimeout).describe("How long destroy waits."),
});
export type ServiceHAState = z.output<typeof ServiceHAStateSchema>;

/** What a state is built on: the inputs as recorded, and anything recorded before. */
export type RecordedHA = Partly<ServiceHAState> & Pick<ServiceHAState, "projectId" | "serviceId">;

/** State = the checked inputs + the service's live counts and status. */
export function haStateFromService(recorded: RecordedHA, s: Service): ServiceHAState {
  // A setting a version before did not record is the default it used.
  const settings = {
    waitForReady: recorded.waitForReady ?? true,
    updateTimeout: recorded.updateTimeout ?? WAIT_DEFAULTS.updateTimeout,
    deleteTimeout: recorded.deleteTimeout ?? WAIT_DEFAULTS.deleteTimeout,
  };
  return toPlainJson({ ...recorded, ...settings, ...liveCounts(s), status: s.status });
}
