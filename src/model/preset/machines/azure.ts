import type { NicEntry } from '../machine-spec.js';
import type { Source } from '../../catalog/types.js';
import type { InstanceSize, Preset, PresetAspect } from '../types.js';
import {
  DEFAULT_MAX_PODS,
  family,
  GB_TRAY_SLOTS,
  gpus,
  inferred,
  nic,
  noNics,
  seen,
  sized,
  slot,
  type FamilySize,
  type Slot,
} from './parts.js';

/** An Azure size: Azure's MemoryGB taken as GiB (as the GB300 v6 preset); pods: Kubernetes' default. */
const azure = (
  vcpus: number,
  memoryGiB: number,
  architecture: 'amd64' | 'arm64',
  pricePerHour: number,
  priceSource: Source,
): InstanceSize =>
  sized(
    vcpus,
    memoryGiB,
    architecture,
    pricePerHour,
    inferred('AZDOCS', "Azure's Memory (GB) taken as GiB; pods: Kubernetes' default"),
    priceSource,
  );

// ND H100/H200 v5: Hyper-V vPCI (no PCIe root); each GPU paired with an InfiniBand VF under one
// virtual switch, four pairs a NUMA node (Azure's own NCCL topology file of ND H100 v5).
const NDV5_GPU_DOMAINS = ['0001', '0002', '0003', '0008', '0009', '000a', '000b', '000c'];
const ndv5Slots = NDV5_GPU_DOMAINS.map((d, i) => slot(`${d}:00:00.0`, null, i < 4 ? 0 : 1));
const NDV5_NICS: NicEntry[] = NDV5_GPU_DOMAINS.map((_, i) =>
  nic(undefined, `010${i + 1}:00:00.0`, null, i < 4 ? 0 : 1, 'ConnectX VF', {
    rdmaDevice: `mlx5_${i}`,
    speedGbps: 400,
  }),
);
const ndv5Prov = {
  busIds: seen('AZNDV5TOPO'),
  pcieRoots: seen('AZNDV5TOPO', 'virtual PCI domains, no root: the attribute is omitted'),
  numa: seen('AZNDV5TOPO'),
  nics: seen('AZNDV5TOPO', 'eight NDR InfiniBand VFs, one per GPU; the front-end NIC not modelled'),
  driver: inferred('FAKEGPU', 'a current R580 driver'),
};

// ND GB200 v6: laid out as ND GB300 v6 (a captured slice), with 400G ConnectX-7 VFs.
const gbTraySlots = GB_TRAY_SLOTS;

const AZURE_ND: readonly Preset[] = [
  {
    name: 'azure-nd-h100-v5',
    instanceType: 'Standard_ND96isr_H100_v5',
    instance: azure(96, 1900, 'amd64', 98.32, seen('AZPRICE', 'eastus')),
    description:
      'Microsoft Azure Standard_ND96isr_H100_v5 (8x H100 80GB HBM3, 8x ConnectX-7 InfiniBand VF 400G)',
    spec: { driver: { version: '580.126.20' }, gpus: gpus('H100-SXM5-80GB', ndv5Slots), nics: NDV5_NICS },
    provenance: { gpus: seen('AZDOCS'), ...ndv5Prov },
  },
  {
    name: 'azure-nd-h200-v5',
    instanceType: 'Standard_ND96isr_H200_v5',
    instance: azure(
      96,
      1850,
      'amd64',
      84.8,
      inferred('AZPRICE', 'eastus2 $84.80; another copy says $110.24'),
    ),
    description: 'Microsoft Azure Standard_ND96isr_H200_v5 (8x H200, 8x ConnectX-7 InfiniBand VF 400G)',
    spec: { driver: { version: '580.126.20' }, gpus: gpus('H200', ndv5Slots), nics: NDV5_NICS },
    provenance: {
      gpus: seen('AZDOCS'),
      busIds: inferred('AZNDV5TOPO', 'assumed equal to ND H100 v5'),
      pcieRoots: inferred('AZNDV5TOPO', 'virtual PCI as ND H100 v5: the attribute is omitted'),
      numa: inferred('AZNDV5TOPO', 'assumed equal to ND H100 v5'),
      nics: inferred('AZDOCS, AZNDV5TOPO', '8x 400G InfiniBand, laid out as ND H100 v5'),
      driver: inferred('FAKEGPU', 'a current R580 driver'),
    },
  },
  {
    name: 'azure-nd-gb200-v6',
    instanceType: 'Standard_ND128isr_NDR_GB200_v6',
    instance: azure(
      128,
      900,
      'arm64',
      56.9664,
      inferred('EC2PRICE', "no public price; 4 GPUs at p6-b200.48xlarge's price per B200"),
    ),
    description:
      'Microsoft Azure Standard_ND128isr_NDR_GB200_v6 (4x GB200, 4x ConnectX-7 InfiniBand VF 400G)',
    spec: {
      driver: { version: '580.105.08' },
      gpus: gpus('GB200', gbTraySlots),
      nics: [1, 2, 3, 4].map((d, i) =>
        nic(undefined, `010${d}:00:00.0`, null, i < 2 ? 0 : 1, 'ConnectX VF', {
          rdmaDevice: `mlx5_${i}`,
          speedGbps: 400,
        }),
      ),
    },
    provenance: {
      gpus: seen('AZDOCS'),
      busIds: inferred('DRANET', 'assumed equal to the captured ND GB300 v6'),
      pcieRoots: inferred('DRANET', 'assumed equal to the captured ND GB300 v6'),
      numa: inferred('DRANET', 'assumed equal to the captured ND GB300 v6'),
      nics: inferred(
        'AZDOCS, DRANET',
        '4x 400G NDR InfiniBand, laid out as ND GB300 v6; the front-end NIC not modelled',
      ),
      driver: inferred('DRANET', 'assumed equal to the captured ND GB300 v6'),
    },
  },
  {
    name: 'azure-nd-gb300-v6',
    instanceType: 'Standard_ND128isr_GB300_v6',
    instance: {
      vcpus: 128,
      memoryMiB: 864 * 1024,
      maxPods: DEFAULT_MAX_PODS,
      architecture: 'arm64',
      pricePerHour: 56.9664,
      source: inferred(
        'AZSKU',
        "Azure's MemoryGB taken as GiB; Grace CPUs, so arm64; pods: Kubernetes' default",
      ),
      priceSource: inferred('EC2PRICE', "4 GPUs at p6-b200.48xlarge's price per B200"),
    },
    description: 'Microsoft Azure Standard_ND128isr_GB300_v6 (4x GB300, 4x ConnectX InfiniBand VF 800G)',
    spec: {
      driver: { version: '580.105.08' },
      gpus: gpus('GB300', GB_TRAY_SLOTS),
      nics: [
        ...[1, 2, 3, 4].map((d, i) =>
          nic(undefined, `010${d}:00:00.0`, null, i < 2 ? 0 : 1, 'ConnectX VF', {
            rdmaDevice: `mlx5_${i}`,
            speedGbps: 800,
          }),
        ),
        nic('enP30832s1', '7870:00:00.0', null, -1, 'Azure MANA'),
      ],
    },
    provenance: {
      gpus: seen('DRANET'),
      busIds: seen('DRANET'),
      pcieRoots: seen('DRANET'),
      numa: seen('DRANET', 'README topology: GPUs 0-1 on NUMA 0, 2-3 on NUMA 1'),
      nics: seen('DRANET', 'InfiniBand VFs on Hyper-V vPCI domains, no PCIe root'),
      driver: seen('DRANET', '580.105.08'),
    },
  },
];

/** Standard_NC24ads_A100_v4 → nc24ads-a100-v4, as the ND v5 presets are named. */
const azureName = (type: string): string =>
  type
    .replace(/^Standard_/, '')
    .toLowerCase()
    .replace(/_/g, '-');

/** An Azure size, `[type, vCPUs, GB, GPUs, price]`; prices from secondary tables of Azure's retail API. */
type Row = readonly [string, number, number, number, number];
const azureSizes = (rows: readonly Row[], priceNote: string): FamilySize[] =>
  rows.map(([type, vcpus, gib, n, usd]) => ({
    type,
    gpus: n,
    instance: azure(vcpus, gib, 'amd64', usd, inferred('AZPRICE2', priceNote)),
  }));

/** GPUs of Azure's smaller VMs on Hyper-V virtual PCI domains of their own (0001, 0002, ...): no root. */
const vpciSlots = (n: number): Slot[] =>
  Array.from({ length: n }, (_, i) =>
    slot(`000${(i + 1).toString(16)}:00:00.0`, null, n === 8 ? (i < 4 ? 0 : 1) : -1),
  );
const vmProv =
  (gpuSource: string) =>
  (n: number): Record<PresetAspect, Source> => ({
    gpus: seen(gpuSource),
    busIds: inferred('AZNDV5TOPO', 'virtual PCI domains from 0001 up, one a GPU, as Azure places its GPUs'),
    pcieRoots: inferred('AZNDV5TOPO', 'virtual PCI: no root, the attribute is omitted'),
    numa:
      n === 8
        ? inferred('AZNDV5TOPO', 'four GPUs a NUMA node, as ND H100 v5')
        : inferred('FAKEGPU', 'single NUMA node: attribute omitted'),
    nics: noNics,
    driver: inferred('FAKEGPU', 'a current R580 driver'),
  });

/** ND A100 v4 and NDm A100 v4: eight GPUs, each with its own 200G HDR InfiniBand VF, as ND H100 v5. */
const ndv4Nics = (n: number): { entries: NicEntry[]; label: string } => ({
  entries: NDV5_GPU_DOMAINS.slice(0, n).map((_, i) =>
    nic(undefined, `010${i + 1}:00:00.0`, null, i < 4 ? 0 : 1, 'ConnectX VF', {
      rdmaDevice: `mlx5_${i}`,
      speedGbps: 200,
    }),
  ),
  label: `${n}x ConnectX-6 InfiniBand VF 200G`,
});
const ndv4Prov = (): Record<PresetAspect, Source> => ({
  gpus: seen('AZDOCS2'),
  busIds: inferred('AZNDV5TOPO', 'laid out as ND H100 v5'),
  pcieRoots: inferred('AZNDV5TOPO', 'virtual PCI: no root, the attribute is omitted'),
  numa: inferred('AZNDV5TOPO', 'laid out as ND H100 v5'),
  nics: inferred('AZDOCS2', 'one 200G HDR InfiniBand link a GPU; laid out as ND H100 v5'),
  driver: inferred('FAKEGPU', 'a current R580 driver'),
});
const ND_A100_V4 = [
  ...family({
    prefix: 'azure',
    nameOf: azureName,
    vendor: 'Microsoft Azure',
    model: 'A100-SXM4-40GB',
    label: 'A100-SXM4-40GB',
    driver: '580.126.20',
    sizes: azureSizes([['Standard_ND96asr_v4', 96, 900, 8, 27.197]], 'eastus, as a public table quotes it'),
    slots: (n) => ndv5Slots.slice(0, n),
    nics: ndv4Nics,
    provenance: ndv4Prov,
  }),
  ...family({
    prefix: 'azure',
    nameOf: azureName,
    vendor: 'Microsoft Azure',
    model: 'A100-SXM4-80GB',
    label: 'A100-SXM4-80GB',
    driver: '580.126.20',
    sizes: azureSizes(
      [['Standard_ND96amsr_A100_v4', 96, 1900, 8, 32.768]],
      'eastus, as a public table quotes it',
    ),
    slots: (n) => ndv5Slots.slice(0, n),
    nics: ndv4Nics,
    provenance: ndv4Prov,
  }),
];

const NC_A100_V4 = family({
  prefix: 'azure',
  nameOf: azureName,
  vendor: 'Microsoft Azure',
  model: 'A100-PCIE-80GB',
  label: 'A100 80GB PCIe',
  driver: '580.126.20',
  sizes: azureSizes(
    [
      ['Standard_NC24ads_A100_v4', 24, 220, 1, 3.673],
      ['Standard_NC48ads_A100_v4', 48, 440, 2, 7.346],
      ['Standard_NC96ads_A100_v4', 96, 880, 4, 14.692],
    ],
    'eastus, as a public table quotes it',
  ),
  slots: vpciSlots,
  provenance: vmProv('AZDOCS2'),
});

const NC_H100_V5 = family({
  prefix: 'azure',
  nameOf: azureName,
  vendor: 'Microsoft Azure',
  model: 'H100-NVL',
  label: 'H100 NVL',
  driver: '580.126.20',
  sizes: azureSizes(
    [
      ['Standard_NC40ads_H100_v5', 40, 320, 1, 7.35],
      ['Standard_NC80adis_H100_v5', 80, 640, 2, 14.7],
    ],
    'one third-party table gives $7.35 for one H100 NVL; the 2-GPU size twice that',
  ),
  slots: vpciSlots,
  provenance: (n) => ({
    ...vmProv('AZDOCS2')(n),
    gpus: inferred('AZDOCS2', '94 GB a GPU, the H100 NVL'),
  }),
});

const NC_T4_V3 = family({
  prefix: 'azure',
  nameOf: azureName,
  vendor: 'Microsoft Azure',
  model: 'T4',
  label: 'Tesla T4',
  driver: '580.126.20',
  sizes: azureSizes(
    [
      ['Standard_NC4as_T4_v3', 4, 28, 1, 0.526],
      ['Standard_NC8as_T4_v3', 8, 56, 1, 0.752],
      ['Standard_NC16as_T4_v3', 16, 110, 1, 1.204],
      ['Standard_NC64as_T4_v3', 64, 440, 4, 4.352],
    ],
    'eastus, as a public table quotes it',
  ),
  slots: vpciSlots,
  provenance: vmProv('AZDOCS2'),
});

export const AZURE: readonly Preset[] = [
  ...AZURE_ND,
  ...ND_A100_V4,
  ...NC_A100_V4,
  ...NC_H100_V5,
  ...NC_T4_V3,
];
