import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { buildMachine } from '../../src/model/hardware/build.js';
import { MockNvml } from '../../src/model/nvml/mock.js';
import { MemoryMigStateStore } from '../../src/model/nvml/state.js';
import { FileMigStateStore } from '../../src/node/nvml/state-file.js';
import { NVML_RETURN, NvmlError } from '../../src/model/nvml/types.js';
import type { ResolvedProfile } from '../../src/model/profile/load.js';

const h100: ResolvedProfile = {
  name: 't',
  preset: null,
  spec: { gpus: [{ model: 'H100-SXM5-80GB', count: 2 }], mig: { mode: 'enabled' } },
};

function nvmlError(code: number) {
  return (e: unknown): boolean => e instanceof NvmlError && e.code === code;
}

describe('mock NVML', () => {
  const machine = buildMachine(h100, { nodeName: 'n', dynamicMig: false });

  it('reports the machine as NVML does', () => {
    const nvml = new MockNvml(machine, new MemoryMigStateStore());
    assert.equal(nvml.deviceGetCount(), 2);
    const d = nvml.deviceGetHandleByIndex(0);
    assert.equal(d.getName(), 'NVIDIA H100 80GB HBM3');
    assert.equal(d.getMemoryInfo().total, 81559n * 1024n * 1024n);
    assert.equal(d.getPciInfo().busId, '00000000:01:00.0');
    assert.equal(d.getPciInfo().pciDeviceId, 0x233010de);
    assert.deepEqual(d.getCudaComputeCapability(), [9, 0]);
    assert.equal(nvml.systemGetDriverVersion(), '580.126.20');
    assert.equal(nvml.systemGetCudaDriverVersion(), 13000);
    const info = d.getGpuInstanceProfileInfo(0);
    assert.equal(info.id, 19, 'the profile id, not the enum index');
    assert.deepEqual(
      d.getGpuInstancePossiblePlacements(d.getGpuInstanceProfileInfo(9)).map((p) => `${p.start}:${p.size}`),
      ['0:2', '2:2', '4:2', '6:2'],
    );
    assert.throws(() => d.getGpuInstanceProfileInfo(10), nvmlError(NVML_RETURN.ERROR_NOT_SUPPORTED));
    assert.throws(() => d.getGpuInstanceProfileInfo(99), nvmlError(NVML_RETURN.ERROR_INVALID_ARGUMENT));
  });

  it('creates and destroys GPU and compute instances, with nvidia-smi GI ids', () => {
    const nvml = new MockNvml(machine, new MemoryMigStateStore());
    const d = nvml.deviceGetHandleByIndex(1);
    const gi3g = d.createGpuInstanceWithPlacement(d.getGpuInstanceProfileInfo(2), { start: 4, size: 4 });
    assert.equal(gi3g.getInfo().id, 2);
    const gi1g = d.createGpuInstanceWithPlacement(d.getGpuInstanceProfileInfo(0), { start: 0, size: 1 });
    assert.equal(gi1g.getInfo().id, 7);
    assert.throws(
      () => d.createGpuInstanceWithPlacement(d.getGpuInstanceProfileInfo(3), { start: 0, size: 4 }),
      nvmlError(NVML_RETURN.ERROR_INSUFFICIENT_RESOURCES),
    );
    assert.throws(
      () => d.createGpuInstanceWithPlacement(d.getGpuInstanceProfileInfo(2), { start: 2, size: 4 }),
      nvmlError(NVML_RETURN.ERROR_INVALID_ARGUMENT),
    );
    const ci = gi3g.createComputeInstance(gi3g.getComputeInstanceProfileInfo(2, 0));
    assert.equal(d.getMigDevices().length, 1);
    assert.match(d.getMigDevices()[0]?.getUUID() ?? '', /^MIG-[0-9a-f]{8}-/);
    assert.throws(() => {
      gi3g.destroy();
    }, nvmlError(NVML_RETURN.ERROR_IN_USE));
    assert.throws(() => {
      d.setMigMode(0);
    }, nvmlError(NVML_RETURN.ERROR_IN_USE));
    ci.destroy();
    gi3g.destroy();
    gi1g.destroy();
    d.setMigMode(0);
    assert.deepEqual(d.getMigMode(), [0, 0]);
  });

  it('keeps MIG state in its file across restarts', () => {
    const path = join(mkdtempSync(join(tmpdir(), 'fakegpu-nvml-')), 'nvml-state.json');
    const first = new MockNvml(machine, new FileMigStateStore(path));
    const d = first.deviceGetHandleByIndex(0);
    const gi = d.createGpuInstanceWithPlacement(d.getGpuInstanceProfileInfo(4), { start: 0, size: 8 });
    gi.createComputeInstance(gi.getComputeInstanceProfileInfo(4, 0));
    const uuid = d.getMigDevices()[0]?.getUUID();
    const second = new MockNvml(machine, new FileMigStateStore(path));
    const again = second.deviceGetHandleByIndex(0).getMigDevices();
    assert.equal(again.length, 1);
    assert.equal(again[0]?.getUUID(), uuid);
    assert.equal((JSON.parse(readFileSync(path, 'utf8')) as { version: number }).version, 1);
  });

  it('refuses a state file written for another machine', () => {
    const path = join(mkdtempSync(join(tmpdir(), 'fakegpu-nvml-')), 'nvml-state.json');
    new MockNvml(machine, new FileMigStateStore(path));
    const other = buildMachine(h100, { nodeName: 'another-node', dynamicMig: false });
    assert.throws(() => new MockNvml(other, new FileMigStateStore(path)), /which this machine does not have/);
    writeFileSync(path, '{');
    assert.throws(
      () => new MockNvml(machine, new FileMigStateStore(path)),
      new RegExp(
        `${path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: the NVML state file is not valid JSON \\(.*\\); restart with --reset-checkpoint \\(env FAKEGPU_RESET_CHECKPOINT=true, chart value plugin.resetCheckpoint\\) to start empty; prepared claims are forgotten and what they held is swept$`,
      ),
    );
    writeFileSync(path, '{"version": 2, "gpus": {}}');
    assert.throws(
      () => new MockNvml(machine, new FileMigStateStore(path)),
      /the NVML state file is malformed \(version: .*\); restart with --reset-checkpoint/,
    );
    writeFileSync(path, '{"checksum": "sha256:00", "version": 1, "gpus": {}}');
    assert.throws(
      () => new MockNvml(machine, new FileMigStateStore(path)),
      /the NVML state file is damaged: its checksum "sha256:00" does not match its content; restart with --reset-checkpoint/,
    );
  });

  it('with reset, sets a damaged state file aside for the profile’s state and says why', () => {
    const path = join(mkdtempSync(join(tmpdir(), 'fakegpu-nvml-')), 'nvml-state.json');
    writeFileSync(path, '{"checksum": "sha256:00", "version": 1, "gpus": {}}');
    const store = new FileMigStateStore(path, true);
    const nvml = new MockNvml(machine, store);
    assert.match(store.resetFrom ?? '', /^the NVML state file is damaged: its checksum/);
    assert.equal(nvml.deviceGetHandleByIndex(0).getMigDevices().length, 0);
    // The profile's state is on disk now: the next start reads it without a reset.
    const next = new FileMigStateStore(path);
    assert.ok(next.load());
    assert.equal(next.resetFrom, null);
  });

  it('creates the static layout of a profile at boot, one full compute instance per GPU instance', () => {
    const m = buildMachine(
      {
        name: 't',
        preset: null,
        spec: { gpus: [{ model: 'A100-SXM4-40GB', mig: { layout: '1g.5gb x7' } }] },
      },
      { nodeName: 'n', dynamicMig: false },
    );
    const d = new MockNvml(m, new MemoryMigStateStore()).deviceGetHandleByIndex(0);
    const devs = d.getMigDevices();
    assert.deepEqual(
      devs.map((x) => x.getGpuInstanceId()),
      [7, 8, 9, 10, 11, 12, 13],
    );
    assert.equal(new Set(devs.map((x) => x.getUUID())).size, 7);
  });
});
