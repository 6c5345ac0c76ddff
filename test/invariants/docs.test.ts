// The documentation is part of the product: the README (in a reader's order), the guides in docs/
// (the Pulumi Registry's two pages among them), CONTRIBUTING.md and the SDKs' READMEs. Their code,
// tables and numbers must match the code, each read from the file where it now lives.
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
/** A generated example as a Markdown fence holds it: Markdown keeps no blank lines at a fence's end (C#'s generator writes one). */
const generated = (file: string) => doc(file).replace(/\n+$/, "\n");
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

test("npm ci warns of no engine on the Node.js versions the README names: every locked package admits the floor lane's Node.js and the main lane's", () => {
  const semver = require("semver") as { satisfies: (version: string, range: string) => boolean };
  const toolchain = require("../../scripts/toolchain") as { main: { node: string }; floor: { node: string } };
  const lock = JSON.parse(fs.readFileSync(path.join(ROOT, "package-lock.json"), "utf8")) as {
    packages: Record<string, { version?: string; engines?: { node?: string } | string[] }>;
  };
  expect(readme).toContain("Node.js 20 or later");
  const refused = Object.entries(lock.packages).flatMap(([where, p]) => {
    const range = !p.engines || Array.isArray(p.engines) ? undefined : p.engines.node;
    return range
      ? [toolchain.floor.node, toolchain.main.node]
          .filter((v) => !semver.satisfies(v, range))
          .map((v) => `${where}@${p.version} wants ${range}, not ${v}`)
      : [];
  });
  expect(refused).toEqual([]);
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
  // npm ci installs the floor's SDK (it installs on Node.js 20 without a warning); the lanes put theirs in place.
  expect(pkg.devDependencies["@pulumi/pulumi"]).toBe(toolchain.floor.sdk);
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
  expect(contributing).toContain("sdk-v<version>");
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

test("the pipelines take the key pair, as the docs say: production's workflows pass TIGER_PUBLIC_KEY and TIGER_SECRET_KEY from their secrets, the PR database action reads those names, and none a bearer TIGER_API_KEY", () => {
  const workflows = fs
    .readdirSync(path.join(ROOT, "examples"))
    .map((example) => path.join(ROOT, "examples", example, ".github", "workflows"))
    .filter((dir) => fs.existsSync(dir))
    .flatMap((dir) => fs.readdirSync(dir).map((file) => path.join(dir, file)));
  expect(workflows).toHaveLength(4);
  for (const file of workflows.filter((f) => path.basename(f).startsWith("production-"))) {
    const text = fs.readFileSync(file, "utf8");
    const env = (parse(text) as { env: Record<string, string> }).env;
    expect([file, env.TIGER_PUBLIC_KEY, env.TIGER_SECRET_KEY]).toEqual([
      file,
      "${{ secrets.TIGER_PUBLIC_KEY }}",
      "${{ secrets.TIGER_SECRET_KEY }}",
    ]);
    expect([file, text.includes("TIGER_API_KEY")]).toEqual([file, false]);
  }
  // The PR workflow hands the action each secret it needs as an input of its own, the pair among them.
  const pr = parse(fs.readFileSync(path.join(ROOT, "examples", "pr-fork", ".github", "workflows", "pr-database.yml"), "utf8")) as {
    jobs: Record<string, { steps: { uses?: string; with?: Record<string, string> }[] }>;
  };
  const action = Object.values(pr.jobs)
    .flatMap((j) => j.steps)
    .find((step) => step.uses?.includes("/actions/pr-database@"));
  expect(action?.with?.["tiger-public-key"]).toBe("${{ secrets.TIGER_PUBLIC_KEY }}");
  expect(action?.with?.["tiger-secret-key"]).toBe("${{ secrets.TIGER_SECRET_KEY }}");
  // No step is handed every secret of the repository: not in the action, the example or any doc.
  for (const file of ["actions/pr-database/action.yml", "examples/pr-fork/.github/workflows/pr-database.yml", "README.md", ...GUIDES])
    expect([file, /toJSON\(\s*secrets\s*\)/.test(doc(file))]).toEqual([file, false]);
  // The guide names every input of the action, and the secrets they are given from.
  const inputs = Object.keys((parse(doc("actions/pr-database/action.yml")) as { inputs: Record<string, unknown> }).inputs);
  expect(inputs).toEqual(expect.arrayContaining(["tiger-public-key", "tiger-secret-key", "github-token"]));
  const section = prDatabases.slice(prDatabases.indexOf("## GitOps: a database for each pull request"));
  expect(section).toContain("`TIGER_PUBLIC_KEY` and\n`TIGER_SECRET_KEY` (the key pair made in the console");
  for (const name of inputs) expect([name, section.includes(`\`${name}\``)]).toEqual([name, true]);
  for (const name of ["TIGER_PUBLIC_KEY", "TIGER_SECRET_KEY", "PULUMI_BACKEND_URL", "PULUMI_CONFIG_PASSPHRASE", "PULUMI_ACCESS_TOKEN"])
    expect([name, section.includes(`\`${name}\``)]).toEqual([name, true]);
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

// ---- the Pulumi Registry's pages (docs/_index.md, docs/installation-configuration.md) and the SDKs' READMEs

/** The project's home, as the Registry's pages and the SDKs' READMEs link into it. */
const REPOSITORY = "https://github.com/tigercloud/pulumi-tigercloud";
/** The pages the Registry shows for a community package, with the layout each is shown in. */
const REGISTRY_PAGES = { "docs/_index.md": "overview", "docs/installation-configuration.md": "installation" } as const;
/** The program every language's example shows, as Pulumi's program generators wrote it. */
const EXAMPLE = "sdk/examples/ServiceFork.for-a-pull-request";
/** The Registry's chooser languages, in the order shown, with the generated file of each. */
const EXAMPLE_FILES = { typescript: "index.ts", python: "__main__.py", go: "main.go", csharp: "Program.cs", yaml: "Main.yaml" } as const;
/** The READMEs of the SDKs (scripts/gen-sdks/run puts each into its SDK), with their example's language. */
const SDK_READMES = {
  "scripts/gen-sdks/readme/python.md": "python",
  "scripts/gen-sdks/readme/go.md": "go",
  "scripts/gen-sdks/readme/dotnet.md": "csharp",
} as const;

/** How each language installs, read from what each package is: its manifest's name, not the docs. */
function installCommands(): Record<"typescript" | "python" | "go" | "csharp", string> {
  const npm = (JSON.parse(doc("package.json")) as { name: string }).name;
  // PyPI's name, normalized as pip looks it up (PEP 503): pulumi_tigercloud is pulumi-tigercloud.
  const pyproject = /^\s*name\s*=\s*"([^"]+)"/m.exec(doc("sdk/python/pyproject.toml"))?.[1] ?? "";
  const python = pyproject.toLowerCase().replace(/[-_.]+/g, "-");
  const goModule = /^module (\S+)$/m.exec(doc("sdk/go/go.mod"))?.[1] ?? "";
  // The csproj sets no PackageId: the package is named after the project file.
  const csproj = fs.readdirSync(path.join(ROOT, "sdk", "dotnet")).filter((f) => f.endsWith(".csproj"));
  expect(csproj).toHaveLength(1);
  expect(doc(`sdk/dotnet/${csproj[0]}`)).not.toContain("<PackageId>");
  return {
    typescript: `npm install ${npm} @pulumi/pulumi`,
    python: `pip install ${python} pulumi`,
    go: `go get ${goModule}`,
    csharp: `dotnet add package ${(csproj[0] as string).replace(/\.csproj$/, "")}`,
  };
}
const SCHEMA_DOWNLOAD_URL = (JSON.parse(doc("provider/hosts/plugin/schema.json")) as { pluginDownloadURL: string }).pluginDownloadURL;

/** A page's front matter, parsed, and what follows it. */
function frontMatter(text: string): { fields: Record<string, unknown>; body: string } {
  const m = /^---\n([\s\S]*?)\n---\n/.exec(text);
  return m ? { fields: parse(m[1] as string) as Record<string, unknown>, body: text.slice(m[0].length) } : { fields: {}, body: text };
}

/** Every fenced block of a Markdown text: its info string and its content, to the letter. */
const fences = (text: string) =>
  [...text.matchAll(/^```(\w*)\n([\s\S]*?)^```$/gm)].map((m) => ({ lang: m[1] as string, code: m[2] as string }));

/** Every Markdown link's target, outside fenced blocks. */
const linksOf = (text: string) => [...text.replace(/^```\w*\n[\s\S]*?^```$/gm, "").matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1] as string);

/**
 * Where a link in a page read off this repository (the Registry's, PyPI's, pkg.go.dev's, NuGet's)
 * leads in the checkout: a link into the repository on GitHub names a file or folder of it, a
 * relative link names another Registry page as the Registry links pages (without `.md`, from the
 * page's folder). Undefined: it leads nowhere there.
 */
function linkTarget(page: string, link: string): string | undefined {
  if (link.startsWith(`${REPOSITORY}/`)) {
    const m = /^\/(?:blob|tree)\/main\/([^#?]+)(?:#.*)?$/.exec(link.slice(REPOSITORY.length));
    return m ? (m[1] as string) : link === `${REPOSITORY}/releases` ? "." : undefined;
  }
  if (link === REPOSITORY) return ".";
  if (/^https?:\/\//.test(link)) return "external";
  // A relative link: only to a sibling Registry page, as the Registry's own links are written.
  if (!(page in REGISTRY_PAGES) || link.endsWith(".md") || link.includes("#")) return undefined;
  const target = path.posix.join(path.posix.dirname(page), `${link.replace(/^\.\//, "")}.md`);
  return target in REGISTRY_PAGES ? target : undefined;
}

describe("the Pulumi Registry's pages", () => {
  test("both exist, with the front matter the Registry reads: a title, a meta_desc and the page's layout", () => {
    for (const [page, layout] of Object.entries(REGISTRY_PAGES)) {
      expect([page, fs.existsSync(path.join(ROOT, page))]).toEqual([page, true]);
      const { fields, body } = frontMatter(doc(page));
      expect([page, Object.keys(fields).sort()]).toEqual([page, ["layout", "meta_desc", "title"]]);
      expect([page, fields.layout]).toEqual([page, layout]);
      for (const field of ["title", "meta_desc"]) expect([page, field, typeof fields[field]]).toEqual([page, field, "string"]);
      expect(String(fields.title)).toMatch(/^Tiger Cloud\b/);
      expect(String(fields.meta_desc).length).toBeGreaterThan(40);
      // The title is the page's heading: no second title in its text (a code block's comments aside).
      expect([page, /^#\s/m.test(body.replace(/^```\w*\n[\s\S]*?^```$/gm, ""))]).toEqual([page, false]);
    }
  });

  test("the overview's example is the generated program in each language, to the letter, one block per language in the Registry's chooser", () => {
    const overview = doc("docs/_index.md");
    const chooser = /\{\{< chooser language "([^"]+)" >\}\}([\s\S]*?)\{\{< \/chooser >\}\}/.exec(overview);
    expect(chooser).not.toBeNull();
    const [, languages, inside] = chooser as unknown as [string, string, string];
    expect(languages.split(",")).toEqual(Object.keys(EXAMPLE_FILES));
    const choosables = [...inside.matchAll(/\{\{% choosable language (\w+) %\}\}([\s\S]*?)\{\{% \/choosable %\}\}/g)];
    expect(choosables.map((m) => m[1])).toEqual(Object.keys(EXAMPLE_FILES));
    // Nothing of a block left outside a choosable: each closes what it opens.
    expect(inside.replace(/\{\{% choosable language \w+ %\}\}[\s\S]*?\{\{% \/choosable %\}\}/g, "").trim()).toBe("");
    for (const [, language, block] of choosables) {
      const file = `${EXAMPLE}/${EXAMPLE_FILES[language as keyof typeof EXAMPLE_FILES]}`;
      expect([language, fences(block as string)]).toEqual([language, [{ lang: language, code: generated(file) }]]);
    }
  });

  test("the settings table is SETTING_SOURCES: each setting's name, stack config key (secret or not), variable and default, in order", () => {
    const page = doc("docs/installation-configuration.md");
    const header = "| Setting | Stack config | Environment variable | Default |";
    const from = page.indexOf(header);
    expect(from).toBeGreaterThanOrEqual(0);
    const rows = page
      .slice(from, page.indexOf("\n\n", from))
      .split("\n")
      .slice(2)
      .map((line) =>
        line
          .split("|")
          .slice(1, 5)
          .map((cell) => cell.trim()),
      );
    // The default each setting's description states (the schema's words, "Default: VARIABLE, then ..."), or none.
    const expected = Object.entries(SETTING_SOURCES).map(([name, source]) => {
      const stated = /Default: (\w+)(?:, then (.+))?\.$/.exec(source.description);
      expect([name, stated?.[1]]).toEqual([name, source.env]);
      const fallback = stated?.[2];
      const shown = fallback === undefined ? "none" : /^(https?:\/\/\S+|true|false)$/.test(fallback) ? `\`${fallback}\`` : fallback;
      return [`\`${name}\``, `\`${source.config}\`${source.secret ? " (secret)" : ""}`, `\`${source.env}\``, shown];
    });
    expect(rows).toEqual(expected);
    // The URL a setting falls back to is the code's.
    expect(rows.find((row) => row[0] === "`apiUrl`")?.[3]).toBe(`\`${DEFAULT_API_URL}\``);
  });

  test("the install commands name the packages as their manifests do, and the plugin's URL as the schema does", () => {
    const page = doc("docs/installation-configuration.md");
    for (const [language, command] of Object.entries(installCommands()))
      expect([language, fences(page).some(({ code }) => code.split("\n").includes(command))]).toEqual([language, true]);
    expect(page).toContain(`pluginDownloadURL: ${SCHEMA_DOWNLOAD_URL}`);
    expect(page).toContain(`pulumi plugin install resource tigercloud --server ${SCHEMA_DOWNLOAD_URL}`);
    expect(doc("docs/_index.md")).toContain(`pluginDownloadURL: ${SCHEMA_DOWNLOAD_URL}`);
  });

  test("every link resolves where the pages are read: into this repository by its GitHub address, or to the other page as the Registry names it", () => {
    const checked: string[] = [];
    for (const page of Object.keys(REGISTRY_PAGES)) {
      const links = linksOf(doc(page));
      expect([page, links.length > 2]).toEqual([page, true]);
      const broken = links.filter((link) => {
        const target = linkTarget(page, link);
        checked.push(`${page}: ${link} -> ${target}`);
        return target === undefined || (target !== "external" && !fs.existsSync(path.join(ROOT, target)));
      });
      expect([page, broken]).toEqual([page, []]);
    }
    // The scan is not blind: it followed links into the repository and between the pages.
    expect(checked.some((c) => c.endsWith("-> docs/installation-configuration.md"))).toBe(true);
    expect(checked.some((c) => c.includes(`${REPOSITORY}/blob/main/docs/local-tiger-cloud.md`))).toBe(true);
  });

  test("the README links both pages, and its install table names what the manifests and the schema name", () => {
    for (const page of Object.keys(REGISTRY_PAGES)) expect(readme).toContain(`](${page})`);
    const from = readme.indexOf("## Install");
    const install = readme.slice(from, readme.indexOf("\n\n", readme.indexOf("| Language | Install |", from)));
    for (const [language, command] of Object.entries(installCommands()))
      expect([language, install]).toEqual([language, expect.stringContaining(`\`${command}`)]);
    expect(install).toContain(`\`pluginDownloadURL: ${SCHEMA_DOWNLOAD_URL}\``);
  });
});

describe("the SDKs' READMEs", () => {
  test.each(Object.entries(SDK_READMES))(
    "%s: its language's install command, the plugin fetched, the credentials, the generated example to the letter, and links that resolve",
    (file, language) => {
      expect(fs.existsSync(path.join(ROOT, file))).toBe(true);
      const text = doc(file);
      const command = installCommands()[language];
      expect(fences(text).some(({ code }) => code.split("\n").includes(command))).toBe(true);
      expect(text).toMatch(/plugin is fetched by the Pulumi engine/);
      for (const variable of [SETTING_SOURCES.publicKey.env, SETTING_SOURCES.secretKey.env]) expect(text).toContain(`\`${variable}\``);
      const example = `${EXAMPLE}/${EXAMPLE_FILES[language]}`;
      expect(fences(text).filter(({ lang }) => lang === language)).toEqual([{ lang: language, code: generated(example) }]);
      // Shown on PyPI, pkg.go.dev or NuGet, where a relative link leads nowhere.
      const links = linksOf(text);
      expect(links).toEqual(expect.arrayContaining([REPOSITORY, `${REPOSITORY}/blob/main/docs/installation-configuration.md`]));
      const broken = links.filter((link) => {
        const target = linkTarget(file, link);
        return target === undefined || (target !== "external" && !fs.existsSync(path.join(ROOT, target)));
      });
      expect(broken).toEqual([]);
      // What is not tested, it says: the .NET SDK is never compiled here.
      if (language === "csharp") expect(text).toMatch(/generated only: this project's CI neither compiles nor runs it/);
    },
  );
});
