// `pulumi-tigercloud/runtime`: loaded by the serialized provider (serializedProvider.ts) when the
// engine runs it, here or from state written by an earlier version: each resource kind's provider
// object, from the registry. Not part of the public API.
import type * as pulumi from "@pulumi/pulumi";
import { RESOURCES } from "../../resources/registry";
import type { ResourceKind } from "../../resources/spec";
import { dynamicProvider } from "./provider";

export const providers = Object.fromEntries(RESOURCES.map((r) => [r.spec.kind, dynamicProvider(r)])) as Record<
  ResourceKind,
  Required<pulumi.dynamic.ResourceProvider>
>;
