// Stacks written by earlier versions of this package, upgraded: each state file (a real
// `pulumi stack export`, with the simulator's services as they were) is imported, and this version
// must read it as it stands: an unchanged preview shows no change and makes no request, an `up`
// writes nothing, and a refresh reads the fork, its HA and the VPC without error. Both hosts: a
// TypeScript program on the dynamic provider, and a YAML program on the provider plugin.
// Each fixture was made by the earlier version running this same file with
// PULUMI_TIGERCLOUD_WRITE_UPGRADE_FIXTURE=<host> in a checkout of it (the commit the fixture names,
// its imports pointed at that checkout's test helpers where they lived elsewhere).
import * as fs from "fs";
import * as path from "path";
import { NO_DELAYS, type SeedData, Simulator } from "../../simulator";
import { type EngineHarness, startEngine, tigercloud } from "../support/lab/harness";
import { type YamlLab, yamlLab } from "../support/lab/yaml";

jest.setTimeout(300_000);
const FIXTURES = path.join(__dirname, "fixtures");
const WRITE = process.env.PULUMI_TIGERCLOUD_WRITE_UPGRADE_FIXTURE;
const COMMIT = process.env.PULUMI_TIGERCLOUD_FIXTURE_COMMIT ?? "unknown";

interface Fixture {
  /** The commit of this repository that wrote the state. */
  writtenBy: string;
  seed: SeedData;
  deployment: unknown;
}

/** The fixtures of one host, oldest first: `state-<version>-<commit>[-plugin].json`. */
const fixturesOf = (host: "dynamic" | "plugin") =>
  fs
    .readdirSync(FIXTURES)
    .filter((f) => /^state-.*\.json$/.test(f) && f.endsWith("-plugin.json") === (host === "plugin"))
    .sort();

/** The simulator's state as a seed: the services and the VPC the stack refers to. */
function seedOf(sim: Simulator): SeedData {
  const { projectId, vpcId } = sim.defaults();
  return {
    projects: [
      {
        id: projectId,
        services: sim.services(projectId).map(({ timeline: _t, project_id: _p, ...service }) => service),
        vpcs: [sim.vpc(projectId, vpcId)].filter((v) => v !== undefined),
      },
    ],
  };
}

describe("a TypeScript program's stack, on the dynamic provider", () => {
  // A backend each: every fixture's stack is named "upgrade", as its resources' URNs say.
  let h: EngineHarness;
  beforeEach(async () => {
    h = await startEngine();
  });
  afterEach(async () => {
    await h?.close();
  });

  /** Every kind of resource, with the inputs a user most often sets. */
  const program = () => async () => {
    const { ServiceFork, ServiceHA, VpcName } = tigercloud();
    const fork = new ServiceFork("fork", {
      sourceServiceId: h.ids.serviceId,
      forkStrategy: "NOW",
      name: "upgrade-1",
      cpuMillis: 1000,
      memoryGbs: 4,
      environmentTag: "DEV",
    });
    new ServiceHA("ha", { serviceId: fork.serviceId, replicaCount: 1 });
    new VpcName("vpc", { vpcId: h.ids.vpcId, name: "upgraded" });
    return { serviceId: fork.serviceId, uri: fork.connectionUri };
  };

  if (WRITE === "dynamic") {
    test("writes the fixture of this version", async () => {
      const s = await h.stack("upgrade", program());
      await s.up();
      // As the backend holds it: secrets encrypted (with the harness's passphrase), not shown.
      const fixture: Fixture = { writtenBy: COMMIT, seed: seedOf(h.sim), deployment: JSON.parse(s.exportWithCli()) };
      fs.writeFileSync(path.join(FIXTURES, `state-0.1.0-${COMMIT}.json`), JSON.stringify(fixture, null, 2) + "\n");
    });
    return;
  }

  test.each(fixturesOf("dynamic"))("%s: no change and no request at preview, no write at up, a refresh that reads it all", async (file) => {
    const fixture = JSON.parse(fs.readFileSync(path.join(FIXTURES, file), "utf8")) as Fixture;
    h.sim.loadSeed(fixture.seed);
    const s = await h.stack("upgrade", program());
    await s.stack.importStack(fixture.deployment as Parameters<typeof s.stack.importStack>[0]);

    const preview = await s.preview();
    expect(preview.changes).toEqual({ same: 4 });
    expect(preview.requests).toEqual([]);
    const up = await s.up();
    expect(up.requests.filter((r) => r.method !== "GET")).toEqual([]);
    expect(up.outputs.serviceId?.value).toBe(fixture.seed.projects[0]?.services.find((x) => x.name === "upgrade-1")?.service_id);
    expect(up.outputs.uri).toMatchObject({ secret: true });
    const refresh = await s.refresh();
    expect(refresh.requests.filter((r) => r.method !== "GET")).toEqual([]);
    await s.stack.preview({ expectNoChanges: true });
  });
});

describe("a YAML program's stack, on the provider plugin", () => {
  let sim: Simulator;
  let lab: YamlLab;
  const ok = (cwd: string, args: string[]) => lab.ok(cwd, args);
  /** The three resources, as a YAML user declares them. */
  const program = () => {
    const { serviceId, vpcId } = sim.defaults();
    return `name: upgrade
runtime: yaml
resources:
  fork:
    type: tigercloud:index:ServiceFork
    properties:
      sourceServiceId: ${serviceId}
      forkStrategy: NOW
      name: upgrade-plugin
      cpuMillis: 1000
      memoryGbs: 4
      readyWhen: status
  ha:
    type: tigercloud:index:ServiceHA
    properties:
      serviceId: \${fork.serviceId}
      replicaCount: 1
  vpc:
    type: tigercloud:index:VpcName
    properties:
      vpcId: "${vpcId}"
      name: upgraded
outputs:
  serviceId: \${fork.serviceId}
`;
  };
  const project = (name: string) => lab.project(name, program());

  beforeAll(async () => {
    sim = new Simulator({ delays: { ...NO_DELAYS }, databases: "stand-in" });
    await sim.start();
    lab = await yamlLab(sim, "upgrade-plugin");
  });
  afterAll(async () => {
    await sim?.stop();
    lab?.close();
  });

  if (WRITE === "plugin") {
    test("writes the fixture of this version", async () => {
      const dir = await project("write");
      await ok(dir, ["up", "--yes"]);
      const deployment = JSON.parse(await ok(dir, ["stack", "export"])) as unknown;
      const fixture: Fixture = { writtenBy: COMMIT, seed: seedOf(sim), deployment };
      fs.writeFileSync(path.join(FIXTURES, `state-0.1.0-${COMMIT}-plugin.json`), JSON.stringify(fixture, null, 2) + "\n");
    });
    return;
  }

  test.each(fixturesOf("plugin"))("%s: no change and no request at preview, no write at up, a refresh that reads it all", async (file) => {
    const fixture = JSON.parse(fs.readFileSync(path.join(FIXTURES, file), "utf8")) as Fixture;
    sim.loadSeed(fixture.seed);
    const dir = await project(`read-${fixture.writtenBy}`);
    fs.writeFileSync(path.join(dir, "state.json"), JSON.stringify(fixture.deployment));
    await ok(dir, ["stack", "import", "--file", "state.json"]);

    sim.clearLog();
    const preview = await lab.run(dir, ["preview", "--expect-no-changes"]);
    expect(preview.output).toMatch(/4 unchanged/);
    expect(preview.status).toBe(0);
    expect(sim.requests()).toEqual([]);
    await ok(dir, ["up", "--yes"]);
    await ok(dir, ["refresh", "--yes", "--expect-no-changes"]);
    expect(sim.requests().filter((r) => r.method !== "GET")).toEqual([]);
    expect((await ok(dir, ["stack", "output", "serviceId"])).trim()).toBe(
      fixture.seed.projects[0]?.services.find((x) => x.name === "upgrade-plugin")?.service_id,
    );
  });
});
