import type { ResourceClaim } from '../../kube/types/claim.js';
import { intOf, stringOf, type Device, type DeviceTaint } from '../../kube/types/resource.js';
import { STD } from '../device/attributes.js';

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
