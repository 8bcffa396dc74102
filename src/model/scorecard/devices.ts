import type { Device, DeviceTaint } from '../../kube/types/resource.js';
import { STD } from '../device/attributes.js';
import { intAttr, physicalGpu, stringAttr } from './inventory.js';

/**
 * What the scorecard reads of one device, worked out once per device object: a fleet hands the same
 * objects for every node of a machine, so that 50,000 nodes cost one parse of each device, not 50,000.
 */
export interface DeviceFacts {
  /** The physical GPU it is on, as its node names it (a GPU driver's device; read only for that driver). */
  gpu: string | undefined;
  mig: boolean;
  /** The memory slices it occupies, one bit each, and how many. */
  slices: bigint;
  sliceCount: number;
  pcieRoot: string | undefined;
  numa: number | undefined;
  /** A NoSchedule or NoExecute taint of its own. */
  tainted: boolean;
}

const FACTS = new WeakMap<Device, DeviceFacts>();

/** Taints that keep claims off (NoSchedule) or evict them (NoExecute); `None` only informs. */
export const binding = (t: DeviceTaint): boolean => t.effect === 'NoSchedule' || t.effect === 'NoExecute';

export function factsOf(d: Device): DeviceFacts {
  let f = FACTS.get(d);
  if (f === undefined) {
    const slices = memorySlices(d);
    let mask = 0n;
    for (const i of slices) mask |= 1n << BigInt(i);
    f = {
      gpu: physicalGpu(d),
      mig: stringAttr(d, 'type') === 'mig',
      slices: mask,
      sliceCount: slices.size,
      pcieRoot: stringAttr(d, STD.pcieRoot),
      numa: intAttr(d, STD.numaNode),
      tainted: (d.taints ?? []).some(binding),
    };
    FACTS.set(d, f);
  }
  return f;
}

/**
 * The memory slices a device occupies: a dynamic MIG device's `memory-slice-<i>` counters (a whole GPU
 * consumes all of them), a static MIG device's `memorySlice<i>` capacities.
 */
function memorySlices(d: Device): Set<number> {
  const out = new Set<number>();
  const add = (m: RegExpExecArray | null): void => {
    const i = Number(m?.[1] ?? MAX_SLICES);
    if (i < MAX_SLICES) out.add(i);
  };
  for (const c of d.consumesCounters ?? [])
    for (const k of Object.keys(c.counters)) add(/^memory-slice-(\d{1,3})$/.exec(k));
  for (const k of Object.keys(d.capacity ?? {})) add(/^memorySlice(\d{1,3})$/.exec(k));
  return out;
}

/** NVIDIA's GPUs have 8 memory slices; an index past this is no MIG memory slice, and is not read. */
const MAX_SLICES = 64;

/** Bits set in a mask of memory slices. */
export function bitCount(mask: bigint): number {
  let n = 0;
  for (let m = mask; m > 0n; m >>= 1n) if (m & 1n) n++;
  return n;
}
