import { gatesWith } from '../../src/model/feature-gates/gates.js';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { parse } from 'yaml';
import type { CdiSpec } from '../../src/node/cdi/spec.js';
import { CheckpointStore } from '../../src/node/checkpoint/checkpoint.js';
import type { ResourceClaim } from '../../src/kube/types/claim.js';
import { DeviceState } from '../../src/node/prepare/state.js';
import { type ResolvedProfile } from '../../src/model/profile/load.js';
import { resolveProfile } from '../../src/process/profile-file.js';
import { modelNode } from '../../src/model/render.js';
import type { DriverRelease } from '../../src/model/device/release.js';

const NODE = 'node-a';
const on = gatesWith({ TimeSlicingSettings: true, MPSSupport: true });

function setup(
  profile: string | ResolvedProfile = 'dgx-h100',
  dynamicMig = false,
  release: DriverRelease = '0.5',
) {
  const root = mkdtempSync(join(tmpdir(), 'fakegpu-prepare-'));
  const model = modelNode(typeof profile === 'string' ? resolveProfile(profile) : profile, {
    nodeName: NODE,
    dynamicMig,
    driverName: 'gpu.nvidia.com',
    kubernetesVersion: { major: 1, minor: 37, patch: 0 },
    release,
  });
  const opts = {
    driverName: 'gpu.nvidia.com',
    nodeName: NODE,
    cdiRoot: join(root, 'cdi'),
    stateDir: join(root, 'state'),
    gates: on,
    release,
  };
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

function claim(
  uid: string,
  devices: string[],
  config: unknown[] = [],
  extra: Partial<{ driver: string; pool: string }> = {},
): ResourceClaim {
  return {
    metadata: { name: `claim-${uid}`, namespace: 'default', uid },
    status: {
      allocation: {
        devices: {
          results: devices.map((d) => ({
            request: 'gpus',
            driver: extra.driver ?? 'gpu.nvidia.com',
            pool: extra.pool ?? NODE,
            device: d,
          })),
          config: config.map((parameters) => ({
            source: 'FromClaim' as const,
            opaque: { driver: 'gpu.nvidia.com', parameters },
          })),
        },
      },
    },
  };
}

/** `claim` with admin access on every result, and each config given naming the requests it applies to. */
function adminClaim(uid: string, devices: string[], configs: { requests?: string[] }[] = []): ResourceClaim {
  const c = claim(uid, devices);
  const devs = c.status?.allocation?.devices;
  assert.ok(devs);
  for (const r of devs.results ?? []) r.adminAccess = true;
  devs.config = configs.map((x) => ({
    source: 'FromClaim' as const,
    ...x,
    opaque: {
      driver: 'gpu.nvidia.com',
      parameters: { apiVersion: 'resource.nvidia.com/v1beta1', kind: 'GpuConfig' },
    },
  }));
  return c;
}

function spec(cdiRoot: string, uid: string): CdiSpec {
  return parse(readFileSync(join(cdiRoot, `k8s.gpu.nvidia.com-claim_${uid}.yaml`), 'utf8')) as CdiSpec;
}

describe("admin access, as NVIDIA's v0.5.0 checks it (PR #1335)", () => {
  const refused = (uid: string, why: string) =>
    `error preparing devices for claim default/claim-${uid}:${uid}: claim default/claim-${uid}:${uid} requests admin access ${why}, which is not supported`;

  it('is refused on a MIG device, before anything is made', async () => {
    const t = setup('dgx-h100', true);
    await assert.rejects(t.state.prepare(adminClaim('m1', ['gpu-1-mig-1g10gb-19-0'])), {
      message: refused('m1', 'on a non-full-GPU device'),
    });
    assert.equal(t.model.nvml.deviceGetHandleByIndex(1).getMigDevices().length, 0, 'no instance made');
  });

  it('is refused with a config that applies to the admin request, or to every request', async () => {
    const t = setup();
    for (const configs of [[{}], [{ requests: [] }], [{ requests: ['gpus'] }]])
      await assert.rejects(t.state.prepare(adminClaim('c1', ['gpu-0'], configs)), {
        message: refused('c1', 'with a device configuration'),
      });
  });

  it('is allowed on a full GPU without a config, or with one for another request only', async () => {
    const t = setup();
    assert.equal((await t.state.prepare(adminClaim('a1', ['gpu-0']))).length, 1);
    assert.equal((await t.state.prepare(adminClaim('a2', ['gpu-1'], [{ requests: ['other'] }]))).length, 1);
  });

  it('release 0.4 has no such checks: a MIG device no one holds is prepared with admin access', async () => {
    const t = setup('dgx-h100', true, '0.4');
    assert.equal((await t.state.prepare(adminClaim('m2', ['gpu-1-mig-1g10gb-19-0']))).length, 1);
  });
});

describe('preparing claims', () => {
  it('writes one CDI spec per claim with the real driver naming, visible devices and fake nodes', async () => {
    const t = setup();
    const devices = await t.state.prepare(claim('0c0ffee0', ['gpu-0', 'gpu-3']));
    assert.deepEqual(
      devices.map((d) => [d.deviceName, d.cdiDeviceIds, d.requestNames, d.poolName]),
      [
        ['gpu-0', ['k8s.gpu.nvidia.com/claim=0c0ffee0-gpu-0'], ['gpus'], NODE],
        ['gpu-3', ['k8s.gpu.nvidia.com/claim=0c0ffee0-gpu-3'], ['gpus'], NODE],
      ],
    );
    const s = spec(t.opts.cdiRoot, '0c0ffee0');
    assert.equal(s.cdiVersion, '0.5.0');
    assert.equal(s.kind, 'k8s.gpu.nvidia.com/claim');
    const uuids = [0, 3].map((i) => t.model.machine.gpus[i]?.uuid).join(',');
    assert.deepEqual(s.devices[0]?.containerEdits.env, [`NVIDIA_VISIBLE_DEVICES=${uuids}`]);
    assert.deepEqual(s.devices[1]?.containerEdits.deviceNodes, [
      { path: '/dev/nvidia3', type: 'c', major: 120, minor: 3, permissions: 'rw' },
    ]);
    assert.deepEqual(
      s.containerEdits?.deviceNodes?.map((n) => n.path),
      ['/dev/nvidiactl', '/dev/nvidia-uvm', '/dev/nvidia-uvm-tools'],
    );
    const mounts: { containerPath: string }[] = s.containerEdits.mounts ?? [];
    assert.equal(mounts[0]?.containerPath, '/usr/bin/nvidia-smi');
  });

  it('is idempotent, and restores every completed claim after a restart', async () => {
    const t = setup();
    const first = await t.state.prepare(claim('aa11', ['gpu-1']));
    assert.deepEqual(await t.state.prepare(claim('aa11', ['gpu-1'])), first);
    const file = join(t.opts.cdiRoot, 'k8s.gpu.nvidia.com-claim_aa11.yaml');
    rmSync(file);
    const restarted = t.make();
    restarted.restore();
    assert.ok(existsSync(file), 'the CDI spec is back');
    assert.deepEqual(await restarted.prepare(claim('aa11', ['gpu-1'])), first);
  });

  it('unprepares, also claims it never saw, and leaves no file behind', async () => {
    const t = setup();
    await t.state.prepare(claim('bb22', ['gpu-2']));
    await t.state.unprepare('bb22');
    await t.state.unprepare('never-seen');
    assert.deepEqual(readdirSync(t.opts.cdiRoot), []);
    assert.deepEqual(readdirSync(join(t.opts.stateDir, 'claims')), []);
  });

  it('refuses a device held by another claim, an unknown device and a bad config, per claim', async () => {
    const t = setup();
    await t.state.prepare(claim('c1', ['gpu-0']));
    await assert.rejects(t.state.prepare(claim('c2', ['gpu-0'])), {
      message:
        'error preparing devices for claim default/claim-c2:c2: unable to prepare claim c2: requested device gpu-0 is already allocated to different claim c1',
    });
    await assert.rejects(t.state.prepare(claim('c3', ['gpu-9'])), {
      message: /prepare devices failed: allocatable not found for device "gpu-9"$/,
    });
    await assert.rejects(
      t.state.prepare(
        claim(
          'c4',
          ['gpu-1'],
          [
            {
              apiVersion: 'resource.nvidia.com/v1beta1',
              kind: 'GpuConfig',
              sharing: { strategy: 'TimeSlicing', timeSlicingConfig: { interval: 'Forever' } },
            },
          ],
        ),
      ),
      {
        message:
          /prepare devices failed: error getting opaque device configs: unknown time-slice interval: Forever, supported time-slice intervals: Default, Short, Medium, Long$/,
      },
    );
    assert.ok(!existsSync(join(t.opts.cdiRoot, 'k8s.gpu.nvidia.com-claim_c4.yaml')), 'nothing half-applied');
    assert.deepEqual(await t.state.prepare(claim('c5', [], [], {})), []);
  });

  it('honours time-slicing and MPS configs', async () => {
    const t = setup();
    await t.state.prepare(
      claim(
        'ts',
        ['gpu-4'],
        [
          {
            apiVersion: 'resource.nvidia.com/v1beta1',
            kind: 'GpuConfig',
            sharing: { strategy: 'TimeSlicing', timeSlicingConfig: { interval: 'Long' } },
          },
        ],
      ),
    );
    const view = readdirSync(join(t.opts.stateDir, 'claims', 'ts'))[0] ?? '';
    assert.match(
      readFileSync(join(t.opts.stateDir, 'claims', 'ts', view, 'q'), 'utf8'),
      /Compute Policy Timeslice +: Long/,
    );
    await t.state.prepare(
      claim(
        'mps',
        ['gpu-5'],
        [{ apiVersion: 'resource.nvidia.com/v1beta1', kind: 'GpuConfig', sharing: { strategy: 'MPS' } }],
      ),
    );
    const s = spec(t.opts.cdiRoot, 'mps');
    assert.deepEqual(s.containerEdits?.env, ['CUDA_MPS_PIPE_DIRECTORY=/tmp/nvidia-mps']);
    const mounts: { containerPath: string }[] = s.containerEdits.mounts ?? [];
    assert.ok(mounts.some((m) => m.containerPath === '/tmp/nvidia-mps'));
  });

  it('prepares many claims at once without crossing their state', async () => {
    const t = setup();
    const ids = Array.from({ length: 8 }, (_, i) => `p${i}`);
    const out = await Promise.all(ids.map((id, i) => t.state.prepare(claim(id, [`gpu-${i}`]))));
    out.forEach((devices, i) => {
      assert.equal(devices[0]?.deviceName, `gpu-${i}`);
      assert.deepEqual(
        spec(t.opts.cdiRoot, `p${i}`).devices.map((d) => d.name),
        [`p${i}-gpu-${i}`],
      );
    });
  });

  it("gives another --driver-name its own CDI kind, so its start-up sweep leaves the first plugin's live specs", async () => {
    const t = setup();
    await t.state.prepare(claim('f1257', ['gpu-0']));
    const other = new DeviceState(
      t.model.machine,
      t.model.nvml,
      t.model.devices,
      new CheckpointStore(join(t.root, 'state-b', 'checkpoint.json')),
      { ...t.opts, driverName: 'gpu.example.com', stateDir: join(t.root, 'state-b') },
    );
    const swept = other.restore().swept;
    assert.equal(swept.cdiSpecs, 0, "the first plugin's spec is no debris of the second");
    assert.equal(spec(t.opts.cdiRoot, 'f1257').kind, 'k8s.gpu.nvidia.com/claim');
    const devices = await other.prepare(claim('5ec0d', ['gpu-1'], [], { driver: 'gpu.example.com' }));
    assert.deepEqual(devices[0]?.cdiDeviceIds, ['k8s.gpu.example.com/claim=5ec0d-gpu-1']);
    assert.deepEqual(readdirSync(t.opts.cdiRoot).sort(), [
      'k8s.gpu.example.com-claim_5ec0d.yaml',
      'k8s.gpu.nvidia.com-claim_f1257.yaml',
    ]);
    // And the other way round: the default driver restarting leaves the second one's spec.
    assert.equal(t.make().restore().swept.cdiSpecs, 0);
    assert.equal(readdirSync(t.opts.cdiRoot).length, 2);
  });

  it('prepares static MIG devices with their own UUIDs', async () => {
    const { state, opts } = setup({
      name: 'mig',
      preset: null,
      spec: { gpus: [{ model: 'A100-SXM4-40GB', mig: { layout: '1g.5gb x7' } }] },
    });
    const [d] = await state.prepare(claim('m1', ['gpu-0-mig-1g5gb-19-3']));
    assert.match(d?.uuid ?? '', /^MIG-/);
    assert.deepEqual(spec(opts.cdiRoot, 'm1').devices[0]?.containerEdits.env, [
      `NVIDIA_VISIBLE_DEVICES=${d?.uuid ?? ''}`,
    ]);
  });
});

describe('checkpoint', () => {
  it('refuses a corrupt file unless told to reset', () => {
    const dir = mkdtempSync(join(tmpdir(), 'fakegpu-cp-'));
    const path = join(dir, 'checkpoint.json');
    writeFileSync(path, '{"version": 1, "preparedClaims": ');
    assert.throws(
      () => new CheckpointStore(path),
      /checkpoint.json: the checkpoint is not valid JSON .*; restart with --reset-checkpoint \(env FAKEGPU_RESET_CHECKPOINT=true, chart value plugin.resetCheckpoint\) to start empty/,
    );
    assert.deepEqual(new CheckpointStore(path, true).all(), []);
  });
});

describe('dynamic MIG partitions', () => {
  it('create the MIG device at prepare and destroy it at unprepare', async () => {
    const { state, opts, model } = setup('dgx-h100', true);
    const gpu0 = model.nvml.deviceGetHandleByIndex(0);
    const devices = await state.prepare(claim('d1', ['gpu-0-mig-1g10gb-19-0', 'gpu-0-mig-3g40gb-9-4']));
    assert.deepEqual(
      devices.map((d) => [d.deviceName, d.uuid.slice(0, 4), d.migInstance?.gpuInstanceId]),
      [
        ['gpu-0-mig-1g10gb-19-0', 'MIG-', 7],
        ['gpu-0-mig-3g40gb-9-4', 'MIG-', 2],
      ],
    );
    assert.deepEqual(gpu0.getMigMode(), [1, 1]);
    assert.deepEqual(
      gpu0
        .getMigDevices()
        .map((m) => m.getUUID())
        .sort(),
      devices.map((d) => d.uuid).sort(),
    );
    const s = spec(opts.cdiRoot, 'd1');
    assert.deepEqual(
      s.devices[1]?.containerEdits.deviceNodes?.map((n) => n.path),
      ['/dev/nvidia0', '/dev/nvidia-caps/nvidia-cap1056', '/dev/nvidia-caps/nvidia-cap1057'],
    );
    assert.deepEqual(s.devices[0]?.containerEdits.env, [
      `NVIDIA_VISIBLE_DEVICES=${devices.map((d) => d.uuid).join(',')}`,
    ]);
    await state.unprepare('d1');
    assert.deepEqual(gpu0.getMigDevices(), []);
  });

  it('refuse a placement that is already taken, leaving nothing behind', async () => {
    const { state, model } = setup('dgx-h100', true);
    await state.prepare(claim('a', ['gpu-1-mig-3g40gb-9-0']));
    await assert.rejects(state.prepare(claim('b', ['gpu-1-mig-1g10gb-19-6', 'gpu-1-mig-2g20gb-14-2'])), {
      message:
        /prepare devices failed: error creating MIG device for "gpu-1-mig-2g20gb-14-2": 2g\.20gb@2 \(memory slices 2-3\) overlaps 3g\.40gb@0 \(memory slices 0-3\)$/,
    });
    assert.equal(
      model.nvml.deviceGetHandleByIndex(1).getMigDevices().length,
      1,
      'the 1g.10gb made for claim b is gone again',
    );
  });

  it('destroy MIG devices no prepared claim holds when the plugin starts', async () => {
    const t = setup('dgx-h100', true);
    await t.state.prepare(claim('keep', ['gpu-2-mig-7g80gb-0-0']));
    const gpu3 = t.model.nvml.deviceGetHandleByIndex(3);
    gpu3.setMigMode(1);
    const gi = gpu3.createGpuInstanceWithPlacement(gpu3.getGpuInstanceProfileInfo(0), { start: 0, size: 1 });
    gi.createComputeInstance(gi.getComputeInstanceProfileInfo(0, 0));
    t.make().restore();
    assert.deepEqual(gpu3.getMigDevices(), []);
    assert.equal(t.model.nvml.deviceGetHandleByIndex(2).getMigDevices().length, 1, 'the held one stays');
  });
});

describe('MIG configs and sequences', () => {
  it('refuses a MIG config aimed at a whole GPU, in the driver words', async () => {
    const { state } = setup();
    const c = claim('cfg', ['gpu-0'], []);
    c.status?.allocation?.devices?.config?.push({
      source: 'FromClaim',
      requests: ['gpus'],
      opaque: {
        driver: 'gpu.nvidia.com',
        parameters: { apiVersion: 'resource.nvidia.com/v1beta1', kind: 'MigDeviceConfig' },
      },
    });
    await assert.rejects(state.prepare(c), {
      message:
        /prepare devices failed: cannot apply MigDeviceConfig to device "gpu-0" of type "gpu" \(request: gpus\)$/,
    });
  });

  it('any sequence of allocations the counters admit, and releases, leaves non-overlapping MIG instances', async () => {
    const t = setup('dgx-h100', true);
    const gpuDevices = t.model.devices[0]?.devices ?? [];
    const counterSet = t.model.devices[0]?.counterSet?.counters ?? {};
    const partitions = gpuDevices.filter((d) => d.name.includes('-mig-'));
    const qty = (v: string): bigint => {
      const m = /^(\d+)(Mi)?$/.exec(v);
      return BigInt(m?.[1] ?? '0') * (m?.[2] ? 1048576n : 1n);
    };
    const fits = (held: string[], next: string): boolean => {
      const used = new Map<string, bigint>();
      for (const name of [...held, next]) {
        for (const c of partitions.find((d) => d.name === name)?.consumesCounters ?? []) {
          for (const [k, v] of Object.entries(c.counters)) used.set(k, (used.get(k) ?? 0n) + qty(v.value));
        }
      }
      return [...used].every(([k, v]) => v <= qty(counterSet[k]?.value ?? '0'));
    };
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(fc.boolean(), fc.nat()), { minLength: 1, maxLength: 25 }),
        async (steps) => {
          const held = new Map<string, string>();
          let n = 0;
          for (const [allocate, pick] of steps) {
            if (allocate || held.size === 0) {
              const name = partitions[pick % partitions.length]?.name ?? '';
              if (!fits([...held.values()], name)) continue;
              const uid = `s${n++}`;
              await t.state.prepare(claim(uid, [name]));
              held.set(uid, name);
            } else {
              const uid = [...held.keys()][pick % held.size] ?? '';
              await t.state.unprepare(uid);
              held.delete(uid);
            }
            const live = t.model.nvml.deviceGetHandleByIndex(0).getMigDevices();
            assert.equal(live.length, held.size, 'one MIG device per held claim');
          }
          for (const uid of [...held.keys()]) await t.state.unprepare(uid);
          assert.deepEqual(t.model.nvml.deviceGetHandleByIndex(0).getMigDevices(), []);
        },
      ),
      { numRuns: 40, seed: 20261130 },
    );
  });
});
