import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { cacheRoot } from '../../src/local-cluster/build.js';
import { clusterDown, PROFILE_LABEL, REPO_ROOT, type Exports } from '../../src/local-cluster/cluster.js';
import type { List, ResourceSlice } from '../../src/kube/types/resource.js';
import { eventually, mustKubectl, sharedCluster } from '../support/cluster.js';

/**
 * Capture a cluster and replay it: KWOK nodes of three machines on one cluster, `fakegpu capture
 * cluster` through its kubeconfig, then a second cluster directory started with `--kwok-pools` of what
 * was written must publish the same slices for the same nodes, slice names and generations aside.
 */

const CAPTURE_DIR =
  process.env['FAKEGPU_E2E_CAPTURE_CLUSTER_DIR'] ?? join(cacheRoot(), 'e2e-capture-cluster');
const REPLAY_DIR = process.env['FAKEGPU_E2E_REPLAY_CLUSTER_DIR'] ?? join(cacheRoot(), 'e2e-replay-cluster');
const NODES = 12;
const quiet = (): void => undefined;

/** Each node's slices, comparable across clusters: what the scheduler reads, in a stable order. */
function slicesByNode(e: Exports): Map<string, unknown[]> {
  const list = JSON.parse(mustKubectl(e, ['get', 'resourceslices', '-o', 'json'])) as List<ResourceSlice>;
  const out = new Map<string, unknown[]>();
  for (const s of list.items) {
    const node = s.spec.nodeName;
    const { pool, ...spec } = s.spec;
    out.set(node, [
      ...(out.get(node) ?? []),
      { ...spec, pool: { name: pool.name, slices: pool.resourceSliceCount } },
    ]);
  }
  for (const v of out.values()) v.sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
  return out;
}

function product(slices: unknown[] | undefined): string | undefined {
  const s = slices?.[0] as ResourceSlice['spec'] | undefined;
  const a = s?.devices?.[0]?.attributes?.['productName'];
  return a && 'string' in a ? a.string : undefined;
}

describe('capture cluster, then cluster up --kwok-pools in a second directory', () => {
  after(async () => {
    await clusterDown({ dir: CAPTURE_DIR, purge: false, log: quiet });
    await clusterDown({ dir: REPLAY_DIR, purge: false, log: quiet });
  });

  it('publishes the same slices for the same nodes, with their pool labels and taints', async () => {
    const a = await sharedCluster({ dir: CAPTURE_DIR, nodeName: 'fakegpu-capture-node', kwokNodes: NODES });
    const node = (i: number): string => `kwok-gpu-${i}`;
    for (let i = 0; i < NODES; i++) {
      if (i < 4) {
        mustKubectl(a, ['label', 'node', node(i), 'karpenter.sh/nodepool=h100', '--overwrite']);
        mustKubectl(a, ['taint', 'node', node(i), 'nvidia.com/gpu=present:NoSchedule', '--overwrite']);
      } else {
        const preset = i < 8 ? 'dgx-a100' : 'aws-g4dn.xlarge';
        mustKubectl(a, ['label', 'node', node(i), `${PROFILE_LABEL}=${preset}`, '--overwrite']);
      }
    }
    const want = (i: number): string =>
      i < 4 ? 'NVIDIA H100 80GB HBM3' : i < 8 ? 'NVIDIA A100-SXM4-40GB' : 'Tesla T4';
    const captured = await eventually(
      'the fleet republishes the relabelled nodes',
      () => {
        const s = slicesByNode(a);
        return Array.from({ length: NODES }, (_, i) => product(s.get(node(i))) === want(i)).every(Boolean)
          ? s
          : undefined;
      },
      120_000,
    );
    const out = mkdtempSync(join(tmpdir(), 'capture-cluster-'));
    const r = spawnSync(
      process.execPath,
      [
        join(REPO_ROOT, 'bin', 'fakegpu.js'),
        'capture',
        'cluster',
        '--kubeconfig',
        a.KUBECONFIG,
        '--output-dir',
        out,
      ],
      { encoding: 'utf8', timeout: 120_000 },
    );
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /^h100 +4 +8x H100-SXM5-80GB +no$/m);
    assert.match(r.stdout, /^dgx-a100 +4 +8x A100-SXM4-40GB +no$/m);
    assert.match(r.stdout, /^aws-g4dn\.xlarge +4 +1x T4 +no$/m);
    await clusterDown({ dir: CAPTURE_DIR, purge: false, log: quiet });

    const b = await sharedCluster({
      dir: REPLAY_DIR,
      nodeName: 'fakegpu-replay-node',
      kwokNodes: NODES,
      kwokPools: join(out, 'pools.yaml'),
    });
    const replayed = await eventually(
      'every replayed node published',
      () => {
        const s = slicesByNode(b);
        return Array.from({ length: NODES }, (_, i) => s.has(node(i))).every(Boolean) ? s : undefined;
      },
      120_000,
    );
    for (let i = 0; i < NODES; i++)
      assert.deepEqual(replayed.get(node(i)), captured.get(node(i)), `${node(i)}: slices as captured`);
    const h = JSON.parse(mustKubectl(b, ['get', 'node', node(0), '-o', 'json'])) as {
      metadata: { labels: Record<string, string> };
      spec: { taints: { key: string; value?: string; effect: string }[] };
    };
    assert.equal(h.metadata.labels['karpenter.sh/nodepool'], 'h100');
    assert.equal(
      h.metadata.labels[PROFILE_LABEL],
      undefined,
      'the pool, not a profile label, names the machine',
    );
    assert.ok(
      h.spec.taints.some(
        (t) => t.key === 'nvidia.com/gpu' && t.value === 'present' && t.effect === 'NoSchedule',
      ),
    );
    assert.equal(h.spec.taints.filter((t) => t.key === 'kwok.x-k8s.io/node').length, 1);
  });
});
