// What `require("pulumi-tigercloud")` costs a user's program: in a fresh node, after
// `require("@pulumi/pulumi")` (which every program pays anyway), the time and the modules the
// package adds, and whether zod, axios or pg are among them. Needs the package built (dist/) and
// linked (scripts/link-self.js). Alone: node -r ts-node/register/transpile-only scripts/bench/importCost.ts
import { execFileSync } from "child_process";
import * as path from "path";

export interface ImportCost {
  /** Median time of `require("@pulumi/pulumi")`. */
  pulumiMs: number;
  /** Median time of `require("pulumi-tigercloud")` after it. */
  packageMs: number;
  /** Modules the package adds to require.cache (median). */
  modules: number;
  /** Which of zod, axios and pg any run loaded. */
  heavy: string[];
}

const SCRIPT = `
const t0 = performance.now();
require("@pulumi/pulumi");
const t1 = performance.now();
const before = new Set(Object.keys(require.cache));
require("pulumi-tigercloud");
const t2 = performance.now();
const added = Object.keys(require.cache).filter((f) => !before.has(f));
const heavy = ["zod", "axios", "pg"].filter((name) => added.some((f) => f.includes(\`/node_modules/\${name}/\`)));
console.log(JSON.stringify({ pulumiMs: t1 - t0, packageMs: t2 - t1, modules: added.length, heavy }));`;

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
};

/** `runs` fresh node processes in `cwd` (a directory whose node_modules holds the package); the medians. */
export function measureImportCost(cwd: string, runs = 5): ImportCost {
  const samples = Array.from(
    { length: runs },
    () => JSON.parse(execFileSync(process.execPath, ["-e", SCRIPT], { cwd, encoding: "utf8" })) as ImportCost,
  );
  return {
    pulumiMs: median(samples.map((s) => s.pulumiMs)),
    packageMs: median(samples.map((s) => s.packageMs)),
    modules: median(samples.map((s) => s.modules)),
    heavy: [...new Set(samples.flatMap((s) => s.heavy))],
  };
}

if (require.main === module) console.log(JSON.stringify(measureImportCost(path.join(__dirname, "..", ".."))));
