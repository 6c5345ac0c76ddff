import pulumi
import pulumi_tigercloud as tigercloud

config = pulumi.Config()
# The production service to fork
source_service_id = config.require("sourceServiceId")
# The pull request's number
pr_number = config.require_int("prNumber")
pr_database = tigercloud.ServiceFork("prDatabase",
    source_service_id=source_service_id,
    name=f"pr-{pr_number}",
    fork_strategy=tigercloud.ForkStrategy.LAST_SNAPSHOT,
    cpu_millis="1000",
    memory_gbs="4",
    on_destroy=tigercloud.OnDestroy.DELETE)
pulumi.export("serviceId", pr_database.service_id)
pulumi.export("databaseUrl", pr_database.connection_uri)
