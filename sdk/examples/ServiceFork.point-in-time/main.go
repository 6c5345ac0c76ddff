package main

import (
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi/config"
	"github.com/tigercloud/pulumi-tigercloud/sdk/go/tigercloud"
)

func main() {
	pulumi.Run(func(ctx *pulumi.Context) error {
		cfg := config.New(ctx, "")
		// The production service
		sourceServiceId := cfg.Require("sourceServiceId")
		// When to copy it at (RFC 3339), such as 2026-11-01T09:30:00Z
		before := cfg.Require("before")
		investigation, err := tigercloud.NewServiceFork(ctx, "investigation", &tigercloud.ServiceForkArgs{
			SourceServiceId: pulumi.String(sourceServiceId),
			Name:            pulumi.String("incident-investigation"),
			ForkStrategy:    tigercloud.ForkStrategyPitr,
			TargetTime:      pulumi.String(before),
		})
		if err != nil {
			return err
		}
		ctx.Export("host", investigation.Host)
		ctx.Export("port", investigation.Port)
		return nil
	})
}
