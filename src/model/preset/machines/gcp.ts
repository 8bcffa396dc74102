import type { NicEntry } from '../machine-spec.js';
import type { Preset } from '../types.js';
import type { Source } from '../../catalog/types.js';
import { DEFAULT_MAX_PODS, GB_TRAY_SLOTS, gpus, inferred, nic, noNics, seen, sized, slot } from './parts.js';

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

export const GCP: readonly Preset[] = [
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
];
