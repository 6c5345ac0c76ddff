// The provider plugin `pulumi-resource-tigercloud`: the engine starts it with its own address as
// the argument (after any flags), reads the port it prints, and calls it over gRPC. One process
// serves one provider instance: its settings are its own.
import { endWithEngine, PLUGIN_PROCESS_TITLE } from "../engineWatch";
import { escapedError } from "../../context/escaping";
import { RESOURCES } from "../../resources/registry";
import { printable } from "../../text";
import { providerService, serve } from "./server";

async function main(args: string[]): Promise<void> {
  // The engine's address is the last argument: flags (--tracing VALUE, -v=N) come before it.
  const last = args[args.length - 1];
  const engineAddress = last !== undefined && !last.startsWith("-") ? last : undefined;
  if (engineAddress !== undefined) endWithEngine(PLUGIN_PROCESS_TITLE);
  const { port } = await serve(providerService(RESOURCES, engineAddress));
  // The engine reads the port from the first line of standard output.
  process.stdout.write(`${port}\n`);
}

main(process.argv.slice(2)).catch((err: unknown) => {
  process.stderr.write(`pulumi-resource-tigercloud: ${printable(escapedError(err).message)}\n`);
  process.exit(1);
});
