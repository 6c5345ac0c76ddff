// pulumi-tigercloud: Pulumi resources for Tiger Cloud (formerly Timescale Cloud). The API client
// is at "pulumi-tigercloud/client": its types are zod's, which a program's type check would
// otherwise load on every preview and up.
export { ServiceFork, type ServiceForkArgs, type Endpoint } from "./serviceFork";
export { ServiceHA, type ServiceHAArgs } from "./serviceHA";
export { VpcName, type VpcNameArgs } from "./vpcName";
export { type ConnectionSettings, DEFAULT_API_URL, SETTING_SOURCES } from "./settings";
export * from "./errors";
