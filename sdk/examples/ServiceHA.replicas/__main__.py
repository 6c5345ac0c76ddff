import pulumi
import pulumi_tigercloud as tigercloud

config = pulumi.Config()
# The service
service_id = config.require("serviceId")
ha = tigercloud.ServiceHA("ha",
    service_id=service_id,
    replica_count=2,
    sync_replica_count=1)
pulumi.export("status", ha.status)
