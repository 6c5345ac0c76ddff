import pulumi
import pulumi_tigercloud as tigercloud

config = pulumi.Config()
# The production service
source_service_id = config.require("sourceServiceId")
# When to copy it at (RFC 3339), such as 2026-11-01T09:30:00Z
before = config.require("before")
investigation = tigercloud.ServiceFork("investigation",
    source_service_id=source_service_id,
    name="incident-investigation",
    fork_strategy=tigercloud.ForkStrategy.PITR,
    target_time=before)
pulumi.export("host", investigation.host)
pulumi.export("port", investigation.port)
