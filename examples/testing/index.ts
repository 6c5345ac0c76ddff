// The program under test: a staging copy of production (a fork), one HA replica on it, and the VPC
// named. No projectId anywhere: the provider asks the API which project the key belongs to.
// Its test, examples/testing/test/infra.test.js, runs it against a local Tiger Cloud (npm test).
import * as pulumi from "@pulumi/pulumi";
import { ServiceFork, ServiceHA, VpcName } from "pulumi-tigercloud";

const config = new pulumi.Config();

const staging = new ServiceFork("staging", {
  sourceServiceId: config.require("sourceServiceId"),
  forkStrategy: "NOW",
  name: "staging",
});
new ServiceHA("staging-ha", { serviceId: staging.serviceId, replicaCount: 1 });
new VpcName("vpc", { vpcId: config.require("vpcId"), name: "staging-vpc" });

export const serviceId = staging.serviceId;
export const databaseUrl = staging.connectionUri;
