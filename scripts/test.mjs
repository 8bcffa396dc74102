// `npm test`: set-up, lint and format check, unit tests, then the integration tests against the local
// cluster (built from upstream sources on first use, cached outside the checkout), which it starts once
// and stops at the end. `npm run test:unit` stops after the unit tests.
import { join } from 'node:path';
import { bootstrap, root } from './bootstrap.mjs';
import { cacheDir, step, testFiles, withCluster } from './suite.mjs';

bootstrap();

const all = testFiles(join(root, 'dist', 'test'));
const integration = all.filter((f) => f.includes('/integration/'));
const fleet = all.filter((f) => f.includes('/integration-fleet/'));
const unit = all.filter((f) => !integration.includes(f) && !fleet.includes(f) && !/\/e2e[-/]/.test(f));
if (unit.length === 0 || integration.length === 0) {
  process.stderr.write('fakegpu: no compiled tests found under dist/test\n');
  process.exit(1);
}

const bin = (pkg, file) => join(root, 'node_modules', pkg, file);
let ok = step('lint (eslint)', process.execPath, [bin('eslint', 'bin/eslint.js'), '.']);
ok =
  step('format check (prettier)', process.execPath, [bin('prettier', 'bin/prettier.cjs'), '--check', '.']) &&
  ok;
ok =
  step(`unit tests (${unit.length} files)`, process.execPath, ['--test', '--test-reporter=spec', ...unit]) &&
  ok;
if (!ok || process.argv.includes('--unit')) process.exit(ok ? 0 : 1);

ok = withCluster({
  what: 'integration tests',
  dir: process.env.FAKEGPU_TEST_CLUSTER_DIR ?? join(cacheDir(), 'test-cluster'),
  dirEnv: 'FAKEGPU_TEST_CLUSTER_DIR',
  upArgs: ['--node', 'fakegpu-test-node'],
  files: integration,
});
// The fleet needs KWOK's nodes, so it gets a cluster of its own, after the first is gone.
ok =
  withCluster({
    what: 'integration tests, fleet on KWOK nodes',
    dir: process.env.FAKEGPU_FLEET_CLUSTER_DIR ?? join(cacheDir(), 'fleet-cluster'),
    dirEnv: 'FAKEGPU_FLEET_CLUSTER_DIR',
    upArgs: ['--node', 'fakegpu-fleet-host', '--kwok-nodes', '50', '--kwok-profile', 'dgx-h100'],
    files: fleet,
  }) && ok;
process.exit(ok ? 0 : 1);
