import type { FmPartition } from '../hardware/fabric-manager.js';
import type { Attributes } from './attributes.js';
import type { GpuInfo } from './discover.js';

/**
 * FabricManagerPartitioning: what NVIDIA's driver makes of Fabric Manager's partitions, for the device
 * model (attributes) and for prepare (which partition a claim's GPUs form). NVIDIA v0.5.0
 * pkg/fabricmanager/manager.go, cmd/gpu-kubelet-plugin/deviceinfo.go and device_state.go.
 */

/** Bad FM data or a claim no partition fits; the message is NVIDIA's, whole. */
export class FabricPartitionError extends Error {}

/**
 * Size → partition ID of the partitions holding `moduleId` (`GetPartitionsBySizeByModuleID`). Two of
 * one size would make `partition<N>` ambiguous, which NVIDIA refuses at start.
 */
export function partitionsBySize(moduleId: number, table: readonly FmPartition[]): Map<number, number> {
  const out = new Map<number, number>();
  for (const p of table) {
    if (!p.moduleIds.includes(moduleId)) continue;
    const size = p.moduleIds.length;
    const existing = out.get(size);
    if (existing !== undefined)
      throw new FabricPartitionError(
        `fabricmanager: gpuModuleID ${moduleId} appears in two partitions of size ${size} (${existing} and ${p.id})`,
      );
    out.set(size, p.id);
  }
  return out;
}

/**
 * `gpuModuleID` and `partition<N>` of a full GPU (and, through its parent, a VFIO device), as
 * `addFabricManagerAttributes` adds them with the gate on: the module ID from NVML whether or not FM is
 * there, left out when 0; the partitions only where FM is (`table` non-null). MIG devices get none.
 */
export function fabricManagerAttributes(gpu: GpuInfo, table: readonly FmPartition[] | null): Attributes {
  const a: Attributes = {};
  if (gpu.moduleId !== 0) a['gpuModuleID'] = { int: gpu.moduleId };
  // NVIDIA skips the partitions of a GPU without a module ID (one bound to vfio-pci at discovery).
  if (table === null || gpu.moduleId === 0) return a;
  for (const [size, id] of partitionsBySize(gpu.moduleId, table)) a[`partition${size}`] = { int: id };
  return a;
}

/** A Go `%v` of a `[]int`: `[1 2 3]`. */
const goInts = (ids: readonly number[]): string => `[${ids.join(' ')}]`;

/**
 * The partition whose GPUs are exactly `gpus` (`resolveFabricPartition`), in NVIDIA's words when none
 * is: module IDs listed in the claim's result order, as NVIDIA collects them.
 */
export function resolvePartition(gpus: readonly GpuInfo[], table: readonly FmPartition[]): FmPartition {
  const ids: number[] = [];
  for (const g of gpus) {
    if (g.moduleId === 0)
      throw new FabricPartitionError(`fabric manager: no gpuModuleID for GPU at PCI "${g.pciBusId}"`);
    ids.push(g.moduleId);
  }
  const want = new Set(ids);
  const found = table.find((p) => p.moduleIds.length === want.size && p.moduleIds.every((m) => want.has(m)));
  if (ids.length === 0 || !found)
    throw new FabricPartitionError(
      `fabric manager: GPU module set ${goInts(ids)} does not match any FM partition`,
    );
  return found;
}
