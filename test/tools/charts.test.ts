import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { CHARTS_DIR, committedResults, generatedCharts } from '../../src/tools/charts/files.js';
import { sortResults } from '../../src/tools/charts/results.js';
import { REPO_ROOT } from '../../src/process/repo.js';
import { FakegpuError } from '../../src/errors.js';

const committed = (): { file: string; json: unknown }[] => committedResults(REPO_ROOT);

/** The charts whose text differs from the file on disk. */
async function stale(results: { file: string; json: unknown }[]): Promise<string[]> {
  return (await generatedCharts(results))
    .filter((c) => {
      const p = join(REPO_ROOT, c.path);
      return !existsSync(p) || readFileSync(p, 'utf8') !== c.text;
    })
    .map((c) => c.path);
}

describe('the benchmark charts (npm run docs)', () => {
  it('are current on disk for the committed results, and bench/README.md shows each', async () => {
    assert.deepEqual(await stale(committed()), [], 'run npm run docs and commit what it writes');
    const readme = readFileSync(join(REPO_ROOT, 'bench', 'README.md'), 'utf8');
    for (const c of await generatedCharts(committed()))
      assert.ok(readme.includes(`(${c.path.replace(/^bench\//, '')})`), `bench/README.md links ${c.path}`);
    assert.deepEqual(
      readdirSync(join(REPO_ROOT, CHARTS_DIR)).sort(),
      (await generatedCharts(committed())).map((c) => c.path.split('/').pop()).sort(),
      'no chart without a generator',
    );
  });

  it('go stale when a committed result changes', async () => {
    const results = committed();
    const fleet = results.find((r) => (r.json as { bench?: string }).bench === 'fleet');
    assert.ok(fleet, 'a fleet result is committed');
    const json = structuredClone(fleet.json) as { rounds: { ceilings: number[] } };
    json.rounds.ceilings = json.rounds.ceilings.map((s) => s * 2);
    const changed = results.map((r) => (r === fleet ? { file: r.file, json } : r));
    const now = await stale(changed);
    assert.ok(now.includes(`${CHARTS_DIR}/fleet-publish.svg`), now.join(', '));
    assert.ok(now.includes(`${CHARTS_DIR}/fleet-ratio.svg`), now.join(', '));
  });

  it('name the file and field of a result they cannot read, in one line', () => {
    assert.throws(
      () => sortResults([{ file: 'bench/results/x.json', json: { bench: 'fleet', started: 'x' } }]),
      (e: unknown) =>
        e instanceof FakegpuError &&
        /^bench\/results\/x\.json: hardware: /.test(e.message) &&
        !e.message.includes('\n'),
    );
    assert.throws(
      () => sortResults([{ file: 'bench/results/y.json', json: { bench: 'mig' } }]),
      /^FakegpuError: bench\/results\/y\.json: bench is "mig"|bench\/results\/y\.json: bench is "mig"/,
    );
  });
});
