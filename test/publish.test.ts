import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { keyed, planPool, specKey, type PublishedSlice } from '../src/publish/pool.js';
import { render } from './support/render.js';

const NODE = 'node-a';
const DRIVER = 'gpu.nvidia.com';
const desired = keyed(render('dgx-h100', { node: NODE, dynamicMig: true }).items);
const as = (name: string, i: number, generation = 1): PublishedSlice => {
  const d = desired[i];
  assert.ok(d);
  return { name, key: d.key, generation };
};

describe('planning a node pool', () => {
  it('writes nothing when every slice is in place at one generation', () => {
    const existing = desired.map((_, i) =>
      as(`${i.toString(16).padStart(5, '0')}-${DRIVER}-${NODE}-abcde`, i, 3),
    );
    assert.equal(planPool(existing, desired, DRIVER, NODE), null);
  });

  it('replaces what differs, creates what is missing, deletes extras, one generation above all', () => {
    const existing = [
      as(`00000-${DRIVER}-${NODE}-aaaaa`, 0, 2),
      { ...as(`00001-${DRIVER}-${NODE}-bbbbb`, 1, 2), key: 'stale' },
      as(`00000-${DRIVER}-${NODE}-ccccc`, 0, 5),
      as(`0ffff-${DRIVER}-${NODE}-ddddd`, 0, 2),
    ];
    const plan = planPool(existing, desired, DRIVER, NODE);
    assert.ok(plan);
    assert.equal(plan.generation, 6);
    assert.equal(plan.writes.length, desired.length);
    assert.equal(plan.writes[0]?.existing?.name, `00000-${DRIVER}-${NODE}-aaaaa`);
    assert.equal(plan.writes[1]?.existing?.name, `00001-${DRIVER}-${NODE}-bbbbb`);
    assert.equal(plan.writes[2]?.existing, null);
    assert.deepEqual(plan.deletes, [`00000-${DRIVER}-${NODE}-ccccc`, `0ffff-${DRIVER}-${NODE}-ddddd`]);
  });

  it('matches slices named the 25.12 way (no index), so republishing them is not a create-and-delete loop', () => {
    const old = keyed(render('dgx-h100', { node: NODE, release: '25.12' }).items);
    assert.equal(old[0]?.slice.metadata.generateName, `${NODE}-${DRIVER}-`);
    const first = { name: `${NODE}-${DRIVER}-x7k2p`, key: specKey(old[0].slice.spec), generation: 1 };
    assert.equal(planPool([first], old, DRIVER, NODE), null);
    const stale = planPool(
      [
        { ...first, key: 'stale' },
        { ...first, name: `${NODE}-${DRIVER}-zzzzz` },
      ],
      old,
      DRIVER,
      NODE,
    );
    assert.equal(stale?.writes[0]?.existing?.name, `${NODE}-${DRIVER}-x7k2p`);
    assert.deepEqual(stale.deletes, [`${NODE}-${DRIVER}-zzzzz`]);
  });
});
