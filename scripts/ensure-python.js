// Provides what a Python program of this provider needs, made once into the project's cache (the
// same folder as ensure-node's and ensure-pulumi's) and reused until what it is made of changes:
//   - the SDK's wheel, built from sdk/python with `python -m build --wheel --no-isolation` in a build
//     virtual environment holding pinned `build` and `setuptools`; kept by sdk/python's content;
//   - a wheelhouse: `pulumi` at the version scripts/toolchain.js names and every dependency of it and
//     of the SDK, as wheels for this Python (`pip wheel`), so that a fresh virtual environment installs
//     with `pip install --no-index --find-links ...`. pip's own cache is not enough: the registry as
//     reached here sends no caching headers, so pip's HTTP cache keeps nothing, and every install
//     would download everything again;
//   - pip's cache (PIP_CACHE_DIR) under the project's cache too, for anything pip builds.
// Python is the `python3` on PATH. Nothing is installed outside the cache.
//   node scripts/ensure-python.js   prints what the tests need as JSON (progress: stderr)
const { execFileSync } = require("child_process");
const crypto = require("crypto");
const fs = require("fs");
const os = require("os");
const path = require("path");
const toolchain = require("./toolchain");

const root = path.join(__dirname, "..");
const sdkDir = path.join(root, "sdk", "python");
const cacheRoot =
  process.env.PULUMI_TIGERCLOUD_CACHE || path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), ".cache"), "pulumi-tigercloud");
const pythonCache = path.join(cacheRoot, "python");
const say = (what) => process.stderr.write(`ensure-python: ${what}\n`);

/** The wheel's build tools, pinned: the same sources make the same wheel. setuptools >= 69 puts the
 *  SDK's .pyi stubs in the wheel (older ones leave config/__init__.pyi out). twine uploads it
 *  (scripts/release.js). */
const BUILD_TOOLS = ["build==1.6.1", "setuptools==84.2.1", "twine==7.0.0"];
/** Fixed timestamps inside the wheel (zip's earliest), so that its bytes follow its content alone. */
const SOURCE_DATE_EPOCH = "315532800";
/** Files of sdk/python that are not the SDK: what a build or an import leaves behind. */
const LEFT_BY_BUILDS = /(^|\/)(build|dist|__pycache__|[^/]*\.egg-info)(\/|$)/;

/** The environment pip runs with: its cache under the project's cache, and no check for a newer pip. */
const pipEnv = () => ({ ...process.env, PIP_CACHE_DIR: path.join(pythonCache, "pip"), PIP_DISABLE_PIP_VERSION_CHECK: "1" });

/** Runs a command; on failure, an error carrying its output (which is otherwise not printed). */
function run(command, args, options = {}) {
  try {
    return execFileSync(command, args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], env: pipEnv(), ...options });
  } catch (err) {
    throw new Error(`ensure-python: ${command} ${args.join(" ")} failed:\n${err.stdout ?? ""}${err.stderr ?? ""}`, { cause: err });
  }
}

/** A folder made whole in a temporary sibling by `make(dir)`, then renamed into place; an existing one is kept. */
function madeOnce(dir, make) {
  if (fs.existsSync(dir)) return dir;
  fs.mkdirSync(path.dirname(dir), { recursive: true });
  const work = fs.mkdtempSync(path.join(path.dirname(dir), `.${path.basename(dir)}-`));
  try {
    make(work);
    try {
      fs.renameSync(work, dir);
    } catch (err) {
      // Another run beside this one got there first: use its copy.
      if (!fs.existsSync(dir)) throw err;
    }
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
  return dir;
}

/** Every file of sdk/python that makes the SDK, by its path relative to it, sorted. */
function sdkFiles() {
  const found = [];
  const walk = (sub) => {
    for (const entry of fs.readdirSync(path.join(sdkDir, sub), { withFileTypes: true })) {
      const rel = sub ? `${sub}/${entry.name}` : entry.name;
      if (LEFT_BY_BUILDS.test(rel)) continue;
      if (entry.isDirectory()) walk(rel);
      else found.push(rel);
    }
  };
  walk("");
  return found.sort();
}

const sha256 = (parts) => {
  const hash = crypto.createHash("sha256");
  for (const part of parts) hash.update(part).update("\0");
  return hash.digest("hex").slice(0, 16);
};

/** `python3` on PATH, its version and what wheels for it are tagged by (such as cpython-311-linux-x86_64). */
function python() {
  const out = run("python3", [
    "-c",
    "import sys, sysconfig; print(sys.executable); print('%d.%d.%d' % sys.version_info[:3]); print(sys.implementation.cache_tag + '-' + sysconfig.get_platform())",
  ]);
  const [executable, version, tag] = out.trim().split("\n");
  const [major, minor] = version.split(".").map(Number);
  // The SDK's requires-python.
  if (major !== 3 || minor < 9) throw new Error(`ensure-python: python3 is ${version} (${executable}); the SDK needs 3.9 or newer`);
  return { executable, version, tag };
}

/** A virtual environment holding the build tools, made once. */
const buildTools = (py) =>
  madeOnce(path.join(pythonCache, `build-tools-${py.tag}-${sha256(BUILD_TOOLS)}`), (venv) => {
    say(`making a virtual environment for building the SDK's wheel (${BUILD_TOOLS.join(", ")}), once`);
    run(py.executable, ["-m", "venv", venv]);
    run(path.join(venv, "bin", "python"), ["-m", "pip", "install", "--quiet", ...BUILD_TOOLS]);
  });

/** The SDK's wheel, built from a copy of sdk/python (setuptools writes build/ and *.egg-info into its source). */
function sdkWheel(py) {
  const files = sdkFiles();
  const key = sha256([...BUILD_TOOLS, SOURCE_DATE_EPOCH, ...files.flatMap((f) => [f, fs.readFileSync(path.join(sdkDir, f))])]);
  const dir = path.join(pythonCache, `sdk-${key}`);
  if (!fs.existsSync(dir)) {
    const tools = buildTools(py);
    madeOnce(dir, (out) => {
      const started = Date.now();
      const src = fs.mkdtempSync(path.join(os.tmpdir(), "tigercloud-sdk-python-"));
      try {
        for (const f of files) {
          fs.mkdirSync(path.dirname(path.join(src, f)), { recursive: true });
          fs.copyFileSync(path.join(sdkDir, f), path.join(src, f));
        }
        run(path.join(tools, "bin", "python"), ["-m", "build", "--wheel", "--no-isolation", "--outdir", out, src], {
          env: { ...pipEnv(), SOURCE_DATE_EPOCH },
        });
      } finally {
        fs.rmSync(src, { recursive: true, force: true });
      }
      say(`built ${fs.readdirSync(out).join(", ")} from sdk/python in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    });
  }
  const wheels = fs.readdirSync(dir).filter((f) => f.endsWith(".whl"));
  if (wheels.length !== 1) throw new Error(`ensure-python: ${dir} holds ${wheels.length} wheels, not one: remove it and run again`);
  return path.join(dir, wheels[0]);
}

/** The SDK's own dependencies, as its pyproject.toml names them (one generated line). */
function sdkDependencies() {
  const pyproject = fs.readFileSync(path.join(sdkDir, "pyproject.toml"), "utf8");
  return /^\s*dependencies\s*=\s*(\[.*\])\s*$/m.exec(pyproject)?.[1] ?? pyproject;
}

/** Wheels of `pulumi` and of everything it and the SDK depend on, for this Python, fetched once. */
function wheelhouse(py, wheel, pulumiVersion) {
  const dir = path.join(pythonCache, `wheels-pulumi-${pulumiVersion}-${py.tag}-${sha256([sdkDependencies()])}`);
  return madeOnce(dir, (out) => {
    const started = Date.now();
    say(`fetching pulumi ${pulumiVersion} and the SDK's dependencies as wheels for Python ${py.version} into ${dir}, once`);
    // The wheel by its path: its own name is never looked up in the registry, only its dependencies.
    run(py.executable, ["-m", "pip", "wheel", "--quiet", "--wheel-dir", out, wheel, `pulumi==${pulumiVersion}`]);
    // The SDK's wheel is kept apart, by its content.
    fs.rmSync(path.join(out, path.basename(wheel)), { force: true });
    say(`${fs.readdirSync(out).length} wheels in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  });
}

/**
 * What a Python program needs, made once: `python3` (its path and version), the SDK's wheel, the
 * wheelhouse holding `pulumi` at the toolchain's version and every dependency, and the environment
 * (pip's cache) that pip is to run with. Install into a virtual environment with
 * `pip install --no-index --find-links WHEELHOUSE --find-links dirname(WHEEL) -r requirements.txt`.
 */
function ensurePython() {
  const py = python();
  const wheel = sdkWheel(py);
  const pulumi = toolchain.python.pulumi;
  return {
    python: py.executable,
    pythonVersion: py.version,
    wheel,
    wheelhouse: wheelhouse(py, wheel, pulumi),
    pulumi,
    /** The build tools' virtual environment (build, setuptools, twine). */
    tools: buildTools(py),
    env: { PIP_CACHE_DIR: pipEnv().PIP_CACHE_DIR, PIP_DISABLE_PIP_VERSION_CHECK: "1" },
  };
}

module.exports = { ensurePython };

if (require.main === module) {
  const ready = ensurePython();
  say(
    `ready: in a virtual environment, pip install --no-index --find-links ${ready.wheelhouse} --find-links ${path.dirname(ready.wheel)} -r requirements.txt`,
  );
  console.log(JSON.stringify(ready, null, 2));
}
