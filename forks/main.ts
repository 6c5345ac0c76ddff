#!/usr/bin/env node
// `tigercloud-forks`: the janitor's command line (cli.ts), run. Apart from cli.ts so that the
// plugin, which bundles cli.ts, runs it only when asked for.
import { main } from "./cli";

void main(process.argv.slice(2)).then((code) => (process.exitCode = code));
