// `npm run e2e`: the end-to-end suite. Starts a local cluster whose node runs fakegpu's plugin as a DGX
// H100, runs test/e2e against it, stops it and fails if anything of it is left running.
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, relative } from 'node:path';
import { bootstrap, root } from './bootstrap.mjs';

bootstrap();

function step(what, args, env) {
  process.stderr.write(`fakegpu: ${what}\n`);
  const r = spawnSync(process.execPath, args, { cwd: root, stdio: 'inherit', env });
  if (r.status !== 0) process.stderr.write(`fakegpu: ${what} failed\n`);
  return r.status === 0;
}

const dir = join(root, 'dist', 'test', 'e2e');
const files = readdirSync(dir)
  .filter((f) => f.endsWith('.test.js'))
  .map((f) => relative(root, join(dir, f)));
if (files.length === 0) {
  process.stderr.write('fakegpu: no compiled e2e tests under dist/test/e2e\n');
  process.exit(1);
}
const cache =
  process.env.FAKEGPU_CACHE ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'fakegpu');
const clusterDir = process.env.FAKEGPU_E2E_CLUSTER_DIR ?? join(cache, 'e2e-cluster');
const env = { ...process.env, FAKEGPU_E2E_CLUSTER_DIR: clusterDir };
const fakegpu = join(root, 'bin', 'fakegpu.js');
let ok = false;
try {
  ok =
    step(
      'e2e cluster with a fake DGX H100 node (fakegpu cluster up --profile dgx-h100)',
      [fakegpu, 'cluster', 'up', '--dir', clusterDir, '--node', 'fakegpu-e2e-node', '--profile', 'dgx-h100'],
      env,
    ) &&
    step(
      `end-to-end tests (${files.length} files)`,
      ['--test', '--test-concurrency=1', '--test-reporter=spec', ...files],
      env,
    );
} finally {
  ok =
    step(
      'stopping the e2e cluster (fakegpu cluster down)',
      [fakegpu, 'cluster', 'down', '--dir', clusterDir],
      env,
    ) && ok;
  const left = readdirSync('/proc').filter((p) => {
    if (!/^\d+$/.test(p) || Number(p) === process.pid) return false;
    try {
      return readFileSync(`/proc/${p}/cmdline`, 'utf8').includes(clusterDir);
    } catch {
      return false;
    }
  });
  if (left.length > 0) {
    process.stderr.write(`fakegpu: cluster down left processes behind: ${left.join(', ')}\n`);
    ok = false;
  }
}
process.exit(ok ? 0 : 1);
