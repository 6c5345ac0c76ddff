// The provider object Pulumi serializes into every resource's state (`__provider`).
import type * as pulumi from "@pulumi/pulumi";
import { PACKAGE_NAME, PACKAGE_VERSION } from "../../version";

/**
 * Holds two strings, the resource kind and the package version, and loads the implementation by
 * package name when it runs, from the program's node_modules. So state carries no code of ours
 * beyond these few lines and no credential, and picks up fixes from the installed package; the
 * version makes the text change with each release, which `diff` turns into an update that calls
 * no API.
 */
export function serializedProvider(kind: string): pulumi.dynamic.ResourceProvider {
  // One object per kind and version in the program's process: the SDK caches a provider's
  // serialized text by the object, so every instance after the first costs nothing to serialize
  // (about 12 ms each otherwise). Keyed by version too, read at each call: the text must follow
  // the package's version (a no-API-call update), even when the package is replaced in place.
  const key = `${kind}@${PACKAGE_VERSION}`;
  let provider = PROVIDERS_MADE.get(key);
  if (!provider) {
    provider = providerFor(kind);
    PROVIDERS_MADE.set(key, provider);
  }
  return provider;
}

/** The program side's one memo (a program's process is one run, with no host to hold it). */
const PROVIDERS_MADE = new Map<string, pulumi.dynamic.ResourceProvider>();

/** The object itself: what it captures (two strings and the kind) is all that goes into state. */
function providerFor(kind: string): pulumi.dynamic.ResourceProvider {
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
