// pulumi-tigercloud: Pulumi resources for Tiger Cloud (formerly Timescale Cloud). What a user's
// program loads: the resource classes (program/), the settings' names and the errors; nothing of
// the provider side (zod, axios, pg), which runs in the engine's process (test/invariants/structure.test.ts).
// The API client is at "pulumi-tigercloud/client": its types are zod's, which a program's type
// check would otherwise load on every preview and up.
// Every class, Args interface, enum and named type the resources' specifications declare: the
// generated module is written from the registry, so nothing declared there is left unexported.
export * from "./program/resources";
export { type ConnectionSettings, DEFAULT_API_URL, SETTING_SOURCES } from "./settings";
export * from "./errors";
