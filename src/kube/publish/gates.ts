import type { ClusterApi } from '../api.js';
import type { Device, DeviceAttribute, ResourceSlice } from '../types/resource.js';

/**
 * Fields of a ResourceSlice that an API server drops, without an error, while their feature gate is off:
 * published anyway they would vanish, and the slice on the server would never equal what was sent. Each
 * is probed once with a dry run before publishing (`probeSlices`, `droppedFields`), and what the server
 * cannot take is left out or refused with one line naming the gate (`gateMessage`).
 */
export type GatedField =
  'sharedCounters' | 'consumesCounters' | 'taints' | 'allowMultipleAllocations' | 'listAttributes';

export const FIELD_GATES: Record<GatedField, string> = {
  sharedCounters: 'DRAPartitionableDevices',
  consumesCounters: 'DRAPartitionableDevices',
  taints: 'DRADeviceTaints',
  // With it the server also drops capacities' requestPolicy (Kubernetes 1.34+, alpha).
  allowMultipleAllocations: 'DRAConsumableCapacity',
  listAttributes: 'DRAListTypeAttributes',
};

/** A probe taint: informational, so a dry run of it could not keep anything off a device. */
const PROBE_TAINT = { key: 'fakegpu.dev/probe', value: 'gate', effect: 'None' } as const;

/**
 * Slices that carry each gated field once, made from the desired ones: the first slice with shared
 * counters, the first device consuming counters, and a device with a probe taint (taints come later,
 * with GPU failures, so they are probed even when no device has one yet).
 */
export function probeSlices(desired: readonly ResourceSlice[]): ResourceSlice[] {
  const probes: ResourceSlice[] = [];
  const listed = listProbe(desired);
  // Lists have a probe of their own; in the others they would hide which field the server refused.
  if (listed) desired = withoutFields(desired, new Set(['listAttributes']));
  const counters = desired.find((s) => (s.spec.sharedCounters?.length ?? 0) > 0);
  if (counters) probes.push(counters);
  const consuming = desired.find((s) => s.spec.devices?.some((d) => d.consumesCounters));
  if (consuming && consuming !== counters) probes.push(consuming);
  // A shared device (ConsumableShares) goes first: the taint probe then carries its
  // allowMultipleAllocations and request policies too.
  const withDevice =
    desired.find((s) => s.spec.devices?.some((d) => d.allowMultipleAllocations)) ??
    desired.find((s) => (s.spec.devices?.length ?? 0) > 0);
  const [first] = withDevice?.spec.devices ?? [];
  if (withDevice && first) {
    // Only the taint is probed here: the counters have probes of their own.
    const { consumesCounters: _, ...device } = first;
    const { sharedCounters: __, ...spec } = withDevice.spec;
    probes.push({ ...withDevice, spec: { ...spec, devices: [{ ...device, taints: [PROBE_TAINT] }] } });
  }
  if (listed) probes.push(listed);
  return probes;
}

const hasList = (d: Device): boolean => Object.values(d.attributes ?? {}).some((a) => 'ints' in a);

/** The first device with a list attribute, alone, without the other gated fields. */
function listProbe(desired: readonly ResourceSlice[]): ResourceSlice | undefined {
  for (const s of desired) {
    const d = s.spec.devices?.find(hasList);
    if (!d) continue;
    const { consumesCounters: _, taints: __, ...device } = d;
    const { sharedCounters: ___, ...spec } = s.spec;
    return { ...s, spec: { ...spec, devices: [device] } };
  }
  return undefined;
}

/** Which gated fields the sent slice had and the server's answer lacks. */
export function droppedFields(sent: ResourceSlice, stored: ResourceSlice): GatedField[] {
  const out = new Set<GatedField>();
  if ((sent.spec.sharedCounters?.length ?? 0) > 0 && !stored.spec.sharedCounters?.length)
    out.add('sharedCounters');
  const has = (devices: readonly Device[] | undefined, f: 'consumesCounters' | 'taints') =>
    (devices ?? []).some((d) => (d[f]?.length ?? 0) > 0);
  for (const f of ['consumesCounters', 'taints'] as const)
    if (has(sent.spec.devices, f) && !has(stored.spec.devices, f)) out.add(f);
  const shared = (devices: readonly Device[] | undefined) =>
    (devices ?? []).some((d) => d.allowMultipleAllocations === true);
  if (shared(sent.spec.devices) && !shared(stored.spec.devices)) out.add('allowMultipleAllocations');
  if ((sent.spec.devices ?? []).some(hasList) && !(stored.spec.devices ?? []).some(hasList))
    out.add('listAttributes');
  return [...out];
}

/** The slices without the given fields, so what is published is what the server keeps. */
export function withoutFields(
  slices: readonly ResourceSlice[],
  fields: ReadonlySet<GatedField>,
): ResourceSlice[] {
  if (fields.size === 0) return [...slices];
  return slices.map((s) => {
    const spec = { ...s.spec };
    if (fields.has('sharedCounters')) delete spec.sharedCounters;
    if (spec.devices && [...fields].some((f) => f !== 'sharedCounters'))
      spec.devices = spec.devices.map((d) => {
        const x = { ...d };
        if (fields.has('consumesCounters')) delete x.consumesCounters;
        if (fields.has('taints')) delete x.taints;
        if (fields.has('allowMultipleAllocations')) withoutSharing(x);
        if (fields.has('listAttributes') && x.attributes) x.attributes = scalarAttributes(x.attributes);
        return x;
      });
    return { ...s, spec };
  });
}

/** What a server without DRAConsumableCapacity keeps of a shared device: its capacities' values. */
function withoutSharing(d: Device): void {
  delete d.allowMultipleAllocations;
  if (!d.capacity) return;
  d.capacity = Object.fromEntries(Object.entries(d.capacity).map(([k, c]) => [k, { value: c.value }]));
}

/** A one-element list as the scalar NVIDIA publishes without its DRAListTypeAttributes gate. */
function scalarAttributes(a: Record<string, DeviceAttribute>): Record<string, DeviceAttribute> {
  return Object.fromEntries(
    Object.entries(a).map(([k, v]) => [k, 'ints' in v && v.ints[0] !== undefined ? { int: v.ints[0] } : v]),
  );
}

/** What fakegpu does while each gate is off, in the order the log line says them. */
const GATE_OFF: Record<string, string> = {
  DRAPartitionableDevices:
    'dynamic MIG needs DRAPartitionableDevices, which is off on this API server (it dropped sharedCounters/consumesCounters from a dry run): publishing whole GPUs and static MIG devices only; turn the gate on (kube-apiserver, kube-scheduler, kube-controller-manager) for dynamic MIG',
  DRADeviceTaints:
    'device taints need DRADeviceTaints, which is off on this API server (it dropped taints from a dry run): GPU failures are logged and counted in metrics but not published as taints',
  DRAConsumableCapacity:
    'consumable shares need DRAConsumableCapacity, which is off on this API server (it dropped allowMultipleAllocations from a dry run): each device goes to one claim at a time; turn the gate on (kube-apiserver, kube-scheduler, kube-controller-manager) to share devices',
  DRAListTypeAttributes:
    "list attributes need DRAListTypeAttributes, which is off on this API server (it refused or dropped a list in a dry run): publishing resource.kubernetes.io/numaNode as an int, as NVIDIA's driver does without its gate; turn the gate on (kube-apiserver, kube-scheduler) for lists",
};

/** One line for the log: which gate is off, on which server, and what fakegpu does instead. */
export function gateMessage(fields: readonly GatedField[], server: string): string {
  const gates = new Set(fields.map((f) => FIELD_GATES[f]));
  const parts = Object.entries(GATE_OFF)
    .filter(([gate]) => gates.has(gate))
    .map(([, what]) => what);
  return `Kubernetes ${server}: ${parts.join('; ')}`;
}

/**
 * The gated fields this API server drops, learnt by a dry run of each probe slice. A probe the server
 * rejects teaches nothing here: the real write will be rejected too, and the publisher says why.
 */
export async function probeGates(
  api: Pick<ClusterApi, 'dryRunSlice'>,
  desired: readonly ResourceSlice[],
): Promise<Set<GatedField>> {
  const off = new Set<GatedField>();
  for (const probe of probeSlices(desired)) {
    const body = JSON.stringify({ ...probe, metadata: { generateName: 'fakegpu-probe-' } });
    let stored: ResourceSlice;
    try {
      stored = await api.dryRunSlice(body);
    } catch {
      // A list attribute emptied by the server's field drop is an invalid attribute, not a dropped one.
      if ((probe.spec.devices ?? []).some(hasList)) off.add('listAttributes');
      continue;
    }
    for (const f of droppedFields(probe, stored)) off.add(f);
  }
  return off;
}
