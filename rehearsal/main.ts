#!/usr/bin/env node
// `tigercloud-rehearse`: the migration rehearsal's command line (cli.ts), run.
import { main } from "./cli";

void main(process.argv.slice(2)).then((code) => (process.exitCode = code));
