import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { FakegpuError } from '../../src/errors.js';
import { gatesWith, type FeatureGates } from '../../src/model/feature-gates/gates.js';
import { HGX_8GPU_PARTITIONS } from '../../src/model/hardware/fabric-manager.js';
import { CheckpointStore } from '../../src/node/checkpoint/checkpoint.js';
import { FakeFabricManager } from '../../src/node/prepare/fabric-manager.js';
import { DeviceState } from '../../src/node/prepare/state.js';

/**
 * FabricManagerPartitioning at prepare (NVIDIA v0.5.0 device_state.go activateFabricPartition,
 * deactivateFabricPartition). On dgx-h100 the module IDs by minor are 7 5 6 8 1 3 4 2, so partition 1
 * (modules 1-4) is gpu-4..7 and partition 2 (modules 5-8) is gpu-0..3.
 */
import { gatedModel, gpuClaim, NODE } from '../support/node-state.js';
const FM = gatesWith({ FabricManagerPartitioning: true });
const PARTITION_1 = ['gpu-4', 'gpu-5', 'gpu-6', 'gpu-7'];

function setup(profile = 'dgx-h100', gates: FeatureGates = FM, resetCheckpoint = false) {
  const root = mkdtempSync(join(tmpdir(), 'fakegpu-fm-'));
  const model = gatedModel(gates, profile);
  const stateDir = join(root, 'state');
  const opts = {
    driverName: 'gpu.nvidia.com',
    nodeName: NODE,
    cdiRoot: join(root, 'cdi'),
    stateDir,
    gates,
    release: '0.5' as const,
    resetCheckpoint,
  };
  const make = () =>
    new DeviceState(
      model.machine,
      model.nvml,
      model.devices,
      new CheckpointStore(join(stateDir, 'checkpoint.json')),
      opts,
    );
  const fm = new FakeFabricManager(join(stateDir, 'fabric-manager.json'), HGX_8GPU_PARTITIONS);
  return { stateDir, make, state: make(), fm };
}

const claim = gpuClaim;

const failed = (uid: string, cause: string) =>
  `error preparing devices for claim default/claim-${uid}:${uid}: prepare devices failed: ${cause}`;

describe('FabricManagerPartitioning: prepare activates, unprepare deactivates', () => {
  it("activates the claim's partition and deactivates it at unprepare", async () => {
    const t = setup();
    await t.state.prepare(claim('p1', PARTITION_1));
    assert.deepEqual(t.fm.active(), [1]);
    await t.state.unprepare('p1');
    assert.deepEqual(t.fm.active(), []);
  });

  it("refuses GPUs that form no partition, in NVIDIA's words, and activates nothing", async () => {
    const t = setup();
    await assert.rejects(t.state.prepare(claim('r1', ['gpu-0', 'gpu-1', 'gpu-4'])), {
      message: failed(
        'r1',
        'fabric manager: GPU module set [7 5 1] does not match any FM partition; refusing partition activation',
      ),
    });
    assert.deepEqual(t.fm.active(), []);
    assert.deepEqual(t.state.held(), []);
  });

  it('a partition that shares GPUs with an active one: FM refuses it, nothing is left behind', async () => {
    const t = setup();
    t.fm.activate(0);
    await assert.rejects(t.state.prepare(claim('o1', PARTITION_1)), {
      message: failed(
        'o1',
        'activating fabric partition 1: fabricmanager: fmActivateFabricPartition(1): fmActivateFabricPartition: FM_ST_IN_USE',
      ),
    });
    assert.deepEqual(t.fm.active(), [0]);
    assert.deepEqual(t.state.held(), []);
  });

  it('activation is idempotent: an active partition is no error', () => {
    const t = setup();
    t.fm.activate(2);
    t.fm.activate(2);
    t.fm.deactivate(5);
    assert.deepEqual(t.fm.active(), [2]);
  });

  it('survives a restart: the partition stays active for the prepared claim, and unprepare after it releases it', async () => {
    const t = setup();
    await t.state.prepare(claim('s1', ['gpu-0', 'gpu-1', 'gpu-2', 'gpu-3']));
    const again = t.make();
    assert.equal(again.restore().swept.instances, 0);
    assert.deepEqual(t.fm.active(), [2]);
    await again.unprepare('s1');
    assert.deepEqual(t.fm.active(), []);
  });

  it('a start deactivates what no recorded claim holds (a kill between activating and recording)', () => {
    const t = setup();
    t.fm.activate(1);
    assert.equal(t.make().restore().swept.instances, 1);
    assert.deepEqual(t.fm.active(), []);
  });

  it('stays active while another prepared claim holds the GPUs (the ConsumableShares hook)', async () => {
    const t = setup();
    await t.state.prepare(claim('h1', PARTITION_1));
    await t.state.prepare(claim('h2', PARTITION_1, true));
    await t.state.unprepare('h2');
    assert.deepEqual(t.fm.active(), [1], 'h1 still holds the partition');
    await t.state.unprepare('h1');
    assert.deepEqual(t.fm.active(), []);
  });

  it('a damaged FM state file stops the start with one line naming it and the way out', () => {
    const t = setup();
    const file = join(t.stateDir, 'fabric-manager.json');
    t.fm.activate(1);
    writeFileSync(file, '{"checksum":"sha256:0","activePartitions":[1]}');
    assert.throws(
      () => t.make().restore(),
      (e: unknown) => {
        assert.ok(e instanceof FakegpuError, 'one line, no stack trace');
        assert.match(e.message, new RegExp(`^${file}: the fabric manager state is damaged: its checksum`));
        assert.match(e.message, /--reset-checkpoint/);
        return true;
      },
    );
  });

  it('with --reset-checkpoint a damaged FM state starts with no partition active, and prepare works', async () => {
    const t = setup('dgx-h100', FM, true);
    const file = join(t.stateDir, 'fabric-manager.json');
    t.fm.activate(2);
    writeFileSync(file, 'not json');
    const state = t.make();
    state.restore();
    assert.deepEqual(t.fm.active(), [], 'a good file again, no partition active');
    await state.prepare(claim('r1', PARTITION_1));
    assert.deepEqual(t.fm.active(), [1]);
  });

  it('without the gate, or without NVSwitches, no check and no FM state', async () => {
    const off = setup('dgx-h100', gatesWith({}));
    await off.state.prepare(claim('n1', ['gpu-0', 'gpu-4']));
    assert.equal(existsSync(join(off.stateDir, 'fabric-manager.json')), false);
    const pcie = setup('aws-g4dn.12xlarge');
    await pcie.state.prepare(claim('n2', ['gpu-0', 'gpu-1', 'gpu-2']));
    assert.equal(existsSync(join(pcie.stateDir, 'fabric-manager.json')), false);
  });
});
