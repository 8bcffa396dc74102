// `npm run e2e:integrations`: what users put on top of fake GPUs, built from their Go modules and run for
// real beside a local cluster without GPUs of its own: Karpenter's KWOK provider launching GPU instance
// types, whose KWOK nodes fakegpu's fleet fills in, and Kueue admitting GPU jobs against quota on KWOK
// DGX H100s. Not part of `.ci/run`: their first builds alone take minutes.
import { join } from 'node:path';
import { bootstrap, root } from './bootstrap.mjs';
import { cacheDir, testFiles, withCluster } from './suite.mjs';

bootstrap();

const files = testFiles(join(root, 'dist', 'test', 'e2e-integrations'));
if (files.length === 0) {
  process.stderr.write('fakegpu: no compiled tests under dist/test/e2e-integrations\n');
  process.exit(1);
}
const ok = withCluster({
  what: 'end-to-end tests, Karpenter and Kueue',
  dir: process.env.FAKEGPU_E2E_INTEGRATIONS_CLUSTER_DIR ?? join(cacheDir(), 'e2e-integrations-cluster'),
  dirEnv: 'FAKEGPU_E2E_INTEGRATIONS_CLUSTER_DIR',
  upArgs: [
    '--node',
    'fakegpu-integrations-node',
    '--kwok-nodes',
    '9',
    '--dynamic-mig',
    '--with',
    'karpenter,kueue',
  ],
  files,
});
process.exit(ok ? 0 : 1);
