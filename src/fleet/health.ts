import type { GpuDevices } from '../device/allocatable.js';
import { gpuDeviceName } from '../device/names.js';
import type { DriverRelease } from '../device/release.js';
import { watchedDevices, type WatchedGpu } from '../health/expected.js';
import { removedIn2512, type DeviceTaints } from '../health/taints.js';
import { gpuUuid } from '../hardware/identity.js';
import type { Machine } from '../hardware/machine.js';
import { LIMITS, type Device, type ResourceSlice } from '../k8s/resource.js';
import { specKey } from '../publish/pool.js';
import type { NodeSlice } from './template.js';

/**
 * What the fleet needs to fault a node's GPUs without rendering it: each GPU's identity and the devices
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
  const rows = machine.gpus.map((hw) => {
    const g = byUuid.get(hw.uuid);
    const derived = hw.uuid === gpuUuid(machine.nodeName, hw.busId, hw.model.key);
    const watched = g ? watchedDevices(g) : [];
    return { hw, derived, watched };
  });
  return {
    gpus: (node) =>
      rows.map(({ hw, derived, watched }) => ({
        index: hw.index,
        name: gpuDeviceName(hw.minor),
        uuid: derived ? gpuUuid(node, hw.busId, hw.model.key) : hw.uuid,
        eventsSupported: hw.eventsSupported,
        devices: watched,
      })),
  };
}

/**
 * The node's slices with taints on the named devices (for release 25.12: without the failed devices),
 * each slice parsed from its text and written again; null when a tainted slice would hold more devices
 * than the API server allows, so the caller lays the node out again.
 */
export function taintSlices(
  slices: readonly NodeSlice[],
  taints: DeviceTaints,
  release: DriverRelease,
): NodeSlice[] | null {
  const out: NodeSlice[] = [];
  for (const s of slices) {
    const spec = JSON.parse(s.spec(0)) as ResourceSlice['spec'];
    const devices = spec.devices;
    if (!devices?.some((d) => taints.has(d.name))) {
      out.push(s);
      continue;
    }
    const next: Device[] = [];
    for (const d of devices) {
      const t = taints.get(d.name);
      if (!t || t.length === 0) next.push(d);
      else if (release !== '25.12') next.push({ ...d, taints: [...t] });
      else if (!removedIn2512(t)) next.push(d);
    }
    if (release !== '25.12' && next.length > LIMITS.devicesPerSliceWithTaints) return null;
    const tainted = { ...spec, devices: next };
    out.push({
      driver: s.driver,
      generateName: s.generateName,
      key: specKey(tainted),
      spec: (generation) => JSON.stringify({ ...tainted, pool: { ...tainted.pool, generation } }),
    });
  }
  return out;
}
