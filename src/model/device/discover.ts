import type { PciTopology } from '../hardware/sysfs.js';
import {
  NVML_RETURN,
  NvmlError,
  type GpuInstancePlacement,
  type GpuInstanceProfileInfo,
  type Nvml,
} from '../nvml/types.js';
import { giEnumName, migProfileName } from './profile-name.js';
import { GI_PROFILE_ENUM, type GiProfileEnumName } from '../catalog/types.js';

const ARCH_NAMES: Record<number, string> = {
  2: 'Kepler',
  3: 'Maxwell',
  4: 'Pascal',
  5: 'Volta',
  6: 'Turing',
  7: 'Ampere',
  8: 'Ada Lovelace',
  9: 'Hopper',
  10: 'Blackwell',
};
const BRAND_NAMES: Record<number, string> = {
  0: 'Unknown',
  1: 'Quadro',
  2: 'Tesla',
  3: 'NVS',
  4: 'Grid',
  5: 'GeForce',
  6: 'Titan',
  14: 'Nvidia',
};
const ADDRESSING_NAMES: Record<number, string> = { 0: 'None', 1: 'HMM', 2: 'ATS' };
const HOPPER = 9;

/** A GI profile usable by the driver: one whose compute instance spans the whole GI. */
export interface MigProfile {
  enumName: GiProfileEnumName;
  /** go-nvlib profile string, e.g. `1g.10gb+me`. */
  name: string;
  info: GpuInstanceProfileInfo;
  placements: GpuInstancePlacement[];
}

export interface StaticMigDevice {
  uuid: string;
  profile: MigProfile;
  placement: GpuInstancePlacement;
  gpuInstanceId: number;
  computeInstanceId: number;
}

/** What the driver learns about one GPU at start-up (its `GpuInfo`), all from NVML and sysfs. */
export interface GpuInfo {
  index: number;
  minor: number;
  uuid: string;
  productName: string;
  brand: string;
  architecture: string;
  /** `major.minor`, before semver normalisation. */
  cudaComputeCapability: string;
  driverVersion: string;
  /** `major.minor` from NVML's integer. */
  cudaDriverVersion: string;
  pciBusId: string;
  /** The PCI device ID (`0x2330`), which a VFIO device publishes. */
  pciDeviceId: number;
  pcieRoot: string | null;
  numaNode: number | null;
  addressingMode: string | null;
  /** NVML's module ID; 0 where NVML has none, as NVIDIA's GpuInfo leaves it (v0.5.0 nvlib.go). */
  moduleId: number;
  /** Null where NVML does not report memory (unified-memory parts). */
  memoryBytes: bigint | null;
  migCapable: boolean;
  migEnabled: boolean;
  /** Hopper and later switch MIG mode without a GPU reset, so dynamic MIG may toggle it. */
  migToggleWithoutReset: boolean;
  migProfiles: MigProfile[];
  migDevices: StaticMigDevice[];
}

function optional<T>(read: () => T): T | null {
  try {
    return read();
  } catch (e) {
    if (e instanceof NvmlError && e.code === NVML_RETURN.ERROR_NOT_SUPPORTED) return null;
    throw e;
  }
}

/** The lower-cased, 4-digit-domain bus ID go-nvlib derives from NVML's `00000000:3B:00.0`. */
function canonicalNvmlBusId(busId: string): string {
  const lower = busId.replace(/\0.*$/, '').toLowerCase();
  return lower.startsWith('0000') && lower.length > 12 ? lower.slice(4) : lower;
}

function migProfilesOf(device: ReturnType<Nvml['deviceGetHandleByIndex']>, totalBytes: bigint): MigProfile[] {
  const profiles: MigProfile[] = [];
  for (let i = 0; i < Object.keys(GI_PROFILE_ENUM).length; i++) {
    const enumName = giEnumName(i);
    if (!enumName) continue;
    let info: GpuInstanceProfileInfo;
    try {
      info = device.getGpuInstanceProfileInfo(i);
    } catch (e) {
      if (
        e instanceof NvmlError &&
        (e.code === NVML_RETURN.ERROR_NOT_SUPPORTED || e.code === NVML_RETURN.ERROR_INVALID_ARGUMENT)
      ) {
        continue;
      }
      throw e;
    }
    profiles.push({
      enumName,
      name: migProfileName(enumName, info.memorySizeMB, totalBytes),
      info,
      placements: device.getGpuInstancePossiblePlacements(info),
    });
  }
  return profiles;
}

export function discoverGpus(nvml: Nvml, sysfs: PciTopology): GpuInfo[] {
  const driverVersion = nvml.systemGetDriverVersion();
  const cuda = nvml.systemGetCudaDriverVersion();
  const cudaDriverVersion = `${Math.trunc(cuda / 1000)}.${Math.trunc((cuda % 1000) / 10)}`;
  const gpus: GpuInfo[] = [];
  for (let i = 0; i < nvml.deviceGetCount(); i++) {
    const d = nvml.deviceGetHandleByIndex(i);
    const pci = d.getPciInfo();
    const pciBusId = canonicalNvmlBusId(pci.busId);
    const [major, minor] = d.getCudaComputeCapability();
    const arch = d.getArchitecture();
    const memory = optional(() => d.getMemoryInfo());
    const migMode = optional(() => d.getMigMode());
    const addressing = optional(() => d.getAddressingMode());
    const numa = sysfs.numaNode(pciBusId);
    const migProfiles = migMode === null ? [] : migProfilesOf(d, memory?.total ?? 0n);
    const migEnabled = migMode?.[0] === 1;
    const info: GpuInfo = {
      index: i,
      minor: d.getMinorNumber(),
      uuid: d.getUUID(),
      productName: d.getName(),
      brand: BRAND_NAMES[d.getBrand()] ?? 'Unknown',
      architecture: ARCH_NAMES[arch] ?? 'Unknown',
      cudaComputeCapability: `${major}.${minor}`,
      driverVersion,
      cudaDriverVersion,
      pciBusId,
      pciDeviceId: pci.pciDeviceId >>> 16,
      pcieRoot: sysfs.pcieRoot(pciBusId),
      numaNode: numa < 0 ? null : numa,
      addressingMode: addressing === null ? null : (ADDRESSING_NAMES[addressing] ?? null),
      moduleId: optional(() => d.getModuleId()) ?? 0,
      memoryBytes: memory?.total ?? null,
      migCapable: migMode !== null,
      migEnabled,
      migToggleWithoutReset: arch >= HOPPER,
      migProfiles,
      migDevices: [],
    };
    if (migEnabled) {
      info.migDevices = d.getMigDevices().map((m) => {
        const gi = d.getGpuInstanceById(m.getGpuInstanceId()).getInfo();
        const profile = migProfiles.find((p) => p.info.id === gi.profileId);
        if (!profile)
          throw new NvmlError(NVML_RETURN.ERROR_NOT_FOUND, `GPU instance profile ${gi.profileId} not listed`);
        return {
          uuid: m.getUUID(),
          profile,
          placement: gi.placement,
          gpuInstanceId: gi.id,
          computeInstanceId: m.getComputeInstanceId(),
        };
      });
    }
    gpus.push(info);
  }
  return gpus;
}
