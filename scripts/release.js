#!/usr/bin/env node
// The release: one version turned into what users install, at that version everywhere.
//   npm run release -- [--version X.Y.Z] [--skip TARGET,...]
// Builds into dist/release/ and publishes, in this order:
//   github  the plugin's six archives and their checksums, to the GitHub release vX.Y.Z, where the
//           schema's pluginDownloadURL sends the engine (first: every SDK below fetches from it);
//   npm     the npm package (the dynamic provider for TypeScript programs);
//   pypi    the Python SDK's wheel;
//   nuget   the .NET SDK's package (needs the .NET SDK, `dotnet`: GitHub's runner has it, the
//           machines this project is tested on do not);
//   go      the Go module's tag, sdk/go/vX.Y.Z, pushed to origin.
// The version is --version, else the tag that started the workflow (GITHUB_REF_NAME, vX.Y.Z), else
// package.json's; every SDK must carry it (scripts/gen-sdks/run writes them), or nothing is published.
// Each target is idempotent: what a registry already holds at this version is compared with what was
// built (the builds are reproducible): the same is left as it is, another is a failure naming it,
// never overwritten. A target that fails is named in the summary and the others still run (but for
// github, which the others need); run the same command again to publish what is missing.
// Where: GITHUB_API_URL (https://api.github.com), GITHUB_REPOSITORY (tigercloud/pulumi-tigercloud),
// GITHUB_TOKEN; NPM_REGISTRY (https://registry.npmjs.org/), NODE_AUTH_TOKEN; PYPI_INDEX_URL
// (https://pypi.org/simple/), PYPI_REPOSITORY_URL (https://upload.pypi.org/legacy/), TWINE_USERNAME
// and TWINE_PASSWORD; NUGET_SOURCE (https://api.nuget.org/v3/index.json), NUGET_API_KEY. RELEASE_SKIP
// adds to --skip. The exit status is 0 when every target not skipped is published, 1 when one
// failed, 2 when nothing was tried (a wrong option, versions that disagree).
const { spawnSync } = require("child_process");
const crypto = require("crypto");
const fs = require("fs");
const os = require("os");
const path = require("path");
const { packPlugins, PLATFORMS } = require("./pack-plugin");
const { ensurePython } = require("./ensure-python");
const { shown } = require("./ensure-node");

const root = path.join(__dirname, "..");
const TARGETS = ["github", "npm", "pypi", "nuget", "go"];
const PACKAGE = "pulumi-tigercloud";
const say = (line) => process.stdout.write(`release: ${line}\n`);

/** Every secret this run holds, never printed: each is replaced by *** in anything shown. */
const SECRETS = ["GITHUB_TOKEN", "NODE_AUTH_TOKEN", "TWINE_PASSWORD", "NUGET_API_KEY"]
  .map((name) => process.env[name])
  .filter((value) => value && value.length >= 4);
const redact = (text) => SECRETS.reduce((t, secret) => t.split(secret).join("***"), String(text));
/** Text from outside (a registry's answer, a command's output), redacted, escaped, and cut. */
const outside = (text) => {
  const clean = redact(text).trim();
  return shown(clean.length > 600 ? `${clean.slice(0, 600)}…` : clean);
};

class Refused extends Error {}

function usage() {
  return `usage: npm run release -- [--version X.Y.Z] [--skip ${TARGETS.join(",")}]`;
}

function parseArgs(argv) {
  const options = { version: undefined, skip: new Set() };
  for (const target of (process.env.RELEASE_SKIP ?? "").split(",").filter(Boolean)) options.skip.add(target.trim());
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === "--help" || arg === "-h") {
      process.stdout.write(`${usage()}\n`);
      process.exit(0);
    } else if (arg === "--version" && argv[i + 1]) options.version = argv[++i];
    else if (arg === "--skip" && argv[i + 1]) for (const t of argv[++i].split(",")) options.skip.add(t.trim());
    else throw new Refused(`unknown option ${shown(arg)}`);
  }
  for (const target of options.skip)
    if (!TARGETS.includes(target)) throw new Refused(`--skip ${shown(target)}: the targets are ${TARGETS.join(", ")}`);
  return options;
}

// ---- the version, the same everywhere

const readJson = (file) => JSON.parse(fs.readFileSync(path.join(root, file), "utf8"));

/** Where the version is written, and what each says. */
function versionsFound() {
  const pyproject = fs.readFileSync(path.join(root, "sdk", "python", "pyproject.toml"), "utf8");
  return {
    "package.json": readJson("package.json").version,
    "sdk/python/pyproject.toml": /^\s*version\s*=\s*"([^"]+)"/m.exec(pyproject)?.[1],
    "sdk/python/pulumi_tigercloud/pulumi-plugin.json": readJson("sdk/python/pulumi_tigercloud/pulumi-plugin.json").version,
    "sdk/go/tigercloud/pulumi-plugin.json": readJson("sdk/go/tigercloud/pulumi-plugin.json").version,
    "sdk/dotnet/version.txt": fs.readFileSync(path.join(root, "sdk", "dotnet", "version.txt"), "utf8").trim(),
    "sdk/dotnet/pulumi-plugin.json": readJson("sdk/dotnet/pulumi-plugin.json").version,
  };
}

function releaseVersion(given) {
  const tag =
    process.env.GITHUB_REF_TYPE === "tag" || /^refs\/tags\//.test(process.env.GITHUB_REF ?? "") ? process.env.GITHUB_REF_NAME : undefined;
  if (tag !== undefined && !/^v\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/.test(tag))
    throw new Refused(`the tag ${shown(tag)} is not a version tag such as v1.2.3`);
  const version = given ?? tag?.slice(1) ?? readJson("package.json").version;
  if (!/^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/.test(version)) throw new Refused(`${shown(version)} is not a version such as 1.2.3`);
  if (tag !== undefined && tag !== `v${version}`) throw new Refused(`--version ${shown(version)} is not the tag's (${shown(tag)})`);
  const wrong = Object.entries(versionsFound()).filter(([, found]) => found !== version);
  if (wrong.length > 0)
    throw new Refused(
      `the version is ${version}, but ${wrong.map(([file, found]) => `${file} says ${shown(found)}`).join(", ")}: ` +
        "set package.json's version and write the SDKs again (scripts/gen-sdks/run), then commit and tag",
    );
  return version;
}

// ---- building

const sha256 = (file) => crypto.createHash("sha256").update(fs.readFileSync(file)).digest("hex");

/** A command's result; its output kept for a failure's message (never printed as it runs). */
function run(command, args, options = {}) {
  const r = spawnSync(command, args, { cwd: root, encoding: "utf8", maxBuffer: 64 * 1024 * 1024, ...options });
  if (r.error) throw new Error(`${command} could not be run: ${r.error.message}`);
  return { status: r.status, output: `${r.stdout ?? ""}${r.stderr ?? ""}` };
}
function mustRun(command, args, options) {
  const r = run(command, args, options);
  if (r.status !== 0) throw new Error(`${command} ${args[0] ?? ""} exited ${r.status}: ${outside(r.output)}`);
  return r.output;
}

/** What the release is made of, built into dist/release/. */
function build(version, skip) {
  const out = path.join(root, "dist", "release");
  fs.rmSync(out, { recursive: true, force: true });
  fs.mkdirSync(out, { recursive: true });
  const made = {};
  if (!skip.has("github")) {
    say(`packing the plugin for ${PLATFORMS.join(", ")}`);
    const archives = packPlugins(PLATFORMS).map((archive) => {
      const copy = path.join(out, path.basename(archive));
      fs.copyFileSync(archive, copy);
      return copy;
    });
    const checksums = path.join(out, `${PACKAGE}_${version}_checksums.txt`);
    fs.writeFileSync(checksums, archives.map((a) => `${sha256(a)}  ${path.basename(a)}\n`).join(""));
    made.github = [...archives, checksums];
  }
  if (!skip.has("npm")) {
    say("packing the npm package");
    // prepack builds dist/ from the sources (and prints as it goes: the tarball is found by its name).
    mustRun("npm", ["pack", "--silent", "--pack-destination", out]);
    made.npm = path.join(out, `${PACKAGE}-${version}.tgz`);
    if (!fs.existsSync(made.npm)) throw new Error(`npm pack made no ${path.basename(made.npm)} in ${out}`);
  }
  if (!skip.has("pypi")) {
    say("building the Python SDK's wheel");
    const { wheel, tools } = ensurePython();
    made.pypi = { wheel: path.join(out, path.basename(wheel)), python: path.join(tools, "bin", "python") };
    fs.copyFileSync(wheel, made.pypi.wheel);
  }
  if (!skip.has("nuget")) {
    if (run("dotnet", ["--version"]).status !== 0)
      made.nuget = new Error("no .NET SDK (dotnet) on PATH: the .NET package is built on GitHub's runner (or --skip nuget)");
    else {
      say("packing the .NET SDK");
      mustRun("dotnet", ["pack", path.join(root, "sdk", "dotnet"), "-c", "Release", "-o", out, `-p:Version=${version}`]);
      made.nuget = fs
        .readdirSync(out)
        .filter((f) => f.endsWith(".nupkg"))
        .map((f) => path.join(out, f));
    }
  }
  return made;
}

// ---- publishing: each target says what it did

async function request(url, init = {}) {
  let answer;
  try {
    answer = await fetch(url, { redirect: "manual", ...init });
  } catch (err) {
    throw new Error(`${init.method ?? "GET"} ${url}: ${outside(err.cause?.message ?? err.message)}`, { cause: err });
  }
  return answer;
}
async function failed(what, answer) {
  return new Error(`${what}: HTTP ${answer.status}: ${outside(await answer.text().catch(() => ""))}`);
}

/** The GitHub release vX.Y.Z, made if missing, with every archive and the checksums uploaded once. */
async function publishGithub(version, files) {
  const api = (process.env.GITHUB_API_URL || "https://api.github.com").replace(/\/$/, "");
  const repository = process.env.GITHUB_REPOSITORY || "tigercloud/pulumi-tigercloud";
  const token = process.env.GITHUB_TOKEN;
  if (!token) throw new Error("no GITHUB_TOKEN to publish the release with");
  const headers = { Authorization: `Bearer ${token}`, Accept: "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28" };
  const tag = `v${version}`;
  let answer = await request(`${api}/repos/${repository}/releases/tags/${tag}`, { headers });
  let release;
  if (answer.status === 200) release = await answer.json();
  else if (answer.status === 404) {
    answer = await request(`${api}/repos/${repository}/releases`, {
      method: "POST",
      headers: { ...headers, "Content-Type": "application/json" },
      body: JSON.stringify({
        tag_name: tag,
        name: tag,
        body: `${PACKAGE} ${version}: the provider plugin for each platform (the engine fetches it), and the SDKs at the same version.`,
        prerelease: version.includes("-"),
      }),
    });
    if (answer.status !== 201) throw await failed(`making the release ${tag}`, answer);
    release = await answer.json();
  } else throw await failed(`reading the release ${tag}`, answer);

  const uploaded = [];
  const kept = [];
  for (const file of files) {
    const name = path.basename(file);
    const digest = `sha256:${sha256(file)}`;
    const there = (release.assets ?? []).find((a) => a.name === name);
    if (there && there.state === "uploaded") {
      if (there.digest !== digest)
        throw new Error(
          `the release ${tag} already holds ${name} with other content (${shown(there.digest ?? "no digest")}, built ${digest}): ` +
            "a version is published once; release a new version",
        );
      kept.push(name);
      continue;
    }
    if (there) {
      // An upload that broke off leaves its asset unfinished: removed, then uploaded whole.
      answer = await request(`${api}/repos/${repository}/releases/assets/${there.id}`, { method: "DELETE", headers });
      if (answer.status !== 204) throw await failed(`removing the unfinished ${name}`, answer);
    }
    const target = `${release.upload_url.replace(/\{.*\}$/, "")}?name=${encodeURIComponent(name)}`;
    const body = fs.readFileSync(file);
    answer = await request(target, {
      method: "POST",
      headers: {
        ...headers,
        "Content-Type": name.endsWith(".txt") ? "text/plain" : "application/gzip",
        "Content-Length": String(body.length),
      },
      body,
    });
    if (answer.status !== 201) throw await failed(`uploading ${name} to the release ${tag}`, answer);
    uploaded.push(name);
  }
  return uploaded.length === 0
    ? { state: "already published", detail: `the release ${tag} holds all ${kept.length} files, the same` }
    : {
        state: "published",
        detail: `${uploaded.length} file(s) uploaded to the release ${tag}${kept.length ? ` (${kept.length} already there)` : ""}`,
      };
}

/** An npmrc holding the token for the registry, as actions/setup-node writes one; none without a token. */
function npmConfig(registry) {
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "release-npm-")), ".npmrc");
  const url = new URL(registry);
  const lines = [`registry=${registry}`];
  if (process.env.NODE_AUTH_TOKEN) lines.push(`//${url.host}${url.pathname.replace(/\/?$/, "/")}:_authToken=\${NODE_AUTH_TOKEN}`);
  fs.writeFileSync(file, `${lines.join("\n")}\n`, { mode: 0o600 });
  return file;
}

async function publishNpm(version, tarball) {
  const registry = process.env.NPM_REGISTRY || "https://registry.npmjs.org/";
  const userconfig = npmConfig(registry);
  try {
    const integrity = `sha512-${crypto.createHash("sha512").update(fs.readFileSync(tarball)).digest("base64")}`;
    const view = run("npm", ["view", `${PACKAGE}@${version}`, "dist.integrity", "--json", "--userconfig", userconfig]);
    const found = view.status === 0 ? view.output.trim() : "";
    if (view.status !== 0 && !/\bE404\b/.test(view.output))
      throw new Error(`asking ${registry} for ${PACKAGE}@${version}: ${outside(view.output)}`);
    if (found) {
      if (JSON.parse(found) !== integrity)
        throw new Error(
          `${registry} already holds ${PACKAGE}@${version} with other content: a version is published once; release a new version`,
        );
      return { state: "already published", detail: `${PACKAGE}@${version} is on ${registry}, the same` };
    }
    const tag = version.includes("-") ? ["--tag", "next"] : [];
    mustRun("npm", ["publish", tarball, "--ignore-scripts", ...tag, "--userconfig", userconfig]);
    return { state: "published", detail: `${PACKAGE}@${version} to ${registry}` };
  } finally {
    fs.rmSync(path.dirname(userconfig), { recursive: true, force: true });
  }
}

async function publishPypi(version, { wheel, python }) {
  const index = (process.env.PYPI_INDEX_URL || "https://pypi.org/simple/").replace(/\/?$/, "/");
  const upload = process.env.PYPI_REPOSITORY_URL || "https://upload.pypi.org/legacy/";
  const name = path.basename(wheel);
  // The simple index's project page lists each file with its sha256 (PEP 503); a redirect (to a
  // fallback index) or a 404 says this index has none.
  const answer = await request(`${index}${PACKAGE}/`, { headers: { Accept: "text/html" } });
  if (answer.status === 200) {
    const page = await answer.text();
    const listed = new RegExp(`${name.replace(/[.+]/g, "\\$&")}#sha256=([0-9a-f]{64})`).exec(page);
    if (listed) {
      if (listed[1] !== sha256(wheel))
        throw new Error(`${index} already holds ${name} with other content: a version is published once; release a new version`);
      return { state: "already published", detail: `${name} is on ${index}, the same` };
    }
  } else if (answer.status !== 404 && !(answer.status >= 300 && answer.status < 400))
    throw await failed(`asking ${index} for ${PACKAGE}`, answer);
  mustRun(python, ["-m", "twine", "upload", "--non-interactive", "--disable-progress-bar", "--repository-url", upload, wheel], {
    // No keyring: the credentials are TWINE_USERNAME and TWINE_PASSWORD.
    env: { ...process.env, PYTHON_KEYRING_BACKEND: "keyring.backends.null.Keyring" },
  });
  return { state: "published", detail: `${name} to ${upload}` };
}

async function publishNuget(version, packages) {
  if (packages instanceof Error) throw packages;
  const source = process.env.NUGET_SOURCE || "https://api.nuget.org/v3/index.json";
  if (!process.env.NUGET_API_KEY) throw new Error("no NUGET_API_KEY to publish the .NET package with");
  // --skip-duplicate: a version the feed holds is left as it is (NuGet never takes it twice).
  const out = mustRun("dotnet", [
    "nuget",
    "push",
    ...packages,
    "--source",
    source,
    "--api-key",
    process.env.NUGET_API_KEY,
    "--skip-duplicate",
  ]);
  return /already exists/i.test(out)
    ? { state: "already published", detail: `TigerData.TigerCloud ${version} is on ${source}` }
    : { state: "published", detail: `TigerData.TigerCloud ${version} to ${source}` };
}

/** The Go module's tag on the commit being released, pushed to origin. */
async function publishGo(version) {
  const tag = `sdk/go/v${version}`;
  const head = mustRun("git", ["rev-parse", "HEAD"]).trim();
  const remote = mustRun("git", ["ls-remote", "--tags", "origin", `refs/tags/${tag}`, `refs/tags/${tag}^{}`]);
  const lines = remote.trim().split("\n").filter(Boolean);
  if (lines.length > 0) {
    // An annotated tag lists the commit it names as TAG^{}.
    const commit = (lines.find((l) => l.endsWith("^{}")) ?? lines[0]).split(/\s+/)[0];
    if (commit !== head) throw new Error(`origin's ${tag} names ${commit}, not this commit (${head}): a version is published once`);
    return { state: "already published", detail: `origin's ${tag} names this commit` };
  }
  mustRun("git", ["tag", "--force", tag, head]);
  mustRun("git", ["push", "origin", `refs/tags/${tag}`]);
  return { state: "published", detail: `the tag ${tag} (${head.slice(0, 12)}) to origin` };
}

async function main() {
  let options;
  let version;
  try {
    options = parseArgs(process.argv.slice(2));
    version = releaseVersion(options.version);
  } catch (err) {
    if (!(err instanceof Refused)) throw err;
    process.stderr.write(`release: ${err.message}\n${usage()}\nNothing was published.\n`);
    return 2;
  }
  say(
    `${PACKAGE} ${version}: ${TARGETS.filter((t) => !options.skip.has(t)).join(", ") || "nothing"} (skipped: ${[...options.skip].join(", ") || "none"})`,
  );
  const made = build(version, options.skip);
  const results = {};
  for (const target of TARGETS) {
    if (options.skip.has(target)) {
      results[target] = { state: "skipped", detail: "asked (--skip or RELEASE_SKIP)" };
      continue;
    }
    if (target !== "github" && results.github?.state === "FAILED") {
      results[target] = { state: "not tried", detail: "its SDK fetches the plugin from the GitHub release, which failed" };
      continue;
    }
    try {
      const publish = { github: publishGithub, npm: publishNpm, pypi: publishPypi, nuget: publishNuget, go: publishGo }[target];
      results[target] = await publish(version, made[target]);
    } catch (err) {
      results[target] = { state: "FAILED", detail: redact(err.message) };
    }
    say(`${target}: ${results[target].state}: ${results[target].detail}`);
  }
  process.stdout.write(`\n${PACKAGE} ${version}:\n`);
  for (const target of TARGETS) process.stdout.write(`  ${target.padEnd(7)} ${results[target].state}: ${results[target].detail}\n`);
  const failedTargets = TARGETS.filter((t) => ["FAILED", "not tried"].includes(results[t].state));
  if (failedTargets.length === 0) return 0;
  process.stdout.write(
    `Not published: ${failedTargets.join(", ")}. Fix the cause and run the same command again: what is published stays.\n`,
  );
  return 1;
}

main().then(
  (code) => (process.exitCode = code),
  (err) => {
    process.stderr.write(
      `release: ${redact(err.stack ?? err.message)}\nWhat the lines above say was published is published; run again to go on.\n`,
    );
    process.exitCode = 1;
  },
);
