# A database for a pull request: a fork of production, deleted when the stack is destroyed
config sourceServiceId string {
  description = "The production service to fork"
}
config prNumber int {
  description = "The pull request's number"
}

resource prDatabase "tigercloud:index:ServiceFork" {
  sourceServiceId = sourceServiceId
  name            = "pr-${prNumber}"
  forkStrategy    = "LAST_SNAPSHOT"
  cpuMillis       = "1000"
  memoryGbs       = "4"
  onDestroy       = "delete"
}

output serviceId {
  value = prDatabase.serviceId
}
output databaseUrl {
  value = prDatabase.connectionUri
}
