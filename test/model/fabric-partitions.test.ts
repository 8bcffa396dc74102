import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { serialize } from '../../src/cli/output.js';
import type { Device } from '../../src/kube/types/resource.js';
import type { GpuInfo } from '../../src/model/device/discover.js';
import {
  FabricPartitionError,
  partitionsBySize,
  resolvePartition,
} from '../../src/model/device/fabric-partitions.js';
import { gatesWith } from '../../src/model/feature-gates/gates.js';
import { parseFeatureGates } from '../../src/model/feature-gates/parse.js';
import { HGX_8GPU_PARTITIONS } from '../../src/model/hardware/fabric-manager.js';
import { renderSlices } from '../../src/model/render.js';
import { REPO_ROOT } from '../../src/process/repo.js';
import { resolveProfile } from '../../src/process/profile-file.js';
import { apiViolations } from '../support/api-limits.js';
import { devicesOf, RENDER_OPTIONS } from '../support/render.js';

const FM = gatesWith({ FabricManagerPartitioning: true });

function renderWith(profile: string, dynamicMig = false, gates = FM) {
  return renderSlices(resolveProfile(profile), {
    ...RENDER_OPTIONS,
    nodeName: 'golden-node',
    dynamicMig,
    gates,
  });
}

const fmKeys = (d: Device): Record<string, number> =>
  Object.fromEntries(
    Object.entries(d.attributes ?? {}).flatMap(([k, v]) =>
      /^(gpuModuleID|partition\d+)$/.test(k) && 'int' in v ? [[k, v.int]] : [],
    ),
  );

describe('FabricManagerPartitioning: attributes (NVIDIA v0.5.0 deviceinfo.go)', () => {
  it('the gate is accepted on release 0.5: fakegpu reproduces it', () => {
    assert.equal(
      parseFeatureGates('FabricManagerPartitioning=true', '0.5', '--feature-gates').FabricManagerPartitioning,
      true,
    );
  });

  it('dgx-h100 with the gate: golden, within the API limits', () => {
    const list = renderWith('dgx-h100');
    assert.deepEqual(apiViolations(list.items), []);
    const file = join(REPO_ROOT, 'test', 'golden', 'dgx-h100.fabric-manager-partitioning.yaml');
    const text = serialize(list, 'yaml');
    const update = process.env['UPDATE_GOLDEN'] === '1';
    if (update || !existsSync(file)) {
      assert.ok(update, `golden file ${file} is missing; run UPDATE_GOLDEN=1 and commit it`);
      writeFileSync(file, text);
    }
    assert.equal(text, readFileSync(file, 'utf8'));
  });

  it("each GPU's module ID and the partition of each size that holds it", () => {
    const gpu4 = devicesOf(renderWith('dgx-h100')).find((d) => d.name === 'gpu-4');
    assert.ok(gpu4);
    // minor 4 is module 1 on the captured HGX H100 board: partitions 7 (1), 3 (2), 1 (4), 0 (8).
    assert.deepEqual(fmKeys(gpu4), {
      gpuModuleID: 1,
      partition1: 7,
      partition2: 3,
      partition4: 1,
      partition8: 0,
    });
  });

  it('a CEL selector partition4 == 1 picks exactly four GPUs', () => {
    const picked = devicesOf(renderWith('dgx-h100')).filter((d) => fmKeys(d)['partition4'] === 1);
    assert.deepEqual(
      picked.map((d) => d.name),
      ['gpu-4', 'gpu-5', 'gpu-6', 'gpu-7'],
    );
  });

  it('none without the gate', () => {
    for (const d of devicesOf(renderWith('dgx-h100', false, gatesWith({}))))
      assert.deepEqual(fmKeys(d), {}, d.name);
  });

  it('full GPUs only under dynamic MIG: MIG devices get none', () => {
    for (const d of devicesOf(renderWith('dgx-h100', true))) {
      const keys = Object.keys(fmKeys(d));
      assert.equal(keys.length > 0, /^gpu-\d+$/.test(d.name), d.name);
    }
  });

  it('no NVSwitch, no partitions: a PCIe node and an NVL72 tray publish only gpuModuleID', () => {
    for (const d of devicesOf(renderWith('aws-g6e.2xlarge'))) assert.deepEqual(fmKeys(d), { gpuModuleID: 1 });
    const gb = devicesOf(renderWith('oci-bm.gpu.gb200.4')).filter((d) => /^gpu-\d+$/.test(d.name));
    assert.deepEqual(
      gb.map((d) => fmKeys(d)),
      [2, 1, 4, 3].map((m) => ({ gpuModuleID: m })),
    );
  });
});

const gpu = (moduleId: number, pciBusId = `0000:0${moduleId}:00.0`): GpuInfo =>
  ({ moduleId, pciBusId }) as GpuInfo;

describe("FabricManagerPartitioning: resolving a claim's partition (NVIDIA v0.5.0 device_state.go)", () => {
  it('the partition whose GPUs are exactly the set, in any order', () => {
    assert.equal(resolvePartition([gpu(4), gpu(2), gpu(3), gpu(1)], HGX_8GPU_PARTITIONS).id, 1);
    assert.equal(resolvePartition([gpu(6)], HGX_8GPU_PARTITIONS).id, 12);
  });

  it("a set that is no partition, in NVIDIA's words with Go's %v of the module IDs", () => {
    assert.throws(() => resolvePartition([gpu(7), gpu(5), gpu(1)], HGX_8GPU_PARTITIONS), {
      name: 'Error',
      message: 'fabric manager: GPU module set [7 5 1] does not match any FM partition',
    });
    assert.throws(() => resolvePartition([gpu(1), gpu(2)], HGX_8GPU_PARTITIONS), FabricPartitionError);
  });

  it('a GPU without a module ID', () => {
    assert.throws(() => resolvePartition([gpu(1), gpu(0, '0000:1b:00.0')], HGX_8GPU_PARTITIONS), {
      message: 'fabric manager: no gpuModuleID for GPU at PCI "0000:1b:00.0"',
    });
  });

  it('a module in two partitions of one size is refused, as NVIDIA refuses it at start', () => {
    const table = [
      { id: 3, moduleIds: [1, 2] },
      { id: 5, moduleIds: [1, 3] },
    ];
    assert.throws(() => partitionsBySize(1, table), {
      message: 'fabricmanager: gpuModuleID 1 appears in two partitions of size 2 (3 and 5)',
    });
    assert.deepEqual([...partitionsBySize(2, table)], [[2, 3]]);
  });
});
