// `pulumi up` killed (SIGKILL, its whole process group) at many moments of a fork's creation, then
// what a user runs next: one fork per declared name, in state, READY, with its HA; no provider
// process left behind. The lab and its checks: test/support/lab/kill.ts.
import { sleep, useKillLab } from "../support/lab/kill";

const lab = useKillLab("create");

// The moments: four chosen ones (one in each phase of the create), then three random times across
// the whole create (which takes about 10 s): samples, each a new time on every run. Six cost CI
// (CPU-bound) a minute of a worker for moments the chosen ones already cover.
const MOMENTS: [string, (name: string) => Promise<void>][] = [
  ["before forkService is sent", () => sleep(800)],
  ["just after forkService was sent", (name) => lab.until(() => lab.sent("forkService", name))],
  [
    "while waiting for READY",
    async (name) => {
      await lab.until(() => lab.sent("forkService", name));
      await sleep(1200);
    },
  ],
  [
    "while ServiceHA waits",
    async () => {
      const before = lab.sim.requests("setHA").length;
      await lab.until(() => lab.sim.requests("setHA").length > before);
      await sleep(300);
    },
  ],
  ...Array.from({ length: 3 }, (_, i): [string, (name: string) => Promise<void>] => {
    const ms = 1000 + Math.round(Math.random() * 7000);
    return [`at a random moment (${i + 1}: ${ms} ms)`, () => sleep(ms)];
  }),
];

test.each(MOMENTS.map(([label], i) => [label, i] as const))(
  "killed %s: the next up ends with one fork, in state, READY, HA set",
  (label, i) =>
    lab.inCase(label, async () => {
      const stack = `kill-${i}`;
      const forkName = `kill-fork-${i}`;
      await lab.initStack(stack, forkName);
      await lab.killUpAt(stack, () => (MOMENTS[i]?.[1] as (name: string) => Promise<void>)(forkName));
      await lab.recover(stack);
      const fork = await lab.expectRecovered(stack, forkName, { replicas: 1, vpcName: forkName });
      // Destroy after recovery stops the one fork; every other one is killed once while HA is
      // being reset or the fork stopped.
      await lab.destroyStack(stack, forkName, fork.service_id, i % 2 === 1 ? (i % 4 === 1 ? 200 : 900) : undefined);
    }),
);
