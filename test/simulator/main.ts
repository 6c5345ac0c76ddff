// `npm run simulator`: serves the simulated API until stopped. The first line of output is one
// line of JSON with url, apiKey, projectId, serviceId and vpcId; human-readable lines follow.
// Options: --port N, --seed FILE (JSON SeedData), --fast (no status delays), --api-key KEY,
// --stand-in (no PostgreSQL servers behind the services: a stand-in that only accepts a login).
import { REALISTIC_DELAYS, NO_DELAYS, Simulator } from "./server";

function option(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

async function main(): Promise<void> {
  const seedFile = option("--seed");
  const port = option("--port");
  const apiKey = option("--api-key");
  const sim = new Simulator({
    ...(seedFile ? { seed: Simulator.seedFromFile(seedFile) } : {}),
    ...(port ? { port: Number(port) } : {}),
    ...(apiKey ? { apiKey } : {}),
    delays: process.argv.includes("--fast") ? NO_DELAYS : REALISTIC_DELAYS,
    databases: process.argv.includes("--stand-in") ? "stand-in" : "postgres",
  });
  const url = await sim.start();
  console.log(JSON.stringify({ url, apiKey: sim.apiKey, ...sim.defaults() }));
  console.log(`Tiger Cloud API simulator listening on ${url} (Ctrl-C to stop)`);
  console.log(
    `  databases: ${sim.databases.kind === "postgres" ? "a PostgreSQL server per service" : "stand-ins (login and SELECT 1 only)"}`,
  );
  console.log(`  export TIGER_API_URL=${url} TIGER_API_KEY=${sim.apiKey} TIGER_PROJECT_ID=${sim.defaults().projectId}`);
  const shutdown = () => void sim.stop().then(() => process.exit(0));
  process.on("SIGINT", shutdown);
  process.on("SIGTERM", shutdown);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
