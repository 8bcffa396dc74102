import type { CounterSet, Device, DeviceCounterConsumption } from '../../kube/types/resource.js';
import { binaryQuantity } from '../../kube/types/quantity.js';
import {
  fullGpuCapacity,
  gpuAttributes,
  MIG_CAPACITY_KEYS,
  migAttributes,
  migCapacityValues,
  staticMigCapacity,
  toCapacities,
  type Attributes,
  type MigCapacityKey,
} from './attributes.js';
import { fabricManagerAttributes } from './fabric-partitions.js';
import type { FmPartition } from '../hardware/fabric-manager.js';
import type { GpuInfo, MigProfile, StaticMigDevice } from './discover.js';
import { camelToDns, counterSetName, gpuDeviceName, memorySliceCounter, migDeviceName } from './names.js';
import type { DriverRelease } from './release.js';
import type { FeatureGates } from '../feature-gates/gates.js';
import { listNumaNodes } from './list-attributes.js';
import { vfioDevice, vfioEnabled } from './vfio.js';
import { sharesEnabled, withConsumableShares, type ConsumableShares } from './consumable-shares.js';

export interface DeviceModelOptions {
  /** The driver runs with its `DynamicMIG` feature gate: every possible MIG partition is published. */
  dynamicMig: boolean;
  release: DriverRelease;
  /** NVIDIA's feature gates, resolved (`model/feature-gates`). */
  gates: FeatureGates;
  /** Fabric Manager's partitions where the node has an NVSwitch fabric (`Machine.fabricManager`). */
  fabricManager?: readonly FmPartition[] | null | undefined;
  /** `--consumable-shares` (checked against the gate already); absent: disabled. */
  consumableShares?: ConsumableShares | undefined;
}

/**
 * What a published device is on the GPU, for the node's prepare: carried beside the device, so nothing
 * downstream re-parses names or attributes to find out.
 */
export type DeviceHandle =
  | { type: 'gpu' }
  | { type: 'mig'; mig: StaticMigDevice }
  | { type: 'partition'; profile: MigProfile; start: number; size: number }
  /** PassthroughSupport's `gpu-vfio-<index>` (`./vfio.ts`). */
  | { type: 'vfio'; index: number };

/** What one physical GPU contributes to its node's pool. */
export interface GpuDevices {
  gpu: GpuInfo;
  devices: Device[];
  /** `handles[i]` says what `devices[i]` is. */
  handles: DeviceHandle[];
  /** The GPU's shared counters under dynamic MIG; null otherwise. */
  counterSet: CounterSet | null;
}

/**
 * The GPUs as a server without partitionable devices can take them: whole GPUs (and static MIG devices)
 * with no counters, and no dynamic partitions, which without counters could be allocated together with
 * the GPU they are part of.
 */
export function withoutPartitions(gpus: readonly GpuDevices[]): GpuDevices[] {
  return gpus.map((g) => {
    const keep = g.handles.flatMap((h, i) => (h.type === 'partition' ? [] : [i]));
    return {
      gpu: g.gpu,
      devices: keep.map((i) => {
        const { consumesCounters: _, ...d } = g.devices[i] as Device;
        return d;
      }),
      handles: keep.map((i) => g.handles[i] as DeviceHandle),
      counterSet: null,
    };
  });
}

const byName = (a: { name: string }, b: { name: string }): number =>
  a.name < b.name ? -1 : a.name > b.name ? 1 : 0;

/** Maps go out with keys in byte order, as the API server serialises Go maps. */
function sorted<T>(m: Record<string, T>): Record<string, T> {
  // Most maps are built in order already; copying them anyway was a quarter of a dynamic MIG render.
  const keys = Object.keys(m);
  if (keys.every((k, i) => i === 0 || (keys[i - 1] ?? '') < k)) return m;
  return Object.fromEntries(Object.entries(m).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

function device(name: string, d: Omit<Device, 'name'>): Device {
  const out: Device = { name };
  if (d.attributes) out.attributes = sorted(d.attributes);
  if (d.capacity && Object.keys(d.capacity).length > 0) out.capacity = sorted(d.capacity);
  if (d.consumesCounters) out.consumesCounters = d.consumesCounters;
  return out;
}

function fullGpu(gpu: GpuInfo, release: DriverRelease, fm: Attributes): Device {
  return device(gpuDeviceName(gpu.minor), {
    attributes: { ...gpuAttributes(gpu, release), ...fm },
    capacity: fullGpuCapacity(gpu),
  });
}

function staticMig(gpu: GpuInfo, release: DriverRelease): Handled[] {
  return gpu.migDevices.map((m) => ({
    device: device(migDeviceName(gpu.minor, m.profile.name, m.profile.info.id, m.placement.start), {
      attributes: migAttributes(gpu, m.profile, release, m.uuid),
      capacity: staticMigCapacity(m.profile, m.placement.start, m.placement.size),
    }),
    handle: { type: 'mig', mig: m },
  }));
}

interface Handled {
  device: Device;
  handle: DeviceHandle;
}

/** Devices in name order, as the driver lists them, each with its handle. */
function inOrder(gpu: GpuInfo, all: Handled[], counterSet: CounterSet | null): GpuDevices {
  all.sort((a, b) => byName(a.device, b.device));
  return { gpu, devices: all.map((h) => h.device), handles: all.map((h) => h.handle), counterSet };
}

function counters(values: Record<string, bigint>): Record<string, { value: string }> {
  return sorted(
    Object.fromEntries(Object.entries(values).map(([k, v]) => [k, { value: binaryQuantity(v) }])),
  );
}

function capacityCounters(values: Record<MigCapacityKey, bigint>): Record<string, bigint> {
  return Object.fromEntries(MIG_CAPACITY_KEYS.map((k) => [camelToDns(k), values[k]]));
}

function sliceCounters(start: number, size: number): Record<string, bigint> {
  const out: Record<string, bigint> = {};
  for (let i = start; i < start + size; i++) out[memorySliceCounter(i)] = 1n;
  return out;
}

/** Per-dimension maximum over every profile: what the full GPU offers and what its counter set holds. */
function maxCapacities(profiles: readonly MigProfile[]): Record<MigCapacityKey, bigint> {
  const max = Object.fromEntries(MIG_CAPACITY_KEYS.map((k) => [k, 0n])) as Record<MigCapacityKey, bigint>;
  for (const p of profiles) {
    const v = migCapacityValues(p);
    for (const k of MIG_CAPACITY_KEYS) if (v[k] > max[k]) max[k] = v[k];
  }
  return max;
}

function dynamicCapable(gpu: GpuInfo): boolean {
  return gpu.migCapable && gpu.migProfiles.length > 0 && (gpu.migToggleWithoutReset || gpu.migEnabled);
}

function partitions(gpu: GpuInfo, release: DriverRelease, fm: Attributes): GpuDevices {
  const max = maxCapacities(gpu.migProfiles);
  const memSlices = Math.max(...gpu.migProfiles.flatMap((p) => p.placements.map((pl) => pl.size)));
  const setName = counterSetName(gpu.minor);
  const all = { ...capacityCounters(max), ...sliceCounters(0, memSlices) };
  const devices: Handled[] = [];
  // Ampere cannot leave MIG mode without a reset, so once MIG is on the whole GPU is not offered.
  if (!gpu.migEnabled || gpu.migToggleWithoutReset) {
    devices.push({
      device: device(gpuDeviceName(gpu.minor), {
        attributes: { ...gpuAttributes(gpu, release), ...fm },
        capacity: toCapacities(max),
        consumesCounters: [{ counterSet: setName, counters: counters(all) }],
      }),
      handle: { type: 'gpu' },
    });
  }
  for (const p of gpu.migProfiles) {
    const own = capacityCounters(migCapacityValues(p));
    for (const pl of p.placements) {
      const consumes: DeviceCounterConsumption = {
        counterSet: setName,
        counters: counters({ ...own, ...sliceCounters(pl.start, pl.size) }),
      };
      devices.push({
        device: device(migDeviceName(gpu.minor, p.name, p.info.id, pl.start), {
          attributes: migAttributes(gpu, p, release, null),
          capacity: toCapacities(migCapacityValues(p)),
          consumesCounters: [consumes],
        }),
        handle: { type: 'partition', profile: p, start: pl.start, size: pl.size },
      });
    }
  }
  return inOrder(gpu, devices, { name: setName, counters: counters(all) });
}

/**
 * The devices NVIDIA's applyConsumableShares reaches: full GPUs, static and dynamic MIG (NVIDIA v0.5.0
 * allocatable.go, partitions.go). VFIO devices never take shares: a VFIO handle stays out of this set.
 */
const SHAREABLE: ReadonlySet<DeviceHandle['type']> = new Set(['gpu', 'mig', 'partition']);

function shared(g: GpuDevices, mode: ConsumableShares | undefined): GpuDevices {
  if (!mode || !sharesEnabled(mode)) return g;
  const devices = g.devices.map((d, i) => {
    const h = g.handles[i];
    return h && SHAREABLE.has(h.type) ? withConsumableShares(d, mode) : d;
  });
  return { ...g, devices };
}

/** Every GPU's devices as the driver would allocate them, in PCI bus order. */
export function buildDevices(gpus: readonly GpuInfo[], opts: DeviceModelOptions): GpuDevices[] {
  const ordered = [...gpus].sort((a, b) => (a.pciBusId < b.pciBusId ? -1 : a.pciBusId > b.pciBusId ? 1 : 0));
  const built = ordered.map((gpu, index): GpuDevices => {
    // On full GPUs only, also under dynamic MIG (NVIDIA's GpuInfo.Attributes); never on MIG devices.
    const fm = opts.gates.FabricManagerPartitioning
      ? fabricManagerAttributes(gpu, opts.fabricManager ?? null)
      : {};
    if (opts.dynamicMig && dynamicCapable(gpu))
      return shared(partitions(gpu, opts.release, fm), opts.consumableShares);
    const devices: Handled[] = gpu.migEnabled
      ? staticMig(gpu, opts.release)
      : [{ device: fullGpu(gpu, opts.release, fm), handle: { type: 'gpu' } }];
    if (opts.gates.PassthroughSupport && vfioEnabled(gpu)) {
      // A VFIO device carries its parent GPU's Fabric Manager attributes (NVIDIA's deviceinfo.go).
      const { name, ...v } = vfioDevice(gpu, index, opts.release);
      devices.push({
        device: device(name, { ...v, attributes: { ...v.attributes, ...fm } }),
        handle: { type: 'vfio', index },
      });
    }
    return shared(inOrder(gpu, devices, null), opts.consumableShares);
  });
  return opts.gates.DRAListTypeAttributes ? listNumaNodes(built) : built;
}
