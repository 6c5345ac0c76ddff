// Faults a careless network, a wrong setting or a hostile API can cause, tried on the provider
// methods as the engine calls them, against the simulator over loopback: nothing live is taken
// for gone, no wait overruns its timeout, no secret leaks, no API text reaches the terminal raw.
import { providers } from "../../provider/hosts/dynamic/runtime";
import type * as pulumi from "@pulumi/pulumi";
import { ForkOutcomeUnknownError, NotFoundError, PartialFailureError, TigerCloudError } from "../../provider/errors";
import { DynamicPartialFailure, setHostOptions } from "../../provider/hosts/dynamic/provider";
import {
  configureProviders,
  errorTexts,
  expectNoSecretFragments,
  rejectionOf,
  startProviderSim,
  stopProviderSim,
  P,
  type Ids,
} from "../support/helpers";
import { Simulator } from "../../simulator";

const fork = providers.ServiceFork;
const ha = providers.ServiceHA;
const vpc = providers.VpcName;

const HTML_404 = "<html><body><h1>404 Not Found</h1>nginx</body></html>";
let sim: Simulator;
let ids: Ids;

const configureFor = (apiUrl: string) =>
  configureProviders({ "tigercloud:apiUrl": apiUrl, "tigercloud:apiKey": sim.apiKey, "tigercloud:projectId": ids.projectId });

/** Everything the provider writes to stderr (its progress lines) while `run` runs. */
async function stderrOf(run: () => Promise<unknown>): Promise<{ text: string; error: unknown }> {
  const chunks: string[] = [];
  const write = process.stderr.write.bind(process.stderr);
  process.stderr.write = ((chunk: string | Uint8Array) => {
    chunks.push(String(chunk));
    return true;
  }) as typeof process.stderr.write;
  let error: unknown;
  try {
    await run();
  } catch (err) {
    error = err;
  } finally {
    process.stderr.write = write;
  }
  return { text: chunks.join(""), error };
}

beforeEach(async () => {
  ({ sim, ids } = await startProviderSim());
});
afterEach(() => stopProviderSim(sim));

async function newFork(extra: Record<string, unknown> = {}) {
  const { inputs } = await fork.check({}, { __provider: P, sourceServiceId: ids.serviceId, forkStrategy: "NOW", name: "pr-7", ...extra });
  const { id, outs } = await fork.create(inputs);
  return { id, props: { ...outs, __provider: P } };
}

describe('"gone" only when the API says so, confirmed', () => {
  test("a state without its project (edited, or written by something else): read and delete of all three fail naming projectId, with no request", async () => {
    const { id, props } = await newFork();
    const { projectId: _f, ...forkProps } = props;
    const haProps = { __provider: P, serviceId: id, replicaCount: 2 };
    const vpcProps = { __provider: P, vpcId: ids.vpcId, name: "main-vpc" };
    sim.clearLog();
    const attempts = [
      () => fork.read(id, forkProps),
      () => fork.delete(id, forkProps),
      () => ha.read(id, haProps),
      () => ha.delete(id, haProps),
      () => vpc.read(ids.vpcId, vpcProps),
    ];
    for (const attempt of attempts) {
      const err = await rejectionOf(attempt());
      expect(err).toBeInstanceOf(TigerCloudError);
      expect(err.message).toMatch(/its state in the stack holds no projectId/);
    }
    expect(sim.requests()).toEqual([]);
    expect(sim.service(ids.projectId, id)?.status).toBe("READY");
  });

  test("a wrong base path (the gateway's HTML 404 everywhere): read and delete fail for all three, and nothing live is lost", async () => {
    const { id, props } = await newFork();
    await ha.create((await ha.check({}, { __provider: P, serviceId: id, replicaCount: 2 })).inputs);
    const vpcProps = { __provider: P, projectId: ids.projectId, vpcId: ids.vpcId, name: "main-vpc" };
    const haProps = { __provider: P, projectId: ids.projectId, serviceId: id, replicaCount: 2 };
    await configureFor(`${sim.url}/wrong/base/path`);

    const attempts = [
      () => fork.read(id, props),
      () => ha.read(id, haProps),
      () => vpc.read(ids.vpcId, vpcProps),
      () => fork.delete(id, props),
      () => ha.delete(id, haProps),
    ];
    for (const attempt of attempts) {
      const err = await rejectionOf(attempt());
      expect(err).toBeInstanceOf(NotFoundError);
      expect((err as NotFoundError).apiAnswered).toBe(false);
      expect(err.message).toMatch(/TIGER_API_URL/);
    }
    expect(sim.service(ids.projectId, id)).toMatchObject({ status: "READY", ha_replicas: { replica_count: 2 } });
  });

  test("one HTML 404 from a proxy on GET does not drop a live fork from state", async () => {
    const { id, props } = await newFork();
    sim.injectFault("getService", { kind: "status", status: 404, body: HTML_404 });
    sim.clearLog();
    expect(await rejectionOf(fork.read(id, props))).toBeInstanceOf(NotFoundError);
    expect(sim.requests("listServices")).toEqual([]);
    expect((await fork.read(id, props)).props).toMatchObject({ serviceId: id, status: "READY" });
  });

  test("one 404 on stop (HTML or the API's own) does not make destroy succeed while the fork runs", async () => {
    const { id, props } = await newFork();
    sim.injectFault("stop", { kind: "status", status: 404, body: HTML_404 });
    expect(await rejectionOf(fork.delete(id, props))).toBeInstanceOf(NotFoundError);
    sim.injectFault("stop", { kind: "status", status: 404, body: JSON.stringify({ code: "NOT_FOUND", message: "stray" }) });
    expect(await rejectionOf(fork.delete(id, props))).toBeInstanceOf(NotFoundError);
    expect(sim.service(ids.projectId, id)?.status).toBe("READY");
  });

  test("the API's 404 on GET while the project's list still holds the service is not gone", async () => {
    const { id, props } = await newFork();
    sim.injectFault("getService", { kind: "status", status: 404, body: JSON.stringify({ code: "NOT_FOUND", message: "flaky" }) });
    const err = await rejectionOf(fork.read(id, props));
    expect(err).toBeInstanceOf(TigerCloudError);
    expect(err.message).toMatch(/service list still holds it/);
  });

  test("the API's 404 while the list cannot be read is not gone", async () => {
    const { id, props } = await newFork();
    sim.outOfBand.deleteService(ids.projectId, id);
    sim.injectFault("listServices", { kind: "status", status: 503 }, 10);
    const err = await rejectionOf(fork.read(id, props));
    expect(err.message).toMatch(/not taken for gone/);
    sim.clearFaults();
    expect(await fork.read(id, props)).toEqual({});
  });

  test("a fork deleted elsewhere: read says gone, and destroy succeeds on the confirmed 404 without sending stop", async () => {
    const { id, props } = await newFork();
    sim.outOfBand.deleteService(ids.projectId, id);
    expect(await fork.read(id, props)).toEqual({});
    sim.clearLog();
    await fork.delete(id, props);
    expect(sim.requests().map((r) => r.operation)).toEqual(["getService", "listServices"]);
  });

  test("VpcName: a stray API 404 is read again; two 404s with the service list answering mean gone", async () => {
    const props = { __provider: P, projectId: ids.projectId, vpcId: ids.vpcId, name: "main-vpc" };
    sim.injectFault("getVpc", { kind: "status", status: 404, body: JSON.stringify({ code: "NOT_FOUND", message: "flaky" }) });
    expect((await vpc.read(ids.vpcId, props)).props).toMatchObject({ name: "main-vpc" });
    expect(await vpc.read("999", { ...props, vpcId: "999" })).toEqual({});
    expect(sim.requests().map((r) => r.operation)).toEqual(["getVpc", "listServices", "getVpc", "getVpc", "listServices", "getVpc"]);
  });

  test("ServiceHA: a service deleted elsewhere is gone; an HTML 404 is an error", async () => {
    const haProps = { __provider: P, projectId: ids.projectId, serviceId: ids.serviceId, replicaCount: 1 };
    sim.injectFault("getService", { kind: "status", status: 404, body: "" });
    expect(await rejectionOf(ha.read(ids.serviceId, haProps))).toBeInstanceOf(NotFoundError);
    sim.outOfBand.deleteService(ids.projectId, ids.serviceId);
    expect(await ha.read(ids.serviceId, haProps)).toEqual({});
  });
});

describe("time limits are limits", () => {
  test("a createTimeout of 2 s ends within it plus one request timeout, though every read hangs", async () => {
    setHostOptions({ client: { requestTimeoutMs: 1500, baseDelayMs: 1, maxDelayMs: 5 }, poll: { firstPollMs: 20, maxPollMs: 50 } });
    sim.delays = { ...sim.delays, forkQueuedMs: 60_000 };
    const { inputs } = await fork.check({}, { __provider: P, sourceServiceId: ids.serviceId, forkStrategy: "NOW", createTimeout: "2s" });
    sim.injectFault("getService", { kind: "hang" }, 1000);
    const started = Date.now();
    const err = await rejectionOf(fork.create(inputs));
    const took = Date.now() - started;
    expect(err).toBeInstanceOf(PartialFailureError);
    expect(err.message).toMatch(/Timed out after \d+ s waiting for service svc-\w+ to be READY.*Raise createTimeout/);
    expect(took).toBeLessThan(2000 + 1500 + 700);
  });

  test("a wait whose last reads fail still names the status last seen", async () => {
    setHostOptions({ client: { requestTimeoutMs: 500, baseDelayMs: 1, maxDelayMs: 5 }, poll: { firstPollMs: 20, maxPollMs: 50 } });
    sim.delays = { ...sim.delays, forkQueuedMs: 60_000 };
    const { inputs } = await fork.check({}, { __provider: P, sourceServiceId: ids.serviceId, forkStrategy: "NOW", createTimeout: "2s" });
    const creating = rejectionOf(fork.create(inputs));
    // The wait's first read of the new fork answers (QUEUED); every read after it hangs.
    const readOfFork = () => sim.requests().some((r) => r.operation === "getService" && !r.path.endsWith(`/${ids.serviceId}`));
    while (!readOfFork()) await new Promise((resolve) => setTimeout(resolve, 10));
    sim.injectFault("getService", { kind: "hang" }, 1000);
    const err = await creating;
    expect(err).toBeInstanceOf(PartialFailureError);
    expect(err.message).toMatch(/to be READY; the last read failed: .+; it was last seen QUEUED\. Raise createTimeout/);
  });
});

describe("errors", () => {
  test("a partial failure is a TigerCloudError carrying the fork, its password out of every printed form", async () => {
    sim.delays = { ...sim.delays, forkQueuedMs: 60_000 };
    const err = await rejectionOf(newFork({ createTimeout: "1s" }));
    expect(err).toBeInstanceOf(PartialFailureError);
    expect(err).toBeInstanceOf(TigerCloudError);
    const partial = err as DynamicPartialFailure;
    const password = partial.properties.initialPassword as string;
    expect(password).toEqual(expect.any(String));
    expect(partial.properties).toMatchObject({ serviceId: partial.id, __provider: P });
    expect(partial.reasons).toEqual([partial.message]);
    expectNoSecretFragments(errorTexts(err), [password]);
  });

  test("a fork answer without service_id is a ForkOutcomeUnknownError; its password is not quoted", async () => {
    const password = "Pw-4f8e2a91c0d7b3e6a5f4c2d1";
    sim.injectFault("forkService", { kind: "status", status: 202, body: JSON.stringify({ status: "QUEUED", initial_password: password }) });
    const err = await rejectionOf(newFork());
    expect(err).toBeInstanceOf(ForkOutcomeUnknownError);
    expectNoSecretFragments(errorTexts(err), [password]);
  });
});

describe("a new package version is an update with no API call", () => {
  const made: Record<string, () => Promise<[Required<pulumi.dynamic.ResourceProvider>, Record<string, unknown>]>> = {
    ServiceFork: async () => [fork, { sourceServiceId: ids.serviceId, forkStrategy: "NOW", name: "pr-7" }],
    ServiceHA: async () => [ha, { serviceId: ids.serviceId, replicaCount: 2 }],
    VpcName: async () => [vpc, { vpcId: ids.vpcId, name: "declared" }],
  };
  test.each(Object.keys(made))("%s", async (kind) => {
    const [provider, args] = await (made[kind] as () => Promise<[Required<pulumi.dynamic.ResourceProvider>, Record<string, unknown>]>)();
    const { id, outs } = await provider.create((await provider.check({}, { __provider: P, ...args })).inputs);
    const olds = { ...outs, __provider: P };
    // A change made in the console that nobody refreshed must not be undone by a version bump.
    if (kind === "VpcName") sim.outOfBand.renameVpc(ids.projectId, ids.vpcId, "console-name");
    if (kind === "ServiceHA") sim.outOfBand.setHA(ids.projectId, ids.serviceId, 1, 0);
    const news = (await provider.check(olds, { __provider: "the next release", ...args })).inputs;
    expect(await provider.diff(id, olds, news)).toMatchObject({ changes: true, replaces: [] });
    sim.clearLog();
    const update = await provider.update(id, olds, news);
    expect(sim.requests()).toEqual([]);
    expect(update.outs).toEqual(outs);
  });
});

describe("secrets never leak, not even in part", () => {
  test("a fork whose database quotes the password in every refusal: the login wait ends as a partial failure holding the connection URIs, and no fragment of the password, whole or percent-encoded, is in its error or the progress lines", async () => {
    setHostOptions({
      client: { baseDelayMs: 1, maxDelayMs: 5 },
      poll: { firstPollMs: 20, maxPollMs: 50 },
      login: { firstDelayMs: 20, maxDelayMs: 50 },
    });
    sim.databases.echoPasswordInErrors = true;
    const run = await stderrOf(() => newFork({ createTimeout: "2s" }));
    const err = run.error as DynamicPartialFailure;
    expect(err).toBeInstanceOf(PartialFailureError);
    expect(err.message).toMatch(/Timed out after \d+ s waiting for a login to service svc-\w+/);
    const { initialPassword, connectionUri, poolerConnectionUri, loginPending } = err.properties;
    expect(loginPending).toBe(true);
    expect(connectionUri).toContain(encodeURIComponent(initialPassword as string));
    expect(poolerConnectionUri).toEqual(expect.stringMatching(/^postgresql:\/\/tsdbadmin:/));
    expect(run.text).toMatch(/with password "\[REDACTED\]"/);
    expectNoSecretFragments([run.text, ...errorTexts(err)], [initialPassword as string, encodeURIComponent(initialPassword as string)]);
  });

  test("a create recorded before READY, finished by the next up, whose login wait fails: the login stays pending for the up after", async () => {
    setHostOptions({
      client: { baseDelayMs: 1, maxDelayMs: 5 },
      poll: { firstPollMs: 20, maxPollMs: 50 },
      login: { firstDelayMs: 20, maxDelayMs: 50 },
    });
    const { id, props } = await newFork({ createTimeout: "1s" });
    // As a partial failure records a fork still QUEUED (the engine's state after a failed wait).
    const olds = { ...props, status: "QUEUED" };
    const news = (
      await fork.check(olds, { __provider: P, sourceServiceId: ids.serviceId, forkStrategy: "NOW", name: "pr-7", createTimeout: "1s" })
    ).inputs;
    sim.databases.echoPasswordInErrors = true;
    const err = await rejectionOf(fork.update(id, olds, news));
    expect(err).toBeInstanceOf(PartialFailureError);
    expect((err as DynamicPartialFailure).properties).toMatchObject({ status: "READY", loginPending: true });
  });

  test.each(["an API key", "a public/secret key pair"])(
    "with %s, an API that echoes the Authorization header in every error: no 6-character fragment of a credential or the password in errors or progress lines",
    async (credential) => {
      const keyPair = { publicKey: "pk-7Hq2Lx9Wm4Rt", secretKey: "sk-Zp3Vn8Ke1Yb6Jd5Uc0" };
      const basic = Buffer.from(`${keyPair.publicKey}:${keyPair.secretKey}`).toString("base64");
      if (credential !== "an API key") {
        await sim.stop();
        sim = new Simulator({ keyPair });
        await sim.start();
        await configureProviders({
          "tigercloud:apiUrl": sim.url,
          "tigercloud:publicKey": keyPair.publicKey,
          "tigercloud:secretKey": keyPair.secretKey,
          "tigercloud:projectId": ids.projectId,
        });
      }
      const authorization = credential === "an API key" ? `Bearer ${sim.apiKey}` : `Basic ${basic}`;
      // The credential straddles the 200th character, where a quoted body is cut.
      const echo = `<html><pre>Authorization: ${authorization}</pre>${"x".repeat(116)}${authorization}</html>`;
      const secrets = credential === "an API key" ? [sim.apiKey] : [keyPair.secretKey, basic];
      const runs = [
        await stderrOf(async () => {
          const { id, props } = await newFork({ waitForReady: false });
          secrets.push(props.initialPassword as string);
          sim.injectFault("getService", { kind: "status", status: 503, body: echo }, 1000);
          sim.injectFault("stop", { kind: "status", status: 500, body: echo }, 1000);
          await Promise.allSettled([fork.read(id, props), fork.delete(id, props)]);
          await fork.read(id, props);
        }),
        await stderrOf(() => {
          sim.injectFault("getVpc", { kind: "status", status: 503, body: echo }, 1000);
          return vpc.read(ids.vpcId, { __provider: P, projectId: ids.projectId, vpcId: ids.vpcId, name: "n" });
        }),
        await stderrOf(() => {
          sim.injectFault("forkService", { kind: "status", status: 502, body: echo });
          return newFork({ name: "pr-8" });
        }),
      ];
      for (const run of runs) expect(run.error).toBeInstanceOf(TigerCloudError);
      expect(runs[0]?.text).toMatch(/retrying/);
      expect(secrets).toHaveLength(credential === "an API key" ? 2 : 3);
      expectNoSecretFragments(
        runs.flatMap((run) => [run.text, ...errorTexts(run.error)]),
        secrets,
      );
    },
  );
});
