import type { Machine } from './machine.js';

/**
 * What the driver reads from sysfs rather than NVML: the PCIe root above a device and its NUMA node.
 * Kept apart from NVML because the real driver keeps it apart, and a real sysfs could plug in here.
 */
export interface PciTopology {
  /** `pci<domain>:<bus>`, or null when the device sits on no root complex sysfs can resolve. */
  pcieRoot(busId: string): string | null;
  /** sysfs `numa_node`; -1 when the platform reports none. */
  numaNode(busId: string): number;
}

export function machineTopology(machine: Machine): PciTopology {
  const byBus = new Map<string, { pcieRoot: string | null; numaNode: number }>();
  for (const d of [...machine.gpus, ...machine.nics]) byBus.set(d.busId, d);
  return {
    pcieRoot: (busId) => byBus.get(busId)?.pcieRoot ?? null,
    numaNode: (busId) => byBus.get(busId)?.numaNode ?? -1,
  };
}
