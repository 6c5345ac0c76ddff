// Every program in examples/ (the demo that the root Pulumi.yaml runs among them), run as a user
// runs it, on the real engine against the simulator: preview, up, destroy.
import * as fs from "fs";
import * as path from "path";
import { type EngineHarness, startEngine } from "./harness";

jest.setTimeout(240_000);
const EXAMPLES = path.join(__dirname, "..", "..", "examples");
let h: EngineHarness;
beforeAll(async () => {
  h = await startEngine();
});
afterAll(async () => {
  await h?.close();
});

/** The example's project name, from its Pulumi.yaml (the root one for the demo). */
function projectOf(example: string): string {
  const file = example === "demo" ? path.join(EXAMPLES, "..", "Pulumi.yaml") : path.join(EXAMPLES, example, "Pulumi.yaml");
  const match = /^name:\s*(\S+)/m.exec(fs.readFileSync(file, "utf8"));
  if (!match?.[1]) throw new Error(`no project name in ${file}`);
  return match[1];
}

const config: Record<string, (ids: EngineHarness["ids"]) => Record<string, string>> = {
  demo: (ids) => ({ sourceServiceId: ids.serviceId, vpcId: ids.vpcId }),
  "pr-fork": (ids) => ({ sourceServiceId: ids.serviceId, prNumber: "1234" }),
  "pitr-investigation": (ids) => ({ sourceServiceId: ids.serviceId, targetTime: "2026-11-01T03:15:00Z" }),
};

test("every example has a test configuration and a Pulumi.yaml", () => {
  const dirs = fs.readdirSync(EXAMPLES).filter((d) => fs.statSync(path.join(EXAMPLES, d)).isDirectory());
  expect(dirs.sort()).toEqual(Object.keys(config).sort());
  for (const d of dirs) expect(() => projectOf(d)).not.toThrow();
});

test.each(Object.keys(config))("examples/%s: preview (no API call), up, destroy", async (example) => {
  const program = require(path.join(EXAMPLES, example, "index.ts")) as () => Promise<Record<string, unknown>>;
  const s = await h.stack(`example-${example}`, program, { project: projectOf(example) });
  for (const [key, value] of Object.entries(config[example]?.(h.ids) ?? {})) await s.stack.setConfig(key, { value });

  const preview = await s.preview();
  expect(preview.changes.create).toBeGreaterThan(0);
  expect(preview.requests).toEqual([]);

  const up = await s.up();
  const forkId = (up.outputs.serviceId ?? up.outputs.forkServiceId)?.value as string;
  expect(h.sim.service(h.ids.projectId, forkId)?.status).toBe("READY");
  for (const { value, secret } of Object.values(up.outputs)) {
    if (typeof value === "string" && value.includes(h.sim.service(h.ids.projectId, forkId)?.initial_password as string))
      expect(secret).toBe(true);
  }
  if (example === "pr-fork")
    expect(up.outputs.databaseUrl).toMatchObject({ secret: true, value: expect.stringMatching(/^postgres:\/\/tsdbadmin:.+@svc-/) });
  expect((await s.preview()).changes.create ?? 0).toBe(0);

  await s.destroy();
  expect(h.sim.service(h.ids.projectId, forkId)?.status).toBe("PAUSED");
});
