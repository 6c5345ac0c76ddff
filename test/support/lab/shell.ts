// A person's shell, for the suites that run commands as a user does (the CLI in a project's
// directory, `go run`): its environment, and a command run without blocking this process, where
// the simulator answers.
import { spawn } from "child_process";
import * as path from "path";

/** The environment a person's shell would have: the CLI on PATH, a file backend and PULUMI_HOME in `work`, no TIGER_* but `extra`'s. */
export function shellEnv(work: string, passphrase: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PULUMI_BACKEND_URL: `file://${path.join(work, "state")}`,
    PULUMI_HOME: path.join(work, "home"),
    PULUMI_CONFIG_PASSPHRASE: passphrase,
    PULUMI_SKIP_UPDATE_CHECK: "true",
    ...extra,
  };
  for (const key of Object.keys(env)) if (key.startsWith("TIGER_") && !(key in extra)) delete env[key];
  return env;
}

export interface Run {
  status: number | null;
  output: string;
  seconds: number;
}

/** Runs a command, its stdout and stderr as one output; `onOutput` sees the output so far as it grows. */
export function runCommand(
  cwd: string,
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  onOutput?: (output: string) => void,
): Promise<Run> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, env });
    let output = "";
    const take = (chunk: Buffer) => {
      output += chunk.toString();
      onOutput?.(output);
    };
    child.stdout.on("data", take);
    child.stderr.on("data", take);
    child.on("error", reject);
    child.on("close", (status) => resolve({ status, output, seconds: (Date.now() - started) / 1000 }));
  });
}

/** The same, failing with the command and its output unless it exits 0. */
export async function succeeds(cwd: string, command: string, args: string[], env: NodeJS.ProcessEnv): Promise<Run> {
  const r = await runCommand(cwd, command, args, env);
  if (r.status !== 0) throw new Error(`${command} ${args.join(" ")} exited ${r.status}:\n${r.output}`);
  return r;
}
