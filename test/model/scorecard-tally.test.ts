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
});
