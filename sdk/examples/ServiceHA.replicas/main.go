package main

import (
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi/config"
	"github.com/tigercloud/pulumi-tigercloud/sdk/go/tigercloud"
)

func main() {
	pulumi.Run(func(ctx *pulumi.Context) error {
		cfg := config.New(ctx, "")
		// The service
		serviceId := cfg.Require("serviceId")
		ha, err := tigercloud.NewServiceHA(ctx, "ha", &tigercloud.ServiceHAArgs{
			ServiceId:        pulumi.String(serviceId),
			ReplicaCount:     pulumi.Int(2),
			SyncReplicaCount: pulumi.Int(1),
		})
		if err != nil {
			return err
		}
		ctx.Export("status", ha.Status)
		return nil
	})
}
