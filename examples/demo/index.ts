// The demo program (the root Pulumi.yaml runs it): fork production, prepare the fork before anyone
// has its URL (personal data masked, production's jobs paused), give the fork HA, name a VPC, and
// export how to reach the fork. Credentials and the project come from stack config
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
    // Before connectionUri exists: the customers' personal data masked, in the table and in the
    // compressed hypertable of page views (and so in the continuous aggregate over it), and
    // production's TimescaleDB jobs paused on the fork. These are the local Tiger Cloud's tables
    // (docs/local-tiger-cloud.md): against your own service, name yours.
    prepare: {
      mask: [
        { table: "customers", column: "email", with: "email" },
        { table: "customers", column: "full_name", with: "keepFirst", chars: 8 },
        { table: "customers", column: "api_token", with: "hash" },
        { table: "events", column: "customer_email", with: "email" },
      ],
      pauseJobs: true,
    },
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
    forkPrepared: fork.prepared,
    forkHaReplicas: ha.replicaCount,
    vpcName: vpc.name,
    vpcCidr: vpc.cidr,
  };
};
