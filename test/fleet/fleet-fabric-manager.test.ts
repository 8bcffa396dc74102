import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import { Machines } from '../../src/fleet/machines.js';
import type { ResourceSlice } from '../../src/kube/types/resource.js';
import { DEFAULT_RELEASE } from '../../src/model/device/release.js';
import { gatesWith } from '../../src/model/feature-gates/gates.js';

/** KWOK nodes publish Fabric Manager's attributes as a plugin node of the same machine does. */
describe('fleet: FabricManagerPartitioning', () => {
  it("a KWOK dgx-h100 node's GPUs carry gpuModuleID and partition<N>", () => {
    const m = new Machines({
      profileLabel: 'fakegpu.dev/profile',
      dynamicMig: false,
      driverName: 'gpu.nvidia.com',
      release: DEFAULT_RELEASE,
      gates: gatesWith({ FabricManagerPartitioning: true }),
      log: pino({ level: 'silent' }),
    });
    const slices = m.desired('kwok-0', { profile: 'dgx-h100', pool: null });
    assert.ok(Array.isArray(slices));
    const devices = slices.flatMap((s) => (JSON.parse(s.spec(1)) as ResourceSlice['spec']).devices ?? []);
    const attributes = devices.find((d) => d.name === 'gpu-4')?.attributes;
    assert.ok(attributes);
    assert.deepEqual(attributes['gpuModuleID'], { int: 1 });
    assert.deepEqual(attributes['partition4'], { int: 1 });
  });
});
