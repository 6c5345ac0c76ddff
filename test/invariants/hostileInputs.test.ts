// Hostile and careless inputs, each in a table: rejected at preview (check) naming the property,
// with create refusing it the same way (an InvalidInputError, never a raw ZodError, no request);
// or accepted, and then sent to the API exactly as check returned it.
import { providers } from "../../provider/hosts/dynamic/runtime";
import type * as pulumi from "@pulumi/pulumi";
import { InvalidInputError } from "../../provider/errors";
import { printable } from "../../provider/text";
import { rejectionOf, startProviderSim, stopProviderSim, P } from "../support/helpers";
import { Simulator } from "../../simulator";

const fork = providers.ServiceFork;
const ha = providers.ServiceHA;
const vpc = providers.VpcName;

type Provider = Required<pulumi.dynamic.ResourceProvider>;
let sim: Simulator;

beforeAll(async () => {
  ({ sim } = await startProviderSim());
});
afterAll(() => stopProviderSim(sim));
beforeEach(() => sim.clearLog());

const FORK = { sourceServiceId: "svc-parent1", forkStrategy: "NOW" };
const PITR = { ...FORK, forkStrategy: "PITR" };
const HA = { serviceId: "svc-parent1", replicaCount: 1 };
const VPC = { vpcId: "1234567", name: "main" };
const kinds: Record<string, [Provider, Record<string, unknown>]> = {
  fork: [fork, FORK],
  pitr: [fork, PITR],
  ha: [ha, HA],
  vpc: [vpc, VPC],
};

// [resource, the hostile part, the property a failure must name, what its reason must say]
const rejected: [string, Record<string, unknown>, string, RegExp][] = [
  // sizes: whole millicores >= 1; memory a positive plain decimal; or "shared" for both
  ["fork", { cpuMillis: 1e21 }, "cpuMillis", /whole number of millicores/],
  ["fork", { cpuMillis: 1500.5 }, "cpuMillis", /whole number of millicores/],
  ["fork", { cpuMillis: "0" }, "cpuMillis", /whole number of millicores/],
  ["fork", { cpuMillis: 0 }, "cpuMillis", /whole number of millicores/],
  ["fork", { cpuMillis: -1000 }, "cpuMillis", /whole number of millicores/],
  ["fork", { cpuMillis: "1e3" }, "cpuMillis", /whole number of millicores/],
  ["fork", { cpuMillis: "01000" }, "cpuMillis", /whole number of millicores/],
  ["fork", { cpuMillis: " 1000" }, "cpuMillis", /whole number of millicores/],
  ["fork", { cpuMillis: "1000.0" }, "cpuMillis", /whole number of millicores/],
  ["fork", { cpuMillis: Number.NaN }, "cpuMillis", /whole number of millicores/],
  ["fork", { cpuMillis: Number.POSITIVE_INFINITY }, "cpuMillis", /whole number of millicores/],
  ["fork", { cpuMillis: "" }, "cpuMillis", /whole number of millicores/],
  ["fork", { cpuMillis: true }, "cpuMillis", /whole number of millicores/],
  ["fork", { cpuMillis: "SHARED", memoryGbs: "shared" }, "cpuMillis", /whole number of millicores/],
  ["fork", { memoryGbs: 0 }, "memoryGbs", /positive plain decimal/],
  ["fork", { memoryGbs: "0" }, "memoryGbs", /positive plain decimal/],
  ["fork", { memoryGbs: "0.0" }, "memoryGbs", /positive plain decimal/],
  ["fork", { memoryGbs: 1e-7 }, "memoryGbs", /positive plain decimal/],
  ["fork", { memoryGbs: 1e21 }, "memoryGbs", /positive plain decimal/],
  ["fork", { memoryGbs: "4GB" }, "memoryGbs", /positive plain decimal/],
  ["fork", { memoryGbs: "-4" }, "memoryGbs", /positive plain decimal/],
  ["fork", { memoryGbs: ".5" }, "memoryGbs", /positive plain decimal/],
  ["fork", { memoryGbs: "0x10" }, "memoryGbs", /positive plain decimal/],
  ["fork", { memoryGbs: Number.NaN }, "memoryGbs", /positive plain decimal/],
  ["fork", { memoryGbs: "4 " }, "memoryGbs", /positive plain decimal/],
  ["fork", { memoryGbs: {} }, "memoryGbs", /positive plain decimal/],
  ["fork", { cpuMillis: "shared", memoryGbs: "8" }, "memoryGbs", /"shared" too/],
  // targetTime: a real calendar date-time, in the past, each mistake with its own reason
  ["pitr", { targetTime: "2024-02-30T00:00:00Z" }, "targetTime", /day 30, and February 2024 has 29 days/],
  ["pitr", { targetTime: "2023-02-29T00:00:00Z" }, "targetTime", /day 29, and February 2023 has 28 days/],
  ["pitr", { targetTime: "2024-04-31T00:00:00Z" }, "targetTime", /day 31, and April 2024 has 30 days/],
  ["pitr", { targetTime: "2024-13-01T00:00:00Z" }, "targetTime", /month 13: months are 01 to 12/],
  ["pitr", { targetTime: "2024-00-10T00:00:00Z" }, "targetTime", /month 00: months are 01 to 12/],
  ["pitr", { targetTime: "2024-01-00T00:00:00Z" }, "targetTime", /day 00, and January 2024 has 31 days/],
  ["pitr", { targetTime: "2024-01-01T24:00:00Z" }, "targetTime", /hour 24: hours are 00 to 23/],
  ["pitr", { targetTime: "2024-01-01T12:60:00Z" }, "targetTime", /minute 60: minutes are 00 to 59/],
  ["pitr", { targetTime: "2024-01-01T12:00:60Z" }, "targetTime", /second 60: seconds are 00 to 59/],
  ["pitr", { targetTime: "2024-01-01T12:00:00+24:00" }, "targetTime", /offset \+24:00: offsets are -23:59 to \+23:59/],
  ["pitr", { targetTime: "2024-01-01T12:00:00-05:60" }, "targetTime", /offset -05:60/],
  ["pitr", { targetTime: "2024-01-01 12:00:00Z" }, "targetTime", /RFC 3339 date-time/],
  ["pitr", { targetTime: "2024-01-01T12:00:00" }, "targetTime", /RFC 3339 date-time/],
  ["pitr", { targetTime: "2024-01-01T12:00:00.1234567890Z" }, "targetTime", /RFC 3339 date-time/],
  ["pitr", { targetTime: "2999-01-01T00:00:00Z" }, "targetTime", /must not be in the future/],
  ["pitr", { targetTime: "yesterday" }, "targetTime", /RFC 3339 date-time/],
  ["pitr", { targetTime: 1704067200 }, "targetTime", /must be a string/],
  ["pitr", { targetTime: "2024-01-01T00:00:00Z\n" }, "targetTime", /RFC 3339 date-time/],
  ["fork", { forkStrategy: "PITR" }, "targetTime", /required when forkStrategy is PITR/],
  ["fork", { targetTime: "2024-01-01T00:00:00Z" }, "targetTime", /only when forkStrategy is PITR/],
  // IDs go into URL paths: no dot segments, slashes, whitespace or control characters
  ["fork", { sourceServiceId: "." }, "sourceServiceId", /must not be '\.' or '\.\.'/],
  ["fork", { sourceServiceId: ".." }, "sourceServiceId", /must not be '\.' or '\.\.'/],
  ["fork", { sourceServiceId: "a/b" }, "sourceServiceId", /whitespace, control characters or '\/'/],
  ["fork", { sourceServiceId: "../svc" }, "sourceServiceId", /whitespace, control characters or '\/'/],
  ["fork", { sourceServiceId: "svc 1" }, "sourceServiceId", /whitespace/],
  ["fork", { sourceServiceId: "\t" }, "sourceServiceId", /whitespace/],
  ["fork", { sourceServiceId: "svc\u0000x" }, "sourceServiceId", /control characters/],
  ["fork", { sourceServiceId: "svc\n1" }, "sourceServiceId", /control characters/],
  ["fork", { sourceServiceId: "\u202esvc" }, "sourceServiceId", /control characters/],
  ["fork", { sourceServiceId: "s".repeat(10_000) }, "sourceServiceId", /at most 128 characters/],
  ["fork", { sourceServiceId: "" }, "sourceServiceId", /must not be empty/],
  ["fork", { sourceServiceId: 42 }, "sourceServiceId", /must be a string/],
  ["fork", { projectId: ".." }, "projectId", /must not be '\.' or '\.\.'/],
  ["fork", { projectId: "p/../q" }, "projectId", /'\/'/],
  ["fork", { projectId: " " }, "projectId", /whitespace/],
  ["fork", { projectId: "proj?x=1 " }, "projectId", /whitespace/],
  // names a person reads: not blank, no control characters, bounded
  ["fork", { name: "   " }, "name", /must not be blank/],
  ["fork", { name: "pr\n[tigercloud] fork svc-1 is READY" }, "name", /control characters/],
  ["fork", { name: "\u001b[31mred" }, "name", /control characters/],
  ["fork", { name: "x\u007f" }, "name", /control characters/],
  ["fork", { name: "fam \u{1f468}\u200d\u{1f469}" }, "name", /invisible ones .*zero-width joiners.*; it has U\+200D at character 6$/],
  ["fork", { name: "a\u2028b" }, "name", /it has U\+2028 at character 2$/],
  ["fork", { name: "\t" }, "name", /must not be blank/],
  ["fork", { name: "n".repeat(129) }, "name", /1 to 128 characters/],
  ["fork", { name: "" }, "name", /1 to 128 characters/],
  ["fork", { name: 7 }, "name", /must be a string/],
  // the rest of a fork's inputs
  ["fork", { forkStrategy: "now" }, "forkStrategy", /one of LAST_SNAPSHOT, NOW, PITR/],
  ["fork", { environmentTag: "dev" }, "environmentTag", /DEV or PROD/],
  ["fork", { waitForReady: "true" }, "waitForReady", /true or false/],
  ["fork", { createTimeout: "0s" }, "createTimeout", /longer than zero/],
  ["fork", { createTimeout: "1d" }, "createTimeout", /a duration such as/],
  ["fork", { createTimeout: "9999999h" }, "createTimeout", /at most 24h/],
  ["fork", { createTimeout: "99999999999999999999s" }, "createTimeout", /a duration such as/],
  ["fork", { createTimeout: "-5m" }, "createTimeout", /a duration such as/],
  ["fork", { createTimeout: "30" }, "createTimeout", /a duration such as/],
  ["fork", { deleteTimeout: "25h" }, "deleteTimeout", /at most 24h/],
  ["fork", { nmae: "pr-1" }, "nmae", /not a property of this resource/],
  ["fork", { "name\u001b[2J": "x" }, "name\\x1b[2J", /not a property of this resource/],
  // ServiceHA
  ["ha", { replicaCount: 1e21 }, "replicaCount", /integer >= 0/],
  ["ha", { replicaCount: -1 }, "replicaCount", /integer >= 0/],
  ["ha", { replicaCount: 1.5 }, "replicaCount", /integer >= 0/],
  ["ha", { replicaCount: "2" }, "replicaCount", /integer >= 0/],
  ["ha", { replicaCount: Number.NaN }, "replicaCount", /integer >= 0/],
  ["ha", { replicaCount: 1, syncReplicaCount: 2 }, "syncReplicaCount", /must not exceed replicaCount/],
  ["ha", { replicaCount: undefined }, "replicaCount", /at least one count/],
  ["ha", { serviceId: ".." }, "serviceId", /must not be '\.' or '\.\.'/],
  ["ha", { serviceId: "a/b" }, "serviceId", /'\/'/],
  ["ha", { updateTimeout: "forever" }, "updateTimeout", /a duration such as/],
  ["ha", { deleteTimeout: "48h" }, "deleteTimeout", /at most 24h/],
  // VpcName
  ["vpc", { vpcId: "1/2" }, "vpcId", /string of digits/],
  ["vpc", { vpcId: ".." }, "vpcId", /string of digits/],
  ["vpc", { vpcId: "12a" }, "vpcId", /string of digits/],
  ["vpc", { vpcId: "1".repeat(65) }, "vpcId", /at most 64 digits/],
  ["vpc", { vpcId: 1234567.5 }, "vpcId", /string of digits/],
  ["vpc", { name: "   " }, "name", /must not be blank/],
  ["vpc", { name: "a\nb" }, "name", /control characters/],
  ["vpc", { name: "\u001b]0;owned\u0007" }, "name", /control characters/],
  ["vpc", { name: "v".repeat(129) }, "name", /1 to 128 characters/],
  ["vpc", { name: "" }, "name", /1 to 128 characters/],
];

describe("rejected at preview, naming the property", () => {
  test.each(rejected)("%s %j", async (kind, hostile, property, reason) => {
    const [provider, base] = kinds[kind] as [Provider, Record<string, unknown>];
    const news = { __provider: P, ...base, ...hostile };
    const { failures = [] } = await provider.check({}, news);
    // The engine repeats the value of the property a failure names: a value it would print raw
    // is named by the reason alone.
    const raw = Object.values(hostile).some((v) => typeof v === "string" && printable(v) !== v);
    const failure = failures.find((f) => f.reason.startsWith(property));
    expect(failure?.property).toBe(raw ? "" : property);
    expect(failure?.reason).toMatch(reason);
    // create reads its inputs with the same parse: the same refusal, before any request.
    const err = await rejectionOf(provider.create(news));
    expect(err).toBeInstanceOf(InvalidInputError);
    expect(err.message).toMatch(reason);
    expect(sim.requests()).toEqual([]);
  });
});

// [resource, the unusual but valid part, the operation, the body the API must receive]
const accepted: [string, Record<string, unknown>, string, Record<string, unknown>][] = [
  ["fork", { cpuMillis: 1500, memoryGbs: 6 }, "forkService", { fork_strategy: "NOW", cpu_millis: "1500", memory_gbs: "6" }],
  ["fork", { cpuMillis: "250", memoryGbs: "0.5" }, "forkService", { fork_strategy: "NOW", cpu_millis: "250", memory_gbs: "0.5" }],
  ["fork", { cpuMillis: 1000, memoryGbs: 0.25 }, "forkService", { fork_strategy: "NOW", cpu_millis: "1000", memory_gbs: "0.25" }],
  [
    "fork",
    { cpuMillis: "shared", memoryGbs: "shared" },
    "forkService",
    { fork_strategy: "NOW", cpu_millis: "shared", memory_gbs: "shared" },
  ],
  ["fork", { name: "pr-42 (préview) ✓" }, "forkService", { fork_strategy: "NOW", name: "pr-42 (préview) ✓" }],
  ["fork", { name: "n".repeat(128) }, "forkService", { fork_strategy: "NOW", name: "n".repeat(128) }],
  [
    "pitr",
    { targetTime: "2024-02-29T23:59:59.999+05:30" },
    "forkService",
    { fork_strategy: "PITR", target_time: "2024-02-29T23:59:59.999+05:30" },
  ],
  ["pitr", { targetTime: "2020-01-01t00:00:00z" }, "forkService", { fork_strategy: "PITR", target_time: "2020-01-01t00:00:00z" }],
  [
    "fork",
    { forkStrategy: "LAST_SNAPSHOT", environmentTag: "PROD" },
    "forkService",
    { fork_strategy: "LAST_SNAPSHOT", environment_tag: "PROD" },
  ],
  ["vpc", { name: "analytics 🚀" }, "renameVpc", { name: "analytics 🚀" }],
  ["vpc", { name: "v".repeat(128) }, "renameVpc", { name: "v".repeat(128) }],
  ["vpc", { name: " padded " }, "renameVpc", { name: " padded " }],
  ["ha", { replicaCount: 2, syncReplicaCount: 1 }, "setHA", { replica_count: 2, sync_replica_count: 1 }],
  ["ha", { replicaCount: undefined, syncReplicaCount: 0 }, "setHA", { sync_replica_count: 0 }],
];

describe("accepted, then sent exactly", () => {
  test.each(accepted)("%s %j", async (kind, unusual, operation, body) => {
    const [provider, base] = kinds[kind] as [Provider, Record<string, unknown>];
    const { inputs, failures } = await provider.check(
      {},
      { __provider: P, ...base, waitForReady: kind === "vpc" ? undefined : false, ...unusual },
    );
    expect(failures).toEqual([]);
    await provider.create(inputs);
    expect(sim.requests(operation as never).map((r) => r.body)).toEqual([body]);
  });
});

test("the table is as large as the issue asks", () => {
  expect(rejected.length + accepted.length).toBeGreaterThanOrEqual(80);
});

test("printable: controls, line and paragraph separators, and direction overrides become visible escapes; the rest is kept", () => {
  expect(printable("a\nb\u2028c\u2029d\u202ee\u001b[2Jf é 👨‍👩")).toBe("a\\nb\\u2028c\\u2029d\\u202ee\\x1b[2Jf é 👨‍👩");
});
