// Text from outside (API answers: a fork's name, a status, an error message) reaches a person
// only escaped, whatever path it takes: check failures, errors thrown from every provider method,
// warnings and progress lines. In the style of the secret scan: drive the providers against the
// simulator with hostile answers, gather every text they show, and scan it.
import { providers } from "../../provider/hosts/dynamic/runtime";
import type * as pulumi from "@pulumi/pulumi";
import { createClient } from "../../provider/api/client";
import { escapedError, escapedFailures } from "../../provider/context/escaping";
import { ApiError, SchemaValidationError } from "../../provider/errors";
import { printable } from "../../provider/text";
import { expectNoSecretFragments, forkAppears, rejectionOf, startProviderSim, stopProviderSim, P, type Ids } from "../support/helpers";
import type { OperationName, Simulator } from "../../simulator";

const fork = providers.ServiceFork;
const ha = providers.ServiceHA;
const vpc = providers.VpcName;

type Provider = Required<pulumi.dynamic.ResourceProvider>;

/** A window title, a screen clear, a forged line and a right-to-left override. */
const HOSTILE = "\u001b]0;owned\u0007\u001b[2J\n[tigercloud] fork svc-x is READY\u2028\u202eevil";
/** What must never reach a terminal raw. */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const RAW = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;
/** The hostile text as it must be shown: it did reach the text, escaped. */
const ESCAPED = printable(HOSTILE);

let sim: Simulator;
let ids: Ids;
let stderr: string[];

beforeEach(async () => {
  ({ sim, ids, stderr } = await startProviderSim({}, { captureStderr: true }));
});
afterEach(() => stopProviderSim(sim));

/**
 * Every text of an error the engine shows or the provider process prints: message, String,
 * reasons, and its stack without the frames ("    at …" lines, whose line breaks are the stack's
 * own): what is left is the stack's first line, which quotes the message.
 */
function shownOf(err: unknown): string[] {
  if (!(err instanceof Error)) return [String(err)];
  const reasons = (err as { reasons?: unknown }).reasons;
  const stackHead = (err.stack ?? "")
    .split("\n")
    .filter((line) => !/^ {4}at /.test(line))
    .join("\n");
  return [err.message, String(err), stackHead, ...(Array.isArray(reasons) ? reasons.map(String) : [])];
}

/** What a provider call shows: its check failures, or the error it throws. */
async function shown(call: () => Promise<unknown>): Promise<string[]> {
  try {
    const result = (await call()) as { failures?: pulumi.dynamic.CheckFailure[] } | undefined;
    return (result?.failures ?? []).flatMap((f) => [f.property, f.reason]);
  } catch (err) {
    return shownOf(err);
  }
}

/** Progress lines and warnings, each without the newline that ends it. */
const lines = () => stderr.map((chunk) => chunk.replace(/\n$/, ""));

function expectNoRawText(texts: readonly string[]): void {
  for (const text of texts) if (RAW.test(text)) throw new Error(`raw control character in: ${JSON.stringify(text)}`);
}

/** Fails unless the hostile text reached some text (escaped): the scan then proves something. */
function expectReached(texts: readonly string[]): void {
  expect(texts.some((text) => text.includes(ESCAPED))).toBe(true);
}

const ALL_OPERATIONS: OperationName[] = [
  "forkService",
  "setHA",
  "stop",
  "start",
  "renameService",
  "resize",
  "setEnvironment",
  "updatePassword",
  "getService",
  "listServices",
  "getVpc",
  "renameVpc",
];

/** From now on, every operation answers 401 with the API's own JSON error carrying the hostile text. */
function refuseAllWithHostileMessage(): void {
  const body = JSON.stringify({ code: "UNAUTHORIZED", message: HOSTILE });
  for (const op of ALL_OPERATIONS) sim.injectFault(op, { kind: "status", status: 401, body, contentType: "application/json" }, 1000);
}

test("printable is idempotent: escaping twice shows the same text as once", () => {
  expect(printable(ESCAPED)).toBe(ESCAPED);
  expect(printable("a\\nb")).toBe("a\\nb");
});

describe("a 401 whose message carries control characters, through every method of every resource", () => {
  const fork0 = () => ({ __provider: P, projectId: ids.projectId, sourceServiceId: ids.serviceId, forkStrategy: "NOW", name: "pr-1" });
  const ha0 = () => ({ __provider: P, projectId: ids.projectId, serviceId: ids.serviceId, replicaCount: 1 });
  const vpc0 = () => ({ __provider: P, projectId: ids.projectId, vpcId: ids.vpcId, name: "main" });
  const cases: [string, Provider, () => Record<string, unknown>, Record<string, unknown>, string][] = [
    ["ServiceFork", fork, fork0, { name: "pr-2", waitForReady: false }, "svc-fork1"],
    ["ServiceHA", ha, ha0, { replicaCount: 2 }, "svc-parent1"],
    ["VpcName", vpc, vpc0, { name: "other" }, "1234567"],
  ];

  test.each(cases)("%s: check, create, read, update, delete", async (kind, provider, inputs, change, id) => {
    refuseAllWithHostileMessage();
    // Check verifies the references (each read once per configuration): the 401 fails it.
    const { inputs: checked, failures = [] } = await provider.check({}, inputs());
    const state = { ...checked, serviceId: id, waitForReady: false };
    const texts = [
      ...failures.flatMap((f) => [f.property, f.reason]),
      ...(await shown(() => provider.create({ ...checked, waitForReady: kind === "VpcName" ? undefined : false }))),
      ...(await shown(() => provider.read(id, state))),
      ...(await shown(() => provider.update(id, state, { ...state, ...change }))),
      ...(await shown(() => provider.delete(id, state))),
      ...lines(),
    ];
    expectReached(texts);
    expectNoRawText(texts);
  });
});

describe("a fork whose name and status, as the API answers, carry control characters", () => {
  async function hostileFork(): Promise<string> {
    const { inputs } = await fork.check(
      {},
      { __provider: P, sourceServiceId: ids.serviceId, forkStrategy: "NOW", name: "pr-1", waitForReady: false },
    );
    const { id } = await fork.create(inputs);
    sim.outOfBand.renameService(ids.projectId, id, HOSTILE);
    return id;
  }

  test("adoptServiceId: the check failure and create's error quote the name escaped", async () => {
    const id = await hostileFork();
    const news = {
      __provider: P,
      sourceServiceId: ids.serviceId,
      forkStrategy: "NOW",
      name: "pr-2",
      adoptServiceId: id,
      waitForReady: false,
    };
    const texts = [...(await shown(() => fork.check({}, news))), ...(await shown(() => fork.create(news))), ...lines()];
    expectReached(texts);
    expectNoRawText(texts);
  });

  test("adoptServiceId without a name: the progress line that names the fork is escaped", async () => {
    const id = await hostileFork();
    const news = { __provider: P, sourceServiceId: ids.serviceId, forkStrategy: "NOW", adoptServiceId: id, waitForReady: false };
    const texts = [...(await shown(() => fork.create(news))), ...lines()];
    expectReached(texts);
    expectNoRawText(texts);
  });

  test("a source whose status is unknown: the check's warning is escaped", async () => {
    sim.outOfBand.setStatus(ids.projectId, ids.serviceId, HOSTILE as never);
    const texts = [
      ...(await shown(() => fork.check({}, { __provider: P, sourceServiceId: ids.serviceId, forkStrategy: "NOW" }))),
      ...lines(),
    ];
    expectReached(texts);
    expectNoRawText(texts);
  });

  test("diff refusing a change to a paused fork whose recorded ID came from the API", async () => {
    const olds = {
      __provider: P,
      projectId: ids.projectId,
      sourceServiceId: ids.serviceId,
      forkStrategy: "NOW",
      serviceId: HOSTILE,
      paused: true,
      name: "a",
    };
    const texts = [...(await shown(() => fork.diff(HOSTILE, olds, { ...olds, name: "b" }))), ...lines()];
    expectReached(texts);
    expectNoRawText(texts);
  });

  test("a status with a newline and escape codes cannot forge a progress line", async () => {
    sim.delays = { ...sim.delays, forkQueuedMs: 60_000 };
    const forged = "CONFIGURING\n[tigercloud] fork svc-forged is READY\u001b[2J";
    let error: unknown;
    const pending = (async () => {
      const { inputs } = await fork.check(
        {},
        { __provider: P, sourceServiceId: ids.serviceId, forkStrategy: "NOW", name: "pr-7", createTimeout: "3s" },
      );
      await fork.create(inputs);
    })().catch((e: unknown) => {
      error = e;
    });
    {
      // The fork exists once forkService is answered (a fixed pause lost this race on a busy machine).
      const id = await forkAppears(sim, ids.projectId, "pr-7");
      sim.outOfBand.setStatus(ids.projectId, id, forged as never);
      // The forged status is read at least once (two reads of the fork from now), then READY.
      const reads = () => sim.requests("getService").filter((r) => r.path.endsWith(`/${id}`)).length;
      const before = reads();
      for (const until = Date.now() + 2500; reads() < before + 2 && Date.now() < until;) await new Promise((r) => setTimeout(r, 20));
      sim.outOfBand.setStatus(ids.projectId, id, "READY");
      await pending;
    }
    const text = lines().join("\n");
    expect(error).toBeUndefined();
    expect(text).toContain("CONFIGURING\\n[tigercloud] fork svc-forged is READY\\x1b[2J");
    expect(text.split("\n").filter((line) => line.startsWith("[tigercloud] fork svc-forged"))).toEqual([]);
    expect(text).not.toContain("\u001b");
  });
});

describe("an ApiError's fields, as a script using the client prints them", () => {
  test("code, apiMessage and details are escaped as the message is, and still read the same", async () => {
    const text = (field: string) => `${field}\u001b[31m red\r\u202eevil`;
    const body = JSON.stringify({ code: text("BUSY"), message: text("busy"), details: text("try later") });
    sim.injectFault("getVpc", { kind: "status", status: 409, body, contentType: "application/json" });
    const client = createClient({ apiUrl: sim.url, apiKey: sim.apiKey }, () => undefined, { maxAttempts: 1 });
    const err = await rejectionOf(client.getVpc(ids.projectId, ids.vpcId));
    expect(err).toBeInstanceOf(ApiError);
    const { code, apiMessage, details } = err as ApiError;
    const texts = [err.message, apiMessage, code ?? "", details ?? "", JSON.stringify(err)];
    expectNoRawText(texts);
    expect(apiMessage).toBe("busy\\x1b[31m red\\r\\u202eevil");
    expect(code).toBe(printable(text("BUSY")));
    expect(details).toBe(printable(text("try later")));
    expect(err.message).toContain(`${code}: GET`);
    expect(err.message).toContain(`: ${apiMessage} (${details})`);
  });

  test("escaping cannot put back together a password that redaction took apart", async () => {
    // Passwords holding an escape's text, echoed with the character escaped in their stead: no six
    // characters of them stand together, and the escape would write them out whole.
    const broken = "p4ss\\nw0rd";
    const quoted = 'p4ss\\"w0rd';
    const client = createClient({ apiUrl: sim.url, apiKey: sim.apiKey }, () => undefined, { maxAttempts: 1, secrets: [broken, quoted] });
    const body = JSON.stringify({ code: "BAD_PASSWORD", message: "refused p4ss\nw0rd", details: "p4ss\nw0rd" });
    sim.injectFault("getVpc", { kind: "status", status: 400, body, contentType: "application/json" });
    const err = (await rejectionOf(client.getVpc(ids.projectId, ids.vpcId))) as ApiError;
    expect(err.apiMessage).toBe("refused [REDACTED]");
    // A 2xx page, quoted (in JSON's quotes) by a SchemaValidationError.
    sim.injectFault("getVpc", { kind: "status", status: 200, body: '<pre>p4ss"w0rd</pre>', contentType: "text/html" });
    const page = await rejectionOf(client.getVpc(ids.projectId, ids.vpcId));
    expect(page).toBeInstanceOf(SchemaValidationError);
    expect(page.message).toContain('received "<pre>[REDACTED]</pre>"');
    const texts = [err.message, err.apiMessage, err.details ?? "", JSON.stringify(err), page.message];
    expectNoSecretFragments(texts, [broken, quoted]);
    expectNoRawText(texts);
  });
});

describe("the sink itself, for what no resource throws today", () => {
  test("a plain Error, a thrown string, an error whose reasons carry control characters", () => {
    const plain = escapedError(new Error(HOSTILE));
    const text = escapedError(HOSTILE);
    const partial = Object.assign(new Error(HOSTILE), { reasons: [HOSTILE] });
    const texts = [plain, text, escapedError(partial)].flatMap(shownOf);
    expectReached(texts);
    expectNoRawText(texts);
    // The same object, so that what the engine reads from it (a partial failure's id and properties) is kept.
    expect(escapedError(partial)).toBe(partial);
  });

  test("check failures: property and reason", () => {
    const texts = escapedFailures({ failures: [{ property: HOSTILE, reason: HOSTILE }] }).failures.flatMap((f) => [f.property, f.reason]);
    expectReached(texts);
    expectNoRawText(texts);
  });
});
