// Production's settings, declared in code and changed by pull request: the HA replicas of the
// production service and the name of its VPC. The workflows beside it preview each pull request
// (the plan as one comment on it), apply on merge to main, and check every night that nobody
// changed either elsewhere (the console, the tiger CLI).
import * as pulumi from "@pulumi/pulumi";
import { ServiceHA, VpcName } from "pulumi-tigercloud";

export = async () => {
  const config = new pulumi.Config();

  const ha = new ServiceHA(
    "production-ha",
    {
      serviceId: config.require("serviceId"),
      // Two replicas, one of them synchronous: a failover loses no committed transaction.
      replicaCount: 2,
      syncReplicaCount: 1,
    },
    // A ServiceHA's destroy resets HA to zero replicas: a pull request that removed this block (or
    // a destroy of the stack) would do that to production on merge. Retained, the resource leaves
    // the stack and HA is left as it is. To lower it on purpose, declare the counts you want here.
    { retainOnDelete: true },
  );

  // No retainOnDelete needed: a VpcName's destroy makes no API call (a VPC cannot be unnamed), so
  // removing it already leaves the VPC's name as it is.
  const vpc = new VpcName("production-vpc", { vpcId: config.require("vpcId"), name: "production" });

  return { replicaCount: ha.replicaCount, syncReplicaCount: ha.syncReplicaCount, vpcName: vpc.name };
};
