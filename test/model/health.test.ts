import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { resolveGates } from '../../src/cli/options.js';
import { expectedTaints, watchedGpus } from '../../src/model/health/expected.js';
import { HealthMonitor } from '../../src/model/health/monitor.js';
import { deviceHealth } from '../../src/model/health/report.js';
import {
  applyTaints,
  checkIgnoredXids,
  DEFAULT_IGNORED_XIDS,
  GPU_LOST_TAINT,
  ignoredXids,
  monitoredDevices,
  UNMONITORED_TAINT,
  withTaint,
  xidTaint,
  type DeviceTaints,
} from '../../src/model/health/taints.js';
import type { DeviceTaint, ResourceSlice } from '../../src/kube/types/resource.js';
import type { HardwareFault, NvmlFault } from '../../src/model/nvml/state.js';
import { FileMigStateStore } from '../../src/node/nvml/state-file.js';
import {
  NO_INSTANCE,
  NVML_EVENT,
  NVML_MEMORY_ERROR,
  NVML_RETURN,
  NvmlError,
} from '../../src/model/nvml/types.js';
import { type ResolvedProfile } from '../../src/model/profile/load.js';
import { resolveProfile } from '../../src/process/profile-file.js';
import { canonicalSpec, keepTaintTimes } from '../../src/kube/publish/pool.js';
import { modelNode } from '../../src/model/render.js';
import { gpuClaim, nodeState } from '../support/node-state.js';
import { RENDER_OPTIONS } from '../support/render.js';
import { buildSlices } from '../../src/model/slice/build.js';

const OPTS = RENDER_OPTIONS;

function model(profile: ResolvedProfile | string, stateFile?: string) {
  const p = typeof profile === 'string' ? resolveProfile(profile) : profile;
  return modelNode(p, stateFile ? { ...OPTS, migState: () => new FileMigStateStore(stateFile) } : OPTS);
}

const isCode = (code: number) => (e: unknown) => e instanceof NvmlError && e.code === code;

/** Runs a monitor until `until` holds for its taints, or fails after a second. */
async function monitored(
  m: ReturnType<typeof model>,
  act: () => void,
  until: (t: DeviceTaints) => boolean,
  ignored = ignoredXids(''),
): Promise<{ taints: DeviceTaints; changes: number; logs: string[] }> {
  let changes = 0;
  const logs: string[] = [];
  const mon = new HealthMonitor(m.nvml, m.devices, {
    ignoredXids: ignored,
    onChange: () => changes++,
    log: (msg) => logs.push(msg),
  });
  mon.start();
  act();
  const deadline = Date.now() + 1000;
  while (!until(mon.current()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
  await mon.stop();
  return { taints: mon.current(), changes, logs };
}

describe('mock NVML events', () => {
  it('an XID reaches a registered event set with the GPU and no instance ids', async () => {
    const { nvml, machine } = model('dgx-h100');
    const set = nvml.eventSetCreate();
    const gpu3 = machine.gpus[3]?.uuid ?? '';
    const dev = nvml.deviceGetHandleByUUID(gpu3);
    dev.registerEvents(NVML_EVENT.XID_CRITICAL_ERROR, set);
    nvml.setFaults('f1', new Map([[gpu3, [{ kind: 'xid', xid: 79 }]]]));
    const e = await set.wait(100);
    assert.equal(e.eventType, NVML_EVENT.XID_CRITICAL_ERROR);
    assert.equal(e.eventData, 79);
    assert.equal(e.device.getUUID(), gpu3);
    assert.equal(e.gpuInstanceId, NO_INSTANCE);
    await assert.rejects(set.wait(10), isCode(NVML_RETURN.ERROR_TIMEOUT));
    set.free();
  });

  it('ECC events only reach sets that asked for them; counts add up per source', async () => {
    const { nvml, machine } = model('dgx-h100');
    const uuid = machine.gpus[0]?.uuid ?? '';
    const set = nvml.eventSetCreate();
    nvml.deviceGetHandleByUUID(uuid).registerEvents(NVML_EVENT.DOUBLE_BIT_ECC_ERROR, set);
    nvml.setFaults('a', new Map([[uuid, [{ kind: 'ecc', bits: 1, count: 3 }]]]));
    nvml.setFaults('b', new Map([[uuid, [{ kind: 'ecc', bits: 2, count: 2 }]]]));
    const e = await set.wait(100);
    assert.equal(e.eventType, NVML_EVENT.DOUBLE_BIT_ECC_ERROR, 'the single-bit event was not registered');
    const dev = nvml.deviceGetHandleByUUID(uuid);
    assert.equal(dev.getTotalEccErrors(NVML_MEMORY_ERROR.CORRECTED), 3n);
    assert.equal(dev.getTotalEccErrors(NVML_MEMORY_ERROR.UNCORRECTED), 2n);
    nvml.setFaults('a', new Map());
    assert.equal(dev.getTotalEccErrors(NVML_MEMORY_ERROR.CORRECTED), 0n, 'clearing a leaves b');
    assert.equal(dev.getTotalEccErrors(NVML_MEMORY_ERROR.UNCORRECTED), 2n);
    set.free();
  });

  it('a lost GPU fails the wait with GPU_IS_LOST once', async () => {
    const { nvml, machine } = model('dgx-h100');
    const uuid = machine.gpus[1]?.uuid ?? '';
    const set = nvml.eventSetCreate();
    nvml.deviceGetHandleByUUID(uuid).registerEvents(NVML_EVENT.XID_CRITICAL_ERROR, set);
    const waiting = set.wait(1000);
    nvml.setFaults('f', new Map([[uuid, [{ kind: 'lost' }]]]));
    await assert.rejects(waiting, isCode(NVML_RETURN.ERROR_GPU_IS_LOST));
    await assert.rejects(set.wait(10), isCode(NVML_RETURN.ERROR_TIMEOUT));
    set.free();
  });

  it('faults are persisted: a new NVML over the same state sees them and replays them on registration', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'fakegpu-health-')), 'nvml.json');
    const first = model('dgx-h100', file);
    const uuid = first.machine.gpus[2]?.uuid ?? '';
    assert.equal(first.nvml.setFaults('f', new Map([[uuid, [{ kind: 'xid', xid: 48 }]]])), true);
    assert.equal(
      first.nvml.setFaults('f', new Map([[uuid, [{ kind: 'xid', xid: 48 }]]])),
      false,
      'no change',
    );
    const again = model('dgx-h100', file);
    assert.deepEqual(again.nvml.faults(uuid), [{ source: 'f', kind: 'xid', xid: 48 }]);
    const set = again.nvml.eventSetCreate();
    again.nvml.deviceGetHandleByUUID(uuid).registerEvents(NVML_EVENT.XID_CRITICAL_ERROR, set);
    assert.equal((await set.wait(100)).eventData, 48);
    set.free();
  });

  it('GPUs marked nvmlEvents: unsupported, and unmonitored faults, cannot register', () => {
    const p: ResolvedProfile = {
      name: 't',
      preset: null,
      spec: {
        gpus: [{ model: 'H100-SXM5-80GB', count: 2 }],
        overrides: [{ index: 1, nvmlEvents: 'unsupported' }],
      },
    };
    const { nvml, machine } = model(p);
    assert.equal(nvml.deviceGetHandleByIndex(0).getSupportedEventTypes() & NVML_EVENT.XID_CRITICAL_ERROR, 8);
    assert.throws(
      () => nvml.deviceGetHandleByIndex(1).getSupportedEventTypes(),
      isCode(NVML_RETURN.ERROR_NOT_SUPPORTED),
    );
    nvml.setFaults('u', new Map([[machine.gpus[0]?.uuid ?? '', [{ kind: 'unmonitored' }]]]));
    assert.throws(
      () => nvml.deviceGetHandleByIndex(0).getSupportedEventTypes(),
      isCode(NVML_RETURN.ERROR_NOT_SUPPORTED),
    );
  });

  it('refuses faults for a GPU the machine does not have', () => {
    const { nvml } = model('dgx-h100');
    assert.throws(
      () => nvml.setFaults('f', new Map([['GPU-nope', [{ kind: 'lost' }]]])),
      isCode(NVML_RETURN.ERROR_NOT_FOUND),
    );
  });
});

describe('taint rules (gpu-health.md §2)', () => {
  it('XIDs: NoSchedule, None for 13 31 43 45 68 109 and the extra ignored ones; value is the decimal XID', () => {
    const ignored = ignoredXids('79, x, 8');
    assert.deepEqual([...DEFAULT_IGNORED_XIDS], [13, 31, 43, 45, 68, 109]);
    for (const x of [13, 31, 43, 45, 68, 109, 79, 8])
      assert.deepEqual(xidTaint(x, ignored), { key: 'gpu.nvidia.com/xid', value: String(x), effect: 'None' });
    assert.deepEqual(xidTaint(48, ignored), { key: 'gpu.nvidia.com/xid', value: '48', effect: 'NoSchedule' });
    assert.deepEqual(GPU_LOST_TAINT, { key: 'gpu.nvidia.com/gpu-lost', effect: 'NoSchedule' });
    assert.deepEqual(UNMONITORED_TAINT, { key: 'gpu.nvidia.com/unmonitored', effect: 'None' });
  });

  it('--additional-xids-to-ignore: a typo is refused in one line', () => {
    assert.equal(checkIgnoredXids('1, 2,', '--additional-xids-to-ignore'), '1, 2,');
    assert.throws(() => checkIgnoredXids('79,abc', '--additional-xids-to-ignore'), {
      message: '--additional-xids-to-ignore: "abc" is not an XID; expected a comma-separated list of numbers',
    });
  });

  it('one taint per key: a later XID overwrites value and effect, also lowering it', () => {
    const ignored = ignoredXids('');
    const a = withTaint([], xidTaint(79, ignored)) ?? [];
    const b = withTaint(a, xidTaint(13, ignored));
    assert.deepEqual(b, [{ key: 'gpu.nvidia.com/xid', value: '13', effect: 'None' }]);
    assert.equal(withTaint(b, xidTaint(13, ignored)), null, 'the same taint is no change');
    assert.deepEqual(
      withTaint(b, GPU_LOST_TAINT)?.map((t) => t.key),
      ['gpu.nvidia.com/xid', 'gpu.nvidia.com/gpu-lost'],
    );
  });

  it('the gates: NVMLDeviceHealthCheck is known and refused with dynamic MIG as NVIDIA v0.5.0 refuses it', () => {
    const g = resolveGates('NVMLDeviceHealthCheck=true', '0.5', false, '--feature-gates');
    assert.equal(g.NVMLDeviceHealthCheck, true);
    assert.throws(() => resolveGates('NVMLDeviceHealthCheck=true', '0.5', true, '--feature-gates'), {
      message:
        '--feature-gates with --dynamic-mig: feature gate DynamicMIG is currently mutually exclusive with NVMLDeviceHealthCheck',
    });
  });
});

describe("NVIDIA's health monitor over the mock NVML", () => {
  it('XID 79 on gpu-3 taints exactly gpu-3; XID 13 elsewhere is effect None', async () => {
    const m = model('dgx-h100');
    const [g3, g5] = [m.machine.gpus[3]?.uuid ?? '', m.machine.gpus[5]?.uuid ?? ''];
    const r = await monitored(
      m,
      () => {
        m.nvml.setFaults('a', new Map([[g3, [{ kind: 'xid', xid: 79 }]]]));
        m.nvml.setFaults('b', new Map([[g5, [{ kind: 'xid', xid: 13 }]]]));
      },
      (t) => t.size === 2,
    );
    assert.deepEqual(
      [...r.taints],
      [
        ['gpu-3', [{ key: 'gpu.nvidia.com/xid', value: '79', effect: 'NoSchedule' }]],
        ['gpu-5', [{ key: 'gpu.nvidia.com/xid', value: '13', effect: 'None' }]],
      ],
    );
    assert.equal(r.changes, 2);
  });

  it('ECC events change nothing; a lost GPU taints every device of the node', async () => {
    const m = model('dgx-h100');
    const r = await monitored(
      m,
      () => {
        m.nvml.setFaults(
          'e',
          new Map([[m.machine.gpus[0]?.uuid ?? '', [{ kind: 'ecc', bits: 2, count: 1 }]]]),
        );
        m.nvml.setFaults('l', new Map([[m.machine.gpus[6]?.uuid ?? '', [{ kind: 'lost' }]]]));
      },
      (t) => t.size === 8,
    );
    assert.equal(r.taints.size, 8);
    for (const [, t] of r.taints) assert.deepEqual(t, [GPU_LOST_TAINT]);
  });

  it('a GPU that cannot register is unmonitored on all its devices, at start', async () => {
    const p = resolveProfile('dgx-a100');
    const spec = {
      ...p.spec,
      overrides: [
        {
          index: 2,
          nvmlEvents: 'unsupported' as const,
          mig: { mode: 'enabled' as const, layout: '3g.20gb x2' },
        },
      ],
    };
    const m = model({ ...p, spec });
    const r = await monitored(
      m,
      () => undefined,
      (t) => t.size === 2,
    );
    assert.deepEqual([...r.taints.keys()].sort(), ['gpu-2-mig-3g20gb-9-0', 'gpu-2-mig-3g20gb-9-4']);
    for (const [, t] of r.taints) assert.deepEqual(t, [UNMONITORED_TAINT]);
  });

  it('static MIG: an XID with GI and CI taints that MIG device; one for the whole GPU is ignored', async () => {
    const p = resolveProfile('dgx-a100');
    const m = model({
      ...p,
      spec: { ...p.spec, overrides: [{ index: 0, mig: { mode: 'enabled', layout: '3g.20gb x2' } }] },
    });
    const g0 = m.machine.gpus[0]?.uuid ?? '';
    const byKey = monitoredDevices(m.devices);
    const migName = [...byKey.entries()].find(([k]) => k.startsWith(`${g0}/2/`))?.[1];
    assert.ok(migName, 'GI 2 is a published MIG device');
    const r = await monitored(
      m,
      () => {
        m.nvml.setFaults('whole', new Map([[g0, [{ kind: 'xid', xid: 48 }]]]));
        m.nvml.setFaults(
          'mig',
          new Map([[g0, [{ kind: 'xid', xid: 94, gpuInstanceId: 2, computeInstanceId: 0 }]]]),
        );
      },
      (t) => t.size === 1,
    );
    assert.deepEqual(
      [...r.taints],
      [[migName, [{ key: 'gpu.nvidia.com/xid', value: '94', effect: 'NoSchedule' }]]],
    );
    assert.ok(r.logs.includes('XID for a device not published; ignored'));
  });

  it('a restarted monitor sees a fault that is still there', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'fakegpu-health-')), 'nvml.json');
    const m = model('dgx-h100', file);
    m.nvml.setFaults('a', new Map([[m.machine.gpus[4]?.uuid ?? '', [{ kind: 'xid', xid: 79 }]]]));
    const r = await monitored(
      model('dgx-h100', file),
      () => undefined,
      (t) => t.size === 1,
    );
    assert.deepEqual([...r.taints.keys()], ['gpu-4']);
  });
});

describe('taints in slices', () => {
  const taint: DeviceTaint = { key: 'gpu.nvidia.com/xid', value: '79', effect: 'NoSchedule' };

  it('tainted devices carry their taints; 25.12 removes failed devices and drops ignorable XIDs', () => {
    const m = model('dgx-h100');
    const taints = new Map<string, DeviceTaint[]>([
      ['gpu-3', [taint]],
      ['gpu-5', [{ key: 'gpu.nvidia.com/xid', value: '13', effect: 'None' }]],
    ]);
    const now = applyTaints(m.devices, taints, '0.5').flatMap((g) => g.devices);
    assert.deepEqual(now.find((d) => d.name === 'gpu-3')?.taints, [taint]);
    assert.equal(now.find((d) => d.name === 'gpu-0')?.taints, undefined);
    const old = applyTaints(m.devices, taints, '25.12').flatMap((g) => g.devices);
    assert.deepEqual(
      old.map((d) => d.name),
      ['gpu-0', 'gpu-1', 'gpu-2', 'gpu-4', 'gpu-5', 'gpu-6', 'gpu-7'],
    );
    assert.ok(old.every((d) => d.taints === undefined));
    const key = Object.keys(m.devices[0]?.devices[0] ?? {});
    assert.ok(!key.includes('taints'), 'the model itself is untouched');
  });

  it('a slice with a tainted device holds at most 64 devices', () => {
    const m = model({
      name: 't',
      preset: null,
      spec: { gpus: [{ model: 'A100-SXM4-40GB', count: 16 }], mig: { mode: 'enabled', layout: '1g.5gb x7' } },
    });
    const all = m.devices.flatMap((g) => g.devices);
    assert.ok(all.length > 64 && all.length <= 128, `${all.length} devices`);
    const opts = {
      nodeName: 'node-a',
      driverName: 'gpu.nvidia.com',
      dynamicMig: false,
      kubernetesVersion: OPTS.kubernetesVersion,
      release: '0.5' as const,
    };
    assert.equal(buildSlices(m.devices, opts).length, 1);
    const tainted = applyTaints(m.devices, new Map([[all[0]?.name ?? '', [taint]]]), '0.5');
    const slices = buildSlices(tainted, opts);
    assert.deepEqual(
      slices.map((s) => s.spec.devices?.length),
      [64, all.length - 64],
    );
    assert.ok(slices.every((s) => s.spec.pool.resourceSliceCount === 2));
  });

  it('a taint time the API server stamped is kept on republish and ignored when comparing', () => {
    const desired: ResourceSlice = {
      apiVersion: 'resource.k8s.io/v1',
      kind: 'ResourceSlice',
      metadata: {},
      spec: {
        driver: 'd',
        nodeName: 'n',
        pool: { name: 'n', generation: 1, resourceSliceCount: 1 },
        devices: [
          { name: 'gpu-3', taints: [taint] },
          { name: 'gpu-4', taints: [{ ...taint, value: '48' }] },
        ],
      },
    };
    const stored = {
      ...desired.spec,
      devices: [
        { name: 'gpu-3', taints: [{ ...taint, timeAdded: '2026-12-01T00:00:00Z' }] },
        { name: 'gpu-4', taints: [{ ...taint, timeAdded: '2026-12-01T00:00:01Z' }] },
      ],
    };
    const kept = keepTaintTimes(desired, stored);
    assert.equal(kept.spec.devices?.[0]?.taints?.[0]?.timeAdded, '2026-12-01T00:00:00Z');
    assert.equal(kept.spec.devices[1]?.taints?.[0]?.timeAdded, undefined, 'a changed value is a new taint');
    assert.equal(canonicalSpec(kept.spec), canonicalSpec(desired.spec));
  });
});

describe('health for the kubelet (KEP-4680 mapping)', () => {
  it('maps taints to Healthy, Unhealthy and Unknown with the proposal messages', () => {
    const ignored = ignoredXids('');
    const taints = new Map<string, DeviceTaint[]>([
      ['a', [xidTaint(79, ignored)]],
      ['b', [xidTaint(13, ignored)]],
      ['c', [UNMONITORED_TAINT]],
      ['d', [xidTaint(13, ignored), GPU_LOST_TAINT]],
    ]);
    const devs = ['a', 'b', 'c', 'd', 'e'].map((name) => ({ name, monitored: true, type: 'gpu' }));
    devs.push({ name: 'p', monitored: false, type: 'dynamic MIG' });
    assert.deepEqual(
      deviceHealth(devs, taints).map((h) => [h.deviceName, h.health, h.message]),
      [
        ['a', 'Unhealthy', 'critical XID 79 reported by NVML'],
        ['b', 'Healthy', 'non-fatal XID 13 reported by NVML'],
        ['c', 'Unknown', 'device health is not monitored'],
        ['d', 'Unhealthy', 'GPU is lost'],
        ['e', 'Healthy', ''],
        ['p', 'Unknown', 'dynamic MIG devices are not covered by the NVML health monitor'],
      ],
    );
  });
});

describe('the taints the fleet publishes equal what the monitor ends with', () => {
  const cases: [string, string, (uuids: string[]) => { uuid: string; fault: NvmlFault }[]][] = [
    [
      'two XIDs, one lowered by a later ignorable one',
      'dgx-h100',
      (u) => [
        { uuid: u[3] ?? '', fault: { source: 'a', kind: 'xid', xid: 79 } },
        { uuid: u[5] ?? '', fault: { source: 'b', kind: 'xid', xid: 48 } },
        { uuid: u[3] ?? '', fault: { source: 'c', kind: 'xid', xid: 13 } },
      ],
    ],
    [
      'ECC then lost',
      'dgx-h100',
      (u) => [
        { uuid: u[0] ?? '', fault: { source: 'a', kind: 'ecc', bits: 2, count: 4 } },
        { uuid: u[1] ?? '', fault: { source: 'b', kind: 'lost' } },
      ],
    ],
    [
      'unmonitored GPU ignores its XID',
      'dgx-a100',
      (u) => [
        { uuid: u[2] ?? '', fault: { source: 'a', kind: 'unmonitored' } },
        { uuid: u[2] ?? '', fault: { source: 'b', kind: 'xid', xid: 79 } },
        { uuid: u[4] ?? '', fault: { source: 'c', kind: 'xid', xid: 79 } },
      ],
    ],
  ];
  for (const [what, preset, faults] of cases) {
    it(what, async () => {
      const file = join(mkdtempSync(join(tmpdir(), 'fakegpu-health-')), 'nvml.json');
      const m = model(preset, file);
      const list = faults(m.machine.gpus.map((g) => g.uuid));
      const want = expectedTaints(
        watchedGpus(m.devices, () => true),
        list,
        ignoredXids(''),
      );
      const unmonitored = list.some((f) => f.fault.kind === 'unmonitored');
      const text = (t: DeviceTaints) => JSON.stringify([...t].sort());
      const bySource = new Map<string, Map<string, HardwareFault[]>>();
      const r = await monitored(
        m,
        () => {
          for (const { uuid, fault } of list) {
            const { source, ...rest } = fault;
            const s = bySource.get(source) ?? new Map<string, HardwareFault[]>();
            bySource.set(source, s.set(uuid, [...(s.get(uuid) ?? []), rest]));
            m.nvml.setFaults(source, s);
          }
        },
        (t) => (unmonitored ? t.has('gpu-4') : text(t) === text(want)),
      );
      assert.ok(want.size > 0);
      if (unmonitored) {
        // The live monitor registered before the GPU stopped reporting, so it saw the XID; a monitor
        // started with the faults present, which is what the fleet's nodes are, ends as the fleet says.
        assert.deepEqual(r.taints.get('gpu-2'), [xidTaint(79, ignoredXids(''))]);
        const again = await monitored(
          model(preset, file),
          () => undefined,
          (t) => text(t) === text(want),
        );
        assert.equal(text(again.taints), text(want));
        assert.deepEqual(want.get('gpu-2'), [UNMONITORED_TAINT]);
      } else assert.equal(text(r.taints), text(want));
    });
  }
});

describe("what a running container's nvidia-smi shows of faults", () => {
  it('views of a prepared claim follow ECC errors and a lost GPU after refreshFiles', async () => {
    const root = mkdtempSync(join(tmpdir(), 'fakegpu-health-'));
    const { model: m, state, opts } = nodeState(root, 'dgx-h100', false);
    state.restore();
    const uid = '11111111-2222-3333-4444-555555555555';
    await state.prepare(gpuClaim(uid, ['gpu-3']));
    const devices = join(opts.stateDir, 'claims', uid);
    const smi = (...args: string[]) => {
      const r = spawnSync('sh', [join(opts.stateDir, 'bin', 'nvidia-smi'), ...args], {
        encoding: 'utf8',
        env: { ...process.env, FAKEGPU_DEVICES_DIR: devices },
      });
      return { code: r.status, out: r.stdout };
    };
    assert.equal(smi('-L').code, 0);
    const uuid = m.machine.gpus[3]?.uuid ?? '';
    m.nvml.setFaults('ecc', new Map([[uuid, [{ kind: 'ecc', bits: 2, count: 3 }]]]));
    await state.refreshFiles();
    assert.match(
      smi('--query-gpu=ecc.errors.uncorrected.volatile.total', '--format=csv,noheader').out,
      /^3\n$/,
    );
    m.nvml.setFaults('lost', new Map([[uuid, [{ kind: 'lost' }]]]));
    await state.refreshFiles();
    const r = smi('-L');
    assert.equal(r.code, 15);
    assert.match(
      r.out,
      /^Unable to determine the device handle for GPU0: 0000:[0-9A-F]{2}:00\.0: GPU is lost\. {2}Reboot the system to recover this GPU\n$/,
    );
  });
});
