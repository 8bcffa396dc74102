import { join } from 'node:path';
import { cdiDeviceName, READ_ONLY_BIND, type CdiSpec, type ContainerEdits } from '../cdi/spec.js';
import type { PreparedClaim, PreparedDevice } from '../checkpoint/checkpoint.js';
import type { GpuInfo, MigProfile, StaticMigDevice } from '../../model/device/discover.js';
import { writeFolder } from '../durable/file.js';
import type { Machine } from '../../model/hardware/machine.js';
import { DEVICES_DIR } from '../nvidia-smi/script.js';
import { deviceView, type SmiGpu, type SmiHealth } from '../nvidia-smi/views.js';
import { NVML_MEMORY_ERROR, NVML_RETURN, NvmlError, type Nvml } from '../../model/nvml/types.js';
import { fakeDeviceNode } from './node.js';
import { mkdirSync } from 'node:fs';

/**
 * What a prepared GPU claim looks like from inside its containers: the CDI spec (device nodes, the
 * visible UUIDs, the fake nvidia-smi and its per-device views) and the view files themselves.
 *
 * Views are bind-mounted folders, so they are updated in place, a file at a time (write and rename),
 * and only files whose text changed: a running container keeps seeing its folder across restarts of
 * the plugin. The folder itself goes only when the claim is unprepared. They are made again from the
 * checkpoint at every start, so they need no fsync; the CDI spec, which the runtime reads, has one.
 */

export const CTL_MINORS = {
  '/dev/nvidiactl': 255,
  '/dev/nvidia-uvm': 254,
  '/dev/nvidia-uvm-tools': 253,
} as const;

/** What the files of one device need to know about it. */
export interface GpuAllocatable {
  /** `vfio`: PassthroughSupport's gpu-vfio-<i>, whose files are `./vfio.ts`'s. */
  type: 'gpu' | 'mig' | 'vfio';
  gpu: GpuInfo;
  /** A MIG device that exists (static MIG). */
  mig: StaticMigDevice | null;
  /** A MIG partition made at prepare (dynamic MIG). */
  partition: { profile: MigProfile; start: number; size: number } | null;
}

/**
 * Minor numbers for the fake /dev/nvidia-caps nodes: unique per GPU, GPU instance and compute instance.
 * The real ones come from /proc/driver/nvidia/capabilities; these are our own numbering on our own major.
 */
function capMinor(gpuMinor: number, gi: number, ci?: number): number {
  return 1024 + gpuMinor * 512 + gi * 16 + (ci === undefined ? 0 : ci + 1);
}

export class GpuFiles {
  constructor(
    private readonly machine: Machine,
    private readonly stateDir: string,
    private readonly allocatable: ReadonlyMap<string, GpuAllocatable>,
    private readonly nvml: Nvml,
    private readonly cdiKind: string,
  ) {}

  /** What NVML says about the GPU's health now: lost when its queries fail so, ECC counts otherwise. */
  private health(uuid: string): SmiHealth {
    try {
      const d = this.nvml.deviceGetHandleByUUID(uuid);
      d.getTemperature();
      return {
        lost: false,
        ecc: {
          correctable: Number(d.getTotalEccErrors(NVML_MEMORY_ERROR.CORRECTED)),
          uncorrectable: Number(d.getTotalEccErrors(NVML_MEMORY_ERROR.UNCORRECTED)),
        },
      };
    } catch (e) {
      if (e instanceof NvmlError && e.code === NVML_RETURN.ERROR_GPU_IS_LOST)
        return { lost: true, ecc: { correctable: 0, uncorrectable: 0 } };
      throw e;
    }
  }

  private smiGpu(gpu: GpuInfo, timeSlice: string | undefined): SmiGpu {
    const hw = this.machine.gpus.find((g) => g.uuid === gpu.uuid);
    const g: SmiGpu = {
      name: gpu.productName,
      uuid: gpu.uuid,
      busId: `0000${gpu.pciBusId}`.toUpperCase(),
      memoryMiB: Number((gpu.memoryBytes ?? 0n) / 1048576n),
      driverVersion: gpu.driverVersion,
      cudaVersion: gpu.cudaDriverVersion,
      computeCap: gpu.cudaComputeCapability,
      powerLimitW: hw?.model.powerLimitW ?? 0,
      minor: gpu.minor,
      architecture: gpu.architecture,
      migMode: gpu.migCapable ? (gpu.migEnabled ? 'Enabled' : 'Disabled') : 'N/A',
      pciDeviceId: hw?.model.pciDeviceId ?? 0,
      pciSubsystemId: hw?.model.pciSubsystemId ?? 0,
      health: this.health(gpu.uuid),
    };
    if (timeSlice) g.timeSliceInterval = timeSlice;
    return g;
  }

  private device(uid: string, c: PreparedClaim, d: PreparedDevice, dir: string, visible: string[]) {
    const a = this.allocatable.get(d.deviceName);
    if (!a) throw new Error(`allocatable not found for device "${d.deviceName}"`);
    const profile = a.mig?.profile ?? a.partition?.profile;
    const ids = a.mig ?? d.migInstance;
    const gi = ids?.gpuInstanceId;
    const ci = ids?.computeInstanceId;
    const mig =
      profile && gi !== undefined && ci !== undefined
        ? {
            profile: profile.name,
            uuid: d.uuid,
            memoryMiB: profile.info.memorySizeMB,
            gpuInstanceId: gi,
            computeInstanceId: ci,
            multiprocessors: profile.info.multiprocessorCount,
          }
        : null;
    const smi = this.smiGpu(a.gpu, c.configState[d.deviceName]?.timeSlice);
    if (mig) smi.migMode = 'Enabled';
    const view = deviceView(d.deviceName, smi, mig);
    writeFolder(join(dir, view.dir), view.files);
    const edits: ContainerEdits = {
      env: [`NVIDIA_VISIBLE_DEVICES=${visible.join(',')}`],
      deviceNodes: [
        fakeDeviceNode(`/dev/nvidia${a.gpu.minor}`, a.gpu.minor),
        // MIG access goes through capability nodes of the GPU instance and the compute instance.
        ...(mig
          ? [
              fakeDeviceNode(
                `/dev/nvidia-caps/nvidia-cap${capMinor(a.gpu.minor, mig.gpuInstanceId)}`,
                capMinor(a.gpu.minor, mig.gpuInstanceId),
              ),
              fakeDeviceNode(
                `/dev/nvidia-caps/nvidia-cap${capMinor(a.gpu.minor, mig.gpuInstanceId, mig.computeInstanceId)}`,
                capMinor(a.gpu.minor, mig.gpuInstanceId, mig.computeInstanceId),
              ),
            ]
          : []),
      ],
      mounts: [
        {
          hostPath: join(dir, view.dir),
          containerPath: `${DEVICES_DIR}/${view.dir}`,
          options: READ_ONLY_BIND,
        },
      ],
    };
    return { name: cdiDeviceName(uid, d.deviceName), containerEdits: edits };
  }

  /** Writes the claim's views under `dir` and returns its CDI spec; null for a claim without devices. */
  write(uid: string, c: PreparedClaim, dir: string): CdiSpec | null {
    if (c.devices.length === 0) return null;
    // CDI env entries replace each other rather than merge, so every device of the claim carries the
    // claim's whole list: a container given the claim sees all of it. (nvidia-smi reads the mounted
    // views instead, which are exact per container.)
    const visible = c.devices.map((d) => d.uuid);
    const devices = c.devices.map((d) => this.device(uid, c, d, dir, visible));
    const common: ContainerEdits = {
      deviceNodes: Object.entries(CTL_MINORS).map(([path, minor]) => fakeDeviceNode(path, minor)),
      mounts: [
        {
          hostPath: join(this.stateDir, 'bin', 'nvidia-smi'),
          containerPath: '/usr/bin/nvidia-smi',
          options: READ_ONLY_BIND,
        },
      ],
    };
    if (Object.values(c.configState).some((s) => s.mps)) {
      // The traces NVIDIA's MPS setup leaves in a container: the pipe directory and its variable.
      const pipe = join(dir, 'mps', 'pipe');
      mkdirSync(pipe, { recursive: true });
      mkdirSync(join(dir, 'mps', 'shm'), { recursive: true });
      common.env = ['CUDA_MPS_PIPE_DIRECTORY=/tmp/nvidia-mps'];
      common.mounts?.push({
        hostPath: pipe,
        containerPath: '/tmp/nvidia-mps',
        options: ['rw', 'nosuid', 'nodev', 'rbind', 'rprivate'],
      });
    }
    return { cdiVersion: '0.5.0', kind: this.cdiKind, containerEdits: common, devices };
  }
}
