import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  cdiDeviceId,
  cdiDeviceName,
  READ_ONLY_BIND,
  type CdiSpec,
  type ContainerEdits,
} from '../cdi/spec.js';
import { removeSpec, writeSpec } from '../cdi/write.js';
import type { CheckpointStore, PreparedClaim, PreparedDevice } from '../checkpoint/checkpoint.js';
import {
  ConfigError,
  configKindFor,
  decodeConfig,
  type DeviceConfig,
  type FeatureGates,
} from '../config/nvidia.js';
import type { GpuDevices } from '../device/allocatable.js';
import type { GpuInfo, MigProfile, StaticMigDevice } from '../device/discover.js';
import type { Machine } from '../hardware/machine.js';
import {
  fullComputeInstanceProfile,
  NVML_DEVICE_MIG_ENABLE,
  NVML_RETURN,
  NvmlError,
  type Nvml,
} from '../nvml/types.js';
import { NVIDIA_SMI, DEVICES_DIR } from '../nvidia-smi/script.js';
import { deviceView, type SmiGpu } from '../nvidia-smi/views.js';
import { baseRequest, type AllocationResult, type ResourceClaim } from './claim.js';
import { fakeDeviceNode, makeFakeNodes, PrepareError, Serial } from './node.js';

/**
 * The node's side of a claim: check the allocation, apply NVIDIA's configs, write the CDI spec and the
 * device views the fake nvidia-smi reads, and remember it all in the checkpoint. Calls are serialised,
 * as the real driver's lock does, so concurrent claims cannot interleave.
 */

const CTL_MINORS = { '/dev/nvidiactl': 255, '/dev/nvidia-uvm': 254, '/dev/nvidia-uvm-tools': 253 } as const;

export interface PrepareOptions {
  driverName: string;
  nodeName: string;
  cdiRoot: string;
  stateDir: string;
  gates: FeatureGates;
}

interface Allocatable {
  type: 'gpu' | 'mig';
  gpu: GpuInfo;
  /** A MIG device that exists (static MIG). */
  mig: StaticMigDevice | null;
  /** A MIG partition to create at prepare (dynamic MIG). */
  partition: { profile: MigProfile; start: number; size: number } | null;
}

const PARTITION = /^gpu-\d+-mig-.+-(\d+)-(\d+)$/;

/**
 * Minor numbers for the fake /dev/nvidia-caps nodes: unique per GPU, GPU instance and compute instance.
 * The real ones come from /proc/driver/nvidia/capabilities; these are our own numbering on our own major.
 */
function capMinor(gpuMinor: number, gi: number, ci?: number): number {
  return 1024 + gpuMinor * 512 + gi * 16 + (ci === undefined ? 0 : ci + 1);
}

export class DeviceState {
  private readonly allocatable = new Map<string, Allocatable>();
  private readonly serial = new Serial();

  constructor(
    private readonly machine: Machine,
    private readonly nvml: Nvml,
    devices: readonly GpuDevices[],
    private readonly checkpoint: CheckpointStore,
    private readonly opts: PrepareOptions,
  ) {
    for (const g of devices) {
      for (const d of g.devices) {
        const type = d.attributes?.['type'];
        const isMig = type !== undefined && 'string' in type && type.string === 'mig';
        const mig = isMig
          ? (g.gpu.migDevices.find(
              (m) =>
                d.attributes?.['uuid'] &&
                'string' in d.attributes['uuid'] &&
                d.attributes['uuid'].string === m.uuid,
            ) ?? null)
          : null;
        let partition: Allocatable['partition'] = null;
        const m = isMig && !mig ? PARTITION.exec(d.name) : null;
        if (m) {
          const profile = g.gpu.migProfiles.find((p) => p.info.id === Number(m[1]));
          const placement = profile?.placements.find((pl) => pl.start === Number(m[2]));
          if (profile && placement) partition = { profile, start: placement.start, size: placement.size };
        }
        this.allocatable.set(d.name, { type: isMig ? 'mig' : 'gpu', gpu: g.gpu, mig, partition });
      }
    }
    mkdirSync(join(opts.stateDir, 'bin'), { recursive: true });
    writeFileSync(join(opts.stateDir, 'bin', 'nvidia-smi'), NVIDIA_SMI, { mode: 0o755 });
    this.makeDeviceNodes();
  }

  /** Stand-ins for /dev/nvidia* under the state dir. */
  private makeDeviceNodes(): void {
    makeFakeNodes(join(this.opts.stateDir, 'dev'), [
      ...this.machine.gpus.map((g) => [`nvidia${g.minor}`, g.minor] as const),
      ...Object.entries(CTL_MINORS).map(([p, m]) => [p.slice('/dev/'.length), m] as const),
    ]);
  }

  /** Re-applies every completed claim's files after a restart (CDI specs may live on tmpfs). */
  restore(): string[] {
    const stale: string[] = [];
    this.destroyUnheldMig();
    for (const [uid, c] of this.checkpoint.all()) {
      if (c.state !== 'PrepareCompleted') {
        this.forget(uid);
      } else if (c.devices.every((d) => this.allocatable.has(d.deviceName))) {
        this.writeFiles(uid, c);
      } else {
        // The machine changed under a prepared claim (another profile): keep the record so the
        // kubelet's unprepare still finds and cleans it, but write nothing for devices that are gone.
        stale.push(uid);
      }
    }
    return stale;
  }

  prepare(claim: ResourceClaim): Promise<PreparedDevice[]> {
    return this.serial.run(() => this.prepareNow(claim));
  }

  unprepare(uid: string): Promise<void> {
    return this.serial.run(() => {
      this.forget(uid);
    });
  }

  private fail(claim: ResourceClaim, cause: string): PrepareError {
    const m = claim.metadata;
    return new PrepareError(
      `error preparing devices for claim ${m.namespace}/${m.name}:${m.uid}: prepare devices failed: ${cause}`,
    );
  }

  private prepareNow(claim: ResourceClaim): PreparedDevice[] {
    const uid = claim.metadata.uid;
    const done = this.checkpoint.get(uid);
    if (done?.state === 'PrepareCompleted') {
      this.writeFiles(uid, done);
      return done.devices;
    }
    if (done) this.forget(uid);
    const allocation = claim.status?.allocation?.devices;
    if (!allocation) throw this.fail(claim, 'claim not yet allocated');
    const results = (allocation.results ?? []).filter((r) => r.driver === this.opts.driverName);
    const configs = (allocation.config ?? []).filter((c) => c.opaque?.driver === this.opts.driverName);
    const chosen: { result: AllocationResult; device: Allocatable; config: DeviceConfig | null }[] = [];
    for (const r of results) {
      const device = this.allocatable.get(r.device);
      if (r.pool !== this.opts.nodeName || !device)
        throw this.fail(claim, `allocatable not found for device "${r.device}"`);
      if (device.type === 'mig' && !device.mig && !device.partition) {
        throw this.fail(claim, `allocatable not found for device "${r.device}"`);
      }
      const other = r.adminAccess ? undefined : this.checkpoint.holder(r.device, uid);
      if (other !== undefined)
        throw this.fail(
          claim,
          `requested device ${r.device} is already allocated to different claim ${other}`,
        );
      // Class configs come before claim configs in the allocation; the last one that applies wins.
      let config: DeviceConfig | null = null;
      for (const c of configs) {
        const applies =
          !c.requests ||
          c.requests.length === 0 ||
          c.requests.includes(r.request) ||
          c.requests.includes(baseRequest(r.request));
        if (!applies) continue;
        let decoded: DeviceConfig;
        try {
          decoded = decodeConfig(c.opaque?.parameters, this.opts.gates);
        } catch (e) {
          if (e instanceof ConfigError)
            throw this.fail(claim, `error getting opaque device configs: ${e.message}`);
          throw e;
        }
        const want = configKindFor(device.type);
        if (decoded.kind !== want) {
          if (c.requests && c.requests.length > 0) {
            throw this.fail(
              claim,
              `cannot apply ${decoded.kind} to device "${r.device}" of type "${device.type}" (request: ${r.request})`,
            );
          }
          continue;
        }
        config = decoded;
      }
      chosen.push({ result: r, device, config });
    }
    this.checkpoint.put(uid, {
      namespace: claim.metadata.namespace,
      name: claim.metadata.name,
      state: 'PrepareStarted',
      devices: [],
      configState: {},
    });
    const devices: PreparedDevice[] = [];
    for (const { result, device } of chosen) {
      const d: PreparedDevice = {
        requestNames: [baseRequest(result.request)],
        poolName: result.pool,
        deviceName: result.device,
        cdiDeviceIds: [cdiDeviceId(uid, result.device)],
        uuid: device.mig?.uuid ?? device.gpu.uuid,
        type: device.type,
      };
      if (device.partition) {
        try {
          const created = this.createMig(device.gpu, device.partition);
          d.uuid = created.uuid;
          d.migInstance = created.instance;
        } catch (e) {
          // Leave nothing half-applied: instances made for earlier devices of this claim go again.
          this.destroyMig(devices);
          this.checkpoint.delete(uid);
          throw this.fail(
            claim,
            `error creating MIG device for "${result.device}": ${e instanceof Error ? e.message : String(e)}`,
          );
        }
      }
      devices.push(d);
      // Record each instance as soon as it exists, so a crash cannot orphan it.
      this.checkpoint.put(uid, {
        namespace: claim.metadata.namespace,
        name: claim.metadata.name,
        state: 'PrepareStarted',
        devices,
        configState: {},
      });
    }
    const configState: PreparedClaim['configState'] = {};
    for (const { result, config } of chosen) {
      const s = config?.sharing;
      if (s?.strategy === 'TimeSlicing')
        configState[result.device] = { timeSlice: s.timeSlicingConfig?.interval ?? 'Default' };
      if (s?.strategy === 'MPS') configState[result.device] = { mps: true };
    }
    const prepared: PreparedClaim = {
      namespace: claim.metadata.namespace,
      name: claim.metadata.name,
      state: 'PrepareCompleted',
      devices,
      configState,
    };
    this.writeFiles(uid, prepared);
    this.checkpoint.put(uid, prepared);
    return devices;
  }

  /** Creates the GPU instance at the allocated placement and its full compute instance, as the driver does. */
  private createMig(
    gpu: GpuInfo,
    p: NonNullable<Allocatable['partition']>,
  ): { uuid: string; instance: NonNullable<PreparedDevice['migInstance']> } {
    const dev = this.nvml.deviceGetHandleByUUID(gpu.uuid);
    if (dev.getMigMode()[0] !== NVML_DEVICE_MIG_ENABLE) dev.setMigMode(NVML_DEVICE_MIG_ENABLE);
    const gi = dev.createGpuInstanceWithPlacement(p.profile.info, { start: p.start, size: p.size });
    const giInfo = gi.getInfo();
    try {
      const ci = gi.createComputeInstance(
        gi.getComputeInstanceProfileInfo(fullComputeInstanceProfile(p.profile.enumName), 0),
      );
      const ciId = ci.getInfo().id;
      const mig = dev
        .getMigDevices()
        .find((m) => m.getGpuInstanceId() === giInfo.id && m.getComputeInstanceId() === ciId);
      if (!mig) throw new Error(`MIG device ${giInfo.id}/${ciId} not found after creating it`);
      return {
        uuid: mig.getUUID(),
        instance: { parentUuid: gpu.uuid, gpuInstanceId: giInfo.id, computeInstanceId: ciId },
      };
    } catch (e) {
      gi.destroy();
      throw e;
    }
  }

  /** Destroys a GPU instance and the compute instances in it; one already gone is not an error. */
  private destroyGpuInstance(parentUuid: string, gpuInstanceId: number): void {
    try {
      const gi = this.nvml.deviceGetHandleByUUID(parentUuid).getGpuInstanceById(gpuInstanceId);
      const gpu = [...this.allocatable.values()].find((a) => a.gpu.uuid === parentUuid)?.gpu;
      const profile = gpu?.migProfiles.find((p) => p.info.id === gi.getInfo().profileId);
      if (profile) {
        const full = gi.getComputeInstanceProfileInfo(fullComputeInstanceProfile(profile.enumName), 0);
        for (const ci of gi.getComputeInstances(full)) ci.destroy();
      }
      gi.destroy();
    } catch (e) {
      if (!(e instanceof NvmlError && e.code === NVML_RETURN.ERROR_NOT_FOUND)) throw e;
    }
  }

  private destroyMig(devices: readonly PreparedDevice[]): void {
    for (const d of devices) {
      if (d.migInstance) this.destroyGpuInstance(d.migInstance.parentUuid, d.migInstance.gpuInstanceId);
    }
  }

  /**
   * MIG devices on dynamically partitioned GPUs that no prepared claim holds are destroyed at start, as
   * the real driver does after a crash between creating an instance and recording it.
   */
  private destroyUnheldMig(): void {
    const held = new Set(
      this.checkpoint
        .all()
        .flatMap(([, c]) => c.devices)
        .flatMap((d) =>
          d.migInstance ? [`${d.migInstance.parentUuid}/${d.migInstance.gpuInstanceId}`] : [],
        ),
    );
    const dynamicGpus = new Set(
      [...this.allocatable.values()].filter((a) => a.partition).map((a) => a.gpu.uuid),
    );
    for (const uuid of dynamicGpus) {
      for (const m of this.nvml.deviceGetHandleByUUID(uuid).getMigDevices()) {
        const giId = m.getGpuInstanceId();
        if (!held.has(`${uuid}/${giId}`)) this.destroyGpuInstance(uuid, giId);
      }
    }
  }

  private claimDir(uid: string): string {
    return join(this.opts.stateDir, 'claims', uid);
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
    };
    if (timeSlice) g.timeSliceInterval = timeSlice;
    return g;
  }

  /** CDI spec and nvidia-smi views for a prepared claim; idempotent, rewritten on every prepare. */
  private writeFiles(uid: string, c: PreparedClaim): void {
    const dir = this.claimDir(uid);
    rmSync(dir, { recursive: true, force: true });
    // CDI env entries replace each other rather than merge, so every device of the claim carries the
    // claim's whole list: a container given the claim sees all of it. (nvidia-smi reads the mounted
    // views instead, which are exact per container.)
    const visible = c.devices.map((d) => d.uuid);
    const devices = c.devices.map((d) => {
      const a = this.allocatable.get(d.deviceName);
      if (!a) throw new PrepareError(`allocatable not found for device "${d.deviceName}"`);
      const profile = a.mig?.profile ?? a.partition?.profile;
      const ids = a.mig ?? d.migInstance;
      const mig =
        profile && ids
          ? {
              profile: profile.name,
              uuid: d.uuid,
              memoryMiB: profile.info.memorySizeMB,
              gpuInstanceId: ids.gpuInstanceId,
              computeInstanceId: ids.computeInstanceId,
              multiprocessors: profile.info.multiprocessorCount,
            }
          : null;
      const smi = this.smiGpu(a.gpu, c.configState[d.deviceName]?.timeSlice);
      if (mig) smi.migMode = 'Enabled';
      const view = deviceView(d.deviceName, smi, mig);
      mkdirSync(join(dir, view.dir), { recursive: true });
      for (const [f, text] of Object.entries(view.files)) writeFileSync(join(dir, view.dir, f), text);
      const edits: ContainerEdits = {
        env: [`NVIDIA_VISIBLE_DEVICES=${visible.join(',')}`],
        deviceNodes: [
          fakeDeviceNode(`/dev/nvidia${a.gpu.minor}`, a.gpu.minor),
          // MIG access goes through capability nodes of the GPU instance and the compute instance.
          ...(ids
            ? [
                fakeDeviceNode(
                  `/dev/nvidia-caps/nvidia-cap${capMinor(a.gpu.minor, ids.gpuInstanceId)}`,
                  capMinor(a.gpu.minor, ids.gpuInstanceId),
                ),
                fakeDeviceNode(
                  `/dev/nvidia-caps/nvidia-cap${capMinor(a.gpu.minor, ids.gpuInstanceId, ids.computeInstanceId)}`,
                  capMinor(a.gpu.minor, ids.gpuInstanceId, ids.computeInstanceId),
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
    });
    const mps = Object.values(c.configState).some((s) => s.mps);
    const common: ContainerEdits = {
      deviceNodes: Object.entries(CTL_MINORS).map(([path, minor]) => fakeDeviceNode(path, minor)),
      mounts: [
        {
          hostPath: join(this.opts.stateDir, 'bin', 'nvidia-smi'),
          containerPath: '/usr/bin/nvidia-smi',
          options: READ_ONLY_BIND,
        },
      ],
    };
    if (mps) {
      // The traces NVIDIA's MPS setup leaves in a container: the pipe directory and its variable.
      const pipe = join(dir, 'mps', 'pipe');
      const shm = join(dir, 'mps', 'shm');
      mkdirSync(pipe, { recursive: true });
      mkdirSync(shm, { recursive: true });
      common.env = ['CUDA_MPS_PIPE_DIRECTORY=/tmp/nvidia-mps'];
      common.mounts?.push({
        hostPath: pipe,
        containerPath: '/tmp/nvidia-mps',
        options: ['rw', 'nosuid', 'nodev', 'rbind', 'rprivate'],
      });
    }
    if (devices.length === 0) {
      removeSpec(this.opts.cdiRoot, uid);
      return;
    }
    const spec: CdiSpec = {
      cdiVersion: '0.5.0',
      kind: 'k8s.gpu.nvidia.com/claim',
      containerEdits: common,
      devices,
    };
    writeSpec(this.opts.cdiRoot, uid, spec);
  }

  private forget(uid: string): void {
    this.destroyMig(this.checkpoint.get(uid)?.devices ?? []);
    removeSpec(this.opts.cdiRoot, uid);
    rmSync(this.claimDir(uid), { recursive: true, force: true });
    this.checkpoint.delete(uid);
  }
}
