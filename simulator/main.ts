#!/usr/bin/env node
// `tigercloud-simulator`: the simulator's command line (cli.ts), run. Apart from cli.ts so that the
// plugin, which bundles cli.ts, runs it only when asked for.
import { runSimulator } from "./cli";

runSimulator(process.argv.slice(2)).catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
