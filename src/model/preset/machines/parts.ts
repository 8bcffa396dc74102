import type { Source } from '../../catalog/types.js';
import type { GpuEntry, NicEntry } from '../machine-spec.js';
import type { InstanceSize, Preset, PresetAspect } from '../types.js';

/** The pieces every vendor's presets are written with. */

export const seen = (ref: string, note?: string): Source =>
  note ? { ref, confirmed: true, note } : { ref, confirmed: true };
export const inferred = (ref: string, note: string): Source => ({ ref, confirmed: false, note });

/** An EC2 instance type: sizes from EC2's own API, price from Karpenter's table of us-east-1 prices. */
export const ec2 = (
  vcpus: number,
  memoryMiB: number,
  maxPods: number,
  pricePerHour: number,
): InstanceSize => ({
  vcpus,
  memoryMiB,
  maxPods,
  architecture: 'amd64',
  pricePerHour,
  source: seen('EC2'),
  priceSource: seen('EC2PRICE'),
});

/** GKE, OKE and AKS nodes: Kubernetes' default of 110 pods, as the cloud's own table was not found. */
export const DEFAULT_MAX_PODS = 110;

/** A cloud's instance whose pods are Kubernetes' default: sizes in GiB as the cloud's tables give them. */
export const sized = (
  vcpus: number,
  memoryGiB: number,
  architecture: 'amd64' | 'arm64',
  pricePerHour: number,
  source: Source,
  priceSource: Source,
): InstanceSize => ({
  vcpus,
  memoryMiB: memoryGiB * 1024,
  maxPods: DEFAULT_MAX_PODS,
  architecture,
  pricePerHour,
  source,
  priceSource,
});

export interface Slot {
  bus: string;
  root: string | null;
  numa: number;
}

export function gpus(model: string, slots: readonly Slot[]): GpuEntry[] {
  return slots.map((s) => ({ model, busId: s.bus, pcieRoot: s.root, numaNode: s.numa }));
}

export const slot = (bus: string, root: string | null, numa: number): Slot => ({ bus, root, numa });

/** One GB200/GB300 compute tray, as OCI's and Azure's captured slices have it: two Grace sockets. */
export const GB_TRAY_SLOTS: readonly Slot[] = ['0008', '0009', '0018', '0019'].map((d, i) =>
  slot(`${d}:06:00.0`, `pci${d}:00`, i < 2 ? 0 : 1),
);

export function nic(
  ifName: string | undefined,
  busId: string,
  pcieRoot: string | null,
  numaNode: number,
  model: string,
  extra: Partial<NicEntry> = {},
): NicEntry {
  return { ...(ifName ? { ifName } : {}), busId, pcieRoot, numaNode, model, ...extra };
}

export const noNics = inferred('FAKEGPU', 'only the primary ENA/gVNIC, not modelled');

/** The driver of presets whose cloud shows none. */
export const r580 = inferred('FAKEGPU', 'a current R580 driver');

/** A VM's NUMA: eight GPUs or more over two sockets, fewer on one (the attribute then omitted). */
export const vmNuma = (n: number): Source =>
  n >= 8
    ? inferred('FAKEGPU', 'two sockets, half the GPUs each assumed')
    : inferred('FAKEGPU', 'single NUMA node: attribute omitted');

/** One size of a GPU instance family: its cloud's name, GPUs, and what the cloud sells it as. */
export interface FamilySize {
  type: string;
  gpus: number;
  instance: InstanceSize;
}

/**
 * One preset per size of an instance family whose sizes differ only in how many GPUs (and NICs) they
 * have: where `n` GPUs sit, and the facts that rest on, are the family's; size and price each row's.
 */
export function family(o: {
  prefix: string;
  vendor: string;
  model: string;
  label: string;
  driver: string;
  sizes: readonly FamilySize[];
  slots: (n: number) => readonly Slot[];
  nics?: (n: number) => { entries: NicEntry[]; label: string };
  provenance: (n: number) => Record<PresetAspect, Source>;
  /** The preset's name after the prefix; default: the type in lower case. */
  nameOf?: (type: string) => string;
}): Preset[] {
  return o.sizes.map(({ type, gpus: n, instance }) => {
    const nics = o.nics?.(n) ?? { entries: [], label: '' };
    return {
      name: `${o.prefix}-${o.nameOf?.(type) ?? type.toLowerCase()}`,
      instanceType: type,
      instance,
      description: `${o.vendor} ${type} (${n}x ${o.label}${nics.label ? `, ${nics.label}` : ''})`,
      spec: { driver: { version: o.driver }, gpus: gpus(o.model, o.slots(n)), nics: nics.entries },
      provenance: o.provenance(n),
    };
  });
}

/** A two-digit hex PCI bus number. */
export const hex = (n: number): string => n.toString(16).padStart(2, '0');
