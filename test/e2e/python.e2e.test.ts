// The provider plugin as a Python user has it: the generated SDK (sdk/python) built into a wheel and
// installed with pip into a fresh virtual environment in a folder outside the repository, beside the
// `pulumi` package from PyPI at the version scripts/toolchain.js names (scripts/ensure-python.js makes
// the wheel and keeps a wheelhouse of `pulumi` and its dependencies, once); the plugin installed from
// the archive `npm run plugin:pack` makes into the user's PULUMI_HOME; and examples/python run as a
// user runs it, with the `pulumi` CLI in the project's directory, its virtual environment active
// (the Python language host ensure-pulumi provides runs the python3 first on PATH).
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { printable } from "../../provider/text";
import { NO_DELAYS, Simulator } from "../../simulator";
import { type Run, runCommand, shellEnv } from "../support/lab/shell";

jest.setTimeout(300_000);
const ROOT = path.join(__dirname, "..", "..");
const VERSION = (JSON.parse(fs.readFileSync(path.join(ROOT, "package.json"), "utf8")) as { version: string }).version;
const { packPlugin } = require("../../scripts/pack-plugin") as { packPlugin: () => string };
const { ensurePython } = require("../../scripts/ensure-python") as {
  ensurePython: () => { python: string; wheel: string; wheelhouse: string; pulumi: string; env: Record<string, string> };
};

let sim: Simulator;
let work: string;
let venv: string;
let ready: ReturnType<typeof ensurePython>;
/** How long each step took, printed at the end: the suite is to stay fast. */
const timings: string[] = [];
const timed = (what: string, r: Run) => {
  timings.push(`${what}: ${r.seconds.toFixed(1)} s`);
  return r;
};

/** A Python user's shell: the virtual environment active, the CLI on PATH, a file backend, the credentials. */
function userEnv(): NodeJS.ProcessEnv {
  const env = shellEnv(work, "python-e2e", {
    ...ready.env,
    PATH: [path.join(venv, "bin"), process.env.PATH].join(path.delimiter),
    VIRTUAL_ENV: venv,
    TIGER_API_URL: sim.url,
    TIGER_PUBLIC_KEY: sim.keyPair.publicKey,
    TIGER_SECRET_KEY: sim.keyPair.secretKey,
    TIGER_PROJECT_ID: sim.defaults().projectId,
  });
  // Nothing but the virtual environment decides what Python imports.
  delete env.PYTHONPATH;
  delete env.PYTHONHOME;
  return env;
}

/** Output from outside shown in a failure: control characters escaped, lines kept. */
const shown = (text: string) => text.replace(/[^\n\t\P{Cc}]|[\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/gu, printable);

/** Runs a command without blocking (the simulator answers from this same process); fails unless it exits 0. */
async function ok(cwd: string, command: string, args: string[]): Promise<Run> {
  const r = await runCommand(cwd, command, args, userEnv());
  if (r.status !== 0) throw new Error(`${command} ${args.join(" ")} exited ${r.status}:\n${shown(r.output)}`);
  return r;
}
/** `pulumi ARGS` in the project's directory, timed. */
const pulumi = async (dir: string, args: string[]) => timed(`pulumi ${args.join(" ")}`, await ok(dir, "pulumi", args));

/** The API calls that changed something, as the simulator logged them. */
const changes = () =>
  sim
    .requests()
    .filter((r) => r.method !== "GET")
    .map((r) => r.operation);
const forksOf = (name: string) =>
  sim.services(sim.defaults().projectId).filter((x) => x.name === name && x.forked_from?.service_id === sim.defaults().serviceId);

beforeAll(async () => {
  sim = new Simulator({ delays: { ...NO_DELAYS, forkQueuedMs: 300, forkConfiguringMs: 300, stopMs: 300, setHAMs: 300 } });
  await sim.start();
  let started = Date.now();
  ready = ensurePython();
  timings.push(`ensure-python (the wheel and the wheelhouse, made once): ${((Date.now() - started) / 1000).toFixed(1)} s`);
  // Outside the repository: nothing resolves from it.
  work = fs.mkdtempSync(path.join(os.tmpdir(), "tigercloud-python-"));
  fs.mkdirSync(path.join(work, "state"));
  // In the project's folder, as examples/python/Pulumi.yaml tells a user to make it.
  venv = path.join(work, "python", "venv");
  started = Date.now();
  await ok(work, "pulumi", ["plugin", "install", "resource", "tigercloud", VERSION, "--file", packPlugin()]);
  timings.push(`plugin install: ${((Date.now() - started) / 1000).toFixed(1)} s`);
  fs.cpSync(path.join(ROOT, "examples", "python"), path.join(work, "python"), { recursive: true });
  timed("python3 -m venv", await ok(work, ready.python, ["-m", "venv", venv]));
  // What a user with the wheel does, from the wheelhouse only: the example's requirements, with
  // `pulumi` at the tested version.
  timed(
    "pip install -r requirements.txt",
    await ok(path.join(work, "python"), path.join(venv, "bin", "pip"), [
      "install",
      "--no-index",
      "--find-links",
      ready.wheelhouse,
      "--find-links",
      path.dirname(ready.wheel),
      "-r",
      "requirements.txt",
      `pulumi==${ready.pulumi}`,
    ]),
  );
});
afterAll(async () => {
  await sim?.stop();
  if (work) fs.rmSync(work, { recursive: true, force: true });
  process.stderr.write(`python.e2e timings:\n  ${timings.join("\n  ")}\n`);
});

test("the SDK's wheel: its name and version, pulumi-plugin.json naming where the plugin comes from, its type information; it imports in the virtual environment", async () => {
  expect(path.basename(ready.wheel)).toBe(`pulumi_tigercloud-${VERSION}-py3-none-any.whl`);
  const read = `
import json, sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
names = z.namelist()
print(json.dumps({
    "names": names,
    "plugin": json.loads(z.read("pulumi_tigercloud/pulumi-plugin.json")) if "pulumi_tigercloud/pulumi-plugin.json" in names else None,
    "metadata": z.read("pulumi_tigercloud-${VERSION}.dist-info/METADATA").decode(),
}))`;
  const wheel = JSON.parse((await ok(work, path.join(venv, "bin", "python"), ["-c", read, ready.wheel])).output) as {
    names: string[];
    plugin: unknown;
    metadata: string;
  };
  // From the installed package, the language host tells the engine which plugin the program needs, and the SDK where it is fetched from.
  expect(wheel.plugin).toEqual({
    resource: true,
    name: "tigercloud",
    version: VERSION,
    server: "github://api.github.com/tigercloud/pulumi-tigercloud",
  });
  // Type checkers read the SDK's types only where py.typed marks the package typed; the config module's types are in a stub.
  expect(wheel.names).toEqual(expect.arrayContaining(["pulumi_tigercloud/py.typed", "pulumi_tigercloud/config/__init__.pyi"]));
  expect(wheel.metadata).toMatch(/^Name: pulumi_tigercloud$/m);
  expect(wheel.metadata).toMatch(new RegExp(`^Version: ${VERSION.replace(/\./g, "\\.")}$`, "m"));
  expect(wheel.metadata).toMatch(/^Requires-Dist: pulumi<4\.0\.0,>=3\.\d+\.\d+$/m);

  // Installed, it imports, next to the pulumi version asked for, and pip finds nothing missing.
  const check = `
import importlib.metadata as m, json, pulumi_tigercloud as t
print(json.dumps({
    "pulumi": m.version("pulumi"),
    "sdk": m.version("pulumi_tigercloud"),
    "file": t.__file__,
    "resources": [c.__name__ for c in (t.ServiceFork, t.ServiceHA, t.VpcName, t.Provider)],
    "strategy": t.ForkStrategy.LAST_SNAPSHOT.value,
}))`;
  const imported = JSON.parse((await ok(work, path.join(venv, "bin", "python"), ["-c", check])).output) as Record<string, unknown>;
  expect(imported).toEqual({
    pulumi: ready.pulumi,
    sdk: VERSION,
    file: expect.stringMatching(
      new RegExp(`^${venv.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}/lib/python3\\.\\d+/site-packages/pulumi_tigercloud/__init__\\.py$`),
    ),
    resources: ["ServiceFork", "ServiceHA", "VpcName", "Provider"],
    strategy: "LAST_SNAPSHOT",
  });
  expect((await ok(work, path.join(venv, "bin", "pip"), ["check"])).output).toContain("No broken requirements found.");
});

test("examples/python, as a user runs it: preview changes nothing, up, no change after; refresh sees a rename made elsewhere; destroy deletes the fork; the connection stays secret", async () => {
  const dir = path.join(work, "python");
  const { projectId, serviceId, vpcId } = sim.defaults();
  await pulumi(dir, ["stack", "init", "dev"]);
  await pulumi(dir, ["config", "set-all", "--plaintext", `sourceServiceId=${serviceId}`, "--plaintext", `vpcId=${vpcId}`]);

  // The language host reads the installed SDK's pulumi-plugin.json: the engine knows the program needs the plugin.
  const required = JSON.parse((await pulumi(dir, ["plugin", "ls", "--project", "--json"])).output) as unknown[];
  expect(required).toContainEqual(expect.objectContaining({ name: "tigercloud", kind: "resource", version: VERSION }));

  sim.clearLog();
  const preview = (await pulumi(dir, ["preview"])).output;
  expect(preview).toMatch(/\+ 4 to create/);
  expect(changes()).toEqual([]);
  // The engine runs the language host beside the CLI, as a normal install has it.
  expect(preview).not.toMatch(/from \$PATH/);

  const up = (await pulumi(dir, ["up", "--yes", "--skip-preview"])).output;
  expect(up).toMatch(/\+ 4 created/);
  expect(up).toMatch(/^ +connectionUri: \[secret\]$/m);
  const forks = forksOf("python-fork");
  expect(forks).toHaveLength(1);
  const fork = sim.service(projectId, forks[0]!.service_id)!;
  expect(fork.status).toBe("READY");
  expect(fork.ha_replicas?.replica_count).toBe(1);
  expect(sim.vpc(projectId, vpcId)?.name).toBe("analytics-vpc");
  expect(JSON.parse((await pulumi(dir, ["stack", "output", "--json"])).output)).toEqual({
    forkId: fork.service_id,
    connectionUri: "[secret]",
    haReplicas: 1,
    vpcName: "analytics-vpc",
  });
  // The one fork, the one HA change and the one rename.
  expect(changes().sort()).toEqual(["forkService", "renameVpc", "setHA"]);

  // The connection string is stored as a secret: only ciphertext in the state file.
  const uri = (await pulumi(dir, ["stack", "output", "connectionUri", "--show-secrets"])).output.trim();
  expect(uri).toMatch(/^postgresql:\/\/tsdbadmin:.+@/);
  const password = decodeURIComponent(new URL(uri).password);
  const state = fs.readFileSync(path.join(work, "state", ".pulumi", "stacks", "tigercloud-python", "dev.json"), "utf8");
  expect(state).not.toContain(password);
  expect(state).not.toContain("postgresql://");
  expect(state).not.toContain(sim.keyPair.secretKey);
  // The SDK registers the default provider with the plugin's download URL from pulumi-plugin.json.
  const providers = (
    JSON.parse(state) as { checkpoint: { latest: { resources: { type: string; inputs?: Record<string, unknown> }[] } } }
  ).checkpoint.latest.resources.filter((r) => r.type === "pulumi:providers:tigercloud");
  expect(providers.map((r) => r.inputs)).toEqual([
    expect.objectContaining({
      version: VERSION,
      __internal: { pluginDownloadURL: "github://api.github.com/tigercloud/pulumi-tigercloud" },
    }),
  ]);

  // Up to date: nothing to change, nothing drifted.
  sim.clearLog();
  await pulumi(dir, ["preview", "--expect-no-changes"]);
  await pulumi(dir, ["refresh", "--yes", "--skip-preview", "--expect-no-changes"]);
  expect(changes()).toEqual([]);

  // A rename made in the console: refresh sees it, up puts the declared name back.
  sim.outOfBand.renameVpc(projectId, vpcId, "console-name");
  expect((await pulumi(dir, ["refresh", "--yes", "--skip-preview"])).output).toMatch(/~ 1 updated/);
  sim.clearLog();
  expect((await pulumi(dir, ["up", "--yes", "--skip-preview"])).output).toMatch(/~ 1 updated/);
  expect(changes()).toEqual(["renameVpc"]);
  expect(sim.vpc(projectId, vpcId)?.name).toBe("analytics-vpc");

  const destroyed = (await pulumi(dir, ["destroy", "--yes", "--skip-preview"])).output;
  expect(destroyed).toMatch(/- 4 deleted/);
  // The example deletes its fork (on_destroy=OnDestroy.DELETE).
  expect(sim.service(projectId, fork.service_id)?.status ?? "DELETED").toBe("DELETED");
});

test("the import_ resource option takes a fork made elsewhere under management: imported without a write, the next preview is clean, destroy stops it", async () => {
  const { projectId, serviceId } = sim.defaults();
  const forkId = sim.outOfBand.addFork(projectId, serviceId, { name: "made-elsewhere" });
  const dir = path.join(work, "adopt");
  fs.mkdirSync(dir);
  fs.writeFileSync(path.join(dir, "Pulumi.yaml"), "name: tigercloud-python-adopt\nruntime: python\n");
  fs.writeFileSync(
    path.join(dir, "__main__.py"),
    `import pulumi
import pulumi_tigercloud as tigercloud

config = pulumi.Config()
fork = tigercloud.ServiceFork(
    "adopted",
    source_service_id=config.require("sourceServiceId"),
    fork_strategy=tigercloud.ForkStrategy.NOW,
    name="made-elsewhere",
    opts=pulumi.ResourceOptions(import_=config.require("forkId")),
)
pulumi.export("forkId", fork.service_id)
`,
  );
  await pulumi(dir, ["stack", "init", "dev"]);
  await pulumi(dir, ["config", "set-all", "--plaintext", `sourceServiceId=${serviceId}`, "--plaintext", `forkId=${forkId}`]);

  sim.clearLog();
  const up = (await pulumi(dir, ["up", "--yes", "--skip-preview"])).output;
  expect(up).toMatch(/= 1 imported/);
  expect(up).toMatch(new RegExp(`^ +forkId: "${forkId}"$`, "m"));
  // The importing run writes nothing.
  expect(changes()).toEqual([]);
  await pulumi(dir, ["preview", "--expect-no-changes"]);
  expect(changes()).toEqual([]);

  await pulumi(dir, ["destroy", "--yes", "--skip-preview"]);
  // ServiceFork's default on destroy: stop, not delete.
  expect(changes()).toEqual(["stop"]);
  expect(sim.service(projectId, forkId)?.status).toBe("PAUSED");
});

test("every Python example in the resources' documentation compiles, and names classes, arguments and enum members the SDK has", async () => {
  const examples = path.join(ROOT, "sdk", "examples");
  const files = fs
    .readdirSync(examples)
    .sort()
    .map((name) => path.join(examples, name, "__main__.py"));
  expect(files.length).toBeGreaterThanOrEqual(3);
  // Read as the SDK's own type information reads them: each class's constructor overloads and each enum.
  const check = `
import ast, json, sys, typing
import pulumi_tigercloud as tigercloud
problems = []
for file in sys.argv[1:]:
    tree = ast.parse(open(file).read(), file)
    compile(tree, file, "exec")
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute) and getattr(node.value.value, "id", None) == "tigercloud":
            enum = getattr(tigercloud, node.value.attr, None)
            if enum is None or not hasattr(enum, node.attr):
                problems.append(f"{file}: no {node.value.attr}.{node.attr}")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and getattr(node.func.value, "id", None) == "tigercloud":
            cls = getattr(tigercloud, node.func.attr, None)
            if cls is None:
                problems.append(f"{file}: no class {node.func.attr}")
                continue
            takes = set()
            for overload in typing.get_overloads(cls.__init__):
                takes |= set(overload.__code__.co_varnames[: overload.__code__.co_argcount + overload.__code__.co_kwonlyargcount])
            for keyword in node.keywords:
                if keyword.arg not in takes:
                    problems.append(f"{file}: {node.func.attr} takes no {keyword.arg}")
print(json.dumps(problems))
`;
  const r = await ok(work, path.join(venv, "bin", "python"), ["-c", check, ...files]);
  expect(JSON.parse(r.output.trim().split("\n").pop() as string)).toEqual([]);
});
