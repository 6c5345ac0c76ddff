import * as pulumi from "@pulumi/pulumi";
import * as tigercloud from "pulumi-tigercloud";

const config = new pulumi.Config();
// The VPC's ID
const vpcId = config.require("vpcId");
const analytics = new tigercloud.VpcName("analytics", {
    vpcId: vpcId,
    name: "analytics-vpc",
});
export const cidr = analytics.cidr;
