package main

import (
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi/config"
	"github.com/tigercloud/pulumi-tigercloud/sdk/go/tigercloud"
)

func main() {
	pulumi.Run(func(ctx *pulumi.Context) error {
		cfg := config.New(ctx, "")
		// The production service to fork
		sourceServiceId := cfg.Require("sourceServiceId")
		// The pull request's number
		prNumber := cfg.RequireInt("prNumber")
		prDatabase, err := tigercloud.NewServiceFork(ctx, "prDatabase", &tigercloud.ServiceForkArgs{
			SourceServiceId: pulumi.String(sourceServiceId),
			Name:            pulumi.Sprintf("pr-%v", prNumber),
			ForkStrategy:    tigercloud.ForkStrategyLastSnapshot,
			CpuMillis:       pulumi.String("1000"),
			MemoryGbs:       pulumi.String("4"),
			OnDestroy:       tigercloud.OnDestroyDelete,
		})
		if err != nil {
			return err
		}
		ctx.Export("serviceId", prDatabase.ServiceId)
		ctx.Export("databaseUrl", prDatabase.ConnectionUri)
		return nil
	})
}
