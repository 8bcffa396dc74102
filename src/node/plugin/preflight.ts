import { statSync } from 'node:fs';
import { join } from 'node:path';
import { FakegpuError } from '../../errors.js';

/**
 * fakegpu belongs on nodes without NVIDIA GPUs. Where NVIDIA's kernel driver is loaded it would publish
 * fake devices beside real ones and prepare claims against hardware it does not drive, so it refuses
 * to start. `/dev/nvidiactl` on the driver's registered character major says so; our own stand-ins
 * live under the state dir on another major.
 */

/** The character major NVIDIA's kernel driver registers for /dev/nvidia* (Linux devices.txt: 195). */
export const NVIDIA_MAJOR = 195;

/** Linux `major()` of a device number, as glibc's gnu_dev_major computes it. */
function major(rdev: number): number {
  return ((rdev >> 8) & 0xfff) | (Math.floor(rdev / 2 ** 32) & ~0xfff);
}

export function refuseRealDriver(devRoot = '/dev'): void {
  const ctl = join(devRoot, 'nvidiactl');
  let st;
  try {
    st = statSync(ctl);
  } catch {
    return;
  }
  if (st.isCharacterDevice() && major(st.rdev) === NVIDIA_MAJOR)
    throw new FakegpuError(
      ctl,
      `NVIDIA's kernel driver is loaded on this node (character device, major ${NVIDIA_MAJOR}); fakegpu runs only where there is no real GPU, so it does not start`,
    );
}
