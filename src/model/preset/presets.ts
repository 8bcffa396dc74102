import type { Source } from '../catalog/types.js';
import type { GpuEntry, NicEntry } from './machine-spec.js';
import type { InstanceSize, Preset } from './types.js';

const seen = (ref: string, note?: string): Source =>
  note ? { ref, confirmed: true, note } : { ref, confirmed: true };
const inferred = (ref: string, note: string): Source => ({ ref, confirmed: false, note });

/** An EC2 instance type: sizes from EC2's own API, price from Karpenter's table of us-east-1 prices. */
const ec2 = (vcpus: number, memoryMiB: number, maxPods: number, pricePerHour: number): InstanceSize => ({
  vcpus,
  memoryMiB,
  maxPods,
  architecture: 'amd64',
  pricePerHour,
  source: seen('EC2'),
  priceSource: seen('EC2PRICE'),
});

/** GKE, OKE and AKS nodes: Kubernetes' default of 110 pods, as the cloud's own table was not found. */
const DEFAULT_MAX_PODS = 110;

interface Slot {
  bus: string;
  root: string | null;
  numa: number;
}

function gpus(model: string, slots: readonly Slot[]): GpuEntry[] {
  return slots.map((s) => ({ model, busId: s.bus, pcieRoot: s.root, numaNode: s.numa }));
}

const slot = (bus: string, root: string | null, numa: number): Slot => ({ bus, root, numa });

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

function nic(
  ifName: string | undefined,
  busId: string,
  pcieRoot: string | null,
  numaNode: number,
  model: string,
  extra: Partial<NicEntry> = {},
): NicEntry {
  return { ...(ifName ? { ifName } : {}), busId, pcieRoot, numaNode, model, ...extra };
}

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

// p5: GPUs behind their own root bus, four EFA functions beside each; AWS publishes no lspci of it.
const P5_BUSES = ['53', '64', '75', '86', '97', 'a8', 'b9', 'ca'];
const P5_SLOTS = P5_BUSES.map((b, i) => slot(`0000:${b}:00.0`, `pci0000:${b}`, i < 4 ? 0 : 1));
const P5_NICS: NicEntry[] = P5_BUSES.flatMap((b, i) =>
  [1, 2, 3, 4].map((f) =>
    nic(undefined, `0000:${b}:0${f}.0`, `pci0000:${b}`, i < 4 ? 0 : 1, 'EFA v2', { speedGbps: 100 }),
  ),
);
const p5Prov = {
  busIds: seen('S75', 'nvidia-smi on p5.48xlarge'),
  pcieRoots: inferred('FAKEGPU', 'one root per GPU assumed, as on p4d'),
  numa: inferred('FAKEGPU', 'GPUs 0-3 on NUMA 0, 4-7 on NUMA 1 assumed'),
  nics: inferred('S76, FAKEGPU', '32 EFA per AWS docs; BDFs invented, four per GPU root'),
  driver: inferred('FAKEGPU', 'a current R580 driver'),
};

const gvnic = { speedGbps: 200 };

const noNics = inferred('FAKEGPU', 'only the primary ENA/gVNIC, not modelled');

export const PRESETS: readonly Preset[] = [
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
    spec: { driver: { version: '580.126.20' }, gpus: gpus('H100-SXM5-80GB', P5_SLOTS), nics: P5_NICS },
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
    spec: { driver: { version: '580.126.20' }, gpus: gpus('H200', P5_SLOTS), nics: P5_NICS },
    provenance: { gpus: seen('S77'), ...p5Prov, busIds: inferred('S75', 'assumed equal to p5.48xlarge') },
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
  {
    name: 'gcp-a3-highgpu-8g',
    instanceType: 'a3-highgpu-8g',
    instance: {
      vcpus: 208,
      memoryMiB: 1872 * 1024,
      maxPods: DEFAULT_MAX_PODS,
      architecture: 'amd64',
      pricePerHour: 55.04,
      source: inferred(
        'GCEA3',
        "Google's GB are GiB (as in n1-standard-1's 3.75); pods: Kubernetes' default",
      ),
      priceSource: inferred('EC2PRICE', 'the price of p5.48xlarge, also 8x H100'),
    },
    description: 'Google Cloud a3-highgpu-8g (8x H100 80GB HBM3, 4x GPUDirect-TCPX gVNIC)',
    spec: {
      driver: { version: '580.126.20' },
      gpus: gpus(
        'H100-SXM5-80GB',
        ['04', '05', '0a', '0b', '84', '85', '8a', '8b'].map((b, i) =>
          slot(`0000:${b}:00.0`, `pci0000:${b}`, i < 4 ? 0 : 1),
        ),
      ),
      nics: [
        ['eth1', '06', 0],
        ['eth2', '0c', 0],
        ['eth3', '86', 1],
        ['eth4', '8c', 1],
      ].map(([ifName, bus, numa]) =>
        nic(String(ifName), `0000:${bus}:00.0`, `pci0000:${bus}`, Number(numa), 'gVNIC', gvnic),
      ),
    },
    provenance: {
      gpus: seen('S79'),
      busIds: inferred('S80', '04:00.0 and 05:00.0 seen on GCP hosts; the rest extrapolated'),
      pcieRoots: inferred('FAKEGPU', 'one root per GPU assumed'),
      numa: inferred(
        'S79',
        'TX bindings put eth1/eth2 on socket 0 and eth3/eth4 on socket 1; GPU NUMA assumed to follow',
      ),
      nics: inferred('S79', 'four GPUDirect-TCPX NICs; BDFs invented'),
      driver: inferred('FAKEGPU', 'a current R580 driver'),
    },
  },
  {
    name: 'gcp-g2-standard-48',
    instanceType: 'g2-standard-48',
    instance: {
      vcpus: 48,
      memoryMiB: 192 * 1024,
      maxPods: DEFAULT_MAX_PODS,
      architecture: 'amd64',
      pricePerHour: 4.6016,
      source: inferred(
        'CLOUD2',
        "48 vCPUs and 192 GB in several third-party tables; pods: Kubernetes' default",
      ),
      priceSource: inferred('EC2PRICE', 'the price of g6.12xlarge, also 4x L4'),
    },
    description: 'Google Cloud g2-standard-48 (4x L4)',
    spec: {
      driver: { version: '580.159.04' },
      gpus: gpus(
        'L4',
        ['03', '04', '05', '06'].map((d) => slot(`0000:00:${d}.0`, 'pci0000:00', -1)),
      ),
      nics: [],
    },
    provenance: {
      gpus: seen('S81'),
      busIds: seen('S81'),
      pcieRoots: inferred('FAKEGPU', 'root bus 00 as the BDFs imply'),
      numa: inferred('FAKEGPU', 'single NUMA node: attribute omitted'),
      nics: noNics,
      driver: seen('S81', '580.159.04'),
    },
  },
  {
    name: 'oci-bm.gpu.gb200.4',
    instanceType: 'BM.GPU.GB200.4',
    instance: {
      vcpus: 144,
      memoryMiB: 960 * 1024,
      maxPods: DEFAULT_MAX_PODS,
      architecture: 'arm64',
      pricePerHour: 56.9664,
      source: inferred(
        'CLOUD2',
        "144 OCPUs (1 OCPU = 1 Grace vCPU) and 960 GB in a catalog citing OCI's shape table; OCI's estimator says 128; pods: Kubernetes' default",
      ),
      priceSource: inferred('EC2PRICE', "4 GPUs at p6-b200.48xlarge's price per B200"),
    },
    description: 'Oracle Cloud BM.GPU.GB200.4 (4x GB200, 8x ConnectX-8 400G)',
    spec: {
      driver: { version: '580.126.20' },
      gpus: gpus('GB200', [
        slot('0008:06:00.0', 'pci0008:00', 0),
        slot('0009:06:00.0', 'pci0009:00', 0),
        slot('0018:06:00.0', 'pci0018:00', 1),
        slot('0019:06:00.0', 'pci0019:00', 1),
      ]),
      nics: ['0000', '0002', '0010', '0012'].flatMap((dom, i) =>
        [0, 1].map((fn) =>
          nic(`rdma${i * 2 + fn}`, `${dom}:03:00.${fn}`, `pci${dom}:00`, i < 2 ? 0 : 1, 'ConnectX-8', {
            rdmaDevice: `mlx5_${i < 2 ? i * 2 + fn : i * 2 + fn + 1}`,
            speedGbps: 400,
          }),
        ),
      ),
    },
    provenance: {
      gpus: seen('DRANET'),
      busIds: seen('DRANET'),
      pcieRoots: seen('DRANET'),
      numa: seen('DRANET', 'from the capture notes: domains 0008/0009 on NUMA 0, 0018/0019 on NUMA 1'),
      nics: seen('DRANET'),
      driver: seen('DRANET', '580.126.20'),
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
      gpus: gpus('GB300', [
        slot('0008:06:00.0', 'pci0008:00', 0),
        slot('0009:06:00.0', 'pci0009:00', 0),
        slot('0018:06:00.0', 'pci0018:00', 1),
        slot('0019:06:00.0', 'pci0019:00', 1),
      ]),
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
