"""A fork of production, high availability on the fork, and a VPC's name (see Pulumi.yaml)."""

import pulumi
import pulumi_tigercloud as tigercloud

config = pulumi.Config()
source_service_id = config.require("sourceServiceId")
vpc_id = config.require("vpcId")
fork_name = config.get("forkName", "python-fork")
vpc_name = config.get("vpcName", "analytics-vpc")
replica_count = config.get_int("replicaCount", 1)

fork = tigercloud.ServiceFork(
    "fork",
    source_service_id=source_service_id,
    fork_strategy=tigercloud.ForkStrategy.LAST_SNAPSHOT,
    name=fork_name,
    on_destroy=tigercloud.OnDestroy.DELETE,
)
fork_ha = tigercloud.ServiceHA(
    "forkHA",
    service_id=fork.service_id,
    replica_count=replica_count,
)
vpc = tigercloud.VpcName(
    "vpc",
    vpc_id=vpc_id,
    name=vpc_name,
)

pulumi.export("forkId", fork.service_id)
# Secret, as in every language: shown only with --show-secrets.
pulumi.export("connectionUri", fork.connection_uri)
pulumi.export("haReplicas", fork_ha.replica_count)
pulumi.export("vpcName", vpc.name)
