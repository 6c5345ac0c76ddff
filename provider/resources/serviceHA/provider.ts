// The ServiceHA provider: its parts wired into the engine's methods (resources/defineProvider.ts);
// the API work is in lifecycle.ts.
import { defineResource, dynamicProvider } from "../defineProvider";
import { recordHAClaims } from "./claims";
import { HA_DIFF_RULES, HAInputsSchema, liveCounts, undeclaredCountProblem } from "./inputs";
import { applyHA, importHA, readHA, removeHA } from "./lifecycle";
import { ServiceHAStateSchema } from "./state";

/** @internal */
export const serviceHA = defineResource({
  kind: "ServiceHA",
  schema: HAInputsSchema,
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
    const { replicaCount, syncReplicaCount, serviceId } = olds;
    if (replaces.length > 0 || replicaCount === undefined || syncReplicaCount === undefined) return undefined;
    const problem = undeclaredCountProblem(news, { replicaCount, syncReplicaCount });
    return problem && `ServiceHA of service ${String(serviceId)}: ${problem}`;
  },

  async create(ctx, inputs, news) {
    return { id: inputs.serviceId, outs: await applyHA(ctx, inputs.serviceId, inputs, news) };
  },

  read: readHA,
  importFrom: importHA,

  update: (ctx, id, _olds, inputs, news) => applyHA(ctx, id, inputs, news),

  delete: removeHA,
});

/** @internal */
export const serviceHAProvider = dynamicProvider(serviceHA);
