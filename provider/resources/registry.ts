// Every resource the package serves, in one list: the dynamic provider's runtime, the plugin, the
// declarations script (the program's classes, the plugin's schema, the SDKs) and, through what that
// script writes, the public index all follow it.
import type { Lifecycle } from "./define";
import { serviceFork } from "./serviceFork/resource";
import { serviceHA } from "./serviceHA/resource";
import type { ResourceKind } from "./spec";
import { vpcName } from "./vpcName/resource";

export const RESOURCES: readonly Lifecycle[] = [serviceFork, serviceHA, vpcName];

/** The resource of `kind`, or undefined when the package serves none by that name. */
export const resourceOf = (kind: string): Lifecycle | undefined => RESOURCES.find((r) => r.spec.kind === kind);

export type { ResourceKind };
