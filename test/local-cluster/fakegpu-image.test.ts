import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { IMAGE_LAYOUT } from '../../src/local-cluster/fakegpu-image.js';
import { REPO_ROOT } from '../../src/process/repo.js';

/**
 * Two recipes of one image: the Dockerfile (for users with Docker) and `fakegpu image build` (here,
 * without one). Their final stages must agree on the entrypoint, the working directory, the user and
 * every path they copy.
 */
describe('the Dockerfile and fakegpu image build', () => {
  const lines = readFileSync(join(REPO_ROOT, 'Dockerfile'), 'utf8')
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
  const final = lines.slice(lines.map((l) => l.startsWith('FROM ')).lastIndexOf(true));
  const arg = (instr: string): string[] =>
    final.filter((l) => l.startsWith(`${instr} `)).map((l) => l.slice(instr.length + 1).trim());

  it('run the same command in the same directory, as the same user', () => {
    assert.deepEqual(arg('WORKDIR'), [IMAGE_LAYOUT.workdir]);
    assert.deepEqual(JSON.parse(arg('ENTRYPOINT')[0] ?? 'null'), IMAGE_LAYOUT.entrypoint);
    assert.deepEqual(JSON.parse(arg('CMD')[0] ?? 'null'), IMAGE_LAYOUT.cmd);
    // No USER line: root, as the image's user is.
    assert.equal(IMAGE_LAYOUT.user, 'root');
    assert.deepEqual(arg('USER'), []);
  });

  it('copy the same paths of the checkout', () => {
    const copied = arg('COPY').map((c) => {
      const parts = c.split(/\s+/).filter((p) => !p.startsWith('--'));
      const dest = parts[parts.length - 1] ?? '';
      // `COPY package.json ./` keeps the name; `COPY bin ./bin` names it.
      return dest === './' ? (parts[0] ?? '') : dest.replace(/^\.\//, '');
    });
    assert.deepEqual([...copied].sort(), [...IMAGE_LAYOUT.copies].sort());
  });

  it('install the IMEX daemon stand-in at the same path', () => {
    assert.ok(
      arg('RUN').some((r) => r.includes(`'${IMAGE_LAYOUT.daemon}'`)),
      `a RUN line writes ${IMAGE_LAYOUT.daemon}`,
    );
  });
});
