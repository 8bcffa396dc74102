import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Fleet } from '../../src/fleet/fleet.js';
import { KWOK_ANNOTATION } from '../../src/kube/kwok.js';
import type { StoredSlice } from '../../src/kube/api.js';
import { DRIVER_NAME } from '../../src/model/slice/build.js';
import { FakeApi } from '../support/fake-api.js';
import { testFleet } from '../support/fleet.js';
import { until } from '../support/http.js';

/** The fleet against an in-memory API server: failures, expiry and deselection, without a cluster. */
const KWOK = { [KWOK_ANNOTATION]: 'fake' };
let fleets: Fleet[] = [];

function fleetOn(api: FakeApi, random: () => number = () => 0, collect?: () => void): Fleet {
  // Every backoff draws 0 unless a test says otherwise: retries come at once, so the tests wait on
  // behaviour, not on timers.
  const f = testFleet(api, { random, ...(collect ? { collect } : {}) });
  fleets.push(f);
  return f;
}

function withNodes(n: number): FakeApi {
  const api = new FakeApi();
  for (let i = 0; i < n; i++) api.putNode(`node-${i}`, {}, KWOK);
  return api;
}

const slicesOf = (api: FakeApi, node: string): StoredSlice[] =>
  [...api.slices.values()].filter((s) => s.spec.nodeName === node);

/** A slice of the node at an index no profile has: the node's next pass must delete it. */
function stray(api: FakeApi, node: string): string {
  const name = `0ffff-${DRIVER_NAME}-${node}-zzzzz`;
  api.slices.set(name, {
    apiVersion: 'resource.k8s.io/v1',
    kind: 'ResourceSlice',
    metadata: {
      name,
      resourceVersion: '1',
      ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: node, uid: `uid-${node}`, controller: true }],
    },
    spec: { driver: DRIVER_NAME, nodeName: node, pool: { name: node, generation: 1, resourceSliceCount: 1 } },
  } as StoredSlice);
  return name;
}

afterEach(async () => {
  await Promise.all(fleets.map((f) => f.stop()));
  fleets = [];
});

describe('the fleet against an API server that fails', () => {
  it('publishes every node once; its own writes coming back cost nothing', async () => {
    const api = withNodes(3);
    const f = fleetOn(api);
    await f.start();
    await until('converged', () => f.converged() && api.slices.size === 3);
    await sleep(50);
    assert.equal(api.count('createSlice'), 3);
    assert.equal(api.count('replaceSlice'), 0);
    assert.equal(f.snapshot().slices, 3);
  });

  it('waits out an API server that does not answer at start, then publishes every node', async () => {
    const api = withNodes(2);
    api.fail('listNodes', 3, 503);
    api.fail('version', 2, 503);
    const f = fleetOn(api);
    await f.start();
    await until('converged', () => f.converged() && api.slices.size === 2);
    assert.ok((api.calls.get('listNodes') ?? 0) >= 4);
  });

  it('retries a failed delete until the slice is gone, keeping it in the index until then', async () => {
    const api = withNodes(2);
    const name = stray(api, 'node-0');
    api.fail('deleteSlice', 3);
    const f = fleetOn(api);
    await f.start();
    await until('the stray slice deleted', () => !api.slices.has(name));
    await until('converged', () => f.converged());
    assert.equal(api.count('deleteSlice'), 4, 'three failures, then the delete that worked');
    assert.equal(f.snapshot().errors, 3);
    assert.deepEqual(
      slicesOf(api, 'node-0').map((s) => s.metadata.name?.startsWith(`00000-${DRIVER_NAME}-node-0-`)),
      [true],
    );
    assert.equal(f.snapshot().slices, api.slices.size);
  });

  it('deletes the slices of a node no longer selected, retrying failed deletes', async () => {
    const api = withNodes(3);
    const f = fleetOn(api);
    await f.start();
    await until('converged', () => f.converged() && api.slices.size === 3);
    api.fail('deleteSlice', 2);
    api.putNode('node-1', {}, {}); // neither KWOK's annotation nor the profile label
    await until('node-1 slices deleted', () => slicesOf(api, 'node-1').length === 0);
    assert.equal(api.count('deleteSlice'), 3);
    await until('converged', () => f.converged());
    assert.equal(f.snapshot().nodes, 2);
    assert.equal(f.snapshot().slices, 2);
  });

  it("never writes a node that is not KWOK's, labelled with a profile or selected: its plugin publishes it", async () => {
    for (const nodeSelector of [undefined, 'pool=x']) {
      const api = new FakeApi();
      api.putNode('kwok', { pool: 'x' }, KWOK);
      api.putNode('real', { pool: 'x', 'fakegpu.dev/profile': 'dgx-b200' });
      const f = testFleet(api, { nodeSelector });
      fleets.push(f);
      await f.start();
      await until('converged', () => f.converged() && api.slices.size === 1);
      await sleep(50);
      assert.equal(slicesOf(api, 'real').length, 0, `selector ${String(nodeSelector)}`);
      assert.equal(f.snapshot().nodes, 1);
    }
  });

  it('relists when its watches expire (410) and publishes what changed in between', async () => {
    const api = withNodes(2);
    const f = fleetOn(api);
    await f.start();
    await until('converged', () => f.converged() && api.slices.size === 2);
    assert.equal(api.count('listNodes'), 1);
    api.expire();
    api.putNode('node-2', {}, KWOK);
    await until('node-2 published after a relist', () => slicesOf(api, 'node-2').length === 1);
    assert.equal(api.count('listNodes'), 2);
    assert.equal(api.count('createSlice'), 3, 'nothing published twice');
    await sleep(50);
    assert.equal(api.openWatches, 2, 'each watch resumed once, none left behind');
  });

  it('backs off a node whose writes fail, and publishes it once the API server recovers', async () => {
    const api = withNodes(2);
    api.fail('createSlice', 5, 503);
    const f = fleetOn(api);
    await f.start();
    await until('converged', () => f.converged() && api.slices.size === 2);
    assert.equal(f.snapshot().errors, 5);
    assert.equal(api.count('createSlice'), 7);
  });

  it('a node waiting out its backoff is not tried again at every event about it', async () => {
    const api = withNodes(1);
    api.fail('createSlice', 1, 503);
    // The first retry waits about half a second.
    const f = fleetOn(api, () => 0.99);
    await f.start();
    await until('the first write failed', () => api.count('createSlice') === 1 && f.snapshot().errors === 1);
    for (let i = 0; i < 5; i++) {
      api.putNode('node-0', { churn: String(i) }, KWOK);
      await sleep(20);
    }
    assert.equal(api.count('createSlice'), 1, 'no write before the backoff is over');
    await until('converged', () => f.converged() && api.slices.size === 1, 5000);
    assert.equal(api.count('createSlice'), 2);
  });

  it('reports a node with an unknown profile once, in an event, and publishes the rest', async () => {
    const api = withNodes(2);
    api.putNode('node-1', { 'fakegpu.dev/profile': 'no-such-preset' }, KWOK);
    const f = fleetOn(api);
    await f.start();
    await until('converged', () => f.converged() && api.events.length === 1);
    api.putNode('node-1', { 'fakegpu.dev/profile': 'no-such-preset', other: 'x' }, KWOK);
    await sleep(50);
    assert.equal(api.events.length, 1);
    assert.match(JSON.stringify(api.events[0]), /"reason":"FakegpuProfileInvalid"/);
    assert.equal(slicesOf(api, 'node-0').length, 1);
    assert.equal(slicesOf(api, 'node-1').length, 0);
  });

  it('takes a node without profile label by its instance type, before the default; an unknown type is an event', async () => {
    const api = new FakeApi();
    api.putNode('p4d', { 'node.kubernetes.io/instance-type': 'p4d.24xlarge' }, KWOK);
    api.putNode(
      'labelled',
      { 'node.kubernetes.io/instance-type': 'p4d.24xlarge', 'fakegpu.dev/profile': 'dgx-b200' },
      KWOK,
    );
    api.putNode('cpu', { 'node.kubernetes.io/instance-type': 'm5.large' }, KWOK);
    api.putNode('plain', {}, KWOK);
    const f = fleetOn(api);
    await f.start();
    await until('converged', () => f.converged() && api.events.length === 1 && api.slices.size === 3);
    const product = (node: string) => slicesOf(api, node)[0]?.spec.devices?.[0]?.attributes?.['productName'];
    assert.deepEqual(product('p4d'), { string: 'NVIDIA A100-SXM4-40GB' });
    assert.deepEqual(product('labelled'), { string: 'NVIDIA B200' });
    assert.deepEqual(product('plain'), { string: 'NVIDIA H100 80GB HBM3' });
    assert.equal(slicesOf(api, 'cpu').length, 0);
    assert.match(
      JSON.stringify(api.events[0]),
      /unknown instance type \\"m5\.large\\"; instance types with a preset: p4d\.24xlarge, /,
    );
  });

  it("gives a publishing burst's memory back once quiet: one memory-reducing collection", async () => {
    const api = withNodes(1200);
    let collected = 0;
    const f = fleetOn(
      api,
      () => 0,
      () => {
        collected++;
      },
    );
    await f.start();
    await until('every node published', () => f.converged() && api.slices.size === 1200);
    assert.equal(collected, 0, 'not while publishing');
    await until('the collection', () => collected === 1, 5000);
    await sleep(2600);
    assert.equal(collected, 1, 'once per burst');
  });
});

describe('the fleet on its first list', () => {
  it('publishes the nodes of each page as it comes once the slices are in, and each node once', async () => {
    const api = withNodes(600);
    let release: () => void = () => undefined;
    api.before('listNodes', () => undefined);
    // The second page of nodes (the list's pages are 500) waits until the test lets it go.
    api.before('listNodes', () => new Promise<void>((r) => (release = r)));
    const f = fleetOn(api);
    const started = f.start();
    await until('the first page published', () => api.slices.size === 500);
    assert.equal(f.converged(), false, 'not converged while nodes are still to be listed');
    assert.equal(api.count('listNodes'), 2);
    release();
    await started;
    await until('converged', () => f.converged() && api.slices.size === 600);
    await sleep(50);
    assert.equal(api.count('createSlice'), 600);
    assert.equal(api.count('replaceSlice'), 0);
  });
});
