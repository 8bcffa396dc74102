import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Exports } from '../../src/local-cluster/cluster.js';
import { REPO_ROOT } from '../../src/process/repo.js';
import { eventually, kubectl, mustKubectl, TEST_NODE, testCluster } from '../support/cluster.js';
import { render } from '../support/render.js';

/**
 * The real scheduler allocating from fakegpu's slices: two nodes with different GPUs, a claim for two
 * GPUs selected by productName, and the allocation must land on the node that has them.
 */
const SECOND_NODE = 'fakegpu-test-node-l4';
const NS = 'default';

interface Claim {
  status?: {
    allocation?: {
      devices: { results: { request: string; driver: string; pool: string; device: string }[] };
      nodeSelector?: { nodeSelectorTerms: { matchFields?: { key: string; values: string[] }[] }[] };
    };
  };
}

function claimAndPod(e: Exports, name: string, product: string): void {
  const claim = {
    apiVersion: 'resource.k8s.io/v1',
    kind: 'ResourceClaim',
    metadata: { name, namespace: NS },
    spec: {
      devices: {
        requests: [
          {
            name: 'gpus',
            exactly: {
              deviceClassName: 'gpu.nvidia.com',
              count: 2,
              selectors: [
                { cel: { expression: `device.attributes['gpu.nvidia.com'].productName == '${product}'` } },
              ],
            },
          },
        ],
      },
    },
  };
  const pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: NS },
    spec: {
      terminationGracePeriodSeconds: 0,
      // The second node has no kubelet; tolerate its not-ready taints so only the devices decide.
      tolerations: [{ operator: 'Exists' }],
      resourceClaims: [{ name: 'gpus', resourceClaimName: name }],
      containers: [
        {
          name: 'main',
          image: e.FAKEGPU_TEST_IMAGE,
          imagePullPolicy: 'Never',
          command: ['sleep', '3600'],
          resources: { claims: [{ name: 'gpus' }] },
        },
      ],
    },
  };
  mustKubectl(
    e,
    ['apply', '-f', '-'],
    JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [claim, pod] }),
  );
}

describe('the real scheduler allocates from rendered slices', () => {
  let e: Exports;
  const created: string[] = [];
  before(async () => {
    e = await testCluster();
    mustKubectl(
      e,
      ['apply', '-f', '-'],
      JSON.stringify({
        apiVersion: 'resource.k8s.io/v1',
        kind: 'DeviceClass',
        metadata: { name: 'gpu.nvidia.com' },
        spec: {
          selectors: [
            {
              cel: {
                expression:
                  "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'",
              },
            },
          ],
        },
      }),
    );
    mustKubectl(
      e,
      ['apply', '-f', '-'],
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Node',
        metadata: { name: SECOND_NODE, labels: { 'kubernetes.io/hostname': SECOND_NODE } },
      }),
    );
    // No kubelet reports for it, so give it the room a node reports, or nothing fits there.
    const room = { cpu: '48', memory: '192Gi', pods: '110' };
    mustKubectl(e, [
      'patch',
      'node',
      SECOND_NODE,
      '--subresource=status',
      '--type=merge',
      '-p',
      JSON.stringify({ status: { capacity: room, allocatable: room } }),
    ]);
    for (const [profile, node] of [
      ['dgx-h100', TEST_NODE],
      ['gcp-g2-standard-48', SECOND_NODE],
    ] as const) {
      const out = mustKubectl(
        e,
        ['create', '-o', 'name', '-f', '-'],
        JSON.stringify(render(profile, { node })),
      );
      created.push(...out.trim().split('\n'));
    }
  });
  after(() => {
    kubectl(e, [
      'delete',
      'pod',
      '--force',
      '--grace-period=0',
      '--ignore-not-found',
      'want-h100',
      'want-l4',
    ]);
    kubectl(e, ['delete', 'resourceclaim', '--ignore-not-found', 'want-h100', 'want-l4']);
    kubectl(e, ['delete', '--ignore-not-found', ...created]);
    kubectl(e, ['delete', 'node', '--ignore-not-found', SECOND_NODE]);
  });

  for (const [name, product, node, device] of [
    ['want-h100', 'NVIDIA H100 80GB HBM3', TEST_NODE, /^gpu-[0-7]$/],
    ['want-l4', 'NVIDIA L4', SECOND_NODE, /^gpu-[0-3]$/],
  ] as const) {
    it(`${product}: two GPUs from ${node}`, async () => {
      claimAndPod(e, name, product);
      const claim = await eventually(`claim ${name} allocated`, () => {
        const c = JSON.parse(mustKubectl(e, ['get', 'resourceclaim', name, '-n', NS, '-o', 'json'])) as Claim;
        return c.status?.allocation ? c : undefined;
      });
      const results = claim.status?.allocation?.devices.results ?? [];
      assert.equal(results.length, 2);
      for (const r of results) {
        assert.equal(r.driver, 'gpu.nvidia.com');
        assert.equal(r.pool, node);
        assert.match(r.device, device);
      }
      assert.notEqual(results[0]?.device, results[1]?.device);
      const fields = claim.status?.allocation?.nodeSelector?.nodeSelectorTerms[0]?.matchFields?.[0];
      assert.deepEqual(fields, { key: 'metadata.name', operator: 'In', values: [node] });
      assert.equal(
        await eventually(
          'pod bound',
          () => kubectl(e, ['get', 'pod', name, '-o', 'jsonpath={.spec.nodeName}']).out || undefined,
        ),
        node,
      );
    });
  }

  it('fakegpu report counts what the API objects say: GPUs, allocated, stranded, NUMA', () => {
    // Computed here the plain way, from the lists, against the scorecard's one function in the CLI.
    interface Dev {
      name: string;
      attributes?: Record<string, { string?: string; int?: number }>;
    }
    const slices = JSON.parse(mustKubectl(e, ['get', 'resourceslices', '-o', 'json'])) as {
      items: { spec: { driver: string; pool: { name: string }; devices?: Dev[] } }[];
    };
    const gpusOf = new Map<string, Dev[]>();
    for (const sl of slices.items)
      if (sl.spec.driver === 'gpu.nvidia.com')
        gpusOf.set(sl.spec.pool.name, [
          ...(gpusOf.get(sl.spec.pool.name) ?? []),
          ...(sl.spec.devices ?? []).filter((d) => d.attributes?.['type']?.string === 'gpu'),
        ]);
    const claims = JSON.parse(mustKubectl(e, ['get', 'resourceclaims', '-A', '-o', 'json'])) as {
      items: Claim[];
    };
    const held = claims.items.map((c) =>
      (c.status?.allocation?.devices.results ?? []).filter((r) => r.driver === 'gpu.nvidia.com'),
    );
    const heldOn = (pool: string): Set<string> =>
      new Set(
        held
          .flat()
          .filter((r) => r.pool === pool)
          .map((r) => r.device),
      );
    const pools = [...gpusOf.keys()];
    const gpus = pools.reduce((n, p) => n + (gpusOf.get(p)?.length ?? 0), 0);
    const allocated = pools.reduce((n, p) => n + heldOn(p).size, 0);
    const partial = pools.filter((p) => heldOn(p).size > 0 && heldOn(p).size < (gpusOf.get(p)?.length ?? 0));
    const numa = (pool: string, device: string): number | undefined =>
      gpusOf.get(pool)?.find((d) => d.name === device)?.attributes?.['resource.kubernetes.io/numaNode']?.int;
    const multi = held.filter((h) => h.length > 1);
    const cross = multi.filter((h) => new Set(h.map((r) => numa(r.pool, r.device) ?? -1)).size > 1);
    const r = spawnSync(process.execPath, [join(REPO_ROOT, 'bin', 'fakegpu.js'), 'report', '-o', 'json'], {
      env: { ...process.env, KUBECONFIG: e.KUBECONFIG },
      encoding: 'utf8',
    });
    assert.equal(r.status, 0, r.stderr);
    const c = (JSON.parse(r.stdout) as { cluster: Record<string, number> }).cluster;
    assert.ok(allocated >= 4, `the two claims above hold four GPUs (${allocated})`);
    assert.deepEqual(
      [c['nodes'], c['gpus'], c['allocated'], c['free'], c['nodesPartial'], c['strandedGpus']],
      [pools.length, gpus, allocated, gpus - allocated, partial.length, gpus - allocated],
    );
    assert.deepEqual([c['multiGpuClaims'], c['multiGpuCrossNuma']], [multi.length, cross.length]);
  });
});
