import type { NicEntry } from '../machine-spec.js';
import type { Source } from '../../catalog/types.js';
import type { InstanceSize, Preset, PresetAspect } from '../types.js';
import {
  ec2,
  family,
  gpus,
  inferred,
  nic,
  noNics,
  r580,
  seen,
  slot,
  vmNuma,
  type FamilySize,
  type Slot,
} from './parts.js';

const P4D_SLOTS = [
  slot('0000:10:1c.0', 'pci0000:10', 0),
  slot('0000:10:1d.0', 'pci0000:10', 0),
  slot('0000:20:1c.0', 'pci0000:20', 0),
  slot('0000:20:1d.0', 'pci0000:20', 0),
  slot('0000:90:1c.0', 'pci0000:90', 1),
  slot('0000:90:1d.0', 'pci0000:90', 1),
  slot('0000:a0:1c.0', 'pci0000:a0', 1),
  slot('0000:a0:1d.0', 'pci0000:a0', 1),
];
const efa = { speedGbps: 100 };
const ena = { speedGbps: 100 };
const P4D_NICS: NicEntry[] = [
  nic('ens33', '0000:10:01.0', 'pci0000:10', 0, 'ENA', { ...ena, primary: true }),
  nic(undefined, '0000:10:1b.0', 'pci0000:10', 0, 'EFA', { ...efa, rdmaDevice: 'rdmap16s27' }),
  nic('ens65', '0000:20:01.0', 'pci0000:20', 0, 'ENA', ena),
  nic(undefined, '0000:20:1b.0', 'pci0000:20', 0, 'EFA', { ...efa, rdmaDevice: 'rdmap32s27' }),
  nic('ens129', '0000:90:01.0', 'pci0000:90', 1, 'ENA', ena),
  nic(undefined, '0000:90:1b.0', 'pci0000:90', 1, 'EFA', { ...efa, rdmaDevice: 'rdmap144s27' }),
  nic('ens161', '0000:a0:01.0', 'pci0000:a0', 1, 'ENA', ena),
  nic(undefined, '0000:a0:1b.0', 'pci0000:a0', 1, 'EFA', { ...efa, rdmaDevice: 'rdmap160s27' }),
];
const p4dProv = {
  busIds: seen('DRANET, S74', 'captured gpu.nvidia.com slice'),
  pcieRoots: seen('DRANET', 'captured slice: two GPUs and one EFA per root'),
  numa: seen('DRANET', 'from the EFA and ENA numaNode on the same roots'),
  nics: seen('DRANET', 'captured dra.net slice; the BDF of ens33 is inferred'),
  driver: seen('DRANET', '580.126.09'),
};

// p5: each GPU behind a root bus of its own, four EFA functions beside it; AWS publishes no lspci of it.
// The roots are Karpenter-AWS's (its comments say read off a p5.48xlarge slice of driver 0.5.0).
const P5_BUSES = ['53', '64', '75', '86', '97', 'a8', 'b9', 'ca'];
const P5_ROOTS = ['44', '55', '66', '77', '88', '99', 'aa', 'bb'];
const P5_SLOTS = P5_BUSES.map((b, i) => slot(`0000:${b}:00.0`, `pci0000:${P5_ROOTS[i] ?? b}`, i < 4 ? 0 : 1));
/** `perGpu` EFA functions on each GPU's bus and root (BDFs invented; AWS documents only the counts). */
function p5Efa(model: string, perGpu: number, speedGbps: number): NicEntry[] {
  return P5_SLOTS.flatMap((s, i) =>
    Array.from({ length: perGpu }, (_, f) =>
      nic(undefined, `0000:${P5_BUSES[i] ?? ''}:0${f + 1}.0`, s.root, s.numa, model, { speedGbps }),
    ),
  );
}
const karpdraRoots = inferred(
  'KARPDRA',
  "one root per GPU, as Karpenter-AWS's table has them from a live node; that file says it may not be correct",
);
const p5Prov = {
  busIds: seen('S75', 'nvidia-smi on p5.48xlarge'),
  pcieRoots: karpdraRoots,
  numa: inferred('KARPDRA', 'GPUs 0-3 on NUMA 0, 4-7 on NUMA 1, as in the same table'),
  nics: inferred('S76, FAKEGPU', '32 EFA per AWS docs; BDFs invented, four per GPU root'),
  driver: inferred('FAKEGPU', 'a current R580 driver'),
};

// p6-b200: two GPUs a root (Karpenter-AWS's table); one EFA per GPU, BDFs invented beside it.
const P6_B200: readonly [string, string, number][] = [
  ['51', '44', 0],
  ['52', '44', 0],
  ['62', '55', 0],
  ['63', '55', 0],
  ['75', '66', 1],
  ['76', '66', 1],
  ['86', '79', 1],
  ['87', '79', 1],
];

// p6-b300: the bus numbers of an 8x B300 node in public nvidia-smi output, a root each (guessed).
const B300_BUSES = ['1a', '3c', '62', '73', '9a', 'bc', 'df', 'f0'];
const B300_SLOTS = B300_BUSES.map((b, i) => slot(`0000:${b}:00.0`, `pci0000:${b}`, i < 4 ? 0 : 1));

// p6e-gb200: four GB200 of one compute tray (nvidia-smi of a p6e in NVIDIA's tests); roots guessed.
const P6E_BUSES = ['29', '3f', '9c', 'b2'];
const p6eSlots = P6E_BUSES.map((b, i) => slot(`0000:${b}:00.0`, `pci0000:${b}`, i < 2 ? 0 : 1));

const AWS_8GPU: readonly Preset[] = [
  {
    name: 'aws-p4d.24xlarge',
    instanceType: 'p4d.24xlarge',
    instance: ec2(96, 1179648, 737, 21.957642),
    description: 'AWS p4d.24xlarge (8x A100-SXM4-40GB, 4x EFA 100G)',
    spec: { driver: { version: '580.126.09' }, gpus: gpus('A100-SXM4-40GB', P4D_SLOTS), nics: P4D_NICS },
    provenance: { gpus: seen('DRANET, S4'), ...p4dProv },
  },
  {
    name: 'aws-p4de.24xlarge',
    instanceType: 'p4de.24xlarge',
    instance: ec2(96, 1179648, 737, 27.44705),
    description: 'AWS p4de.24xlarge (8x A100-SXM4-80GB, 4x EFA 100G)',
    spec: { driver: { version: '580.126.09' }, gpus: gpus('A100-SXM4-80GB', P4D_SLOTS), nics: P4D_NICS },
    provenance: {
      gpus: seen('S74'),
      ...p4dProv,
      pcieRoots: inferred('DRANET', 'assumed equal to p4d'),
      numa: inferred('DRANET', 'assumed equal to p4d'),
      nics: inferred('DRANET', 'assumed equal to p4d'),
      driver: inferred('DRANET', 'assumed equal to the p4d capture'),
    },
  },
  {
    name: 'aws-p5.48xlarge',
    instanceType: 'p5.48xlarge',
    instance: ec2(192, 2097152, 100, 55.04),
    description: 'AWS p5.48xlarge (8x H100 80GB HBM3, 32x EFA 100G)',
    spec: {
      driver: { version: '580.126.20' },
      gpus: gpus('H100-SXM5-80GB', P5_SLOTS),
      nics: p5Efa('EFA v2', 4, 100),
    },
    provenance: { gpus: seen('S75'), ...p5Prov },
  },
  {
    name: 'aws-p5e.48xlarge',
    instanceType: 'p5e.48xlarge',
    instance: {
      ...ec2(192, 2097152, 100, 63.296),
      priceSource: inferred('EC2PRICE', 'no on-demand price listed; that of p5en.48xlarge, also 8x H200'),
    },
    description: 'AWS p5e.48xlarge (8x H200, 32x EFA 100G)',
    spec: { driver: { version: '580.126.20' }, gpus: gpus('H200', P5_SLOTS), nics: p5Efa('EFA v2', 4, 100) },
    provenance: { gpus: seen('S77'), ...p5Prov, busIds: inferred('S75', 'assumed equal to p5.48xlarge') },
  },
  {
    name: 'aws-p5en.48xlarge',
    instanceType: 'p5en.48xlarge',
    instance: {
      ...ec2(192, 2097152, 198, 63.296),
      source: seen('EC2PREVIEW'),
    },
    description: 'AWS p5en.48xlarge (8x H200, 16x EFA 200G)',
    spec: { driver: { version: '580.126.20' }, gpus: gpus('H200', P5_SLOTS), nics: p5Efa('EFA v3', 2, 200) },
    provenance: {
      gpus: seen('S77'),
      ...p5Prov,
      busIds: inferred('S75', 'assumed equal to p5.48xlarge'),
      nics: inferred('EFACOUNT', '16 EFA, 3,200 Gbps in all; BDFs invented, two per GPU root'),
    },
  },
  {
    name: 'aws-p6-b200.48xlarge',
    instanceType: 'p6-b200.48xlarge',
    instance: {
      ...ec2(192, 2097152, 100, 113.9328),
      source: inferred('ROSA', '192 vCPUs and 2,048 GiB; pods assumed equal to p5.48xlarge'),
    },
    description: 'AWS p6-b200.48xlarge (8x B200, 8x EFA 400G)',
    spec: {
      driver: { version: '580.126.20' },
      gpus: gpus(
        'B200',
        P6_B200.map(([bus, root, numa]) => slot(`0000:${bus}:00.0`, `pci0000:${root}`, numa)),
      ),
      nics: P6_B200.map(([bus, root, numa]) =>
        nic(undefined, `0000:${bus}:01.0`, `pci0000:${root}`, numa, 'EFA v3', { speedGbps: 400 }),
      ),
    },
    provenance: {
      gpus: seen('KARPDRA, S36'),
      busIds: inferred('KARPDRA', "Karpenter-AWS's table, from a live node by its comments"),
      pcieRoots: karpdraRoots,
      numa: inferred('KARPDRA', 'GPUs 0-3 on NUMA 0, 4-7 on NUMA 1, as in the same table'),
      nics: inferred('EFACOUNT', '8 EFA, 3,200 Gbps in all; BDFs invented, one beside each GPU'),
      driver: inferred('FAKEGPU', 'a current R580 driver'),
    },
  },
  {
    name: 'aws-p6e-gb200.36xlarge',
    instanceType: 'p6e-gb200.36xlarge',
    instance: {
      vcpus: 144,
      memoryMiB: 960 * 1024,
      maxPods: 110,
      architecture: 'arm64',
      pricePerHour: 56.9664,
      source: inferred(
        'VANTAGEP6',
        "144 vCPUs and 960 GiB in one third-party table (another says 1,024); pods: Kubernetes' default",
      ),
      priceSource: inferred(
        'EC2PRICE',
        "sold only in UltraServer capacity blocks; 4 GPUs at p6-b200.48xlarge's price per B200",
      ),
    },
    description: 'AWS p6e-gb200.36xlarge (4x GB200, 4x EFA 400G), one tray of a u-p6e-gb200x72 UltraServer',
    spec: {
      driver: { version: '580.173.02' },
      gpus: gpus('GB200', p6eSlots),
      nics: p6eSlots.map((s, i) =>
        nic(undefined, `0000:${P6E_BUSES[i] ?? ''}:01.0`, s.root, s.numa, 'EFA v3', { speedGbps: 400 }),
      ),
    },
    provenance: {
      gpus: seen('SMIX', 'qx-gb200, an AWS p6e'),
      busIds: seen('SMIX', 'qx-gb200: 29, 3F, 9C, B2'),
      pcieRoots: inferred('FAKEGPU', 'one root per GPU assumed, as on p5'),
      numa: inferred('FAKEGPU', 'two Grace sockets, two GPUs each assumed'),
      nics: inferred(
        'EKSGB200',
        'one EFA per GPU in the EKS example (1,600 Gbps); the ENA card not modelled',
      ),
      driver: seen('SMIX', '580.173.02 in qx-gb200'),
    },
  },
  {
    name: 'aws-p5.4xlarge',
    instanceType: 'p5.4xlarge',
    instance: { ...ec2(16, 262144, 118, 6.88), source: seen('EC2PREVIEW'), priceSource: seen('EC2PRICE26') },
    description: 'AWS p5.4xlarge (1x H100 80GB HBM3, 1x EFA 100G)',
    spec: {
      driver: { version: '580.126.20' },
      gpus: gpus('H100-SXM5-80GB', [slot('0000:53:00.0', 'pci0000:44', -1)]),
      nics: [nic(undefined, '0000:53:01.0', 'pci0000:44', -1, 'EFA v2', { speedGbps: 100 })],
    },
    provenance: {
      gpus: seen('EC2PREVIEW'),
      busIds: inferred('S75', "the first GPU of a p5.48xlarge's host"),
      pcieRoots: karpdraRoots,
      numa: inferred('FAKEGPU', 'single NUMA node: attribute omitted'),
      nics: inferred('EC2PREVIEW', 'one EFA, 100 Gbps; its BDF invented beside the GPU'),
      driver: inferred('FAKEGPU', 'a current R580 driver'),
    },
  },
  {
    name: 'aws-p6-b300.48xlarge',
    instanceType: 'p6-b300.48xlarge',
    instance: {
      ...ec2(192, 4194304, 198, 142.416),
      source: seen('EC2PREVIEW'),
      priceSource: seen('EC2PRICE26'),
    },
    description: 'AWS p6-b300.48xlarge (8x B300, 16x EFA 400G)',
    spec: {
      driver: { version: '580.126.20' },
      gpus: gpus('B300', B300_SLOTS),
      nics: B300_SLOTS.flatMap((s, i) =>
        [1, 2].map((f) =>
          nic(undefined, `0000:${B300_BUSES[i] ?? ''}:0${f}.0`, s.root, s.numa, 'EFA v3', { speedGbps: 400 }),
        ),
      ),
    },
    provenance: {
      gpus: seen('EC2PREVIEW, B300'),
      busIds: inferred(
        'B300',
        'the bus numbers of an 8x B300 node seen in public nvidia-smi output; not an AWS one',
      ),
      pcieRoots: inferred('FAKEGPU', 'one root per GPU assumed, as on p5'),
      numa: inferred('FAKEGPU', 'GPUs 0-3 on NUMA 0, 4-7 on NUMA 1 assumed'),
      nics: inferred(
        'EC2PREVIEW',
        '16 EFA and 6,400 Gbps (400G each); EFA v3 assumed (sources differ between v3 and v4); BDFs invented, two beside each GPU',
      ),
      driver: inferred('FAKEGPU', 'a current R580 driver'),
    },
  },
];

/**
 * A size from Karpenter-AWS's generated table of July 2026 (vCPUs, MiB, pods) at that month's us-east-1
 * price; rows are `[type, vCPUs, MiB, GPUs, pods, price]`.
 */
type Row = readonly [string, number, number, number, number, number];
const sizes = (rows: readonly Row[], architecture: InstanceSize['architecture'] = 'amd64'): FamilySize[] =>
  rows.map(([type, vcpus, memoryMiB, gpuCount, maxPods, price]) => ({
    type,
    gpus: gpuCount,
    instance: {
      vcpus,
      memoryMiB,
      maxPods,
      architecture,
      pricePerHour: price,
      source: seen('EC2PREVIEW'),
      priceSource: seen('EC2PRICE26'),
    },
  }));

/** g4dn and g5 (Intel Nitro hosts): GPUs on root bus 00 from device 1e down; 8 GPUs over two sockets. */
function nitroIntelSlots(n: number): Slot[] {
  const devs =
    n === 8 ? ['16', '17', '18', '19', '1a', '1b', '1c', '1d'] : ['1b', '1c', '1d', '1e'].slice(4 - n);
  return devs.map((d, i) => slot(`0000:00:${d}.0`, 'pci0000:00', n === 8 ? (i < 4 ? 0 : 1) : -1));
}
/** g6, g6e and gr6 (AMD Nitro hosts): each GPU on a root of its own from bus 30, as g6e.2xlarge's. */
function nitroAmdSlots(n: number): Slot[] {
  return Array.from({ length: n }, (_, i) => {
    const bus = (0x30 + i).toString(16);
    return slot(`0000:${bus}:00.0`, `pci0000:${bus}`, n === 8 ? (i < 4 ? 0 : 1) : -1);
  });
}
const smallProv = (
  gpuSource: Source,
  busIds: (n: number) => Source,
  pcieRoots: Source,
): ((n: number) => Record<PresetAspect, Source>) => {
  return (n) => ({
    gpus: gpuSource,
    busIds: busIds(n),
    pcieRoots,
    numa: vmNuma(n),
    nics: noNics,
    driver: r580,
  });
};

const G4DN = family({
  prefix: 'aws',
  vendor: 'AWS',
  model: 'T4',
  label: 'Tesla T4',
  driver: '580.126.20',
  sizes: sizes([
    ['g4dn.xlarge', 4, 16384, 1, 29, 0.526],
    ['g4dn.2xlarge', 8, 32768, 1, 29, 0.752],
    ['g4dn.4xlarge', 16, 65536, 1, 29, 1.204],
    ['g4dn.8xlarge', 32, 131072, 1, 58, 2.176],
    ['g4dn.12xlarge', 48, 196608, 4, 234, 3.912],
    ['g4dn.16xlarge', 64, 262144, 1, 58, 4.352],
    ['g4dn.metal', 96, 393216, 8, 737, 7.824],
  ]),
  slots: nitroIntelSlots,
  provenance: smallProv(
    seen('S24, EC2PREVIEW'),
    (n) =>
      n === 1
        ? seen('SMIX', 'qx-t4: 00000000:00:1E.0')
        : n === 4
          ? seen('S24')
          : inferred('S24', 'the 4-GPU layout extended to eight'),
    inferred('FAKEGPU', 'all GPUs on root bus 00, as their BDFs show'),
  ),
});

const G5 = family({
  prefix: 'aws',
  vendor: 'AWS',
  model: 'A10G',
  label: 'A10G',
  driver: '580.126.20',
  sizes: sizes([
    ['g5.xlarge', 4, 16384, 1, 58, 1.006],
    ['g5.2xlarge', 8, 32768, 1, 58, 1.212],
    ['g5.4xlarge', 16, 65536, 1, 234, 1.624],
    ['g5.8xlarge', 32, 131072, 1, 234, 2.448],
    ['g5.12xlarge', 48, 196608, 4, 737, 5.672],
    ['g5.16xlarge', 64, 262144, 1, 234, 4.096],
    ['g5.24xlarge', 96, 393216, 4, 737, 8.144],
    ['g5.48xlarge', 192, 786432, 8, 345, 16.288],
  ]),
  slots: nitroIntelSlots,
  provenance: smallProv(
    seen('S22, EC2PREVIEW'),
    (n) => (n === 4 ? seen('S22') : inferred('S22', 'g5.12xlarge uses 00:1b-1e; other counts extrapolated')),
    inferred('FAKEGPU', 'root bus 00 as the BDFs imply'),
  ),
});

const amdRoots = inferred(
  'FAKEGPU',
  'each GPU on a root of its own bus, as on other Nitro hosts; no sysfs seen',
);
const amdBus = (n: number): Source =>
  n === 1
    ? inferred('SMIX', 'as qx-l40s (g6e.2xlarge): 00000000:30:00.0')
    : inferred('SMIX', "from qx-l40s's 30:00.0 upwards, one bus a GPU");

const G6 = family({
  prefix: 'aws',
  vendor: 'AWS',
  model: 'L4',
  label: 'L4',
  driver: '580.126.20',
  sizes: sizes([
    ['g6.xlarge', 4, 16384, 1, 58, 0.8048],
    ['g6.2xlarge', 8, 32768, 1, 58, 0.9776],
    ['g6.4xlarge', 16, 65536, 1, 234, 1.3232],
    ['g6.8xlarge', 32, 131072, 1, 234, 2.0144],
    ['g6.12xlarge', 48, 196608, 4, 234, 4.6016],
    ['g6.16xlarge', 64, 262144, 1, 737, 3.3968],
    ['g6.24xlarge', 96, 393216, 4, 737, 6.6752],
    ['g6.48xlarge', 192, 786432, 8, 737, 13.3504],
  ]),
  slots: nitroAmdSlots,
  provenance: smallProv(seen('S25, EC2PREVIEW'), amdBus, amdRoots),
});

const GR6 = family({
  prefix: 'aws',
  vendor: 'AWS',
  model: 'L4',
  label: 'L4',
  driver: '580.126.20',
  sizes: sizes(
    [
      ['gr6.4xlarge', 16, 131072, 1, 234, 1.5392],
      ['gr6.8xlarge', 32, 262144, 1, 234, 2.4464],
    ],
    'arm64',
  ),
  slots: nitroAmdSlots,
  provenance: smallProv(seen('S25, EC2PREVIEW'), amdBus, amdRoots),
});

const G6E = family({
  prefix: 'aws',
  vendor: 'AWS',
  model: 'L40S',
  label: 'L40S',
  driver: '580.126.20',
  sizes: sizes([
    ['g6e.xlarge', 4, 32768, 1, 58, 1.861],
    ['g6e.2xlarge', 8, 65536, 1, 58, 2.24208],
    ['g6e.4xlarge', 16, 131072, 1, 234, 3.00424],
    ['g6e.8xlarge', 32, 262144, 1, 234, 4.52856],
    ['g6e.12xlarge', 48, 393216, 4, 292, 10.49264],
    ['g6e.16xlarge', 64, 524288, 1, 737, 7.57719],
    ['g6e.24xlarge', 96, 786432, 4, 492, 15.06559],
    ['g6e.48xlarge', 192, 1572864, 8, 492, 30.13118],
  ]),
  slots: nitroAmdSlots,
  provenance: smallProv(
    seen('S26, EC2PREVIEW'),
    (n) => (n === 1 ? seen('SMIX', 'qx-l40s: 00000000:30:00.0') : amdBus(n)),
    amdRoots,
  ),
});

export const AWS: readonly Preset[] = [...AWS_8GPU, ...G4DN, ...G5, ...G6, ...GR6, ...G6E];
