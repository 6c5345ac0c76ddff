package main

import (
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi/config"
	"github.com/tigercloud/pulumi-tigercloud/sdk/go/tigercloud"
)

func main() {
	pulumi.Run(func(ctx *pulumi.Context) error {
		cfg := config.New(ctx, "")
		// The VPC's ID
		vpcId := cfg.Require("vpcId")
		analytics, err := tigercloud.NewVpcName(ctx, "analytics", &tigercloud.VpcNameArgs{
			VpcId: pulumi.String(vpcId),
			Name:  pulumi.String("analytics-vpc"),
		})
		if err != nil {
			return err
		}
		ctx.Export("cidr", analytics.Cidr)
		return nil
	})
}
