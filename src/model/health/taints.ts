import type { GpuDevices } from '../device/allocatable.js';
import type { DriverRelease } from '../device/release.js';
import { FakegpuError, show } from '../../errors.js';
import { LIMITS, type Device, type DeviceTaint } from '../../kube/types/resource.js';
import { NO_INSTANCE } from '../nvml/types.js';

/**
 * What NVIDIA's health monitor (`device_health.go`, gate `NVMLDeviceHealthCheck`) writes into the slice
 * for each kind of failure: one place for the keys, values and effects, read by the node plugin's monitor
 * and by the fleet alike. Facts: ../shared/reference/gpu-health.md §2.
 */

export const XID_TAINT_KEY = 'gpu.nvidia.com/xid';
export const GPU_LOST_TAINT_KEY = 'gpu.nvidia.com/gpu-lost';
export const UNMONITORED_TAINT_KEY = 'gpu.nvidia.com/unmonitored';

/** XIDs that are the application's fault, not the GPU's: reported with effect None. */
export const DEFAULT_IGNORED_XIDS: readonly number[] = [13, 31, 43, 45, 68, 109];

export function xidTaint(xid: number, ignored: ReadonlySet<number>): DeviceTaint {
  return { key: XID_TAINT_KEY, value: String(xid), effect: ignored.has(xid) ? 'None' : 'NoSchedule' };
}

export const GPU_LOST_TAINT: DeviceTaint = { key: GPU_LOST_TAINT_KEY, effect: 'NoSchedule' };
export const UNMONITORED_TAINT: DeviceTaint = { key: UNMONITORED_TAINT_KEY, effect: 'None' };

/** The ignore list: NVIDIA's defaults and `--additional-xids-to-ignore`, whose bad entries NVIDIA skips. */
export function ignoredXids(additional: string): Set<number> {
  const out = new Set(DEFAULT_IGNORED_XIDS);
  for (const part of additional.split(',')) {
    const t = part.trim();
    if (/^\d+$/.test(t)) out.add(Number(t));
  }
  return out;
}

/** Checks `--additional-xids-to-ignore` up front, although NVIDIA skips bad entries, so a typo is not silent. */
export function checkIgnoredXids(text: string, field: string): string {
  for (const part of text.split(',')) {
    const t = part.trim();
    if (t !== '' && !/^\d+$/.test(t))
      throw new FakegpuError(field, `${show(t)} is not an XID; expected a comma-separated list of numbers`);
  }
  return text;
}

/** One taint per key: a later event for a key replaces its value and effect, as NVIDIA's main does. */
export function withTaint(taints: readonly DeviceTaint[], t: DeviceTaint): DeviceTaint[] | null {
  const i = taints.findIndex((x) => x.key === t.key);
  const old = taints[i];
  if (old && old.value === t.value && old.effect === t.effect) return null;
  if (i >= 0) return taints.map((x, j) => (j === i ? t : x));
  if (taints.length >= LIMITS.taintsPerDevice) return null;
  return [...taints, t];
}

/** How the monitor finds a device from an event: GPU UUID, GPU instance, compute instance. */
export function deviceKey(uuid: string, gi = NO_INSTANCE, ci = NO_INSTANCE): string {
  return `${uuid}/${gi}/${ci}`;
}

/**
 * The devices the monitor watches, by key: full GPUs and static MIG devices. Dynamic MIG partitions have
 * no key (NVIDIA's gate excludes dynamic MIG).
 */
export function monitoredDevices(gpus: readonly GpuDevices[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const g of gpus) {
    g.devices.forEach((d, i) => {
      const h = g.handles[i];
      if (h?.type === 'gpu') out.set(deviceKey(g.gpu.uuid), d.name);
      else if (h?.type === 'mig')
        out.set(deviceKey(g.gpu.uuid, h.mig.gpuInstanceId, h.mig.computeInstanceId), d.name);
    });
  }
  return out;
}

/** Device name → its taints. */
export type DeviceTaints = ReadonlyMap<string, readonly DeviceTaint[]>;

/**
 * NVIDIA's v25.12 had no taints: a device with a failure left the slice, while ignored XIDs changed
 * nothing. Newer releases publish the taints.
 */
export function removedIn2512(taints: readonly DeviceTaint[]): boolean {
  return taints.some((t) => t.key !== XID_TAINT_KEY || t.effect !== 'None');
}

/** The devices with their taints (or, for 25.12, without the failed ones); untouched devices are shared. */
export function applyTaints(
  gpus: readonly GpuDevices[],
  taints: DeviceTaints,
  release: DriverRelease,
): GpuDevices[] {
  if (taints.size === 0) return [...gpus];
  return gpus.map((g) => {
    if (!g.devices.some((d) => taints.has(d.name))) return g;
    const devices: Device[] = [];
    const handles: GpuDevices['handles'] = [];
    g.devices.forEach((d, i) => {
      const t = taints.get(d.name);
      const h = g.handles[i];
      if (!h) return;
      if (t && t.length > 0 && release === '25.12') {
        if (removedIn2512(t)) return;
        devices.push(d);
      } else devices.push(t && t.length > 0 ? { ...d, taints: [...t] } : d);
      handles.push(h);
    });
    return { ...g, devices, handles };
  });
}
