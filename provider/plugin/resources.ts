// What the plugin serves: each resource's lifecycle (the dynamic provider's own), the outputs its
// schema marks secret (sent as secrets, whatever the program's language), and the input that each
// operation's `customTimeouts` value stands in for.
import { serviceFork } from "../resources/serviceFork/provider";
import { serviceHA } from "../resources/serviceHA/provider";
import { vpcName } from "../resources/vpcName/provider";
import type { ServedResource } from "./server";
import schema from "./schema.json";

const secretOutputsOf = (kind: string): string[] => {
  const resource = (schema.resources as Record<string, { properties: Record<string, { secret?: boolean }> }>)[`tigercloud:index:${kind}`];
  return Object.entries(resource?.properties ?? {})
    .filter(([, p]) => p.secret === true)
    .map(([name]) => name);
};

export function servedResources(): Record<string, ServedResource> {
  return {
    ServiceFork: {
      lifecycle: serviceFork,
      secretOutputs: secretOutputsOf("ServiceFork"),
      timeoutInputs: { create: "createTimeout", update: "updateTimeout", delete: "deleteTimeout" },
    },
    ServiceHA: {
      lifecycle: serviceHA,
      secretOutputs: secretOutputsOf("ServiceHA"),
      timeoutInputs: { create: "updateTimeout", update: "updateTimeout", delete: "deleteTimeout" },
    },
    // A rename is one request and a read: the client's own limits bound it.
    VpcName: { lifecycle: vpcName, secretOutputs: secretOutputsOf("VpcName"), timeoutInputs: {} },
  };
}
