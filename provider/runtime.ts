// Loaded by the serialized provider (provider/program/serializedProvider.ts) when the engine runs
// it: the implementation of each resource kind. Not part of the public API.
import type * as pulumi from "@pulumi/pulumi";
import type { ResourceKind } from "./program/serializedProvider";
import { serviceForkProvider } from "./resources/serviceFork/provider";
import { serviceHAProvider } from "./resources/serviceHA/provider";
import { vpcNameProvider } from "./resources/vpcName/provider";

export const providers: Record<ResourceKind, Required<pulumi.dynamic.ResourceProvider>> = {
  ServiceFork: serviceForkProvider,
  ServiceHA: serviceHAProvider,
  VpcName: vpcNameProvider,
};
