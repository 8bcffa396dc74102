import { binaryQuantity, MiB } from '../../kube/types/quantity.js';
import type { DeviceAttribute, DeviceCapacity } from '../../kube/types/resource.js';
import { formatSemver, parseLenientVersion } from '../../kube/types/version.js';
import type { GpuInfo, MigProfile } from './discover.js';
import { RELEASES, type DriverRelease } from './release.js';

/**
 * The one place that decides what a device says about itself — the counterpart of the real driver's
 * deviceinfo.go and mig.go. Keys without a domain are implicitly `gpu.nvidia.com/…`.
 */

export type Attributes = Record<string, DeviceAttribute>;
export type Capacities = Record<string, DeviceCapacity>;

export const STD = {
  pciBusID: 'resource.kubernetes.io/pciBusID',
  pcieRoot: 'resource.kubernetes.io/pcieRoot',
  numaNode: 'resource.kubernetes.io/numaNode',
} as const;

const str = (s: string): DeviceAttribute => ({ string: s });
const version = (s: string, field: string): DeviceAttribute => ({
  version: formatSemver(parseLenientVersion(s, field)),
});

/** Attributes a GPU and every MIG device carved from it share. */
function shared(gpu: GpuInfo, release: DriverRelease): Attributes {
  const a: Attributes = {
    productName: str(gpu.productName),
    brand: str(gpu.brand),
    architecture: str(gpu.architecture),
    cudaComputeCapability: version(gpu.cudaComputeCapability, 'cudaComputeCapability'),
    driverVersion: version(gpu.driverVersion, 'driverVersion'),
    cudaDriverVersion: version(gpu.cudaDriverVersion, 'cudaDriverVersion'),
    [STD.pciBusID]: str(gpu.pciBusId),
  };
  if (gpu.pcieRoot !== null) a[STD.pcieRoot] = str(gpu.pcieRoot);
  if (RELEASES[release].numaNode && gpu.numaNode !== null) a[STD.numaNode] = { int: gpu.numaNode };
  if (gpu.addressingMode !== null) a['addressingMode'] = str(gpu.addressingMode);
  return a;
}

export function gpuAttributes(gpu: GpuInfo, release: DriverRelease): Attributes {
  return { type: str('gpu'), uuid: str(gpu.uuid), ...shared(gpu, release) };
}

/** Static MIG devices carry their own `uuid`; abstract dynamic partitions have none until created. */
export function migAttributes(
  parent: GpuInfo,
  profile: MigProfile,
  release: DriverRelease,
  uuid: string | null,
): Attributes {
  const a: Attributes = {
    type: str('mig'),
    parentUUID: str(parent.uuid),
    profile: str(profile.name),
    ...shared(parent, release),
  };
  if (uuid !== null) a['uuid'] = str(uuid);
  return a;
}

/** A full GPU outside dynamic MIG: its memory total, or nothing where NVML reports none. */
export function fullGpuCapacity(gpu: GpuInfo): Capacities {
  return gpu.memoryBytes === null ? {} : { memory: { value: binaryQuantity(gpu.memoryBytes) } };
}

export const MIG_CAPACITY_KEYS = [
  'multiprocessors',
  'copyEngines',
  'decoders',
  'encoders',
  'jpegEngines',
  'ofaEngines',
  'memory',
] as const;
export type MigCapacityKey = (typeof MIG_CAPACITY_KEYS)[number];

export function migCapacityValues(profile: MigProfile): Record<MigCapacityKey, bigint> {
  const i = profile.info;
  return {
    multiprocessors: BigInt(i.multiprocessorCount),
    copyEngines: BigInt(i.copyEngineCount),
    decoders: BigInt(i.decoderCount),
    encoders: BigInt(i.encoderCount),
    jpegEngines: BigInt(i.jpegCount),
    ofaEngines: BigInt(i.ofaCount),
    memory: BigInt(i.memorySizeMB) * MiB,
  };
}

export function toCapacities(values: Record<string, bigint>): Capacities {
  return Object.fromEntries(Object.entries(values).map(([k, v]) => [k, { value: binaryQuantity(v) }]));
}

/** Static MIG devices also say which memory slices they occupy, one capacity per slice. */
export function staticMigCapacity(profile: MigProfile, start: number, size: number): Capacities {
  const c = toCapacities(migCapacityValues(profile));
  for (let i = start; i < start + size; i++) c[`memorySlice${i}`] = { value: '1' };
  return c;
}
