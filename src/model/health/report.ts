import type { DeviceTaint } from '../../kube/types/resource.js';
import { GPU_LOST_TAINT_KEY, UNMONITORED_TAINT_KEY, XID_TAINT_KEY, type DeviceTaints } from './taints.js';

/**
 * A device's health as the kubelet shows it in pod status (KEP-4680), from its taints. NVIDIA has not
 * shipped this; the mapping and messages follow its proposal (gpu-health.md §3). Worst first: a lost GPU,
 * a critical XID, no monitoring, an ignorable XID, nothing.
 */

export type HealthState = 'Unknown' | 'Healthy' | 'Unhealthy';

export interface DeviceHealth {
  deviceName: string;
  health: HealthState;
  message: string;
}

function fromTaints(taints: readonly DeviceTaint[]): Omit<DeviceHealth, 'deviceName'> {
  const xid = taints.find((t) => t.key === XID_TAINT_KEY);
  if (taints.some((t) => t.key === GPU_LOST_TAINT_KEY))
    return { health: 'Unhealthy', message: 'GPU is lost' };
  if (xid && xid.effect !== 'None')
    return { health: 'Unhealthy', message: `critical XID ${xid.value ?? ''} reported by NVML` };
  if (taints.some((t) => t.key === UNMONITORED_TAINT_KEY))
    return { health: 'Unknown', message: 'device health is not monitored' };
  if (xid) return { health: 'Healthy', message: `non-fatal XID ${xid.value ?? ''} reported by NVML` };
  return { health: 'Healthy', message: '' };
}

/**
 * Every published device's health. Devices the monitor does not watch (dynamic MIG partitions) are
 * Unknown, as the proposal reports them.
 */
export function deviceHealth(
  devices: readonly { name: string; monitored: boolean; type: string }[],
  taints: DeviceTaints,
): DeviceHealth[] {
  return devices.map((d) =>
    d.monitored
      ? { deviceName: d.name, ...fromTaints(taints.get(d.name) ?? []) }
      : {
          deviceName: d.name,
          health: 'Unknown',
          message: `${d.type} devices are not covered by the NVML health monitor`,
        },
  );
}
