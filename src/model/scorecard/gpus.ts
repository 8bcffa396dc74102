import type { Device } from '../../kube/types/resource.js';
import { type DeviceEntry, stringAttr } from './inventory.js';

/** One physical GPU: allocated if any device on it is (whole, a MIG device, a share), tainted if any is. */
export interface GpuState {
  node: string;
  allocated: boolean;
  tainted: boolean;
  /** A MIG device on it is allocated: the GPU is partitioned. */
  mig: boolean;
  /** Memory slices free on a GPU in partial MIG use, and how many of them no free MIG device can take whole. */
  migFreeSlices: number;
  migStrandedSlices: number;
}

/**
 * The memory slices a device occupies: a dynamic MIG device's `memory-slice-<i>` counters (a whole GPU
 * consumes all of them), a static MIG device's `memorySlice<i>` capacities.
 */
export function memorySlices(d: Device): Set<number> {
  const out = new Set<number>();
  for (const c of d.consumesCounters ?? [])
    for (const k of Object.keys(c.counters)) {
      const m = /^memory-slice-(\d+)$/.exec(k);
      if (m) out.add(Number(m[1]));
    }
  for (const k of Object.keys(d.capacity ?? {})) {
    const m = /^memorySlice(\d+)$/.exec(k);
    if (m) out.add(Number(m[1]));
  }
  return out;
}

const isMig = (d: Device): boolean => stringAttr(d, 'type') === 'mig';

/**
 * A GPU some of whose MIG devices are allocated: the slices no allocated device occupies are free, and
 * of them, those beyond the largest MIG device that could still be allocated whole are stranded.
 */
function migUse(devices: readonly DeviceEntry[], allocated: ReadonlySet<DeviceEntry>): [number, number] {
  const mig = devices.filter((e) => isMig(e.device));
  if (!mig.some((e) => allocated.has(e))) return [0, 0];
  const all = new Set<number>();
  const used = new Set<number>();
  for (const e of devices) {
    const slices = memorySlices(e.device);
    for (const i of slices) {
      all.add(i);
      if (allocated.has(e)) used.add(i);
    }
  }
  const free = [...all].filter((i) => !used.has(i)).length;
  let largest = 0;
  for (const e of mig) {
    if (allocated.has(e) || e.tainted) continue;
    const slices = [...memorySlices(e.device)];
    if (slices.every((i) => !used.has(i))) largest = Math.max(largest, slices.length);
  }
  return [free, free - largest];
}

/** Every physical GPU, by `node/uuid`, from its devices and the devices claims hold. */
export function gpuStates(
  devices: Iterable<DeviceEntry>,
  allocated: ReadonlySet<DeviceEntry>,
): Map<string, GpuState> {
  const byGpu = new Map<string, DeviceEntry[]>();
  for (const e of devices) {
    if (e.gpu === null) continue;
    const l = byGpu.get(e.gpu);
    if (l) l.push(e);
    else byGpu.set(e.gpu, [e]);
  }
  const out = new Map<string, GpuState>();
  for (const [key, l] of byGpu) {
    const [migFreeSlices, migStrandedSlices] = migUse(l, allocated);
    out.set(key, {
      node: l[0]?.node ?? '',
      allocated: l.some((e) => allocated.has(e)),
      tainted: l.some((e) => e.tainted),
      mig: l.some((e) => allocated.has(e) && isMig(e.device)),
      migFreeSlices,
      migStrandedSlices,
    });
  }
  return out;
}
