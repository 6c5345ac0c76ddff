// ServiceHA: the high-availability replica counts of a service (setHA), changed in place.
// Destroying it takes the replicas off (0) and never stops the service: the program does not own
// it. Its parts, wired into the lifecycle every host runs (resources/define.ts).
import { defineResource } from "../define";
import { recordHAClaims } from "./claims";
import { HA_DIFF_RULES, HAInputsSchema, liveCounts, undeclaredCountProblem } from "./inputs";
import { importHA, readHA } from "./read";
import { applyHA, removeHA } from "./setHA";
import { ServiceHAStateSchema } from "./state";

/** @internal */
export const serviceHA = defineResource({
  // What a program declares and gets back: one source for the SDKs, the schema and the docs.
  kind: "ServiceHA",
  description:
    "The high-availability replica counts of a service (setHA), changed in place. Destroying it takes the replicas off (0 replicas) " +
    "and never stops the service: the program does not own the service. Keep the resource's retain-on-delete option set to keep the " +
    "replicas when the resource goes.",
  inputs: HAInputsSchema,
  state: ServiceHAStateSchema,

  rules: HA_DIFF_RULES,
  recordClaims: recordHAClaims,

  references: (inputs) => [
    {
      type: "service",
      property: "serviceId",
      projectId: inputs.projectId,
      id: inputs.serviceId,
      judge: (service) => {
        const problem = undeclaredCountProblem(inputs, liveCounts(service));
        return problem ? { failure: `names service ${service.service_id ?? inputs.serviceId}, whose ${problem}` } : {};
      },
    },
  ],

  // The counts in state are the live ones: a change that leaves one count undeclared keeps it.
  refusalOfChange(olds, news, replaces) {
    const { replicaCount, syncReplicaCount } = olds;
    if (replaces.length > 0 || replicaCount === undefined || syncReplicaCount === undefined) return undefined;
    const problem = undeclaredCountProblem(news, { replicaCount, syncReplicaCount });
    return problem && `ServiceHA of service ${olds.serviceId}: ${problem}`;
  },

  async create(ctx, inputs) {
    return { id: inputs.serviceId, state: await applyHA(ctx, inputs.serviceId, inputs) };
  },
  read: readHA,
  importFrom: importHA,
  update: (ctx, id, _olds, inputs) => applyHA(ctx, id, inputs),
  delete: removeHA,
});
