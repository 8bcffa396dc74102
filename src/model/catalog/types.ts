/**
 * Facts NVML reports about one GPU model. Each fact names where it was seen and whether that was real
 * hardware output (`confirmed`) or an inference; docs/fidelity.md is generated from these records.
 */

export interface Source {
  /** Short citation: a source id from `sources.ts` plus, if useful, which value it backs. */
  ref: string;
  /** True only when the value was read from real hardware output (nvidia-smi, NVML, a captured slice). */
  confirmed: boolean;
  note?: string;
}

export type Architecture = 'Turing' | 'Ampere' | 'Ada Lovelace' | 'Hopper' | 'Blackwell';

/** NVML brand strings as go-nvlib prints them; every data-centre part in the catalog reports `Nvidia`. */
export type Brand = 'Nvidia' | 'Tesla';

/** NVML GPU-instance profile enum indices (nvml.h `NVML_GPU_INSTANCE_PROFILE_*`). */
export const GI_PROFILE_ENUM = {
  '1_SLICE': 0,
  '2_SLICE': 1,
  '3_SLICE': 2,
  '4_SLICE': 3,
  '7_SLICE': 4,
  '8_SLICE': 5,
  '6_SLICE': 6,
  '1_SLICE_REV1': 7,
  '2_SLICE_REV1': 8,
  '1_SLICE_REV2': 9,
  '1_SLICE_GFX': 10,
  '2_SLICE_GFX': 11,
  '4_SLICE_GFX': 12,
  '1_SLICE_NO_ME': 13,
  '2_SLICE_NO_ME': 14,
  '1_SLICE_ALL_ME': 15,
  '2_SLICE_ALL_ME': 16,
} as const;
export type GiProfileEnumName = keyof typeof GI_PROFILE_ENUM;

/** One row of `nvidia-smi mig -lgip` plus its placements from `-lgipp`. */
export interface GiProfile {
  /** The profile string nvidia-smi prints, e.g. `1g.10gb+me`; tests check it against go-nvlib's formula. */
  name: string;
  /** `nvmlGpuInstanceProfileInfo_t.id`, the ID column of `-lgip` (not the enum index). */
  id: number;
  enumName: GiProfileEnumName;
  instances: number;
  memoryMiB: number;
  multiprocessors: number;
  decoders: number;
  encoders: number;
  copyEngines: number;
  jpegEngines: number;
  ofaEngines: number;
  /** Placement starts (memory-slice index) as `-lgipp` lists them. */
  placements: readonly number[];
  /** Memory slices each placement spans. */
  placementSize: number;
  source: Source;
}

export interface MigCapability {
  /** Memory slices of the GPU: 8 on GA100/GH100/GB100-class parts, 4 on A30 and RTX PRO 6000. */
  memorySlices: number;
  profiles: readonly GiProfile[];
}

export type GpuFact =
  | 'name'
  | 'brand'
  | 'architecture'
  | 'computeCapability'
  | 'memoryMiB'
  | 'pciDeviceId'
  | 'pciSubsystemId'
  | 'multiprocessors'
  | 'powerLimitW';

export interface GpuModel {
  /** Stable key used in profiles (`model: H100-SXM5-80GB`). */
  key: string;
  /** `nvmlDeviceGetName`. */
  name: string;
  brand: Brand;
  architecture: Architecture;
  computeCapability: readonly [major: number, minor: number];
  /** `nvmlDeviceGetMemoryInfo().total` in MiB as drivers R510+ report it. */
  memoryMiB: number;
  /** PCI device ID (the high 16 bits of NVML's `pciDeviceId`; vendor is always 0x10DE). */
  pciDeviceId: number;
  /** PCI subsystem device ID (the high 16 bits of NVML's `pciSubSystemId`), subsystem vendor 0x10DE. */
  pciSubsystemId: number;
  multiprocessors: number;
  powerLimitW: number;
  mig?: MigCapability;
  /** CPU and GPU share a coherent address space (Grace); NVML reports addressing mode ATS there. */
  coherentWithCpu?: boolean;
  /**
   * The GPU joins a multi-node NVLink fabric (NVL72 racks): NVML reports its cluster UUID and clique;
   * elsewhere `nvmlDeviceGetGpuFabricInfo` answers NOT_SUPPORTED.
   */
  nvlinkFabric?: boolean;
  provenance: Record<GpuFact, Source>;
}
