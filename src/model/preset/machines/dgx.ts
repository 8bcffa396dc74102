import type { NicEntry } from '../machine-spec.js';
import type { Preset } from '../types.js';
import { gpus, inferred, nic, seen, slot } from './parts.js';

// DGX A100: GPU pairs share a PCIe switch with two ConnectX-6; roots follow AMD Rome's bus ranges (0x20 each).
const DGX_A100_SLOTS = [
  slot('0000:07:00.0', 'pci0000:00', 3),
  slot('0000:0f:00.0', 'pci0000:00', 3),
  slot('0000:47:00.0', 'pci0000:40', 1),
  slot('0000:4e:00.0', 'pci0000:40', 1),
  slot('0000:87:00.0', 'pci0000:80', 7),
  slot('0000:90:00.0', 'pci0000:80', 7),
  slot('0000:b7:00.0', 'pci0000:a0', 5),
  slot('0000:bd:00.0', 'pci0000:a0', 5),
];

const cx6 = { speedGbps: 200 };
const DGX_A100_NICS: NicEntry[] = [
  nic('ibp12s0', '0000:0c:00.0', 'pci0000:00', 3, 'ConnectX-6', { ...cx6, rdmaDevice: 'mlx5_0' }),
  nic('ibp18s0', '0000:12:00.0', 'pci0000:00', 3, 'ConnectX-6', { ...cx6, rdmaDevice: 'mlx5_1' }),
  nic('ibp75s0', '0000:4b:00.0', 'pci0000:40', 1, 'ConnectX-6', { ...cx6, rdmaDevice: 'mlx5_2' }),
  nic('ibp84s0', '0000:54:00.0', 'pci0000:40', 1, 'ConnectX-6', { ...cx6, rdmaDevice: 'mlx5_3' }),
  nic('ibp141s0', '0000:8d:00.0', 'pci0000:80', 7, 'ConnectX-6', { ...cx6, rdmaDevice: 'mlx5_6' }),
  nic('ibp148s0', '0000:94:00.0', 'pci0000:80', 7, 'ConnectX-6', { ...cx6, rdmaDevice: 'mlx5_7' }),
  nic('ibp186s0', '0000:ba:00.0', 'pci0000:a0', 5, 'ConnectX-6', { ...cx6, rdmaDevice: 'mlx5_8' }),
  nic('ibp204s0', '0000:cc:00.0', 'pci0000:c0', 5, 'ConnectX-6', { ...cx6, rdmaDevice: 'mlx5_9' }),
];
const dgxA100Prov = {
  busIds: seen('S59, S64', 'GPU 0 and 7 seen; the others agree with the NIC BDFs'),
  pcieRoots: inferred('FAKEGPU', 'AMD Rome root buses at multiples of 0x20; not captured'),
  numa: seen('S59', 'GPUs 0-3 seen; GPUs 4-7 NUMA unconfirmed'),
  nics: seen('S59, S62', 'compute NICs; storage NICs omitted'),
  driver: inferred('FAKEGPU', 'a current R580 driver'),
};

// DGX H100/H200/B200 share one motherboard layout: a ConnectX-7 (OSFP) beside each GPU under one switch.
const DGX_H_BUSES = [
  ['0000:1b:00.0', '0000:18:00.0', 'pci0000:15', 0, 'ibp24s0'],
  ['0000:43:00.0', '0000:40:00.0', 'pci0000:37', 0, 'ibp64s0'],
  ['0000:52:00.0', '0000:4f:00.0', 'pci0000:48', 0, 'ibp79s0'],
  ['0000:61:00.0', '0000:5e:00.0', 'pci0000:59', 0, 'ibp94s0'],
  ['0000:9d:00.0', '0000:9a:00.0', 'pci0000:97', 1, 'ibp154s0'],
  ['0000:c3:00.0', '0000:c0:00.0', 'pci0000:b7', 1, 'ibp192s0'],
  ['0000:d1:00.0', '0000:ce:00.0', 'pci0000:c7', 1, 'ibp206s0'],
  ['0000:df:00.0', '0000:dc:00.0', 'pci0000:d7', 1, 'ibp220s0'],
] as const;
const DGX_H_SLOTS = DGX_H_BUSES.map(([gpu, , root, numa]) => slot(gpu, root, numa));
function dgxHNics(rdmaDevices: readonly string[]): NicEntry[] {
  const cx7 = { speedGbps: 400 };
  return DGX_H_BUSES.map(([, bus, root, numa, ifName], i) =>
    nic(ifName, bus, root, numa, 'ConnectX-7', { ...cx7, rdmaDevice: rdmaDevices[i] ?? `mlx5_${i}` }),
  );
}
const dgxHRoots = inferred(
  'FAKEGPU',
  'Sapphire Rapids IIO root buses guessed; each GPU shares its root with its NIC as topo -m shows (PXB)',
);

export const DGX: readonly Preset[] = [
  {
    name: 'dgx-a100',
    description: 'NVIDIA DGX A100 (8x A100-SXM4-40GB, 8x ConnectX-6 HDR)',
    spec: {
      driver: { version: '580.126.20' },
      gpus: gpus('A100-SXM4-40GB', DGX_A100_SLOTS),
      nics: DGX_A100_NICS,
    },
    provenance: { gpus: seen('S59'), ...dgxA100Prov },
  },
  {
    name: 'dgx-a100-80gb',
    description: 'NVIDIA DGX A100 640GB (8x A100-SXM4-80GB, 8x ConnectX-6 HDR)',
    spec: {
      driver: { version: '580.126.20' },
      gpus: gpus('A100-SXM4-80GB', DGX_A100_SLOTS),
      nics: DGX_A100_NICS,
    },
    provenance: {
      gpus: seen('S13'),
      ...dgxA100Prov,
      busIds: inferred('S59', 'assumed equal to the 40GB DGX A100'),
    },
  },
  {
    name: 'dgx-h100',
    description: 'NVIDIA DGX H100 (8x H100 80GB HBM3, 8x ConnectX-7 400G)',
    spec: {
      driver: { version: '580.126.20' },
      gpus: gpus('H100-SXM5-80GB', DGX_H_SLOTS),
      nics: dgxHNics(['mlx5_0', 'mlx5_3', 'mlx5_4', 'mlx5_5', 'mlx5_6', 'mlx5_9', 'mlx5_10', 'mlx5_11']),
    },
    provenance: {
      gpus: seen('S69'),
      busIds: seen('S69', 'GPUs 0-5; GPUs 6-7 taken from the DGX B200 layout'),
      pcieRoots: dgxHRoots,
      numa: seen('S69'),
      nics: seen('S66'),
      driver: seen('S69', '580.126.20'),
    },
  },
  {
    name: 'dgx-h200',
    description: 'NVIDIA DGX H200 (8x H200, 8x ConnectX-7 400G)',
    spec: {
      driver: { version: '580.126.20' },
      gpus: gpus('H200', DGX_H_SLOTS),
      nics: dgxHNics(['mlx5_0', 'mlx5_3', 'mlx5_4', 'mlx5_5', 'mlx5_6', 'mlx5_9', 'mlx5_10', 'mlx5_11']),
    },
    provenance: {
      gpus: seen('S8'),
      busIds: inferred('S69', 'DGX H200 layout not captured; assumed identical to DGX H100'),
      pcieRoots: dgxHRoots,
      numa: inferred('S69', 'assumed identical to DGX H100'),
      nics: inferred('S66', 'assumed identical to DGX H100'),
      driver: inferred('FAKEGPU', 'a current R580 driver'),
    },
  },
  {
    name: 'dgx-b200',
    description: 'NVIDIA DGX B200 (8x B200, 8x ConnectX-7 400G)',
    spec: {
      driver: { version: '580.95.05' },
      gpus: gpus('B200', DGX_H_SLOTS),
      nics: dgxHNics(['mlx5_4', 'mlx5_7', 'mlx5_8', 'mlx5_9', 'mlx5_10', 'mlx5_13', 'mlx5_14', 'mlx5_15']),
    },
    provenance: {
      gpus: seen('S72, S36'),
      busIds: seen('S72'),
      pcieRoots: dgxHRoots,
      numa: seen('S72'),
      nics: seen('S72, S73'),
      driver: seen('S36', '580.95.05 on B200'),
    },
  },
];
