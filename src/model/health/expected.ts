import type { GpuDevices } from '../device/allocatable.js';
import type { DeviceTaint } from '../../kube/types/resource.js';
import type { NvmlFault } from '../nvml/state.js';
import { NO_INSTANCE } from '../nvml/types.js';
import { deviceKey, GPU_LOST_TAINT, UNMONITORED_TAINT, withTaint, xidTaint } from './taints.js';

/**
 * The taints NVIDIA's monitor would end with for a set of faults, without NVML: what the fleet publishes
 * for nodes that have no plugin. It follows `monitor.ts` step for step (a test holds the two together):
 * GPUs that cannot register are unmonitored and report nothing; faults then arrive in the order given.
 */

/** A GPU as the monitor knows it: its UUID and its published devices, the full GPU or static MIG ones. */
export interface WatchedGpu {
  uuid: string;
  eventsSupported: boolean;
  devices: readonly { name: string; gpuInstanceId?: number; computeInstanceId?: number }[];
}

export function expectedTaints(
  gpus: readonly WatchedGpu[],
  faults: readonly { uuid: string; fault: NvmlFault }[],
  ignored: ReadonlySet<number>,
): Map<string, DeviceTaint[]> {
  const out = new Map<string, DeviceTaint[]>();
  const add = (device: string, t: DeviceTaint): void => {
    const next = withTaint(out.get(device) ?? [], t);
    if (next) out.set(device, next);
  };
  const byKey = new Map<string, string>();
  const unmonitored = new Set<string>();
  for (const g of gpus) {
    for (const d of g.devices) byKey.set(deviceKey(g.uuid, d.gpuInstanceId, d.computeInstanceId), d.name);
    const off = !g.eventsSupported || faults.some((f) => f.uuid === g.uuid && f.fault.kind === 'unmonitored');
    if (off) {
      unmonitored.add(g.uuid);
      for (const d of g.devices) add(d.name, UNMONITORED_TAINT);
    }
  }
  for (const { uuid, fault } of faults) {
    if (unmonitored.has(uuid) || !gpus.some((g) => g.uuid === uuid)) continue;
    if (fault.kind === 'lost') {
      for (const g of gpus) for (const d of g.devices) add(d.name, GPU_LOST_TAINT);
    } else if (fault.kind === 'xid') {
      const name = byKey.get(
        deviceKey(uuid, fault.gpuInstanceId ?? NO_INSTANCE, fault.computeInstanceId ?? NO_INSTANCE),
      );
      if (name !== undefined) add(name, xidTaint(fault.xid, ignored));
    }
  }
  return out;
}

/** The devices of one GPU the monitor watches: the full GPU or its static MIG devices, not partitions. */
export function watchedDevices(g: GpuDevices): WatchedGpu['devices'] {
  return g.devices.flatMap((d, i) => {
    const h = g.handles[i];
    if (h?.type === 'gpu') return [{ name: d.name }];
    if (h?.type === 'mig')
      return [
        { name: d.name, gpuInstanceId: h.mig.gpuInstanceId, computeInstanceId: h.mig.computeInstanceId },
      ];
    return [];
  });
}

/** The monitor's view of a node's devices. */
export function watchedGpus(
  gpus: readonly GpuDevices[],
  eventsSupported: (uuid: string) => boolean,
): WatchedGpu[] {
  return gpus.map((g) => ({
    uuid: g.gpu.uuid,
    eventsSupported: eventsSupported(g.gpu.uuid),
    devices: watchedDevices(g),
  }));
}
