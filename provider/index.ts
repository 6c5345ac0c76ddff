// pulumi-tigercloud: Pulumi resources for Tiger Cloud (formerly Timescale Cloud).
export { ServiceFork, type ServiceForkArgs, type Endpoint } from "./serviceFork";
export { ServiceHA, type ServiceHAArgs } from "./serviceHA";
export { VpcName, type VpcNameArgs } from "./vpcName";
export { TigerCloudClient, createClient, CLIENT_DEFAULTS, type ClientOptions, type RetryEvent } from "./client";
export { type ConnectionSettings, DEFAULT_API_URL, SETTING_SOURCES } from "./settings";
export * from "./errors";
