/**
 * NVIDIA's opaque device configuration API, `resource.nvidia.com/v1beta1`, decoded and validated the way
 * the real driver does it: strictly (unknown fields are errors), with its defaults and its messages, so
 * a claim that the real driver rejects is rejected here with the same words.
 */

import type { FeatureGates } from '../feature-gates/gates.js';
import { ConfigError, isObject, registeredKind, strict, typeError } from './decode.js';
import { decodeVfio, type IommuConfig } from './vfio.js';

export { ConfigError, GROUP_VERSION } from './decode.js';
export const KINDS = ['GpuConfig', 'MigDeviceConfig', 'VfioDeviceConfig'] as const;
export type Kind = (typeof KINDS)[number];

export const INTERVALS = ['Default', 'Short', 'Medium', 'Long'] as const;
export type Interval = (typeof INTERVALS)[number];

export interface MpsConfig {
  defaultActiveThreadPercentage?: number;
  /** Normalised to `<MiB>M`, as the driver hands it to the MPS control daemon. */
  defaultPinnedDeviceMemoryLimit?: string;
  defaultPerDevicePinnedMemoryLimit?: Record<string, string>;
  multiUser?: boolean;
}

export interface Sharing {
  strategy: 'TimeSlicing' | 'MPS';
  timeSlicingConfig?: { interval: Interval };
  mpsConfig?: MpsConfig;
}

export interface DeviceConfig {
  kind: Kind;
  sharing?: Sharing;
  /** A VfioDeviceConfig's, normalised. */
  iommu?: IommuConfig;
}

/** The gates a decode reads; the whole table is `model/feature-gates`. */
export type SharingGates = Pick<FeatureGates, 'TimeSlicingSettings' | 'MPSSupport'>;

const UNITS: Record<string, bigint> = {
  '': 1n,
  Ki: 1024n,
  Mi: 1024n ** 2n,
  Gi: 1024n ** 3n,
  Ti: 1024n ** 4n,
  k: 1000n,
  M: 1000n ** 2n,
  G: 1000n ** 3n,
  T: 1000n ** 4n,
};

/** A Kubernetes quantity in bytes; the driver's limits take integer quantities. */
function quantityBytes(v: unknown, path: string): bigint {
  if (typeof v === 'number' && Number.isInteger(v)) return BigInt(v);
  const m = typeof v === 'string' ? /^(\d+)(Ki|Mi|Gi|Ti|k|M|G|T)?$/.exec(v.trim()) : null;
  if (!m)
    throw new ConfigError(
      `quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$' (${path}: ${JSON.stringify(v)})`,
    );
  return BigInt(m[1] ?? '0') * (UNITS[m[2] ?? ''] ?? 1n);
}

function limit(v: unknown, path: string): string {
  const bytes = quantityBytes(v, path);
  const mib = bytes / 1024n ** 2n;
  if (mib < 1n)
    throw new ConfigError(`invalid limit: value set too low: ${JSON.stringify(v)}: must be at least 1Mi`);
  return `${mib.toString()}M`;
}

function decodeMps(raw: unknown, path: string): MpsConfig {
  if (!isObject(raw)) throw typeError(path, 'v1beta1.MpsConfig', raw);
  strict(
    raw,
    [
      'defaultActiveThreadPercentage',
      'defaultPinnedDeviceMemoryLimit',
      'defaultPerDevicePinnedMemoryLimit',
      'multiUser',
    ],
    `${path}.`,
  );
  const out: MpsConfig = {};
  const pct = raw['defaultActiveThreadPercentage'];
  if (pct !== undefined) {
    if (typeof pct !== 'number' || !Number.isInteger(pct))
      throw typeError(`${path}.defaultActiveThreadPercentage`, 'int', pct);
    if (pct < 0) throw new ConfigError('active thread percentage must not be negative');
    if (pct > 100) throw new ConfigError('active thread percentage must not be greater than 100');
    out.defaultActiveThreadPercentage = pct;
  }
  const pinned = raw['defaultPinnedDeviceMemoryLimit'];
  if (pinned !== undefined)
    out.defaultPinnedDeviceMemoryLimit = limit(pinned, `${path}.defaultPinnedDeviceMemoryLimit`);
  const perDevice = raw['defaultPerDevicePinnedMemoryLimit'];
  if (perDevice !== undefined) {
    if (!isObject(perDevice)) throw typeError(`${path}.defaultPerDevicePinnedMemoryLimit`, 'map', perDevice);
    out.defaultPerDevicePinnedMemoryLimit = Object.fromEntries(
      Object.entries(perDevice).map(([k, v]) => [
        k,
        limit(v, `${path}.defaultPerDevicePinnedMemoryLimit.${k}`),
      ]),
    );
  }
  const multiUser = raw['multiUser'];
  if (multiUser !== undefined) {
    if (typeof multiUser !== 'boolean') throw typeError(`${path}.multiUser`, 'bool', multiUser);
    out.multiUser = multiUser;
  }
  return out;
}

function decodeSharing(raw: unknown, kind: Kind, gates: SharingGates): Sharing {
  if (!isObject(raw)) throw typeError(`${kind}.sharing`, 'v1beta1.GpuSharing', raw);
  // MIG devices cannot time-slice at a finer grain than the GPU, so the MIG config has no such field.
  const fields =
    kind === 'MigDeviceConfig' ? ['strategy', 'mpsConfig'] : ['strategy', 'timeSlicingConfig', 'mpsConfig'];
  strict(raw, fields, 'sharing.');
  const strategy = raw['strategy'];
  if (strategy !== 'TimeSlicing' && strategy !== 'MPS') {
    throw new ConfigError(
      `unknown GPU sharing strategy: ${String(strategy)}, supported GPU sharing strategies: TimeSlicing, MPS`,
    );
  }
  const gate = strategy === 'TimeSlicing' ? 'TimeSlicingSettings' : 'MPSSupport';
  if (!gates[gate]) {
    throw new ConfigError(
      `"${strategy}" is selected as the GPU sharing strategy, but the "${gate}" feature gate is not enabled`,
    );
  }
  const ts = raw['timeSlicingConfig'];
  const mps = raw['mpsConfig'];
  if (strategy === 'TimeSlicing' && mps !== undefined)
    throw new ConfigError("cannot use MpsConfig with the 'TimeSlicing' strategy");
  if (strategy === 'MPS' && ts !== undefined)
    throw new ConfigError("cannot use TimeSlicingConfig with the 'MPS' strategy");
  if (strategy === 'TimeSlicing') {
    if (ts === undefined) return { strategy, timeSlicingConfig: { interval: 'Default' } };
    if (!isObject(ts)) throw typeError('sharing.timeSlicingConfig', 'v1beta1.TimeSlicingConfig', ts);
    strict(ts, ['interval'], 'sharing.timeSlicingConfig.');
    const interval = ts['interval'] ?? 'Default';
    if (!INTERVALS.includes(interval as Interval)) {
      throw new ConfigError(
        `unknown time-slice interval: ${typeof interval === 'string' ? interval : JSON.stringify(interval)}, supported time-slice intervals: ${INTERVALS.join(', ')}`,
      );
    }
    return { strategy, timeSlicingConfig: { interval: interval as Interval } };
  }
  return { strategy, mpsConfig: mps === undefined ? {} : decodeMps(mps, 'sharing.mpsConfig') };
}

/** Decodes one `opaque.parameters` object for our driver. Throws ConfigError with the driver's wording. */
export function decodeConfig(parameters: unknown, gates: SharingGates): DeviceConfig {
  const { kind: k, params } = registeredKind(parameters, KINDS);
  try {
    if (k === 'VfioDeviceConfig') return { kind: k, iommu: decodeVfio(params) };
    strict(params, ['apiVersion', 'kind', 'sharing'], '');
    const sharing = params['sharing'];
    return sharing === undefined ? { kind: k } : { kind: k, sharing: decodeSharing(sharing, k, gates) };
  } catch (e) {
    if (e instanceof ConfigError && e.message.startsWith('strict decoding error')) {
      throw new ConfigError(`error decoding config parameters: ${e.message}`);
    }
    throw e;
  }
}

/** Which kind of config applies to a device type, for the driver's type-mismatch check. */
export function configKindFor(deviceType: 'gpu' | 'mig' | 'vfio'): Kind {
  return deviceType === 'gpu' ? 'GpuConfig' : deviceType === 'mig' ? 'MigDeviceConfig' : 'VfioDeviceConfig';
}
