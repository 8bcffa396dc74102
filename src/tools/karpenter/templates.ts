import type { DriverRelease } from '../../model/device/release.js';
import type { CounterSet, Device, ResourceSlice } from '../../kube/types/resource.js';
import type { Semver } from '../../kube/types/version.js';
import { DRANET } from '../../model/nic/attributes.js';
import { INSTANCE_TYPES } from '../../model/preset/index.js';
import { resolveProfile } from '../../process/profile-file.js';
import { renderSlices } from '../../model/render.js';
import { DRIVER_NAME } from '../../model/slice/build.js';

/**
 * What an autoscaler must predict of a node before it exists, in the shape Karpenter's DRA-aware
 * instance types take (`cloudprovider.InstanceType.DynamicResources.ResourceSliceTemplates`, v1.14+):
 * per instance type, the slices the fleet will publish once a node of it runs, from the same render, so
 * the simulation and the node cannot disagree. What only a running node knows is left out: the pool's
 * name (the node's) and each GPU's UUID (derived from it).
 */
export const POOL_PLACEHOLDER = '<node name>';

export interface SliceTemplate {
  driver: string;
  pool: { name: string };
  devices?: Device[];
  sharedCounters?: CounterSet[];
}

export interface InstanceTypeTemplates {
  instanceType: string;
  preset: string;
  /** `nvidia.com/gpu`, as the instance type's capacity states it (the DeviceClass's extended resource). */
  gpus: number;
  /** Attributes whose values only a running node has (GPU UUIDs, NIC MACs): left out of the templates. */
  perNodeAttributes: string[];
  resourceSliceTemplates: SliceTemplate[];
}

export interface TemplateOptions {
  kubernetesVersion: Semver;
  release: DriverRelease;
  dynamicMig: boolean;
  /** With DRANET's NIC slices (default); without them their attributes are no node's either. */
  nics?: boolean;
}

/** One node's slices as templates: node-specific parts out, the rest as published. */
export function templatesOf(slices: readonly ResourceSlice[], perNode: ReadonlySet<string>): SliceTemplate[] {
  return slices.map((s) => ({
    driver: s.spec.driver,
    pool: { name: POOL_PLACEHOLDER },
    ...(s.spec.devices
      ? {
          devices: s.spec.devices.map((d) => ({
            ...d,
            ...(d.attributes
              ? {
                  attributes: Object.fromEntries(
                    Object.entries(d.attributes).filter(([k]) => !perNode.has(k)),
                  ),
                }
              : {}),
          })),
        }
      : {}),
    ...(s.spec.sharedCounters ? { sharedCounters: s.spec.sharedCounters } : {}),
  }));
}

/**
 * Which attributes depend on the node: the machine rendered for two node names, compared device by
 * device. Derived rather than listed, so a new per-node attribute can never reach a template.
 */
function perNodeAttributes(a: readonly ResourceSlice[], b: readonly ResourceSlice[]): Set<string> {
  const out = new Set<string>();
  const devicesOf = (xs: readonly ResourceSlice[]) => xs.flatMap((s) => s.spec.devices ?? []);
  const other = devicesOf(b);
  devicesOf(a).forEach((d, i) => {
    const e = other[i];
    for (const [k, v] of Object.entries(d.attributes ?? {}))
      if (JSON.stringify(v) !== JSON.stringify(e?.attributes?.[k])) out.add(k);
  });
  return out;
}

export function karpenterTemplates(o: TemplateOptions): InstanceTypeTemplates[] {
  return [...INSTANCE_TYPES].map(([instanceType, preset]) => {
    const render = (nodeName: string) =>
      renderSlices(resolveProfile(preset.name), {
        nodeName,
        dynamicMig: o.dynamicMig,
        driverName: DRIVER_NAME,
        kubernetesVersion: o.kubernetesVersion,
        release: o.release,
        nics: o.nics === false ? undefined : { driverName: DRANET, standardNumaNode: false },
        computeDomains: true,
      }).items;
    const slices = render('template-a');
    const perNode = perNodeAttributes(slices, render('template-b'));
    return {
      instanceType,
      preset: preset.name,
      gpus: slices
        .filter((s) => s.spec.driver === DRIVER_NAME)
        .flatMap((s) => s.spec.devices ?? [])
        .filter((d) => {
          const t = d.attributes?.['type'];
          return t !== undefined && 'string' in t && t.string === 'gpu';
        }).length,
      perNodeAttributes: [...perNode].sort(),
      resourceSliceTemplates: templatesOf(slices, perNode),
    };
  });
}
