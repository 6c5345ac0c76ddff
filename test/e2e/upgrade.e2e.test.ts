// A stack written by an earlier version of this package, upgraded: its state file (a real
// `pulumi stack export`, with the simulator's services as they were) is imported, and this version
// must read it as it stands: an unchanged preview shows no change and makes no request, an `up`
// writes nothing, and a refresh reads the fork, its HA and the VPC without error.
// The fixture was made by the earlier version running this same file with
// PULUMI_TIGERCLOUD_WRITE_UPGRADE_FIXTURE=1 in a checkout of it (the commit the fixture names).
import * as fs from "fs";
import * as path from "path";
import type { SeedData } from "../../simulator";
import { type EngineHarness, startEngine, tigercloud } from "../support/lab/harness";

jest.setTimeout(300_000);
const FIXTURE = path.join(__dirname, "fixtures", "state-0.1.0-bd8a685.json");
const WRITE = process.env.PULUMI_TIGERCLOUD_WRITE_UPGRADE_FIXTURE === "1";

interface Fixture {
  /** The commit of this repository that wrote the state. */
  writtenBy: string;
  seed: SeedData;
  deployment: unknown;
}

let h: EngineHarness;
beforeAll(async () => {
  h = await startEngine();
});
afterAll(async () => {
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

test("a stack written by the landed version: no change and no request at preview, no write at up, a refresh that reads it all", async () => {
  const s = await h.stack("upgrade", program());
  if (WRITE) {
    await s.up();
    const { projectId } = h.ids;
    const fixture: Fixture = {
      writtenBy: process.env.PULUMI_TIGERCLOUD_FIXTURE_COMMIT ?? "unknown",
      seed: {
        projects: [
          {
            id: projectId,
            services: h.sim.services(projectId).map(({ timeline: _t, project_id: _p, ...service }) => service),
            vpcs: [h.sim.vpc(projectId, h.ids.vpcId)].filter((v) => v !== undefined),
          },
        ],
      },
      // As the backend holds it: secrets encrypted (with the harness's passphrase), not shown.
      deployment: JSON.parse(s.exportWithCli()) as unknown,
    };
    fs.mkdirSync(path.dirname(FIXTURE), { recursive: true });
    fs.writeFileSync(FIXTURE, JSON.stringify(fixture, null, 2) + "\n");
    return;
  }
  const fixture = JSON.parse(fs.readFileSync(FIXTURE, "utf8")) as Fixture;
  h.sim.loadSeed(fixture.seed);
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
