import { compareSemver, type Semver } from './version.js';

/**
 * `resource.k8s.io/v1` validation limits, per Kubernetes release, as the constants of that release's
 * `k8s.io/api/resource/v1/types.go` (`npm run e2e:matrix` reads each built release's file and holds this
 * table to it). The one place these numbers are written: the slice layout, the health monitor's taints
 * and the tests all read them from here.
 */
export interface ApiLimits {
  /** `ResourceSliceMaxDevices`. */
  devicesPerSlice: number;
  /**
   * `ResourceSliceMaxDevicesWithTaintsOrConsumesCounters` (1.35; `…WithAdvancedFeatures` from 1.36): a
   * slice where a device has taints or consumes counters. 1.34 has no such limit: `devicesPerSlice`.
   */
  devicesPerSliceWithTaintsOrCounters: number;
  /** `DeviceTaintsMaxLength`. */
  taintsPerDevice: number;
  /** `ResourceSliceMaxCounterSets` (1.35+); 1.34 has no per-slice count of sets, only of counters. */
  counterSetsPerSlice: number;
  /** `ResourceSliceMaxCountersPerCounterSet` (1.35+); 1.34: `ResourceSliceMaxSharedCounters`, in all sets. */
  countersPerSet: number;
  /** `ResourceSliceMaxAttributesAndCapacitiesPerDevice`. */
  attributesAndCapacitiesPerDevice: number;
  /** `ResourceSliceMaxDeviceCounterConsumptionsPerDevice` (1.35+); 1.34 has none. */
  consumptionsPerDevice: number;
  /** `DeviceAttributeMaxValueLength`. */
  stringAttributeBytes: number;
}

/** The Go constant each limit is, per release where its name changed. */
export const LIMIT_CONSTANTS: Record<keyof ApiLimits, readonly string[]> = {
  devicesPerSlice: ['ResourceSliceMaxDevices'],
  devicesPerSliceWithTaintsOrCounters: [
    'ResourceSliceMaxDevicesWithTaintsOrConsumesCounters',
    'ResourceSliceMaxDevicesWithAdvancedFeatures',
  ],
  taintsPerDevice: ['DeviceTaintsMaxLength'],
  counterSetsPerSlice: ['ResourceSliceMaxCounterSets'],
  countersPerSet: ['ResourceSliceMaxCountersPerCounterSet', 'ResourceSliceMaxSharedCounters'],
  attributesAndCapacitiesPerDevice: ['ResourceSliceMaxAttributesAndCapacitiesPerDevice'],
  consumptionsPerDevice: ['ResourceSliceMaxDeviceCounterConsumptionsPerDevice'],
  stringAttributeBytes: ['DeviceAttributeMaxValueLength'],
};

const FROM_1_35: ApiLimits = {
  devicesPerSlice: 128,
  devicesPerSliceWithTaintsOrCounters: 64,
  taintsPerDevice: 16,
  counterSetsPerSlice: 8,
  countersPerSet: 32,
  attributesAndCapacitiesPerDevice: 32,
  consumptionsPerDevice: 2,
  stringAttributeBytes: 64,
};

/**
 * Oldest first; a release not listed has the limits of the newest listed one before it. `absent`: limits
 * the release does not have (no such constant); the value kept is one the release accepts.
 */
export const RELEASE_LIMITS: readonly {
  release: Semver;
  limits: ApiLimits;
  absent: readonly (keyof ApiLimits)[];
}[] = [
  {
    release: { major: 1, minor: 34, patch: 0 },
    limits: {
      ...FROM_1_35,
      // 1.34 has no smaller limit for slices with taints or counters; its layout puts one GPU's counter
      // set in a slice, and its ResourceSliceMaxSharedCounters (32 counters in all sets) is the per-set 32.
      devicesPerSliceWithTaintsOrCounters: 128,
      taintsPerDevice: 4,
    },
    absent: ['devicesPerSliceWithTaintsOrCounters', 'counterSetsPerSlice', 'consumptionsPerDevice'],
  },
  { release: { major: 1, minor: 35, patch: 0 }, limits: FROM_1_35, absent: [] },
];

export function apiLimits(v: Semver): ApiLimits {
  let found = RELEASE_LIMITS[0]?.limits ?? FROM_1_35;
  for (const r of RELEASE_LIMITS) if (compareSemver(v, r.release) >= 0) found = r.limits;
  return found;
}

/** The newest release's limits: what a slice is checked against when no API server says otherwise. */
export const LIMITS: ApiLimits = FROM_1_35;
