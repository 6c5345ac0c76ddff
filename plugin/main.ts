// The provider plugin's one program, as its archive holds it (bundled by pack-plugin.js): served to
// the engine, or, for a user of any language with no npm project, one of its commands, run as
//   pulumi plugin run --kind resource tigercloud -- COMMAND [args]
// Each command's module is loaded only when it is asked for.
import { PACKAGE_VERSION } from "../provider/version";

/** A command of the plugin: its arguments in, its exit status out. */
type Command = (args: string[]) => Promise<number>;

export const PLUGIN_COMMANDS = {
  /** tigercloud-forks, the fork janitor. */
  forks: (args) => (require("../forks/cli") as typeof import("../forks/cli")).main(args),
  /** The PR database action's work (actions/pr-database): its inputs come from the environment. */
  "pr-database": () => (require("../prDatabase/main") as typeof import("../prDatabase/main")).runPrDatabase(),
  /** The local Tiger Cloud; ends with the engine that ran it. */
  simulator: async (args) => {
    const { runSimulator } = require("../simulator/cli") as typeof import("../simulator/cli");
    await runSimulator(args, {
      name: "pulumi plugin run --kind resource tigercloud -- simulator",
      version: PACKAGE_VERSION,
      endWithParent: true,
    });
    return 0;
  },
} satisfies Record<string, Command>;

export type PluginCommand = keyof typeof PLUGIN_COMMANDS;
const isCommand = (name: string | undefined): name is PluginCommand => name !== undefined && Object.hasOwn(PLUGIN_COMMANDS, name);

const [name, ...args] = process.argv.slice(2);
if (isCommand(name))
  PLUGIN_COMMANDS[name](args).then(
    (code) => (process.exitCode = code),
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
// Anything else: the engine starting its provider (its address as the argument).
else require("../provider/hosts/plugin/main");
