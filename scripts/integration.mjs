// `node scripts/integration.mjs dist/test/integration/<file>.test.js …`: some of test/integration without
// the rest of `npm test`, against the same test cluster, started before the files and stopped after (with
// the same check that nothing of it is left).
import { join, relative, resolve } from 'node:path';
import { bootstrap, root } from './bootstrap.mjs';
import { cacheDir, withCluster } from './suite.mjs';

const files = process.argv.slice(2).map((f) => relative(root, resolve(f)));
const wrong = files.filter((f) => !/^dist\/test\/integration\/[^/]+\.test\.js$/.test(f));
if (files.length === 0 || wrong.length > 0) {
  process.stderr.write(
    `fakegpu: give compiled files of test/integration, dist/test/integration/<file>.test.js${wrong.length ? `; not one: ${wrong.join(', ')}` : ''}\n`,
  );
  process.exit(2);
}
bootstrap();
const ok = withCluster({
  what: 'integration tests',
  dir: process.env.FAKEGPU_TEST_CLUSTER_DIR ?? join(cacheDir(), 'test-cluster'),
  dirEnv: 'FAKEGPU_TEST_CLUSTER_DIR',
  upArgs: ['--node', 'fakegpu-test-node'],
  files,
});
process.exit(ok ? 0 : 1);
