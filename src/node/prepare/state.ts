import { join } from 'node:path';
import { cdiDeviceId, cdiKindFor } from '../cdi/spec.js';
import type { CheckpointStore, PreparedClaim, PreparedDevice } from '../checkpoint/checkpoint.js';
import {
  ConfigError,
  configKindFor,
  decodeConfig,
  type DeviceConfig,
} from '../../model/opaque-config/nvidia.js';
import type { FeatureGates } from '../../model/feature-gates/gates.js';
import type { GpuDevices } from '../../model/device/allocatable.js';
import type { GpuInfo } from '../../model/device/discover.js';
import { writeIfChanged } from '../durable/file.js';
import type { Machine } from '../../model/hardware/machine.js';
import type { Nvml } from '../../model/nvml/types.js';
import { NVIDIA_SMI } from '../nvidia-smi/script.js';
import {
  baseRequest,
  claimString,
  type AllocationConfig,
  type AllocationResult,
  type ResourceClaim,
} from '../../kube/types/claim.js';
import { CTL_MINORS, GpuFiles, type GpuAllocatable } from './gpu-files.js';
import { crashPoint } from './crash.js';
import { ClaimLifecycle, type ClaimHooks, type Holding } from './lifecycle.js';
import { checkOverlap, migInUse, MPS_WITH_SHARES, normalisedConfig, preparedMig } from './shares.js';
import { sharesEnabled, type ConsumableShares } from '../../model/device/consumable-shares.js';
import { MigInstances } from './mig.js';
import { ClaimError, ClaimRefused, makeFakeNodes } from './node.js';
import { fabricPartitionsFor, type FabricPartitions } from './fabric-manager.js';
import type { FmPartition } from '../../model/hardware/fabric-manager.js';
import { RELEASES, type DriverRelease } from '../../model/device/release.js';
import { ConfigInvalid } from '../../model/opaque-config/vfio.js';
import { passthroughPlan, siblingHeld, vfioMetadata, vfioSpec, vfioState } from './vfio.js';

/**
 * The GPU driver's side of a claim: check the allocation, apply NVIDIA's configs, make dynamic MIG
 * partitions, and write the CDI spec and the views the fake nvidia-smi reads. The lifecycle around it
 * (checkpoint, one call at a time, restore, sweep) is the one every driver on the node shares.
 */

export interface PrepareOptions {
  driverName: string;
  nodeName: string;
  cdiRoot: string;
  stateDir: string;
  gates: FeatureGates;
  /** NVIDIA's release whose prepare rules apply (v0.5.0's admin-access checks). */
  release: DriverRelease;
  /** `--consumable-shares`; absent: disabled. */
  consumableShares?: ConsumableShares | undefined;
  /** `--reset-checkpoint`: a damaged Fabric Manager state starts with no partition active. */
  resetCheckpoint?: boolean | undefined;
}

function allocatables(devices: readonly GpuDevices[]): Map<string, GpuAllocatable> {
  const out = new Map<string, GpuAllocatable>();
  for (const g of devices) {
    g.devices.forEach((d, i) => {
      const h = g.handles[i];
      if (!h) return;
      out.set(d.name, {
        type: h.type === 'gpu' || h.type === 'vfio' ? h.type : 'mig',
        gpu: g.gpu,
        mig: h.type === 'mig' ? h.mig : null,
        partition: h.type === 'partition' ? { profile: h.profile, start: h.start, size: h.size } : null,
      });
    });
  }
  return out;
}

class GpuHooks implements ClaimHooks {
  readonly cdiKind: string;
  readonly errorPrefix = 'prepare devices failed: ';
  readonly allocatable: Map<string, GpuAllocatable>;
  private readonly mig: MigInstances;
  private readonly views: GpuFiles;
  /** FabricManagerPartitioning, where the gate is on and the node has an NVSwitch fabric; else null. */
  private readonly fabric: FabricPartitions | null;
  /** The partition each plan's devices form, for its `apply` (both run in one serial call). */
  private readonly fabricPlans = new WeakMap<PreparedDevice[], FmPartition>();

  constructor(
    machine: Machine,
    nvml: Nvml,
    devices: readonly GpuDevices[],
    private readonly opts: PrepareOptions,
    private readonly checkpoint: CheckpointStore,
  ) {
    this.cdiKind = cdiKindFor(opts.driverName);
    this.allocatable = allocatables(devices);
    const dynamic = new Map<string, GpuInfo>();
    for (const a of this.allocatable.values()) if (a.partition) dynamic.set(a.gpu.uuid, a.gpu);
    this.mig = new MigInstances(nvml, dynamic);
    this.views = new GpuFiles(machine, opts.stateDir, this.allocatable, nvml, this.cdiKind);
    this.fabric = fabricPartitionsFor(machine, opts, this.allocatable);
  }

  /**
   * v0.5.0's rule (PR #1335): admin access is for watching or managing a whole GPU from the host, so not
   * on a MIG device, nor with a config that applies to an admin request (a config naming no request
   * applies to every one). Checked before anything is prepared, as NVIDIA does.
   */
  private refuseAdminAccess(
    claim: ResourceClaim,
    results: readonly AllocationResult[],
    configs: readonly AllocationConfig[],
  ): void {
    const m = claim.metadata;
    const who = `claim ${claimString(m)}`;
    const admin = new Set<string>();
    for (const r of results.filter((x) => x.adminAccess === true)) {
      admin.add(r.request);
      const device = this.allocatable.get(r.device);
      if (device && device.type !== 'gpu')
        throw new ClaimRefused(
          `${who} requests admin access on a non-full-GPU device, which is not supported`,
        );
    }
    if (admin.size === 0) return;
    for (const c of configs)
      if (!c.requests || c.requests.length === 0 || c.requests.some((r) => admin.has(r)))
        throw new ClaimRefused(
          `${who} requests admin access with a device configuration, which is not supported`,
        );
  }

  /** The config that applies to one result: class configs first, then the claim's; the last one wins. */
  private configFor(
    r: AllocationResult,
    type: GpuAllocatable['type'],
    configs: readonly AllocationConfig[],
  ): { config: DeviceConfig | null; source: AllocationConfig | null } {
    let config: DeviceConfig | null = null;
    let source: AllocationConfig | null = null;
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
        if (e instanceof ConfigInvalid) throw new ClaimError(`error validating GPU config: ${e.message}`);
        if (e instanceof ConfigError)
          throw new ClaimError(`error getting opaque device configs: ${e.message}`);
        throw e;
      }
      if (decoded.kind !== configKindFor(type)) {
        if (c.requests && c.requests.length > 0) {
          throw new ClaimError(
            `cannot apply ${decoded.kind} to device "${r.device}" of type "${type}" (request: ${r.request})`,
          );
        }
        continue;
      }
      config = decoded;
      source = c;
    }
    return { config, source };
  }

  /**
   * With shares on, the incoming claim's normalised config for a device, resolved only if another
   * claim holds it (NVIDIA's wording when that fails); without shares, null: any holder refuses.
   */
  private incomingConfig(
    uid: string,
    r: AllocationResult,
    device: GpuAllocatable,
    configs: readonly AllocationConfig[],
  ): (() => string) | null {
    // NVIDIA shares no VFIO device (`dev.Type() != VfioDeviceType`): one must return null here too.
    const type = device.type;
    if (!this.sharing() || type === 'vfio') return null;
    return () => {
      try {
        return normalisedConfig(this.configFor(r, type, configs).config, type);
      } catch (e) {
        if (!(e instanceof ClaimError)) throw e;
        throw new ClaimRefused(
          `unable to prepare claim ${uid}: error resolving config for incoming claim ${uid} on device ${r.device}: ${e.message}`,
        );
      }
    };
  }

  /** The device still exists, and as the same kind: `--dynamic-mig` switched makes a static name a partition. */
  has(d: PreparedDevice): boolean {
    const a = this.allocatable.get(d.deviceName);
    return a !== undefined && (a.partition !== null) === (d.migInstance !== undefined);
  }

  plan(
    claim: ResourceClaim,
    heldBy: (device: string) => string | undefined,
    others: readonly Holding[],
  ): PreparedClaim {
    const uid = claim.metadata.uid;
    const allocation = claim.status?.allocation?.devices;
    if (!allocation) throw new ClaimError('claim not yet allocated');
    const results = (allocation.results ?? []).filter((r) => r.driver === this.opts.driverName);
    const configs = (allocation.config ?? []).filter((c) => c.opaque?.driver === this.opts.driverName);
    if (RELEASES[this.opts.release].adminAccessChecks) this.refuseAdminAccess(claim, results, configs);
    const devices: PreparedDevice[] = [];
    const configState: PreparedClaim['configState'] = {};
    const vfioSources: (AllocationConfig | null)[] = [];
    for (const r of results) {
      const device = this.allocatable.get(r.device);
      if (
        r.pool !== this.opts.nodeName ||
        !device ||
        siblingHeld(this.allocatable, r.device, heldBy) ||
        (device.type === 'mig' && !device.mig && !device.partition)
      )
        throw new ClaimError(`allocatable not found for device "${r.device}"`);
      if (!r.adminAccess) checkOverlap(uid, r.device, this.incomingConfig(uid, r, device, configs), others);
      const holder = heldBy(r.device);
      // Admin access shares a device someone holds; a partition is made per claim, and making it twice
      // would fail, and undoing that failure would take the holder's instance with it.
      if (holder !== undefined && r.adminAccess && device.partition)
        throw new ClaimError(
          `admin access to MIG partition ${r.device}, which claim ${holder} holds, is not supported`,
        );
      const { config, source } = this.configFor(r, device.type, configs);
      if (device.type === 'vfio') configState[r.device] = vfioState(vfioSources, source, config);
      else {
        const state = this.stateFor(r, device.type, config);
        if (state) configState[r.device] = state;
      }
      devices.push(this.prepared(uid, r, device));
    }
    const partition = this.fabric?.resolve(results) ?? null;
    if (partition) this.fabricPlans.set(devices, partition);
    return {
      ...passthroughPlan(claim, devices, vfioSources, this.opts),
      namespace: claim.metadata.namespace,
      name: claim.metadata.name,
      state: 'PrepareStarted',
      devices,
      configState,
    };
  }

  /**
   * What a device's config leaves in the checkpoint: NVIDIA's sharing state and, with shares on, the
   * normalised config a claim sharing the device must equal. NVIDIA refuses MPS while shares are on.
   */
  private stateFor(
    r: AllocationResult,
    type: 'gpu' | 'mig',
    config: DeviceConfig | null,
  ): PreparedClaim['configState'][string] | undefined {
    const s = config?.sharing;
    if (s?.strategy === 'MPS' && this.sharing()) throw new ClaimError(MPS_WITH_SHARES);
    const state: PreparedClaim['configState'][string] = {};
    if (s?.strategy === 'TimeSlicing') state.timeSlice = s.timeSlicingConfig?.interval ?? 'Default';
    if (s?.strategy === 'MPS') state.mps = true;
    if (this.sharing() && !r.adminAccess) state.config = normalisedConfig(config, type);
    return Object.keys(state).length > 0 ? state : undefined;
  }

  private prepared(uid: string, r: AllocationResult, device: GpuAllocatable): PreparedDevice {
    return {
      requestNames: [baseRequest(r.request)],
      poolName: r.pool,
      deviceName: r.device,
      cdiDeviceIds: [cdiDeviceId(uid, r.device, this.cdiKind)],
      // A partition's MIG UUID exists once it is made; its placement is recorded before that.
      uuid: device.partition ? '' : (device.mig?.uuid ?? device.gpu.uuid),
      type: device.type,
      ...(r.adminAccess ? { adminAccess: true as const } : {}),
      ...(device.partition
        ? {
            migInstance: {
              parentUuid: device.gpu.uuid,
              profileId: device.partition.profile.info.id,
              start: device.partition.start,
            },
          }
        : {}),
    };
  }

  apply(
    planned: PreparedDevice[],
    record: (devices: PreparedDevice[]) => void,
    others: readonly Holding[],
  ): PreparedDevice[] {
    const devices = planned.map((d) => ({ ...d }));
    const partition = this.fabricPlans.get(planned);
    if (partition && this.fabric) {
      // Before anything else, as NVIDIA does; recorded at once, so a failure later undoes it too.
      this.fabric.activate(partition);
      record(devices);
    }
    for (const d of devices) {
      const a = this.allocatable.get(d.deviceName);
      if (!a?.partition) continue;
      // A share of a MIG device another claim made uses that one (NVIDIA's getPreparedMigDevice).
      const made = this.sharing() ? preparedMig(d.deviceName, others) : undefined;
      if (made?.migInstance) {
        d.uuid = made.uuid;
        d.migInstance = { ...made.migInstance };
      } else this.create(d, a);
      record(devices);
      crashPoint('mig-recorded');
    }
    return devices;
  }

  private create(d: PreparedDevice, a: GpuAllocatable): void {
    if (!a.partition) return;
    try {
      const made = this.mig.create(a.gpu, a.partition);
      d.uuid = made.uuid;
      d.migInstance = made.instance;
    } catch (e) {
      throw new ClaimError(
        `error creating MIG device for "${d.deviceName}": ${e instanceof Error ? e.message : String(e)}`,
      );
    }
  }

  private sharing(): boolean {
    return sharesEnabled(this.opts.consumableShares);
  }

  /**
   * The last holder's unprepare deletes a shared MIG device (NVIDIA: "still in use by other claims") and
   * deactivates a Fabric Manager partition.
   */
  undo(devices: readonly PreparedDevice[], others: readonly Holding[]): void {
    for (const d of devices)
      if (d.migInstance && !(this.sharing() && migInUse(d, others))) this.mig.destroy(d.migInstance);
    this.fabric?.release(devices, (gpu) => others.some((o) => o.claim.devices.some((d) => d.uuid === gpu)));
  }

  files(uid: string, c: PreparedClaim, dir: string) {
    if (this.opts.gates.DeviceMetadata) vfioMetadata(uid, c, dir, this.opts, this.allocatable);
    return vfioSpec(uid, c, this.cdiKind, (gpus) => this.views.write(uid, gpus, dir));
  }

  sweepInstances(held: readonly PreparedDevice[]): number {
    const instances = this.mig.sweep(held.flatMap((d) => (d.migInstance ? [d.migInstance] : [])));
    return instances + (this.fabric?.sweep(held) ?? 0);
  }
}

export class DeviceState extends ClaimLifecycle {
  constructor(
    machine: Machine,
    nvml: Nvml,
    devices: readonly GpuDevices[],
    checkpoint: CheckpointStore,
    opts: PrepareOptions,
  ) {
    super(checkpoint, new GpuHooks(machine, nvml, devices, opts, checkpoint), opts);
    // A file bind-mounted into running containers: replaced only when its text changes.
    writeIfChanged(join(opts.stateDir, 'bin', 'nvidia-smi'), NVIDIA_SMI, { mode: 0o755 });
    makeFakeNodes(join(opts.stateDir, 'dev'), [
      ...machine.gpus.map((g) => [`nvidia${g.minor}`, g.minor] as const),
      ...Object.entries(CTL_MINORS).map(([p, m]) => [p.slice('/dev/'.length), m] as const),
    ]);
  }
}
