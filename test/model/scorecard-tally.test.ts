import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ResourceClaim } from '../../src/kube/types/claim.js';
import { DRANET } from '../../src/model/nic/attributes.js';
import type { ClusterView } from '../../src/model/scorecard/inventory.js';
import { score } from '../../src/model/scorecard/score.js';
import { ScoreTally } from '../../src/model/scorecard/tally.js';
import { render } from '../support/render.js';

/** The scorecard folded as it is read (issue 50): node by node, in steps, in any order of slices. */
let uid = 0;
function claim(results: [driver: string, pool: string, device: string][]): ResourceClaim {
  uid++;
  return {
    metadata: { name: `c${uid}`, namespace: 'default', uid: `u${uid}` },
    status: {
      allocation: {
        devices: {
          results: results.map(([driver, pool, device]) => ({ request: 'r', driver, pool, device })),
        },
      },
    },
  };
}

const nodes = ['a', 'b', 'c'];
const view: ClusterView = {
  nodes: nodes.map((name, i) => ({ metadata: { name, labels: { 'fakegpu.dev/pool': `p${i % 2}` } } })),
  slices: nodes.flatMap((node) => render('dgx-h100', { node, nics: true, dynamicMig: node === 'c' }).items),
  claims: [
    claim([['gpu.nvidia.com', 'a', 'gpu-0']]),
    // GPU and NIC together, and a claim whose devices are on two nodes' pools.
    claim([
      ['gpu.nvidia.com', 'b', 'gpu-1'],
      [DRANET, 'b', 'pci-0000-18-00-0'],
    ]),
    claim([
      ['gpu.nvidia.com', 'a', 'gpu-3'],
      ['gpu.nvidia.com', 'b', 'gpu-4'],
    ]),
    claim([['gpu.nvidia.com', 'c', 'gpu-2-mig-1g10gb-19-0']]),
    // Names a device no slice has: counted on what it does hold.
    claim([
      ['gpu.nvidia.com', 'c', 'gpu-5'],
      ['gpu.nvidia.com', 'c', 'no-such-device'],
    ]),
  ],
  pods: [],
};

describe('the scorecard folded as it is read', () => {
  it('gives what the whole gives, node by node with each closed as it is read, slices in reverse', () => {
    const want = score(view);
    assert.ok(
      want.cluster.allocated >= 5 && want.cluster.multiGpuClaims >= 1 && want.cluster.migFreeSlices > 0,
    );
    const t = new ScoreTally();
    for (const c of view.claims) t.addClaim(c);
    for (const node of nodes) {
      t.addNode(view.nodes.find((n) => n.metadata.name === node) ?? { metadata: { name: node } });
      for (const s of [...view.slices].reverse()) if (s.spec.nodeName === node) t.addSlice(s);
      const gpus = t.closeNode(node);
      assert.equal(gpus.size, 8, node);
    }
    assert.deepEqual(t.finish(), want);
  });

  it('finishes in steps as it does at once', () => {
    const t = new ScoreTally();
    for (const c of view.claims) t.addClaim(c);
    for (const n of view.nodes) t.addNode(n);
    for (const s of view.slices) t.addSlice(s);
    const steps = t.finishing(undefined, 1);
    let n = 0;
    let r = steps.next();
    for (; !r.done; r = steps.next()) n++;
    assert.ok(n >= 3, `${n} steps`);
    assert.deepEqual(r.value, score(view));
  });

  it('refuses a claim after devices, which it could not tell were held', () => {
    const t = new ScoreTally();
    const first = view.slices[0];
    assert.ok(first);
    t.addSlice(first);
    assert.throws(() => {
      t.addClaim(claim([['gpu.nvidia.com', 'a', 'gpu-0']]));
    }, /claim after devices/);
  });

  it("shares one machine's GPUs between the nodes no claim or rule touches, each node's sums its own", () => {
    // One device list for every node, as the fleet hands it: the GPUs are worked out once.
    const gpuSlice = render('dgx-h100', { node: 'm' }).items.find((s) => s.spec.driver === 'gpu.nvidia.com');
    assert.ok(gpuSlice);
    const devices = gpuSlice.spec.devices ?? [];
    const t = new ScoreTally();
    t.addClaim(claim([['gpu.nvidia.com', 'y', 'gpu-2']]));
    const closed = new Map<string, ReadonlyMap<string, unknown>>();
    for (const node of ['x', 'y', 'z', 'v', 'w']) {
      t.addNode({ metadata: { name: node, labels: { 'fakegpu.dev/pool': node === 'w' ? 'q' : 'p' } } });
      t.addDevices('gpu.nvidia.com', node, node, devices);
      // A second pool of w's GPUs (the same devices): folded with the first, one of them claimed there.
      if (node === 'w') t.addDevices('gpu.nvidia.com', 'w-extra', node, devices);
      closed.set(node, t.closeNode(node));
    }
    // x is the first to bring the list, folded as any node; z and v, after it, share their GPUs.
    assert.equal(closed.get('z'), closed.get('v'), 'z and v share their GPUs');
    assert.deepEqual(closed.get('x'), closed.get('z'));
    assert.notEqual(closed.get('z'), closed.get('y'), "y's claim makes its own");
    assert.equal(closed.get('w')?.size, 8, "w's two pools are one node's 8 GPUs");
    // An evicted pod on z, after it was closed: z's sums copied, v's (the same machine's) untouched.
    t.addPod({
      metadata: { name: 'e', namespace: 'd', uid: 'e' },
      spec: { nodeName: 'z' },
      status: { reason: 'Evicted' },
    });
    const s = t.finish();
    assert.equal(s.cluster.gpus, 40);
    assert.equal(s.cluster.allocated, 1);
    assert.equal(s.cluster.podsEvicted, 1);
    const [p, q] = [s.pools['p'], s.pools['q']];
    assert.ok(p && q);
    assert.equal(p.podsEvicted, 1);
    assert.equal(q.podsEvicted, 0);
    assert.equal(p.nodesPartial, 1, 'y, with one GPU allocated');
    assert.equal(p.nodesEmpty, 3, 'x, z and v');
    assert.equal(q.gpus, 8);
  });
});
