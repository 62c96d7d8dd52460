#!/usr/bin/env node
import { main } from './main.js';

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    // One line, never a stack: the command line speaks to operators, like the API to clients.
    process.stderr.write(`internal_error: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  },
);
