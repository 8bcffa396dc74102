import type { GpuDevices } from '../device/allocatable.js';
import { RELEASES, type DriverRelease } from '../device/release.js';
import { FakegpuError, show } from '../../errors.js';
import { apiLimits, LIMITS } from '../../kube/types/limits.js';
import type { CounterSet, Device, ResourceSlice } from '../../kube/types/resource.js';
import { compareSemver, type Semver } from '../../kube/types/version.js';

export const DRIVER_NAME = 'gpu.nvidia.com';

export interface SliceOptions {
  nodeName: string;
  driverName: string;
  dynamicMig: boolean;
  /** The API server's version: from 1.35 counters live in slices of their own. */
  kubernetesVersion: Semver;
  release: DriverRelease;
}

const SPLIT_FROM: Semver = { major: 1, minor: 35, patch: 0 };

/** One slice's content before naming; the publisher turns these into objects. */
interface Content {
  devices?: Device[];
  sharedCounters?: CounterSet[];
}

function chunk<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out.length > 0 ? out : [[]];
}

/**
 * How the real driver cuts a node's devices into slices:
 * - without dynamic MIG, one slice with every device;
 * - with dynamic MIG on a node with a MIG-capable GPU and API server >= 1.35, a counters-only slice first,
 *   then one devices-only slice per GPU in PCI bus order;
 * - otherwise one slice per GPU holding its devices and its counter set.
 * Where the real driver would exceed an API limit (more than 128 devices, or 64 once one is tainted, more
 * than 8 counter sets) it fails to publish; we split further instead so large custom profiles still
 * work. See docs/fidelity.md.
 */
export function layoutSlices(gpus: readonly GpuDevices[], opts: SliceOptions): Content[] {
  const limits = apiLimits(opts.kubernetesVersion);
  if (!opts.dynamicMig) {
    const devices = gpus.flatMap((g) => g.devices);
    const tainted = devices.some((d) => d.taints !== undefined);
    return chunk(devices, tainted ? limits.devicesPerSliceWithTaintsOrCounters : limits.devicesPerSlice).map(
      (devices) => ({ devices }),
    );
  }
  const split = gpus.some((g) => g.gpu.migCapable) && compareSemver(opts.kubernetesVersion, SPLIT_FROM) >= 0;
  if (split) {
    const sets = gpus.flatMap((g) => (g.counterSet ? [g.counterSet] : []));
    const counterSlices = chunk(sets, limits.counterSetsPerSlice).map((sharedCounters) =>
      sharedCounters.length > 0 ? { sharedCounters } : {},
    );
    const deviceSlices = gpus.flatMap((g) =>
      chunk(g.devices, limits.devicesPerSliceWithTaintsOrCounters).map((devices) => ({ devices })),
    );
    return [...counterSlices, ...deviceSlices];
  }
  return gpus.flatMap((g) =>
    chunk(g.devices, limits.devicesPerSliceWithTaintsOrCounters).map((devices, i) => {
      const c: Content = { devices };
      if (i === 0 && g.counterSet) c.sharedCounters = [g.counterSet];
      return c;
    }),
  );
}

/** `metadata.generateName` as the vendored DRA helper sets it; the API server appends 5 random characters. */
export function sliceGenerateName(
  index: number,
  count: number,
  pool: { nodeName: string; driverName: string; indexedNames: boolean },
): string {
  if (!pool.indexedNames) return `${pool.nodeName}-${pool.driverName}-`;
  const width = Math.max(5, (count - 1).toString(16).length);
  return `${index.toString(16).padStart(width, '0')}-${pool.driverName}-${pool.nodeName}-`;
}

/**
 * The API server checks a generateName as the prefix of a DNS subdomain, at most 253 characters, before it
 * appends its random characters.
 */
const MAX_GENERATE_NAME = 253;

/** Refuses a node name that makes the slices' generateName longer than the API server accepts. */
export function checkSliceNames(
  nodeName: string,
  pool: { driverName: string; indexedNames: boolean },
  field: string,
): void {
  const name = sliceGenerateName(0, 1, { ...pool, nodeName });
  if (name.length <= MAX_GENERATE_NAME) return;
  const room = MAX_GENERATE_NAME - (name.length - nodeName.length);
  throw new FakegpuError(
    field,
    `${show(nodeName)} is too long: the slices of driver ${pool.driverName} would have a generateName of ${name.length} characters and the API server allows ${MAX_GENERATE_NAME}; the node name can have at most ${room} characters`,
  );
}

/** One pool per node, named after it, as both NVIDIA's driver and DRANET publish. */
function poolSlices(
  contents: readonly Content[],
  pool: { nodeName: string; driverName: string; indexedNames: boolean },
): ResourceSlice[] {
  return contents.map((c, i) => ({
    apiVersion: 'resource.k8s.io/v1',
    kind: 'ResourceSlice',
    metadata: { generateName: sliceGenerateName(i, contents.length, pool) },
    spec: {
      driver: pool.driverName,
      pool: { name: pool.nodeName, generation: 1, resourceSliceCount: contents.length },
      nodeName: pool.nodeName,
      ...(c.devices && c.devices.length > 0 ? { devices: c.devices } : {}),
      ...(c.sharedCounters ? { sharedCounters: c.sharedCounters } : {}),
    },
  }));
}

export function buildSlices(gpus: readonly GpuDevices[], opts: SliceOptions): ResourceSlice[] {
  return poolSlices(layoutSlices(gpus, opts), {
    nodeName: opts.nodeName,
    driverName: opts.driverName,
    indexedNames: RELEASES[opts.release].indexedSliceNames,
  });
}

/**
 * DRANET's slices: every published NIC in one slice (split at the API's device limit), named with the
 * index prefix of the DRA library it vendors today.
 */
export function buildNicSlices(
  devices: readonly Device[],
  pool: { nodeName: string; driverName: string },
): ResourceSlice[] {
  if (devices.length === 0) return [];
  return poolSlices(
    chunk(devices, LIMITS.devicesPerSlice).map((d) => ({ devices: d })),
    { ...pool, indexedNames: true },
  );
}
