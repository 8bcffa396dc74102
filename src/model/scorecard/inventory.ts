import type { AllocationResult, ResourceClaim } from '../../kube/types/claim.js';
import { intOf, stringOf, type Device, type DeviceTaint } from '../../kube/types/resource.js';
import { STD } from '../device/attributes.js';
import { DRIVER_NAME } from '../slice/build.js';

/**
 * What a scorecard reads of the cluster: plain API objects as listed (`fakegpu report`) or as a fleet's
 * caches hold them. Only the fields named here are read; anything else may be there.
 */
export interface ClusterView {
  nodes: readonly NodeView[];
  slices: readonly SliceView[];
  claims: readonly ResourceClaim[];
  pods: readonly PodView[];
  /** `resource.k8s.io` DeviceTaintRules: taints given to devices from outside their slices. */
  taintRules?: readonly DeviceTaintRuleView[];
  /** The driver whose devices are GPUs; default NVIDIA's, `gpu.nvidia.com`. */
  gpuDriver?: string;
}

export interface NodeView {
  metadata: { name: string; labels?: Readonly<Record<string, string>> };
}

/** What the scorecard reads of a slice: a listed ResourceSlice is one, and so is the fleet's own view. */
export interface SliceView {
  spec: { driver: string; nodeName: string; pool: { name: string }; devices?: readonly Device[] };
}

export interface PodView {
  metadata: { name: string; namespace: string; uid: string };
  spec?: { nodeName?: string };
  status?: { reason?: string; conditions?: { type: string; status: string; reason?: string }[] };
}

export interface DeviceTaintRuleView {
  spec: {
    deviceSelector?: { driver?: string; pool?: string; device?: string };
    taint: DeviceTaint;
  };
}

/** One device of a slice, where it is and what taints it. */
export interface DeviceEntry {
  driver: string;
  pool: string;
  node: string;
  device: Device;
  /** The physical GPU it is on (GPU, MIG and VFIO devices), null for any other device (a NIC). */
  gpu: string | null;
  tainted: boolean;
}

export const deviceKey = (driver: string, pool: string, device: string): string =>
  `${driver}/${pool}/${device}`;

export const resultKey = (r: AllocationResult): string => deviceKey(r.driver, r.pool, r.device);

export const stringAttr = (d: Device, name: string): string | undefined => stringOf(d.attributes?.[name]);
export const intAttr = (d: Device, name: string): number | undefined => intOf(d.attributes?.[name]);

/** The physical GPU a GPU driver's device is on, as its node names it. */
export const physicalGpu = (d: Device): string | undefined =>
  stringAttr(d, 'parentUUID') ?? stringAttr(d, 'uuid') ?? stringAttr(d, STD.pciBusID);

/** Evicted and still listed: status reason Evicted, or a DisruptionTarget condition. */
export function evicted(p: PodView): boolean {
  return (
    p.status?.reason === 'Evicted' ||
    (p.status?.conditions ?? []).some((c) => c.type === 'DisruptionTarget' && c.status === 'True')
  );
}

/** Taints that keep claims off (NoSchedule) or evict them (NoExecute); `None` only informs. */
const binding = (t: DeviceTaint): boolean => t.effect === 'NoSchedule' || t.effect === 'NoExecute';

function ruleHits(r: DeviceTaintRuleView, driver: string, pool: string, device: string): boolean {
  const s = r.spec.deviceSelector ?? {};
  return (
    (s.driver === undefined || s.driver === driver) &&
    (s.pool === undefined || s.pool === pool) &&
    (s.device === undefined || s.device === device)
  );
}

/**
 * Every published device by `driver/pool/device`. A GPU driver's device belongs to the physical GPU
 * its `uuid` (a GPU, a VFIO device, a static MIG device's own) or `parentUUID` (a MIG device) names.
 */
export function inventory(v: ClusterView): Map<string, DeviceEntry> {
  const rules = (v.taintRules ?? []).filter((r) => binding(r.spec.taint));
  const gpuDriver = v.gpuDriver ?? DRIVER_NAME;
  const out = new Map<string, DeviceEntry>();
  for (const s of v.slices) {
    const { driver, nodeName: node } = s.spec;
    const pool = s.spec.pool.name;
    for (const d of s.spec.devices ?? []) {
      const gpu = driver === gpuDriver ? physicalGpu(d) : undefined;
      out.set(deviceKey(driver, pool, d.name), {
        driver,
        pool,
        node,
        device: d,
        gpu: gpu === undefined ? null : `${node}/${gpu}`,
        tainted: (d.taints ?? []).some(binding) || rules.some((r) => ruleHits(r, driver, pool, d.name)),
      });
    }
  }
  return out;
}

/** The devices each allocated claim holds, in the order of its results; claims with none are left out. */
export function allocatedClaims(
  v: ClusterView,
  devices: ReadonlyMap<string, DeviceEntry>,
): { claim: ResourceClaim; held: DeviceEntry[] }[] {
  const out: { claim: ResourceClaim; held: DeviceEntry[] }[] = [];
  for (const claim of v.claims) {
    const results = claim.status?.allocation?.devices?.results ?? [];
    const held = results.flatMap((r) => {
      const e = devices.get(resultKey(r));
      return e ? [e] : [];
    });
    if (held.length > 0) out.push({ claim, held });
  }
  return out;
}
