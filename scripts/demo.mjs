// `npm run demo`: the main job on the embedded default. Sets itself up, starts the local cluster with a
// fake DGX H100 node, runs a pod that claims a GPU and prints what the pod sees.
import { bootstrap } from './bootstrap.mjs';

bootstrap();
const { main } = await import('../dist/src/cli/main.js');
process.exitCode = await main(['demo', ...process.argv.slice(2)]);
