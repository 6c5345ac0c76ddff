import * as pulumi from "@pulumi/pulumi";
import * as tigercloud from "pulumi-tigercloud";

const config = new pulumi.Config();
// The production service to fork
const sourceServiceId = config.require("sourceServiceId");
// The pull request's number
const prNumber = config.requireNumber("prNumber");
const prDatabase = new tigercloud.ServiceFork("prDatabase", {
    sourceServiceId: sourceServiceId,
    name: `pr-${prNumber}`,
    forkStrategy: tigercloud.ForkStrategy.LastSnapshot,
    cpuMillis: "1000",
    memoryGbs: "4",
    onDestroy: tigercloud.OnDestroy.Delete,
});
export const serviceId = prDatabase.serviceId;
export const databaseUrl = prDatabase.connectionUri;
