// ServiceFork, as a user's program declares it: a fork of a Tiger Cloud service (forkService),
// awaited until READY. Destroying it STOPS the fork (stop) by default: the fork still exists,
// paused, data and all, afterwards. With onDestroy: "delete" it is deleted instead (DELETE), and
// its data goes. The provider that does the work is resources/serviceFork/, in the engine's process.
import * as pulumi from "@pulumi/pulumi";
import { serializedProvider } from "./serializedProvider";
import { expectedUrn, secretInputNames } from "./urn";

export interface ServiceForkArgs {
  /** Project of the source service and of the fork. Default: tigercloud:projectId or TIGER_PROJECT_ID. */
  projectId?: pulumi.Input<string>;
  /** The service to fork. */
  sourceServiceId: pulumi.Input<string>;
  /** LAST_SNAPSHOT, NOW, or PITR (point in time: needs targetTime). */
  forkStrategy: pulumi.Input<"LAST_SNAPSHOT" | "NOW" | "PITR">;
  /** RFC 3339 time to fork at; required with PITR and only with PITR; not in the future. */
  targetTime?: pulumi.Input<string>;
  /** Whole millicores >= 1 (a number or a string of digits), or "shared". Default: the parent's. */
  cpuMillis?: pulumi.Input<number | string>;
  /** Gigabytes, a positive plain decimal (a number or a string such as "0.5"), or "shared". Default: the parent's. */
  memoryGbs?: pulumi.Input<number | string>;
  /** DEV or PROD. Unset: a new fork gets the API's default (DEV); an adopted fork keeps its tag. */
  environmentTag?: pulumi.Input<"DEV" | "PROD">;
  /** 1 to 128 characters, not blank, no control or invisible characters (zero-width joiners). Default: "<parent name>-fork". */
  name?: pulumi.Input<string>;
  /**
   * Wait for the API's work to finish: until the fork is READY after create, and until it is
   * PAUSED after destroy. Default true.
   */
  waitForReady?: pulumi.Input<boolean>;
  /**
   * What "ready" means when create waits (waitForReady): "login" (default), READY and then a
   * working login as tsdbadmin (`SELECT 1`); or "status", READY only. The service has been seen to
   * report READY before its database accepts connections.
   */
  readyWhen?: pulumi.Input<"login" | "status">;
  /** How long create waits, for a busy source, for READY and for a login, e.g. "30m" (default); at most "24h". */
  createTimeout?: pulumi.Input<string>;
  /**
   * How long an in-place change (rename, resize, environment) waits, for a busy fork and then for
   * READY with the new size, e.g. "30m" (default); at most "24h".
   */
  updateTimeout?: pulumi.Input<string>;
  /** How long destroy waits, for a busy fork and then for PAUSED, e.g. "10m" (default); at most "24h". */
  deleteTimeout?: pulumi.Input<string>;
  /**
   * With a `name`: before forking, take over a running fork of the same source with that name
   * (one left by a killed or failed `pulumi up`, or made elsewhere) instead of making a second
   * one. Default true. Two stacks that declare the same name from the same source share a fork.
   */
  adoptExisting?: pulumi.Input<boolean>;
  /**
   * Keep the fork stopped (true) or running (false, the default). A change is made in place:
   * `stop` then PAUSED (within deleteTimeout), or `start` then READY (within createTimeout). A fork
   * created with `paused: true` is forked, waited for, then stopped. Refresh reads it back from
   * the status, so a fork paused elsewhere shows as drift.
   */
  paused?: pulumi.Input<boolean>;
  /**
   * Take this existing fork under management instead of forking (the dynamic resources cannot be
   * imported with Pulumi's `import` option; the plugin's can). It must be a running fork of `sourceServiceId` (named `name`, if
   * given). After create it is bookkeeping: removing it changes nothing; another ID replaces.
   */
  adoptServiceId?: pulumi.Input<string>;
  /**
   * When a fork is adopted, its initial password is not known. "reset" (default): set a new random
   * one (updatePassword), recorded as a secret like a new fork's. "keep": leave it; the password
   * output stays empty. Two stacks sharing one fork reset each other's password.
   */
  passwordOnAdopt?: pulumi.Input<"reset" | "keep">;
  /**
   * What destroying this resource (or replacing it) does to the fork. "stop" (default): stop it;
   * it stays, paused, with its data, and storage is still billed. "delete": delete it (DELETE) and
   * wait until the API says DELETED (or no longer knows it); its data is gone for good. Only a fork
   * of sourceServiceId is ever deleted, and never one another resource of the run holds or would
   * take over (a rename or a move). The value recorded by the last `up` is the one destroy uses.
   */
  onDestroy?: pulumi.Input<"stop" | "delete">;
}

export interface Endpoint {
  host?: string;
  port?: number;
}

export class ServiceFork extends pulumi.dynamic.Resource {
  /** The fork's service ID (also the resource ID). */
  declare readonly serviceId: pulumi.Output<string>;
  declare readonly projectId: pulumi.Output<string>;
  declare readonly name: pulumi.Output<string>;
  declare readonly status: pulumi.Output<string>;
  declare readonly serviceType: pulumi.Output<string | undefined>;
  declare readonly regionCode: pulumi.Output<string | undefined>;
  declare readonly created: pulumi.Output<string | undefined>;
  declare readonly endpoint: pulumi.Output<Endpoint | undefined>;
  declare readonly connectionPooler: pulumi.Output<{ endpoint?: Endpoint } | undefined>;
  declare readonly forkedFrom: pulumi.Output<{ isStandby?: boolean; projectId?: string; serviceId?: string } | undefined>;
  declare readonly haReplicas: pulumi.Output<{ replicaCount?: number; syncReplicaCount?: number } | undefined>;
  declare readonly resources: pulumi.Output<{ id?: string; cpuMillis?: number; memoryGbs?: number; volumeType?: string }[] | undefined>;
  declare readonly environment: pulumi.Output<string | undefined>;
  /** The password of tsdbadmin: the fork's initial one, or the one set when it was adopted (passwordOnAdopt). Always secret. */
  declare readonly initialPassword: pulumi.Output<string | undefined>;
  /** True when the fork is stopped (PAUSING or PAUSED), as last seen. */
  declare readonly paused: pulumi.Output<boolean>;
  /** When the fork was taken over instead of made (see adoptExisting), and why. */
  declare readonly adopted: pulumi.Output<{ at: string; reason: string } | undefined>;
  /** The endpoint's host and port, the database (tsdb) and the admin role (tsdbadmin). */
  declare readonly host: pulumi.Output<string | undefined>;
  declare readonly port: pulumi.Output<number | undefined>;
  declare readonly database: pulumi.Output<string>;
  declare readonly username: pulumi.Output<string>;
  /**
   * `postgresql://tsdbadmin:<password>@<host>:<port>/tsdb?sslmode=require`. Always secret. For an
   * adopted fork, with the password set when it was adopted (passwordOnAdopt "reset", the
   * default), or without one ("keep").
   */
  declare readonly connectionUri: pulumi.Output<string | undefined>;
  /** The same through the connection pooler, when the service has one. Always secret. */
  declare readonly poolerConnectionUri: pulumi.Output<string | undefined>;

  constructor(name: string, args: ServiceForkArgs, opts?: pulumi.CustomResourceOptions) {
    const outputs = {
      serviceId: undefined,
      status: undefined,
      serviceType: undefined,
      regionCode: undefined,
      created: undefined,
      endpoint: undefined,
      connectionPooler: undefined,
      forkedFrom: undefined,
      haReplicas: undefined,
      resources: undefined,
      environment: undefined,
      initialPassword: undefined,
      adopted: undefined,
      host: undefined,
      port: undefined,
      database: undefined,
      username: undefined,
      connectionUri: undefined,
      poolerConnectionUri: undefined,
    };
    super(
      serializedProvider("ServiceFork"),
      name,
      {
        ...outputs,
        name: undefined,
        paused: undefined,
        ...args,
        __resourceName: name,
        __resourceUrn: expectedUrn(name, FORK_TYPE, opts),
        __secretInputs: secretInputNames(args),
      },
      {
        ...opts,
        additionalSecretOutputs: [...(opts?.additionalSecretOutputs ?? []), ...SECRET_OUTPUTS],
      },
      "tigercloud",
      "ServiceFork",
    );
  }
}

/** The type token the engine knows a ServiceFork by (pulumi.dynamic.Resource's module and type). */
const FORK_TYPE = "pulumi-nodejs:dynamic/tigercloud:ServiceFork";

/** Outputs that hold the password: secret without the user asking (and in the plugin's schema). @internal */
export const SECRET_OUTPUTS = ["initialPassword", "connectionUri", "poolerConnectionUri"];
