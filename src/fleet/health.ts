import type { DriverRelease } from '../model/device/release.js';
import { removedIn2512, type DeviceTaints } from '../model/health/taints.js';
import { LIMITS, type Device, type ResourceSlice } from '../kube/types/resource.js';
import { specKey } from '../kube/publish/pool.js';
import type { NodeSlice } from './template.js';

/**
 * Devices as they are published with these taints: each tainted device carries its own (they replace any
 * it had), and for release 25.12 a failed device is left out instead.
 */
export function taintDevices(
  devices: readonly Device[],
  taints: DeviceTaints,
  release: DriverRelease,
): Device[] {
  const next: Device[] = [];
  for (const d of devices) {
    const t = taints.get(d.name);
    if (!t || t.length === 0) next.push(d);
    else if (release !== '25.12') next.push({ ...d, taints: [...t] });
    else if (!removedIn2512(t)) next.push(d);
  }
  return next;
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
    const next = taintDevices(devices, taints, release);
    if (release !== '25.12' && next.length > LIMITS.devicesPerSliceWithTaintsOrCounters) return null;
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
