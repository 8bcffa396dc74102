import type { PreparedDevice } from '../checkpoint/checkpoint.js';
import { configKindFor, type DeviceConfig } from '../../model/opaque-config/nvidia.js';
import { ClaimRefused } from './node.js';
import type { Holding } from './lifecycle.js';

/**
 * ConsumableShares at prepare and unprepare, as NVIDIA v0.5.0 cmd/gpu-kubelet-plugin/device_state.go
 * does it: validateNoOverlappingPreparedDevices, getNormalizedDeviceConfig, getPreparedMigDevice and
 * isMigDeviceInUseByOtherClaims. Like NVIDIA's there is no reference counter: the checkpoint's other
 * completed claims are scanned each time, so a restart between two claims cannot lose a count.
 */

/**
 * The config NVIDIA compares with reflect.DeepEqual after normalizeAndValidateConfig: the one that
 * applies to the device, or its kind's default (no sharing) when none does. The decoder has already
 * filled in what Normalize defaults (a time-slicing interval, an empty mpsConfig).
 */
export function normalisedConfig(config: DeviceConfig | null, type: 'gpu' | 'mig'): string {
  return canonical(config ?? { kind: configKindFor(type) });
}

function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v !== null && typeof v === 'object') {
    const entries = Object.entries(v as Record<string, unknown>)
      .filter(([, x]) => x !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, x]) => `${JSON.stringify(k)}:${canonical(x)}`).join(',')}}`;
  }
  return JSON.stringify(v);
}

/**
 * The overlap check for one requested (non-admin) device. Without shares a device another completed
 * claim holds is refused; with shares it is let through when both claims' configs for it agree.
 * NVIDIA wraps these in `unable to prepare claim <uid>: `, not in `prepare devices failed: `.
 */
export function checkOverlap(
  uid: string,
  device: string,
  incoming: (() => string) | null,
  others: readonly Holding[],
): void {
  for (const o of others) {
    if (!o.claim.devices.some((d) => d.deviceName === device && !d.adminAccess)) continue;
    if (incoming === null)
      throw new ClaimRefused(
        `unable to prepare claim ${uid}: requested device ${device} is already allocated to different claim ${o.uid}`,
      );
    // A holder prepared before shares were on recorded no config: it cannot be shown to agree.
    if (o.claim.configState[device]?.config !== incoming())
      throw new ClaimRefused(
        `unable to prepare claim ${uid}: requested device ${device} has conflicting configuration with already prepared claim ${o.uid}`,
      );
  }
}

/** NVIDIA's applySharingConfig refuses every MPS claim while shares are on, the first one too. */
export const MPS_WITH_SHARES =
  'error applying config: MPS sharing is not supported when consumable shares is enabled';

/** getPreparedMigDevice: the dynamic MIG device another completed claim already made for this name. */
export function preparedMig(device: string, others: readonly Holding[]): PreparedDevice | undefined {
  for (const o of others)
    for (const d of o.claim.devices)
      if (d.deviceName === device && d.migInstance?.gpuInstanceId !== undefined && d.uuid !== '') return d;
  return undefined;
}

/** isMigDeviceInUseByOtherClaims: the same device name or the same MIG UUID in another completed claim. */
export function migInUse(d: PreparedDevice, others: readonly Holding[]): boolean {
  return others.some((o) =>
    o.claim.devices.some((x) => x.deviceName === d.deviceName || (d.uuid !== '' && x.uuid === d.uuid)),
  );
}
