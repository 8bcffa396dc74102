import { binaryQuantity } from '../../kube/types/quantity.js';
import type { Device } from '../../kube/types/resource.js';
import { STD, type Attributes } from './attributes.js';
import type { GpuInfo } from './discover.js';
import { addressableMemoryBytes, pciDeviceName } from './pci-db.js';
import { RELEASES, type DriverRelease } from './release.js';
import { uuidV5 } from './uuid-v5.js';

/**
 * NVIDIA's `gpu-vfio-<i>` devices (PassthroughSupport; v0.5.0 cmd/gpu-kubelet-plugin/deviceinfo.go
 * `VfioDeviceInfo.GetDevice`, nvlib.go `getVfioDeviceInfo`): the same GPU offered for passthrough to a
 * VM. What it says comes from the PCI view, not NVML, since a GPU bound to vfio-pci has no NVML.
 */

export const VFIO_TYPE = 'vfio';

/** `i` is the GPU's position in `nvpci.GetGPUs()`, which sorts by PCI address; not the NVML minor. */
export function vfioDeviceName(index: number): string {
  return `gpu-vfio-${index}`;
}

/**
 * fakegpu's fake node has no `/dev/iommu`, so every VFIO device says `iommuFDEnabled: false` and a
 * `PreferIommuFD` claim falls back to the legacy group node, as NVIDIA's does on such a host.
 */
export const IOMMU_FD_ENABLED = false;

/**
 * The kernel's IOMMU group of a GPU (`iommu_group` in sysfs): each GPU of a real HGX board sits alone in
 * its group. Ours is a pure function of the GPU's PCI position, so it survives restarts.
 */
export function iommuGroup(index: number): number {
  return 16 + index;
}

export function vfioAttributes(gpu: GpuInfo, release: DriverRelease): Attributes {
  const a: Attributes = {
    type: { string: VFIO_TYPE },
    uuid: { string: uuidV5(gpu.pciBusId) },
    deviceID: { string: `0x${gpu.pciDeviceId.toString(16).padStart(4, '0')}` },
    vendorID: { string: '0x10de' },
    productName: { string: pciDeviceName(gpu.pciDeviceId) },
    iommuFDEnabled: { bool: IOMMU_FD_ENABLED },
    [STD.pciBusID]: { string: gpu.pciBusId },
  };
  if (gpu.pcieRoot !== null) a[STD.pcieRoot] = { string: gpu.pcieRoot };
  if (RELEASES[release].numaNode && gpu.numaNode !== null) a[STD.numaNode] = { int: gpu.numaNode };
  return a;
}

/** No counters and no `allowMultipleAllocations`: "VFIO passthrough devices do not support consumable shares." */
export function vfioDevice(gpu: GpuInfo, index: number, release: DriverRelease): Device {
  return {
    name: vfioDeviceName(index),
    attributes: vfioAttributes(gpu, release),
    capacity: { addressableMemory: { value: binaryQuantity(addressableMemoryBytes(gpu.pciDeviceId)) } },
  };
}

/**
 * NVIDIA offers a VFIO device only for a GPU without MIG devices (`vfioEnabled = len(migs) == 0`), and
 * never beside dynamic MIG, which PassthroughSupport excludes.
 */
export function vfioEnabled(gpu: GpuInfo): boolean {
  return gpu.migDevices.length === 0;
}

/**
 * The GPUs as published while some devices are prepared: NVIDIA's `RemoveSiblingDevices` drops the other
 * type's device of the same GPU (a prepared `gpu-<minor>` hides `gpu-vfio-<i>`, and back) and republishes;
 * unprepare brings it back. Derived from what is prepared, so a restart publishes the same.
 */
export function withoutSiblings<G extends { devices: Device[]; handles: { type: string }[] }>(
  gpus: readonly G[],
  prepared: ReadonlySet<string>,
): G[] {
  return gpus.map((g) => {
    const held = new Set(g.devices.flatMap((d, i) => (prepared.has(d.name) ? [g.handles[i]?.type] : [])));
    const hide = (type: string | undefined): boolean =>
      (type === 'gpu' && held.has('vfio')) || (type === 'vfio' && held.has('gpu'));
    if (!g.handles.some((h) => hide(h.type))) return g;
    const keep = g.handles.flatMap((h, i) => (hide(h.type) ? [] : [i]));
    return {
      ...g,
      devices: keep.map((i) => g.devices[i] as Device),
      handles: keep.map((i) => g.handles[i] as G['handles'][number]),
    };
  });
}
