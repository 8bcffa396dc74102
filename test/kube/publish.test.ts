import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import { KubeConfig } from '@kubernetes/client-node';
import { pino } from 'pino';
import { KubeApi, type ClusterApi } from '../../src/kube/api.js';
import { ApiClient } from '../../src/kube/client.js';
import type { ResourceSlice } from '../../src/kube/types/resource.js';
import { keyed, planPool, specKey, type PublishedSlice } from '../../src/kube/publish/pool.js';
import { Publisher } from '../../src/kube/publish/publisher.js';
import { FakeApi } from '../support/fake-api.js';
import { loopback, until } from '../support/http.js';
import { render } from '../support/render.js';

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

  it("reads a long node's slices as its own, named as the API server cuts a generateName (58 characters)", () => {
    const node = 'gke-prod-cluster-a3-highgpu-pool-1a2b3c4d-x9k2';
    for (const release of ['0.5', '25.12'] as const) {
      const want = keyed(render('dgx-h100', { node, dynamicMig: true, release }).items);
      const existing = want.map((d, i) => ({
        name: `${(d.slice.metadata.generateName ?? '').slice(0, 58)}${'bcdfg'.slice(0, 4)}${String.fromCharCode(98 + i)}`,
        key: d.key,
        generation: 2,
      }));
      assert.ok((want[0]?.slice.metadata.generateName ?? '').length > 58, 'the cut takes the node name');
      if (release === '0.5') assert.equal(planPool(existing, want, DRIVER, node), null, release);
      else {
        // 25.12's names carry no index: matched in name order, and nothing created or deleted.
        const plan = planPool(existing, want, DRIVER, node);
        assert.deepEqual(plan?.deletes ?? [], [], release);
        assert.ok(
          (plan?.writes ?? []).every((w) => w.existing !== null),
          release,
        );
      }
    }
  });
});

describe('the publisher against an API server that fails', () => {
  const silent = pino({ level: 'silent' });
  let publishers: Publisher[] = [];
  afterEach(() => {
    for (const p of publishers) p.stop();
    publishers = [];
  });
  const start = (api: ClusterApi, slices: ResourceSlice[], log = silent): { writes: number[] } => {
    const synced = { writes: [] as number[] };
    const p = new Publisher(new KubeConfig(), {
      nodeName: NODE,
      driverName: DRIVER,
      log,
      api,
      random: () => 0,
      onSync: (w) => synced.writes.push(w),
    });
    publishers.push(p);
    p.start(slices);
    return synced;
  };
  const specs = (api: FakeApi): ResourceSlice['spec'][] =>
    [...api.slices.values()]
      .sort((a, b) => ((a.metadata.name ?? '') < (b.metadata.name ?? '') ? -1 : 1))
      .map((s) => ({ ...s.spec, pool: { ...s.spec.pool, generation: 0 } }));
  const want = (slices: ResourceSlice[]): ResourceSlice['spec'][] =>
    slices.map((s) => ({ ...s.spec, pool: { ...s.spec.pool, generation: 0 } }));

  it('retries failed requests with backoff until the pool is published, then writes nothing', async () => {
    const api = new FakeApi();
    api.putNode(NODE);
    api.fail('readNode', 2);
    api.fail('createSlice', 2, 503);
    const slices = desired.map((d) => d.slice);
    const synced = start(api, slices);
    await until('published', () => synced.writes.length > 0);
    assert.deepEqual(specs(api), want(slices));
    assert.equal(
      api.count('readNode'),
      5,
      'two failed reads, a failed create twice, then the pass that worked',
    );
    assert.equal(api.count('createSlice'), slices.length + 2);
    await publishers[0]?.sync();
    assert.equal(synced.writes.at(-1), 0);
  });

  it('lists again and succeeds after a conflict (someone updated a slice between its list and its update)', async () => {
    const api = new FakeApi();
    api.putNode(NODE);
    const before = render('dgx-h100', { node: NODE }).items;
    const first = start(api, before);
    await until('first publish', () => first.writes.length > 0);
    publishers.shift()?.stop();
    const [name] = api.slices.keys();
    assert.ok(name);
    api.before('replaceSlice', () => {
      api.touchSlice(name);
    });
    const after = render('dgx-h100', { node: NODE, dynamicMig: true }).items;
    const second = start(api, after);
    await until('republished', () => second.writes.length > 0);
    assert.ok(api.count('replaceSlice') >= 2, 'the conflicted replace was not the last');
    assert.deepEqual(specs(api), want(after));
  });

  it('puts back a slice someone deleted, through its watch', async () => {
    const api = new FakeApi();
    api.putNode(NODE);
    const slices = desired.map((d) => d.slice);
    const synced = start(api, slices);
    await until('published', () => synced.writes.length > 0);
    const [name] = api.slices.keys();
    assert.ok(name);
    api.removeSlice(name);
    await until('put back', () => api.slices.size === slices.length && !api.slices.has(name), 3000);
  });

  it('is not held by an API server that never answers: the request times out and is retried', async () => {
    const s = await loopback(() => undefined);
    const lines: string[] = [];
    const log = pino({ level: 'warn' }, { write: (l: string) => lines.push(l) });
    const api = new KubeApi(new ApiClient(s.kc, { timeoutMs: 100, watchIdleMs: 100 }));
    try {
      start(api, [], log);
      const failures = (): string[] => lines.filter((l) => l.includes('publishing ResourceSlices failed'));
      await until('two timed-out passes', () => failures().length >= 2, 3000);
      assert.match(failures()[0] ?? '', /no answer within 100 ms/);
      await until('the silent watch retried', () =>
        lines.some((l) => l.includes('nothing received for 100 ms')),
      );
    } finally {
      publishers.shift()?.stop();
      await s.close();
    }
  });
});
