// The README is part of the product: its code, tables and numbers must match the code.
import { execFileSync } from "child_process";
import * as fs from "fs";
import * as path from "path";
import { parse } from "yaml";
import { CLIENT_DEFAULTS } from "../../provider/api/client";
import { FORK_DIFF_RULES } from "../../provider/resources/serviceFork/inputs";
import * as errors from "../../provider/errors";
import { WAIT_DEFAULTS } from "../../provider/policies/waiting";
import { DEFAULT_API_URL, SETTING_SOURCES } from "../../provider/settings";

const ROOT = path.join(__dirname, "..", "..");
const readme = fs.readFileSync(path.join(ROOT, "README.md"), "utf8");

test("code shown from a file is that file, to the letter", () => {
  const shown = [...readme.matchAll(/<!-- file: (\S+) -->\n```\w*\n([\s\S]*?)```/g)];
  expect(shown.length).toBeGreaterThan(0);
  for (const [, file, code] of shown) expect(code).toBe(fs.readFileSync(path.join(ROOT, file as string), "utf8"));
});

test("the configuration table names every stack config key and variable, and the default URL", () => {
  for (const { config, env } of Object.values(SETTING_SOURCES)) {
    expect(readme).toContain(`\`${config}\``);
    expect(readme).toContain(`\`${env}\``);
  }
  expect(readme).toContain(DEFAULT_API_URL);
});

test("the error table names every error class", () => {
  const classes = Object.entries(errors)
    .filter(([, v]) => typeof v === "function" && /^[A-Z]/.test(v.name))
    .map(([k]) => k);
  for (const name of classes.filter((n) => n !== "TigerCloudError")) expect(readme).toContain(`| \`${name}\` |`);
});

test("the retry and waiting numbers are the code's", () => {
  expect(readme).toContain(`${CLIENT_DEFAULTS.requestTimeoutMs / 1000} s per request`);
  expect(readme).toContain(`up to ${CLIENT_DEFAULTS.maxAttempts} attempts`);
  expect(readme).toContain(`bodies over\n  ${CLIENT_DEFAULTS.maxResponseBytes / 1024 / 1024} MiB are refused`);
  expect(readme).toContain(`exponential from ${CLIENT_DEFAULTS.baseDelayMs} ms (capped at ${CLIENT_DEFAULTS.maxDelayMs / 1000} s)`);
  expect(readme).toContain(`more than ${CLIENT_DEFAULTS.maxTotalMs / 1000} s after the first attempt`);
  expect(readme).toContain(`on ${CLIENT_DEFAULTS.retryStatuses.slice(0, -1).join(", ")} and ${CLIENT_DEFAULTS.retryStatuses.at(-1)}`);
  expect(readme).toContain(
    `every ${WAIT_DEFAULTS.firstPollMs / 1000} s at first, then every ${WAIT_DEFAULTS.pollShare * 100}% of the time waited so far, at\nmost every ${WAIT_DEFAULTS.maxPollMs / 1000} s`,
  );
  expect(readme).toContain(
    `(defaults \`${WAIT_DEFAULTS.createTimeout}\`, \`${WAIT_DEFAULTS.updateTimeout}\` and \`${WAIT_DEFAULTS.deleteTimeout}\`)`,
  );
});

test("the Tested versions table is the toolchain the lanes run, and ensure-pulumi builds that CLI", () => {
  const toolchain = require("../../scripts/toolchain") as {
    main: { node: string; sdk: string };
    pulumiCli: string;
    floor: { node: string; sdk: string };
  };
  const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, "package.json"), "utf8")) as {
    devDependencies: Record<string, string>;
    peerDependencies: Record<string, string>;
  };
  expect(toolchain.main.sdk).toBe(pkg.devDependencies["@pulumi/pulumi"]);
  expect(pkg.peerDependencies["@pulumi/pulumi"]).toBe(`^${toolchain.floor.sdk}`);
  const script = fs.readFileSync(path.join(ROOT, "scripts", "ensure-pulumi"), "utf8");
  expect(script).toContain(`PULUMI_VERSION="\${PULUMI_VERSION:-${toolchain.pulumiCli}}"`);
  const from = readme.indexOf("## Tested versions");
  const table = readme.slice(from, readme.indexOf("\n\n", readme.indexOf("| main lane", from)));
  const row = (lane: string) => table.split("\n").find((line) => line.startsWith(`| ${lane} |`)) ?? "";
  expect(row("main lane")).toContain(`| ${toolchain.main.node} (LTS) | ${toolchain.main.sdk} (the newest) | ${toolchain.pulumiCli} |`);
  expect(row("floor lane")).toContain(
    `| ${toolchain.floor.node.split(".")[0]} (the machine's, else ${toolchain.floor.node}) | ${toolchain.floor.sdk} (the peer range's oldest) | ${toolchain.pulumiCli} |`,
  );
  expect(readme).toContain(`pulumi-v${toolchain.pulumiCli}`);
  expect(readme).toContain(`at version >= ${toolchain.pulumiCli}`);
  expect(readme).toContain(`peer range \`^${toolchain.floor.sdk}\``);
  expect(readme).toContain(`sdk-v${toolchain.floor.sdk}`);
  // The examples' workflows set up the main lane's Node.js (the workflow runner checks what they ask).
  const workflows = path.join(ROOT, "examples");
  const asked = execFileSync("grep", ["-rhoE", "node-version: \\S+", workflows], { encoding: "utf8" }).trim().split("\n");
  expect(asked.length).toBeGreaterThan(0);
  for (const line of asked) expect(line).toBe(`node-version: ${toolchain.main.node.split(".")[0]}`);
});

test("the ServiceFork changes table is the diff's rules: what replaces, what changes in place, what only state records", () => {
  const from = readme.indexOf("| Input | A change | Why |");
  const table = readme.slice(from, readme.indexOf("\n\n", from));
  const rows = table
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line.startsWith("| `"));
  const keysOf = (kind: RegExp) =>
    rows
      .filter((row) => kind.test(row.split("|")[2] ?? ""))
      .flatMap((row) => [...(row.split("|")[1] ?? "").matchAll(/`(\w+)`/g)].map((m) => m[1]))
      .sort();
  expect(keysOf(/^\s*\*\*replaces\*\*/)).toEqual([...FORK_DIFF_RULES.replaceKeys].sort());
  expect(keysOf(/^\s*in place/)).toEqual([...(FORK_DIFF_RULES.updateKeys ?? [])].sort());
  expect(keysOf(/^\s*state only/)).toEqual([...(FORK_DIFF_RULES.stateOnlyKeys ?? [])].sort());
});

test("the pipelines take the key pair, as the README says: every example workflow passes TIGER_PUBLIC_KEY and TIGER_SECRET_KEY from its secrets and never a bearer TIGER_API_KEY", () => {
  const workflows = fs
    .readdirSync(path.join(ROOT, "examples"))
    .map((example) => path.join(ROOT, "examples", example, ".github", "workflows"))
    .filter((dir) => fs.existsSync(dir))
    .flatMap((dir) => fs.readdirSync(dir).map((file) => path.join(dir, file)));
  expect(workflows).toHaveLength(5);
  for (const file of workflows) {
    const text = fs.readFileSync(file, "utf8");
    const env = (parse(text) as { env: Record<string, string> }).env;
    expect([file, env.TIGER_PUBLIC_KEY, env.TIGER_SECRET_KEY]).toEqual([
      file,
      "${{ secrets.TIGER_PUBLIC_KEY }}",
      "${{ secrets.TIGER_SECRET_KEY }}",
    ]);
    expect([file, text.includes("TIGER_API_KEY")]).toEqual([file, false]);
  }
  // The PR pipeline's table names the pair as its secrets (production's says "as pr-fork.yml").
  const section = readme.slice(readme.indexOf("## GitOps: a fork for each pull request"));
  const row = section.split("\n").find((line) => line.startsWith("| [`pr-fork.yml`]")) ?? "";
  expect(row).toContain("`TIGER_PUBLIC_KEY` and `TIGER_SECRET_KEY`");
  expect(row).not.toContain("TIGER_API_KEY");
  // The configuration table says what each credential is, and which one a pipeline takes.
  const setting = (name: string) => readme.split("\n").find((line) => line.startsWith(`| ${name} |`)) ?? "";
  expect(setting("API key")).toMatch(/bearer token.*\*\*expires\*\*.*not a pipeline/i);
  expect(setting("Public key")).toMatch(/\*\*long-lived\*\*.*\*\*Use the pair in pipelines\*\*/);
});

describe("no text cites a file outside the repository, or one that does not exist", () => {
  const tracked = execFileSync("git", ["ls-files", "-z"], { cwd: ROOT, encoding: "utf8" })
    .split("\0")
    .filter((file) => file !== "" && fs.existsSync(path.join(ROOT, file)))
    .map((file) => ({ file, text: fs.readFileSync(path.join(ROOT, file), "utf8") }))
    .filter(({ text }) => !text.includes("\0"));
  // Built, so that this file does not hold what it looks for.
  const notes = ["API", "NOTES"].join("-");

  test(`no tracked file names the ${notes} that lived beside the repository`, () => {
    expect(tracked.filter(({ text }) => text.includes(notes)).map(({ file }) => file)).toEqual([]);
  });

  test("no code, test or example cites an issue of the project's tracker by number (they mean nothing to a reader of the repository)", () => {
    // Built, so that this file does not match itself.
    const citation = new RegExp(["\\bissue", "\\s+\\d+"].join(""), "i");
    const code = tracked.filter(({ file }) => /^(provider|simulator|test|scripts|examples)\//.test(file) || file === ".ci/run");
    expect(code.length).toBeGreaterThan(50);
    expect(code.filter(({ text }) => citation.test(text)).map(({ file }) => file)).toEqual([]);
  });

  /**
   * A citation: a path from the repository's root (`provider/…`, `test/…`, `scripts/…`,
   * `examples/…`, `.ci/…`, `docs/…`) not inside a longer path or a URL, ending in a letter or digit
   * (a trailing period ends the sentence); or a `../` path to a file (it has an extension) that is
   * not a module an import or require loads.
   */
  const CITATION = /(?<![\w./@<>$~-])((?:provider|test|scripts|examples|\.ci|docs)\/[\w./-]*\w|\.\.\/[\w./-]*\.[a-z]{1,5}\b)/g;
  const IMPORTED = /(?:from\s+|require\(|import\()\s*["'`]$/;
  const citations = tracked.flatMap(({ file, text }) =>
    text
      .split("\n")
      .flatMap((line, i) =>
        [...line.matchAll(CITATION)]
          .filter((m) => !IMPORTED.test(line.slice(0, m.index)))
          .map((m) => ({ where: `${file}:${i + 1}`, cited: m[1] as string })),
      ),
  );
  const exists = (cited: string) => [cited, `${cited}.ts`, `${cited}.js`].some((p) => fs.existsSync(path.join(ROOT, p)));

  test("the scan finds the citations there are (it is not blind)", () => {
    expect(citations.map((c) => c.cited)).toEqual(expect.arrayContaining(["scripts/ensure-postgresql", "examples/pr-fork/index.ts"]));
  });

  test("every cited path exists in the repository, and none leads out of it with ../", () => {
    const broken = citations.filter(({ cited }) => cited.startsWith("../") || !exists(cited));
    expect(broken.map(({ where, cited }) => `${where}: ${cited}`)).toEqual([]);
  });
});
