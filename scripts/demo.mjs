// `npm run demo`: what a node with fakegpu publishes, on the default preset, in one command.
import { bootstrap } from './bootstrap.mjs';

bootstrap();
const { main } = await import('../dist/src/cli/main.js');
const profile = process.env.FAKEGPU_PROFILE ?? 'dgx-h100';
process.stderr.write(`fakegpu: presets available:\n`);
let code = await main(['profiles']);
if (code === 0) {
  process.stderr.write(`\nfakegpu: ResourceSlices a node "demo-node" with ${profile} publishes:\n`);
  code = await main(['render', '--profile', profile, '--node', 'demo-node']);
}
process.exitCode = code;
