import type { MigInstance } from '../checkpoint/checkpoint.js';
import type { GpuInfo, MigProfile } from '../../model/device/discover.js';
import {
  fullComputeInstanceProfile,
  NVML_DEVICE_MIG_ENABLE,
  NVML_RETURN,
  NvmlError,
  type GpuInstanceInfo,
  type Nvml,
  type NvmlGpuInstance,
} from '../../model/nvml/types.js';
import { crashPoint } from './crash.js';

/**
 * Dynamic MIG on the node's GPUs, as the real driver drives NVML: a GPU instance at the allocated
 * placement, then its full compute instance. Everything here works at GPU-instance level, since a
 * crash can leave a GPU instance without a compute instance, which no MIG device handle shows.
 */

export interface Partition {
  profile: MigProfile;
  start: number;
  size: number;
}

/**
 * Whether a record names this GPU instance: by its placement, and by its ID once known. IDs are slots
 * that NVML hands out again (a 3g and a 4g instance at start 0 share one), so an ID alone could name
 * another claim's instance made after this one was destroyed. Records from before placements were kept
 * have only the ID.
 */
function names(m: MigInstance, info: GpuInstanceInfo): boolean {
  const placed =
    m.profileId === undefined || (m.profileId === info.profileId && m.start === info.placement.start);
  const id = m.gpuInstanceId === undefined || m.gpuInstanceId === info.id;
  return placed && id && (m.profileId !== undefined || m.gpuInstanceId !== undefined);
}

export class MigInstances {
  constructor(
    private readonly nvml: Nvml,
    /** GPUs whose partitions are made at prepare, by UUID. */
    private readonly dynamic: ReadonlyMap<string, GpuInfo>,
  ) {}

  /**
   * Makes the partition. The caller has recorded its placement already, which is how a GPU instance
   * left without a compute instance by a crash is found again.
   */
  create(gpu: GpuInfo, p: Partition): { uuid: string; instance: Required<MigInstance> } {
    const dev = this.nvml.deviceGetHandleByUUID(gpu.uuid);
    if (dev.getMigMode()[0] !== NVML_DEVICE_MIG_ENABLE) dev.setMigMode(NVML_DEVICE_MIG_ENABLE);
    const gi = dev.createGpuInstanceWithPlacement(p.profile.info, { start: p.start, size: p.size });
    const giId = gi.getInfo().id;
    crashPoint('mig-gpu-instance');
    const ci = gi.createComputeInstance(
      gi.getComputeInstanceProfileInfo(fullComputeInstanceProfile(p.profile.enumName), 0),
    );
    const ciId = ci.getInfo().id;
    crashPoint('mig-compute-instance');
    const mig = dev
      .getMigDevices()
      .find((m) => m.getGpuInstanceId() === giId && m.getComputeInstanceId() === ciId);
    if (!mig) throw new Error(`MIG device ${giId}/${ciId} not found after creating it`);
    return {
      uuid: mig.getUUID(),
      instance: {
        parentUuid: gpu.uuid,
        profileId: p.profile.info.id,
        start: p.start,
        gpuInstanceId: giId,
        computeInstanceId: ciId,
      },
    };
  }

  /** Destroys the GPU instance a record names, with its compute instances. */
  destroy(m: MigInstance): void {
    for (const gi of this.gpuInstances(m.parentUuid)) {
      if (names(m, gi.getInfo())) this.destroyGpuInstance(m.parentUuid, gi);
    }
  }

  /** Destroys every GPU instance on the dynamic GPUs that none of `held` names; returns how many. */
  sweep(held: readonly MigInstance[]): number {
    let n = 0;
    for (const uuid of this.dynamic.keys()) {
      for (const gi of this.gpuInstances(uuid)) {
        const info = gi.getInfo();
        const kept = held.some((m) => m.parentUuid === uuid && names(m, info));
        if (kept) continue;
        this.destroyGpuInstance(uuid, gi);
        n++;
      }
    }
    return n;
  }

  private gpuInstances(uuid: string): NvmlGpuInstance[] {
    const gpu = this.dynamic.get(uuid);
    if (!gpu) return [];
    const dev = this.nvml.deviceGetHandleByUUID(uuid);
    return gpu.migProfiles.flatMap((p) => dev.getGpuInstances(p.info));
  }

  private destroyGpuInstance(parentUuid: string, gi: NvmlGpuInstance): void {
    try {
      const profileId = gi.getInfo().profileId;
      const profile = this.dynamic.get(parentUuid)?.migProfiles.find((p) => p.info.id === profileId);
      if (profile) {
        const full = gi.getComputeInstanceProfileInfo(fullComputeInstanceProfile(profile.enumName), 0);
        for (const ci of gi.getComputeInstances(full)) ci.destroy();
      }
      gi.destroy();
    } catch (e) {
      if (!(e instanceof NvmlError && e.code === NVML_RETURN.ERROR_NOT_FOUND)) throw e;
    }
  }
}
