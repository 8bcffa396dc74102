import type { NicEntry } from '../machine-spec.js';
import type { InstanceSize, Preset } from '../types.js';
import { DEFAULT_MAX_PODS, GB_TRAY_SLOTS, gpus, hex, inferred, nic, seen, sized, slot } from './parts.js';

/** An OCI bare-metal shape: 2 vCPUs an OCPU on x86; OCI's list price, the same in every region. */
const oke = (vcpus: number, memoryGiB: number, pricePerHour: number): InstanceSize =>
  sized(
    vcpus,
    memoryGiB,
    'amd64',
    pricePerHour,
    seen('SKYOCI', "vCPUs and GiB per shape; pods: Kubernetes' default"),
    seen('SKYOCI'),
  );

// BM.GPU.H100.8, H200.8 and B200.8 share their PCI layout (OCI's shape table): each GPU paired with an
// RDMA card three buses before it; roots and NUMA are not in it.
const OCI_GPUS: readonly [string, string][] = [
  ['0f', '0c'],
  ['2d', '2a'],
  ['44', '41'],
  ['5b', '58'],
  ['89', '86'],
  ['a8', 'a5'],
  ['c0', 'bd'],
  ['d8', 'd5'],
];
const ociRoot = (nicBus: string): string => `pci0000:${hex(parseInt(nicBus, 16) - 2)}`;
const ociSlots = OCI_GPUS.map(([gpu, card], i) => slot(`0000:${gpu}:00.0`, ociRoot(card), i < 4 ? 0 : 1));
/** One 400G port a card (H200.8, B200.8), named as on DGX H100. */
const OCI_NICS_400: NicEntry[] = OCI_GPUS.map(([, card], i) =>
  nic(`rdma${i}`, `0000:${card}:00.0`, ociRoot(card), i < 4 ? 0 : 1, 'ConnectX-7', {
    rdmaDevice: `mlx5_${[0, 3, 4, 5, 6, 9, 10, 11][i] ?? i}`,
    speedGbps: 400,
  }),
);
/** Both 200G ports of each card (H100.8), skipping mlx5_2 and mlx5_11, the front-end cards. */
const H100_MLX = [0, 1, 3, 4, 5, 6, 7, 8, 9, 10, 12, 13, 14, 15, 16, 17];
const OCI_NICS_H100: NicEntry[] = OCI_GPUS.flatMap(([, card], i) =>
  [0, 1].map((fn) =>
    nic(`rdma${i * 2 + fn}`, `0000:${card}:00.${fn}`, ociRoot(card), i < 4 ? 0 : 1, 'ConnectX-7', {
      rdmaDevice: `mlx5_${H100_MLX[i * 2 + fn] ?? i * 2 + fn}`,
      speedGbps: 200,
    }),
  ),
);
const ociProv = {
  busIds: seen('OCISHAPES'),
  pcieRoots: inferred('FAKEGPU', "each GPU on its RDMA card's root, as DGX; root bus numbers guessed"),
  numa: inferred('FAKEGPU', 'GPUs 0-3 (buses below 0x80) on NUMA 0, 4-7 on NUMA 1 assumed'),
  driver: inferred('FAKEGPU', 'a current R580 driver'),
};

const oci400Prov = inferred(
  'OCISHAPES, OCIHC',
  'eight cards, rdma0-rdma7 and their mlx5 names seen; 400G each inferred',
);

export const OCI: readonly Preset[] = [
  {
    name: 'oci-bm.gpu.h100.8',
    instanceType: 'BM.GPU.H100.8',
    instance: oke(224, 2048, 80),
    description: 'Oracle Cloud BM.GPU.H100.8 (8x H100 80GB HBM3, 16x ConnectX-7 200G)',
    spec: { driver: { version: '580.126.20' }, gpus: gpus('H100-SXM5-80GB', ociSlots), nics: OCI_NICS_H100 },
    provenance: {
      gpus: seen('OCISHAPES'),
      ...ociProv,
      nics: inferred(
        'OCISHAPES, OCIHC',
        'both ports of eight cards and their mlx5 names seen; 200G each inferred',
      ),
    },
  },
  {
    name: 'oci-bm.gpu.h200.8',
    instanceType: 'BM.GPU.H200.8',
    instance: oke(224, 3072, 80),
    description: 'Oracle Cloud BM.GPU.H200.8 (8x H200, 8x ConnectX-7 400G)',
    spec: { driver: { version: '580.126.20' }, gpus: gpus('H200', ociSlots), nics: OCI_NICS_400 },
    provenance: {
      gpus: seen('OCISHAPES'),
      ...ociProv,
      nics: oci400Prov,
    },
  },
  {
    name: 'oci-bm.gpu.b200.8',
    instanceType: 'BM.GPU.B200.8',
    instance: oke(256, 4096, 112),
    description: 'Oracle Cloud BM.GPU.B200.8 (8x B200, 8x ConnectX-7 400G)',
    spec: { driver: { version: '580.126.20' }, gpus: gpus('B200', ociSlots), nics: OCI_NICS_400 },
    provenance: {
      gpus: seen('OCISHAPES'),
      ...ociProv,
      nics: oci400Prov,
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
      pricePerHour: 64,
      source: inferred(
        'CLOUD2',
        "144 OCPUs (1 OCPU = 1 Grace vCPU) and 960 GB in a catalog citing OCI's shape table; OCI's estimator says 128; pods: Kubernetes' default",
      ),
      priceSource: seen('SKYOCI', "OCI's list price"),
    },
    description: 'Oracle Cloud BM.GPU.GB200.4 (4x GB200, 8x ConnectX-8 400G)',
    spec: {
      driver: { version: '580.126.20' },
      gpus: gpus('GB200', GB_TRAY_SLOTS),
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
];
