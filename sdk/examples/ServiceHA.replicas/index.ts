import * as pulumi from "@pulumi/pulumi";
import * as tigercloud from "pulumi-tigercloud";

const config = new pulumi.Config();
// The service
const serviceId = config.require("serviceId");
const ha = new tigercloud.ServiceHA("ha", {
    serviceId: serviceId,
    replicaCount: 2,
    syncReplicaCount: 1,
});
export const status = ha.status;
