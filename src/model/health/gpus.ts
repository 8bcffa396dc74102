import type { GpuDevices } from '../device/allocatable.js';
import { gpuDeviceName } from '../device/names.js';
import { nodeUuids } from '../hardware/identity.js';
import type { Machine } from '../hardware/machine.js';
import { watchedDevices, type WatchedGpu } from './expected.js';

/**
 * A node's GPUs as faults and the health monitor see them, for the node plugin and, without rendering each node, the fleet: each GPU's identity and the devices
 * NVIDIA's monitor would watch on it, from the profile's model, with the UUIDs of the node at hand.
 */

export interface NodeGpu extends WatchedGpu {
  index: number;
  /** The full GPU's device name, also when MIG hides it from the slice. */
  name: string;
}

/** A machine's GPUs for any node of its profile: UUIDs derived from the node name are re-derived. */
export interface GpuSkeleton {
  gpus(node: string): NodeGpu[];
}

export function gpuSkeleton(machine: Machine, devices: readonly GpuDevices[]): GpuSkeleton {
  const byUuid = new Map(devices.map((g) => [g.gpu.uuid, g]));
  const watched = machine.gpus.map((hw) => {
    const g = byUuid.get(hw.uuid);
    return g ? watchedDevices(g) : [];
  });
  const uuids = nodeUuids(machine);
  return {
    gpus: (node) => {
      const uuid = uuids(node);
      return machine.gpus.map((hw, i) => ({
        index: hw.index,
        name: gpuDeviceName(hw.minor),
        uuid: uuid[i] ?? hw.uuid,
        eventsSupported: hw.eventsSupported,
        devices: watched[i] ?? [],
      }));
    },
  };
}
