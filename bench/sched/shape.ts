/** What a node of the profile publishes, and so how many of the faithful claims it can hold at once. */
import { DEFAULT_RELEASE } from '../../src/model/device/release.js';
import { STD } from '../../src/model/device/attributes.js';
import { FakegpuError, show } from '../../src/errors.js';
import type { Device } from '../../src/kube/types/resource.js';
import { DRANET } from '../../src/model/nic/attributes.js';
import type { ResolvedProfile } from '../../src/model/profile/load.js';
import { renderSlices } from '../../src/model/render.js';
import { DRIVER_NAME } from '../../src/model/slice/build.js';
import type { Variant } from './claims.js';

export interface Shape {
  gpus: number;
  productName: string;
  /** The GPUs' memory capacity as published (e.g. `81559Mi`); null where NVML reports none. */
  memory: string | null;
  /** Claims of the faithful variant one node can satisfy at once. */
  perNode: number;
}

const attr = (d: Device, key: string): string | undefined => {
  const a = d.attributes?.[key];
  return a && 'string' in a ? a.string : undefined;
};

/** A node of `profile` (`--profile` `name`) rendered here, as the fleet would publish it. */
export function nodeShape(
  profile: ResolvedProfile,
  o: { name: string; variant: Variant; dynamicMig: boolean; migProfile: string },
): Shape {
  const slices = renderSlices(profile, {
    nodeName: 'bench-node',
    dynamicMig: o.dynamicMig,
    driverName: DRIVER_NAME,
    kubernetesVersion: { major: 1, minor: 37, patch: 0 },
    release: DEFAULT_RELEASE,
    nics: o.variant === 'nic-aligned' ? { driverName: DRANET, standardNumaNode: false } : undefined,
  }).items;
  const gpuDevices = slices.filter((s) => s.spec.driver === DRIVER_NAME).flatMap((s) => s.spec.devices ?? []);
  const gpus = gpuDevices.filter((d) => attr(d, 'type') === 'gpu');
  const first = gpus[0];
  if (!first) throw new FakegpuError('--profile', `${show(o.name)} has no GPUs`);
  let perNode = gpus.length;
  if (o.variant === 'mig') {
    const migs = gpuDevices.filter((d) => attr(d, 'type') === 'mig');
    // Each partition of a profile is one placement; those of one profile never overlap.
    perNode = migs.filter((d) => attr(d, 'profile') === o.migProfile).length;
    if (perNode === 0)
      throw new FakegpuError(
        '--mig-profile',
        `${show(o.migProfile)} is not a MIG partition of ${o.name}; it has ${[...new Set(migs.map((d) => attr(d, 'profile')))].join(', ') || 'none'}`,
      );
  } else if (o.variant === 'nic-aligned') {
    // A GPU and an RDMA NIC under one PCIe root: per root, as many pairs as the scarcer of the two.
    const nics = slices
      .filter((s) => s.spec.driver === DRANET)
      .flatMap((s) => s.spec.devices ?? [])
      .filter((d) => {
        const rdma = d.attributes?.[`${DRANET}/rdma`];
        return rdma !== undefined && 'bool' in rdma && rdma.bool;
      });
    const roots = (ds: Device[]): Map<string, number> => {
      const m = new Map<string, number>();
      for (const d of ds) {
        const r = attr(d, STD.pcieRoot);
        if (r !== undefined) m.set(r, (m.get(r) ?? 0) + 1);
      }
      return m;
    };
    const nicRoots = roots(nics);
    perNode = [...roots(gpus)].reduce((k, [r, n]) => k + Math.min(n, nicRoots.get(r) ?? 0), 0);
    if (perNode === 0)
      throw new FakegpuError(
        '--variant',
        `nic-aligned needs GPUs and RDMA NICs under one PCIe root; ${o.name} has none`,
      );
  }
  const mem = first.capacity?.['memory']?.value;
  return { gpus: gpus.length, productName: attr(first, 'productName') ?? '', memory: mem ?? null, perNode };
}
