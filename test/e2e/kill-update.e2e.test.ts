// Updates: HA counts 1 -> 2 and the VPC's name changed on a stack that holds its fork, `pulumi up`
// killed while they are in flight. ServiceHA and VpcName set the declared value, so the next `up`
// (or refresh, then up) finishes the change, on the same fork. Also: an ambiguous 500 after the
// fork was made. The lab and its checks: test/support/lab/kill.ts.
import { execFileSync } from "child_process";
import * as fs from "fs";
import * as path from "path";
import { sleep, tally, useKillLab } from "../support/lab/kill";

const lab = useKillLab("update");

// `unfinished`: what the killed `up` cannot have recorded yet, so the kill surely fell mid-change.
const UPDATES: {
  label: string;
  replicas: number;
  vpcName: boolean;
  moment: () => Promise<void>;
  unfinished?: "ha" | "vpc";
}[] = [
  {
    label: "while setHA waits for the new counts",
    replicas: 2,
    vpcName: false,
    unfinished: "ha",
    moment: async () => {
      await lab.sentFromNow("setHA");
      await sleep(300);
    },
  },
  {
    label: "while the VPC rename is in flight, unanswered",
    replicas: 1,
    vpcName: true,
    unfinished: "vpc",
    moment: async () => {
      lab.sim.injectFault("renameVpc", { kind: "slow", ms: 3000 });
      await lab.sentFromNow("renameVpc");
      await sleep(200);
    },
  },
  {
    label: "just as the VPC rename was sent",
    replicas: 1,
    vpcName: true,
    moment: () => lab.sentFromNow("renameVpc"),
  },
  ...Array.from({ length: 1 }, (_, i) => {
    const ms = Math.round(Math.random() * 2000);
    return {
      label: `at a random moment of both (${i + 1}: ${ms} ms after the first change was sent)`,
      replicas: 2,
      vpcName: true,
      moment: async () => {
        await Promise.race([lab.sentFromNow("setHA"), lab.sentFromNow("renameVpc")]);
        await sleep(ms);
      },
    };
  }),
];

test.each(UPDATES.map(({ label }, i) => [label, i] as const))(
  "an update killed %s: the next up sets HA and the VPC name on the same fork",
  (label, i) =>
    lab.inCase(label, async () => {
      const update = UPDATES[i] as (typeof UPDATES)[number];
      const stack = `update-${i}`;
      const forkName = `update-fork-${i}`;
      await lab.initStack(stack, forkName);
      // The stack's first create is no case's moment: made at once, the update's delays restored after.
      await lab.withoutDelays(() => lab.ok("up", "--yes", "--skip-preview", "--stack", stack));
      const [before] = lab.forksNamed(forkName);
      expect(before?.ha_replicas.replica_count).toBe(1);

      const vpcName = update.vpcName ? `${forkName}-renamed` : forkName;
      await lab.ok(
        "config",
        "set-all",
        "--stack",
        stack,
        "--plaintext",
        `replicas=${update.replicas}`,
        "--plaintext",
        `vpcName=${vpcName}`,
      );
      await lab.killUpAt(stack, update.moment);
      tally.updateKills++;
      if (update.unfinished === "ha") expect((await lab.recordedOutputs(stack, "ha")).replicaCount).toBe(1);
      if (update.unfinished === "vpc") expect((await lab.recordedOutputs(stack, "vpc")).name).toBe(forkName);
      await lab.recover(stack);
      const after = await lab.expectRecovered(stack, forkName, { replicas: update.replicas, vpcName, checkNoChanges: true });
      // The same fork throughout: an update never forks.
      expect(after.service_id).toBe(before?.service_id);
      expect(lab.forksNamed(forkName)).toHaveLength(1);
      await lab.destroyStack(stack, forkName, after.service_id, i % 2 === 0 ? 300 : undefined);
    }),
);

test("an ambiguous 500 after the fork was made: one fork in state, one forkService request", () =>
  lab.inCase("never (an ambiguous 500)", async () => {
    const stack = "ambiguous";
    await lab.initStack(stack, "ambiguous-fork");
    lab.sim.clearLog();
    lab.sim.injectFault("forkService", { kind: "afterApplying", status: 500 });
    const out = await lab.ok("up", "--yes", "--skip-preview", "--stack", stack);
    expect(out).toMatch(/adopting fork svc-\w+/);
    expect(lab.sim.requests("forkService")).toHaveLength(1);
    const [fork] = lab.forksNamed("ambiguous-fork");
    expect(lab.forksNamed("ambiguous-fork")).toHaveLength(1);
    expect(await lab.ok("stack", "export", "--stack", stack)).toContain(fork?.service_id);
    await lab.ok("destroy", "--yes", "--skip-preview", "--stack", stack);
  }));

test("a kill that left the file backend's sidecar empty: the engine reads no stack (failed to load checkpoint: EOF) until it is deleted, as the README says; then up goes on, on the same fork", () =>
  lab.inCase("during the file backend's sidecar write (made certain: emptied by hand)", async () => {
    const stack = "sidecar";
    await lab.initStack(stack, "sidecar-fork");
    // No kill here falls on the create: it is made at once.
    await lab.withoutDelays(() => lab.ok("up", "--yes", "--skip-preview", "--stack", stack));
    const [fork] = lab.forksNamed("sidecar-fork");
    // What a SIGKILL between fileblob's truncate and write of `<stack>.json.attrs` leaves.
    const sidecars = lab.sidecarsOf(stack);
    expect(sidecars).toHaveLength(1);
    fs.truncateSync(sidecars[0] as string, 0);
    const refused = await lab.pulumi("up", "--yes", "--skip-preview", "--stack", stack);
    expect(refused.status).not.toBe(0);
    expect(refused.output).toContain("failed to load checkpoint: EOF");
    await lab.recover(stack);
    expect(lab.forksNamed("sidecar-fork").map((f) => f.service_id)).toEqual([fork?.service_id]);
    await lab.ok("destroy", "--yes", "--skip-preview", "--stack", stack);

    // The README's other way out: a backend URL with ?metadata=skip writes no sidecar at all.
    const skipping = path.join(lab.dir, "state-skip");
    fs.mkdirSync(skipping);
    const env = { ...process.env, PULUMI_BACKEND_URL: `file://${skipping}?metadata=skip`, PULUMI_CONFIG_PASSPHRASE: "kill-e2e" };
    execFileSync("pulumi", ["stack", "init", "no-sidecar", "--non-interactive"], {
      cwd: lab.dir,
      env: { ...env, PULUMI_HOME: path.join(lab.dir, "home") },
    });
    const files = fs.readdirSync(skipping, { recursive: true }).map(String);
    expect(files.filter((f) => f.endsWith("no-sidecar.json"))).toHaveLength(1);
    expect(files.filter((f) => f.endsWith(".attrs"))).toEqual([]);
  }));
