// `npm run fakegpu -- <args>`: the CLI from a fresh checkout, setting itself up first.
import { bootstrap } from './bootstrap.mjs';

bootstrap();
const { main } = await import('../dist/src/cli/main.js');
process.exitCode = await main(process.argv.slice(2));
