// `npm run e2e:matrix [-- 1.34 1.36 …]`: the reduced end-to-end set (test/e2e-matrix) on every Kubernetes
// release fakegpu builds, one cluster at a time in the same directory, then a table release × case. A
// release that cannot be built here is a row saying why. The table also goes to
// <cache>/e2e-matrix.json and .md, for the README.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { bootstrap, root } from './bootstrap.mjs';
import { cacheDir, step, withCluster } from './suite.mjs';

bootstrap();

const { KUBERNETES_RELEASES, releaseLabel } = await import(
  join(root, 'dist', 'src', 'local-cluster', 'releases.js')
);
const asked = process.argv.slice(2);
const releases = asked.length
  ? KUBERNETES_RELEASES.filter((r) => asked.includes(r.release) || asked.includes(r.version))
  : KUBERNETES_RELEASES;
if (releases.length === 0) {
  process.stderr.write(
    `fakegpu: no release among ${asked.join(' ')}; known: ${KUBERNETES_RELEASES.map((r) => r.release).join(' ')}\n`,
  );
  process.exit(2);
}

/** Case ids: the first word of each test's name in test/e2e-matrix ("gpu-pod: …"). */
const CASES = ['version', 'gpu-pod', 'mig', 'gpu-nic', 'fleet', 'presets', 'limits', 'claim-status'];
const dir = process.env.FAKEGPU_E2E_MATRIX_CLUSTER_DIR ?? join(cacheDir(), 'e2e-matrix-cluster');
const out = join(cacheDir(), 'e2e-matrix');
mkdirSync(out, { recursive: true });

/** `ok`/`not ok` of each test in a TAP file, by case id. */
function results(tap) {
  const r = {};
  for (const m of tap.matchAll(/^\s*(not ok|ok) \d+ - ([a-z-]+):/gm))
    r[m[2]] = m[1] === 'ok' ? 'pass' : 'FAIL';
  return r;
}

// Whatever an interrupted run left: stopped, and its directory gone.
step('e2e matrix: a clean start', process.execPath, [
  join(root, 'bin', 'fakegpu.js'),
  'cluster',
  'down',
  '--dir',
  dir,
  '--purge',
]);

const rows = [];
let ok = true;
for (const r of releases) {
  const name = releaseLabel(r);
  if (r.unavailable) {
    rows.push({
      release: name,
      cells: Object.fromEntries(CASES.map((c) => [c, 'n/a'])),
      note: `cannot be built: ${r.unavailable}`,
    });
    continue;
  }
  const tap = join(out, `${r.release}.tap`);
  rmSync(tap, { force: true });
  const started = Date.now();
  const passed = withCluster({
    what: `e2e matrix, Kubernetes ${r.version}`,
    dir,
    dirEnv: 'FAKEGPU_E2E_MATRIX_CLUSTER_DIR',
    upArgs: [
      '--kubernetes-version',
      r.release,
      '--node-name',
      'fakegpu-matrix-node',
      '--profile',
      'dgx-h100',
      '--dynamic-mig',
      '--nic-numa-attribute',
      'standard',
      '--kwok-nodes',
      '20',
    ],
    run: [
      '--test',
      '--test-concurrency=1',
      '--test-reporter=spec',
      '--test-reporter-destination=stdout',
      '--test-reporter=tap',
      `--test-reporter-destination=${tap}`,
      join('dist', 'test', 'e2e-matrix', 'matrix.test.js'),
    ],
    env: { FAKEGPU_MATRIX_RELEASE: r.release },
    // Each release starts from an empty etcd: another release's objects are not this one's to read.
    purge: true,
  });
  let got = {};
  try {
    got = results(readFileSync(tap, 'utf8'));
  } catch {
    // No TAP: the cluster did not come up; every case shows it.
  }
  rows.push({
    release: name,
    cells: Object.fromEntries(CASES.map((c) => [c, got[c] ?? 'not run'])),
    note: [...r.lacks, `${Math.round((Date.now() - started) / 1000)} s`].join('; '),
  });
  ok = passed && ok;
}

const header = ['release', ...CASES, 'notes'];
const md = [
  `| ${header.join(' | ')} |`,
  `| ${header.map(() => '---').join(' | ')} |`,
  ...rows.map((row) => `| ${[row.release, ...CASES.map((c) => row.cells[c]), row.note].join(' | ')} |`),
].join('\n');
writeFileSync(join(out, 'e2e-matrix.md'), `${md}\n`);
writeFileSync(
  join(out, 'e2e-matrix.json'),
  `${JSON.stringify({ at: new Date().toISOString(), rows }, null, 2)}\n`,
);
process.stdout.write(`\n${md}\n`);
process.stderr.write(`fakegpu: the table is in ${join(out, 'e2e-matrix.md')}\n`);
process.exit(ok ? 0 : 1);
