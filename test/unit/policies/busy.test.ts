// The busy rule at its edges: a 409 from a service that reads as settled is sent again once (it
// may have raced with the end of an operation), and a second one is a refusal, not a wait.
import { providers } from "../../../provider/hosts/dynamic/runtime";
import { ConflictError } from "../../../provider/errors";
import { rejectionOf, startProviderSim, stopProviderSim, P, type Ids } from "../../support/helpers";
import type { Simulator } from "../../../simulator";

const ha = providers.ServiceHA;

let sim: Simulator;
let ids: Ids;
beforeEach(async () => {
  ({ sim, ids } = await startProviderSim());
});
afterEach(() => stopProviderSim(sim));

const conflict = {
  kind: "status" as const,
  status: 409,
  body: JSON.stringify({ code: "CONFLICT", message: "not about being busy" }),
  contentType: "application/json",
};

test("a 409 from a READY service is sent again once; a second 409 is the refusal", async () => {
  const { inputs } = await ha.check({}, { __provider: P, serviceId: ids.serviceId, replicaCount: 1 });
  sim.injectFault("setHA", conflict, 2);
  const err = await rejectionOf(ha.create(inputs));
  expect(err).toBeInstanceOf(ConflictError);
  expect(sim.requests("setHA")).toHaveLength(2);
});

test("one 409 from a READY service (a race with the end of an operation): sent again, and done", async () => {
  const { inputs } = await ha.check({}, { __provider: P, serviceId: ids.serviceId, replicaCount: 1 });
  sim.injectFault("setHA", conflict, 1);
  await ha.create(inputs);
  expect(sim.requests("setHA")).toHaveLength(2);
  expect(sim.service(ids.projectId, ids.serviceId)?.ha_replicas.replica_count).toBe(1);
});
