import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Exports } from '../../src/local-cluster/cluster.js';
import { eventually, kubectl, mustKubectl } from '../support/cluster.js';
import { dashboardPanels, forAllNodes, TestPrometheus } from '../support/prometheus.js';
import {
  allocatedUuids,
  apply,
  cleanup,
  migCluster,
  podClaim,
  podManifest,
  running,
  seen,
} from '../support/e2e.js';

/**
 * Dynamic MIG on a fake DGX H100: the real scheduler picks partitions through the shared counters, the
 * plugin creates them in the mock NVML at prepare and destroys them at unprepare.
 */
const migRequest = (name: string, profile: string, count: number): unknown => ({
  name,
  exactly: {
    deviceClassName: 'mig.nvidia.com',
    count,
    selectors: [{ cel: { expression: `device.attributes['gpu.nvidia.com'].profile == '${profile}'` } }],
  },
});

describe('dynamic MIG on a fake DGX H100 node', () => {
  let e: Exports;
  let prometheus: TestPrometheus | null = null;
  before(async () => {
    e = await migCluster();
  });
  after(() => {
    prometheus?.stop();
    cleanup(e);
  });

  it('gives a pod three 1g.10gb and one 3g.40gb created on demand; a full-GPU claim waits until they are freed', async () => {
    apply(e, {
      apiVersion: 'resource.k8s.io/v1',
      kind: 'ResourceClaimTemplate',
      metadata: { name: 'mixed-mig', namespace: 'default' },
      spec: {
        spec: { devices: { requests: [migRequest('small', '1g.10gb', 3), migRequest('big', '3g.40gb', 1)] } },
      },
    });
    apply(
      e,
      podManifest(e, {
        name: 'mig-pod',
        claims: [{ name: 'gpu', template: 'mixed-mig' }],
        containers: [{ name: 'main', claims: [{ name: 'gpu' }] }],
      }),
    );
    await running(e, 'mig-pod');
    const uuids = allocatedUuids(e, podClaim(e, 'mig-pod', 'gpu'));
    assert.equal(uuids.length, 4);
    const s = await seen(e, 'mig-pod', 'main');
    assert.equal(s.visible.length, 4);
    assert.ok(
      s.visible.every((u) => u.startsWith('MIG-')),
      s.visible.join(),
    );
    assert.deepEqual([...s.listed.filter((u) => u.startsWith('MIG-'))].sort(), [...s.visible].sort());
    const smi = mustKubectl(e, ['exec', 'mig-pod', '--', 'nvidia-smi', '-L']);
    assert.equal(smi.match(/MIG 1g\.10gb/g)?.length, 3, smi);
    assert.equal(smi.match(/MIG 3g\.40gb/g)?.length, 1, smi);
    // The chart's dashboard's MIG panel, from a real Prometheus scraping the plugin: the pod's instances.
    const p8s = (prometheus = await TestPrometheus.create(() => undefined));
    p8s.start({ plugin: new URL(e.FAKEGPU_DCGM_URL ?? '').host });
    const mig = dashboardPanels().find((x) => x.targets.some((t) => t.expr.includes('GPU_I_PROFILE')));
    assert.ok(mig);
    const rows = await p8s.until(`series for the dashboard's panel "${mig.title}"`, async () => {
      const r = await p8s.query(forAllNodes(mig.targets[0]?.expr ?? ''));
      return r.length === 2 ? r : undefined;
    });
    assert.deepEqual(rows.map((r) => [r.metric['GPU_I_PROFILE'], r.value[1]]).sort(), [
      ['1g.10gb', '3'],
      ['3g.40gb', '1'],
    ]);

    // Eight whole-GPU partitions cannot fit while the first pod holds slices of one GPU.
    apply(e, {
      apiVersion: 'resource.k8s.io/v1',
      kind: 'ResourceClaim',
      metadata: { name: 'all-7g', namespace: 'default' },
      spec: { devices: { requests: [migRequest('all', '7g.80gb', 8)] } },
    });
    apply(
      e,
      podManifest(e, {
        name: 'waiting',
        claims: [{ name: 'gpu', claim: 'all-7g' }],
        containers: [{ name: 'main', claims: [{ name: 'gpu' }] }],
      }),
    );
    const reason = await eventually('a FailedScheduling event', () => {
      const out = kubectl(e, [
        'get',
        'events',
        '--field-selector',
        'involvedObject.name=waiting,reason=FailedScheduling',
        '-o',
        'jsonpath={.items[*].message}',
      ]).out;
      return out ? out : undefined;
    });
    assert.match(reason, /cannot allocate all claims/);
    assert.equal(mustKubectl(e, ['get', 'pod', 'waiting', '-o', 'jsonpath={.status.phase}']), 'Pending');

    mustKubectl(e, ['delete', 'pod', 'mig-pod', '--wait=true', '--timeout=120s']);
    await running(e, 'waiting', 180_000);
    const all = await seen(e, 'waiting', 'main');
    assert.equal(all.visible.length, 8);
    const listing = mustKubectl(e, ['exec', 'waiting', '--', 'nvidia-smi', '-L']);
    assert.equal(listing.match(/^GPU \d: NVIDIA H100 80GB HBM3/gm)?.length, 8, listing);
    assert.equal(listing.match(/MIG 7g\.80gb/g)?.length, 8, listing);
  });
});
