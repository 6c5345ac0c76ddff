// What every resource class hands the engine beside the program's arguments (program/resources.ts):
// its outputs (so that the engine knows them before the provider answers), and the bookkeeping the
// dynamic provider reads (hosts/dynamic/wire.ts), since it is told none of it otherwise: who
// declares the resource (its name and the URN the engine will give it) and which arguments are secret.
import type * as pulumi from "@pulumi/pulumi";
import { loadExperimentalBuiltinsQuietly } from "./builtins";
import { expectedUrn, secretInputNames } from "./urn";

loadExperimentalBuiltinsQuietly();

/** The type token the engine knows a dynamic resource by (pulumi.dynamic.Resource's module and type). */
const typeOf = (kind: string) => `pulumi-nodejs:dynamic/tigercloud:${kind}`;

/** The inputs a resource class registers: its outputs unset, the program's arguments, the bookkeeping. */
export function declaredInputs(
  kind: string,
  name: string,
  args: object,
  outputs: readonly string[],
  opts: pulumi.CustomResourceOptions | undefined,
): pulumi.Inputs {
  return {
    ...Object.fromEntries(outputs.map((output) => [output, undefined])),
    ...args,
    __resourceName: name,
    __resourceUrn: expectedUrn(name, typeOf(kind), opts),
    __secretInputs: secretInputNames(args),
  };
}

/** The program's options, with the outputs that are always secret added to its additionalSecretOutputs. */
export function withSecretOutputs(opts: pulumi.CustomResourceOptions | undefined, secret: readonly string[]): pulumi.CustomResourceOptions {
  return secret.length === 0 ? { ...opts } : { ...opts, additionalSecretOutputs: [...(opts?.additionalSecretOutputs ?? []), ...secret] };
}
