import { join } from 'node:path';
import { FakegpuError } from '../errors.js';
import type { Toolchain } from './build.js';
import type { Layout } from './config.js';
import { kubectl } from './kubectl.js';
import { REPO_ROOT } from '../process/repo.js';

/** The DeviceClass of the fake NICs in deploy/deviceclasses.yaml, exported as FAKEGPU_NIC_CLASS. */
export const NIC_CLASS = 'dranet';

/** NVIDIA's DeviceClasses and the fake NICs' (deploy/deviceclasses.yaml): claims reach our devices through them. */
export function installDeviceClasses(l: Layout, t: Toolchain): void {
  const classes = kubectl(l, t.bin, ['apply', '-f', join(REPO_ROOT, 'deploy', 'deviceclasses.yaml')]);
  if (classes.code !== 0)
    throw new FakegpuError('cluster up', `installing the DeviceClasses failed: ${classes.err.trim()}`);
}
