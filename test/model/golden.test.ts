import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { serialize } from '../../src/cli/output.js';
import { PRESETS } from '../../src/model/preset/index.js';
import { apiViolations } from '../support/api-limits.js';
import { devicesOf, everyGate, render, type TestRender } from '../support/render.js';
import { REPO_ROOT } from '../../src/process/repo.js';

/**
 * Golden files pin every preset's output byte for byte (plain and dynamic MIG), so any change to what
 * a node publishes shows up in review. Regenerate with `UPDATE_GOLDEN=1 npm test` and read the diff.
 */
const goldenDir = join(REPO_ROOT, 'test', 'golden');
const update = process.env.UPDATE_GOLDEN === '1';

describe('golden slices per preset', () => {
  for (const p of PRESETS) {
    for (const dynamicMig of [false, true]) {
      const file = join(goldenDir, `${p.name}${dynamicMig ? '.dynamic-mig' : ''}.yaml`);
      it(`${p.name}${dynamicMig ? ' --dynamic-mig' : ''}`, () => {
        const list = render(p.name, { node: 'golden-node', dynamicMig });
        const text = serialize(list, 'yaml');
        assert.deepEqual(apiViolations(list.items), []);
        if (update || !existsSync(file)) {
          assert.ok(update, `golden file ${file} is missing; run UPDATE_GOLDEN=1 npm test and commit it`);
          mkdirSync(goldenDir, { recursive: true });
          writeFileSync(file, text);
        }
        assert.equal(text, readFileSync(file, 'utf8'));
      });
    }
  }
});

/** What NVIDIA's releases and gates change, pinned on one machine: the combinations users pick. */
describe('golden slices per release and gate combination (dgx-h100)', () => {
  const combos: [string, TestRender][] = [
    ['release-25.12', { release: '25.12' }],
    ['release-0.4', { release: '0.4' }],
    ['release-0.4.passthrough', { release: '0.4', gates: { PassthroughSupport: true } }],
    ['every-gate', everyGate(false)],
    ['every-gate.dynamic-mig', { ...everyGate(true), dynamicMig: true }],
    ['shares-4', { gates: { ConsumableShares: true }, consumableShares: { shares: 4n } }],
    ['lists', { gates: { DRAListTypeAttributes: true } }],
  ];
  for (const [name, o] of combos) {
    const file = join(goldenDir, `dgx-h100.${name}.yaml`);
    it(name, () => {
      const list = render('dgx-h100', { node: 'golden-node', ...o });
      const text = serialize(list, 'yaml');
      assert.deepEqual(apiViolations(list.items), []);
      if (update || !existsSync(file)) {
        assert.ok(update, `golden file ${file} is missing; run UPDATE_GOLDEN=1 npm test and commit it`);
        writeFileSync(file, text);
      }
      assert.equal(text, readFileSync(file, 'utf8'));
    });
  }

  it('every preset with every gate stays inside the API limits', () => {
    for (const p of PRESETS)
      for (const dynamicMig of [false, true])
        assert.deepEqual(
          apiViolations(render(p.name, { dynamicMig, ...everyGate(dynamicMig) }).items),
          [],
          p.name,
        );
  });
});

describe('determinism and identity', () => {
  it('the same node and profile give byte-identical output', () => {
    for (const p of PRESETS) {
      assert.equal(
        JSON.stringify(render(p.name, { node: 'n1', dynamicMig: true })),
        JSON.stringify(render(p.name, { node: 'n1', dynamicMig: true })),
      );
    }
  });
  it('different nodes never share a GPU UUID', () => {
    for (const p of PRESETS) {
      const seen = new Map<string, string>();
      for (const node of ['n1', 'n2', 'worker-0.example.com']) {
        for (const d of devicesOf(render(p.name, { node }))) {
          const a = d.attributes?.['uuid'];
          const uuid = a && 'string' in a ? a.string : '';
          assert.match(uuid, /^(GPU|MIG)-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
          const where = `${node}/${p.name}/${d.name}`;
          assert.ok(!seen.has(uuid), `${where} repeats the UUID of ${seen.get(uuid) ?? ''}`);
          seen.set(uuid, where);
        }
      }
    }
  });
});
