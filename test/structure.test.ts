// The layout holds: every module is in one layer, and imports run only where its layer may reach.
// The program side (what a user's program loads) reaches nothing of the provider side, so
// `require("pulumi-tigercloud")` loads no zod, axios or pg; the README's map names every module.
import { execFileSync } from "child_process";
import * as fs from "fs";
import { builtinModules } from "module";
import * as path from "path";
import * as ts from "typescript";

const ROOT = path.join(__dirname, "..");
const PROVIDER = path.join(ROOT, "provider");

/** Every .ts file below provider/, as a path from there ("api/client.ts"). */
function modulesUnder(dir = ""): string[] {
  return fs.readdirSync(path.join(PROVIDER, dir), { withFileTypes: true }).flatMap((entry) => {
    const rel = path.posix.join(dir, entry.name);
    if (entry.isDirectory()) return modulesUnder(rel);
    return entry.name.endsWith(".ts") ? [rel] : [];
  });
}
const MODULES = modulesUnder();

interface Import {
  /** A module of provider/ ("rules/inputs.ts"), or a package's name ("zod", "@pulumi/pulumi", "fs"). */
  target: string;
  /** `import type`: erased from the JavaScript, so it loads nothing. */
  typeOnly: boolean;
}

const IMPORT = /(?:^|\n)\s*(?:import|export)\s+(type\s+)?(?:[^;"]*?\s+from\s+)?"([^"]+)"|\brequire\("([^"]+)"\)/g;

function importsOf(file: string): Import[] {
  const text = fs.readFileSync(path.join(PROVIDER, file), "utf8");
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

const SHARED = ["errors.ts", "run.ts", "settings.ts", "text.ts", "time.ts", "version.ts"];
/** Each layer: which modules are in it, and which layers its modules may import. */
const LAYERS: Record<string, { holds: (file: string) => boolean; mayImport: string[] }> = {
  entry: { holds: (f) => ["index.ts", "runtime.ts", "watchdog.ts"].includes(f), mayImport: ["program", "shared", "resources", "engine"] },
  shared: { holds: (f) => SHARED.includes(f), mayImport: ["shared"] },
  program: { holds: (f) => f.startsWith("program/"), mayImport: ["program", "shared"] },
  api: { holds: (f) => f.startsWith("api/"), mayImport: ["api", "shared"] },
  engine: { holds: (f) => f.startsWith("engine/"), mayImport: ["engine", "api", "shared"] },
  rules: { holds: (f) => f.startsWith("rules/"), mayImport: ["rules", "shared"] },
  workflows: { holds: (f) => f.startsWith("workflows/"), mayImport: ["workflows", "engine", "rules", "api", "shared"] },
  resources: { holds: (f) => f.startsWith("resources/"), mayImport: ["resources", "workflows", "engine", "rules", "api", "shared"] },
  // The provider plugin: the second host of the resources' lifecycles, for every language.
  plugin: { holds: (f) => f.startsWith("plugin/"), mayImport: ["plugin", "resources", "engine", "rules", "shared"] },
  // The fork janitor, a command of its own: no engine, so no host and no context.
  forks: { holds: (f) => f.startsWith("forks/"), mayImport: ["forks", "resources", "workflows", "api", "shared"] },
};
const layerOf = (file: string) => Object.keys(LAYERS).filter((layer) => LAYERS[layer]?.holds(file));
const NODE_BUILTINS = new Set(builtinModules);

test("every module of the package is in exactly one layer", () => {
  expect(MODULES.length).toBeGreaterThan(20);
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
  for (const file of MODULES.filter((f) => ["program", "shared"].includes(layerOf(f)[0] as string) || f === "index.ts"))
    for (const { target } of importsOf(file))
      if (!target.endsWith(".ts") && target !== "@pulumi/pulumi" && !NODE_BUILTINS.has(target)) wrong.push(`${file} -> ${target}`);
  expect(wrong).toEqual([]);
});

test("no module keeps state of its own: the host (engine/) holds the settings and what a run learns, handed on in each call's context", () => {
  // A module-level let or var, or a collection made at load (which is filled later), outside it;
  // on the program side (no host there: a program's process is one run), the serialized providers' memo.
  const STATE = /^(?:export\s+)?(?:let|var)\s|^(?:export\s+)?const\s+\w+(?:\s*:[^=]+)?=\s*new\s+(?:Map|Set|WeakMap|WeakSet)\b/m;
  const holders = MODULES.filter((f) => STATE.test(fs.readFileSync(path.join(PROVIDER, f), "utf8")));
  expect(holders.filter((f) => !f.startsWith("engine/") && f !== "program/serializedProvider.ts")).toEqual([]);
  expect(holders).toContain("engine/host.ts"); // the scan sees state where there is some
});

test("only the host builds a call's context: below it, settings, the client and progress come from the context handed in", () => {
  // The hosts: the dynamic provider's adapter and the plugin's server.
  const HOSTS = ["resources/defineProvider.ts", "plugin/server.ts"];
  const reaching = MODULES.filter((f) => !f.startsWith("engine/") && !HOSTS.includes(f)).filter((f) =>
    importsOf(f).some(({ target, typeOnly }) => target === "engine/host.ts" && !typeOnly),
  );
  expect(reaching).toEqual([]);
  // The scan sees such an import where there is one.
  expect(importsOf("resources/defineProvider.ts").some(({ target, typeOnly }) => target === "engine/host.ts" && !typeOnly)).toBe(true);
});

test("the engine's property bags are typed at the host boundary: Record<string, unknown> only there", () => {
  // The boundary: the host, the adapter that parses the engine's bags into each resource's typed
  // inputs and state and writes them back (and the bag rules it applies), and the error that
  // hands the engine a state to record. Every lifecycle below takes and returns typed values.
  // The plugin's wire (plugin/wire.ts) is the same boundary for the second host.
  const BOUNDARY = [
    "resources/defineProvider.ts",
    "rules/inputs.ts",
    "rules/state.ts",
    "rules/outputs.ts",
    "rules/diff.ts",
    "errors.ts",
    "plugin/wire.ts",
  ];
  const bags = MODULES.filter((f) => fs.readFileSync(path.join(PROVIDER, f), "utf8").includes("Record<string, unknown>"));
  expect(bags.filter((f) => !f.startsWith("engine/") && !BOUNDARY.includes(f))).toEqual([]);
  expect(bags).toContain("resources/defineProvider.ts"); // the scan sees a bag where there is one
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
      const source = fs.readFileSync(path.join(PROVIDER, file), "utf8");
      const js = ts.transpileModule(source, { compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022 } });
      const target = path.join(out, "provider", file.replace(/\.ts$/, ".js"));
      fs.mkdirSync(path.dirname(target), { recursive: true });
      fs.writeFileSync(target, js.outputText);
    }
    return use(path.join(out, "provider"));
  } finally {
    fs.rmSync(out, { recursive: true, force: true });
  }
}

test("the package entry reaches only the program side and the shared modules: no zod, axios, pg, API client or kit", () => {
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
  const loads = withTranspiled(["runtime.ts", "api/client.ts"], (dir) => {
    const script = `
      const axiosLoaded = () => Object.keys(require.cache).some((f) => /[\\\\/]node_modules[\\\\/]axios[\\\\/]/.test(f));
      require(${JSON.stringify(path.join(dir, "runtime.js"))});
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

test("the README's Developing map names every folder and module of the package", () => {
  const readme = fs.readFileSync(path.join(ROOT, "README.md"), "utf8");
  const map = readme.slice(readme.indexOf("## Developing"));
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
    for (const m of fs.readFileSync(path.join(PROVIDER, file), "utf8").matchAll(IMPORT))
      if (/simulator/.test((m[2] ?? m[3]) as string)) wrong.push(`provider/${file} -> ${m[2] ?? m[3]}`);
  expect(SIMULATOR_MODULES.length).toBeGreaterThan(4);
  for (const file of SIMULATOR_MODULES)
    for (const m of fs.readFileSync(path.join(ROOT, file), "utf8").matchAll(IMPORT)) {
      const spec = (m[2] ?? m[3]) as string;
      if (spec.startsWith(".") ? !/^\.\/[\w-]+$/.test(spec) : !NODE_BUILTINS.has(spec)) wrong.push(`${file} -> ${spec}`);
    }
  expect(wrong).toEqual([]);
});

test("the README's Developing map names every module of the simulator", () => {
  const readme = fs.readFileSync(path.join(ROOT, "README.md"), "utf8");
  const map = readme.slice(readme.indexOf("## Developing"));
  for (const file of SIMULATOR_MODULES) expect(map).toContain(path.posix.basename(file));
});
