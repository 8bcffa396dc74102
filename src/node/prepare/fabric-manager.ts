import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { RESET_HINT, type PreparedDevice } from '../checkpoint/checkpoint.js';
import { FakegpuError } from '../../errors.js';
import type { AllocationResult } from '../../kube/types/claim.js';
import type { GpuInfo } from '../../model/device/discover.js';
import { FabricPartitionError, resolvePartition } from '../../model/device/fabric-partitions.js';
import type { FmPartition } from '../../model/hardware/fabric-manager.js';
import { parseChecked, withChecksum, writeDurably } from '../durable/file.js';
import type { FeatureGates } from '../../model/feature-gates/gates.js';
import type { Machine } from '../../model/hardware/machine.js';
import type { GpuAllocatable } from './gpu-files.js';
import { ClaimError } from './node.js';

/**
 * FabricManagerPartitioning at prepare: a claim's full GPUs must form exactly one Fabric Manager
 * partition, which prepare activates and unprepare deactivates (NVIDIA v0.5.0
 * cmd/gpu-kubelet-plugin/device_state.go, pkg/fabricmanager/manager.go).
 */

/**
 * The Fabric Manager service this node would run. FM outlives the plugin, so which partitions are active
 * lives in a file of its own, written whole and fsynced: a plugin killed at any line finds FM as it was.
 */
export class FakeFabricManager {
  /**
   * A damaged file stops the plugin with one line, as a damaged checkpoint does; with `reset`
   * (`--reset-checkpoint`) FM starts with no partition active instead: activating is idempotent and a
   * partition's GPUs stay the prepared claims' until unprepare, which deactivates an inactive one as a
   * no-op.
   */
  constructor(
    private readonly path: string,
    readonly table: readonly FmPartition[],
    private readonly reset = false,
  ) {}

  active(): number[] {
    if (!existsSync(this.path)) return [];
    const read = parseChecked(readFileSync(this.path, 'utf8'));
    const ids = read.ok ? read.data['activePartitions'] : undefined;
    if (Array.isArray(ids) && ids.every((i) => Number.isInteger(i))) return ids as number[];
    const why = read.ok ? 'not a partition list' : read.why;
    if (!this.reset) throw new FakegpuError(this.path, `the fabric manager state is ${why}; ${RESET_HINT}`);
    this.write([]);
    return [];
  }

  private write(ids: readonly number[]): void {
    writeDurably(this.path, withChecksum({ activePartitions: [...ids].sort((a, b) => a - b) }));
  }

  private partition(id: number): FmPartition {
    const p = this.table.find((x) => x.id === id);
    if (!p) throw new ClaimError(`fabricmanager: unknown partitionId ${id}`);
    return p;
  }

  /**
   * Idempotent, as NVIDIA's ActivatePartition checks FM first. FM refuses a partition sharing a GPU with
   * an active one; the return code's text (`FM_ST_IN_USE`, fmReturn_t -7) is INFERRED: go-nvfm's
   * spelling of it was not read.
   */
  activate(id: number): void {
    const want = this.partition(id);
    const active = this.active();
    if (active.includes(id)) return;
    const clash = active.some((a) => this.partition(a).moduleIds.some((m) => want.moduleIds.includes(m)));
    if (clash)
      throw new ClaimError(
        `activating fabric partition ${id}: fabricmanager: fmActivateFabricPartition(${id}): fmActivateFabricPartition: FM_ST_IN_USE`,
      );
    this.write([...active, id]);
  }

  /** Leaves active only `ids`, whatever else the file holds: the start-up sweep's one write. */
  keepOnly(ids: readonly number[]): void {
    const active = this.active();
    if (active.some((a) => !ids.includes(a))) this.write(active.filter((a) => ids.includes(a)));
  }

  /** Idempotent: an inactive partition is left as it is, as NVIDIA's DeactivatePartition does. */
  deactivate(id: number): void {
    this.partition(id);
    const active = this.active();
    if (active.includes(id)) this.write(active.filter((a) => a !== id));
  }
}

/** Which full GPU a device name is, where it is one (NVIDIA counts full GPUs and VFIO parents only). */
export type FullGpuOf = (deviceName: string) => GpuInfo | null;

/** The prepare side: which partition a claim forms, and activating, releasing and sweeping them. */
export class FabricPartitions {
  constructor(
    readonly fm: FakeFabricManager,
    private readonly fullGpu: FullGpuOf,
  ) {}

  private gpusOf(names: readonly string[]): GpuInfo[] {
    return names.flatMap((n) => {
      const g = this.fullGpu(n);
      return g ? [g] : [];
    });
  }

  /**
   * The partition a claim's results form, or null where NVIDIA activates none: an admin-access claim,
   * or one without full GPUs. A set that is no partition is refused, in NVIDIA's words.
   */
  resolve(results: readonly AllocationResult[]): FmPartition | null {
    if (results.some((r) => r.adminAccess === true)) return null;
    const gpus = this.gpusOf(results.map((r) => r.device));
    if (gpus.length === 0) return null;
    try {
      return resolvePartition(gpus, this.fm.table);
    } catch (e) {
      if (e instanceof FabricPartitionError)
        throw new ClaimError(`${e.message}; refusing partition activation`);
      throw e;
    }
  }

  activate(p: FmPartition): void {
    this.fm.activate(p.id);
  }

  /**
   * Unprepare's deactivation, skipped while another prepared claim still holds one of these GPUs (NVIDIA
   * checks that only under ConsumableShares, where sharing is normal; elsewhere only admin access shares
   * a GPU, and NVIDIA never deactivates for an admin claim, so waiting for the last holder ends the same).
   */
  release(devices: readonly PreparedDevice[], heldByOthers: (gpuUuid: string) => boolean): void {
    const gpus = this.gpusOf(devices.map((d) => d.deviceName));
    if (gpus.length === 0 || gpus.some((g) => heldByOthers(g.uuid))) return;
    let p: FmPartition;
    try {
      p = resolvePartition(gpus, this.fm.table);
    } catch (e) {
      // NVIDIA logs "…; skipping partition deactivation" and carries on.
      if (e instanceof FabricPartitionError) return;
      throw e;
    }
    this.fm.deactivate(p.id);
  }

  /** At start: partitions active for no recorded claim (a kill between activating and recording). */
  sweep(held: readonly PreparedDevice[]): number {
    const modules = new Set(this.gpusOf(held.map((d) => d.deviceName)).map((g) => g.moduleId));
    const active = this.fm.active();
    const keep = active.filter((id) =>
      this.fm.table.some((p) => p.id === id && p.moduleIds.some((m) => modules.has(m))),
    );
    this.fm.keepOnly(keep);
    return active.length - keep.length;
  }
}

/**
 * NVIDIA opens FM only with the gate on and an NVSwitch fabric on the node (`newFabricManager`);
 * elsewhere prepare does no partition check at all.
 */
export function fabricPartitionsFor(
  machine: Machine,
  opts: { gates: FeatureGates; stateDir: string; resetCheckpoint?: boolean | undefined },
  allocatable: ReadonlyMap<string, GpuAllocatable>,
): FabricPartitions | null {
  if (!opts.gates.FabricManagerPartitioning || machine.fabricManager === null) return null;
  const fm = new FakeFabricManager(
    join(opts.stateDir, 'fabric-manager.json'),
    machine.fabricManager,
    opts.resetCheckpoint === true,
  );
  return new FabricPartitions(fm, (name) => {
    const a = allocatable.get(name);
    return a?.type === 'gpu' ? a.gpu : null;
  });
}
