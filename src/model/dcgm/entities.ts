import type { GiProfile, GpuModel } from '../catalog/types.js';
import { gpuDeviceName } from '../device/names.js';
import { nodeUuids } from '../hardware/identity.js';
import type { Machine } from '../hardware/machine.js';
import { nvmlBusId } from '../hardware/pci.js';
import { gpuInstanceId } from '../nvml/mock.js';
import type { GpuMigState } from '../nvml/state.js';

/**
 * What DCGM watches on a node: each GPU, and in MIG mode each GPU instance on it (dcgm-exporter's default
 * "flex" mode reports the instances of a GPU in MIG mode instead of the GPU). Identities are NVML's: the
 * index, the minor, the UUID, the bus ID in NVML's form.
 */
export interface GpuEntity {
  index: number;
  minor: number;
  uuid: string;
  /** `00000000:18:00.0`. */
  busId: string;
  model: GpuModel;
  /** The full GPU's device name in NVIDIA's slices (`gpu-<minor>`). */
  device: string;
  /** null: MIG off. */
  instances: InstanceEntity[] | null;
}

export interface InstanceEntity {
  /** NVML's GPU instance id (`GPU_I_ID`). */
  id: number;
  profile: GiProfile;
  start: number;
}

/** The memory slices of a GPU's MIG geometry, as NVML numbers placements. */
export function memorySlices(model: GpuModel): number {
  return model.mig?.memorySlices ?? 8;
}

export function instanceAt(model: GpuModel, profile: GiProfile, start: number): InstanceEntity {
  return { id: gpuInstanceId(memorySlices(model), start, profile.placementSize), profile, start };
}

/**
 * A machine's GPUs for any node of its profile, as the fleet needs them (UUIDs derived from the node
 * name derived again, `nodeUuids`); instances are those that exist at boot (static MIG), or, where `live`
 * is given, those of NVML's state now (the node plugin's, with dynamic MIG's instances).
 */
export function entitiesOf(
  machine: Machine,
): (node: string, live?: (uuid: string) => GpuMigState | undefined) => GpuEntity[] {
  const uuids = nodeUuids(machine);
  return (node, live) => {
    const uuid = uuids(node);
    return machine.gpus.map((hw, k) => {
      const now = live?.(hw.uuid);
      const profiles = hw.model.mig?.profiles ?? [];
      const instances = now
        ? now.migMode === 1
          ? now.gpuInstances.flatMap((gi) => {
              const profile = profiles.find((p) => p.id === gi.profileId);
              return profile ? [{ id: gi.id, profile, start: gi.start }] : [];
            })
          : null
        : hw.migEnabled
          ? hw.migInstances.map((p) => instanceAt(hw.model, p.profile, p.start))
          : null;
      return {
        index: hw.index,
        minor: hw.minor,
        uuid: uuid[k] ?? hw.uuid,
        busId: nvmlBusId(hw.busId),
        model: hw.model,
        device: gpuDeviceName(hw.minor),
        instances: instances?.sort((a, b) => a.id - b.id) ?? null,
      };
    });
  };
}
