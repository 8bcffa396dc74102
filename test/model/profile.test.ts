import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FakegpuError, show } from '../../src/errors.js';
import { type RenderOptions, renderSlices } from '../../src/model/render.js';
import { buildMachine } from '../../src/model/hardware/build.js';
import { parseKubernetesVersion } from '../../src/kube/types/version.js';
import { PRESET_NAMES } from '../../src/model/preset/index.js';
import { mergeOverPreset, parseProfileText, type ResolvedProfile } from '../../src/model/profile/load.js';
import { resolveProfile } from '../../src/process/profile-file.js';
import type { ProfileSpec } from '../../src/model/preset/machine-spec.js';

function machineOf(spec: ProfileSpec, dynamicMig = false) {
  const profile: ResolvedProfile = { name: 't', preset: spec.preset ?? null, spec: mergeOverPreset(spec) };
  return buildMachine(profile, { nodeName: 'n1', dynamicMig });
}

function doc(spec: string): string {
  return `apiVersion: fakegpu.dev/v1alpha1\nkind: MachineProfile\nmetadata:\n  name: mine\nspec:\n${spec}`;
}

describe('MachineProfile parsing', () => {
  it('reads a profile that starts from a preset and overrides one GPU', () => {
    const p = parseProfileText(
      doc(
        '  preset: dgx-h100\n  driver: {version: "570.172.08"}\n  overrides:\n  - {index: 0, numaNode: 1, mig: {layout: "1g.10gb x7"}}\n',
      ),
      'f.yaml',
    );
    const m = machineOf(p.spec);
    assert.equal(m.gpus.length, 8);
    assert.equal(m.driverVersion, '570.172.08');
    assert.equal(m.cudaDriverVersion, 12080);
    assert.equal(m.gpus[0]?.numaNode, 1);
    assert.equal(m.gpus[0].migInstances.length, 7);
    assert.equal(m.gpus[1]?.migEnabled, false);
    assert.equal(m.gpus[0].addressingMode, null, 'no addressing-mode call before R580');
  });

  it('lists GPUs by model and count with generated addresses', () => {
    const m = machineOf({ gpus: [{ model: 'L4', count: 2 }, { model: 'NVIDIA A100-SXM4-80GB' }] });
    assert.deepEqual(
      m.gpus.map((g) => [g.busId, g.pcieRoot, g.minor, g.model.key]),
      [
        ['0000:01:00.0', 'pci0000:01', 0, 'L4'],
        ['0000:02:00.0', 'pci0000:02', 1, 'L4'],
        ['0000:03:00.0', 'pci0000:03', 2, 'A100-SXM4-80GB'],
      ],
    );
  });

  it('accepts nvidia-smi and lspci bus ID spellings', () => {
    const m = machineOf({
      gpus: [
        { model: 'T4', busId: '00000000:3B:00.0' },
        { model: 'T4', busId: '5e:00.0' },
      ],
    });
    assert.deepEqual(
      m.gpus.map((g) => g.busId),
      ['0000:3b:00.0', '0000:5e:00.0'],
    );
  });

  it('turns on MIG mode for Ampere GPUs under dynamic MIG unless told otherwise', () => {
    assert.equal(machineOf({ preset: 'dgx-a100' }, true).gpus[0]?.migEnabled, true);
    assert.equal(
      machineOf({ preset: 'dgx-a100', mig: { mode: 'disabled' } }, true).gpus[0]?.migEnabled,
      false,
    );
    assert.equal(machineOf({ preset: 'dgx-h100' }, true).gpus[0]?.migEnabled, false);
  });
});

/** Each bad input: the exact one-line message a user sees. */
describe('bad profiles', () => {
  const cases: [string, () => unknown, string][] = [
    [
      'unknown preset',
      () => resolveProfile('dgx-z9000'),
      '--profile: unknown preset "dgx-z9000"; known presets: dgx-a100, ',
    ],
    [
      'unknown model',
      () => machineOf({ gpus: [{ model: 'H300' }] }),
      'spec.gpus[0].model: unknown GPU model "H300"; known models: A100-SXM4-40GB, ',
    ],
    [
      'malformed bus ID',
      () => machineOf({ gpus: [{ model: 'T4', busId: '0000:3b:00' }] }),
      'spec.gpus[0].busId: "0000:3b:00" is not a PCI bus ID; expected DDDD:BB:DD.F in hex with device <= 1f and function <= 7, e.g. "0000:3b:00.0"',
    ],
    [
      'duplicate bus IDs',
      () =>
        machineOf({
          gpus: [
            { model: 'T4', busId: '0000:3b:00.0' },
            { model: 'T4', busId: '3B:00.0' },
          ],
        }),
      'spec.gpus[1].busId: duplicate bus ID "0000:3b:00.0"; spec.gpus[0].busId has it already',
    ],
    [
      'MIG on a GPU without MIG',
      () => machineOf({ gpus: [{ model: 'L40S', mig: { mode: 'enabled' } }] }),
      'spec.gpus[0].mig: L40S (NVIDIA L40S) does not support MIG',
    ],
    [
      'overlapping MIG placements',
      () => machineOf({ gpus: [{ model: 'H100-SXM5-80GB', mig: { layout: ['3g.40gb@4', '2g.20gb@4'] } }] }),
      'spec.gpus[0].mig.layout: H100-SXM5-80GB: 2g.20gb@4 (memory slices 4-5) overlaps 3g.40gb@4 (memory slices 4-7)',
    ],
    [
      'driver version that is not a version',
      () => machineOf({ gpus: [{ model: 'T4' }], driver: { version: '580.x' } }),
      'spec.driver.version: "580.x" is not a version; expected numbers separated by dots, e.g. "580.126.20"',
    ],
    [
      'CUDA version',
      () => machineOf({ gpus: [{ model: 'T4' }], driver: { cudaVersion: '13' } }),
      'spec.driver.cudaVersion: "13" is not a CUDA version; expected <major>.<minor>, e.g. "13.0"',
    ],
    [
      'override index',
      () => machineOf({ preset: 'aws-g4dn.xlarge', overrides: [{ index: 3, numaNode: 1 }] }),
      'spec.overrides[0].index: 3 is not a GPU index; this machine has GPUs 0 to 0',
    ],
    [
      'layout with MIG disabled',
      () => machineOf({ gpus: [{ model: 'A30', mig: { mode: 'disabled', layout: '1g.6gb' } }] }),
      'spec.gpus[0].mig.layout: a MIG layout needs MIG mode enabled, but mode is "disabled"',
    ],
    [
      'static layout with dynamic MIG',
      () => machineOf({ gpus: [{ model: 'A30', mig: { layout: '1g.6gb' } }] }, true),
      'spec.gpus[0].mig.layout: a static MIG layout cannot be combined with dynamic MIG',
    ],
    [
      'bus ID with count',
      () => machineOf({ gpus: [{ model: 'T4', count: 2, busId: '0000:3b:00.0' }] }),
      'spec.gpus[0].busId: a bus ID names one GPU but count is 2; list the GPUs one by one',
    ],
    [
      'bad root',
      () => machineOf({ gpus: [{ model: 'T4', pcieRoot: '0000:00' }] }),
      'spec.gpus[0].pcieRoot: "0000:00" is not a PCIe root; expected pci<domain>:<bus> in hex, e.g. "pci0000:00"',
    ],
    [
      'bad uuid',
      () => machineOf({ gpus: [{ model: 'T4', uuid: 'GPU-1234' }] }),
      'spec.gpus[0].uuid: "GPU-1234" is not a GPU UUID',
    ],
    [
      'duplicate minor',
      () =>
        machineOf({
          gpus: [
            { model: 'T4', minor: 1 },
            { model: 'T4', minor: 1 },
          ],
        }),
      'spec.gpus[1].minor: duplicate minor number "1"; spec.gpus[0].minor has it already',
    ],
    [
      'driver older than R525 without a CUDA version',
      () => machineOf({ gpus: [{ model: 'T4' }], driver: { version: '470.82.01' } }),
      'spec.driver.version: driver "470.82.01" is older than R525; give spec.driver.cudaVersion explicitly',
    ],
    [
      'UUID with count',
      () =>
        machineOf({ gpus: [{ model: 'T4', count: 2, uuid: 'GPU-00000000-0000-0000-0000-000000000000' }] }),
      'spec.gpus[0].uuid: a UUID names one GPU but count is 2',
    ],
    [
      'duplicate NIC bus ID',
      () =>
        machineOf({
          gpus: [{ model: 'T4' }],
          nics: [
            { ifName: 'a', busId: '0000:10:00.0', model: 'ConnectX-7' },
            { ifName: 'b', busId: '10:00.0', model: 'ConnectX-7' },
          ],
        }),
      'spec.nics[1].busId: duplicate bus ID "0000:10:00.0"; spec.nics[0].busId has it already',
    ],
    [
      'duplicate NIC interface',
      () =>
        machineOf({
          gpus: [{ model: 'T4' }],
          nics: [
            { ifName: 'eth0', busId: '0000:10:00.0', model: 'ConnectX-7' },
            { ifName: 'eth0', busId: '0000:11:00.0', model: 'ConnectX-7' },
          ],
        }),
      'spec.nics[1].ifName: duplicate interface name "eth0"',
    ],
    [
      'unknown NIC model',
      () =>
        machineOf({ gpus: [{ model: 'T4' }], nics: [{ ifName: 'a', busId: '0000:10:00.0', model: 'CX7' }] }),
      'spec.nics[0].model: unknown NIC model "CX7"; known models: ConnectX-6, ConnectX-7, ConnectX-8, ConnectX VF, EFA, EFA v2, EFA v3, ENA, gVNIC, Azure MANA',
    ],
    [
      'interface name on an RDMA-only function',
      () =>
        machineOf({
          gpus: [{ model: 'T4' }],
          nics: [{ ifName: 'efa0', busId: '0000:10:1b.0', model: 'EFA' }],
        }),
      'spec.nics[0].ifName: a EFA has no network interface (it is an RDMA-only function); remove ifName',
    ],
    [
      'netdev without a name',
      () => machineOf({ gpus: [{ model: 'T4' }], nics: [{ busId: '0000:10:01.0', model: 'ENA' }] }),
      'spec.nics[0].ifName: a ENA has a network interface: give its name',
    ],
    [
      'RDMA device on a NIC without RDMA',
      () =>
        machineOf({
          gpus: [{ model: 'T4' }],
          nics: [{ ifName: 'eth0', busId: '0000:10:01.0', model: 'ENA', rdmaDevice: 'rdmap16s1' }],
        }),
      'spec.nics[0].rdmaDevice: a ENA has no RDMA device; remove rdmaDevice',
    ],
    [
      'duplicate RDMA device name',
      () =>
        machineOf({
          gpus: [{ model: 'T4' }],
          nics: [
            { busId: '0000:10:1b.0', model: 'EFA', rdmaDevice: 'rdmap16s27' },
            { busId: '0000:20:1b.0', model: 'EFA', rdmaDevice: 'rdmap16s27' },
          ],
        }),
      'spec.nics[1].rdmaDevice: duplicate RDMA device name "rdmap16s27"; spec.nics[0].rdmaDevice has it already',
    ],
    [
      'NIC on a GPU bus ID',
      () =>
        machineOf({
          gpus: [{ model: 'T4', busId: '0000:10:00.0' }],
          nics: [{ ifName: 'eth0', busId: '0000:10:00.0', model: 'ConnectX-7' }],
        }),
      'spec.nics[0].busId: "0000:10:00.0" is spec.gpus[0]\'s bus ID already',
    ],
    [
      'bad MAC',
      () =>
        parseProfileText(
          doc(
            '  preset: dgx-h100\n  nics:\n  - {ifName: e, busId: "0000:10:00.0", model: ConnectX-7, mac: "AA:BB"}\n',
          ),
          'f.yaml',
        ),
      'spec.nics[0].mac: must be six lower-case hex pairs, e.g. "0e:96:fe:e8:a3:f5" (got "AA:BB")',
    ],
    [
      'no GPUs',
      () => machineOf({}),
      'spec.gpus: no GPUs: list GPUs by model and count, or start from a preset with spec.preset',
    ],
    [
      'unknown field',
      () => parseProfileText(doc('  gpu: []\n'), 'f.yaml'),
      'spec: unknown field "gpu"; allowed fields: preset, models, description, driver, addressingMode, gpus, mig, overrides, nics',
    ],
    [
      'empty file',
      () => parseProfileText('', 'f.yaml'),
      'f.yaml: is empty: no YAML document, or only comments',
    ],
    [
      'only comments',
      () => parseProfileText('# a profile to come\n', 'f.yaml'),
      'f.yaml: is empty: no YAML document, or only comments',
    ],
    [
      'wrong kind',
      () => parseProfileText(doc('  preset: dgx-h100\n').replace('MachineProfile', 'Machine'), 'f.yaml'),
      'kind: must be "MachineProfile" (got "Machine")',
    ],
    [
      'negative count',
      () => parseProfileText(doc('  gpus: [{model: T4, count: 0}]\n'), 'f.yaml'),
      'spec.gpus[0].count: Too small: expected number to be >=1 (got 0)',
    ],
    [
      'bad addressing mode',
      () => parseProfileText(doc('  preset: dgx-h100\n  addressingMode: hmm\n'), 'f.yaml'),
      'spec.addressingMode: Invalid option: expected one of "HMM"|"ATS"|"None"|"Unsupported" (got "hmm")',
    ],
    ['YAML syntax', () => parseProfileText('spec: [\n', 'f.yaml'), 'f.yaml: not valid YAML at line'],
    [
      'missing file',
      () => resolveProfile('/nonexistent/p.yaml'),
      '--profile: cannot read profile file "/nonexistent/p.yaml" (ENOENT)',
    ],
  ];
  for (const [name, run, message] of cases) {
    it(name, () => {
      assert.throws(run, (e: unknown) => {
        assert.ok(e instanceof Error);
        assert.ok(e.message.startsWith(message), `got: ${e.message}`);
        assert.ok(!e.message.includes('\n'), 'one line');
        return true;
      });
    });
  }
});

/** Input that used to get a stack trace, or to pass here and be refused by the API server later. */
describe('input at the limits: one line naming the field, the value and what is allowed', () => {
  const exact = (run: () => unknown, message: string): void => {
    assert.throws(run, (e: unknown) => {
      assert.ok(e instanceof FakegpuError, `not a FakegpuError: ${String(e)}`);
      assert.equal(e.message, message);
      return true;
    });
  };

  it('YAML whose aliases expand more than 100 times', () => {
    const bomb = `  description: &a x\n  gpus: [${Array(101).fill('{model: *a}').join(', ')}]\n`;
    exact(
      () => parseProfileText(doc(bomb), 'f.yaml'),
      'f.yaml: not valid YAML: more than 100 alias expansions (*name); at most 100 are allowed, as a guard against alias bombs; write the values out',
    );
  });

  it('YAML alias without an anchor', () => {
    exact(
      () => parseProfileText(doc('  preset: *nope\n'), 'f.yaml'),
      'f.yaml: not valid YAML: Unresolved alias (the anchor must be set before the alias): nope',
    );
  });

  it('metadata.name of a megabyte: refused at 253 characters, quoted cut', () => {
    const name = 'n'.repeat(1_000_000);
    exact(
      () => parseProfileText(doc('  preset: dgx-h100\n').replace('name: mine', `name: ${name}`), 'f.yaml'),
      `metadata.name: Too big: expected string to have <=253 characters (got "${'n'.repeat(80)}"… (1000000 characters))`,
    );
  });

  it('a long value in any message is cut at 80 characters with its length', () => {
    exact(
      () => resolveProfile('x'.repeat(5000)),
      `--profile: unknown preset "${'x'.repeat(80)}"… (5000 characters); known presets: ${PRESET_NAMES.join(', ')}`,
    );
    exact(
      () => parseProfileText(doc(`  gpus: [{model: T4, ${'k'.repeat(300)}: 1}]\n`), 'f.yaml'),
      `spec.gpus[0]: unknown field "${'k'.repeat(80)}"… (300 characters); allowed fields: model, count, busId, pcieRoot, numaNode, minor, uuid, mig, nvmlEvents`,
    );
  });
});

describe('versions validate exactly when they render', () => {
  const exact = (run: () => unknown, message: string): void => {
    assert.throws(run, (e: unknown) => e instanceof FakegpuError && e.message === message);
  };

  it('driver.version with a part too large to print as digits', () => {
    exact(
      () => machineOf({ gpus: [{ model: 'T4' }], driver: { version: '99999999999999999999999.1.1' } }),
      'spec.driver.version: "99999999999999999999999.1.1" has a number above 9007199254740991; each part of a version must be at most that, e.g. "580.126.20"',
    );
  });

  it('cudaVersion beyond what NVML returns as an int', () => {
    exact(
      () => machineOf({ gpus: [{ model: 'T4' }], driver: { cudaVersion: '99999999999999999999999.0' } }),
      'spec.driver.cudaVersion: "99999999999999999999999.0" is not a CUDA version NVML can report; the major must be at most 2147483 (NVML returns major*1000 + minor*10 as a 32-bit int), e.g. "13.0"',
    );
    assert.equal(
      machineOf({ gpus: [{ model: 'T4' }], driver: { cudaVersion: '2147483.9' } }).cudaDriverVersion,
      2147483090,
    );
  });

  it('API server versions as real servers report them', () => {
    assert.deepEqual(parseKubernetesVersion('v1.34.2-eks-113cf36', 'f'), { major: 1, minor: 34, patch: 2 });
    assert.deepEqual(parseKubernetesVersion('v1.33.1+k3s1', 'f'), { major: 1, minor: 33, patch: 1 });
    assert.deepEqual(parseKubernetesVersion('1.35.0-rc.1', 'f'), { major: 1, minor: 35, patch: 0 });
    assert.deepEqual(parseKubernetesVersion('1.36', 'f'), { major: 1, minor: 36, patch: 0 });
    exact(
      () => parseKubernetesVersion('580.126.20.1', '--kubernetes-version'),
      '--kubernetes-version: "580.126.20.1" is not a Kubernetes version; expected <major>.<minor>[.<patch>] as the API server reports it, e.g. "1.35.0" or "v1.34.2-eks-113cf36"',
    );
  });
});

describe('machines the real driver can describe', () => {
  const exact = (run: () => unknown, message: string): void => {
    assert.throws(run, (e: unknown) => {
      assert.ok(e instanceof FakegpuError, `not a FakegpuError: ${String(e)}`);
      assert.equal(e.message, message);
      return true;
    });
  };
  const nic = (extra: string): string =>
    doc(
      `  gpus: [{model: T4}]\n  nics: [{model: ConnectX-7, busId: "0000:20:00.0", ifName: eth1${extra}}]\n`,
    );

  it('10,048 GPUs: refused before anything is built', () => {
    exact(
      () => machineOf({ gpus: Array.from({ length: 157 }, () => ({ model: 'T4', count: 64 })) }),
      "spec.gpus: 10048 GPUs; a node has at most 255, as NVIDIA's driver gives GPUs the device minors 0-254 (minor 255 is /dev/nvidiactl)",
    );
  });

  it('255 GPUs placed automatically end at bus ff and minor 254, around given bus IDs', () => {
    const m = machineOf({
      gpus: [
        { model: 'T4', busId: '0000:02:00.0' },
        { model: 'T4', count: 64 },
        { model: 'T4', count: 64 },
        { model: 'T4', count: 64 },
        { model: 'T4', count: 62 },
      ],
    });
    assert.equal(m.gpus.length, 255);
    assert.equal(new Set(m.gpus.map((g) => g.busId)).size, 255);
    assert.deepEqual([m.gpus[254]?.busId, m.gpus[254]?.minor], ['0000:ff:00.0', 254]);
    assert.ok(m.gpus.every((g) => /^0000:[0-9a-f]{2}:00\.0$/.test(g.busId)));
  });

  it('256 GPUs: the 256th would need bus 0x100 and minor 255', () => {
    exact(
      () => machineOf({ gpus: [1, 2, 3, 4].map(() => ({ model: 'T4', count: 64 })) }),
      "spec.gpus: 256 GPUs; a node has at most 255, as NVIDIA's driver gives GPUs the device minors 0-254 (minor 255 is /dev/nvidiactl)",
    );
  });

  it('minor 255 is /dev/nvidiactl', () => {
    exact(
      () => parseProfileText(doc('  gpus: [{model: T4, minor: 255}]\n'), 'f.yaml'),
      'spec.gpus[0].minor: Too big: expected number to be <=254 (got 255)',
    );
  });

  it('NIC interface names as Linux allows them', () => {
    exact(
      () => parseProfileText(nic('x'.repeat(61)), 'f.yaml'),
      `spec.nics[0].ifName: must be a Linux interface name: 1 to 15 bytes, not "." or "..", without "/", ":" or whitespace (got "eth1${'x'.repeat(61)}")`,
    );
    exact(
      () => parseProfileText(nic(':0'), 'f.yaml'),
      'spec.nics[0].ifName: must be a Linux interface name: 1 to 15 bytes, not "." or "..", without "/", ":" or whitespace (got "eth1:0")',
    );
    assert.equal(
      parseProfileText(nic('x'.repeat(11)), 'f.yaml').spec.nics?.[0]?.ifName,
      `eth1${'x'.repeat(11)}`,
    );
  });

  it('RDMA device names within the kernel limit', () => {
    exact(
      () => parseProfileText(nic(`, rdmaDevice: ${'m'.repeat(64)}`), 'f.yaml'),
      `spec.nics[0].rdmaDevice: must be an RDMA device name: 1 to 63 bytes, without "/" or whitespace (got "${'m'.repeat(64)}")`,
    );
  });

  it('IPv4 addresses with their prefix', () => {
    exact(
      () => parseProfileText(nic(', ipv4: 999.999.999.999/99'), 'f.yaml'),
      'spec.nics[0].ipv4: must be an IPv4 address with prefix: four numbers from 0 to 255 and a prefix length from 0 to 32, e.g. "10.0.0.5/24" (got "999.999.999.999/99")',
    );
    assert.equal(
      parseProfileText(nic(', ipv4: 255.0.10.1/32'), 'f.yaml').spec.nics?.[0]?.ipv4,
      '255.0.10.1/32',
    );
  });
});

/** Profiles that validated, and rendered slices the API server refuses or stores otherwise. */
describe('accepted but wrong: refused in one line', () => {
  const exact = (run: () => unknown, message: string): void => {
    assert.throws(run, (e: unknown) => {
      assert.ok(e instanceof FakegpuError, `not a FakegpuError: ${String(e)}`);
      assert.equal(e.message, message);
      return true;
    });
  };
  const custom = (extra: string): string =>
    doc(
      `  models: [{key: Z9, name: "${extra}", architecture: Hopper, computeCapability: "9.0", memoryMiB: 1024, pciDeviceId: "2329"}]\n  gpus: [{model: Z9}]\n`,
    );

  it('a custom model name over 64 bytes, the limit of the productName attribute', () => {
    const name = `NVIDIA ${'é'.repeat(29)}`; // 65 bytes in 36 characters
    exact(
      () => parseProfileText(custom(name), 'f.yaml'),
      `spec.models[0].name: must be at most 64 bytes: it is published as the productName attribute, and the API server refuses longer string attributes (got ${JSON.stringify(name)})`,
    );
    assert.equal(
      parseProfileText(custom(name.slice(0, -1)), 'f.yaml').spec.models?.[0]?.name,
      name.slice(0, -1),
    );
  });

  it('memory whose bytes do not fit the int64 of a quantity', () => {
    exact(
      () =>
        parseProfileText(
          custom('NVIDIA Z9').replace('memoryMiB: 1024', 'memoryMiB: 8796093022208'),
          'f.yaml',
        ),
      'spec.models[0].memoryMiB: must be at most 8796093022207 (2^43 - 1): the memory capacity in bytes must fit a signed 64-bit integer (got 8796093022208)',
    );
  });

  it('two overrides of one GPU', () => {
    exact(
      () =>
        parseProfileText(
          doc(
            '  preset: dgx-h100\n  overrides: [{index: 2, numaNode: 1}, {index: 3}, {index: 2, numaNode: 0}]\n',
          ),
          'f.yaml',
        ),
      'spec.overrides[2].index: duplicate override of GPU 2; spec.overrides[0] changes it already: merge the two (got 2)',
    );
  });

  it('more overrides or models than a node has GPUs', () => {
    const many = (item: string): string => `[${Array.from({ length: 256 }, () => item).join(', ')}]`;
    assert.throws(
      () => parseProfileText(doc(`  preset: dgx-h100\n  overrides: ${many('{index: 0}')}\n`), 'f.yaml'),
      (e: unknown) =>
        e instanceof FakegpuError &&
        /^spec\.overrides: 256 items; at most 255 are allowed, one per GPU of a node at most \(got \[/.test(
          e.message,
        ),
    );
    assert.throws(
      () =>
        parseProfileText(
          doc(
            `  preset: dgx-h100\n  models: ${many('{key: Z, name: Z, architecture: Hopper, computeCapability: "9.0", memoryMiB: 1, pciDeviceId: "2329"}')}\n`,
          ),
          'f.yaml',
        ),
      (e: unknown) =>
        e instanceof FakegpuError &&
        /^spec\.models: 256 items; at most 255 are allowed, one per GPU of a node at most \(got \[/.test(
          e.message,
        ),
    );
  });

  it('two NICs with one MAC', () => {
    exact(
      () =>
        machineOf({
          gpus: [{ model: 'T4' }],
          nics: [
            { ifName: 'a', busId: '0000:10:00.0', model: 'ConnectX-7', mac: '0e:96:fe:e8:a3:f5' },
            { ifName: 'b', busId: '0000:11:00.0', model: 'ConnectX-7', mac: '0e:96:fe:e8:a3:f5' },
          ],
        }),
      'spec.nics[1].mac: duplicate MAC address "0e:96:fe:e8:a3:f5"; spec.nics[0].mac has it already',
    );
  });

  it('a GPU or NIC under a PCIe root of another PCI domain', () => {
    exact(
      () => machineOf({ gpus: [{ model: 'T4', busId: '0000:3b:00.0', pcieRoot: 'pci0001:3a' }] }),
      'spec.gpus[0].pcieRoot: "pci0001:3a" is in PCI domain 0001 but the bus ID "0000:3b:00.0" is in domain 0000; a device sits under a root of its own domain, e.g. "pci0000:00"',
    );
    exact(
      () =>
        machineOf({
          gpus: [{ model: 'T4' }],
          nics: [{ ifName: 'a', busId: '0002:10:00.0', model: 'ConnectX-7', pcieRoot: 'pci0000:10' }],
        }),
      'spec.nics[0].pcieRoot: "pci0000:10" is in PCI domain 0000 but the bus ID "0002:10:00.0" is in domain 0002; a device sits under a root of its own domain, e.g. "pci0002:00"',
    );
    assert.equal(
      machineOf({ gpus: [{ model: 'T4', busId: '0008:3b:00.0', pcieRoot: 'PCI0008:3A' }] }).gpus[0]?.pcieRoot,
      'pci0008:3a',
    );
  });

  const renderOpts = (more: Partial<RenderOptions>): RenderOptions => ({
    nodeName: 'n1',
    dynamicMig: false,
    driverName: 'gpu.nvidia.com',
    kubernetesVersion: { major: 1, minor: 37, patch: 0 },
    release: '0.5',
    nics: { driverName: 'dra.net', standardNumaNode: false },
    ...more,
  });

  it('a GPU driver of the NIC driver name: two publishers of one pool', () => {
    exact(
      () => renderSlices(resolveProfile('dgx-h100'), renderOpts({ driverName: 'dra.net' })),
      '--driver-name: "dra.net" is the NIC slices\' driver name too (--nic-driver-name): the GPU and NIC slices would be one pool of two conflicting publishers; give each its own name, or --no-nics',
    );
    assert.ok(
      renderSlices(resolveProfile('dgx-h100'), renderOpts({ driverName: 'dra.net', nics: undefined })),
    );
  });

  it('a Kubernetes release without resource.k8s.io/v1', () => {
    exact(
      () =>
        renderSlices(
          resolveProfile('dgx-h100'),
          renderOpts({ kubernetesVersion: { major: 1, minor: 20, patch: 0 } }),
        ),
      '--kubernetes-version: 1.20.0 has no resource.k8s.io/v1, the API fakegpu renders ResourceSlices in; give 1.34 or later',
    );
    exact(
      () =>
        renderSlices(
          resolveProfile('dgx-h100'),
          renderOpts({ kubernetesVersion: { major: 1, minor: 33, patch: 9 } }),
        ),
      '--kubernetes-version: 1.33.9 has no resource.k8s.io/v1, the API fakegpu renders ResourceSlices in; give 1.34 or later',
    );
    assert.ok(
      renderSlices(
        resolveProfile('dgx-h100'),
        renderOpts({ kubernetesVersion: { major: 1, minor: 34, patch: 0 } }),
      ),
    );
  });

  it('NaN and Infinity shown as such, and an empty field as ""', () => {
    exact(
      () => parseProfileText(doc('  gpus: [{model: T4, numaNode: .nan}]\n'), 'f.yaml'),
      'spec.gpus[0].numaNode: Invalid input: expected number, received NaN (got NaN)',
    );
    exact(
      () => parseProfileText(doc('  gpus: [{model: T4, numaNode: .inf}]\n'), 'f.yaml'),
      'spec.gpus[0].numaNode: Invalid input: expected number, received Infinity (got Infinity)',
    );
    assert.equal(show([1, -Infinity, 2n]), '[1,"-Infinity","2"]');
    exact(() => resolveProfile('', ''), `"": unknown preset ""; known presets: ${PRESET_NAMES.join(', ')}`);
  });
});
