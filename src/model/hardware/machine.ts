import type { NicModel } from '../catalog/nics.js';
import type { GpuModel } from '../catalog/types.js';
import type { Placed } from '../mig/placement.js';
import type { FmPartition } from './fabric-manager.js';

/**
 * The physical machine: what `lspci`, sysfs and the GPUs' own firmware would show. Built once from a
 * profile; everything NVML and the driver report is derived from it.
 */
export interface Machine {
  /** Profile (or preset) name, for provenance in logs and output. */
  profile: string;
  nodeName: string;
  /** Exactly as `nvmlSystemGetDriverVersion` returns it, e.g. `580.95.05` (leading zeros kept). */
  driverVersion: string;
  /** As `nvmlSystemGetCudaDriverVersion` returns it: major*1000 + minor*10, e.g. 13000. */
  cudaDriverVersion: number;
  gpus: GpuHardware[];
  nics: NicHardware[];
  /** The NVLink fabric its GPUs report; null where they have none. */
  fabric: Fabric | null;
  /** Fabric Manager's partitions on a node with an NVSwitch fabric (`fabric-manager.ts`); null elsewhere. */
  fabricManager: readonly FmPartition[] | null;
}

/** What `nvmlDeviceGetGpuFabricInfo` reports for every GPU of a node in an NVLink domain. */
export interface Fabric {
  /** Lower-case UUID, the same for every node of the NVLink domain (rack). */
  clusterUuid: string;
  cliqueId: number;
}

export type AddressingMode = 'HMM' | 'ATS' | 'None';

export interface GpuHardware {
  /** NVML index: position in PCI bus order. */
  index: number;
  /** `/dev/nvidia<minor>`; the driver names devices by it. */
  minor: number;
  model: GpuModel;
  /** Canonical `dddd:bb:dd.f`, lower case. */
  busId: string;
  /** `pci<domain>:<bus>` of the root complex above the GPU; null where sysfs has none (e.g. Hyper-V vPCI). */
  pcieRoot: string | null;
  /** sysfs `numa_node`; -1 means none. */
  numaNode: number;
  /** `GPU-` followed by 8-4-4-4-12 hex. */
  uuid: string;
  /** NVML addressing mode, or null where the driver lacks the call (before R580) or the GPU does not support it. */
  addressingMode: AddressingMode | null;
  migEnabled: boolean;
  /** `nvmlDeviceGetModuleId`: the GPU's module on its baseboard, FM's physical ID (`fabric-manager.ts`). */
  moduleId: number;
  /** Whether NVML reports XID and ECC events for this GPU. */
  eventsSupported: boolean;
  /** GPU instances that exist at boot (static MIG), each with one full-size compute instance. */
  migInstances: Placed[];
}

export interface NicHardware {
  model: NicModel;
  /** Kernel interface name; null for functions without a netdev (EFA, InfiniBand VFs). */
  ifName: string | null;
  busId: string;
  pcieRoot: string | null;
  /** sysfs `numa_node`; -1 means none. */
  numaNode: number;
  /** null where the model has no RDMA. */
  rdmaDevice: string | null;
  /** null where there is no netdev. */
  mac: string | null;
  mtu: number | null;
  ipv4: string | null;
  /** Carries the default route, so a NIC driver keeps its hands off it. */
  primary: boolean;
  speedGbps: number | null;
}
