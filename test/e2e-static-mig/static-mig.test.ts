import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Exports } from '../../src/local-cluster/cluster.js';
import { mustKubectl } from '../support/cluster.js';
import {
  allocatedUuids,
  apply,
  cleanup,
  podClaim,
  podManifest,
  running,
  seen,
  STATIC_MIG_NODE,
  staticMigCluster,
} from '../support/e2e.js';

/** Static MIG, as on a DGX A100 split into 1g.5gb devices before the driver started. */
describe('static MIG on a fake DGX A100 (1g.5gb x7 per GPU)', () => {
  let e: Exports;
  before(async () => {
    e = await staticMigCluster();
  });
  after(() => {
    cleanup(e);
  });

  it('publishes exactly the 56 existing MIG devices and no whole GPU', () => {
    const list = JSON.parse(
      mustKubectl(e, [
        'get',
        'resourceslices',
        `--field-selector=spec.nodeName=${STATIC_MIG_NODE},spec.driver=gpu.nvidia.com`,
        '-o',
        'json',
      ]),
    ) as {
      items: { spec: { devices?: { name: string; attributes?: Record<string, { string?: string }> }[] } }[];
    };
    const devices = list.items.flatMap((s) => s.spec.devices ?? []);
    assert.equal(devices.length, 56);
    assert.ok(
      devices.every((d) => /^gpu-[0-7]-mig-1g5gb-19-[0-6]$/.test(d.name)),
      devices.map((d) => d.name).join(' '),
    );
    assert.ok(
      devices.every(
        (d) => d.attributes?.['type']?.string === 'mig' && d.attributes['uuid']?.string?.startsWith('MIG-'),
      ),
    );
  });

  it('gives a pod one MIG device, which nvidia-smi -L shows under its parent', async () => {
    apply(e, {
      apiVersion: 'resource.k8s.io/v1',
      kind: 'ResourceClaimTemplate',
      metadata: { name: 'one-mig', namespace: 'default' },
      spec: {
        spec: { devices: { requests: [{ name: 'mig', exactly: { deviceClassName: 'mig.nvidia.com' } }] } },
      },
    });
    apply(
      e,
      podManifest(e, {
        name: 'mig-user',
        claims: [{ name: 'gpu', template: 'one-mig' }],
        containers: [{ name: 'main', claims: [{ name: 'gpu' }] }],
      }),
    );
    await running(e, 'mig-user');
    const [uuid] = allocatedUuids(e, podClaim(e, 'mig-user', 'gpu'));
    assert.match(uuid ?? '', /^MIG-/);
    const s = await seen(e, 'mig-user', 'main');
    assert.deepEqual(s.visible, [uuid]);
    const listing = mustKubectl(e, ['exec', 'mig-user', '--', 'nvidia-smi', '-L']);
    assert.match(
      listing,
      new RegExp(
        `^GPU 0: NVIDIA A100-SXM4-40GB \\(UUID: GPU-[0-9a-f-]+\\)\\n  MIG 1g\\.5gb +Device 0: \\(UUID: ${uuid ?? ''}\\)\\n$`,
      ),
    );
  });
});
