// The simulator as `npm run simulator` serves it (a child process), its validation rules, which
// mirror the real service's, and its routing and faults, which mirror a real gateway's.
import { spawn, spawnSync, type ChildProcess } from "child_process";
import * as path from "path";
import * as readline from "readline";
import { DEFAULT_SEED, Simulator } from "../../../simulator";

describe("tigercloud-simulator (npm run simulator here)", () => {
  let child: ChildProcess;
  afterEach(() => {
    child?.kill("SIGTERM");
  });

  test("prints one JSON line (the bearer key and the key pair) and an export line with the key pair only; serves the seeded VPC to either, 401 to a wrong one", async () => {
    child = spawn(
      process.execPath,
      ["-r", "ts-node/register/transpile-only", path.join(__dirname, "..", "..", "..", "simulator", "main.ts"), "--fast", "--stand-in"],
      {
        cwd: path.join(__dirname, "..", "..", ".."),
      },
    );
    const lines: string[] = [];
    await new Promise<void>((resolve, reject) => {
      const reader = readline.createInterface({ input: child.stdout as NodeJS.ReadableStream });
      reader.on("line", (line) => {
        lines.push(line);
        if (lines.length === 2) resolve();
      });
      child.once("exit", (code) => reject(new Error(`simulator exited with ${code}`)));
    });
    const info = JSON.parse(lines[0] as string) as Record<string, string>;
    expect(Object.keys(info).sort()).toEqual(["apiKey", "projectId", "publicKey", "secretKey", "serviceId", "url", "vpcId"]);
    expect(lines[1]).toBe(
      `export TIGER_API_URL=${info.url} TIGER_PUBLIC_KEY=${info.publicKey} TIGER_SECRET_KEY=${info.secretKey} TIGER_PROJECT_ID=${info.projectId}`,
    );

    const vpcUrl = `${info.url}/projects/${info.projectId}/vpcs/${info.vpcId}`;
    const basic = `Basic ${Buffer.from(`${info.publicKey}:${info.secretKey}`).toString("base64")}`;
    for (const authorization of [`Bearer ${info.apiKey}`, basic]) {
      const ok = await fetch(vpcUrl, { headers: { Authorization: authorization } });
      expect(ok.status).toBe(200);
      expect(await ok.json()).toEqual({ id: info.vpcId, cidr: "10.0.0.0/16", name: "main-vpc", region_code: "us-east-1" });
    }
    const denied = await fetch(vpcUrl, { headers: { Authorization: "Bearer wrong" } });
    expect(denied.status).toBe(401);
    expect(await denied.json()).toEqual({ code: "UNAUTHORIZED", message: expect.any(String) });
  }, 30_000);

  test("--help and -h print the usage and every option, --version the version; an unknown option, or half a key pair: exit 2", () => {
    const cli = path.join(__dirname, "..", "..", "..", "simulator", "main.ts");
    const run = (...args: string[]) =>
      spawnSync(process.execPath, ["-r", "ts-node/register/transpile-only", cli, ...args], {
        encoding: "utf8",
        cwd: path.join(__dirname, "..", "..", ".."),
      });
    const help = run("--help");
    expect(help.status).toBe(0);
    for (const option of ["--port", "--seed", "--fast", "--api-key", "--public-key", "--secret-key", "--stand-in", "--help", "--version"])
      expect(help.stdout).toContain(option);
    expect(run("-h").stdout).toBe(help.stdout);
    const version = run("--version");
    expect(version.status).toBe(0);
    expect(version.stdout).toMatch(/^tigercloud-simulator \(pulumi-tigercloud\) \d+\.\d+\.\d+\n$/);
    const unknown = run("--nope");
    expect(unknown.status).toBe(2);
    expect(unknown.stderr).toMatch(/unknown option "--nope"[\s\S]*Usage: tigercloud-simulator/);
    const half = run("--public-key", "pk-only");
    expect(half.status).toBe(2);
    expect(half.stderr).toMatch(/--public-key and --secret-key go together/);
  }, 30_000);
});

describe("the API as the official tiger CLI uses it", () => {
  const keyPair = { publicKey: "pk-cli-1", secretKey: "sk-cli-1" };
  let sim: Simulator;
  beforeEach(async () => {
    sim = new Simulator({ keyPair, seed: { projects: [{ ...DEFAULT_SEED.projects[0]!, name: "Acme" }] } });
    await sim.start();
  });
  afterEach(() => sim.stop());
  const basic = `Basic ${Buffer.from(`${keyPair.publicKey}:${keyPair.secretKey}`).toString("base64")}`;
  const call = (method: string, p: string, authorization = basic, body?: unknown) =>
    fetch(`${sim.url}/public/api/v1${p}`, {
      method,
      headers: { Authorization: authorization, ...(body === undefined ? {} : { "Content-Type": "application/json" }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });

  test.each(["a key pair (HTTP Basic)", "a bearer key"])(
    "GET /auth/info with %s: the key's project, in the published shape; a wrong key 401",
    async (how) => {
      const answer = await call("GET", "/auth/info", how === "a bearer key" ? `Bearer ${sim.apiKey}` : basic);
      expect(answer.status).toBe(200);
      const key = {
        public_key: keyPair.publicKey,
        name: expect.any(String),
        created: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/),
        project: { id: sim.defaults().projectId, name: "Acme", plan_type: expect.any(String) },
        issuing_user: { id: expect.any(String), name: expect.any(String), email: expect.stringContaining("@") },
      };
      expect(await answer.json()).toEqual({ type: "apiKey", api_key: key, apiKey: key });
      expect((await call("GET", "/auth/info", `Basic ${Buffer.from("pk-cli-1:wrong").toString("base64")}`)).status).toBe(401);
      expect(sim.requests("authInfo")).toHaveLength(2);
    },
  );

  test("GET /projects: the key's own project only; the VPC list; analytics answered 200 and recorded nowhere", async () => {
    expect(await (await call("GET", "/projects")).json()).toEqual([{ id: sim.defaults().projectId, name: "Acme", plan_type: "FREE" }]);
    const vpcs = await call("GET", `/projects/${sim.defaults().projectId}/vpcs`);
    expect(vpcs.status).toBe(200);
    expect(await vpcs.json()).toEqual([{ id: sim.defaults().vpcId, cidr: "10.0.0.0/16", name: "main-vpc", region_code: "us-east-1" }]);
    sim.clearLog();
    for (const p of ["/analytics/identify", "/analytics/track"]) {
      const answer = await call("POST", p, basic, { event: "service_list", properties: { output: "json" } });
      expect(answer.status).toBe(200);
    }
    expect(sim.requests()).toEqual([]);
  });

  test("an operation of the API the simulator lacks: 501 with a JSON error naming it; a path the API does not have: the gateway's HTML 404", async () => {
    const { projectId, serviceId, vpcId } = sim.defaults();
    for (const [method, p, operation] of [
      ["GET", `/projects/${projectId}/services/${serviceId}/replicaSets`, "getReplicaSets"],
      ["GET", `/projects/${projectId}/vpcs/${vpcId}/peerings`, "getVPCPeerings"],
      ["GET", `/projects/${projectId}/services/${serviceId}/logs`, "getServiceLogs"],
      ["POST", `/projects/${projectId}/services/${serviceId}/metrics/series`, "getServiceMetricsSeries"],
    ] as const) {
      const answer = await call(method, p);
      expect(answer.status).toBe(501);
      expect(answer.headers.get("content-type")).toMatch(/application\/json/);
      expect(await answer.json()).toEqual({ code: "NOT_IMPLEMENTED", message: expect.stringContaining(operation) });
    }
    expect(await (await call("GET", `/projects/${projectId}/services/${serviceId}/replicaSets`)).json()).toEqual({
      code: "NOT_IMPLEMENTED",
      message:
        "getReplicaSets (GET /projects/{project_id}/services/{service_id}/replicaSets) is part of the Tiger Cloud API but not of this simulator",
    });
    const unknown = await call("GET", `/projects/${projectId}/teapots`);
    expect(unknown.status).toBe(404);
    expect(unknown.headers.get("content-type")).toMatch(/text\/html/);
  });

  test("no request brings it down: a path no URL parser takes, a bad percent-encoding, a client gone mid-body", async () => {
    const net = await import("net");
    const { port } = new URL(sim.url);
    const raw = (text: string) =>
      new Promise<string>((resolve) => {
        const socket = net.connect(Number(port), "127.0.0.1", () => socket.end(text));
        let got = "";
        socket.on("data", (d) => (got += d.toString()));
        socket.on("close", () => resolve(got));
        socket.on("error", () => resolve(got));
      });
    expect(await raw("GET // HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")).toMatch(/^HTTP\/1\.1 404/);
    const bad = await call("GET", `/projects/%E0/services`);
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ code: "INVALID_PATH" });
    // A body announced longer than sent, then the connection closed.
    await new Promise<void>((resolve) => {
      const socket = net.connect(Number(port), "127.0.0.1", () => {
        socket.write(
          `POST /projects/${sim.defaults().projectId}/services HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"na`,
        );
        setTimeout(() => socket.destroy(), 50);
      });
      socket.on("close", () => resolve());
      socket.on("error", () => resolve());
    });
    expect((await call("GET", "/auth/info")).status).toBe(200);
  });

  test("POST /projects/{p}/services: 202 with the initial password, QUEUED, then READY; listed; a service without a name is a 400", async () => {
    sim.delays = { ...sim.delays, forkQueuedMs: 100, forkConfiguringMs: 100 };
    const answer = await call("POST", `/projects/${sim.defaults().projectId}/services`, basic, {
      name: "made-by-cli",
      addons: ["time-series"],
    });
    expect(answer.status).toBe(202);
    const made = (await answer.json()) as { service_id: string; status: string; initial_password: string; service_type: string };
    expect(made).toMatchObject({ status: "QUEUED", service_type: "TIMESCALEDB", initial_password: expect.any(String) });
    for (const until = Date.now() + 5000; sim.service(sim.defaults().projectId, made.service_id)?.status !== "READY" && Date.now() < until;)
      await new Promise((r) => setTimeout(r, 20));
    const listed = (await (await call("GET", `/projects/${sim.defaults().projectId}/services`)).json()) as {
      service_id: string;
      status: string;
    }[];
    expect(listed.find((s) => s.service_id === made.service_id)?.status).toBe("READY");
    expect((await call("POST", `/projects/${sim.defaults().projectId}/services`, basic, { addons: ["time-series"] })).status).toBe(400);
  });
});

describe("validation like the real service", () => {
  let sim: Simulator;
  let ids: { projectId: string; serviceId: string; vpcId: string };
  beforeEach(async () => {
    sim = new Simulator();
    await sim.start();
    ids = sim.defaults();
  });
  afterEach(async () => {
    await sim.stop();
  });

  const post = async (suffix: string, body?: unknown) => {
    const res = await fetch(`${sim.url}/projects/${ids.projectId}/services/${ids.serviceId}/${suffix}`, {
      method: "POST",
      headers: { Authorization: `Bearer ${sim.apiKey}`, ...(body === undefined ? {} : { "Content-Type": "application/json" }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };

  test.each([
    [{}, "fork_strategy"],
    [{ fork_strategy: "PITR" }, "target_time: required"],
    [{ fork_strategy: "PITR", target_time: "2026-13-01" }, "RFC 3339"],
    [{ fork_strategy: "PITR", target_time: "2999-01-01T00:00:00Z" }, "future"],
    [{ fork_strategy: "NOW", name: "" }, "1 to 128"],
    [{ fork_strategy: "NOW", name: "n".repeat(129) }, "1 to 128"],
    [{ fork_strategy: "NOW", cpu_millis: 1000 }, "cpu_millis"],
    [{ fork_strategy: "NOW", environment_tag: "QA" }, "environment_tag"],
  ])("forkService %j: 400 mentioning %s", async (body, fragment) => {
    const res = await post("forkService", body);
    expect(res.status).toBe(400);
    expect(res.body.message).toContain(fragment);
  });

  test("a fork: 202, QUEUED -> CONFIGURING -> READY over time, inherits, 0 HA, fresh password", async () => {
    sim.delays = { ...sim.delays, forkQueuedMs: 300, forkConfiguringMs: 300 };
    const sent = Date.now();
    const res = await post("forkService", { fork_strategy: "NOW" });
    expect(res.status).toBe(202);
    expect(res.body).toMatchObject({
      status: "QUEUED",
      name: "production-db-fork",
      service_type: "TIMESCALEDB",
      region_code: "us-east-1",
      ha_replicas: { replica_count: 0, sync_replica_count: 0 },
    });
    const id = res.body.service_id as string;
    // Its statuses are its timeline's, read by the clock (no timer to miss): each from when it begins.
    const timeline = sim.service(ids.projectId, id)?.timeline ?? [];
    const created = timeline[0]?.at ?? 0;
    expect(created).toBeGreaterThanOrEqual(sent);
    expect(timeline.map((x) => [x.status, x.at - created])).toEqual([
      ["QUEUED", 0],
      ["CONFIGURING", 300],
      ["READY", 600],
    ]);
    // What the API answers follows it: READY once its time has come, never before.
    let status = "";
    while (status !== "READY" && Date.now() - sent < 5000) {
      const asked = Date.now();
      const answer = await fetch(`${sim.url}/projects/${ids.projectId}/services/${id}`, {
        headers: { Authorization: `Bearer ${sim.apiKey}` },
      });
      status = ((await answer.json()) as { status: string }).status;
      const answered = Date.now();
      expect(["QUEUED", "CONFIGURING", "READY"]).toContain(status);
      if (status === "QUEUED") expect(asked).toBeLessThan(created + 300);
      if (status === "CONFIGURING") expect([answered >= created + 300, asked < created + 600]).toEqual([true, true]);
      if (status === "READY") expect(answered).toBeGreaterThanOrEqual(created + 600);
      await new Promise((r) => setTimeout(r, 10));
    }
    expect(status).toBe("READY");
    const again = await post("forkService", { fork_strategy: "NOW" });
    expect(again.body.initial_password).not.toBe(res.body.initial_password);
  });

  test.each([
    [{}, "at least one"],
    [{ replica_count: -1 }, "integer >= 0"],
    [{ replica_count: 1.5 }, "integer >= 0"],
    [{ replica_count: 3 }, "0, 1 or 2"],
    [{ replica_count: 1, sync_replica_count: 1 }, "1 only with 2 replicas"],
  ])("setHA %j: 400 mentioning %s", async (body, fragment) => {
    const res = await post("setHA", body);
    expect(res.status).toBe(400);
    expect(res.body.message).toContain(fragment);
  });

  test("setHA 202 then CONFIGURING -> READY; stop 202 then PAUSING -> PAUSED; stopping a paused service is 400; unknown IDs 404", async () => {
    // Long enough that the second request lands inside CONFIGURING on a busy machine; the ends
    // of the transitions are polled for, not slept through.
    sim.delays = { ...sim.delays, setHAMs: 1000, stopMs: 300 };
    const statusBecomes = async (status: string) => {
      for (const until = Date.now() + 5000; sim.service(ids.projectId, ids.serviceId)?.status !== status && Date.now() < until;)
        await new Promise((r) => setTimeout(r, 20));
      return sim.service(ids.projectId, ids.serviceId)?.status;
    };
    const ha = await post("setHA", { replica_count: 2, sync_replica_count: 1 });
    expect(ha).toMatchObject({ status: 202, body: { status: "CONFIGURING", ha_replicas: { replica_count: 2, sync_replica_count: 1 } } });
    expect((await post("setHA", { replica_count: 2, sync_replica_count: 0 })).status).toBe(409);
    expect(await statusBecomes("READY")).toBe("READY");
    expect((await post("stop")).body.status).toBe("PAUSING");
    expect(await statusBecomes("PAUSED")).toBe("PAUSED");
    expect((await post("stop")).status).toBe(400);
    const missing = await fetch(`${sim.url}/projects/${ids.projectId}/services/svc-nope`, {
      headers: { Authorization: `Bearer ${sim.apiKey}` },
    });
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({ code: "NOT_FOUND" });
  });

  test("DELETE: 202 with no body, DELETING -> DELETED, then GET 404 and gone from the list; a busy service 409; unknown IDs 404", async () => {
    // DELETING long enough to be seen on a busy machine, then polled for DELETED.
    sim.delays = { ...sim.delays, forkQueuedMs: 0, forkConfiguringMs: 0, deleteMs: 1000 };
    const id = (await post("forkService", { fork_strategy: "NOW", name: "doomed" })).body.service_id as string;
    const del = (serviceId: string) =>
      fetch(`${sim.url}/projects/${ids.projectId}/services/${serviceId}`, {
        method: "DELETE",
        headers: { Authorization: `Bearer ${sim.apiKey}` },
      });
    const get = (serviceId: string) =>
      fetch(`${sim.url}/projects/${ids.projectId}/services/${serviceId}`, { headers: { Authorization: `Bearer ${sim.apiKey}` } });

    sim.outOfBand.holdBusy(ids.projectId, id, "CONFIGURING");
    expect((await del(id)).status).toBe(409);
    sim.outOfBand.releaseBusy(ids.projectId, id);
    expect(sim.service(ids.projectId, id)?.status).toBe("READY");

    const answer = await del(id);
    expect(answer.status).toBe(202);
    expect(await answer.text()).toBe("");
    expect(sim.service(ids.projectId, id)?.status).toBe("DELETING");
    // Sent again while it is deleting (a retry after a lost answer): the same 202, nothing more.
    expect((await del(id)).status).toBe(202);
    for (const until = Date.now() + 5000; sim.service(ids.projectId, id)?.status === "DELETING" && Date.now() < until;)
      await new Promise((r) => setTimeout(r, 20));
    expect(sim.service(ids.projectId, id)?.status).toBe("DELETED");
    expect((await get(id)).status).toBe(404);
    const listed = await fetch(`${sim.url}/projects/${ids.projectId}/services`, { headers: { Authorization: `Bearer ${sim.apiKey}` } });
    const list = (await listed.json()) as { service_id: string }[];
    expect(list.map((s) => s.service_id)).not.toContain(id);
    expect(list.map((s) => s.service_id)).toContain(ids.serviceId);
    // Deleted is final: a second DELETE is the API's JSON 404.
    const again = await del(id);
    expect(again.status).toBe(404);
    expect(await again.json()).toMatchObject({ code: "NOT_FOUND" });
    expect((await del("svc-nope")).status).toBe(404);
  });

  describe("updatePassword", () => {
    const updatePassword = (serviceId: string) =>
      fetch(`${sim.url}/projects/${ids.projectId}/services/${serviceId}/updatePassword`, {
        method: "POST",
        headers: { Authorization: `Bearer ${sim.apiKey}`, "Content-Type": "application/json" },
        body: JSON.stringify({ password: "a-new-password-1" }),
      });

    test("a service that does not exist, or no longer does: the API's JSON 404, and no password set", async () => {
      const missing = await updatePassword("svc-nope");
      expect(missing.status).toBe(404);
      expect(missing.headers.get("content-type")).toMatch(/application\/json/);
      expect(await missing.json()).toEqual({ code: "NOT_FOUND", message: "service svc-nope not found" });

      const before = sim.service(ids.projectId, ids.serviceId)?.initial_password;
      sim.outOfBand.setStatus(ids.projectId, ids.serviceId, "DELETED");
      const deleted = await updatePassword(ids.serviceId);
      expect(deleted.status).toBe(404);
      expect(await deleted.json()).toEqual({ code: "NOT_FOUND", message: `service ${ids.serviceId} not found` });
      expect(sim.service(ids.projectId, ids.serviceId)?.initial_password).toBe(before);
    });
  });
});

describe("routes and faults like the real service", () => {
  let sim: Simulator;
  let ids: { projectId: string; serviceId: string; vpcId: string };
  beforeEach(async () => {
    sim = new Simulator();
    await sim.start();
    ids = sim.defaults();
  });
  afterEach(async () => {
    await sim.stop();
  });
  const get = (path: string, apiKey = sim.apiKey) => fetch(`${sim.url}${path}`, { headers: { Authorization: `Bearer ${apiKey}` } });

  test("GET /projects/{id}/services: 200, every service of the project, no password; an unknown project is the API's JSON 404", async () => {
    const fork = await fetch(`${sim.url}/projects/${ids.projectId}/services/${ids.serviceId}/forkService`, {
      method: "POST",
      headers: { Authorization: `Bearer ${sim.apiKey}`, "Content-Type": "application/json" },
      body: JSON.stringify({ fork_strategy: "NOW" }),
    });
    const forkId = ((await fork.json()) as { service_id: string }).service_id;
    const res = await get(`/projects/${ids.projectId}/services`);
    expect(res.status).toBe(200);
    const list = (await res.json()) as Record<string, unknown>[];
    expect(list.map((s) => s.service_id).sort()).toEqual([ids.serviceId, forkId].sort());
    expect(list.every((s) => typeof s.status === "string" && !("initial_password" in s) && !("timeline" in s))).toBe(true);
    expect(sim.requests("listServices")).toHaveLength(1);

    const missing = await get("/projects/proj-nope/services");
    expect(missing.status).toBe(404);
    expect(missing.headers.get("content-type")).toMatch(/application\/json/);
    expect(await missing.json()).toMatchObject({ code: "NOT_FOUND" });
  });

  test("a path no route matches gets the gateway's HTML 404, whatever the credentials; a missing object under a route the API's JSON 404", async () => {
    for (const path of [`/wrong/base/projects/${ids.projectId}/services/${ids.serviceId}`, `/projects/${ids.projectId}/nothing`]) {
      for (const key of [sim.apiKey, "wrong"]) {
        const res = await get(path, key);
        expect(res.status).toBe(404);
        expect(res.headers.get("content-type")).toMatch(/text\/html/);
        expect(await res.text()).toMatch(/^<html>/);
      }
    }
    const missing = await get(`/projects/${ids.projectId}/vpcs/999`);
    expect(missing.status).toBe(404);
    expect(await missing.json()).toEqual({ code: "NOT_FOUND", message: "vpc 999 not found" });
  });

  test("trickle: 200 headers, then one byte at a time; its timer ends when the client closes, and at stop", async () => {
    const trickles = () => (sim as unknown as { faults: { trickles: Set<unknown> } }).faults.trickles.size;
    sim.injectFault("getVpc", { kind: "trickle", intervalMs: 20 }, 2);
    const res = await get(`/projects/${ids.projectId}/vpcs/${ids.vpcId}`);
    expect(res.status).toBe(200);
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    expect((await reader.read()).value?.length).toBeGreaterThanOrEqual(1);
    expect(trickles()).toBe(1);
    await reader.cancel();
    for (const until = Date.now() + 3000; trickles() > 0 && Date.now() < until;) await new Promise((r) => setTimeout(r, 20));
    expect(trickles()).toBe(0);

    const open = await get(`/projects/${ids.projectId}/vpcs/${ids.vpcId}`);
    expect(trickles()).toBe(1);
    await sim.stop();
    expect(trickles()).toBe(0);
    await open.body?.cancel().catch(() => undefined);
    sim = new Simulator();
    await sim.start();
  });

  test("huge: streams as fast as the client reads and counts what it wrote", async () => {
    sim.injectFault("getVpc", { kind: "huge", bytes: 1_000_000 });
    const res = await get(`/projects/${ids.projectId}/vpcs/${ids.vpcId}`);
    expect(res.status).toBe(200);
    expect((await res.arrayBuffer()).byteLength).toBe(1_000_000);
    expect(sim.hugeBytesWritten).toBe(1_000_000);
  });
});
