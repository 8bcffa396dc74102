import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { pathToFileURL } from 'node:url';
import { REPO_ROOT } from '../src/process/repo.js';

describe('npm run e2e (scripts/e2e.mjs)', () => {
  it('refuses an unknown scenario in one line naming the ones there are, before building anything', () => {
    const r = spawnSync(process.execPath, [join(REPO_ROOT, 'scripts', 'e2e.mjs'), '--only', 'plugin,nope'], {
      encoding: 'utf8',
    });
    assert.equal(r.status, 2);
    assert.equal(
      r.stderr,
      'fakegpu: --only: no scenario "nope"; the scenarios are plugin, dynamic-mig, static-mig, topology, faults, nvidia-gates, compute-domains, helm, capture, releases\n',
    );
  });
});

describe('npm run chaos (scripts/chaos.mjs)', () => {
  it('refuses --slow without --fleet, or with --leader, in one line before building anything', () => {
    for (const [args, why] of [
      [['--slow'], 'needs --fleet'],
      [['--fleet', '--slow', '--leader'], 'not with --leader'],
    ] as const) {
      const r = spawnSync(process.execPath, [join(REPO_ROOT, 'scripts', 'chaos.mjs'), ...args], {
        encoding: 'utf8',
      });
      assert.equal(r.status, 2, r.stderr);
      assert.equal(r.stderr, `chaos: --slow: ${why}; the slow API server suite is --fleet --slow\n`);
      assert.equal(r.stdout, '');
    }
  });
});

describe('npm run fakegpu (scripts/fakegpu.mjs)', () => {
  /** A checkout whose "compiler" counts its runs in dist/builds. */
  function checkout(): string {
    const dir = mkdtempSync(join(tmpdir(), 'fakegpu-build-'));
    mkdirSync(join(dir, 'node_modules', 'typescript', 'bin'), { recursive: true });
    writeFileSync(
      join(dir, 'node_modules', 'typescript', 'bin', 'tsc'),
      "const fs = require('node:fs'); fs.mkdirSync('dist', { recursive: true }); fs.appendFileSync('dist/builds', 'x');\n",
    );
    mkdirSync(join(dir, 'src'));
    writeFileSync(join(dir, 'src', 'a.ts'), 'export const a = 1;\n');
    writeFileSync(join(dir, 'package-lock.json'), '{}\n');
    writeFileSync(join(dir, 'tsconfig.json'), '{}\n');
    return dir;
  }

  /** `ensureBuilt` in that checkout; how many builds it has seen since. */
  function ensureBuilt(dir: string): number {
    const bootstrap = pathToFileURL(join(REPO_ROOT, 'scripts', 'bootstrap.mjs')).href;
    const r = spawnSync(
      process.execPath,
      ['-e', `import(${JSON.stringify(bootstrap)}).then((b) => b.ensureBuilt(${JSON.stringify(dir)}))`],
      { encoding: 'utf8', timeout: 30_000 },
    );
    assert.equal(r.status, 0, r.stderr);
    // Nothing of the build on standard output, which is the command's.
    assert.equal(r.stdout, '');
    return readFileSync(join(dir, 'dist', 'builds'), 'utf8').length;
  }

  it('removes what was compiled from a source that is gone, and nothing else', () => {
    const dir = checkout();
    try {
      mkdirSync(join(dir, 'dist', 'src'), { recursive: true });
      for (const f of ['a.js', 'a.js.map', 'gone.js', 'gone.js.map', 'gone.d.ts'])
        writeFileSync(join(dir, 'dist', 'src', f), '');
      assert.equal(ensureBuilt(dir), 1);
      assert.deepEqual(readdirSync(join(dir, 'dist', 'src')).sort(), ['a.js', 'a.js.map']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('compiles a checkout once, and again only when a source, the lock file or tsconfig.json changes', () => {
    const dir = checkout();
    try {
      assert.equal(ensureBuilt(dir), 1);
      assert.equal(ensureBuilt(dir), 1);
      writeFileSync(join(dir, 'src', 'a.ts'), 'export const a = 22;\n');
      assert.equal(ensureBuilt(dir), 2);
      writeFileSync(join(dir, 'src', 'b.ts'), 'export const b = 1;\n');
      assert.equal(ensureBuilt(dir), 3);
      rmSync(join(dir, 'src', 'b.ts'));
      assert.equal(ensureBuilt(dir), 4);
      writeFileSync(join(dir, 'package-lock.json'), '{ "lockfileVersion": 3 }\n');
      assert.equal(ensureBuilt(dir), 5);
      assert.equal(ensureBuilt(dir), 5);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
