// Production's settings, declared in code and changed by pull request: the HA replicas of the
// production service and the name of its VPC. The workflows beside it preview each pull request
// (the plan as one comment on it), apply on merge to main, and check every night that nobody
// changed either elsewhere (the console, the tiger CLI).
import * as pulumi from "@pulumi/pulumi";
import { ServiceHA, VpcName } from "pulumi-tigercloud";

export = async () => {
  const config = new pulumi.Config();

  const ha = new ServiceHA("production-ha", {
    serviceId: config.require("serviceId"),
    // Two replicas, one of them synchronous: a failover loses no committed transaction.
    replicaCount: 2,
    syncReplicaCount: 1,
  });

  const vpc = new VpcName("production-vpc", { vpcId: config.require("vpcId"), name: "production" });

  return { replicaCount: ha.replicaCount, syncReplicaCount: ha.syncReplicaCount, vpcName: vpc.name };
};
