import { bitCount, type DeviceFacts } from './devices.js';

/** One physical GPU: allocated if any device on it is (whole, a MIG device, a share), tainted if any is. */
export interface GpuState {
  allocated: boolean;
  tainted: boolean;
  /** A MIG device on it is allocated: the GPU is partitioned. */
  mig: boolean;
  /** Memory slices free on a GPU in partial MIG use, and how many of them no free MIG device can take whole. */
  migFreeSlices: number;
  migStrandedSlices: number;
}

/**
 * One physical GPU's devices as they are seen, folded at once: what is allocated and tainted, the
 * memory slices any device and any allocated device occupies, and the free MIG devices' slices. Of a
 * GPU some of whose MIG devices are allocated, the slices no allocated device occupies are free, and of
 * them, those beyond the largest MIG device that could still be allocated whole are stranded.
 */
export class GpuTally {
  private allocated = false;
  private tainted = false;
  private mig = false;
  private all = 0n;
  private used = 0n;
  /** Free, untainted MIG devices' slices, each set once; made for the first (most GPUs have none). */
  private free: Map<bigint, number> | null = null;

  add(f: DeviceFacts, held: boolean, tainted: boolean): void {
    this.all |= f.slices;
    if (tainted) this.tainted = true;
    if (held) {
      this.allocated = true;
      this.used |= f.slices;
      if (f.mig) this.mig = true;
    } else if (f.mig && !tainted) (this.free ??= new Map()).set(f.slices, f.sliceCount);
  }

  state(): GpuState {
    let migFreeSlices = 0;
    let migStrandedSlices = 0;
    if (this.mig) {
      migFreeSlices = bitCount(this.all & ~this.used);
      let largest = 0;
      for (const [slices, count] of this.free ?? [])
        if ((slices & this.used) === 0n) largest = Math.max(largest, count);
      migStrandedSlices = migFreeSlices - largest;
    }
    return {
      allocated: this.allocated,
      tainted: this.tainted,
      mig: this.mig,
      migFreeSlices,
      migStrandedSlices,
    };
  }
}
