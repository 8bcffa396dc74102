// `npm test`: set-up, lint and format check, unit tests, then the integration tests against the local
// cluster (built from upstream sources on first use, cached outside the checkout), which it starts once
// and stops at the end.
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, relative } from 'node:path';
import { bootstrap, root } from './bootstrap.mjs';

bootstrap();

function step(what, cmd, args, env = process.env) {
  process.stderr.write(`fakegpu: ${what}\n`);
  const r = spawnSync(cmd, args, { cwd: root, stdio: 'inherit', env });
  if (r.status !== 0) process.stderr.write(`fakegpu: ${what} failed\n`);
  return r.status === 0;
}

function testFiles(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return testFiles(p);
    return e.name.endsWith('.test.js') ? [relative(root, p)] : [];
  });
}

const bin = (pkg, file) => join(root, 'node_modules', pkg, file);
const fakegpu = join(root, 'bin', 'fakegpu.js');
const all = testFiles(join(root, 'dist', 'test'));
const integration = all.filter((f) => f.includes('/integration/'));
const unit = all.filter((f) => !integration.includes(f) && !f.includes('/e2e/'));
if (unit.length === 0 || integration.length === 0) {
  process.stderr.write('fakegpu: no compiled tests found under dist/test\n');
  process.exit(1);
}

let ok = step('lint (eslint)', process.execPath, [bin('eslint', 'bin/eslint.js'), '.']);
ok =
  step('format check (prettier)', process.execPath, [bin('prettier', 'bin/prettier.cjs'), '--check', '.']) &&
  ok;
ok =
  step(`unit tests (${unit.length} files)`, process.execPath, ['--test', '--test-reporter=spec', ...unit]) &&
  ok;
if (!ok || process.argv.includes('--unit')) process.exit(ok ? 0 : 1);

const cache =
  process.env.FAKEGPU_CACHE ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'fakegpu');
const dir = process.env.FAKEGPU_TEST_CLUSTER_DIR ?? join(cache, 'test-cluster');
const env = { ...process.env, FAKEGPU_TEST_CLUSTER_DIR: dir };
try {
  ok = step(
    'local cluster for the integration tests (fakegpu cluster up)',
    process.execPath,
    [fakegpu, 'cluster', 'up', '--dir', dir, '--node', 'fakegpu-test-node'],
    env,
  );
  ok =
    ok &&
    step(
      `integration tests (${integration.length} files)`,
      process.execPath,
      ['--test', '--test-concurrency=1', '--test-reporter=spec', ...integration],
      env,
    );
} finally {
  ok =
    step(
      'stopping the test cluster (fakegpu cluster down)',
      process.execPath,
      [fakegpu, 'cluster', 'down', '--dir', dir],
      env,
    ) && ok;
  // `down` must leave nothing behind: no process mentions the cluster directory any more.
  const left = readdirSync('/proc').filter((p) => {
    if (!/^\d+$/.test(p) || Number(p) === process.pid) return false;
    try {
      return readFileSync(`/proc/${p}/cmdline`, 'utf8').includes(dir);
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
