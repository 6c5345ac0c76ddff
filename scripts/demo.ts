// `npm run demo`: the root program (Pulumi.yaml -> examples/demo) against the built-in simulator,
// on the real Pulumi engine: preview, up, the outputs, destroy. Everything it makes (simulator,
// state backend, PULUMI_HOME, stack) is gone when it ends, even on failure or Ctrl-C.
import * as fs from "fs";
import * as path from "path";
import { LocalWorkspace, Stack } from "@pulumi/pulumi/automation";
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
    console.log(`databases: ${sim.databases.describe()}; a fork's accepts logins ${REALISTIC_DELAYS.loginLagMs / 1000} s after READY.`);
    if (sim.databases.kind === "timescaledb") {
      const holds = (
        await sim.databases.query(
          serviceId,
          "SELECT (SELECT count(*) FROM customers) || ' customers, ' || (SELECT count(*) FROM events) || ' page views in the hypertable events (' || " +
            "(SELECT count(*) FILTER (WHERE is_compressed) FROM timescaledb_information.chunks WHERE hypertable_name = 'events') || ' chunks compressed), " +
            "the continuous aggregates events_daily, events_weekly and events_by_address (' || " +
            "(SELECT count(*) FILTER (WHERE is_compressed) FROM timescaledb_information.chunks WHERE hypertable_name IN (SELECT materialization_hypertable_name FROM timescaledb_information.continuous_aggregates)) || ' chunks compressed), ' || " +
            "(SELECT count(*) FROM timescaledb_information.jobs WHERE job_id >= 1000) || ' jobs of its own'",
        )
      ).trim();
      console.log(`production-db's database holds personal data: ${holds}.`);
    }

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

    heading("connecting to the fork with forkConnectionUri: production beside the fork");
    await showPrepared(sim, serviceId, String(up.outputs.forkConnectionUri?.value ?? ""));

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

/**
 * What a pull request's code would see with the URI, beside production: a customer's row, a page
 * view, the continuous aggregates, and the jobs (paused on the fork, running at the source).
 */
async function showPrepared(sim: Simulator, sourceId: string, uri: string): Promise<void> {
  console.log(`  ${uri.replace(/:[^:@/]+@/, ":****@")}`);
  if (sim.databases.kind !== "timescaledb") {
    console.log(`  (${sim.databases.describe()}: there is no production data to show; scripts/ensure-timescaledb builds it)`);
    return;
  }
  const { Client } = require("pg") as typeof import("pg");
  // node-postgres reads sslmode=require as verify-full unless told to follow libpq; the simulator's
  // certificate is self-signed (Tiger Cloud's is publicly trusted, and the URI works there as it is).
  const client = new Client({ connectionString: `${uri}&uselibpqcompat=true` });
  await client.connect();
  const onFork = async (sql: string) => (await client.query<{ v: string }>(`SELECT (${sql})::text AS v`)).rows[0]?.v ?? "";
  const atSource = async (sql: string) => (await sim.databases.query(sourceId, `SELECT (${sql})::text`)).trim();
  try {
    const shown = [
      ["customers, id 1", "SELECT concat_ws(' | ', email, full_name, api_token) FROM customers WHERE id = 1"],
      ["events, latest", "SELECT customer_email FROM events ORDER BY time DESC LIMIT 1"],
      ["events, oldest (compressed)", "SELECT customer_email FROM events ORDER BY time LIMIT 1"],
      [
        "events_daily (a continuous aggregate, compressed)",
        "SELECT count(*) || ' rows, ' || count(*) FILTER (WHERE customer_email LIKE '%@prod-customers.example.com') || ' with a production address' FROM events_daily",
      ],
      [
        "events_by_address (grouped by lower(customer_email), compressed)",
        "SELECT count(*) || ' rows, ' || count(*) FILTER (WHERE address LIKE '%@prod-customers.example.com') || ' with a production address' FROM events_by_address",
      ],
      [
        "jobs scheduled",
        "SELECT string_agg(job_id || ' ' || scheduled, ', ' ORDER BY job_id) FROM timescaledb_information.jobs WHERE job_id >= 1000",
      ],
      ["notify_partner's runs (the user-defined action, every 10 s)", "SELECT count(*) FROM partner_notifications"],
    ] as const;
    console.log("  logged in as tsdbadmin over TLS. What production holds, and what the fork's URL shows:");
    for (const [what, sql] of shown) {
      console.log(`    ${what}`);
      console.log(`      production-db: ${await atSource(sql)}`);
      console.log(`      the fork:      ${await onFork(sql)}`);
    }
    const compressed =
      "SELECT count(*) FILTER (WHERE is_compressed) || ' of ' || count(*) FROM timescaledb_information.chunks WHERE hypertable_name = 'events'";
    console.log(`    events' chunks compressed: production-db ${await atSource(compressed)}, the fork ${await onFork(compressed)}`);
  } finally {
    await client.end();
  }
}

main().catch((err: unknown) => {
  console.error(`\ndemo failed: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
