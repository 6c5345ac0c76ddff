// pulumi-tigercloud/simulator: a local Tiger Cloud for tests. A real HTTP server on loopback that
// speaks the API (forks, HA, VPCs, the calls the official `tiger` CLI makes), with a real
// PostgreSQL server behind each service where one is installed. The provider never loads this
// module: a program that does not import it pays nothing for it.
export { Simulator, type KeyPair, type LoggedRequest, type SimulatorOptions } from "./server";
export { DEFAULT_SEED, NO_DELAYS, REALISTIC_DELAYS, type Delays, type SeedData, type SimService, type SimVpc, type Status } from "./model";
export type { Fault } from "./faults";
export type { OperationName } from "./routes";
export { type DatabaseKind, type DatabaseMode, SAMPLE_ROWS, SAMPLE_TABLE } from "./databases";
