import * as pulumi from "@pulumi/pulumi";
import * as tigercloud from "pulumi-tigercloud";

const config = new pulumi.Config();
// The production service
const sourceServiceId = config.require("sourceServiceId");
// When to copy it at (RFC 3339), such as 2026-11-01T09:30:00Z
const before = config.require("before");
const investigation = new tigercloud.ServiceFork("investigation", {
    sourceServiceId: sourceServiceId,
    name: "incident-investigation",
    forkStrategy: tigercloud.ForkStrategy.Pitr,
    targetTime: before,
});
export const host = investigation.host;
export const port = investigation.port;
