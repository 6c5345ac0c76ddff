// A Go program: a fork of production, high availability on the fork, and a VPC's name, through the
// provider plugin (the SDK names its download URL: the engine fetches it from the project's
// releases the first time; see the README's "Every Pulumi language"). The same as examples/yaml.
//
// It is an Automation API inline program: this binary is the whole program, and it drives the
// `pulumi` CLI itself. A Go project directory (`runtime: go`) would need the Go language host,
// pulumi-language-go, whose module the Go module proxy refuses; an inline program needs no
// language host.
//
//	export PULUMI_BACKEND_URL=file://$HOME/.pulumi-state PULUMI_CONFIG_PASSPHRASE=...
//	export TIGER_PUBLIC_KEY=... TIGER_SECRET_KEY=... TIGER_PROJECT_ID=...
//	go run . -source-service svc-1234567890 -vpc 1234 up
//	go run . destroy
//
// up creates or updates the stack, previews it again expecting no changes, and refreshes it.
// destroy deletes the fork (onDestroy: delete), resets the HA and leaves the VPC's name.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"sort"

	"github.com/pulumi/pulumi/sdk/v3/go/auto"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optdestroy"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optpreview"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optrefresh"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optup"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/tigercloud/pulumi-tigercloud/sdk/go/tigercloud"
)

// Inputs of the program.
type inputs struct {
	sourceServiceID, vpcID, forkName, vpcName string
	replicaCount                              int
}

// program declares the resources: what `Pulumi.yaml` would hold in a project directory.
func program(in inputs) pulumi.RunFunc {
	return func(ctx *pulumi.Context) error {
		fork, err := tigercloud.NewServiceFork(ctx, "fork", &tigercloud.ServiceForkArgs{
			SourceServiceId: pulumi.String(in.sourceServiceID),
			ForkStrategy:    tigercloud.ForkStrategyLastSnapshot,
			Name:            pulumi.String(in.forkName),
			OnDestroy:       tigercloud.OnDestroyDelete,
		})
		if err != nil {
			return err
		}
		ha, err := tigercloud.NewServiceHA(ctx, "forkHA", &tigercloud.ServiceHAArgs{
			ServiceId:    fork.ServiceId,
			ReplicaCount: pulumi.Int(in.replicaCount),
		})
		if err != nil {
			return err
		}
		vpc, err := tigercloud.NewVpcName(ctx, "vpc", &tigercloud.VpcNameArgs{
			VpcId: pulumi.String(in.vpcID),
			Name:  pulumi.String(in.vpcName),
		})
		if err != nil {
			return err
		}
		ctx.Export("forkId", fork.ServiceId)
		// Secret, as in every language: printed as [secret].
		ctx.Export("connectionUri", fork.ConnectionUri)
		ctx.Export("haReplicas", ha.ReplicaCount)
		ctx.Export("vpcName", vpc.Name)
		return nil
	}
}

func main() {
	// A flag set of its own: the Pulumi SDK's logging adds its flags to the default one.
	flags := flag.NewFlagSet("tigercloud-go", flag.ExitOnError)
	stackName := flags.String("stack", "dev", "the stack's name")
	var in inputs
	flags.StringVar(&in.sourceServiceID, "source-service", "", "the service to fork (up)")
	flags.StringVar(&in.vpcID, "vpc", "", "the ID of the VPC to name (up)")
	flags.StringVar(&in.forkName, "fork-name", "go-fork", "the fork's name")
	flags.StringVar(&in.vpcName, "vpc-name", "analytics-vpc", "the VPC's name")
	flags.IntVar(&in.replicaCount, "replicas", 1, "HA replicas on the fork")
	flags.Usage = func() {
		fmt.Fprintln(flags.Output(), "usage: go run . [flags] up|destroy")
		flags.PrintDefaults()
	}
	_ = flags.Parse(os.Args[1:])
	if flags.NArg() != 1 || (flags.Arg(0) != "up" && flags.Arg(0) != "destroy") {
		flags.Usage()
		os.Exit(2)
	}
	if err := run(context.Background(), flags.Arg(0), *stackName, in); err != nil {
		fmt.Fprintf(os.Stderr, "error: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, action, stackName string, in inputs) error {
	if os.Getenv("PULUMI_CONFIG_PASSPHRASE") == "" && os.Getenv("PULUMI_CONFIG_PASSPHRASE_FILE") == "" {
		return errors.New("set PULUMI_CONFIG_PASSPHRASE: the stack's secrets are encrypted with it")
	}
	if action == "up" && (in.sourceServiceID == "" || in.vpcID == "") {
		return errors.New("up needs -source-service and -vpc")
	}
	// The workspace's folder only holds the project and stack settings the CLI reads; the stack
	// itself is in the backend, PULUMI_BACKEND_URL's (e.g. file://...), as for the CLI.
	workDir, err := os.MkdirTemp("", "tigercloud-go-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(workDir)
	stack, err := auto.UpsertStackInlineSource(ctx, stackName, "tigercloud-go", program(in),
		auto.WorkDir(workDir), auto.SecretsProvider("passphrase"))
	if err != nil {
		return err
	}
	fmt.Printf("stack %s\n", stack.Name())

	if action == "destroy" {
		fmt.Println("destroying...")
		_, err := stack.Destroy(ctx, optdestroy.ProgressStreams(os.Stdout))
		return err
	}

	fmt.Println("updating...")
	up, err := stack.Up(ctx, optup.ProgressStreams(os.Stdout))
	if err != nil {
		return err
	}
	fmt.Println("outputs:")
	names := make([]string, 0, len(up.Outputs))
	for name := range up.Outputs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		out := up.Outputs[name]
		value := out.Value
		if out.Secret {
			value = "[secret]"
		}
		fmt.Printf("  %s: %v\n", name, value)
	}

	// Nothing declared has changed since the update: the preview must say so (it fails otherwise).
	fmt.Println("previewing, expecting no changes...")
	if _, err := stack.Preview(ctx, optpreview.ExpectNoChanges(), optpreview.ProgressStreams(os.Stdout)); err != nil {
		return fmt.Errorf("the stack has changes right after an update: %w", err)
	}

	fmt.Println("refreshing...")
	_, err = stack.Refresh(ctx, optrefresh.ProgressStreams(os.Stdout))
	return err
}
