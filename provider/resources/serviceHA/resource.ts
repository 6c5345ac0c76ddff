// ServiceHA: the high-availability replica counts of a service (setHA), changed in place.
// Destroying it takes the replicas off (0) and never stops the service: the program does not own
// it. Its parts, wired into the lifecycle every host runs (resources/define.ts).
import { InvalidInputError } from "../../errors";
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

  // One declaration of a service's HA per run; at preview, the service read (a count left undeclared must be one it has).
  async check(ctx, inputs, { creates, verify }) {
    const failures = recordHAClaims(ctx, inputs);
    if (failures.length > 0 || !creates) return failures;
    return verify([
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
    ]);
  },
  // The counts in state are the live ones: a change that leaves one count undeclared keeps it, and is refused.
  async diff(_ctx, _id, olds, news, { changes, replaces, imported }) {
    const asImported = await imported(replaces);
    if (asImported) return asImported;
    const { replicaCount, syncReplicaCount } = olds;
    if (replaces.length === 0 && replicaCount !== undefined && syncReplicaCount !== undefined) {
      const problem = undeclaredCountProblem(news, { replicaCount, syncReplicaCount });
      if (problem)
        throw new InvalidInputError("ServiceHA", [{ property: "(change)", reason: `ServiceHA of service ${olds.serviceId}: ${problem}` }]);
    }
    return { changes, replaces, deleteBeforeReplace: false };
  },
  async create(ctx, inputs) {
    return { id: inputs.serviceId, state: await applyHA(ctx, inputs.serviceId, inputs) };
  },
  read: readHA,
  import: importHA,
  update: (ctx, id, olds, inputs, through) => (through === "api" ? applyHA(ctx, id, inputs) : Promise.resolve(olds)),
  delete: removeHA,
});
