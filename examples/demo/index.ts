// The demo program (the root Pulumi.yaml runs it): fork a service, wait until it takes a login,
// give the fork HA, name a VPC, and export how to reach the fork. Credentials and the project come from stack config
// (tigercloud:publicKey and tigercloud:secretKey, or tigercloud:apiKey; tigercloud:projectId) or the environment
// (TIGER_PUBLIC_KEY and TIGER_SECRET_KEY, or TIGER_API_KEY; TIGER_PROJECT_ID).
import * as pulumi from "@pulumi/pulumi";
import { ServiceFork, ServiceHA, VpcName } from "pulumi-tigercloud";

export = async () => {
  const config = new pulumi.Config();

  const fork = new ServiceFork("demo-fork", {
    sourceServiceId: config.require("sourceServiceId"),
    forkStrategy: "LAST_SNAPSHOT",
    name: config.get("forkName") ?? "demo-fork",
    environmentTag: "DEV",
  });

  // Runs once the fork is READY: ServiceHA depends on the fork's serviceId.
  const ha = new ServiceHA("demo-fork-ha", {
    serviceId: fork.serviceId,
    replicaCount: config.getNumber("replicaCount") ?? 1,
  });

  const vpc = new VpcName("demo-vpc", {
    vpcId: config.require("vpcId"),
    name: config.get("vpcName") ?? "analytics-vpc",
  });

  return {
    forkServiceId: fork.serviceId,
    forkEndpoint: pulumi.interpolate`${fork.host}:${fork.port}`,
    // Secret without asking: Pulumi shows it as [secret] and stores it encrypted. `up` returned
    // once tsdbadmin could log in with it (readyWhen: "login", the default).
    forkConnectionUri: fork.connectionUri,
    forkHaReplicas: ha.replicaCount,
    vpcName: vpc.name,
    vpcCidr: vpc.cidr,
  };
};
