import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { serialize } from '../../src/cli/output.js';
import { PRESETS } from '../../src/model/preset/index.js';
import { apiViolations } from '../support/api-limits.js';
import { devicesOf, render } from '../support/render.js';
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
