// The layout holds: every module is in one layer, and imports run only where its layer may reach.
// Two hosts sit on top (hosts/): each the only place that speaks its engine's dialect. Below them,
// typed resources (one specification each, one registry), the host-free context they run with, and
// the API client. The program side (what a user's program loads) reaches nothing of the provider
// side, so `require("pulumi-tigercloud")` loads no zod, axios or pg; the map names every module.
import { execFileSync } from "child_process";
import * as fs from "fs";
import { builtinModules } from "module";
import * as path from "path";
import * as ts from "typescript";

const ROOT = path.join(__dirname, "..", "..");
const PROVIDER = path.join(ROOT, "provider");

/** Every .ts file below `root`, as a path from there ("api/client.ts"). */
function modulesUnder(root: string, dir = ""): string[] {
  return fs.readdirSync(path.join(root, dir), { withFileTypes: true }).flatMap((entry) => {
    const rel = path.posix.join(dir, entry.name);
    if (entry.isDirectory()) return modulesUnder(root, rel);
    return entry.name.endsWith(".ts") ? [rel] : [];
  });
}
const MODULES = modulesUnder(PROVIDER);

interface Import {
  /** A module of provider/ ("rules/inputs.ts"), or a package's name ("zod", "@pulumi/pulumi", "fs"). */
  target: string;
  /** `import type`: erased from the JavaScript, so it loads nothing. */
  typeOnly: boolean;
}

const IMPORT = /(?:^|\n)\s*(?:import|export)\s+(type\s+)?(?:[^;"]*?\s+from\s+)?"([^"]+)"|\brequire\("([^"]+)"\)/g;

function importsOf(file: string): Import[] {
  // Comments are not imports: an example in a doc comment may call require("...") on its own config.
  const text = fs
    .readFileSync(path.join(PROVIDER, file), "utf8")
    .replace(/^\s*\/\/.*$/gm, "")
    .replace(/\/\*[\s\S]*?\*\//g, "");
  return [...text.matchAll(IMPORT)].map((m) => {
    const spec = (m[2] ?? m[3]) as string;
    if (!spec.startsWith(".")) {
      const parts = spec.split("/");
      return { target: spec.startsWith("@") ? parts.slice(0, 2).join("/") : (parts[0] as string), typeOnly: Boolean(m[1]) };
    }
    const base = path.posix.normalize(path.posix.join(path.posix.dirname(file), spec));
    const target = [`${base}.ts`, `${base}/index.ts`].find((candidate) => MODULES.includes(candidate)) ?? `${base} (missing)`;
    return { target, typeOnly: Boolean(m[1]) };
  });
}

const SHARED = ["errors.ts", "settings.ts", "text.ts", "time.ts", "version.ts"];
/** What a user's program loads: the classes, and the dynamic host's serialized-provider plumbing they carry. */
const PROGRAM_SIDE = (f: string) => f.startsWith("program/") || f === "hosts/dynamic/serializedProvider.ts";
/** Each layer, from the top: which modules are in it, and which layers its modules may import. */
const LAYERS: Record<string, { holds: (file: string) => boolean; mayImport: string[] }> = {
  entry: { holds: (f) => f === "index.ts", mayImport: ["program", "shared"] },
  // The two hosts, each in its folder: the only modules that speak an engine's dialect.
  hosts: {
    holds: (f) => f.startsWith("hosts/") && !PROGRAM_SIDE(f),
    mayImport: ["hosts", "resources", "policies", "rules", "context", "api", "shared"],
  },
  program: { holds: PROGRAM_SIDE, mayImport: ["program", "shared"] },
  resources: {
    holds: (f) => f.startsWith("resources/"),
    mayImport: ["resources", "policies", "rules", "context", "database", "api", "shared"],
  },
  // The request policies every resource follows: busy, gone, waiting, verify, the login, the key's project.
  policies: { holds: (f) => f.startsWith("policies/"), mayImport: ["policies", "rules", "context", "database", "api", "shared"] },
  rules: { holds: (f) => f.startsWith("rules/"), mayImport: ["rules", "context", "shared"] },
  // A call's context: host-free, made by a host from its settings and handed to every lifecycle.
  context: { holds: (f) => f.startsWith("context/"), mayImport: ["context", "api", "shared"] },
  // Sessions on a service's database (the login wait, a fork's preparation): node-postgres in one place.
  database: { holds: (f) => f.startsWith("database/"), mayImport: ["database", "shared"] },
  api: { holds: (f) => f.startsWith("api/"), mayImport: ["api", "shared"] },
  shared: { holds: (f) => SHARED.includes(f), mayImport: ["shared"] },
};
const layerOf = (file: string) => Object.keys(LAYERS).filter((layer) => LAYERS[layer]?.holds(file));
const NODE_BUILTINS = new Set(builtinModules);
const read = (file: string) => fs.readFileSync(path.join(PROVIDER, file), "utf8");

test("every module of the package is in exactly one layer", () => {
  expect(MODULES.length).toBeGreaterThan(40);
  for (const file of MODULES) expect(`${file}: ${layerOf(file).join(", ")}`).toMatch(/: \w+$/);
});

test("each layer imports only the layers below it (the provider side may name the program side's types)", () => {
  const wrong: string[] = [];
  for (const file of MODULES) {
    const [layer] = layerOf(file);
    for (const { target, typeOnly } of importsOf(file)) {
      if (!target.endsWith(".ts")) continue;
      const [targetLayer] = layerOf(target);
      const allowed = LAYERS[layer as string]?.mayImport.includes(targetLayer as string) || (typeOnly && targetLayer === "program");
      if (!allowed) wrong.push(`${file} (${layer}) -> ${target} (${targetLayer ?? "no layer"})`);
    }
  }
  expect(wrong).toEqual([]);
});

test("the program side and the shared modules import only @pulumi/pulumi, Node's built-ins and each other", () => {
  const wrong: string[] = [];
  for (const file of MODULES.filter((f) => ["program", "shared", "entry"].includes(layerOf(f)[0] as string)))
    for (const { target } of importsOf(file))
      if (!target.endsWith(".ts") && target !== "@pulumi/pulumi" && !NODE_BUILTINS.has(target)) wrong.push(`${file} -> ${target}`);
  expect(wrong).toEqual([]);
});

test("no module keeps state of its own outside the hosts: settings, options and what a run learns are handed on in each call's context", () => {
  // A module-level let or var, or a collection made at load (which is filled later). The program
  // side has no host (a program's process is one run): its one memo is the serialized providers'.
  const STATE = /^(?:export\s+)?(?:let|var)\s|^(?:export\s+)?const\s+\w+(?:\s*:[^=]+)?=\s*new\s+(?:Map|Set|WeakMap|WeakSet)\b/m;
  const holders = MODULES.filter((f) => STATE.test(read(f)));
  expect(holders.filter((f) => layerOf(f)[0] !== "hosts" && f !== "hosts/dynamic/serializedProvider.ts")).toEqual([]);
  expect(holders).toContain("hosts/dynamic/provider.ts"); // the scan sees state where there is some
});

test("only a host builds a call's context: below the hosts, settings, the client and progress come from the context handed in", () => {
  const reaching = MODULES.filter((f) => layerOf(f)[0] !== "hosts" && f !== "context/context.ts").filter((f) =>
    /\bmakeContext\b/.test(read(f)),
  );
  expect(reaching).toEqual([]);
  // The scan sees such a use where there is one.
  expect(/\bmakeContext\(/.test(read("hosts/plugin/server.ts"))).toBe(true);
});

test("nothing below the hosts names the SDK's provider types or loads the SDK: the lifecycles speak no host's dialect", () => {
  const below = MODULES.filter((f) => !["hosts", "program", "entry"].includes(layerOf(f)[0] as string));
  expect(below.filter((f) => /@pulumi\/pulumi|pulumi\.dynamic\./.test(read(f)))).toEqual([]);
  expect(MODULES.filter((f) => /pulumi\.dynamic\./.test(read(f)))).toContain("hosts/dynamic/provider.ts"); // the scan sees one
});

test("no file below the hosts reads or writes a dynamic provider's key (__provider, __resourceName, __resourceUrn, __secretInputs)", () => {
  const DIALECT = /__(provider|resourceName|resourceUrn|secretInputs)\b/;
  const speaking = MODULES.filter((f) => DIALECT.test(read(f)));
  // The dynamic host's wire and host, and the program side that writes them (program/declare.ts).
  expect(speaking.filter((f) => !f.startsWith("hosts/dynamic/") && !f.startsWith("program/"))).toEqual([]);
  expect(speaking).toContain("hosts/dynamic/wire.ts"); // the scan sees the dialect where it is
});

/**
 * The type annotations of `file` that are raw property bags: an index signature of string to
 * unknown or any and no property of its own (an API answer that keeps fields added later has its
 * own), by any name.
 */
function rawBagsIn(program: ts.Program, file: string): string[] {
  const checker = program.getTypeChecker();
  const source = program.getSourceFile(path.join(PROVIDER, file));
  if (!source) throw new Error(`${file} is not in the program`);
  const found: string[] = [];
  const visit = (node: ts.Node) => {
    if (ts.isTypeNode(node) && !ts.isTypeParameterDeclaration(node.parent)) {
      const type = checker.getTypeFromTypeNode(node);
      const index = checker.getIndexInfosOfType(type).find((info) => info.keyType.flags & ts.TypeFlags.String);
      const bag = index && index.type.flags & (ts.TypeFlags.Unknown | ts.TypeFlags.Any) && checker.getPropertiesOfType(type).length === 0;
      if (bag && !ts.isArrayTypeNode(node))
        found.push(`${file}:${source.getLineAndCharacterOfPosition(node.getStart()).line + 1}: ${node.getText()}`);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

test("raw property bags only where a host hands them over (its wire code) and on the program side: the check sees through aliases", () => {
  const program = ts.createProgram(
    MODULES.map((f) => path.join(PROVIDER, f)),
    {
      strict: true,
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.CommonJS,
      esModuleInterop: true,
      resolveJsonModule: true,
      noEmit: true,
      skipLibCheck: true,
    },
  );
  const WIRE = ["hosts/dynamic/wire.ts", "hosts/plugin/wire.ts"];
  const bags = MODULES.flatMap((f) => rawBagsIn(program, f));
  expect(bags.filter((b) => !WIRE.some((w) => b.startsWith(`${w}:`)) && !b.startsWith("program/"))).toEqual([]);
  // The check sees a bag where there is one, under its alias too.
  expect(bags.some((b) => b.startsWith("hosts/plugin/wire.ts:") && /\bBag\b/.test(b))).toBe(true);
});

test("the resource kinds are listed in one registry: the hosts, the schema script and the classes follow it", () => {
  const KINDS = /"(ServiceFork|ServiceHA|VpcName)"/g;
  // Each kind's own folder names it (its specification); the registry lists them; the spec type
  // names the union; the generated classes are written from the registry.
  const listing = MODULES.filter((f) => !/^resources\/\w+\//.test(f) && f !== "resources/spec.ts" && f !== "program/resources.ts").filter(
    (f) => new Set([...read(f).matchAll(KINDS)].map((m) => m[1])).size > 1,
  );
  expect(listing).toEqual([]);
  const registry = read("resources/registry.ts");
  for (const kind of ["serviceFork", "serviceHA", "vpcName"]) expect(registry).toContain(`./${kind}/resource`);
  const scripts = ["scripts/declarations.ts", "provider/hosts/plugin/main.ts", "provider/hosts/dynamic/runtime.ts"];
  for (const file of scripts) expect(fs.readFileSync(path.join(ROOT, file), "utf8")).toMatch(/\bRESOURCES\b/);
});

test("a resource's folder imports no other resource's folder", () => {
  const wrong: string[] = [];
  for (const file of MODULES.filter((f) => /^resources\/\w+\//.test(f))) {
    const own = file.split("/")[1];
    for (const { target } of importsOf(file)) {
      const other = /^resources\/(\w+)\//.exec(target)?.[1];
      if (other !== undefined && other !== own) wrong.push(`${file} -> ${target}`);
    }
  }
  expect(wrong).toEqual([]);
});

test("the fork janitor is a command of its own: it reaches the package through its public client entry, the gone rule and the shared modules", () => {
  const JANITOR = path.join(ROOT, "forks");
  const wrong: string[] = [];
  for (const file of modulesUnder(JANITOR))
    for (const m of fs.readFileSync(path.join(JANITOR, file), "utf8").matchAll(IMPORT)) {
      const spec = (m[2] ?? m[3]) as string;
      if (!spec.startsWith("../provider/")) continue;
      const target = spec.replace("../provider/", "");
      const allowed = ["api/client", "api/schemas", "api/statuses", "policies/gone", ...SHARED.map((s) => s.replace(/\.ts$/, ""))];
      if (!allowed.includes(target)) wrong.push(`forks/${file} -> ${spec}`);
    }
  expect(wrong).toEqual([]);
});

test("the PR database action's runner is a room of its own: it reaches the janitor by its command, the migration rehearsal by its options, run and report, and the package only through the shared modules and the public entry of the preparation's rules it checks a rules file by", () => {
  // That module is what the package exports as pulumi-tigercloud/preparation.
  const exported = (
    JSON.parse(fs.readFileSync(path.join(ROOT, "package.json"), "utf8")) as { exports: Record<string, { default?: string }> }
  ).exports["./preparation"]?.default;
  expect(exported).toBe("./dist/provider/resources/serviceFork/preparation/schema.js");
  const ACTION = path.join(ROOT, "prDatabase");
  const modules = modulesUnder(ACTION);
  expect(modules).toContain("main.ts");
  const wrong: string[] = [];
  for (const file of modules)
    for (const m of fs.readFileSync(path.join(ACTION, file), "utf8").matchAll(IMPORT)) {
      const spec = (m[2] ?? m[3]) as string;
      if (!spec.startsWith("../")) continue;
      const allowed = [
        "../forks/cli",
        "../rehearsal/cli",
        "../rehearsal/rehearse",
        "../rehearsal/report",
        "../provider/resources/serviceFork/preparation/schema",
        ...SHARED.map((s) => `../provider/${s.replace(/\.ts$/, "")}`),
      ];
      if (!allowed.includes(spec)) wrong.push(`prDatabase/${file} -> ${spec}`);
    }
  expect(wrong).toEqual([]);
  // Nothing of the janitor's folder is the action's.
  expect(modulesUnder(path.join(ROOT, "forks")).filter((f) => /prDatabase/i.test(f))).toEqual([]);
});

/** The modules a `require` of `from` loads, following every import that is not type-only. */
function loadedFrom(from: string): { modules: Set<string>; packages: Set<string> } {
  const modules = new Set<string>();
  const packages = new Set<string>();
  const visit = (file: string) => {
    if (modules.has(file)) return;
    modules.add(file);
    for (const { target, typeOnly } of importsOf(file)) {
      if (typeOnly) continue;
      if (target.endsWith(".ts")) visit(target);
      else packages.add(target);
    }
  };
  visit(from);
  return { modules, packages };
}

/** Runs `use` on `entries` and every module they load, transpiled as the build compiles them, in a
 *  fresh directory inside the repository (so that packages resolve from its node_modules): the
 *  directory that stands for provider/. */
function withTranspiled<T>(entries: string[], use: (providerDir: string) => T): T {
  fs.mkdirSync(path.join(ROOT, ".tmp"), { recursive: true });
  const out = fs.mkdtempSync(path.join(ROOT, ".tmp", "entry-"));
  try {
    for (const file of new Set(entries.flatMap((entry) => [...loadedFrom(entry).modules]))) {
      const js = ts.transpileModule(read(file), { compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022 } });
      const target = path.join(out, "provider", file.replace(/\.ts$/, ".js"));
      fs.mkdirSync(path.dirname(target), { recursive: true });
      fs.writeFileSync(target, js.outputText);
    }
    return use(path.join(out, "provider"));
  } finally {
    fs.rmSync(out, { recursive: true, force: true });
  }
}

test("the package entry reaches only the program side and the shared modules: no zod, axios, pg, API client or host", () => {
  const { modules, packages } = loadedFrom("index.ts");
  expect([...modules].filter((f) => f !== "index.ts" && !["program", "shared"].includes(layerOf(f)[0] as string))).toEqual([]);
  expect([...packages].filter((p) => p !== "@pulumi/pulumi" && !NODE_BUILTINS.has(p))).toEqual([]);
});

test("requiring the package entry, compiled, in a fresh node loads no module of zod, axios or pg", () => {
  const result = withTranspiled(["index.ts"], (dir) => {
    const script = `
      const before = new Set(Object.keys(require.cache));
      const entry = require(${JSON.stringify(path.join(dir, "index.js"))});
      const loaded = Object.keys(require.cache).filter((f) => !before.has(f));
      console.log(JSON.stringify({
        classes: [typeof entry.ServiceFork, typeof entry.ServiceHA, typeof entry.VpcName],
        count: loaded.length,
        heavy: loaded.filter((f) => /[\\\\/]node_modules[\\\\/](zod|axios|pg)[\\\\/]/.test(f)),
      }));`;
    return JSON.parse(execFileSync(process.execPath, ["-e", script], { cwd: ROOT, encoding: "utf8" })) as {
      classes: string[];
      count: number;
      heavy: string[];
    };
  });
  expect(result.classes).toEqual(["function", "function", "function"]);
  expect(result.count).toBeGreaterThan(0);
  expect(result.heavy).toEqual([]);
});

test("the provider side, loaded in a fresh node, loads axios with its first request: a preview with nothing to change sends none", () => {
  const loads = withTranspiled(["hosts/dynamic/runtime.ts", "api/client.ts"], (dir) => {
    const script = `
      const axiosLoaded = () => Object.keys(require.cache).some((f) => /[\\\\/]node_modules[\\\\/]axios[\\\\/]/.test(f));
      require(${JSON.stringify(path.join(dir, "hosts", "dynamic", "runtime.js"))});
      const atLoad = axiosLoaded();
      const { createClient } = require(${JSON.stringify(path.join(dir, "api", "client.js"))});
      // Port 9 (discard): refused at once; the request is made, which is what loads axios.
      createClient({ apiUrl: "http://127.0.0.1:9", apiKey: "k" }, undefined, { maxAttempts: 1 })
        .getService("p", "s")
        .catch(() => undefined)
        .then(() => console.log(JSON.stringify({ atLoad, afterRequest: axiosLoaded() })));`;
    return JSON.parse(execFileSync(process.execPath, ["-e", script], { cwd: ROOT, encoding: "utf8" })) as unknown;
  });
  expect(loads).toEqual({ atLoad: false, afterRequest: true });
});

test("the contributing guide's map names every folder and module of the package", () => {
  const map = fs.readFileSync(path.join(ROOT, "CONTRIBUTING.md"), "utf8");
  for (const file of MODULES) {
    expect(map).toContain(path.posix.basename(file));
    for (const folder of path.posix
      .dirname(file)
      .split("/")
      .filter((f) => f !== "."))
      expect(map).toContain(`${folder}/`);
  }
});

/** Every .ts file below simulator/, as a path from the repository ("simulator/cloud.ts"). */
const SIMULATOR_MODULES = fs
  .readdirSync(path.join(ROOT, "simulator"))
  .filter((f) => f.endsWith(".ts"))
  .map((f) => `simulator/${f}`);

test("the provider never loads the simulator, and the simulator, shipped beside it, needs only Node's built-ins", () => {
  const wrong: string[] = [];
  for (const file of MODULES)
    for (const m of read(file).matchAll(IMPORT))
      if (/simulator/.test((m[2] ?? m[3]) as string)) wrong.push(`provider/${file} -> ${m[2] ?? m[3]}`);
  expect(SIMULATOR_MODULES.length).toBeGreaterThan(4);
  for (const file of SIMULATOR_MODULES)
    for (const m of fs.readFileSync(path.join(ROOT, file), "utf8").matchAll(IMPORT)) {
      const spec = (m[2] ?? m[3]) as string;
      if (spec.startsWith(".") ? !/^\.\/[\w-]+$/.test(spec) : !NODE_BUILTINS.has(spec)) wrong.push(`${file} -> ${spec}`);
    }
  expect(wrong).toEqual([]);
});

test("the contributing guide's map names every module of the simulator, the fork janitor, the PR database action, the migration rehearsal and the plugin's program", () => {
  const map = fs.readFileSync(path.join(ROOT, "CONTRIBUTING.md"), "utf8");
  const ofFolder = (folder: string) => modulesUnder(path.join(ROOT, folder)).map((f) => `${folder}/${f}`);
  for (const file of [...SIMULATOR_MODULES, ...ofFolder("forks"), ...ofFolder("prDatabase")])
    expect(map).toContain(path.posix.basename(file));
  // The rehearsal's modules share names with others' (cli.ts, main.ts, report.ts): named with their folder.
  for (const file of [...ofFolder("rehearsal"), ...ofFolder("plugin")]) expect(map).toContain(`\`${file}\``);
});
