import type { ConsumableShares } from '../../model/device/consumable-shares.js';
import type { DriverRelease } from '../../model/device/release.js';
import type { FeatureGates } from '../../model/feature-gates/gates.js';
import type { CounterSet, Device, ResourceSlice } from '../../kube/types/resource.js';
import type { Semver } from '../../kube/types/version.js';
import { STD } from '../../model/device/attributes.js';
import { DRANET } from '../../model/nic/attributes.js';
import { INSTANCE_TYPES } from '../../model/preset/index.js';
import { resolveProfile } from '../../process/profile-file.js';
import { renderSlices } from '../../model/render.js';
import { DRIVER_NAME } from '../../model/slice/build.js';

/**
 * What an autoscaler must predict of a node before it exists, in the shape Karpenter's DRA-aware
 * instance types take (`cloudprovider.InstanceType.DynamicResources`, v1.14+; read into Karpenter by
 * upstream/karpenter/main.go): per instance type, the slices the fleet will publish once a node of it
 * runs, from the same render, so the simulation and the node cannot disagree. What only a running node
 * knows is left out: each GPU's UUID and each NIC's MAC. A template's pool is named after its instance
 * type (a node's is the node's name): Karpenter keys counters and bindings by pool, not by node.
 */

export interface SliceTemplate {
  driver: string;
  pool: { name: string };
  devices?: Device[];
  sharedCounters?: CounterSet[];
}

/** A device of a template, as Karpenter's `cloudprovider.DeviceID` names it. */
export interface TemplateDevice {
  driver: string;
  pool: string;
  device: string;
}

/** Devices that share an attribute's value on every node of the type (Karpenter's `AttributeBinding`). */
export interface AttributeBinding {
  attribute: string;
  devices: TemplateDevice[];
}

export interface InstanceTypeTemplates {
  instanceType: string;
  preset: string;
  /** `nvidia.com/gpu`, as the instance type's capacity states it (the DeviceClass's extended resource). */
  gpus: number;
  /** Attributes whose values only a running node has (GPU UUIDs, NIC MACs): left out of the templates. */
  perNodeAttributes: string[];
  resourceSliceTemplates: SliceTemplate[];
  /**
   * GPUs and NICs on one PCIe root. The templates carry the root itself, which fakegpu knows; a cloud
   * provider that does not know it before the node runs declares only these, so they are given too.
   */
  attributeBindings: AttributeBinding[];
}

export interface TemplateOptions {
  kubernetesVersion: Semver;
  release: DriverRelease;
  dynamicMig: boolean;
  /** With DRANET's NIC slices (default); without them their attributes are no node's either. */
  nics?: boolean;
  /** NVIDIA's gates as the fleet runs with them, resolved; absent: the release's defaults. */
  gates?: FeatureGates | undefined;
  /** The fleet's `--consumable-shares`; absent: disabled. */
  consumableShares?: ConsumableShares | undefined;
}

/** One node's slices as templates of pool `pool`: node-specific parts out, the rest as published. */
export function templatesOf(
  slices: readonly ResourceSlice[],
  perNode: ReadonlySet<string>,
  pool: string,
): SliceTemplate[] {
  return slices.map((s) => ({
    driver: s.spec.driver,
    pool: { name: pool },
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
        gates: o.gates,
        consumableShares: o.consumableShares,
        driverName: DRIVER_NAME,
        kubernetesVersion: o.kubernetesVersion,
        release: o.release,
        nics: o.nics === false ? undefined : { driverName: DRANET, standardNumaNode: false },
        computeDomains: true,
      }).items;
    const slices = render('template-a');
    const perNode = perNodeAttributes(slices, render('template-b'));
    const templates = templatesOf(slices, perNode, instanceType);
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
      resourceSliceTemplates: templates,
      attributeBindings: bindingsOf(templates, STD.pcieRoot),
    };
  });
}

/** Devices of every driver grouped by their value of `attribute`, where two or more share one. */
export function bindingsOf(templates: readonly SliceTemplate[], attribute: string): AttributeBinding[] {
  const groups = new Map<string, TemplateDevice[]>();
  for (const t of templates)
    for (const d of t.devices ?? []) {
      const v = d.attributes?.[attribute];
      if (v === undefined || !('string' in v)) continue;
      const group = groups.get(v.string) ?? [];
      group.push({ driver: t.driver, pool: t.pool.name, device: d.name });
      groups.set(v.string, group);
    }
  return [...groups.values()].filter((g) => g.length >= 2).map((devices) => ({ attribute, devices }));
}
