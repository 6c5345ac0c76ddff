// What the Pulumi backend holds, read through the Pulumi CLI the user has set up (its login, or
// PULUMI_BACKEND_URL): every stack of every project, and in each the services its resources hold.
// A failure to read is an error, never "no stack": a fork taken for unheld would be deleted.
import { execFile } from "child_process";
import { z } from "zod";

export interface Stack {
  /** As the backend names it: organization/project/stack. */
  name: string;
  /** Its last part, the stack's own name. */
  shortName: string;
  /** The services its resources hold: a resource whose ID, or serviceId output, is the service's ID. */
  serviceIds: Set<string>;
  /** The onDestroy recorded by each of its forks, by service ID. */
  onDestroy: Map<string, string>;
}

const StackListSchema = z.array(z.looseObject({ name: z.string().min(1) }));
const ExportSchema = z.looseObject({
  deployment: z.looseObject({
    resources: z
      .array(
        z.looseObject({
          urn: z.string(),
          id: z.string().optional(),
          outputs: z.looseObject({ serviceId: z.unknown().optional(), onDestroy: z.unknown().optional() }).optional(),
        }),
      )
      .nullish(),
  }),
});

/** Runs the Pulumi CLI; its output, or an error quoting the end of what it said. */
function pulumi(args: string[], cwd?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile("pulumi", [...args, "--non-interactive"], { cwd, maxBuffer: 256 * 1024 * 1024 }, (err, stdout, stderr) => {
      if (!err) return resolve(stdout);
      const said = `${stderr}${stdout}`.trim().split("\n").slice(-5).join(" / ");
      reject(new Error(`pulumi ${args.join(" ")} failed${said ? `: ${said}` : ` (${err.message})`}`));
    });
  });
}

/**
 * Every stack the backend holds, with the services each one's resources hold. Read from the PR
 * project's directory, as a person there would (a project may name its backend): the CLI names
 * that project's stacks by their own name, others' as organization/project/stack.
 */
export async function readStacks(projectDir: string): Promise<Stack[]> {
  const listed = StackListSchema.parse(JSON.parse(await pulumi(["stack", "ls", "--all", "--json"], projectDir)));
  const stacks: Stack[] = [];
  // One at a time: each export is a CLI run, and a backend is read more gently so.
  for (const { name } of listed) stacks.push(holdings(name, await pulumi(["stack", "export", "--stack", name], projectDir)));
  return stacks;
}

function holdings(name: string, exported: string): Stack {
  let parsed;
  try {
    parsed = ExportSchema.parse(JSON.parse(exported));
  } catch (err) {
    throw new Error(`the state of stack ${name} could not be read (${(err as Error).message.slice(0, 200)})`, { cause: err });
  }
  const serviceIds = new Set<string>();
  const onDestroy = new Map<string, string>();
  for (const r of parsed.deployment.resources ?? []) {
    const held = [r.id, r.outputs?.serviceId].filter((v): v is string => typeof v === "string" && v !== "");
    for (const id of held) serviceIds.add(id);
    const { serviceId, onDestroy: mode } = r.outputs ?? {};
    if (typeof serviceId === "string" && typeof mode === "string") onDestroy.set(serviceId, mode);
  }
  return { name, shortName: name.split("/").pop() ?? name, serviceIds, onDestroy };
}

/**
 * `pulumi destroy`, then `pulumi stack rm`, run in the project's directory (the program's
 * dependencies are there, which its providers need). Returns what destroy said.
 */
export async function destroyStack(name: string, projectDir: string): Promise<string> {
  const said = await pulumi(["destroy", "--stack", name, "--yes", "--skip-preview", "--suppress-progress"], projectDir);
  await pulumi(["stack", "rm", name, "--yes"], projectDir);
  return said;
}
