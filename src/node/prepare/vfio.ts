import { cdiDeviceName, type CdiSpec, type ContainerEdits } from '../cdi/spec.js';
import type { PreparedClaim, PreparedDevice } from '../checkpoint/checkpoint.js';
import { claimString, type AllocationConfig, type ResourceClaim } from '../../kube/types/claim.js';
import { DEFAULT_IOMMU, type IommuConfig } from '../../model/opaque-config/vfio.js';
import { IOMMU_FD_ENABLED, iommuGroup, vfioAttributes } from '../../model/device/vfio.js';
import type { DriverRelease } from '../../model/device/release.js';
import { POD_CLAIM_NAME, withMetadataIds, writeMetadata } from './metadata.js';
import type { DeviceConfig } from '../../model/opaque-config/nvidia.js';
import type { FeatureGates } from '../../model/feature-gates/gates.js';
import type { GpuAllocatable } from './gpu-files.js';
import { ClaimError, fakeDeviceNode } from './node.js';

/**
 * A VFIO claim's side of prepare (PassthroughSupport; NVIDIA v0.5.0 cmd/gpu-kubelet-plugin/device_state.go
 * `applyVfioDeviceConfig`, vfio-cdi.go, cdi.go). NVIDIA rebinds the GPU to vfio-pci; fakegpu binds
 * nothing and gives the container the nodes it would see: `/dev/vfio/<group>` per GPU, and the IOMMU
 * API device when the config asks for it, all on fakegpu's harmless major, never VFIO's own.
 */

/** Minors on the fake major, clear of the GPUs' (< 256), the control nodes' (253-255) and MIG caps' (>= 1024). */
const VFIO_CONTAINER_MINOR = 252;
const IOMMU_MINOR = 251;
const GROUP_MINOR_BASE = 512;

export const VFIO_CONTAINER = '/dev/vfio/vfio';
export const IOMMU_API = '/dev/iommu';

const VFIO_NAME = /^gpu-vfio-(\d+)$/;

export function vfioIndex(deviceName: string): number | null {
  const m = VFIO_NAME.exec(deviceName);
  return m ? Number(m[1]) : null;
}

export function groupNode(index: number): string {
  return `/dev/vfio/${iommuGroup(index)}`;
}

/**
 * The other device of the same GPU (`gpu-<minor>` for `gpu-vfio-<i>`, and back): NVIDIA's
 * `RemoveSiblingDevices` drops it from its allocatables once one is prepared, so a claim for it then
 * finds no allocatable. MIG siblings are NVIDIA's TODO and stay.
 */
export function siblingOf(all: ReadonlyMap<string, GpuAllocatable>, name: string): string | null {
  const me = all.get(name);
  if (!me || me.type === 'mig') return null;
  for (const [other, a] of all)
    if (other !== name && a.type !== 'mig' && a.type !== me.type && a.gpu.pciBusId === me.gpu.pciBusId)
      return other;
  return null;
}

/** Whether the other-type sibling of `name` is prepared (by any claim), which hides `name`. */
export function siblingHeld(
  all: ReadonlyMap<string, GpuAllocatable>,
  name: string,
  heldBy: (device: string) => string | undefined,
): boolean {
  const sibling = siblingOf(all, name);
  return sibling !== null && heldBy(sibling) !== undefined;
}

/**
 * A VFIO device's recorded config (its CDI edits are rewritten from it at restart), noting which config
 * object it came from in `sources` for `checkVfioGroups`.
 */
export function vfioState(
  sources: (AllocationConfig | null)[],
  source: AllocationConfig | null,
  config: DeviceConfig | null,
): { iommu: IommuConfig } {
  sources.push(source);
  return { iommu: config?.iommu ?? DEFAULT_IOMMU };
}

/**
 * What PassthroughSupport and DeviceMetadata add to a claim's plan once its devices are known: the
 * group check, the metadata CDI IDs, and the pod claim name the metadata path takes.
 */
export function passthroughPlan(
  claim: ResourceClaim,
  devices: PreparedDevice[],
  sources: readonly (AllocationConfig | null)[],
  o: { gates: FeatureGates; driverName: string },
): { podClaimName?: string } {
  checkVfioGroups(claim.metadata, sources);
  if (o.gates.DeviceMetadata) withMetadataIds(devices, claim.metadata.uid, o.driverName);
  const podClaimName = claim.metadata.annotations?.[POD_CLAIM_NAME];
  return podClaimName ? { podClaimName } : {};
}

/**
 * NVIDIA adds a default VfioDeviceConfig with the gate on, and every config object is one group; a
 * claim may hold one. `sources` are the configs that applied to its VFIO devices, null for the default.
 */
export function checkVfioGroups(
  claim: { namespace: string; name: string; uid: string },
  sources: readonly (AllocationConfig | null)[],
): void {
  const groups = new Set(sources).size;
  if (groups > 1)
    throw new ClaimError(
      `claim ${claimString(claim)} contains ${groups} VFIO device groups, but at most one is supported per claim`,
    );
}

/** vfio-cdi.go `GetCommonEdits`: the API device is `/dev/iommu` only with PreferIommuFD on an iommufd host. */
function commonEdits(iommu: IommuConfig, iommuFd: boolean): ContainerEdits {
  const edits: ContainerEdits = { env: ['NVIDIA_VISIBLE_DEVICES=void'] };
  if (iommu.enableAPIDevice)
    edits.deviceNodes = [
      iommu.backendPolicy === 'PreferIommuFD' && iommuFd
        ? fakeDeviceNode(IOMMU_API, IOMMU_MINOR)
        : fakeDeviceNode(VFIO_CONTAINER, VFIO_CONTAINER_MINOR),
    ];
  return edits;
}

function isVfio(d: PreparedDevice): boolean {
  return vfioIndex(d.deviceName) !== null;
}

/**
 * The claim's CDI spec: the GPU devices' from `gpuSpec`, and each VFIO device's group node. A VFIO
 * claim's spec-level edits are the VFIO ones alone (NVIDIA replaces nvcdi's common edits with them):
 * no driver libraries, no /dev/nvidia* nodes.
 */
export function vfioSpec(
  uid: string,
  c: PreparedClaim,
  kind: string,
  gpuSpec: (gpuOnly: PreparedClaim) => CdiSpec | null,
): CdiSpec | null {
  const vfio = c.devices.filter(isVfio);
  const others = c.devices.filter((d) => !isVfio(d));
  const spec = others.length > 0 ? gpuSpec({ ...c, devices: others }) : null;
  if (vfio.length === 0) return spec;
  const iommu = vfio.map((d) => c.configState[d.deviceName]?.iommu).find((i) => i) ?? DEFAULT_IOMMU;
  const devices = vfio.map((d) => {
    const index = vfioIndex(d.deviceName) ?? 0;
    return {
      name: cdiDeviceName(uid, d.deviceName),
      containerEdits: {
        deviceNodes: [fakeDeviceNode(groupNode(index), GROUP_MINOR_BASE + iommuGroup(index))],
      },
    };
  });
  const common = commonEdits(iommu, IOMMU_FD_ENABLED);
  if (!spec) return { cdiVersion: '0.5.0', kind, containerEdits: common, devices };
  return { ...spec, devices: [...spec.devices, ...devices] };
}

/**
 * DeviceMetadata's files for a prepared claim: NVIDIA copies a VFIO device's published attributes into
 * them (device_state.go, KEP-5304), and leaves every other device's empty.
 */
export function vfioMetadata(
  uid: string,
  c: PreparedClaim,
  claimDir: string,
  o: { cdiRoot: string; driverName: string; release: DriverRelease },
  all: ReadonlyMap<string, GpuAllocatable>,
): void {
  writeMetadata({ ...c, uid }, { claimDir, cdiRoot: o.cdiRoot, driverName: o.driverName }, (name) => {
    const a = all.get(name);
    if (a?.type !== 'vfio') return null;
    const attrs = vfioAttributes(a.gpu, o.release);
    return Object.fromEntries(
      Object.keys(attrs)
        .sort()
        .map((k) => [k, attrs[k] ?? { string: '' }]),
    );
  });
}
