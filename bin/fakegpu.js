#!/usr/bin/env node
import { main } from '../dist/src/cli/main.js';

// A reader that stops early (`fakegpu render | head`) closes the pipe: that is the end of the output,
// not an error to report with a stack trace.
process.stdout.on('error', (e) => {
  if (e.code === 'EPIPE') process.exit(process.exitCode ?? 0);
  throw e;
});

process.exitCode = await main(process.argv.slice(2));
