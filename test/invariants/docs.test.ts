// The documentation is part of the product: the README (in a reader's order), the guides in docs/
// and CONTRIBUTING.md. Their code, tables and numbers must match the code, each read from the file
// where it now lives.
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
const doc = (file: string) => fs.readFileSync(path.join(ROOT, file), "utf8");
/** The README: what it is, install and credentials, a first program, the reference. */
const readme = doc("README.md");
/** The contributor's material: the two commands in full, the tested versions, the CLI, the map. */
const contributing = doc("CONTRIBUTING.md");
/** The guides the README links to, one Markdown file each. */
const GUIDES = fs
  .readdirSync(path.join(ROOT, "docs"))
  .filter((f) => f.endsWith(".md"))
  .map((f) => `docs/${f}`);
/** The guide that holds the pull-request pipeline, its pausing and the fork janitor. */
const prDatabases = doc("docs/pr-databases.md");

const SHOWN = /<!-- file: (\S+) -->\n```\w*\n([\s\S]*?)```/g;

test("code shown from a file is that file, to the letter, in the README and in every guide", () => {
  expect([...readme.matchAll(SHOWN)].length).toBeGreaterThan(0);
  for (const file of ["README.md", "CONTRIBUTING.md", ...GUIDES])
    for (const [, shown, code] of doc(file).matchAll(SHOWN))
      expect([file, shown, code]).toEqual([file, shown, fs.readFileSync(path.join(ROOT, shown as string), "utf8")]);
});

test("the README is read top to bottom: at most 700 lines, Install within its first 40, and a link to every guide in docs/", () => {
  const lines = readme.split("\n");
  expect(lines.length).toBeLessThanOrEqual(700);
  const install = lines.findIndex((line) => /^## Install\b/.test(line));
  expect(install).toBeGreaterThanOrEqual(0);
  expect(install).toBeLessThan(40);
  // Every guide it links to exists, and every guide there is, it links to.
  const linked = [...new Set([...readme.matchAll(/\]\((docs\/[\w.-]+\.md)(?:#[\w-]*)?\)/g)].map((m) => m[1] as string))].sort();
  for (const guide of linked) expect([guide, fs.existsSync(path.join(ROOT, guide))]).toEqual([guide, true]);
  expect(GUIDES.length).toBeGreaterThan(0);
  expect(linked).toEqual([...GUIDES].sort());
  // And it links the contributor's guide, where its two commands are told in full.
  expect(readme).toContain("](CONTRIBUTING.md");
  expect(readme).toContain("npm ci && npm run demo");
  expect(readme).toContain("npm ci && npm test");
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
  // The table and the CLI's build are the contributor's: CONTRIBUTING.md holds them.
  const from = contributing.indexOf("## Tested versions");
  expect(from).toBeGreaterThanOrEqual(0);
  const table = contributing.slice(from, contributing.indexOf("\n\n", contributing.indexOf("| main lane", from)));
  const row = (lane: string) => table.split("\n").find((line) => line.startsWith(`| ${lane} |`)) ?? "";
  expect(row("main lane")).toContain(`| ${toolchain.main.node} (LTS) | ${toolchain.main.sdk} (the newest) | ${toolchain.pulumiCli} |`);
  expect(row("floor lane")).toContain(
    `| ${toolchain.floor.node.split(".")[0]} (the machine's, else ${toolchain.floor.node}) | ${toolchain.floor.sdk} (the peer range's oldest) | ${toolchain.pulumiCli} |`,
  );
  expect(contributing).toContain(`pulumi-v${toolchain.pulumiCli}`);
  expect(contributing).toContain(`at version >= ${toolchain.pulumiCli}`);
  expect(contributing).toContain(`peer range \`^${toolchain.floor.sdk}\``);
  expect(contributing).toContain(`sdk-v${toolchain.floor.sdk}`);
  // The README, where a user installs, names the same floor.
  expect(readme).toContain(`Any \`@pulumi/pulumi\` from ${toolchain.floor.sdk} on works`);
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

test("the pipelines take the key pair, as the docs say: every example workflow passes TIGER_PUBLIC_KEY and TIGER_SECRET_KEY from its secrets and never a bearer TIGER_API_KEY", () => {
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
  expect(prDatabases).toContain("## GitOps: a fork for each pull request");
  const section = prDatabases.slice(prDatabases.indexOf("## GitOps: a fork for each pull request"));
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
   * A citation: a path from the repository's root (`provider/…`, `forks/…`, `simulator/…`,
   * `test/…`, `scripts/…`, `examples/…`, `.ci/…`, `docs/…`) not inside a longer path or a URL,
   * ending in a letter or digit (a trailing period ends the sentence); or a `../` path to a file (it
   * has an extension) that is not a module an import or require loads.
   */
  const CITATION =
    /(?<![\w./@<>$~-])((?:provider|forks|simulator|test|scripts|examples|\.ci|docs)\/[\w./-]*\w|\.\.\/[\w./-]*\.[a-z]{1,5}\b)/g;
  const IMPORTED = /(?:from\s+|require\(|import\()\s*["'`]$/;
  const citations = tracked.flatMap(({ file, text }) =>
    text
      .split("\n")
      .flatMap((line, i) =>
        [...line.matchAll(CITATION)]
          .filter((m) => !IMPORTED.test(line.slice(0, m.index)))
          .map((m) => ({ file, where: `${file}:${i + 1}`, cited: m[1] as string })),
      ),
  );
  const exists = (cited: string) => [cited, `${cited}.ts`, `${cited}.js`].some((p) => fs.existsSync(path.join(ROOT, p)));
  /**
   * A guide below the root (docs/…) links to the repository's files relatively, as Markdown
   * resolves a link: from its own folder. Such a `../` path is the path it resolves to, which must
   * stay inside the repository; elsewhere, a `../` citation is broken.
   */
  const resolved = (file: string, cited: string): string | undefined => {
    if (!cited.startsWith("../")) return cited;
    if (!file.endsWith(".md") || !file.includes("/")) return undefined;
    const target = path.posix.normalize(path.posix.join(path.posix.dirname(file), cited));
    return target.startsWith("../") ? undefined : target;
  };

  test("the scan finds the citations there are (it is not blind)", () => {
    expect(citations.map((c) => c.cited)).toEqual(
      expect.arrayContaining([
        "scripts/ensure-postgresql",
        "examples/pr-fork/index.ts",
        "forks/cli.ts",
        "simulator/databases.ts",
        "docs/pr-databases.md",
        // A guide's link up to the README (built, so that this file does not cite it).
        ["..", "README.md"].join("/"),
      ]),
    );
    // The Markdown files are scanned: the README, the contributor's guide and every guide.
    const scanned = new Set(citations.map((c) => c.file));
    for (const file of ["README.md", "CONTRIBUTING.md", ...GUIDES]) expect([file, scanned.has(file)]).toEqual([file, true]);
  });

  test("every cited path exists in the repository, and none leads out of it with ../", () => {
    const broken = citations.filter(({ file, cited }) => {
      const target = resolved(file, cited);
      return target === undefined || !exists(target);
    });
    expect(broken.map(({ where, cited }) => `${where}: ${cited}`)).toEqual([]);
  });
});
