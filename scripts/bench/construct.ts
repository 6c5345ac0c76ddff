// One construction measurement, run by scripts/bench.ts in a fresh process so that no cache of an
// earlier run helps: constructs N resources of one kind under Pulumi's mocks and prints, as one
// line of JSON, how long the package took to load and how long the N resources took until every
// registration settled. Usage: construct.js <subject> <n> [--source-maps]
import { performance } from "perf_hooks";
import * as pulumi from "@pulumi/pulumi";

export type Kind = "VpcName" | "ServiceHA" | "ServiceFork";
/** A kind of ours; "trivial": the floor of any dynamic provider; "twin:<kind>": the trivial
 *  provider with the property set and options of <kind>, to tell what the properties cost. */
export type Subject = Kind | "trivial" | `twin:${Kind}`;

export interface ConstructResult {
  subject: Subject;
  n: number;
  /** Loading pulumi-tigercloud (0 for the trivial resource and the twins, which do not load it). */
  importMs: number;
  /** From the first constructor call until every resource's ID resolved. */
  constructMs: number;
}

const trivialProvider: pulumi.dynamic.ResourceProvider = { create: async (inputs) => ({ id: "x", outs: inputs }) };

class Trivial extends pulumi.dynamic.Resource {
  constructor(name: string, props: Record<string, unknown>, opts?: pulumi.CustomResourceOptions) {
    super(trivialProvider, name, props, opts);
  }
}

const inputs: Record<Kind, (i: number) => Record<string, unknown>> = {
  VpcName: (i) => ({ projectId: "proj-demo01", vpcId: "1234567", name: `vpc-${i}` }),
  ServiceHA: () => ({ projectId: "proj-demo01", serviceId: "svc-parent1", replicaCount: 1 }),
  ServiceFork: (i) => ({ projectId: "proj-demo01", sourceServiceId: "svc-parent1", forkStrategy: "NOW", name: `fork-${i}` }),
};

// The output placeholders and options each constructor in provider/program/*.ts passes to the SDK, for the twins.
const outputsOf: Record<Kind, string[]> = {
  VpcName: ["cidr", "regionCode"],
  ServiceHA: ["status", "replicaCount", "syncReplicaCount"],
  ServiceFork: [
    ...["serviceId", "status", "serviceType", "regionCode", "created", "endpoint", "connectionPooler"],
    ...["forkedFrom", "haReplicas", "resources", "environment", "initialPassword", "name"],
  ],
};
const optionsOf: Record<Kind, pulumi.CustomResourceOptions | undefined> = {
  VpcName: undefined,
  ServiceHA: undefined,
  ServiceFork: { additionalSecretOutputs: ["initialPassword"] },
};

/** How many properties a resource of this subject carries (its inputs and outputs, not __provider). */
export function propertyCount(subject: Subject): number {
  if (subject === "trivial") return 1;
  const kind = (subject.startsWith("twin:") ? subject.slice(5) : subject) as Kind;
  return new Set([...outputsOf[kind], ...Object.keys(inputs[kind](0))]).size;
}

async function main(): Promise<void> {
  const [subject, nText, flag] = process.argv.slice(2) as [Subject, string, string | undefined];
  const n = Number(nText);
  // As @pulumi/pulumi's cmd/run does for every program the engine runs.
  if (flag === "--source-maps") {
    const sdk = require("path").dirname(require.resolve("@pulumi/pulumi/package.json")) as string;
    require(require.resolve("source-map-support/register", { paths: [sdk] }));
  }
  await pulumi.runtime.setMocks(
    { newResource: (args) => ({ id: `${args.name}-id`, state: args.inputs }), call: (args) => args.inputs },
    "bench",
    "bench",
    false,
  );

  let importMs = 0;
  let make: (i: number) => pulumi.CustomResource;
  if (subject === "trivial") {
    make = (i) => new Trivial(`r-${i}`, { value: i });
  } else if (subject.startsWith("twin:")) {
    const kind = subject.slice(5) as Kind;
    const placeholders = Object.fromEntries(outputsOf[kind].map((k) => [k, undefined]));
    make = (i) => new Trivial(`r-${i}`, { ...placeholders, ...inputs[kind](i) }, optionsOf[kind]);
  } else {
    // The built package, by name, as a user's program loads it.
    const started = performance.now();
    const pkg = require("pulumi-tigercloud") as typeof import("pulumi-tigercloud");
    importMs = performance.now() - started;
    const kind = subject as Kind;
    make = (i) => {
      switch (kind) {
        case "VpcName":
          return new pkg.VpcName(`r-${i}`, inputs.VpcName(i) as unknown as import("pulumi-tigercloud").VpcNameArgs);
        case "ServiceHA":
          return new pkg.ServiceHA(`r-${i}`, inputs.ServiceHA(i) as unknown as import("pulumi-tigercloud").ServiceHAArgs);
        case "ServiceFork":
          return new pkg.ServiceFork(`r-${i}`, inputs.ServiceFork(i) as unknown as import("pulumi-tigercloud").ServiceForkArgs);
      }
    };
  }

  const started = performance.now();
  const resources: pulumi.CustomResource[] = [];
  for (let i = 0; i < n; i++) resources.push(make(i));
  await Promise.all(resources.map((r) => new Promise((resolve) => r.id.apply(resolve))));
  const constructMs = performance.now() - started;

  const result: ConstructResult = { subject, n, importMs, constructMs };
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

if (require.main === module) {
  main().catch((err: unknown) => {
    console.error(err instanceof Error ? (err.stack ?? err.message) : String(err));
    process.exit(1);
  });
}
