import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import type { Exports } from '../../src/local-cluster/cluster.js';
import { join } from 'node:path';
import { REPO_ROOT } from '../../src/process/repo.js';
import { CHANNEL_CLASS, computeDomainSlices, DAEMON_CLASS } from '../../src/model/compute-domain/slice.js';
import type { ResourceSlice } from '../../src/kube/types/resource.js';
import { PRESETS } from '../../src/model/preset/index.js';
import { kubectl, mustKubectl, testCluster } from '../support/cluster.js';
import { everyGate, render } from '../support/render.js';

/** Every preset's slices, plain and dynamic MIG, GPUs and NICs, through the real API server's validation. */
describe('the real kube-apiserver accepts rendered slices', () => {
  let e: Exports;
  before(async () => {
    e = await testCluster();
  });

  PRESETS.forEach((p, i) => {
    for (const [dynamicMig, gates] of [
      [false, false],
      [true, false],
      [false, true],
      [true, true],
    ] as const) {
      it(`${p.name}${dynamicMig ? ' --dynamic-mig' : ''}${gates ? ' with every NVIDIA 0.5 gate that publishes' : ''}`, () => {
        const node = `validate-${i}${dynamicMig ? '-mig' : ''}${gates ? '-gates' : ''}`;
        const list = render(p.name, {
          node,
          dynamicMig,
          nics: true,
          nicNumaAttribute: 'standard',
          ...(gates ? everyGate(dynamicMig) : {}),
        });
        const names = mustKubectl(e, ['create', '-o', 'name', '-f', '-'], JSON.stringify(list))
          .trim()
          .split('\n');
        try {
          assert.equal(names.length, list.items.length);
          const stored = JSON.parse(mustKubectl(e, ['get', '-o', 'json', ...names])) as {
            items?: ResourceSlice[];
          } & ResourceSlice;
          const items = stored.items ?? [stored];
          // The server stores exactly what was sent: no field dropped, defaulted or re-encoded.
          const key = (s: ResourceSlice['spec']): string =>
            s.devices?.[0]?.name ?? s.sharedCounters?.[0]?.name ?? '';
          const order = (a: ResourceSlice['spec'], b: ResourceSlice['spec']): number =>
            key(a).localeCompare(key(b));
          assert.deepEqual(items.map((s) => s.spec).sort(order), list.items.map((s) => s.spec).sort(order));
        } finally {
          mustKubectl(e, ['delete', '--wait=false', ...names]);
        }
      });
    }
  });

  it("accepts the compute-domain driver's slice and NVIDIA's two compute-domain DeviceClasses", () => {
    const [slice] = computeDomainSlices({ nodeName: 'validate-cd' });
    const name = mustKubectl(e, ['create', '-o', 'name', '-f', '-'], JSON.stringify(slice)).trim();
    try {
      const stored = JSON.parse(mustKubectl(e, ['get', '-o', 'json', name])) as ResourceSlice;
      assert.deepEqual(stored.spec, slice?.spec);
    } finally {
      mustKubectl(e, ['delete', '--wait=false', name]);
    }
    // The classes `cluster up --profile` installs, CEL included, checked by the server without keeping them.
    const classes = mustKubectl(e, [
      'apply',
      '--dry-run=server',
      '-o',
      'name',
      '-f',
      join(REPO_ROOT, 'deploy', 'deviceclasses.yaml'),
    ]);
    for (const c of [CHANNEL_CLASS, DAEMON_CLASS]) assert.ok(classes.includes(`/${c}`), classes);
  });

  it('rejects a slice of 65 devices when one is tainted, and takes 64', () => {
    const list = render('aws-p4d.24xlarge', { node: 'validate-taints' });
    const slice = list.items[0];
    assert.ok(slice?.spec.devices);
    const [first] = slice.spec.devices;
    assert.ok(first);
    const devices = (n: number) =>
      Array.from({ length: n }, (_, i) => ({
        ...first,
        name: `gpu-${i}`,
        ...(i === 0
          ? { taints: [{ key: 'gpu.nvidia.com/xid', value: '79', effect: 'NoSchedule' as const }] }
          : {}),
      }));
    slice.spec.devices = devices(65);
    const r = kubectl(e, ['create', '-f', '-'], JSON.stringify(slice));
    assert.notEqual(r.code, 0);
    assert.match(r.err, /Too many: 65: must have at most 64 items/);
    slice.spec.devices = devices(64);
    const name = mustKubectl(e, ['create', '-o', 'name', '-f', '-'], JSON.stringify(slice)).trim();
    mustKubectl(e, ['delete', '--wait=false', name]);
  });

  it('rejects a slice over the API limit (129 devices), so this test can fail', () => {
    const list = render('aws-p4d.24xlarge', { node: 'validate-limit' });
    const slice = list.items[0];
    assert.ok(slice?.spec.devices);
    const [first] = slice.spec.devices;
    assert.ok(first);
    slice.spec.devices = Array.from({ length: 129 }, (_, n) => ({ ...first, name: `gpu-${n}` }));
    const r = kubectl(e, ['create', '-f', '-'], JSON.stringify(slice));
    assert.notEqual(r.code, 0);
    assert.match(r.err, /spec\.devices: Too many: 129: must have at most 128 items/);
  });
});
