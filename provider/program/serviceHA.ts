// ServiceHA, as a user's program declares it: the high-availability replica counts of a service
// (setHA), changed in place. Destroying it restores no HA (0 replicas) and NEVER stops the service:
// the program does not own the service. Use `retainOnDelete: true` to keep the replicas when the
// resource goes. The provider is resources/serviceHA/.
import * as pulumi from "@pulumi/pulumi";
import { serializedProvider } from "./serializedProvider";
import { expectedUrn, secretInputNames } from "./urn";

export interface ServiceHAArgs {
  /** Default: tigercloud:projectId or TIGER_PROJECT_ID. */
  projectId?: pulumi.Input<string>;
  /** The service whose HA is set; a fork's `serviceId` works (the change waits for the fork). */
  serviceId: pulumi.Input<string>;
  /** HA replicas (all asynchronous unless syncReplicaCount says otherwise). At least one count. */
  replicaCount?: pulumi.Input<number>;
  /** Synchronous HA replicas; not more than replicaCount. */
  syncReplicaCount?: pulumi.Input<number>;
  /** Wait until the service is READY with the counts, after create, update and destroy. Default true. */
  waitForReady?: pulumi.Input<boolean>;
  /** How long create and update wait (for the service to be READY, then for the counts), e.g. "30m" (default); at most "24h". */
  updateTimeout?: pulumi.Input<string>;
  /** How long destroy waits for HA to be removed, e.g. "10m" (default); at most "24h". */
  deleteTimeout?: pulumi.Input<string>;
}

export class ServiceHA extends pulumi.dynamic.Resource {
  declare readonly projectId: pulumi.Output<string>;
  declare readonly serviceId: pulumi.Output<string>;
  /** The live count: refresh shows a change made outside Pulumi. */
  declare readonly replicaCount: pulumi.Output<number>;
  declare readonly syncReplicaCount: pulumi.Output<number>;
  declare readonly status: pulumi.Output<string | undefined>;

  constructor(name: string, args: ServiceHAArgs, opts?: pulumi.CustomResourceOptions) {
    super(
      serializedProvider("ServiceHA"),
      name,
      {
        status: undefined,
        replicaCount: undefined,
        syncReplicaCount: undefined,
        ...args,
        __resourceName: name,
        __resourceUrn: expectedUrn(name, "pulumi-nodejs:dynamic/tigercloud:ServiceHA", opts),
        __secretInputs: secretInputNames(args),
      },
      opts,
      "tigercloud",
      "ServiceHA",
    );
  }
}
