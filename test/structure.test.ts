// The layout holds: imports run one way (resources -> kit -> client and its leaves), and the
// README's "Developing" map names every module of the package.
import * as fs from "fs";
import * as path from "path";

const ROOT = path.join(__dirname, "..");
const PROVIDER = path.join(ROOT, "provider");
const modules = (dir: string) =>
  fs
    .readdirSync(path.join(PROVIDER, dir))
    .filter((f) => f.endsWith(".ts"))
    .map((f) => path.posix.join(dir, f));
const importsOf = (file: string) =>
  [...fs.readFileSync(path.join(PROVIDER, file), "utf8").matchAll(/from "(\.[^"]+)"/g)].map((m) =>
    path.posix.join(path.posix.dirname(file), m[1] as string),
  );

const LEAVES = ["api-schemas.ts", "client.ts", "errors.ts", "settings.ts", "text.ts", "version.ts"];
const RESOURCES = ["serviceFork.ts", "serviceHA.ts", "vpcName.ts"];
const TOP = ["index.ts", "runtime.ts", "watchdog.ts"];

test("every module of the package is in one layer", () => {
  expect([...modules("."), ...modules("kit")].sort()).toEqual([...LEAVES, ...RESOURCES, ...TOP, ...modules("kit")].sort());
});

test("the client and its leaves import nothing of the kit, the resources or the top", () => {
  for (const file of LEAVES)
    for (const target of importsOf(file))
      expect(`${file} -> ${target}`).not.toMatch(/-> (kit\/|serviceFork|serviceHA|vpcName|runtime|index)/);
});

test("the kit imports no resource and nothing of the top", () => {
  for (const file of modules("kit"))
    for (const target of importsOf(file)) expect(`${file} -> ${target}`).not.toMatch(/-> (serviceFork|serviceHA|vpcName|runtime|index)/);
});

test("a resource imports no other resource", () => {
  for (const file of RESOURCES)
    for (const target of importsOf(file)) expect(`${file} -> ${target}`).not.toMatch(/-> (serviceFork|serviceHA|vpcName|runtime|index)/);
});

test("the README's Developing map names every module", () => {
  const readme = fs.readFileSync(path.join(ROOT, "README.md"), "utf8");
  const map = readme.slice(readme.indexOf("## Developing"));
  for (const file of [...modules("."), ...modules("kit")]) expect(map).toContain(path.posix.basename(file));
});
