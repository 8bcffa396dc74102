import { FakegpuError, oneOf, show } from '../../errors.js';
import type { Source } from './types.js';

/**
 * Network functions as the kernel and pci.ids describe them: what DRANET reads from sysfs, netlink and
 * the pci.ids database and turns into `dra.net/*` attributes. A NIC in a profile names one of these by
 * `model`; everything else about it (names, RDMA, encapsulation) follows from the model.
 */
export interface NicModel {
  key: string;
  /** PCI vendor and device IDs, lower-case hex. */
  vendorId: string;
  deviceId: string;
  /** pci.ids names as DRANET publishes them (`pciVendor`, `pciDevice`); `unknown` where pci.ids has none. */
  vendorName: string;
  deviceName: string;
  /** `pciSubsystem`: the subsystem device ID, as DRANET prints it when pci.ids names no subsystem. */
  subsystem: string;
  /** Exposes an RDMA device (`/dev/infiniband/uverbs*`): EFA, ConnectX. */
  rdma: boolean;
  /** netlink link type of its netdev; `null` where the function has none (EFA, InfiniBand VFs). */
  encapsulation: 'ether' | 'infiniband' | null;
  mtu: number | null;
  /** A physical function able to create SR-IOV virtual functions. */
  sriov: boolean;
  /** A virtual function (`dra.net/isSriovVf`). */
  virtualFunction: boolean;
  sources: Partial<Record<'ids' | 'names' | 'subsystem' | 'mtu', Source>>;
}

const seen = (ref: string, note?: string): Source =>
  note ? { ref, confirmed: true, note } : { ref, confirmed: true };
const inferred = (ref: string, note: string): Source => ({ ref, confirmed: false, note });

const MELLANOX = 'Mellanox Technologies';
const AMAZON = 'Amazon.com, Inc.';

export const NIC_MODELS: readonly NicModel[] = [
  {
    key: 'ConnectX-6',
    vendorId: '15b3',
    deviceId: '101b',
    vendorName: MELLANOX,
    deviceName: 'MT28908 Family [ConnectX-6]',
    subsystem: '0007',
    rdma: true,
    encapsulation: 'infiniband',
    mtu: 4092,
    sriov: true,
    virtualFunction: false,
    sources: {
      ids: seen('S59', 'lspci 15b3:101b on DGX A100'),
      names: inferred('PCIIDS', 'pci.ids name of 15b3:101b'),
      subsystem: inferred('FAKEGPU', 'HDR adapter subsystem not captured'),
      mtu: inferred('FAKEGPU', 'IPoIB connected-mode default'),
    },
  },
  {
    key: 'ConnectX-7',
    vendorId: '15b3',
    deviceId: '1021',
    vendorName: MELLANOX,
    deviceName: 'MT2910 Family [ConnectX-7]',
    subsystem: '0041',
    rdma: true,
    encapsulation: 'infiniband',
    mtu: 4092,
    sriov: true,
    virtualFunction: false,
    sources: {
      ids: seen('S66', 'lspci 15b3:1021 on DGX H100'),
      names: inferred('PCIIDS', 'pci.ids name of 15b3:1021'),
      subsystem: inferred('FAKEGPU', 'OSFP adapter subsystem not captured'),
      mtu: inferred('FAKEGPU', 'IPoIB connected-mode default'),
    },
  },
  {
    key: 'ConnectX-8',
    vendorId: '15b3',
    deviceId: '1023',
    vendorName: MELLANOX,
    deviceName: 'CX8 Family [ConnectX-8]',
    subsystem: '0208',
    rdma: true,
    encapsulation: 'ether',
    mtu: 9000,
    sriov: true,
    virtualFunction: false,
    sources: {
      ids: seen('DRANET', 'OCI GB200 and GB300 dra.net slices'),
      names: seen('DRANET'),
      subsystem: seen('DRANET', 'OCI GB300 slice'),
      mtu: seen('DRANET', 'OCI GB200 slice (GB300 runs 9216)'),
    },
  },
  {
    key: 'ConnectX VF',
    vendorId: '15b3',
    deviceId: '101e',
    vendorName: MELLANOX,
    deviceName: 'ConnectX Family mlx5Gen Virtual Function',
    subsystem: '0240',
    rdma: true,
    encapsulation: null,
    mtu: null,
    sriov: false,
    virtualFunction: true,
    sources: {
      ids: seen('DRANET', 'Azure ND GB300 v6 dra.net slice'),
      names: seen('DRANET'),
      subsystem: seen('DRANET'),
    },
  },
  {
    key: 'EFA',
    vendorId: '1d0f',
    deviceId: 'efa0',
    vendorName: AMAZON,
    deviceName: 'Elastic Fabric Adapter (EFA)',
    subsystem: 'efa0',
    rdma: true,
    encapsulation: null,
    mtu: null,
    sriov: false,
    virtualFunction: false,
    sources: {
      ids: seen('DRANET', 'AWS p4d dra.net slice'),
      names: seen('DRANET'),
      subsystem: seen('DRANET'),
    },
  },
  {
    key: 'EFA v2',
    vendorId: '1d0f',
    deviceId: 'efa1',
    vendorName: AMAZON,
    deviceName: 'Elastic Fabric Adapter (EFA)',
    subsystem: 'efa1',
    rdma: true,
    encapsulation: null,
    mtu: null,
    sriov: false,
    virtualFunction: false,
    sources: {
      ids: inferred('S76', 'second-generation EFA on p5'),
      names: inferred('PCIIDS', 'pci.ids name of 1d0f:efa1'),
      subsystem: inferred('FAKEGPU', 'assumed to follow EFA (efa0 on p4d)'),
    },
  },
  {
    key: 'EFA v3',
    vendorId: '1d0f',
    deviceId: 'efa2',
    vendorName: AMAZON,
    deviceName: 'Elastic Fabric Adapter (EFA)',
    subsystem: 'efa2',
    rdma: true,
    encapsulation: null,
    mtu: null,
    sriov: false,
    virtualFunction: false,
    sources: {
      ids: inferred('LINUXEFA', 'the newest EFA id in the kernel; taken for p5en, p6-b200 and p6e-gb200'),
      names: inferred('PCIIDS', 'the name pci.ids gives the other EFA ids'),
      subsystem: inferred('FAKEGPU', 'assumed to follow EFA (efa0 on p4d)'),
    },
  },
  {
    key: 'ENA',
    vendorId: '1d0f',
    deviceId: 'ec20',
    vendorName: AMAZON,
    deviceName: 'Elastic Network Adapter (ENA)',
    subsystem: 'ec20',
    rdma: false,
    encapsulation: 'ether',
    mtu: 9001,
    sriov: false,
    virtualFunction: false,
    sources: {
      ids: seen('DRANET', 'AWS p4d dra.net slice'),
      names: seen('DRANET'),
      subsystem: seen('DRANET'),
      mtu: seen('DRANET'),
    },
  },
  {
    key: 'gVNIC',
    vendorId: '1ae0',
    deviceId: '0042',
    vendorName: 'Google, Inc.',
    deviceName: 'Compute Engine Virtual Ethernet [gVNIC]',
    subsystem: '0058',
    rdma: false,
    encapsulation: 'ether',
    mtu: 8244,
    sriov: false,
    virtualFunction: false,
    sources: {
      ids: inferred('PCIIDS', 'gVNIC PCI IDs'),
      names: inferred('PCIIDS', 'pci.ids names of 1ae0:0042'),
      subsystem: inferred('FAKEGPU', 'not captured'),
      mtu: inferred('S79', 'GPUDirect-TCPX networks use MTU 8244'),
    },
  },
  {
    key: 'Azure MANA',
    vendorId: '1414',
    deviceId: '00ba',
    vendorName: 'Microsoft Corporation',
    deviceName: 'unknown',
    subsystem: '00b9',
    rdma: false,
    encapsulation: 'ether',
    mtu: 1500,
    sriov: false,
    virtualFunction: false,
    sources: {
      ids: inferred('DRANET', 'vendor and subsystem captured; device ID inferred'),
      names: seen('DRANET', 'pci.ids has no name for it: DRANET prints "unknown"'),
      subsystem: seen('DRANET'),
      mtu: seen('DRANET'),
    },
  },
];

const byKey = new Map(NIC_MODELS.map((m) => [m.key.toLowerCase(), m]));

export function findNicModel(key: string, field: string): NicModel {
  const m = byKey.get(key.trim().toLowerCase());
  if (!m)
    throw new FakegpuError(
      field,
      `unknown NIC model ${show(key)}; known models: ${oneOf(NIC_MODELS.map((n) => n.key))}`,
    );
  return m;
}
