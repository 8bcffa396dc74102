import type { NicEntry } from '../machine-spec.js';
import type { Preset, PresetAspect } from '../types.js';
import type { Source } from '../../catalog/types.js';
import {
  DEFAULT_MAX_PODS,
  family,
  GB_TRAY_SLOTS,
  gpus,
  hex,
  inferred,
  nic,
  noNics,
  r580,
  seen,
  sized,
  slot,
  vmNuma,
  type FamilySize,
  type Slot,
} from './parts.js';

const gvnic = { speedGbps: 200 };

/** GKE's machine sizes: Google's GB are GiB (as in n1-standard-1's 3.75); pods: Kubernetes' default. */
const gce = sized;
/** Google publishes no on-demand price read here; that of the AWS type with the same GPUs, per GPU. */
const awsPrice = (like: string): Source =>
  inferred('EC2PRICE', `no first-party price read; that of ${like} for as many of the same GPUs`);

// A3 High and A3 Mega: GPUs and gVNICs on roots of their own; A3 Mega has a gVNIC per GPU (TCPXO).
const A3_GPU_BUSES = ['04', '05', '0a', '0b', '84', '85', '8a', '8b'];
const a3Slots = A3_GPU_BUSES.map((b, i) => slot(`0000:${b}:00.0`, `pci0000:${b}`, i < 4 ? 0 : 1));

// A3 Ultra and A4: two GPUs a root, a ConnectX-7 (gpuNrdma0) beside each GPU on its root.
const A4_GPUS: readonly [string, string, string, number][] = [
  ['8f', '8c', '91', 0],
  ['90', '8c', '92', 0],
  ['96', '93', '98', 0],
  ['97', '93', '99', 0],
  ['c4', 'c1', 'c6', 1],
  ['c5', 'c1', 'c7', 1],
  ['cb', 'c8', 'cd', 1],
  ['cc', 'c8', 'ce', 1],
];
const a4Slots = A4_GPUS.map(([bus, root, , numa]) => slot(`0000:${bus}:00.0`, `pci0000:${root}`, numa));
const A4_NICS: NicEntry[] = A4_GPUS.map(([, root, bus, numa], i) =>
  nic(`gpu${i}rdma0`, `0000:${bus}:00.0`, `pci0000:${root}`, numa, 'ConnectX-7', {
    rdmaDevice: `mlx5_${i}`,
    speedGbps: 400,
  }),
);
const a4Prov = {
  pcieRoots: inferred(
    'AIONGKE',
    'GPU 0 under pci0000:8c and NIC 6 under pci0000:c8 seen; the rest by that pattern',
  ),
  numa: inferred('AIONGKE', 'NICs 0 and 6 seen on NUMA 0 and 1; GPUs follow their NICs'),
  nics: inferred(
    'GCPNET, AIONGKE',
    'eight CX-7, each aligned with one GPU (3,200 Gbps); gpu0rdma0 at 91:00.0 and gpu6rdma0 at cd:00.0 seen, the rest by pattern; the Titanium gVNICs not modelled',
  ),
  driver: seen('AIONGKE', '580.126.20'),
};

// A4X: one GB200 compute tray, laid out as OCI's (a captured slice); a CX-7 on each of four domains.
const a4xSlots = GB_TRAY_SLOTS;
const A4X_NICS: NicEntry[] = ['0000', '0002', '0010', '0012'].map((d, i) =>
  nic(`gpu${i}rdma0`, `${d}:03:00.0`, `pci${d}:00`, i < 2 ? 0 : 1, 'ConnectX-7', {
    rdmaDevice: `mlx5_${i}`,
    speedGbps: 400,
  }),
);

const GCP_BIG: readonly Preset[] = [
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
    name: 'gcp-a3-megagpu-8g',
    instanceType: 'a3-megagpu-8g',
    instance: gce(
      208,
      1872,
      'amd64',
      55.04,
      seen('SKYGCP', "its MemoryGiB column; pods: Kubernetes' default"),
      awsPrice('p5.48xlarge'),
    ),
    description: 'Google Cloud a3-megagpu-8g (8x H100 80GB HBM3, 8x GPUDirect-TCPXO gVNIC)',
    spec: {
      driver: { version: '580.126.20' },
      gpus: gpus('H100-SXM5-80GB', a3Slots),
      nics: ['06', '07', '0c', '0d', '86', '87', '8c', '8d'].map((bus, i) =>
        nic(`eth${i + 1}`, `0000:${bus}:00.0`, a3Slots[i]?.root ?? null, i < 4 ? 0 : 1, 'gVNIC', gvnic),
      ),
    },
    provenance: {
      gpus: seen('SKYGCP'),
      busIds: inferred('S80', 'assumed equal to a3-highgpu-8g'),
      pcieRoots: inferred('FAKEGPU', "one root per GPU, each gVNIC on its GPU's root assumed"),
      numa: inferred('FAKEGPU', 'GPUs 0-3 on NUMA 0, 4-7 on NUMA 1 assumed'),
      nics: inferred('GKEDRANET, GCPNET', 'eth1-eth8 gVNIC, 1,800 Gbps in all; BDFs invented'),
      driver: inferred('FAKEGPU', 'a current R580 driver'),
    },
  },
  {
    name: 'gcp-a3-ultragpu-8g',
    instanceType: 'a3-ultragpu-8g',
    instance: gce(
      224,
      2952,
      'amd64',
      63.296,
      seen('SKYGCP', "its MemoryGiB column; pods: Kubernetes' default"),
      awsPrice('p5en.48xlarge'),
    ),
    description: 'Google Cloud a3-ultragpu-8g (8x H200, 8x ConnectX-7 400G RoCE)',
    spec: { driver: { version: '580.126.20' }, gpus: gpus('H200', a4Slots), nics: A4_NICS },
    provenance: {
      gpus: seen('AIONGKE'),
      busIds: inferred(
        'AIONGKE, DRANETGKE',
        'GPU 0 at 8f:00.0 seen; the rest assumed equal to a4-highgpu-8g',
      ),
      ...a4Prov,
    },
  },
  {
    name: 'gcp-a4-highgpu-8g',
    instanceType: 'a4-highgpu-8g',
    instance: gce(
      224,
      3968,
      'amd64',
      113.9328,
      seen('SKYGCP', "its MemoryGiB column; pods: Kubernetes' default"),
      awsPrice('p6-b200.48xlarge'),
    ),
    description: 'Google Cloud a4-highgpu-8g (8x B200, 8x ConnectX-7 400G RoCE)',
    spec: { driver: { version: '580.126.20' }, gpus: gpus('B200', a4Slots), nics: A4_NICS },
    provenance: {
      gpus: seen('DRANETGKE'),
      busIds: seen('DRANETGKE', 'NCCL log: 8f, 90, 96, 97, c4, c5, cb, cc'),
      ...a4Prov,
      driver: inferred('AIONGKE', 'assumed equal to a3-ultragpu-8g'),
    },
  },
  {
    name: 'gcp-a4x-highgpu-4g',
    instanceType: 'a4x-highgpu-4g',
    instance: gce(
      140,
      884,
      'arm64',
      56.9664,
      inferred('GCPARM', "140 vCPUs and 884 GB, Google's GB taken as GiB; pods: Kubernetes' default"),
      awsPrice('p6-b200.48xlarge'),
    ),
    description: 'Google Cloud a4x-highgpu-4g (4x GB200, 4x ConnectX-7 400G RoCE)',
    spec: { driver: { version: '580.126.20' }, gpus: gpus('GB200', a4xSlots), nics: A4X_NICS },
    provenance: {
      gpus: seen('GCPARM'),
      busIds: inferred('DRANET', "assumed equal to OCI's captured GB200 tray"),
      pcieRoots: inferred('DRANET', "assumed equal to OCI's captured GB200 tray"),
      numa: inferred('DRANET', "assumed equal to OCI's captured GB200 tray"),
      nics: inferred('GCPNET, GKEDRANET', "four CX-7 (1,600 Gbps), gpu0rdma0-gpu3rdma0; BDFs as OCI's tray"),
      driver: inferred('FAKEGPU', 'a current R580 driver'),
    },
  },
  {
    name: 'gcp-a4x-maxgpu-4g-metal',
    instanceType: 'a4x-maxgpu-4g-metal',
    instance: gce(
      144,
      960,
      'arm64',
      56.9664 * (18 / 16),
      seen('GCPGPUS', "A4X Max: 144 vCPUs, 960 GB (taken as GiB), 4 GB300; pods: Kubernetes' default"),
      inferred(
        'OCIB300',
        "Google publishes none (capacity is reserved): a4x-highgpu-4g's, by OCI's list prices of GB300 to GB200 (18 to 16 a GPU)",
      ),
    ),
    description: 'Google Cloud a4x-maxgpu-4g-metal (4x GB300, 8x ConnectX-8 400G RoCE)',
    spec: {
      driver: { version: '580.126.20' },
      gpus: gpus('GB300', a4xSlots),
      nics: ['0000', '0002', '0010', '0012'].flatMap((d, i) =>
        [0, 1].map((fn) =>
          nic(`gpu${i}rdma${fn}`, `${d}:03:00.${fn}`, `pci${d}:00`, i < 2 ? 0 : 1, 'ConnectX-8', {
            rdmaDevice: `mlx5_${i * 2 + fn}`,
            speedGbps: 400,
          }),
        ),
      ),
    },
    provenance: {
      gpus: seen('GCPGPUS'),
      busIds: inferred('DRANET', "assumed equal to OCI's captured GB200 tray"),
      pcieRoots: inferred('DRANET', "assumed equal to OCI's captured GB200 tray"),
      numa: inferred('DRANET', "assumed equal to OCI's captured GB200 tray"),
      nics: inferred(
        'GCPGPUS, CLOUD2',
        '6 NICs and 3,600 Gbps per Google; eight CX-8 RDMA ports (3,200 Gbps) per third-party notes, two per GPU; BDFs as the A4X tray',
      ),
      driver: inferred('FAKEGPU', 'a current R580 driver'),
    },
  },
];

/** A GCE size, `[type, vCPUs, GiB, GPUs, price]`; Google's GB are GiB. */
type Row = readonly [string, number, number, number, number];
const gceSizes = (rows: readonly Row[], price: (type: string) => Source): FamilySize[] =>
  rows.map(([type, vcpus, gib, n, usd]) => ({
    type,
    gpus: n,
    instance: gce(
      vcpus,
      gib,
      'amd64',
      usd,
      seen('SKYGCP7', "vCPUs and MemoryGiB; pods: Kubernetes' default"),
      price(type),
    ),
  }));

/** A2 and G2 VMs: GPUs on root bus 00 from device `first` up (L4's 03 seen; A100's 04 assumed). */
const vmSlots =
  (first: number) =>
  (n: number): Slot[] =>
    Array.from({ length: n }, (_, i) =>
      slot(`0000:00:${hex(first + i)}.0`, 'pci0000:00', n >= 8 ? (i < n / 2 ? 0 : 1) : -1),
    );

const a2Prov = (n: number): Record<PresetAspect, Source> => ({
  gpus: inferred('SKYGCP7', 'A100s as the machine family says, as many as its -<n>g suffix'),
  busIds: inferred('FAKEGPU', "from 00:04.0 up, one device a GPU, as GCP's L4 VMs from 00:03.0"),
  pcieRoots: inferred('FAKEGPU', 'root bus 00 as the BDFs imply'),
  numa: vmNuma(n),
  nics: noNics,
  driver: r580,
});
const a2Price = seen('GCEPRICE', 'the GPUs included; its region, us-central1, inferred from the host share');

const A2_HIGH = family({
  prefix: 'gcp',
  vendor: 'Google Cloud',
  model: 'A100-SXM4-40GB',
  label: 'A100-SXM4-40GB',
  driver: '580.126.20',
  sizes: gceSizes(
    [
      ['a2-highgpu-1g', 12, 85, 1, 3.673385],
      ['a2-highgpu-2g', 24, 170, 2, 7.34677],
      ['a2-highgpu-4g', 48, 340, 4, 14.69354],
      ['a2-highgpu-8g', 96, 680, 8, 29.38708],
      ['a2-megagpu-16g', 96, 1360, 16, 55.739504],
    ],
    () => a2Price,
  ),
  slots: vmSlots(4),
  provenance: a2Prov,
});

const A2_ULTRA = family({
  prefix: 'gcp',
  vendor: 'Google Cloud',
  model: 'A100-SXM4-80GB',
  label: 'A100-SXM4-80GB',
  driver: '580.126.20',
  sizes: gceSizes(
    [
      ['a2-ultragpu-1g', 12, 170, 1, 5.0688],
      ['a2-ultragpu-2g', 24, 340, 2, 10.1376],
      ['a2-ultragpu-4g', 48, 680, 4, 20.2752],
      ['a2-ultragpu-8g', 96, 1360, 8, 40.5504],
    ],
    () => a2Price,
  ),
  slots: vmSlots(4),
  provenance: a2Prov,
});

/** Google's G2 prices were not found whole (the GPU part missing): the g6 size with as many L4s. */
const G2_LIKE: Readonly<Record<string, string>> = {
  'g2-standard-4': 'g6.xlarge',
  'g2-standard-8': 'g6.2xlarge',
  'g2-standard-12': 'g6.4xlarge',
  'g2-standard-16': 'g6.4xlarge',
  'g2-standard-24': 'two g6.2xlarge',
  'g2-standard-32': 'g6.8xlarge',
  'g2-standard-48': 'g6.12xlarge',
  'g2-standard-96': 'g6.48xlarge',
};
const G2 = family({
  prefix: 'gcp',
  vendor: 'Google Cloud',
  model: 'L4',
  label: 'L4',
  driver: '580.159.04',
  sizes: gceSizes(
    [
      ['g2-standard-4', 4, 16, 1, 0.8048],
      ['g2-standard-8', 8, 32, 1, 0.9776],
      ['g2-standard-12', 12, 48, 1, 1.3232],
      ['g2-standard-16', 16, 64, 1, 1.3232],
      ['g2-standard-24', 24, 96, 2, 1.9552],
      ['g2-standard-32', 32, 128, 1, 2.0144],
      ['g2-standard-48', 48, 192, 4, 4.6016],
      ['g2-standard-96', 96, 384, 8, 13.3504],
    ],
    (type) => awsPrice(G2_LIKE[type] ?? 'g6.xlarge'),
  ),
  slots: vmSlots(3),
  provenance: (n) => ({
    gpus: inferred(
      'S81, SKYGCP7',
      'L4s; how many per size from third-party tables (1, 2 for -24, 4 for -48, 8 for -96)',
    ),
    busIds:
      n === 1 ? seen('S25') : n === 4 ? seen('S81') : inferred('S81', 'from 00:03.0 up, one device a GPU'),
    pcieRoots: inferred('FAKEGPU', 'root bus 00 as the BDFs imply'),
    numa: vmNuma(n),
    nics: noNics,
    driver: seen('S81', '580.159.04'),
  }),
});

/** a3-highgpu-1g/2g/4g: the first GPUs of an a3-highgpu-8g host, at its price per GPU. */
const A3_SMALL = family({
  prefix: 'gcp',
  vendor: 'Google Cloud',
  model: 'H100-SXM5-80GB',
  label: 'H100 80GB HBM3',
  driver: '580.126.20',
  sizes: gceSizes(
    [
      ['a3-highgpu-1g', 26, 234, 1, 6.88],
      ['a3-highgpu-2g', 52, 468, 2, 13.76],
      ['a3-highgpu-4g', 104, 936, 4, 27.52],
    ],
    () => inferred('EC2PRICE26', "an eighth of p5.48xlarge's price per H100"),
  ),
  slots: (n) => A3_GPU_BUSES.slice(0, n).map((b) => slot(`0000:${b}:00.0`, `pci0000:${b}`, -1)),
  provenance: () => ({
    gpus: inferred('SKYGCP7', 'H100s, as many as the -<n>g suffix'),
    busIds: inferred('S80', "the first GPUs of an a3-highgpu-8g's host"),
    pcieRoots: inferred('FAKEGPU', 'one root per GPU assumed'),
    numa: inferred('FAKEGPU', 'single NUMA node: attribute omitted'),
    nics: noNics,
    driver: r580,
  }),
});

/** a3-edgegpu-8g: an a3-highgpu-8g sold for edge zones (Google's tables give both the same shape). */
function a3Edge(): Preset {
  const high = GCP_BIG.find((p) => p.name === 'gcp-a3-highgpu-8g');
  if (!high) throw new Error('gcp-a3-highgpu-8g is missing');
  return {
    ...high,
    name: 'gcp-a3-edgegpu-8g',
    instanceType: 'a3-edgegpu-8g',
    description: high.description.replace('a3-highgpu-8g', 'a3-edgegpu-8g'),
    provenance: {
      ...high.provenance,
      gpus: inferred(
        'SKYGCP7',
        '208 vCPUs and 1,872 GiB as a3-highgpu-8g; its 8 H100 and layout assumed the same',
      ),
    },
  };
}

export const GCP: readonly Preset[] = [...GCP_BIG, a3Edge(), ...A2_HIGH, ...A2_ULTRA, ...G2, ...A3_SMALL];
