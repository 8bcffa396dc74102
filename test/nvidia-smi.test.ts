import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { NVIDIA_SMI } from '../src/nvidia-smi/script.js';
import { deviceView, type SmiGpu } from '../src/nvidia-smi/views.js';

const base: SmiGpu = {
  name: 'NVIDIA H100 80GB HBM3',
  uuid: 'GPU-11111111-2222-3333-4444-555555555555',
  busId: '00000000:1B:00.0',
  memoryMiB: 81559,
  driverVersion: '580.126.20',
  cudaVersion: '13.0',
  computeCap: '9.0',
  powerLimitW: 700,
  minor: 0,
  architecture: 'Hopper',
  migMode: 'Disabled',
  pciDeviceId: 0x2330,
  pciSubsystemId: 0x16c1,
};

function setup(
  views: ReturnType<typeof deviceView>[],
): (...args: string[]) => { code: number | null; out: string } {
  const dir = mkdtempSync(join(tmpdir(), 'fakegpu-smi-'));
  for (const v of views) {
    mkdirSync(join(dir, 'devices', v.dir), { recursive: true });
    for (const [f, t] of Object.entries(v.files)) writeFileSync(join(dir, 'devices', v.dir, f), t);
  }
  writeFileSync(join(dir, 'nvidia-smi'), NVIDIA_SMI, { mode: 0o755 });
  return (...args) => {
    // busybox in the test image stands behind these utilities; the host's sh, sed and awk behave alike.
    const r = spawnSync('sh', [join(dir, 'nvidia-smi'), ...args], {
      encoding: 'utf8',
      env: { ...process.env, FAKEGPU_DEVICES_DIR: join(dir, 'devices') },
    });
    return { code: r.status, out: r.stdout };
  };
}

describe('fake nvidia-smi', () => {
  const second: SmiGpu = {
    ...base,
    uuid: 'GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee',
    busId: '00000000:43:00.0',
    minor: 1,
  };
  const smi = setup([deviceView('gpu-1', second, null), deviceView('gpu-0', base, null)]);

  it('-L lists the GPUs in bus order, numbered from 0', () => {
    assert.deepEqual(smi('-L'), {
      code: 0,
      out: `GPU 0: NVIDIA H100 80GB HBM3 (UUID: ${base.uuid})\nGPU 1: NVIDIA H100 80GB HBM3 (UUID: ${second.uuid})\n`,
    });
  });

  it('--query-gpu prints CSV with units, or without header and units', () => {
    assert.equal(
      smi('--query-gpu=index,name,memory.total,pci.bus_id', '--format=csv').out,
      'index, name, memory.total [MiB], pci.bus_id\n0, NVIDIA H100 80GB HBM3, 81559 MiB, 00000000:1B:00.0\n1, NVIDIA H100 80GB HBM3, 81559 MiB, 00000000:43:00.0\n',
    );
    assert.equal(
      smi('--query-gpu=uuid,memory.total', '--format=csv,noheader,nounits').out,
      `${base.uuid}, 81559\n${second.uuid}, 81559\n`,
    );
    const bad = smi('--query-gpu=flux_capacitor', '--format=csv');
    assert.equal(bad.code, 2);
    assert.match(bad.out, /Field "flux_capacitor" is not a valid field to query/);
  });

  it('prints the summary table and -q details', () => {
    const table = smi().out;
    const box = table.split('\n').filter((l) => l.startsWith('|') || l.startsWith('+'));
    assert.deepEqual(
      [...new Set(box.map((l) => l.length))],
      [91],
      'every line of the box is as wide as nvidia-smi draws it',
    );
    assert.match(table, /Driver Version: 580\.126\.20 +CUDA Version: 13\.0/);
    assert.match(table, /\| +0 +NVIDIA H100 80GB HBM3 +On +\| +00000000:1B:00\.0 Off \|/);
    assert.match(table, /0MiB \/ {2}81559MiB/);
    const q = smi('-q').out;
    assert.match(q, /Attached GPUs +: 2/);
    assert.match(q, new RegExp(`GPU UUID +: ${base.uuid}`));
    assert.match(q, /Device Id +: 0x233010DE/);
  });

  it('lists MIG devices under their parent', () => {
    const parent: SmiGpu = { ...base, migMode: 'Enabled' };
    const mig = (n: number, ci: number) => ({
      profile: '1g.10gb',
      uuid: `MIG-0000000${n}-0000-0000-0000-000000000000`,
      memoryMiB: 9984,
      gpuInstanceId: 7 + n,
      computeInstanceId: ci,
      multiprocessors: 16,
    });
    const s = setup([
      deviceView('gpu-0-mig-1g10gb-19-0', parent, mig(0, 0)),
      deviceView('gpu-0-mig-1g10gb-19-1', parent, mig(1, 0)),
    ]);
    assert.equal(
      s('-L').out,
      `GPU 0: NVIDIA H100 80GB HBM3 (UUID: ${base.uuid})\n  MIG 1g.10gb      Device 0: (UUID: MIG-00000000-0000-0000-0000-000000000000)\n  MIG 1g.10gb      Device 1: (UUID: MIG-00000001-0000-0000-0000-000000000000)\n`,
    );
  });

  it('says so when the container was given no GPU', () => {
    const none = setup([]);
    assert.deepEqual(none('-L'), { code: 6, out: 'No devices were found\n' });
  });
});
