// The API's routes as the simulator serves them: each operation's method and path, and how it is
// answered. A path that matches none gets the gateway's HTML 404 (it never reaches the API).

/** The operations the simulator carries out (and logs, for tests). */
export type OperationName =
  | "createService"
  | "forkService"
  | "setHA"
  | "stop"
  | "deleteService"
  | "start"
  | "renameService"
  | "resize"
  | "setEnvironment"
  | "updatePassword"
  | "getService"
  | "listServices"
  | "getVpc"
  | "listVpcs"
  | "renameVpc"
  | "authInfo"
  | "listProjects";

export interface Route {
  method: string;
  /** The path after the base (/public/api/v1); group 1 is the project, group 2 the object. */
  pattern: RegExp;
  /**
   * "api": carried out and logged; "analytics": the official CLI's usage events, answered 200 and
   * recorded nowhere; "notImplemented": a real operation the simulator lacks, answered 501 naming it.
   */
  kind: "api" | "analytics" | "notImplemented";
  operation: string;
  /** The path as the API documents it: /projects/{project_id}/services/{service_id}/… */
  path: string;
}

// Paths written as the API documents them; each {name} matches one path segment.
const P = "/projects/{project_id}";
const S = `${P}/services/{service_id}`;
const V = `${P}/vpcs/{vpc_id}`;
const route = (kind: Route["kind"], operation: string, method: string, path: string): Route => ({
  kind,
  operation,
  method,
  path,
  pattern: new RegExp(`^${path.replace(/\{\w+\}/g, "([^/]+)")}$`),
});
const api = (operation: OperationName, method: string, path: string) => route("api", operation, method, path);
const missing = (operation: string, method: string, path: string) => route("notImplemented", operation, method, path);

export const ROUTES: Route[] = [
  api("authInfo", "GET", "/auth/info"),
  api("listProjects", "GET", "/projects"),
  route("analytics", "identifyUser", "POST", "/analytics/identify"),
  route("analytics", "trackEvent", "POST", "/analytics/track"),
  api("createService", "POST", `${P}/services`),
  api("forkService", "POST", `${S}/forkService`),
  api("setHA", "POST", `${S}/setHA`),
  api("stop", "POST", `${S}/stop`),
  api("deleteService", "DELETE", S),
  api("start", "POST", `${S}/start`),
  api("updatePassword", "POST", `${S}/updatePassword`),
  api("renameService", "POST", `${S}/rename`),
  api("resize", "POST", `${S}/resize`),
  api("setEnvironment", "POST", `${S}/setEnvironment`),
  api("getService", "GET", S),
  api("listServices", "GET", `${P}/services`),
  api("getVpc", "GET", V),
  api("listVpcs", "GET", `${P}/vpcs`),
  api("renameVpc", "POST", `${V}/rename`),
  // In the API, not here: answered 501 with a JSON error that names the operation.
  missing("logout", "POST", "/auth/logout"),
  missing("createVPC", "POST", `${P}/vpcs`),
  missing("deleteVPC", "DELETE", V),
  missing("getVPCPeerings", "GET", `${V}/peerings`),
  missing("createVPCPeering", "POST", `${V}/peerings`),
  missing("getVPCPeering", "GET", `${V}/peerings/{peering_id}`),
  missing("deleteVPCPeering", "DELETE", `${V}/peerings/{peering_id}`),
  missing("attachServiceToVPC", "POST", `${S}/attachToVPC`),
  missing("detachServiceFromVPC", "POST", `${S}/detachFromVPC`),
  missing("enablePooler", "POST", `${S}/enablePooler`),
  missing("disablePooler", "POST", `${S}/disablePooler`),
  missing("getServiceLogs", "GET", `${S}/logs`),
  missing("getServiceMetricsAvailableSeries", "GET", `${S}/metrics/available-series`),
  missing("getServiceMetricsSeries", "POST", `${S}/metrics/series`),
  missing("getReplicaSets", "GET", `${S}/replicaSets`),
  missing("createReplicaSet", "POST", `${S}/replicaSets`),
  missing("deleteReplicaSet", "DELETE", `${S}/replicaSets/{replica_set_id}`),
  missing("resizeReplicaSet", "POST", `${S}/replicaSets/{replica_set_id}/resize`),
  missing("enableReplicaPooler", "POST", `${S}/replicaSets/{replica_set_id}/enablePooler`),
  missing("disableReplicaPooler", "POST", `${S}/replicaSets/{replica_set_id}/disablePooler`),
  missing("setReplicaEnvironment", "POST", `${S}/replicaSets/{replica_set_id}/setEnvironment`),
];
