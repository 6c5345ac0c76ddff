// The program in this directory, tested against a local Tiger Cloud: no cloud account, no bill.
// The simulator comes with the package (pulumi-tigercloud/simulator): a real HTTP server on
// 127.0.0.1 that speaks the Tiger Cloud API, with a PostgreSQL server behind each service where one
// is installed (a stand-in that accepts a login otherwise). The program runs as `pulumi` runs it
// (the Automation API drives the CLI in this directory): preview, up, then what the simulator
// holds is checked, and the stack destroyed. Run it with `npm test` (the `pulumi` CLI on PATH).
const { test, before, after } = require("node:test");
const assert = require("node:assert/strict");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const { LocalWorkspace } = require("@pulumi/pulumi/automation");
const { Client } = require("pg");
const { Simulator } = require("pulumi-tigercloud/simulator");

// Status changes in 0.3 s instead of the real service's seconds to minutes.
const sim = new Simulator({
  databases: "postgres",
  delays: { forkQueuedMs: 300, forkConfiguringMs: 300, setHAMs: 300, stopMs: 300, loginLagMs: 300 },
});
const state = fs.mkdtempSync(path.join(os.tmpdir(), "testing-state-"));
let stack;

before(async () => {
  await sim.start();
  // Without PostgreSQL the simulator puts a stand-in behind each service, which takes a login but
  // holds no data: this test reads a fork's rows, so it says what is missing rather than fail later.
  assert.notEqual(
    sim.databases.kind,
    "stand-in",
    "this test needs PostgreSQL's server programs (initdb, postgres, pg_basebackup), e.g. apt-get install postgresql",
  );
  const { serviceId, vpcId } = sim.defaults();
  stack = await LocalWorkspace.createOrSelectStack(
    { stackName: "test", workDir: path.join(__dirname, "..") },
    {
      envVars: {
        // A state backend of the test's own, and the simulator's key pair: what the official
        // tiger CLI uses too. No projectId: the provider asks which project the key belongs to.
        PULUMI_BACKEND_URL: `file://${state}`,
        PULUMI_CONFIG_PASSPHRASE: "test",
        TIGER_API_URL: sim.url,
        TIGER_PUBLIC_KEY: sim.keyPair.publicKey,
        TIGER_SECRET_KEY: sim.keyPair.secretKey,
      },
    },
  );
  await stack.setAllConfig({ sourceServiceId: { value: serviceId }, vpcId: { value: vpcId } });
});

after(async () => {
  await sim.stop();
  fs.rmSync(state, { recursive: true, force: true });
});

test("preview plans the fork, its HA and the VPC's name, and changes nothing", async () => {
  const preview = await stack.preview();
  assert.equal(preview.changeSummary.create, 4); // the stack, and the three resources
  assert.deepEqual(
    sim.services(sim.defaults().projectId).filter((s) => s.forked_from),
    [],
  );
});

test("up makes a READY fork of production with its data and one HA replica, and names the VPC", async () => {
  const { outputs } = await stack.up();
  const { projectId, serviceId, vpcId } = sim.defaults();
  const fork = sim.service(projectId, outputs.serviceId.value);
  assert.equal(fork.name, "staging");
  assert.equal(fork.status, "READY");
  assert.equal(fork.forked_from.service_id, serviceId);
  assert.deepEqual(fork.ha_replicas, { replica_count: 1, sync_replica_count: 0 });
  assert.equal(sim.vpc(projectId, vpcId).name, "staging-vpc");

  // The connection string is a secret output, and it logs in to the fork's own database, which
  // holds a copy of production's data. (The simulator's certificate is self-signed: libpq's
  // sslmode=require, encrypted and not verified.)
  assert.equal(outputs.databaseUrl.secret, true);
  const client = new Client({ connectionString: `${outputs.databaseUrl.value}&uselibpqcompat=true` });
  await client.connect();
  try {
    const { rows } = await client.query("SELECT count(*)::int AS n FROM conditions");
    assert.ok(rows[0].n > 0, "the fork holds production's rows");
  } finally {
    await client.end();
  }
});

test("destroy takes the HA replica off and stops the fork, its data kept", async () => {
  const outputs = await stack.outputs();
  await stack.destroy();
  const { projectId } = sim.defaults();
  const fork = sim.service(projectId, outputs.serviceId.value);
  assert.equal(fork.status, "PAUSED");
  assert.deepEqual(fork.ha_replicas, { replica_count: 0, sync_replica_count: 0 });
  await stack.workspace.removeStack("test");
});
