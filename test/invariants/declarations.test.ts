// The published declarations as a user's program meets them: provider/ built as the package is
// (tsconfig.build.json), then a program checked with the compiler options of Pulumi's TypeScript
// template (target ES2020, strict, and no skipLibCheck, so every declaration file is checked).
import * as fs from "fs";
import * as path from "path";
import * as ts from "typescript";

jest.setTimeout(120_000);
const ROOT = path.join(__dirname, "..", "..");
let out: string;

beforeAll(() => {
  // Inside the repository, so that the declarations find @pulumi/pulumi in its node_modules.
  fs.mkdirSync(path.join(ROOT, ".tmp"), { recursive: true });
  out = fs.mkdtempSync(path.join(ROOT, ".tmp", "dts-"));
  const config = ts.getParsedCommandLineOfConfigFile(
    path.join(ROOT, "tsconfig.build.json"),
    {},
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (d) => {
        throw new Error(ts.flattenDiagnosticMessageText(d.messageText, "\n"));
      },
    },
  ) as ts.ParsedCommandLine;
  const build = ts.createProgram(config.fileNames, { ...config.options, outDir: out, emitDeclarationOnly: true, sourceMap: false });
  const emitted = build.emit();
  expect(emitted.diagnostics.map((d) => ts.flattenDiagnosticMessageText(d.messageText, "\n"))).toEqual([]);
});
afterAll(() => fs.rmSync(out, { recursive: true, force: true }));

// Parsed declaration files, shared by every program below (the type checks are each program's own):
// parsing @pulumi/pulumi's and Node's declarations again for each program was most of this suite's time.
const parsed = new Map<string, ts.SourceFile | undefined>();
const cachingHost = (options: ts.CompilerOptions): ts.CompilerHost => {
  const host = ts.createCompilerHost(options);
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (fileName, languageVersion, ...rest) => {
    if (!fileName.endsWith(".d.ts")) return getSourceFile(fileName, languageVersion, ...rest);
    const key = `${JSON.stringify(languageVersion)} ${fileName}`;
    if (!parsed.has(key)) parsed.set(key, getSourceFile(fileName, languageVersion, ...rest));
    return parsed.get(key);
  };
  return host;
};

type Checked = { errors: string[]; files: string[] };

/** Type-checks `source` as a user's index.ts; returns the errors and the files the check read. */
function checkProgram(source: string, extra: ts.CompilerOptions = {}): Checked {
  return checkPrograms([source], extra)[0] as Checked;
}

/**
 * Type-checks each source as a user's index.ts, all in one compiler program (one check of the
 * declarations they share, which is most of the time): each gets its own file's errors and every
 * error outside the sources (a declaration file's), and the files the program read.
 */
function checkPrograms(sources: string[], extra: ts.CompilerOptions = {}): Checked[] {
  const roots = sources.map((source) => {
    const dir = fs.mkdtempSync(path.join(out, "program-"));
    fs.writeFileSync(path.join(dir, "index.ts"), source);
    return path.join(dir, "index.ts");
  });
  const options: ts.CompilerOptions = {
    // Pulumi's template tsconfig.json.
    strict: true,
    target: ts.ScriptTarget.ES2020,
    module: ts.ModuleKind.CommonJS,
    moduleResolution: ts.ModuleResolutionKind.Node10,
    noFallthroughCasesInSwitch: true,
    noImplicitReturns: true,
    forceConsistentCasingInFileNames: true,
    noEmit: true,
    // The package by its published name, its declarations as built; everything else from this
    // repository's node_modules, as a user's project has them.
    baseUrl: ROOT,
    paths: {
      "pulumi-tigercloud": [path.join(out, "provider", "index.d.ts")],
      "pulumi-tigercloud/client": [path.join(out, "provider", "api", "client.d.ts")],
      "pulumi-tigercloud/preparation": [path.join(out, "provider", "resources", "serviceFork", "preparation", "schema.d.ts")],
    },
    types: ["node"],
    typeRoots: [path.join(ROOT, "node_modules", "@types")],
    ...extra,
  };
  const program = ts.createProgram(roots, options, cachingHost(options));
  const diagnostics = ts.getPreEmitDiagnostics(program);
  const files = program.getSourceFiles().map((f) => f.fileName);
  return roots.map((root) => ({
    errors: diagnostics
      .filter((d) => d.file?.fileName === root || !roots.includes(d.file?.fileName ?? ""))
      .map((d) => {
        const where = d.file ? `${path.relative(ROOT, d.file.fileName)}: ` : "";
        return where + ts.flattenDiagnosticMessageText(d.messageText, "\n");
      }),
    files,
  }));
}

const fromPackage = (files: string[], name: string) => files.filter((f) => f.includes(`/node_modules/${name}/`));

// The two programs below check in one compiler program: they import the same declarations.
const EVERY_CLASS = `
import * as pulumi from "@pulumi/pulumi";
import { ServiceFork, ServiceHA, VpcName, TigerCloudError, PartialFailureError, type ServiceForkArgs } from "pulumi-tigercloud";
const config = new pulumi.Config();
const args: ServiceForkArgs = { sourceServiceId: config.require("source"), forkStrategy: "NOW", name: "pr-1", cpuMillis: 1000, memoryGbs: "4" };
const fork = new ServiceFork("fork", args);
new ServiceHA("ha", { serviceId: fork.serviceId, replicaCount: 1 });
new VpcName("vpc", { vpcId: config.require("vpc"), name: "pr-1" });
export const uri = fork.connectionUri;
export const isOurs = (e: unknown) => e instanceof TigerCloudError || e instanceof PartialFailureError;
`;
const A_MISTAKE = `
import { ServiceFork } from "pulumi-tigercloud";
new ServiceFork("fork", { sourceServiceId: "svc-1", forkStrategy: "YESTERDAY" });
`;
/** The TypeScript examples in the resources' documentation, as Pulumi's generator wrote them (sdk/examples). */
const EXAMPLES = path.join(ROOT, "sdk", "examples");
const TYPESCRIPT_EXAMPLES = fs
  .readdirSync(EXAMPLES)
  .sort()
  .map((name) => ({ name, source: fs.readFileSync(path.join(EXAMPLES, name, "index.ts"), "utf8") }));
let templatePrograms: Checked[] | undefined;
const checkedWithTemplate = () =>
  (templatePrograms ??= checkPrograms([EVERY_CLASS, A_MISTAKE, ...TYPESCRIPT_EXAMPLES.map((e) => e.source)]));

test("a program using every resource and error class checks without errors, and without reading zod's or axios's types", () => {
  const { errors, files } = checkedWithTemplate()[0] as Checked;
  expect(errors).toEqual([]);
  expect(files.some((f) => f.endsWith(path.join("provider", "program", "resources.d.ts")))).toBe(true);
  // zod's declarations are hundreds of files; the program's check would parse them on every run.
  expect(fromPackage(files, "zod")).toEqual([]);
  expect(fromPackage(files, "axios")).toEqual([]);
});

test("a mistake in the resources' arguments is caught by the program's type check", () => {
  const { errors } = checkedWithTemplate()[1] as Checked;
  expect(errors.join("\n")).toMatch(/"YESTERDAY"/);
});

test("every TypeScript example in the resources' documentation checks against the package, the enums' names included", () => {
  expect(TYPESCRIPT_EXAMPLES.length).toBeGreaterThanOrEqual(3);
  const checked = checkedWithTemplate().slice(2);
  expect(TYPESCRIPT_EXAMPLES.map((e, i) => ({ example: e.name, errors: checked[i]?.errors }))).toEqual(
    TYPESCRIPT_EXAMPLES.map((e) => ({ example: e.name, errors: [] })),
  );
});

test("a preparation's rules, at pulumi-tigercloud/preparation (as the README shows): a rules file checked outside a program, typed", () => {
  const program = `
import { PreparationSchema, type Preparation } from "pulumi-tigercloud/preparation";
const checked = PreparationSchema.safeParse({ mask: [{ table: "customers", column: "email", with: "email" }] });
export const rules: Preparation | undefined = checked.success ? checked.data : undefined;
export const wrong: string[] = checked.success ? [] : checked.error.issues.map((i) => i.path.join("."));
`;
  expect(checkProgram(program, { esModuleInterop: true }).errors).toEqual([]);
  expect(checkProgram(program.replace("type Preparation", "type NotExported"), { esModuleInterop: true }).errors.length).toBeGreaterThan(0);
});

test("the API client, at pulumi-tigercloud/client: its types are zod's, whose declarations want esModuleInterop (as the README says)", () => {
  const program = `
import { createClient, type TigerCloudClient } from "pulumi-tigercloud/client";
const client: TigerCloudClient = createClient({ apiKey: "k" });
export const name = client.getService("proj", "svc").then((s) => s.name);
`;
  const template = checkProgram(program);
  expect(template.errors.length).toBeGreaterThan(0);
  expect(template.errors.every((e) => e.startsWith(path.join("node_modules", "zod")) && /esModuleInterop/.test(e))).toBe(true);
  for (const extra of [{ esModuleInterop: true }, { skipLibCheck: true }]) {
    const { errors, files } = checkProgram(program, extra);
    expect(errors).toEqual([]);
    expect(fromPackage(files, "zod").length).toBeGreaterThan(0);
  }
});
