import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ResourceClaim } from '../../src/kube/types/claim.js';
import type { ResourceSlice } from '../../src/kube/types/resource.js';
import { GPU_CLIQUE_LABEL, RACK_LABEL } from '../../src/model/compute-domain/resource.js';
import type { ClusterView, NodeView, PodView } from '../../src/model/scorecard/inventory.js';
import { score } from '../../src/model/scorecard/score.js';
import { render } from '../support/render.js';

/** Scorecards of rendered slices (the fleet's and plugin's own) and claims as the scheduler writes them. */
const node = (name: string, labels: Record<string, string> = {}): NodeView => ({
  metadata: { name, labels },
});

let uid = 0;
function claim(results: [driver: string, pool: string, device: string][], domainID?: string): ResourceClaim {
  uid++;
  return {
    metadata: { name: `c${uid}`, namespace: 'default', uid: `uid-${uid}` },
    status: {
      allocation: {
        devices: {
          results: results.map(([driver, pool, device]) => ({ request: 'r', driver, pool, device })),
          ...(domainID
            ? {
                config: [
                  {
                    source: 'FromClaim' as const,
                    opaque: {
                      driver: 'compute-domain.nvidia.com',
                      parameters: { kind: 'ComputeDomainChannelConfig', domainID },
                    },
                  },
                ],
              }
            : {}),
        },
      },
    },
  };
}

const gpus = (pool: string, ...devices: string[]): [string, string, string][] =>
  devices.map((d) => ['gpu.nvidia.com', pool, d]);

function view(o: Partial<ClusterView>): ClusterView {
  return { nodes: [], slices: [], claims: [], pods: [], ...o };
}

describe('the scheduler scorecard', () => {
  it('counts GPUs allocated and free, nodes full, partly used and empty, and the GPUs stranded', () => {
    const v = view({
      nodes: ['a', 'b', 'c'].map((n) => node(n)),
      slices: ['a', 'b', 'c'].flatMap((n) => render('dgx-h100', { node: n }).items),
      claims: [
        claim(gpus('a', 'gpu-0', 'gpu-1', 'gpu-2', 'gpu-3', 'gpu-4', 'gpu-5', 'gpu-6', 'gpu-7')),
        claim(gpus('b', 'gpu-0', 'gpu-1')),
        // Not allocated: counts nowhere.
        { metadata: { name: 'pending', namespace: 'default', uid: 'p' } },
      ],
    });
    const c = score(v).cluster;
    assert.deepEqual(
      [c.nodes, c.gpus, c.allocated, c.free, c.tainted, c.nodesFull, c.nodesPartial, c.nodesEmpty],
      [3, 24, 10, 14, 0, 1, 1, 1],
    );
    assert.equal(c.strandedGpus, 6, "b's six free GPUs");
    assert.equal(c.fragmentation, 0.429, '6 of the 14 free GPUs');
  });

  it('counts the GPUs of the driver it is told is the GPU driver (a plugin or fleet run with --driver-name)', () => {
    const renamed = render('dgx-h100', { node: 'a' }).items.map((s) =>
      s.spec.driver === 'gpu.nvidia.com' ? { ...s, spec: { ...s.spec, driver: 'gpu.example.com' } } : s,
    );
    const claims = [claim([['gpu.example.com', 'a', 'gpu-0']])];
    assert.equal(score(view({ nodes: [node('a')], slices: renamed, claims })).cluster.gpus, 0);
    const c = score(
      view({ nodes: [node('a')], slices: renamed, claims, gpuDriver: 'gpu.example.com' }),
    ).cluster;
    assert.deepEqual([c.gpus, c.allocated], [8, 1]);
  });

  it('under dynamic MIG: a 1g device takes its GPU, and the free slices no free device fits whole are stranded', () => {
    const v = view({
      nodes: [node('a')],
      slices: render('dgx-h100', { node: 'a', dynamicMig: true }).items,
      claims: [claim(gpus('a', 'gpu-0-mig-1g10gb-19-0'))],
    });
    const c = score(v).cluster;
    assert.deepEqual([c.allocated, c.free, c.nodesPartial], [1, 7, 1]);
    // Slice 0 taken: 7 free; the largest device still placeable is a 3g (slices 4-7), so 3 are stranded.
    assert.deepEqual([c.migFreeSlices, c.migStrandedSlices], [7, 3]);
  });

  it('under static MIG: free slices beyond the largest free device are stranded', () => {
    const v = view({
      nodes: [node('a')],
      slices: render('test/fixtures/profiles/dgx-a100-mig.yaml', { node: 'a' }).items,
      claims: [claim(gpus('a', 'gpu-0-mig-1g5gb-19-0', 'gpu-0-mig-1g5gb-19-1', 'gpu-0-mig-1g5gb-19-2'))],
    });
    const c = score(v).cluster;
    assert.equal(c.allocated, 1);
    assert.deepEqual([c.migFreeSlices, c.migStrandedSlices], [4, 3]);
  });

  it('judges GPU+NIC claims by their PCIe root and multi-GPU claims by their NUMA nodes', () => {
    const v = view({
      nodes: [node('a')],
      slices: render('dgx-h100', { node: 'a', nics: true }).items,
      claims: [
        claim([...gpus('a', 'gpu-0'), ['dra.net', 'a', 'pci-0000-18-00-0']]),
        claim([...gpus('a', 'gpu-1'), ['dra.net', 'a', 'pci-0000-9a-00-0']]),
        claim(gpus('a', 'gpu-2', 'gpu-3')),
        claim(gpus('a', 'gpu-5', 'gpu-4')),
        claim(gpus('a', 'gpu-6', 'gpu-7')),
      ],
    });
    const c = score(v).cluster;
    assert.deepEqual([c.gpuNicClaims, c.gpuNicAligned], [2, 1]);
    assert.deepEqual([c.multiGpuClaims, c.multiGpuCrossNuma], [3, 0]);
    const cross = score({ ...v, claims: [claim(gpus('a', 'gpu-3', 'gpu-4'))] }).cluster;
    assert.deepEqual([cross.multiGpuClaims, cross.multiGpuCrossNuma], [1, 1]);
    // A VM's GPUs that say no NUMA node are on none that differ (a G2's L4s, as the scheduler test met).
    const vm = score(
      view({
        nodes: [node('g')],
        slices: render('gcp-g2-standard-48', { node: 'g' }).items,
        claims: [claim(gpus('g', 'gpu-0', 'gpu-1'))],
      }),
    ).cluster;
    assert.deepEqual([vm.multiGpuClaims, vm.multiGpuCrossNuma], [1, 0]);
  });

  it('counts tainted GPUs (from slices and DeviceTaintRules), claims on them, and evicted pods', () => {
    const slices = render('dgx-h100', { node: 'a' }).items;
    const gpu3 = slices.flatMap((s) => s.spec.devices ?? []).find((d) => d.name === 'gpu-3');
    assert.ok(gpu3);
    gpu3.taints = [{ key: 'gpu.nvidia.com/xid', value: '79', effect: 'NoExecute' }];
    const pods: PodView[] = [
      {
        metadata: { name: 'p1', namespace: 'd', uid: '1' },
        spec: { nodeName: 'a' },
        status: { reason: 'Evicted' },
      },
      {
        metadata: { name: 'p2', namespace: 'd', uid: '2' },
        spec: { nodeName: 'a' },
        status: {
          conditions: [{ type: 'DisruptionTarget', status: 'True', reason: 'DeletionByDeviceTaintManager' }],
        },
      },
      { metadata: { name: 'p3', namespace: 'd', uid: '3' }, spec: { nodeName: 'a' }, status: {} },
    ];
    const v = view({
      nodes: [node('a')],
      slices,
      claims: [claim(gpus('a', 'gpu-3')), claim(gpus('a', 'gpu-0'))],
      pods,
      taintRules: [
        {
          spec: {
            deviceSelector: { driver: 'gpu.nvidia.com', pool: 'a', device: 'gpu-5' },
            taint: { key: 'k', effect: 'NoSchedule' },
          },
        },
        { spec: { deviceSelector: { device: 'gpu-6' }, taint: { key: 'k', effect: 'None' } } },
      ],
    });
    const c = score(v).cluster;
    assert.deepEqual(
      [c.tainted, c.allocated, c.free],
      [2, 2, 5],
      'gpu-3 (allocated) and gpu-5 tainted; gpu-6 only informed',
    );
    assert.equal(c.claimsOnTainted, 1);
    assert.equal(c.podsEvicted, 2);
  });

  it('gives each node pool and rack its own figures, the pool label found on the nodes', () => {
    const nodes = [
      node('a', { 'karpenter.sh/nodepool': 'h100', [RACK_LABEL]: 'r0' }),
      node('b', { 'karpenter.sh/nodepool': 'h100', [RACK_LABEL]: 'r1' }),
      node('c', { 'karpenter.sh/nodepool': 'l4', [RACK_LABEL]: 'r1' }),
    ];
    const v = view({
      nodes,
      slices: [
        ...render('dgx-h100', { node: 'a' }).items,
        ...render('dgx-h100', { node: 'b' }).items,
        ...render('gcp-g2-standard-48', { node: 'c' }).items,
      ],
      claims: [claim(gpus('a', 'gpu-0')), claim(gpus('c', 'gpu-0', 'gpu-1', 'gpu-2', 'gpu-3'))],
    });
    const s = score(v);
    assert.equal(s.poolLabel, 'karpenter.sh/nodepool');
    assert.deepEqual(Object.keys(s.pools).sort(), ['h100', 'l4']);
    assert.deepEqual(
      [s.pools['h100']?.gpus, s.pools['h100']?.allocated, s.pools['h100']?.nodesPartial],
      [16, 1, 1],
    );
    assert.deepEqual([s.pools['l4']?.gpus, s.pools['l4']?.nodesFull], [4, 1]);
    assert.deepEqual([s.racks['r1']?.nodes, s.racks['r1']?.allocated, s.racks['r1']?.nodesEmpty], [2, 4, 1]);
    assert.equal(score(v, 'no-such-label').poolLabel, 'no-such-label');
    assert.deepEqual(score(v, 'no-such-label').pools, {});
  });

  it('finds a ComputeDomain whose channels span two cliques', () => {
    const channel = (n: string): ResourceSlice => ({
      apiVersion: 'resource.k8s.io/v1',
      kind: 'ResourceSlice',
      metadata: { name: `${n}-cd` },
      spec: {
        driver: 'compute-domain.nvidia.com',
        nodeName: n,
        pool: { name: n, generation: 1, resourceSliceCount: 1 },
        devices: [{ name: 'channel-0', attributes: { type: { string: 'channel' } } }],
      },
    });
    const v = view({
      nodes: [
        node('a', { [GPU_CLIQUE_LABEL]: 'c.1' }),
        node('b', { [GPU_CLIQUE_LABEL]: 'c.1' }),
        node('c', { [GPU_CLIQUE_LABEL]: 'c.2' }),
      ],
      slices: ['a', 'b', 'c'].map(channel),
      claims: [
        claim([['compute-domain.nvidia.com', 'a', 'channel-0']], 'one'),
        claim([['compute-domain.nvidia.com', 'b', 'channel-0']], 'one'),
        claim([['compute-domain.nvidia.com', 'c', 'channel-0']], 'two'),
        claim([['compute-domain.nvidia.com', 'a', 'channel-0']], 'two'),
      ],
    });
    const c = score(v).cluster;
    assert.deepEqual([c.computeDomains, c.computeDomainsSplit], [2, 1]);
    assert.equal(c.gpus, 0, 'a channel is no GPU');
  });
});
