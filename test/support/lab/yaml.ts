// A YAML user's machine, for the suites that run the provider plugin as such a user does: a folder
// outside the repository (nothing resolves from its node_modules) with a file backend and
// PULUMI_HOME, the plugin installed there from the archive `npm run plugin:pack` makes (never
// found on PATH), and the `pulumi` CLI run in a project's directory without blocking this process,
// where the simulator answers.
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import type { Simulator } from "../../../simulator";
import { type Run, runCommand, shellEnv, succeeds } from "./shell";

const ROOT = path.join(__dirname, "..", "..", "..");
const VERSION = (JSON.parse(fs.readFileSync(path.join(ROOT, "package.json"), "utf8")) as { version: string }).version;

/** The key pair and project of `s`, as a pipeline's environment gives them. */
export const credentialsOf = (s: Simulator) => ({
  TIGER_API_URL: s.url,
  TIGER_PUBLIC_KEY: s.keyPair.publicKey,
  TIGER_SECRET_KEY: s.keyPair.secretKey,
  TIGER_PROJECT_ID: s.defaults().projectId,
});

export interface YamlLab {
  /** The user's folder: the backend (state/), PULUMI_HOME (home/), and each project's folder. */
  work: string;
  /** The environment a person's shell would have: the CLI on PATH, the backend, no TIGER_* but `extra`'s. */
  env(extra?: Record<string, string>): NodeJS.ProcessEnv;
  /** `pulumi ARGS` in `cwd` (by default with `sim`'s credentials). */
  run(cwd: string, args: string[], env?: NodeJS.ProcessEnv): Promise<Run>;
  /** The same, failing with the output unless it exits 0; its output. */
  ok(cwd: string, args: string[], env?: NodeJS.ProcessEnv): Promise<string>;
  /** A project of its own folder with `program` as its Pulumi.yaml, and a new stack "dev". */
  project(name: string, program: string, env?: NodeJS.ProcessEnv): Promise<string>;
  close(): void;
}

/** A new user's folder, with the plugin installed from the packed archive. */
export async function yamlLab(sim: Simulator, passphrase: string): Promise<YamlLab> {
  const { packPlugin } = require("../../../scripts/pack-plugin") as { packPlugin: () => string };
  const work = fs.mkdtempSync(path.join(os.tmpdir(), "tigercloud-yaml-"));
  fs.mkdirSync(path.join(work, "state"));
  const env = (extra: Record<string, string> = {}) => shellEnv(work, passphrase, extra);
  const withCredentials = () => env(credentialsOf(sim));
  const lab: YamlLab = {
    work,
    env,
    run: (cwd, args, e = withCredentials()) => runCommand(cwd, "pulumi", args, e),
    ok: async (cwd, args, e = withCredentials()) => (await succeeds(cwd, "pulumi", args, e)).output,
    async project(name, program, e) {
      const dir = path.join(work, name);
      fs.mkdirSync(dir);
      fs.writeFileSync(path.join(dir, "Pulumi.yaml"), program);
      await lab.ok(dir, ["stack", "init", "dev"], e);
      return dir;
    },
    close: () => fs.rmSync(work, { recursive: true, force: true }),
  };
  await lab.ok(work, ["plugin", "install", "resource", "tigercloud", VERSION, "--file", packPlugin()]);
  return lab;
}
