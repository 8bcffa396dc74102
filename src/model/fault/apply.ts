import type { DriverRelease } from '../device/release.js';
import type { NodeGpu } from '../health/gpus.js';
import { GPU_LOST_TAINT_KEY, UNMONITORED_TAINT_KEY, XID_TAINT_KEY } from '../health/taints.js';
import type { DeviceTaint } from '../../kube/types/resource.js';
import type { HardwareFault, NvmlFault } from '../nvml/state.js';
import {
  DEFAULT_ECC_COUNT,
  faultPhase,
  type DeviceFaultStatus,
  type FaultSpec,
  type GpuFault,
} from './resource.js';
import { matchesNode, selectTargets, type FaultGpu, type FaultTarget } from './select.js';

/**
 * What a GpuFault does on one node, the same for the node plugin (into its mock NVML) and the fleet
 * (straight into taints): which faults are in force there, in what order, which hardware faults they
 * are, and what the status says of each device hit. Pure.
 */

export interface NodeRef {
  name: string;
  labels: Record<string, string>;
}

/** The faults in force on the node now, in the order they happened: start (else creation), then name. */
export function activeOn(faults: readonly GpuFault[], node: NodeRef, now: Date): GpuFault[] {
  const at = (f: GpuFault): string => f.spec.start ?? f.metadata.creationTimestamp ?? '';
  return faults
    .filter((f) => matchesNode(f.spec, node) && faultPhase(f, now).phase === 'active')
    .sort((a, b) => (at(a) < at(b) ? -1 : at(a) > at(b) ? 1 : a.metadata.name < b.metadata.name ? -1 : 1));
}

export function faultGpus(gpus: readonly NodeGpu[]): FaultGpu[] {
  return gpus.map((g) => ({
    index: g.index,
    name: g.name,
    uuid: g.uuid,
    mig: g.devices.flatMap((d) =>
      d.gpuInstanceId !== undefined && d.computeInstanceId !== undefined
        ? [{ name: d.name, gpuInstanceId: d.gpuInstanceId, computeInstanceId: d.computeInstanceId }]
        : [],
    ),
  }));
}

/** The hardware fault one target suffers, as NVML would report it. */
export function nvmlFault(f: FaultSpec, t: FaultTarget): HardwareFault {
  switch (f.type) {
    case 'Xid':
      return t.mig
        ? {
            kind: 'xid',
            xid: f.xid ?? 0,
            gpuInstanceId: t.mig.gpuInstanceId,
            computeInstanceId: t.mig.computeInstanceId,
          }
        : { kind: 'xid', xid: f.xid ?? 0 };
    case 'EccSingleBit':
      return { kind: 'ecc', bits: 1, count: f.count ?? DEFAULT_ECC_COUNT };
    case 'EccDoubleBit':
      return { kind: 'ecc', bits: 2, count: f.count ?? DEFAULT_ECC_COUNT };
    case 'GpuLost':
      return { kind: 'lost' };
    case 'Unmonitored':
      return { kind: 'unmonitored' };
  }
}

export interface NodeHit {
  fault: GpuFault;
  targets: FaultTarget[];
  unknown: string[];
}

/** Each fault in force on the node with the devices it hits there. */
export function hitsOn(
  faults: readonly GpuFault[],
  node: NodeRef,
  gpus: readonly NodeGpu[],
  now: Date,
): NodeHit[] {
  const fg = faultGpus(gpus);
  return activeOn(faults, node, now).map((fault) => ({ fault, ...selectTargets(fault.spec, node.name, fg) }));
}

/** The NVML faults of every hit, by GpuFault name then GPU UUID. */
export function nvmlFaultsOf(hits: readonly NodeHit[]): Map<string, Map<string, HardwareFault[]>> {
  const out = new Map<string, Map<string, HardwareFault[]>>();
  for (const h of hits) {
    const byGpu = new Map<string, HardwareFault[]>();
    for (const t of h.targets)
      byGpu.set(t.gpu.uuid, [...(byGpu.get(t.gpu.uuid) ?? []), nvmlFault(h.fault.spec.fault, t)]);
    out.set(h.fault.metadata.name, byGpu);
  }
  return out;
}

/** The same as a flat list in the order the faults happened, for `expectedTaints`. */
export function nvmlFaultList(hits: readonly NodeHit[]): { uuid: string; fault: NvmlFault }[] {
  return hits.flatMap((h) =>
    h.targets.map((t) => ({
      uuid: t.gpu.uuid,
      fault: { ...nvmlFault(h.fault.spec.fault, t), source: h.fault.metadata.name },
    })),
  );
}

export const targetName = (t: FaultTarget): string => t.mig?.name ?? t.gpu.name;

/** The taint key NVIDIA's monitor answers a fault type with; null: it publishes nothing (ECC). */
function taintKey(type: FaultSpec['type']): string | null {
  if (type === 'Xid') return XID_TAINT_KEY;
  if (type === 'GpuLost') return GPU_LOST_TAINT_KEY;
  if (type === 'Unmonitored') return UNMONITORED_TAINT_KEY;
  return null;
}

/**
 * What a published device shows of the fault: its taint for the fault's key, or (25.12) its absence;
 * null while it shows nothing yet. `taints` are the device's published taints, undefined when the
 * device is not in the slices.
 */
export function outcome(
  type: FaultSpec['type'],
  taints: readonly DeviceTaint[] | undefined,
  present: boolean,
  release: DriverRelease,
): Omit<DeviceFaultStatus, 'name' | 'publishedAt'> | null {
  const key = taintKey(type);
  if (key === null) return {};
  if (release === '25.12') return present ? (type === 'Xid' ? {} : null) : { removed: true };
  const t = taints?.find((x) => x.key === key);
  if (!t) return null;
  return { taint: { key: t.key, ...(t.value === undefined ? {} : { value: t.value }), effect: t.effect } };
}
