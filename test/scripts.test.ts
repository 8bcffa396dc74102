import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { REPO_ROOT } from '../src/process/repo.js';

describe('npm run e2e (scripts/e2e.mjs)', () => {
  it('refuses an unknown scenario in one line naming the ones there are, before building anything', () => {
    const r = spawnSync(process.execPath, [join(REPO_ROOT, 'scripts', 'e2e.mjs'), '--only', 'plugin,nope'], {
      encoding: 'utf8',
    });
    assert.equal(r.status, 2);
    assert.equal(
      r.stderr,
      'fakegpu: --only: no scenario "nope"; the scenarios are plugin, dynamic-mig, static-mig, topology, faults, compute-domains, helm, capture\n',
    );
  });
});
