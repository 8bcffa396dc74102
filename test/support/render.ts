import { DEFAULT_RELEASE, type DriverRelease } from '../../src/model/device/release.js';
import type { List, ResourceSlice } from '../../src/kube/types/resource.js';
import { parseLenientVersion } from '../../src/kube/types/version.js';
import { type ResolvedProfile } from '../../src/model/profile/load.js';
import { resolveProfile } from '../../src/process/profile-file.js';
import { renderSlices, type RenderOptions } from '../../src/model/render.js';
import { DRANET } from '../../src/model/nic/attributes.js';
import { DRIVER_NAME } from '../../src/model/slice/build.js';
import { gatesWith, type FeatureGates } from '../../src/model/feature-gates/gates.js';
import type { ConsumableShares } from '../../src/model/device/consumable-shares.js';

export interface TestRender {
  node?: string;
  dynamicMig?: boolean;
  release?: DriverRelease;
  kubernetesVersion?: string;
  driverVersion?: string;
  /** Add DRANET's slices for the machine's NICs. */
  nics?: boolean;
  nicNumaAttribute?: 'dranet' | 'standard';
  /** NVIDIA's gates set away from their defaults. */
  gates?: Partial<FeatureGates>;
  consumableShares?: ConsumableShares;
}

export function render(profile: string | ResolvedProfile, o: TestRender = {}): List<ResourceSlice> {
  return renderSlices(typeof profile === 'string' ? resolveProfile(profile) : profile, {
    nodeName: o.node ?? 'node-a',
    dynamicMig: o.dynamicMig ?? false,
    driverVersion: o.driverVersion,
    driverName: DRIVER_NAME,
    kubernetesVersion: parseLenientVersion(o.kubernetesVersion ?? '1.37.0', 'test'),
    release: o.release ?? DEFAULT_RELEASE,
    gates: o.gates ? gatesWith(o.gates) : undefined,
    consumableShares: o.consumableShares,
    nics: o.nics ? { driverName: DRANET, standardNumaNode: o.nicNumaAttribute === 'standard' } : undefined,
  });
}

export function devicesOf(list: List<ResourceSlice>): NonNullable<ResourceSlice['spec']['devices']> {
  return list.items.flatMap((s) => s.spec.devices ?? []);
}

/** A plain node of the default release on Kubernetes 1.37, as most model tests render one. */
export const RENDER_OPTIONS: RenderOptions = {
  nodeName: 'node-a',
  dynamicMig: false,
  driverName: 'gpu.nvidia.com',
  kubernetesVersion: { major: 1, minor: 37, patch: 0 },
  release: '0.5',
};

/**
 * The publishing gates of NVIDIA's 0.5 together, as users pick them: shares by memory, VFIO devices,
 * list attributes, Fabric Manager partitions; with dynamic MIG, which NVIDIA's rules keep from VFIO.
 */
export function everyGate(dynamicMig: boolean): Pick<TestRender, 'gates' | 'consumableShares'> {
  return {
    gates: {
      ConsumableShares: true,
      PassthroughSupport: !dynamicMig,
      DeviceMetadata: !dynamicMig,
      DRAListTypeAttributes: true,
      FabricManagerPartitioning: true,
    },
    consumableShares: 'memory',
  };
}
