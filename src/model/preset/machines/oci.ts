import type { NicEntry } from '../machine-spec.js';
import type { Source } from '../../catalog/types.js';
import type { InstanceSize, Preset, PresetAspect } from '../types.js';
import {
  DEFAULT_MAX_PODS,
  family,
  GB_TRAY_SLOTS,
  gpus,
  hex,
  inferred,
  nic,
  noNics,
  seen,
  sized,
  slot,
  type Slot,
} from './parts.js';

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

const OCI_BIG: readonly Preset[] = [
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

/** Two ports of `cards` RDMA cards at `speedGbps`, or one port of each (`ports: 1`), laid out as H100.8's. */
function ociRdma(
  cards: readonly number[],
  ports: 1 | 2,
  model: string,
  speedGbps: number,
): { entries: NicEntry[]; label: string } {
  const entries = cards.flatMap((c, k) => {
    const [, card] = OCI_GPUS[c] ?? ['', ''];
    return Array.from({ length: ports }, (_, fn) =>
      nic(`rdma${k * ports + fn}`, `0000:${card}:00.${fn}`, ociRoot(card), c < 4 ? 0 : 1, model, {
        rdmaDevice: `mlx5_${k * ports + fn}`,
        speedGbps,
      }),
    );
  });
  return { entries, label: `${entries.length}x ${model} ${speedGbps}G` };
}
/** GPUs `which` of the H100.8 layout (OCI's other shapes assumed to follow it). */
const ociAt = (which: readonly number[]): Slot[] =>
  which.map((i) => ociSlots[i] ?? slot('0000:00:00.0', null, -1));
const FOUR = [0, 1, 4, 5];
const EIGHT = [0, 1, 2, 3, 4, 5, 6, 7];
const shapes = (o: { type: string; vcpus: number; gib: number; gpus: number; usd: number }[]) =>
  o.map(({ type, vcpus, gib, gpus: n, usd }) => ({
    type,
    gpus: n,
    instance: sized(
      vcpus,
      gib,
      'amd64',
      usd,
      seen('OCISHAPES2', "OCPUs (2 vCPUs each) and GB, taken as GiB; pods: Kubernetes' default"),
      seen('SKYOCI'),
    ),
  }));
const layoutProv = (nics: Source): Record<PresetAspect, Source> => ({
  gpus: seen('OCISHAPES2'),
  busIds: inferred('OCISHAPES', "laid out as BM.GPU.H100.8's (another server; its own not found)"),
  pcieRoots: ociProv.pcieRoots,
  numa: ociProv.numa,
  nics,
  driver: ociProv.driver,
});

const OCI_SHAPES: Preset[] = [
  ...family({
    prefix: 'oci',
    vendor: 'Oracle Cloud',
    model: 'L40S',
    label: 'L40S',
    driver: '580.126.20',
    sizes: shapes([{ type: 'BM.GPU.L40S.4', vcpus: 224, gib: 1024, gpus: 4, usd: 14 }]),
    slots: () => ociAt(FOUR),
    nics: () => ociRdma(FOUR, 1, 'ConnectX-7', 200),
    provenance: () =>
      layoutProv(
        inferred('OCISHAPES2', '800 Gbps of RDMA, how many cards not said: one 200G card a GPU assumed'),
      ),
  }),
  ...family({
    prefix: 'oci',
    vendor: 'Oracle Cloud',
    model: 'A100-SXM4-80GB',
    label: 'A100-SXM4-80GB',
    driver: '580.126.20',
    sizes: shapes([{ type: 'BM.GPU.A100-v2.8', vcpus: 256, gib: 2048, gpus: 8, usd: 32 }]),
    slots: () => ociAt(EIGHT),
    nics: () => ociRdma(EIGHT, 2, 'ConnectX-6', 100),
    provenance: () =>
      layoutProv(inferred('OCISHAPES2, OCIHC', '16x 100G RDMA; two ports beside each GPU assumed')),
  }),
  ...family({
    prefix: 'oci',
    vendor: 'Oracle Cloud',
    model: 'A100-SXM4-40GB',
    label: 'A100-SXM4-40GB',
    driver: '580.126.20',
    sizes: shapes([{ type: 'BM.GPU4.8', vcpus: 128, gib: 2048, gpus: 8, usd: 24.4 }]),
    slots: () => ociAt(EIGHT),
    nics: () => ociRdma(EIGHT, 1, 'ConnectX-6', 200),
    provenance: () => layoutProv(inferred('OCISHAPES2', '8x 200G RDMA; one card beside each GPU assumed')),
  }),
  ...family({
    prefix: 'oci',
    vendor: 'Oracle Cloud',
    model: 'A10',
    label: 'A10',
    driver: '580.126.20',
    sizes: shapes([{ type: 'BM.GPU.A10.4', vcpus: 128, gib: 1024, gpus: 4, usd: 8 }]),
    slots: () => ociAt(FOUR),
    provenance: () => layoutProv(noNics),
  }),
  ...family({
    prefix: 'oci',
    vendor: 'Oracle Cloud',
    model: 'A10',
    label: 'A10',
    driver: '580.126.20',
    sizes: shapes([
      { type: 'VM.GPU.A10.1', vcpus: 30, gib: 240, gpus: 1, usd: 2 },
      { type: 'VM.GPU.A10.2', vcpus: 60, gib: 480, gpus: 2, usd: 4 },
    ]),
    slots: (n) => Array.from({ length: n }, (_, i) => slot(`0000:00:${hex(4 + i)}.0`, 'pci0000:00', -1)),
    provenance: () => ({
      ...layoutProv(noNics),
      busIds: inferred('FAKEGPU', 'a VM: GPUs on root bus 00 from device 04 up'),
      pcieRoots: inferred('FAKEGPU', 'root bus 00 as the BDFs imply'),
      numa: inferred('FAKEGPU', 'single NUMA node: attribute omitted'),
    }),
  }),
  {
    name: 'oci-bm.gpu.b300.8',
    instanceType: 'BM.GPU.B300.8',
    instance: sized(
      256,
      4096,
      'amd64',
      120,
      inferred('CLOUD2', "256 vCPUs and 4,096 GB in a third-party table; pods: Kubernetes' default"),
      inferred('OCIB300', '$15 a GPU-hour, as a third party read it from OCI'),
    ),
    description: 'Oracle Cloud BM.GPU.B300.8 (8x B300, 16x ConnectX-8 400G)',
    spec: {
      driver: { version: '580.126.20' },
      gpus: gpus('B300', ociAt(EIGHT)),
      nics: ociRdma(EIGHT, 2, 'ConnectX-8', 400).entries,
    },
    provenance: {
      ...layoutProv(inferred('OCIB300', '16 RDMA ports (6,400 Gbps); two beside each GPU assumed')),
      gpus: seen('OCIB300'),
    },
  },
  {
    name: 'oci-bm.gpu.gb300.4',
    instanceType: 'BM.GPU.GB300.4',
    instance: {
      ...sized(
        144,
        960,
        'arm64',
        72,
        inferred('OCIB300', "as BM.GPU.GB200.4 (a tray of two Grace CPUs); pods: Kubernetes' default"),
        inferred('OCIB300', '$18 a GPU-hour, as a third party read it from OCI'),
      ),
    },
    description: 'Oracle Cloud BM.GPU.GB300.4 (4x GB300, 8x ConnectX-8 400G)',
    spec: { ...gb2004().spec, gpus: gpus('GB300', GB_TRAY_SLOTS) },
    provenance: {
      ...gb2004().provenance,
      gpus: seen('OCIB300, DRANET', 'the shape in OCI tooling; a GB300 slice captured on OCI'),
      nics: inferred('OCIB300', "8 RDMA HCAs, laid out as BM.GPU.GB200.4's captured slice"),
      driver: inferred('DRANET', 'assumed equal to BM.GPU.GB200.4'),
    },
  },
];

function gb2004(): Preset {
  const p = OCI_BIG.find((x) => x.name === 'oci-bm.gpu.gb200.4');
  if (!p) throw new Error('oci-bm.gpu.gb200.4 is missing');
  return p;
}

export const OCI: readonly Preset[] = [...OCI_BIG, ...OCI_SHAPES];
