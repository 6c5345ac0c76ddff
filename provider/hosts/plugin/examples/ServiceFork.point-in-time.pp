# A copy of production as it was at a point in time, for an investigation
config sourceServiceId string {
  description = "The production service"
}
config before string {
  description = "When to copy it at (RFC 3339), such as 2026-11-01T09:30:00Z"
}

resource investigation "tigercloud:index:ServiceFork" {
  sourceServiceId = sourceServiceId
  name            = "incident-investigation"
  forkStrategy    = "PITR"
  targetTime      = before
}

output host {
  value = investigation.host
}
output port {
  value = investigation.port
}
