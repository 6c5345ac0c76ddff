import pulumi
import pulumi_tigercloud as tigercloud

config = pulumi.Config()
# The VPC's ID
vpc_id = config.require("vpcId")
analytics = tigercloud.VpcName("analytics",
    vpc_id=vpc_id,
    name="analytics-vpc")
pulumi.export("cidr", analytics.cidr)
