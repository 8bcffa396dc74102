import type { NicEntry } from '../machine-spec.js';
import type { Preset } from '../types.js';
import { ec2, gpus, inferred, nic, noNics, seen, slot } from './parts.js';

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

// p6e-gb200: four GB200 of one compute tray (nvidia-smi of a p6e in NVIDIA's tests); roots guessed.
const P6E_BUSES = ['29', '3f', '9c', 'b2'];
const p6eSlots = P6E_BUSES.map((b, i) => slot(`0000:${b}:00.0`, `pci0000:${b}`, i < 2 ? 0 : 1));

export const AWS: readonly Preset[] = [
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
      ...ec2(192, 2097152, 100, 63.296),
      source: inferred('ROSA', '192 vCPUs and 2,048 GiB; pods assumed equal to p5.48xlarge'),
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
    name: 'aws-g4dn.xlarge',
    instanceType: 'g4dn.xlarge',
    instance: ec2(4, 16384, 29, 0.526),
    description: 'AWS g4dn.xlarge (1x Tesla T4)',
    spec: {
      driver: { version: '580.126.20' },
      gpus: gpus('T4', [slot('0000:00:1e.0', 'pci0000:00', -1)]),
      nics: [],
    },
    provenance: {
      gpus: seen('S24'),
      busIds: seen('SMIX', 'qx-t4: 00000000:00:1E.0'),
      pcieRoots: inferred('FAKEGPU', 'one root bus on a small VM'),
      numa: inferred('FAKEGPU', 'single NUMA node: sysfs numa_node -1, so the attribute is omitted'),
      nics: noNics,
      driver: inferred('FAKEGPU', 'a current R580 driver'),
    },
  },
  {
    name: 'aws-g4dn.12xlarge',
    instanceType: 'g4dn.12xlarge',
    instance: ec2(48, 196608, 234, 3.912),
    description: 'AWS g4dn.12xlarge (4x Tesla T4)',
    spec: {
      driver: { version: '580.126.20' },
      gpus: gpus(
        'T4',
        ['1b', '1c', '1d', '1e'].map((d) => slot(`0000:00:${d}.0`, 'pci0000:00', -1)),
      ),
      nics: [],
    },
    provenance: {
      gpus: seen('S24'),
      busIds: seen('S24'),
      pcieRoots: inferred('FAKEGPU', 'all GPUs on root bus 00, as their BDFs show'),
      numa: inferred('FAKEGPU', 'single NUMA node: attribute omitted'),
      nics: noNics,
      driver: inferred('FAKEGPU', 'a current R580 driver'),
    },
  },
  {
    name: 'aws-g5.48xlarge',
    instanceType: 'g5.48xlarge',
    instance: ec2(192, 786432, 345, 16.288),
    description: 'AWS g5.48xlarge (8x A10G)',
    spec: {
      driver: { version: '580.126.20' },
      gpus: gpus(
        'A10G',
        ['16', '17', '18', '19', '1a', '1b', '1c', '1d'].map((d, i) =>
          slot(`0000:00:${d}.0`, 'pci0000:00', i < 4 ? 0 : 1),
        ),
      ),
      nics: [],
    },
    provenance: {
      gpus: seen('S22'),
      busIds: inferred('S22', 'g5.12xlarge uses 00:1b-1e; the 8-GPU layout is extrapolated'),
      pcieRoots: inferred('FAKEGPU', 'root bus 00 as the BDFs imply'),
      numa: inferred('FAKEGPU', 'two sockets, four GPUs each assumed'),
      nics: noNics,
      driver: inferred('FAKEGPU', 'a current R580 driver'),
    },
  },
  {
    name: 'aws-g6e.2xlarge',
    instanceType: 'g6e.2xlarge',
    instance: ec2(8, 65536, 58, 2.24208),
    description: 'AWS g6e.2xlarge (1x L40S)',
    spec: {
      driver: { version: '580.126.20' },
      gpus: gpus('L40S', [slot('0000:30:00.0', 'pci0000:30', -1)]),
      nics: [],
    },
    provenance: {
      gpus: seen('S26'),
      busIds: seen('SMIX', 'qx-l40s: 00000000:30:00.0'),
      pcieRoots: inferred(
        'FAKEGPU',
        'the GPU on a root of its own bus, as on other Nitro hosts; no sysfs seen',
      ),
      numa: inferred('FAKEGPU', 'single NUMA node: attribute omitted'),
      nics: noNics,
      driver: inferred('FAKEGPU', 'a current R580 driver'),
    },
  },
];
