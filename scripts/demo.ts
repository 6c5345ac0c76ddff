// `npm run demo`: the root program (Pulumi.yaml -> examples/demo) against the built-in simulator,
// on the real Pulumi engine: preview, up, the outputs, destroy. Everything it makes (simulator,
// state backend, PULUMI_HOME, stack) is gone when it ends, even on failure or Ctrl-C.
import * as fs from "fs";
import * as path from "path";
import { LocalWorkspace, Stack } from "@pulumi/pulumi/automation";
import { SAMPLE_TABLE } from "../simulator";
import { REALISTIC_DELAYS, Simulator } from "../simulator";
import { isolateEngineClients } from "./inlinePrograms";

isolateEngineClients();

const ROOT = path.join(__dirname, "..");
const bold = (s: string) => (process.stdout.isTTY ? `\x1b[1m${s}\x1b[0m` : s);
const heading = (s: string) => console.log(`\n${bold(`=== ${s} ===`)}\n`);
const stream = { onOutput: (out: string) => process.stdout.write(out) };

async function main(): Promise<void> {
  // A real PostgreSQL server behind every service, where PostgreSQL is installed.
  const sim = new Simulator({ delays: REALISTIC_DELAYS, databases: "postgres" });
  fs.mkdirSync(path.join(ROOT, ".tmp"), { recursive: true });
  // Inside the repository, so that the engine's provider process finds this package in ./node_modules.
  const dir = fs.mkdtempSync(path.join(ROOT, ".tmp", "demo-"));
  const cleanUp = async () => {
    await sim.stop().catch(() => undefined);
    fs.rmSync(dir, { recursive: true, force: true });
  };
  process.once("SIGINT", () => void cleanUp().then(() => process.exit(130)));

  try {
    const url = await sim.start();
    const { projectId, serviceId, vpcId } = sim.defaults();
    heading("Tiger Cloud API simulator");
    console.log(`listening on ${url}: project ${projectId}, service ${serviceId} ("production-db"), VPC ${vpcId}`);
    console.log(
      sim.databases.kind === "postgres"
        ? `databases: a PostgreSQL server per service; production-db's table "${SAMPLE_TABLE}" holds ${(await sim.databases.query(serviceId, `SELECT count(*) FROM ${SAMPLE_TABLE}`)).trim()} rows. A fork's database accepts logins ${REALISTIC_DELAYS.loginLagMs / 1000} s after READY.`
        : `databases: stand-ins that only accept a login (${sim.databases.note})`,
    );

    const workDir = path.join(dir, "project");
    fs.mkdirSync(workDir);
    // The root project as it is, less `main`: the engine checks that file exists beside
    // Pulumi.yaml, and here the program runs in-process instead.
    const project = fs.readFileSync(path.join(ROOT, "Pulumi.yaml"), "utf8").replace(/^main:.*\n/m, "");
    fs.writeFileSync(path.join(workDir, "Pulumi.yaml"), project);
    fs.mkdirSync(path.join(dir, "state"));
    // The program the root Pulumi.yaml names, run in-process (no language plugin needed).
    const program = require(path.join(ROOT, "examples", "demo", "index.ts")) as () => Promise<Record<string, unknown>>;
    const ws = await LocalWorkspace.create({
      workDir,
      program,
      pulumiHome: path.join(dir, "home"),
      envVars: {
        PULUMI_BACKEND_URL: `file://${path.join(dir, "state")}`,
        PULUMI_CONFIG_PASSPHRASE: "tigercloud-demo",
        PULUMI_SKIP_UPDATE_CHECK: "true",
        PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION: "true",
      },
    });
    const stack = await Stack.create("demo", ws);
    await stack.setAllConfig({
      "tigercloud:apiUrl": { value: url },
      "tigercloud:apiKey": { value: sim.apiKey, secret: true },
      "tigercloud:projectId": { value: projectId },
      sourceServiceId: { value: serviceId },
      vpcId: { value: vpcId },
    });

    heading("pulumi preview");
    await stack.preview(stream);

    heading("pulumi up");
    const up = await stack.up(stream);

    heading("outputs");
    for (const [name, { value, secret }] of Object.entries(up.outputs)) {
      console.log(
        `  ${name.padEnd(16)} ${secret ? "[secret] (stored encrypted; `pulumi stack output --show-secrets` reveals it)" : JSON.stringify(value)}`,
      );
    }
    const fork = sim.services(projectId).find((s) => s.service_id === up.outputs.forkServiceId?.value);
    console.log(
      `\n  simulator now has fork ${fork?.service_id}: ${fork?.status}, ${fork?.ha_replicas.replica_count} HA replica(s); VPC named "${sim.vpc(projectId, vpcId)?.name}"`,
    );

    heading("connecting to the fork with forkConnectionUri");
    await countRows(sim, String(up.outputs.forkConnectionUri?.value ?? ""));

    heading("pulumi destroy");
    await stack.destroy(stream);
    const after = sim.service(projectId, String(up.outputs.forkServiceId?.value));
    console.log(
      `\n  the fork is ${after?.status} (destroy stops a fork; it is not deleted), HA replicas ${after?.ha_replicas.replica_count}`,
    );
    console.log(`\n${bold("Demo complete.")} Nothing is left running; temporary state is removed.`);
  } finally {
    await cleanUp();
  }
}

/** What an application would do with the URI: connect, and count the rows the fork copied. */
async function countRows(sim: Simulator, uri: string): Promise<void> {
  console.log(`  ${uri.replace(/:[^:@/]+@/, ":****@")}`);
  if (sim.databases.kind !== "postgres") {
    console.log("  (no PostgreSQL here, so the fork has no data to count; install it to see this step)");
    return;
  }
  const { Client } = require("pg") as typeof import("pg");
  // node-postgres reads sslmode=require as verify-full unless told to follow libpq; the simulator's
  // certificate is self-signed (Tiger Cloud's is publicly trusted, and the URI works there as it is).
  const client = new Client({ connectionString: `${uri}&uselibpqcompat=true` });
  await client.connect();
  try {
    const { rows } = await client.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${SAMPLE_TABLE}`);
    console.log(`  logged in as tsdbadmin over TLS: the fork holds ${rows[0]?.n} rows of "${SAMPLE_TABLE}", copied from production-db`);
  } finally {
    await client.end();
  }
}

main().catch((err: unknown) => {
  console.error(`\ndemo failed: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
