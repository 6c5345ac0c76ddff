# Two HA replicas, one of them synchronous, on a service
config serviceId string {
  description = "The service"
}

resource ha "tigercloud:index:ServiceHA" {
  serviceId        = serviceId
  replicaCount     = 2
  syncReplicaCount = 1
}

output status {
  value = ha.status
}
