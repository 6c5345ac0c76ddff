// The package entry exports every public name the resources declare: each resource's class and
// its Args, and every enum and named type of the plugin's schema, all derived from the registry
// (makeSchema walks it). A name declared there and not exported is a type a program cannot write.
import * as path from "path";
import * as ts from "typescript";
import { makeSchema } from "../../scripts/declarations";

const ROOT = path.join(__dirname, "..", "..");
const nameOf = (token: string) => token.split(":").at(-1) as string;

test("provider/index.ts exports every class, Args, enum and named type of the registry's resources", () => {
  const schema = makeSchema();
  const declared = [
    ...Object.keys(schema.resources).flatMap((token) => [nameOf(token), `${nameOf(token)}Args`]),
    ...Object.keys(schema.types).map(nameOf),
  ].sort();
  // The derivation sees the types a program writes for a preparation, not only the classes.
  expect(declared).toEqual(
    expect.arrayContaining(["Mask", "ServiceForkPreparation", "ServiceForkMaskRule", "ServiceFork", "ServiceForkArgs"]),
  );
  const entry = path.join(ROOT, "provider", "index.ts");
  const program = ts.createProgram([entry], {
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    esModuleInterop: true,
    resolveJsonModule: true,
  });
  const checker = program.getTypeChecker();
  const module = checker.getSymbolAtLocation(program.getSourceFile(entry) as ts.SourceFile) as ts.Symbol;
  const exported = new Set(checker.getExportsOfModule(module).map((s) => s.getName()));
  expect(declared.filter((name) => !exported.has(name))).toEqual([]);
});
