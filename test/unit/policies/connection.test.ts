// Connection URIs and the login probe (provider/policies/connection.ts): URIs that survive any password,
// a probe that backs off and keeps its deadline, and the probe for real against the simulator's
// stand-in database.
import { parse } from "pg-connection-string";
import { WaitError } from "../../../provider/errors";
import { type Attempt, connectionUri, nextLoginDelay, waitForLogin } from "../../../provider/policies/connection";
import type { HostOptions } from "../../../provider/context/context";
import { errorTexts, expectNoSecretFragments, rejectionOf, startProviderSim, stopProviderSim, testContext } from "../../support/helpers";
import type { Simulator } from "../../../simulator";

/** Stderr (the progress lines) while `run` runs. */
async function stderrOf<T>(run: () => Promise<T>): Promise<{ text: string; result: T | undefined; error: unknown }> {
  const chunks: string[] = [];
  const write = process.stderr.write.bind(process.stderr);
  process.stderr.write = ((chunk: string | Uint8Array) => chunks.push(String(chunk)) > 0) as typeof process.stderr.write;
  try {
    const result = await run();
    return { text: chunks.join(""), result, error: undefined };
  } catch (error) {
    return { text: chunks.join(""), result: undefined, error };
  } finally {
    process.stderr.write = write;
  }
}

/** The options this file's contexts are made with (fast backoff where a test sets them). */
let options: HostOptions = {};
const setOptions = (next: HostOptions) => {
  options = next;
};

describe("connectionUri", () => {
  const hostile = "p@ss:w/rd?#[]%&=+ é'\"\\ ";

  test("role and password are percent-encoded: every parser gets the password back exactly", () => {
    const uri = connectionUri({ host: "svc-1.proj.tsdb.cloud.timescale.com", port: 34567 }, hostile) as string;
    expect(uri).toMatch(/^postgresql:\/\/tsdbadmin:[^@/?#]+@svc-1\.proj\.tsdb\.cloud\.timescale\.com:34567\/tsdb\?sslmode=require$/);
    const url = new URL(uri);
    expect(decodeURIComponent(url.password)).toBe(hostile);
    expect(url.username).toBe("tsdbadmin");
    const pg = parse(uri);
    expect(pg).toMatchObject({
      user: "tsdbadmin",
      password: hostile,
      host: "svc-1.proj.tsdb.cloud.timescale.com",
      port: "34567",
      database: "tsdb",
    });
  });

  test("no password (an adopted fork): no password in the URI; no host or port: no URI; IPv6 in brackets", () => {
    expect(connectionUri({ host: "h", port: 5432 }, undefined)).toBe("postgresql://tsdbadmin@h:5432/tsdb?sslmode=require");
    expect(connectionUri({ host: "h" }, "pw")).toBeUndefined();
    expect(connectionUri(undefined, "pw")).toBeUndefined();
    expect(connectionUri({ host: "::1", port: 5432 }, "pw")).toBe("postgresql://tsdbadmin:pw@[::1]:5432/tsdb?sslmode=require");
  });
});

describe("the login probe", () => {
  const base = { serviceId: "svc-1", host: "127.0.0.1", port: 5432, timeoutInput: "createTimeout" };
  const failing = (reason: string, code?: string): Attempt => ({ ok: false, code, reason });

  test("backs off 0.25 s, 0.5 s, then every 1 s", () => {
    expect([0, 1, 2, 3, 4, 30].map((n) => nextLoginDelay(n))).toEqual([250, 500, 1000, 1000, 1000, 1000]);
  });

  test("a service the API gives no endpoint for is not tried: the error says how to wait for READY only", async () => {
    let attempts = 0;
    const wait = waitForLogin({
      ctx: testContext(options),
      ...base,
      host: undefined,
      password: "pw-123456",
      deadline: Date.now() + 60_000,
      attempt: async () => (attempts++, { ok: true }),
    });
    await expect(wait).rejects.toThrow(/gives no endpoint to log in to; set readyWhen: "status" to wait for READY only/);
    expect(attempts).toBe(0);
  });

  test("tries until a login works, pausing as the backoff says (as the README says: at once, then after 0.25 s, 0.5 s, then every 1 s), and says why it still waits (once per reason)", async () => {
    const results = [
      failing("connect ECONNREFUSED"),
      failing("connect ECONNREFUSED"),
      failing("Connection terminated unexpectedly"),
      failing("connect ECONNREFUSED"),
      failing("connect ECONNREFUSED"),
    ];
    const sleeps: number[] = [];
    const { text, result } = await stderrOf(() =>
      waitForLogin({
        ctx: testContext(options),
        ...base,
        password: "pw-123456",
        deadline: Date.now() + 60_000,
        attempt: async () => results.shift() ?? { ok: true },
        sleep: async (ms) => void sleeps.push(ms),
      }),
    );
    expect(result).toBe("logged-in");
    expect(sleeps).toEqual([250, 500, 1000, 1000, 1000]);
    const readme = require("fs").readFileSync(require("path").join(__dirname, "..", "..", "..", "README.md"), "utf8") as string;
    expect(readme.replace(/\s+/g, " ")).toContain("`SELECT 1`: at once, then after 0.25 s, 0.5 s, then every 1 s (`LOGIN_DEFAULTS`");
    // A database not up yet is said as such, not as an error; once, for the two ways it says so.
    expect(text.match(/its database is still starting, not taking logins yet/g)).toHaveLength(1);
    expect(text).not.toMatch(/Connection terminated|ECONNREFUSED/);
    expect(text).toMatch(/waiting until tsdbadmin can log in to tsdb at 127\.0\.0\.1:5432 \(readyWhen: "login"\)/);
    expect(text).toMatch(/tsdbadmin logged in and ran SELECT 1/);
  });

  test("keeps its deadline: each attempt gets only the time left, and the timeout names the inputs; no part of the password or URI in any text", async () => {
    setOptions({ login: { firstDelayMs: 10, maxDelayMs: 20 } });
    try {
      const password = "Sup3r-S3cret-Pa55word";
      const uri = connectionUri({ host: "127.0.0.1", port: 5432 }, password) as string;
      const budgets: number[] = [];
      const started = Date.now();
      const { text, error } = await stderrOf(() =>
        waitForLogin({
          ctx: testContext(options),
          ...base,
          password,
          deadline: started + 300,
          // A server (or driver) that quotes what it was given, whole and cut short.
          attempt: async (ms) => {
            budgets.push(ms);
            return failing(`FATAL: password "${password}" rejected for ${uri} (${password.slice(3, 12)})`, "28P01");
          },
        }),
      );
      const took = Date.now() - started;
      expect(error).toBeInstanceOf(WaitError);
      expect(String((error as Error).message)).toMatch(
        /^Timed out after 0 s waiting for a login to service svc-1 at 127\.0\.0\.1:5432 as tsdbadmin; the last attempt failed: .*\[REDACTED\].*Raise createTimeout, or set readyWhen: "status"/,
      );
      expect(took).toBeGreaterThanOrEqual(300);
      expect(took).toBeLessThan(1000);
      expect(budgets.length).toBeGreaterThan(3);
      expect(Math.max(...budgets)).toBeLessThanOrEqual(300);
      expectNoSecretFragments([text, ...errorTexts(error)], [password, encodeURIComponent(password)]);
      for (const t of [text, ...errorTexts(error)]) expect(t).not.toContain(uri);
    } finally {
      setOptions({});
    }
  });

  test("an attempt cut short by the deadline does not hide the real failure: the timeout also names the latest different failure", async () => {
    // Refused, then two attempts starved of time (the second pause is cut to the deadline).
    const results = [
      failing("connect ECONNREFUSED 127.0.0.1:5432", "ECONNREFUSED"),
      failing("timeout expired"),
      failing("timeout expired"),
    ];
    const budgets: number[] = [];
    // A virtual clock, moved only by the pauses: the same attempts under any load.
    let now = 1_000_000;
    jest.spyOn(Date, "now").mockImplementation(() => now);
    const { error } = await stderrOf(() =>
      waitForLogin({
        ctx: testContext(options),
        ...base,
        password: "pw-123456",
        deadline: now + 200,
        attempt: async (ms) => (budgets.push(ms), results.shift() ?? failing("timeout expired")),
        sleep: async (ms) => void (now += budgets.length === 1 ? 100 : ms),
      }),
    );
    jest.restoreAllMocks();
    expect(error).toBeInstanceOf(WaitError);
    expect(budgets).toEqual([200, 100, 1]);
    expect((error as Error).message).toMatch(
      /the last attempt, with 1 ms left, failed: timeout expired; before that, one failed: connect ECONNREFUSED 127\.0\.0\.1:5432\. It is READY/,
    );
  });

  test("without a known password, a server that refuses the login is up; with one, a refusal is waited through", async () => {
    const refused = failing('password authentication failed for user "tsdbadmin"', "28P01");
    const answered = await stderrOf(() =>
      waitForLogin({
        ctx: testContext(options),
        ...base,
        password: undefined,
        deadline: Date.now() + 1000,
        attempt: async () => refused,
        sleep: async () => undefined,
      }),
    );
    expect(answered.result).toBe("answered");
    expect(answered.text).toMatch(/password is not known \(an adopted fork\)/);
    expect(answered.text).toMatch(/answers and refuses a login without the password: taken as up/);

    let tries = 0;
    const known = await stderrOf(() =>
      waitForLogin({
        ctx: testContext(options),
        ...base,
        password: "pw-abcdef",
        deadline: Date.now() + 1000,
        attempt: async () => (++tries < 3 ? refused : { ok: true }),
        sleep: async () => undefined,
      }),
    );
    expect(known.result).toBe("logged-in");
    expect(tries).toBe(3);
  });
});

describe("the probe with node-postgres against the simulator's stand-in database", () => {
  let sim: Simulator;
  beforeEach(async () => {
    ({ sim } = await startProviderSim());
    setOptions({ login: { firstDelayMs: 20, maxDelayMs: 50 } });
  });
  afterEach(() => stopProviderSim(sim));

  test("the right password logs in over TLS; no password known: the refusal counts; a stopped service is waited for until the deadline", async () => {
    const { serviceId } = sim.defaults();
    const { endpoint } = sim.service(sim.defaults().projectId, serviceId)!;
    const spec = { serviceId, host: endpoint.host, port: endpoint.port, timeoutInput: "createTimeout" };
    const password = sim.databases.password(serviceId);
    expect(await waitForLogin({ ctx: testContext(options), ...spec, password, deadline: Date.now() + 5000 })).toBe("logged-in");
    expect(
      (await stderrOf(() => waitForLogin({ ctx: testContext(options), ...spec, password: undefined, deadline: Date.now() + 5000 }))).result,
    ).toBe("answered");

    sim.databases.stopServer(serviceId);
    const err = await rejectionOf(waitForLogin({ ctx: testContext(options), ...spec, password, deadline: Date.now() + 300 }));
    expect(err.message).toMatch(/ECONNREFUSED/);
  });

  test("a service's endpoints take ports below the kernel's ephemeral range, and a start after a stop listens on them again (README)", async () => {
    const { serviceId, projectId } = sim.defaults();
    const { endpoint, connection_pooler } = sim.service(projectId, serviceId)!;
    for (const port of [endpoint.port, connection_pooler?.endpoint.port]) {
      expect(port).toBeGreaterThanOrEqual(20000);
      expect(port).toBeLessThanOrEqual(32767);
    }
    const spec = { serviceId, host: endpoint.host, port: endpoint.port, timeoutInput: "createTimeout" };
    const password = sim.databases.password(serviceId);
    sim.databases.stopServer(serviceId);
    expect((await rejectionOf(waitForLogin({ ctx: testContext(options), ...spec, password, deadline: Date.now() + 300 }))).message).toMatch(
      /ECONNREFUSED/,
    );
    sim.databases.startServer(serviceId, 0);
    expect(await waitForLogin({ ctx: testContext(options), ...spec, password, deadline: Date.now() + 5000 })).toBe("logged-in");
  });

  test("a hostile server that quotes the password in its refusal: not a fragment of it in progress lines or the error", async () => {
    const { serviceId, projectId } = sim.defaults();
    const { endpoint } = sim.service(projectId, serviceId)!;
    const password = sim.databases.password(serviceId) as string;
    sim.databases.echoPasswordInErrors = true;
    const { text, error } = await stderrOf(() =>
      waitForLogin({
        ctx: testContext(options),
        serviceId,
        host: endpoint.host,
        port: endpoint.port,
        password,
        deadline: Date.now() + 2000,
        timeoutInput: "createTimeout",
      }),
    );
    expect(error).toBeInstanceOf(WaitError);
    expect(text).toMatch(/password authentication failed for user "tsdbadmin" with password "\[REDACTED\]"/);
    expectNoSecretFragments([text, ...errorTexts(error)], [password]);
  });
});
