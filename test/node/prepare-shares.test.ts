import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { parse } from 'yaml';
import type { ResourceClaim } from '../../src/kube/types/claim.js';
import type { ConsumableShares } from '../../src/model/device/consumable-shares.js';
import { gatesWith } from '../../src/model/feature-gates/gates.js';
import { modelNode } from '../../src/model/render.js';
import type { CdiSpec } from '../../src/node/cdi/spec.js';
import { CheckpointStore } from '../../src/node/checkpoint/checkpoint.js';
import { DeviceState } from '../../src/node/prepare/state.js';
import { resolveProfile } from '../../src/process/profile-file.js';

/**
 * ConsumableShares at prepare and unprepare, as NVIDIA v0.5.0 cmd/gpu-kubelet-plugin/device_state.go
 * does it (validateNoOverlappingPreparedDevices, applySharingConfig, unprepareDevices).
 */
const NODE = 'node-a';

function setup(shares: ConsumableShares, dynamicMig = false) {
  const root = mkdtempSync(join(tmpdir(), 'fakegpu-shares-'));
  const gates = gatesWith({
    TimeSlicingSettings: true,
    MPSSupport: !dynamicMig,
    ConsumableShares: shares !== 'disabled',
    DynamicMIG: dynamicMig,
  });
  const model = modelNode(resolveProfile('dgx-h100'), {
    nodeName: NODE,
    dynamicMig,
    driverName: 'gpu.nvidia.com',
    kubernetesVersion: { major: 1, minor: 37, patch: 0 },
    release: '0.5',
    gates,
    consumableShares: shares,
  });
  const opts = {
    driverName: 'gpu.nvidia.com',
    nodeName: NODE,
    cdiRoot: join(root, 'cdi'),
    stateDir: join(root, 'state'),
    gates,
    release: '0.5' as const,
    consumableShares: shares,
  };
  // A new DeviceState over the same checkpoint file is the plugin restarted.
  const make = () =>
    new DeviceState(
      model.machine,
      model.nvml,
      model.devices,
      new CheckpointStore(join(root, 'state', 'checkpoint.json')),
      opts,
    );
  return { root, model, opts, make, state: make() };
}

const TIME_SLICING = {
  apiVersion: 'resource.nvidia.com/v1beta1',
  kind: 'GpuConfig',
  sharing: { strategy: 'TimeSlicing' },
};

function claim(uid: string, device: string, config: unknown[] = [], adminAccess = false): ResourceClaim {
  return {
    metadata: { name: `claim-${uid}`, namespace: 'default', uid },
    status: {
      allocation: {
        devices: {
          results: [
            {
              request: 'gpu',
              driver: 'gpu.nvidia.com',
              pool: NODE,
              device,
              ...(adminAccess ? { adminAccess } : {}),
            },
          ],
          config: config.map((parameters) => ({
            source: 'FromClaim' as const,
            opaque: { driver: 'gpu.nvidia.com', parameters },
          })),
        },
      },
    },
  };
}

const failure = (uid: string, cause: string) =>
  `error preparing devices for claim default/claim-${uid}:${uid}: ${cause}`;

/** What `nvidia-smi -L` prints in a container of the claim: its CDI mounts laid out as the runtime would. */
function smiList(t: ReturnType<typeof setup>, uid: string): string {
  const spec = parse(
    readFileSync(join(t.opts.cdiRoot, `k8s.gpu.nvidia.com-claim_${uid}.yaml`), 'utf8'),
  ) as CdiSpec;
  const devices = join(t.root, `container-${uid}`);
  mkdirSync(devices);
  for (const d of spec.devices)
    for (const m of d.containerEdits.mounts ?? [])
      if (m.containerPath.startsWith('/var/run/fakegpu/devices/'))
        symlinkSync(m.hostPath, join(devices, m.containerPath.split('/').at(-1) ?? ''));
  const r = spawnSync('sh', [join(t.opts.stateDir, 'bin', 'nvidia-smi'), '-L'], {
    encoding: 'utf8',
    env: { ...process.env, FAKEGPU_DEVICES_DIR: devices },
  });
  return r.stdout;
}

describe('consumable shares: overlapping claims', () => {
  it('two claims whose configs agree share a GPU, and both see it in nvidia-smi', async () => {
    const t = setup('memory');
    await t.state.prepare(claim('a1', 'gpu-0'));
    await t.state.prepare(claim('a2', 'gpu-0'));
    const uuid = t.model.nvml.deviceGetHandleByIndex(0).getUUID();
    for (const uid of ['a1', 'a2']) assert.match(smiList(t, uid), new RegExp(`GPU 0: .*\\(UUID: ${uuid}\\)`));
    // Identical time-slicing configs agree too.
    await t.state.prepare(claim('b1', 'gpu-1', [TIME_SLICING]));
    await t.state.prepare(
      claim('b2', 'gpu-1', [
        { ...TIME_SLICING, sharing: { strategy: 'TimeSlicing', timeSlicingConfig: { interval: 'Default' } } },
      ]),
    );
  });

  it("refuses a claim whose config differs with NVIDIA's message (no config vs time-slicing)", async () => {
    const t = setup('unlimited');
    await t.state.prepare(claim('a1', 'gpu-0'));
    await assert.rejects(t.state.prepare(claim('a2', 'gpu-0', [TIME_SLICING])), {
      message: failure(
        'a2',
        'unable to prepare claim a2: requested device gpu-0 has conflicting configuration with already prepared claim a1',
      ),
    });
  });

  it('without shares the second claim is refused as NVIDIA refuses it', async () => {
    const t = setup('disabled');
    await t.state.prepare(claim('a1', 'gpu-0'));
    await assert.rejects(t.state.prepare(claim('a2', 'gpu-0')), {
      message: failure(
        'a2',
        'unable to prepare claim a2: requested device gpu-0 is already allocated to different claim a1',
      ),
    });
  });

  it('an admin-access claim holds nothing: a plain claim may follow it', async () => {
    const t = setup('disabled');
    await t.state.prepare(claim('adm', 'gpu-0', [], true));
    await t.state.prepare(claim('a1', 'gpu-0'));
  });

  it('refuses MPS, the first claim too, with NVIDIA v0.5.0 applySharingConfig message', async () => {
    const t = setup({ shares: 4n });
    const mps = {
      apiVersion: 'resource.nvidia.com/v1beta1',
      kind: 'GpuConfig',
      sharing: { strategy: 'MPS' },
    };
    await assert.rejects(t.state.prepare(claim('m1', 'gpu-0', [mps])), {
      message: failure(
        'm1',
        'prepare devices failed: error applying config: MPS sharing is not supported when consumable shares is enabled',
      ),
    });
  });

  it('the checkpoint is the count: after a restart a conflicting config is still refused', async () => {
    const t = setup('memory');
    await t.state.prepare(claim('a1', 'gpu-0', [TIME_SLICING]));
    const restarted = t.make();
    restarted.restore();
    await assert.rejects(restarted.prepare(claim('a2', 'gpu-0')), {
      message: /has conflicting configuration with already prepared claim a1$/,
    });
    await restarted.prepare(claim('a3', 'gpu-0', [TIME_SLICING]));
  });
});

describe('consumable shares: dynamic MIG devices', () => {
  const MIG = 'gpu-1-mig-1g10gb-19-0';
  const migs = (t: ReturnType<typeof setup>) => t.model.nvml.deviceGetHandleByIndex(1).getMigDevices();

  it('a second claim reuses the MIG device; only the last unprepare deletes it', async () => {
    const t = setup('unlimited', true);
    const [a] = await t.state.prepare(claim('a1', MIG));
    const [b] = await t.state.prepare(claim('a2', MIG));
    assert.equal(migs(t).length, 1);
    assert.ok(a?.uuid && a.uuid === b?.uuid);
    await t.state.unprepare('a1');
    assert.equal(migs(t).length, 1, 'a2 still holds it');
    await t.state.unprepare('a2');
    assert.equal(migs(t).length, 0);
  });

  it('counts right across a restart between the two prepares and between the unprepares', async () => {
    const t = setup('memory', true);
    await t.state.prepare(claim('a1', MIG));
    const second = t.make();
    assert.deepEqual(second.restore().swept, { cdiSpecs: 0, views: 0, instances: 0 });
    await second.prepare(claim('a2', MIG));
    assert.equal(migs(t).length, 1);
    await second.unprepare('a1');
    const third = t.make();
    third.restore();
    assert.equal(migs(t).length, 1, 'a2 still holds it after the restart');
    await third.unprepare('a2');
    assert.equal(migs(t).length, 0);
  });
});
