// `npm run e2e`: the end-to-end suite, one local cluster per scenario of scripts/e2e-scenarios.mjs, each
// started, tested, stopped and checked for leftovers before the next. `npm run e2e -- --only NAME[,NAME]`
// runs some of them; `--list` prints each scenario's cluster flags and test files and runs nothing.
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { bootstrap, root } from './bootstrap.mjs';
import { SCENARIOS } from './e2e-scenarios.mjs';
import { cacheDir, leftovers, step, testFiles, withCluster } from './suite.mjs';

const args = process.argv.slice(2);
const flag = (name) => {
  const i = args.indexOf(name);
  return i < 0 ? undefined : (args[i + 1] ?? '');
};
const only = flag('--only')?.split(',');
const names = SCENARIOS.map((s) => s.name);
for (const n of only ?? []) {
  if (!names.includes(n)) {
    process.stderr.write(
      `fakegpu: --only: no scenario ${JSON.stringify(n)}; the scenarios are ${names.join(', ')}\n`,
    );
    process.exit(2);
  }
}
const chosen = SCENARIOS.filter((s) => !only || only.includes(s.name));

bootstrap();

/** A scenario's compiled test files: a folder under dist/test gives every test in it, a file itself. */
function filesOf(s) {
  return s.tests.flatMap((t) => {
    const p = join(root, 'dist', 'test', t);
    if (!existsSync(p)) return [];
    return statSync(p).isDirectory() ? testFiles(p) : [join('dist', 'test', t)];
  });
}
const arg = (a) => (typeof a === 'string' ? a : join(root, a.repo));
const dirOf = (s) => process.env[s.dirEnv] ?? join(cacheDir(), s.dir);

function runScenario(s) {
  const files = filesOf(s);
  if (files.length === 0) {
    process.stderr.write(`fakegpu: ${s.what}: no compiled tests under dist/test for ${s.tests.join(', ')}\n`);
    return false;
  }
  if (s.ownClusters) return runOwnClusters(s, files);
  const dir = dirOf(s);
  const env = Object.fromEntries(
    Object.entries(s.env ?? {}).map(([k, v]) => [k, typeof v === 'string' ? v : dir]),
  );
  return withCluster({ what: s.what, dir, dirEnv: s.dirEnv, env, upArgs: s.upArgs.map(arg), files });
}

/** A scenario whose tests start and stop their cluster directories themselves. */
function runOwnClusters(s, files) {
  const dirs = Object.fromEntries(
    Object.entries(s.ownClusters).map(([k, d]) => [k, process.env[k] ?? join(cacheDir(), d)]),
  );
  let ok = step(
    s.what,
    process.execPath,
    ['--test', '--test-concurrency=1', '--test-reporter=spec', ...files],
    { ...process.env, ...dirs },
  );
  for (const dir of Object.values(dirs)) {
    const left = leftovers(dir);
    if (left.length > 0) {
      process.stderr.write(`fakegpu: cluster down left processes behind: ${left.join(', ')}\n`);
      ok = false;
    }
  }
  return ok;
}

if (args.includes('--list')) {
  for (const s of chosen)
    process.stdout.write(
      `${s.name}: ${s.upArgs ? `cluster up ${s.upArgs.map(arg).join(' ')}` : 'its own clusters'}; ${filesOf(s).join(' ')}\n`,
    );
  process.exit(0);
}
let ok = true;
for (const s of chosen) ok = runScenario(s) && ok;
process.exit(ok ? 0 : 1);
