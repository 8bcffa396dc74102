import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import { withoutPartitions } from '../../src/model/device/allocatable.js';
import { DEFAULT_RELEASE } from '../../src/model/device/release.js';
import { Fleet } from '../../src/fleet/fleet.js';
import { KWOK_ANNOTATION } from '../../src/kube/kwok.js';
import {
  droppedFields,
  gateMessage,
  probeGates,
  probeSlices,
  withoutFields,
} from '../../src/kube/publish/gates.js';
import { modelNode } from '../../src/model/render.js';
import { resolveProfile } from '../../src/process/profile-file.js';
import { DRIVER_NAME } from '../../src/model/slice/build.js';
import { FakeApi } from '../support/fake-api.js';
import { servedDevices, testFleet } from '../support/fleet.js';
import { until } from '../support/http.js';
import { render, RENDER_OPTIONS } from '../support/render.js';
import { renderSlices } from '../../src/model/render.js';
import { gatesWith } from '../../src/model/feature-gates/gates.js';

/**
 * An API server whose DRA gates are off drops their fields without an error (partitionable devices on
 * 1.34/1.35 managed clusters, device taints before 1.36): fakegpu learns that from a dry run and publishes
 * what the server keeps, with one line saying why, instead of rewriting slices that never stick.
 */
describe('fields an API server drops while their gate is off', () => {
  const dynamic = render('dgx-h100', { dynamicMig: true }).items;

  it('probes counters, counter consumption and taints, and names what a server dropped', () => {
    const probes = probeSlices(dynamic);
    assert.equal(probes.length, 3);
    assert.ok(probes[0]?.spec.sharedCounters?.length);
    assert.ok(probes[1]?.spec.devices?.some((d) => d.consumesCounters));
    assert.deepEqual(probes[2]?.spec.devices?.[0]?.taints, [
      { key: 'fakegpu.dev/probe', value: 'gate', effect: 'None' },
    ]);
    const off = new Set(['sharedCounters', 'consumesCounters'] as const);
    assert.deepEqual(
      probes.map((p) => droppedFields(p, withoutFields([p], off)[0] ?? p)),
      [['sharedCounters'], ['consumesCounters'], []],
    );
    assert.deepEqual(
      probes.map((p) => droppedFields(p, p)),
      [[], [], []],
    );
    // A plain node has nothing to probe but the taint.
    assert.equal(probeSlices(render('dgx-h100').items).length, 1);
  });

  it('says in one line which gate is off and what fakegpu does instead', () => {
    assert.equal(
      gateMessage(['taints'], '1.35.4'),
      'Kubernetes 1.35.4: device taints need DRADeviceTaints, which is off on this API server (it dropped taints from a dry run): GPU failures are logged and counted in metrics but not published as taints',
    );
    assert.match(
      gateMessage(['sharedCounters', 'consumesCounters'], '1.34.4'),
      /^Kubernetes 1\.34\.4: dynamic MIG needs DRAPartitionableDevices, which is off on this API server .*: publishing whole GPUs and static MIG devices only; turn the gate on/,
    );
  });

  it('without counters, a dynamic-MIG machine is its whole GPUs: no partitions, nothing consumed', () => {
    const { devices } = modelNode(resolveProfile('dgx-h100'), {
      nodeName: 'n',
      dynamicMig: true,
      driverName: DRIVER_NAME,
      kubernetesVersion: { major: 1, minor: 37, patch: 0 },
      release: DEFAULT_RELEASE,
    });
    const plain = withoutPartitions(devices);
    assert.equal(plain.length, 8);
    for (const g of plain) {
      assert.equal(g.counterSet, null);
      assert.deepEqual(
        g.devices.map((d) => [d.name.startsWith('gpu-'), d.consumesCounters]),
        [[true, undefined]],
      );
    }
  });

  it('a dry run through the API teaches the dropped fields; one the server rejects teaches nothing', async () => {
    const api = new FakeApi();
    api.drops = new Set(['taints']);
    assert.deepEqual([...(await probeGates(api, dynamic))], ['taints']);
    assert.equal(api.count('dryRunSlice'), 3);
    api.fail('dryRunSlice', 3, 422);
    assert.deepEqual([...(await probeGates(api, dynamic))], []);
  });

  it('a server without DRAConsumableCapacity drops allowMultipleAllocations and request policies: probed, said, left out', async () => {
    const shared = renderSlices(resolveProfile('dgx-h100'), {
      ...RENDER_OPTIONS,
      gates: gatesWith({ ConsumableShares: true }),
      consumableShares: { shares: 4n },
    }).items;
    const api = new FakeApi();
    api.drops = new Set(['allowMultipleAllocations']);
    assert.deepEqual([...(await probeGates(api, shared))], ['allowMultipleAllocations']);
    const kept = withoutFields(shared, new Set(['allowMultipleAllocations'] as const));
    const [d] = kept[0]?.spec.devices ?? [];
    assert.deepEqual(
      [d?.allowMultipleAllocations, d?.capacity],
      [undefined, { memory: { value: '81559Mi' }, shares: { value: '4' } }],
    );
    assert.match(
      gateMessage(['allowMultipleAllocations'], '1.34.4'),
      /^Kubernetes 1\.34\.4: consumable shares need DRAConsumableCapacity, which is off on this API server \(it dropped allowMultipleAllocations from a dry run\): each device goes to one claim at a time/,
    );
    api.drops = new Set();
    assert.deepEqual([...(await probeGates(api, shared))], []);
  });
});

describe('the fleet on a server without partitionable devices', () => {
  let fleets: Fleet[] = [];
  afterEach(() => {
    for (const f of fleets) f.stop();
    fleets = [];
  });

  const fleet = (api: FakeApi): Fleet => {
    const f = testFleet(api, { dynamicMig: true });
    fleets.push(f);
    return f;
  };

  for (const drops of [false, true]) {
    it(
      drops ? 'publishes whole GPUs when counters are dropped' : 'publishes dynamic MIG when they are kept',
      async () => {
        const api = new FakeApi();
        if (drops) api.drops = new Set(['sharedCounters', 'consumesCounters']);
        api.putNode('node-0', {}, { [KWOK_ANNOTATION]: 'fake' });
        const f = fleet(api);
        await f.start();
        await until('converged', () => f.converged() && api.slices.size > 0);
        const slices = [...api.slices.values()];
        const devices = slices.flatMap((s) => s.spec.devices ?? []);
        if (drops) {
          assert.equal(slices.length, 1);
          assert.deepEqual(
            devices.map((d) => d.name),
            ['gpu-0', 'gpu-1', 'gpu-2', 'gpu-3', 'gpu-4', 'gpu-5', 'gpu-6', 'gpu-7'],
          );
          assert.ok(devices.every((d) => d.consumesCounters === undefined));
        } else {
          assert.equal(slices.length, 9);
          assert.ok(slices.some((s) => s.spec.sharedCounters));
        }
      },
    );
  }
});

describe('the fleet with consumable shares', () => {
  let fleets: Fleet[] = [];
  afterEach(() => {
    for (const f of fleets) f.stop();
    fleets = [];
  });

  for (const drops of [false, true]) {
    it(
      drops
        ? 'publishes devices unshared where the server drops allowMultipleAllocations'
        : "publishes every KWOK node's GPUs shared, as the plugin does",
      async () => {
        const devices = await servedDevices(
          fleets,
          { gates: gatesWith({ ConsumableShares: true }), consumableShares: 'memory' },
          drops ? ['allowMultipleAllocations'] : [],
        );
        assert.equal(devices.length, 8);
        for (const d of devices)
          if (drops)
            assert.deepEqual(
              [d.allowMultipleAllocations, d.capacity],
              [undefined, { memory: { value: '81559Mi' } }],
            );
          else assert.equal(d.capacity?.['memory']?.requestPolicy?.default, '81559Mi');
      },
    );
  }
});
