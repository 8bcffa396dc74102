import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { NVIDIA_SMI } from '../../src/node/nvidia-smi/script.js';
import { deviceView, type SmiGpu } from '../../src/node/nvidia-smi/views.js';

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

describe('fake nvidia-smi with faults', () => {
  const lostLine = (i: number, bus: string) =>
    `Unable to determine the device handle for GPU${i}: ${bus}: GPU is lost.  Reboot the system to recover this GPU\n`;
  const sick = (g: SmiGpu, lost: boolean, correctable = 0, uncorrectable = 0): SmiGpu => ({
    ...g,
    health: { lost, ecc: { correctable, uncorrectable } },
  });
  const other: SmiGpu = {
    ...base,
    uuid: 'GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee',
    busId: '00000000:43:00.0',
    minor: 1,
  };

  it('a lost GPU alone: only its error line, in every mode, and exit code 15', () => {
    const smi = setup([deviceView('gpu-0', sick(base, true), null)]);
    const only = { code: 15, out: lostLine(0, '0000:1B:00.0') };
    assert.deepEqual(smi(), only);
    assert.deepEqual(smi('-L'), only);
    assert.deepEqual(smi('-q'), only);
    assert.deepEqual(smi('--query-gpu=index,uuid', '--format=csv'), only);
  });

  it('a lost GPU among two: its error line first, the other under its own index, exit code 0', () => {
    const smi = setup([deviceView('gpu-0', sick(base, true), null), deviceView('gpu-1', other, null)]);
    const first = lostLine(0, '0000:1B:00.0');
    assert.deepEqual(smi('-L'), {
      code: 0,
      out: `${first}GPU 1: NVIDIA H100 80GB HBM3 (UUID: ${other.uuid})\n`,
    });
    assert.deepEqual(smi('--query-gpu=index,uuid', '--format=csv'), {
      code: 0,
      out: `${first}index, uuid\n1, ${other.uuid}\n`,
    });
    const table = smi();
    assert.equal(table.code, 0);
    assert.ok(table.out.startsWith(first), table.out);
    assert.match(table.out, /\| +1 +NVIDIA H100 80GB HBM3 +On +\| +00000000:43:00\.0 Off \|/);
    assert.doesNotMatch(table.out, /00000000:1B:00\.0/);
    const q = smi('-q');
    assert.ok(q.out.startsWith(first), q.out);
    assert.match(q.out, /Attached GPUs +: 2/);
    assert.match(q.out, new RegExp(`GPU UUID +: ${other.uuid}`));
    assert.doesNotMatch(q.out, new RegExp(base.uuid));
  });

  it('the second GPU lost: numbering of the first unchanged, a MIG device of the lost one not listed', () => {
    const parent: SmiGpu = sick({ ...other, migMode: 'Enabled' }, true);
    const mig = {
      profile: '1g.10gb',
      uuid: 'MIG-00000000-0000-0000-0000-000000000000',
      memoryMiB: 9984,
      gpuInstanceId: 9,
      computeInstanceId: 0,
      multiprocessors: 16,
    };
    const smi = setup([deviceView('gpu-0', base, null), deviceView('gpu-1-mig-1g10gb-9-0', parent, mig)]);
    assert.deepEqual(smi('-L'), {
      code: 0,
      out: `${lostLine(1, '0000:43:00.0')}GPU 0: NVIDIA H100 80GB HBM3 (UUID: ${base.uuid})\n`,
    });
    assert.doesNotMatch(smi('-q').out, /MIG Devices/);
  });

  it('ECC errors of an Ampere-or-later GPU: -q counters, a pending remapped row, the table column, --query-gpu', () => {
    const smi = setup([deviceView('gpu-0', sick(base, false, 3, 2), null)]);
    const q = smi('-q').out;
    const counters = [
      '            SRAM Correctable              : 0',
      '            SRAM Uncorrectable Parity     : 0',
      '            SRAM Uncorrectable SEC-DED    : 0',
      '            DRAM Correctable              : 3',
      '            DRAM Uncorrectable            : 2',
    ];
    const expected = [
      '    ECC Mode',
      '        Current                           : Enabled',
      '        Pending                           : Enabled',
      '    ECC Errors',
      '        Volatile',
      ...counters,
      '        Aggregate',
      ...counters,
      '            SRAM Threshold Exceeded       : No',
      '        Aggregate Uncorrectable SRAM Sources',
      '            SRAM L2                       : 0',
      '            SRAM SM                       : 0',
      '            SRAM Microcontroller          : 0',
      '            SRAM PCIE                     : 0',
      '            SRAM Other                    : 0',
      '    Retired Pages',
      '        Single Bit ECC                    : N/A',
      '        Double Bit ECC                    : N/A',
      '        Pending Page Blacklist            : N/A',
      '    Remapped Rows',
      '        Correctable Error                 : 0',
      '        Uncorrectable Error               : 2',
      '        Pending                           : Yes',
      '        Remapping Failure Occurred        : No',
      '    Power Readings',
    ].join('\n');
    assert.ok(q.includes(`        Free                              : 81559 MiB\n${expected}\n`), q);
    assert.ok(
      smi().out.includes('|   00000000:1B:00.0 Off |                    2 |\n'),
      'the count goes in the Volatile Uncorr. ECC column, as wide as before',
    );
    assert.equal(
      smi(
        '--query-gpu=ecc.errors.corrected.volatile.total,ecc.errors.uncorrected.volatile.total,ecc.errors.uncorrected.aggregate.total',
        '--format=csv,noheader',
      ).out,
      '3, 2, 2\n',
    );
  });

  it('ECC errors of a Turing GPU: retired pages, pending, and no row remapper', () => {
    const t4: SmiGpu = { ...base, name: 'Tesla T4', architecture: 'Turing' };
    const q = setup([deviceView('gpu-0', sick(t4, false, 0, 1), null)])('-q').out;
    assert.ok(
      q.includes(
        [
          '            DRAM Correctable              : 0',
          '            DRAM Uncorrectable            : 1',
          '    Retired Pages',
          '        Single Bit ECC                    : 0',
          '        Double Bit ECC                    : 1',
          '        Pending Page Blacklist            : Yes',
          '    Remapped Rows                         : N/A',
          '    Power Readings',
        ].join('\n'),
      ),
      q,
    );
    assert.doesNotMatch(q, /SRAM Uncorrectable Parity/);
  });

  it('a healthy GPU with a health record shows zero counters and nothing pending', () => {
    const q = setup([deviceView('gpu-0', sick(base, false), null)])('-q');
    assert.equal(q.code, 0);
    assert.match(q.out, /DRAM Uncorrectable +: 0\n/);
    assert.match(q.out, /Remapped Rows\n(.*\n){2} +Pending +: No\n/);
  });

  it('-q without a health record has no ECC sections', () => {
    assert.doesNotMatch(deviceView('gpu-0', base, null).files['q'] ?? '', /ECC|Retired|Remapped/);
  });
});
