// The provider object Pulumi serializes into every resource's state (`__provider`).
import type * as pulumi from "@pulumi/pulumi";
import { PACKAGE_NAME, PACKAGE_VERSION } from "../version";

export type ResourceKind = "ServiceFork" | "ServiceHA" | "VpcName";

/**
 * Holds two strings, the resource kind and the package version, and loads the implementation by
 * package name when it runs, from the program's node_modules. So state carries no code of ours
 * beyond these few lines and no credential, and picks up fixes from the installed package; the
 * version makes the text change with each release, which `diff` turns into an update that calls
 * no API.
 */
export function serializedProvider(kind: ResourceKind): pulumi.dynamic.ResourceProvider {
  return PROVIDERS[kind];
}

/** The object itself: what it captures (two strings and the kind) is all that goes into state. */
function providerFor(kind: ResourceKind): pulumi.dynamic.ResourceProvider {
  const packageName = PACKAGE_NAME;
  const version = PACKAGE_VERSION;
  const implementation = (): Required<pulumi.dynamic.ResourceProvider> => {
    const provider = require(`${packageName}/runtime`).providers[kind];
    if (!provider)
      throw new Error(
        `State written by ${packageName} ${version} names a ${kind} resource, which the installed ${packageName} does not provide.`,
      );
    return provider;
  };
  return {
    configure: (req) => implementation().configure(req),
    check: (olds, news) => implementation().check(olds, news),
    diff: (id, olds, news) => implementation().diff(id, olds, news),
    create: (inputs) => implementation().create(inputs),
    read: (id, props) => implementation().read(id, props),
    update: (id, olds, news) => implementation().update(id, olds, news),
    delete: (id, props) => implementation().delete(id, props),
  };
}

// One object per kind, made when the package loads (so with its version in it): the SDK caches a
// provider's serialized text by the object, so every instance after the first costs nothing to
// serialize (about 12 ms each otherwise).
const PROVIDERS: Readonly<Record<ResourceKind, pulumi.dynamic.ResourceProvider>> = Object.freeze({
  ServiceFork: providerFor("ServiceFork"),
  ServiceHA: providerFor("ServiceHA"),
  VpcName: providerFor("VpcName"),
});
