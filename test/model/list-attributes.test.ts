import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import { Fleet } from '../../src/fleet/fleet.js';
import { probeGates, probeSlices } from '../../src/kube/publish/gates.js';
import { gatesWith } from '../../src/model/feature-gates/gates.js';
import { FakeApi } from '../support/fake-api.js';
import { servedDevices } from '../support/fleet.js';
import { devicesOf, render } from '../support/render.js';

const NUMA = 'resource.kubernetes.io/numaNode';
const lists = { DRAListTypeAttributes: true };

/** NVIDIA v0.5.0's DRAListTypeAttributes: numaNode as `ints`, where Kubernetes has list attributes. */
describe('DRAListTypeAttributes', () => {
  it('publishes numaNode as a one-element list on GPUs and every MIG partition', () => {
    for (const dynamicMig of [false, true]) {
      const devices = devicesOf(render('dgx-h100', { dynamicMig, gates: lists }));
      assert.ok(devices.length >= 8);
      for (const d of devices) assert.deepEqual(Object.keys(d.attributes?.[NUMA] ?? {}), ['ints']);
      const plain = devicesOf(render('dgx-h100', { dynamicMig }));
      assert.deepEqual(
        devices.map((d) => d.attributes?.[NUMA]),
        plain.map((d) => {
          const a = d.attributes?.[NUMA];
          return a && 'int' in a ? { ints: [a.int] } : a;
        }),
        'the same node as the scalar, as a list',
      );
    }
    // dgx-h100: GPUs 0-3 on NUMA node 0, 4-7 on node 1.
    assert.deepEqual(devicesOf(render('dgx-h100', { gates: lists }))[7]?.attributes?.[NUMA], { ints: [1] });
  });

  it('is refused for a Kubernetes release without list attributes', () => {
    assert.throws(() => render('dgx-h100', { gates: lists, kubernetesVersion: '1.35.4' }), {
      message:
        "--feature-gates: DRAListTypeAttributes=true: Kubernetes 1.35.4 has no list attributes; they came in 1.36 (KEP-5491, behind the API server's and scheduler's gate DRAListTypeAttributes)",
    });
    assert.ok(render('dgx-h100', { gates: lists, kubernetesVersion: '1.36.0' }).items.length > 0);
  });

  it('is probed apart from the other gated fields; a server that refuses or drops a list is learnt', async () => {
    const slices = render('dgx-h100', { gates: lists }).items;
    const probes = probeSlices(slices);
    assert.equal(probes.length, 2, 'the taint probe and the list probe');
    assert.deepEqual(
      probes[0]?.spec.devices?.[0]?.attributes?.[NUMA],
      { int: 0 },
      'the taint probe has no list',
    );
    const api = new FakeApi();
    assert.deepEqual([...(await probeGates(api, slices))], []);
    api.drops = new Set(['listAttributes']);
    assert.deepEqual([...(await probeGates(api, slices))], ['listAttributes']);
    api.drops = new Set();
    api.fail('dryRunSlice', 2, 422);
    assert.deepEqual([...(await probeGates(api, slices))], ['listAttributes']);
  });
});

describe('the fleet with DRAListTypeAttributes', () => {
  let fleets: Fleet[] = [];
  afterEach(() => {
    for (const f of fleets) f.stop();
    fleets = [];
  });

  for (const drops of [false, true]) {
    it(
      drops
        ? 'publishes scalars where the server drops lists'
        : 'publishes lists where the server keeps them',
      async () => {
        const numa = (
          await servedDevices(fleets, { gates: gatesWith(lists) }, drops ? ['listAttributes'] : [])
        ).map((d) => d.attributes?.[NUMA]);
        assert.equal(numa.length, 8);
        for (const a of numa) assert.deepEqual(Object.keys(a ?? {}), [drops ? 'int' : 'ints']);
      },
    );
  }
});
