// What `npm test` and `npm run e2e` share: running a step, finding compiled tests, and running a set of
// test files against a local cluster that is started first and stopped after, checking nothing is left.
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { homedir, userInfo } from 'node:os';
import { join, relative } from 'node:path';
import { root } from './bootstrap.mjs';

export function step(what, cmd, args, env = process.env) {
  process.stderr.write(`fakegpu: ${what}\n`);
  const r = spawnSync(cmd, args, { cwd: root, stdio: 'inherit', env });
  if (r.status !== 0) process.stderr.write(`fakegpu: ${what} failed\n`);
  return r.status === 0;
}

export function testFiles(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return testFiles(p);
    return e.name.endsWith('.test.js') ? [relative(root, p)] : [];
  });
}

/** The same folder as cacheRoot() in src/local-cluster/build.ts, root's own when run as root. */
export function cacheDir() {
  if (process.env.FAKEGPU_CACHE !== undefined) return process.env.FAKEGPU_CACHE;
  if (process.geteuid?.() === 0) return join(userInfo().homedir, '.cache', 'fakegpu');
  return join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'fakegpu');
}

/** Pids whose command line mentions `dir`: what `cluster down` must not leave behind. */
export function leftovers(dir) {
  return readdirSync('/proc').filter((p) => {
    if (!/^\d+$/.test(p) || Number(p) === process.pid) return false;
    try {
      return readFileSync(`/proc/${p}/cmdline`, 'utf8').includes(dir);
    } catch {
      return false;
    }
  });
}

/**
 * `fakegpu cluster up <upArgs>` in `dir`, the test files (one at a time: they share the cluster) or a
 * program (`run`: node's arguments), with `env` added to the environment, then `cluster down` (with
 * `purge`, its directory goes too), which must leave no process behind. Returns
 * whether everything passed.
 */
export function withCluster({ what, dir, dirEnv, upArgs, files = [], run, env: extra = {}, purge = false }) {
  const env = { ...process.env, ...extra, [dirEnv]: dir };
  const fakegpu = join(root, 'bin', 'fakegpu.js');
  let ok = false;
  try {
    ok =
      step(
        `${what}: fakegpu cluster up ${upArgs.join(' ')}`,
        process.execPath,
        [fakegpu, 'cluster', 'up', '--dir', dir, ...upArgs],
        env,
      ) &&
      (run
        ? step(what, process.execPath, run, env)
        : step(
            `${what}: ${files.length} test files`,
            process.execPath,
            ['--test', '--test-concurrency=1', '--test-reporter=spec', ...files],
            env,
          ));
  } finally {
    ok =
      step(
        `${what}: fakegpu cluster down`,
        process.execPath,
        [fakegpu, 'cluster', 'down', '--dir', dir, ...(purge ? ['--purge'] : [])],
        env,
      ) && ok;
    const left = leftovers(dir);
    if (left.length > 0) {
      process.stderr.write(`fakegpu: cluster down left processes behind: ${left.join(', ')}\n`);
      ok = false;
    }
  }
  return ok;
}
