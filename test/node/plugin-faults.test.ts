import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import { pino } from 'pino';
import { gpuSkeleton } from '../../src/model/health/gpus.js';
import { ignoredXids } from '../../src/model/health/taints.js';
import { NodeFaults } from '../../src/node/plugin/faults.js';
import { NodeHealth } from '../../src/node/plugin/health.js';
import { resolveProfile } from '../../src/process/profile-file.js';
import { modelNode } from '../../src/model/render.js';
import { buildSlices } from '../../src/model/slice/build.js';
import { FakeFaultApi, faultObject as fault } from '../support/fake-faults.js';
import { recordingLog } from '../support/log.js';

const NODE = 'node-a';
const log = pino({ level: 'silent' });

async function until(what: string, check: () => boolean): Promise<void> {
  const deadline = Date.now() + 3000;
  while (!check()) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

function newModel(release: '0.5' | '25.12') {
  return modelNode(resolveProfile('dgx-h100'), {
    nodeName: NODE,
    dynamicMig: false,
    driverName: 'gpu.nvidia.com',
    kubernetesVersion: { major: 1, minor: 37, patch: 0 },
    release,
  });
}

/** One run of the plugin's fault path; `model` carries NVML (as its state file would) into a restart. */
function setup(
  release: '0.5' | '25.12' = '0.5',
  model = newModel(release),
  o: { log?: typeof log; random?: () => number; refresh?: () => Promise<void> } = {},
) {
  const health = new NodeHealth(model.nvml, model.devices, {
    enabled: true,
    release,
    ignoredXids: ignoredXids(''),
    log,
  });
  const api = new FakeFaultApi();
  let refreshed = 0;
  const faults = new NodeFaults({
    nodeName: NODE,
    api,
    nodeLabels: () => Promise.resolve({ pool: 'a' }),
    nvml: model.nvml,
    gpus: gpuSkeleton(model.machine, model.devices).gpus(NODE),
    health,
    refreshFiles: () => {
      refreshed++;
      return (o.refresh ?? (() => Promise.resolve()))();
    },
    release,
    log: o.log ?? log,
    ...(o.random ? { random: o.random } : {}),
  });
  const slices = () =>
    buildSlices(health.devices(), {
      nodeName: NODE,
      driverName: 'gpu.nvidia.com',
      dynamicMig: false,
      kubernetesVersion: { major: 1, minor: 37, patch: 0 },
      release,
    });
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await faults.stop();
    await health.stop();
  };
  running.push(stop);
  return { model, health, api, faults, slices, refreshed: () => refreshed, stop };
}

/** Every run's stop, so that a failed assertion leaves no watcher keeping the test process alive. */
const running: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const stop of running.splice(0)) await stop();
});

describe("the plugin's faults: GpuFault → mock NVML → NVIDIA's monitor → slices and status", () => {
  it('a disk error while applying is logged, rejects nothing, and the next change is still applied', async () => {
    let failures = 1;
    const s = setup('0.5', newModel('0.5'), {
      refresh: () =>
        failures-- > 0 ? Promise.reject(new Error('ENOSPC: no space left on device')) : Promise.resolve(),
    });
    const unhandled: unknown[] = [];
    const seen = (reason: unknown): void => {
      unhandled.push(reason);
    };
    process.on('unhandledRejection', seen);
    try {
      s.faults.start();
      const [gpu3, gpu4] = [3, 4].map((i) => s.model.machine.gpus[i]?.uuid ?? '');
      s.api.put(fault('xid79', { nodeName: NODE, devices: ['gpu-3'], fault: { type: 'Xid', xid: 79 } }));
      await until('the first fault in NVML', () => s.model.nvml.faults(gpu3 ?? '').length === 1);
      s.api.put(fault('xid48', { nodeName: NODE, devices: ['gpu-4'], fault: { type: 'Xid', xid: 48 } }));
      await until('the second fault in NVML', () => s.model.nvml.faults(gpu4 ?? '').length === 1);
      await s.stop();
      await new Promise((r) => setImmediate(r));
      assert.deepEqual(unhandled, []);
    } finally {
      process.off('unhandledRejection', seen);
    }
  });

  it('an XID on gpu-3 reaches NVML, taints gpu-3, and the status says so once published', async () => {
    const s = setup();
    s.health.start();
    s.faults.start();
    s.api.put(
      fault('xid79', { nodeName: NODE, devices: ['gpu-3', 'gpu-42'], fault: { type: 'Xid', xid: 79 } }),
    );
    const gpu3 = s.model.machine.gpus[3]?.uuid ?? '';
    await until('the fault in NVML', () => s.model.nvml.faults(gpu3).length === 1);
    await until('the taint', () => s.health.taints().has('gpu-3'));
    assert.equal(s.refreshed(), 1, 'running containers see the change');
    s.faults.published(s.slices());
    await until('the status', () =>
      s.api.patches.some((p) => p.patch.status.nodes?.[NODE]?.devices.length === 1),
    );
    const entry = s.api.patches.map((p) => p.patch.status.nodes?.[NODE]).find((e) => e?.devices.length === 1);
    assert.deepEqual(
      entry?.devices.map(({ publishedAt: _, ...d }) => d),
      [{ name: 'gpu-3', taint: { key: 'gpu.nvidia.com/xid', value: '79', effect: 'NoSchedule' } }],
    );
    assert.equal(entry.message, `not on node ${NODE}: gpu-42`);

    // Deleted: repaired hardware; NVIDIA keeps the taint until the plugin restarts.
    s.api.remove('xid79');
    await until('the fault repaired in NVML', () => s.model.nvml.faults(gpu3).length === 0);
    assert.ok(s.health.taints().has('gpu-3'));
    await s.stop();
  });

  it('a rejected status patch is written again later after each failure, with no change or publish to prompt it', async () => {
    const { log: capture, lines } = recordingLog();
    // A thousandth of each ceiling: 2 ms for the first retry, doubling.
    const s = setup('0.5', newModel('0.5'), { log: capture, random: () => 0.001 });
    s.health.start();
    s.faults.start();
    s.api.fail('patchFaultStatus', 5);
    s.api.put(fault('xid79', { nodeName: NODE, devices: ['gpu-3'], fault: { type: 'Xid', xid: 79 } }));
    await until('the taint', () => s.health.taints().has('gpu-3'));
    s.faults.published(s.slices());
    await until('the status, once the API server takes it', () => {
      const st = (s.api.objects.get('xid79') as { status?: { writers?: Record<string, unknown> } }).status;
      return st?.writers?.[NODE] !== undefined;
    });
    const delays = lines
      .filter((l) => l.msg === 'writing the fault status failed; again later')
      .map((l) => l.retryInMs)
      .filter((d) => typeof d === 'number');
    // A failure while a retry waits (another report) is counted, not armed: the delays only grow.
    assert.equal(delays[0], 2);
    assert.ok(delays.length >= 3, `${delays.join(', ')} ms`);
    assert.ok(
      delays.every((d, i) => i === 0 || d > (delays[i - 1] ?? 0)),
      `${delays.join(', ')} ms`,
    );
    const st = (
      s.api.objects.get('xid79') as { status: { writers: object; hits?: number; nodesHit?: number } }
    ).status;
    assert.deepEqual(st.writers, { [NODE]: { nodes: 1, devices: 1 } });
    await s.stop();
  });

  /** A run in which gpu-0 was lost and tainted, stopped: its NVML state is what a restart finds. */
  async function runWithLostGpu() {
    const run = setup();
    await run.faults.startWithHealth();
    run.api.put(fault('lost', { nodeName: NODE, devices: ['gpu-0'], fault: { type: 'GpuLost' } }));
    await until('the taint', () => run.health.taints().size > 0);
    await run.stop();
    return run;
  }

  it('a fault deleted while the plugin was down: the restarted monitor starts on repaired NVML, nothing tainted', async () => {
    const first = await runWithLostGpu();

    // The plugin restarts on the same NVML state; the GpuFault was deleted meanwhile.
    const again = setup('0.5', first.model);
    const gpu0 = first.model.machine.gpus[0]?.uuid ?? '';
    assert.equal(again.model.nvml.faults(gpu0).length, 1, 'the previous run left the fault in NVML');
    await again.faults.startWithHealth();
    assert.equal(again.model.nvml.faults(gpu0).length, 0, 'repaired before the monitor started');
    await new Promise((r) => setTimeout(r, 300));
    assert.deepEqual([...again.health.taints().keys()], []);
    await again.stop();

    // The CRD gone altogether is the same answer: no fault exists.
    const third = await runWithLostGpu();
    const noCrd = setup('0.5', third.model);
    noCrd.api.installed = false;
    await noCrd.faults.startWithHealth();
    await new Promise((r) => setTimeout(r, 300));
    assert.deepEqual([...noCrd.health.taints().keys()], []);
    await noCrd.stop();
  });

  it('an API server that does not answer: the monitor starts anyway, on the faults the previous run left', async () => {
    const first = await runWithLostGpu();

    const again = setup('0.5', first.model);
    again.api.fail('listFaults', 1000);
    await again.faults.startWithHealth(50);
    await until('the taint from NVML', () => again.health.taints().size > 0);
    await again.stop();
  });

  it('a selector fault on another node, or one not started yet, does nothing here', async () => {
    const s = setup();
    s.faults.start();
    s.api.put(fault('other', { nodeSelector: { matchLabels: { pool: 'b' } }, fault: { type: 'GpuLost' } }));
    s.api.put(fault('later', { nodeName: NODE, start: '2999-01-01T00:00:00Z', fault: { type: 'GpuLost' } }));
    s.api.put(
      fault('mine', {
        nodeSelector: { matchLabels: { pool: 'a' } },
        indexes: [1],
        fault: { type: 'EccDoubleBit', count: 2 },
      }),
    );
    const gpus = s.model.machine.gpus.map((g) => g.uuid);
    await until('the ECC fault in NVML', () => s.model.nvml.faults(gpus[1] ?? '').length === 1);
    assert.deepEqual(
      gpus.map((u) => s.model.nvml.faults(u).length),
      [0, 1, 0, 0, 0, 0, 0, 0],
    );
    await s.stop();
  });

  it('release 25.12: the failed device leaves the slice and the status says removed', async () => {
    const s = setup('25.12');
    s.health.start();
    s.faults.start();
    s.api.put(fault('xid48', { nodeName: NODE, devices: ['gpu-2'], fault: { type: 'Xid', xid: 48 } }));
    await until('the taint', () => s.health.taints().has('gpu-2'));
    const sl = s.slices();
    assert.ok(!sl.flatMap((x) => x.spec.devices ?? []).some((d) => d.name === 'gpu-2'));
    s.faults.published(sl);
    await until('the status', () =>
      s.api.patches.some((p) => p.patch.status.nodes?.[NODE]?.devices[0]?.removed === true),
    );
    await s.stop();
  });
});
