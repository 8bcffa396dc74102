/**
 * The NVML surface the DRA driver uses, shaped like go-nvml so a real binding can replace the mock
 * behind this interface. Failures throw `NvmlError` with NVML's return code, as go-nvml returns them.
 */

export const NVML_RETURN = {
  ERROR_INVALID_ARGUMENT: 2,
  ERROR_NOT_SUPPORTED: 3,
  ERROR_NOT_FOUND: 6,
  ERROR_INSUFFICIENT_RESOURCES: 7,
  ERROR_TIMEOUT: 10,
  ERROR_GPU_IS_LOST: 15,
  ERROR_IN_USE: 19,
} as const;
export type NvmlReturn = (typeof NVML_RETURN)[keyof typeof NVML_RETURN];

export class NvmlError extends Error {
  readonly code: NvmlReturn;
  constructor(code: NvmlReturn, message: string) {
    // A return code is a value, as in go-nvml, and discovery meets one per unsupported MIG profile of
    // every GPU: capturing a stack trace for each made rendering a node several times slower.
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    super(message);
    Error.stackTraceLimit = limit;
    this.code = code;
    this.name = 'NvmlError';
  }
}

/** nvml.h `nvmlDeviceArchitecture_t`. */
export const NVML_ARCH = { TURING: 6, AMPERE: 7, ADA: 8, HOPPER: 9, BLACKWELL: 10 } as const;
/** nvml.h `nvmlBrandType_t` (the values the catalog uses). */
export const NVML_BRAND = { TESLA: 2, NVIDIA: 14 } as const;
/** nvml.h `nvmlDeviceAddressingModeType_t`. */
export const NVML_ADDRESSING = { NONE: 0, HMM: 1, ATS: 2 } as const;

export interface MemoryInfo {
  total: bigint;
  free: bigint;
  used: bigint;
}

export interface PciInfo {
  /** `00000000:3B:00.0` form. */
  busId: string;
  domain: number;
  bus: number;
  device: number;
  /** `(device << 16) | 0x10DE`. */
  pciDeviceId: number;
  pciSubSystemId: number;
}

export interface GpuInstancePlacement {
  start: number;
  size: number;
}

/** `nvmlGpuInstanceProfileInfo_v2_t` minus fields nothing reads. */
export interface GpuInstanceProfileInfo {
  /** The profile id (`-lgip` ID column), not the enum index. */
  id: number;
  isP2pSupported: number;
  sliceCount: number;
  instanceCount: number;
  multiprocessorCount: number;
  copyEngineCount: number;
  decoderCount: number;
  encoderCount: number;
  jpegCount: number;
  ofaCount: number;
  memorySizeMB: number;
}

export interface ComputeInstanceProfileInfo {
  id: number;
  sliceCount: number;
  instanceCount: number;
  multiprocessorCount: number;
}

export interface GpuInstanceInfo {
  id: number;
  profileId: number;
  placement: GpuInstancePlacement;
}

export interface ComputeInstanceInfo {
  id: number;
  profileId: number;
  gpuInstanceId: number;
}

export interface NvmlComputeInstance {
  getInfo(): ComputeInstanceInfo;
  destroy(): void;
}

export interface NvmlGpuInstance {
  getInfo(): GpuInstanceInfo;
  getComputeInstanceProfileInfo(profile: number, engProfile: number): ComputeInstanceProfileInfo;
  createComputeInstance(info: ComputeInstanceProfileInfo): NvmlComputeInstance;
  getComputeInstances(info: ComputeInstanceProfileInfo): NvmlComputeInstance[];
  destroy(): void;
}

/** A MIG device handle: one compute instance as a device of its own. */
export interface NvmlMigDevice {
  getUUID(): string;
  getGpuInstanceId(): number;
  getComputeInstanceId(): number;
  getMemoryInfo(): MemoryInfo;
  getDeviceHandleFromMigDeviceHandle(): NvmlDevice;
}

export interface NvmlDevice {
  getIndex(): number;
  getName(): string;
  getUUID(): string;
  getMinorNumber(): number;
  getMemoryInfo(): MemoryInfo;
  getPciInfo(): PciInfo;
  getCudaComputeCapability(): [major: number, minor: number];
  getArchitecture(): number;
  getBrand(): number;
  getAddressingMode(): number;
  /** The GPU's module on its baseboard (`nvmlDeviceGetModuleId`). */
  getModuleId(): number;
  getMultiprocessorCount(): number;
  getPowerManagementLimit(): number;
  /** `[current, pending]`; throws NOT_SUPPORTED on GPUs without MIG. */
  getMigMode(): [current: number, pending: number];
  setMigMode(mode: number): void;
  getGpuInstanceProfileInfo(profile: number): GpuInstanceProfileInfo;
  getGpuInstancePossiblePlacements(info: GpuInstanceProfileInfo): GpuInstancePlacement[];
  createGpuInstanceWithPlacement(
    info: GpuInstanceProfileInfo,
    placement: GpuInstancePlacement,
  ): NvmlGpuInstance;
  getGpuInstances(info: GpuInstanceProfileInfo): NvmlGpuInstance[];
  getGpuInstanceById(id: number): NvmlGpuInstance;
  getMigDevices(): NvmlMigDevice[];
  /** The event types this GPU can report; NOT_SUPPORTED where it reports none. */
  getSupportedEventTypes(): number;
  registerEvents(eventTypes: number, set: NvmlEventSet): void;
  /** Volatile count of `errorType` (`NVML_MEMORY_ERROR`) ECC errors since the driver loaded. */
  getTotalEccErrors(errorType: number): bigint;
  /** GPU core temperature in °C; like every query of a GPU that fell off the bus, GPU_IS_LOST then. */
  getTemperature(): number;
  /** NOT_SUPPORTED on GPUs outside a multi-node NVLink fabric. */
  getGpuFabricInfo(): GpuFabricInfo;
}

/** nvml.h `nvmlEventType*`: the bits of an event mask. */
export const NVML_EVENT = {
  SINGLE_BIT_ECC_ERROR: 0x1,
  DOUBLE_BIT_ECC_ERROR: 0x2,
  XID_CRITICAL_ERROR: 0x8,
} as const;

/** What `nvmlEventData_t` carries: for an XID the error number in `eventData`, MIG ids or 0xFFFFFFFF. */
export interface NvmlEventData {
  device: NvmlDevice;
  eventType: number;
  eventData: number;
  gpuInstanceId: number;
  computeInstanceId: number;
}

/** No GPU or compute instance: what NVML puts in an event's MIG ids when it is not attributed to one. */
export const NO_INSTANCE = 0xffffffff;

/**
 * `nvmlEventSet_t`. `wait` resolves with the next event or rejects with `NvmlError`: TIMEOUT when none
 * came in time, GPU_IS_LOST when a registered GPU fell off the bus.
 */
export interface NvmlEventSet {
  wait(timeoutMs: number): Promise<NvmlEventData>;
  free(): void;
}

/** nvml.h `NVML_GPU_FABRIC_STATE_*`. */
export const NVML_GPU_FABRIC_STATE = {
  NOT_SUPPORTED: 0,
  NOT_STARTED: 1,
  IN_PROGRESS: 2,
  COMPLETED: 3,
} as const;

/** `nvmlGpuFabricInfo_t`: the GPU's NVLink fabric registration. */
export interface GpuFabricInfo {
  /** `clusterUuid[16]`, as a lower-case UUID string. */
  clusterUuid: string;
  /** An NVML return code: 0 once registration succeeded. */
  status: number;
  cliqueId: number;
  state: number;
}

/** `nvmlDeviceGetTotalEccErrors`'s error types. */
export const NVML_MEMORY_ERROR = { CORRECTED: 0, UNCORRECTED: 1 } as const;

export interface Nvml {
  eventSetCreate(): NvmlEventSet;
  systemGetDriverVersion(): string;
  systemGetCudaDriverVersion(): number;
  deviceGetCount(): number;
  deviceGetHandleByIndex(index: number): NvmlDevice;
  deviceGetHandleByUUID(uuid: string): NvmlDevice;
}

/**
 * The compute-instance profile that spans a whole GPU instance (nvml.h CI enum), as `nvidia-smi mig -cgi
 * … -C` picks it: the same slice count, except 1-slice GIs with two memory slices, which take 1_SLICE_REV1.
 */
export function fullComputeInstanceProfile(giEnumName: string): number {
  if (giEnumName === '1_SLICE_REV2') return 7;
  const slices = Number(/^(\d+)_SLICE/.exec(giEnumName)?.[1] ?? 1);
  const entry = Object.entries(CI_PROFILE_SLICES).find(([id, s]) => s === slices && id !== '7');
  return Number(entry?.[0] ?? 0);
}

/** CI profile enum → compute slices (nvml.h `NVML_COMPUTE_INSTANCE_PROFILE_*`, 7 = 1_SLICE_REV1). */
export const CI_PROFILE_SLICES: Readonly<Record<number, number>> = {
  0: 1,
  1: 2,
  2: 3,
  3: 4,
  4: 7,
  5: 8,
  6: 6,
  7: 1,
};

export const NVML_DEVICE_MIG_ENABLE = 1;
export const NVML_DEVICE_MIG_DISABLE = 0;
