// The provider object that goes into state: one per resource kind and process, so the SDK's
// closure serializer runs once per kind in a program however many resources it declares, and
// every instance of a kind carries the same text (which the provider process caches by).
import * as pulumi from "@pulumi/pulumi";
import * as closure from "@pulumi/pulumi/runtime/closure/serializeClosure";
import { ServiceFork, ServiceHA, VpcName } from "../../../provider";
import { PACKAGE_VERSION } from "../../../provider/version";

const providerTexts = new Map<string, string[]>();

beforeAll(() => {
  void pulumi.runtime.setMocks(
    {
      newResource: (args) => {
        const text = String(args.inputs.__provider);
        providerTexts.set(args.type, [...(providerTexts.get(args.type) ?? []), text]);
        return { id: `${args.name}-id`, state: args.inputs };
      },
      call: (args) => args.inputs,
    },
    "project",
    "stack",
    false,
  );
});

test("constructing several resources of each kind serializes each kind's provider once, to one text", async () => {
  const serialize = jest.spyOn(closure, "serializeFunction");
  const resources: pulumi.CustomResource[] = [];
  for (let i = 0; i < 4; i++) {
    resources.push(new VpcName(`vpc-${i}`, { projectId: "p", vpcId: "123", name: `n-${i}` }));
    resources.push(new ServiceHA(`ha-${i}`, { projectId: "p", serviceId: "svc", replicaCount: 1 }));
    resources.push(new ServiceFork(`fork-${i}`, { projectId: "p", sourceServiceId: "svc", forkStrategy: "NOW" }));
  }
  await Promise.all(resources.map((r) => new Promise((resolve) => r.id.apply(resolve))));

  expect(serialize).toHaveBeenCalledTimes(3);
  expect([...providerTexts.keys()].sort()).toEqual(
    ["ServiceFork", "ServiceHA", "VpcName"].map((k) => `pulumi-nodejs:dynamic/tigercloud:${k}`),
  );
  for (const [type, texts] of providerTexts) {
    expect(texts).toHaveLength(4);
    expect(new Set(texts).size).toBe(1);
    // The text names its kind and the package version, so a new release is a (no-API) update.
    expect(texts[0]).toContain(type.split(":").pop());
    expect(texts[0]).toContain(PACKAGE_VERSION);
  }
});

test("the package's version changed in the same process (a release installed in place): the next resource carries the new version", async () => {
  const version = require("../../../provider/version") as { PACKAGE_VERSION: string };
  const real = version.PACKAGE_VERSION;
  version.PACKAGE_VERSION = `${real}-next`;
  try {
    const vpc = new VpcName("vpc-next", { projectId: "p", vpcId: "123", name: "n-next" });
    await new Promise((resolve) => vpc.id.apply(resolve));
  } finally {
    version.PACKAGE_VERSION = real;
  }
  const texts = providerTexts.get("pulumi-nodejs:dynamic/tigercloud:VpcName") ?? [];
  expect(texts[texts.length - 1]).toContain(`${real}-next`);
});
