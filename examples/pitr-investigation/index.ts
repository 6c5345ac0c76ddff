// A point-in-time fork: the service as it was just before an incident, with HA so the
// investigation can run heavy queries without being interrupted by a failover.
import * as pulumi from "@pulumi/pulumi";
import { ServiceFork, ServiceHA } from "pulumi-tigercloud";

export = async () => {
  const config = new pulumi.Config();

  const snapshot = new ServiceFork("incident-snapshot", {
    sourceServiceId: config.require("sourceServiceId"),
    forkStrategy: "PITR",
    targetTime: config.require("targetTime"),
    name: "incident-snapshot",
  });

  const ha = new ServiceHA("incident-snapshot-ha", { serviceId: snapshot.serviceId, replicaCount: 2, syncReplicaCount: 1 });

  return {
    serviceId: snapshot.serviceId,
    host: snapshot.endpoint.apply((e) => e?.host),
    replicas: ha.replicaCount,
  };
};
