// What the Pulumi backend holds, read through the Pulumi CLI the user has set up (its login, or
// PULUMI_BACKEND_URL): every stack of every project, and in each the services its resources hold.
// A failure to read is an error, never "no stack": a fork taken for unheld would be deleted.
import { execFile } from "child_process";
import * as path from "path";
import { z } from "zod";
import { messageOf } from "../provider/text";

export interface Stack {
  /**
   * As the CLI names it, run in the PR project's directory: that project's stacks by their own
   * name, every other project's as organization/project/stack.
   */
  name: string;
  /** When it was last updated, as the backend says: a stack changed since the inventory is read again. */
  lastUpdate: string | undefined;
  /** The services its resources hold: a resource whose ID, or serviceId output, is the service's ID. */
  serviceIds: Set<string>;
  /** The onDestroy recorded by each of its forks, by service ID. */
  onDestroy: Map<string, string>;
  /** When each of its forks that declares an expiry expires (RFC 3339), by service ID. */
  expiresAt: Map<string, string>;
}

const StackListSchema = z.array(z.looseObject({ name: z.string().min(1), lastUpdate: z.string().nullish() }));
const ExportSchema = z.looseObject({
  deployment: z.looseObject({
    resources: z
      .array(
        z.looseObject({
          urn: z.string(),
          id: z.string().optional(),
          outputs: z
            .looseObject({ serviceId: z.unknown().optional(), onDestroy: z.unknown().optional(), expiresAt: z.unknown().optional() })
            .optional(),
        }),
      )
      .nullish(),
  }),
});

/** Whether a stack is of the project in whose directory the CLI ran: the CLI names only those without a "/". */
export const ofThisProject = (stack: Stack): boolean => !stack.name.includes("/");

/** How long one CLI run may take: a read, or a destroy (which waits for its forks). */
const READ_LIMIT_MS = 5 * 60_000;
const DESTROY_LIMIT_MS = 30 * 60_000;

/** Runs the Pulumi CLI; its output, or an error quoting the end of what it said. */
function pulumi(args: string[], cwd: string, limitMs = READ_LIMIT_MS, env: NodeJS.ProcessEnv = process.env): Promise<string> {
  return new Promise((resolve, reject) => {
    const options = { cwd, env, timeout: limitMs, killSignal: "SIGTERM" as const, maxBuffer: 256 * 1024 * 1024 };
    execFile("pulumi", [...args, "--non-interactive"], options, (err, stdout, stderr) => {
      if (!err) return resolve(stdout);
      const said = `${stderr}${stdout}`.trim().split("\n").slice(-5).join(" / ");
      const how = err.killed ? `was stopped after ${limitMs / 60_000} minutes` : "failed";
      reject(new Error(`pulumi ${args.join(" ")} ${how}${said ? `: ${said}` : ` (${err.message})`}`));
    });
  });
}

async function listStacks(projectDir: string): Promise<{ name: string; lastUpdate: string | undefined }[]> {
  const listed = StackListSchema.parse(JSON.parse(await pulumi(["stack", "ls", "--all", "--json"], projectDir)));
  return listed.map((s) => ({ name: s.name, lastUpdate: s.lastUpdate ?? undefined }));
}

export async function readStack(name: string, lastUpdate: string | undefined, projectDir: string): Promise<Stack> {
  const exported = await pulumi(["stack", "export", "--stack", name], projectDir);
  let parsed;
  try {
    parsed = ExportSchema.parse(JSON.parse(exported));
  } catch (err) {
    throw new Error(`the state of stack ${name} could not be read (${messageOf(err).slice(0, 200)})`, { cause: err });
  }
  const serviceIds = new Set<string>();
  const onDestroy = new Map<string, string>();
  const expiresAt = new Map<string, string>();
  for (const r of parsed.deployment.resources ?? []) {
    const held = [r.id, r.outputs?.serviceId].filter((v): v is string => typeof v === "string" && v !== "");
    for (const id of held) serviceIds.add(id);
    const { serviceId, onDestroy: mode, expiresAt: expiry } = r.outputs ?? {};
    if (typeof serviceId === "string" && typeof mode === "string") onDestroy.set(serviceId, mode);
    if (typeof serviceId === "string" && typeof expiry === "string" && !Number.isNaN(Date.parse(expiry))) expiresAt.set(serviceId, expiry);
  }
  return { name, lastUpdate, serviceIds, onDestroy, expiresAt };
}

/** Every stack the backend holds, with the services each one's resources hold; read from the PR project's directory. */
export async function readStacks(projectDir: string): Promise<Stack[]> {
  const stacks: Stack[] = [];
  // One at a time: each export is a CLI run, and a backend is read more gently so.
  for (const { name, lastUpdate } of await listStacks(projectDir)) stacks.push(await readStack(name, lastUpdate, projectDir));
  return stacks;
}

/**
 * The stacks that hold `serviceId` now, read again where they changed since `known` was read (a
 * new stack, or one updated since: a reopened PR's `up` may have adopted the fork meanwhile).
 */
export async function holdersNow(serviceId: string, known: Stack[], projectDir: string): Promise<string[]> {
  const holders: string[] = [];
  for (const { name, lastUpdate } of await listStacks(projectDir)) {
    const before = known.find((s) => s.name === name);
    const stack = before && before.lastUpdate === lastUpdate ? before : await readStack(name, lastUpdate, projectDir);
    if (stack.serviceIds.has(serviceId)) holders.push(name);
  }
  return holders;
}

/** Whether the project in `projectDir` can load the package's watchdog (it has the package installed). */
function hasWatchdog(projectDir: string): boolean {
  try {
    require.resolve("pulumi-tigercloud/watchdog", { paths: [path.resolve(projectDir)] });
    return true;
  } catch {
    return false;
  }
}

/**
 * `pulumi destroy`, then `pulumi stack rm`, run in the project's directory (the program's
 * dependencies are there, which its providers need). Its provider processes watch the engine
 * from their start, as pr-stack.sh has them do, so a destroy stopped by its limit leaves none.
 * Returns what destroy said.
 */
export async function destroyStack(name: string, projectDir: string): Promise<string> {
  // A TypeScript project's providers load the watchdog from its node_modules; a YAML project's (the
  // plugin) watch their engine themselves, and have no such module to load.
  const watchdog = hasWatchdog(projectDir) ? "--require=pulumi-tigercloud/watchdog" : undefined;
  const env = { ...process.env, NODE_OPTIONS: [watchdog, process.env.NODE_OPTIONS].filter(Boolean).join(" ") };
  const args = ["destroy", "--stack", name, "--yes", "--skip-preview", "--suppress-progress"];
  const said = await pulumi(args, projectDir, DESTROY_LIMIT_MS, env);
  await pulumi(["stack", "rm", name, "--yes"], projectDir);
  return said;
}
