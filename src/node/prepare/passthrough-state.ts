import type { ResourceClaim } from '../../kube/types/claim.js';
import type { Machine } from '../../model/hardware/machine.js';
import type { GpuDevices } from '../../model/device/allocatable.js';
import type { Nvml } from '../../model/nvml/types.js';
import type { CheckpointStore, PreparedDevice } from '../checkpoint/checkpoint.js';
import type { Restored } from './lifecycle.js';
import { removeMetadataSpecs } from './metadata.js';
import { DeviceState, type PrepareOptions } from './state.js';

/**
 * The GPU driver's state with what PassthroughSupport and DeviceMetadata add around each call.
 *
 * NVIDIA's sibling rule: after a prepare or an unprepare the slice is published again, without the
 * other-type sibling of every prepared GPU or VFIO device (`withoutSiblings`). Which devices are prepared
 * is read from the checkpoint, so a restart, even a kill -9 between the checkpoint and the publish,
 * publishes what the checkpoint says.
 *
 * The metadata CDI specs (`./metadata.ts`) are files of their own kind beside the claim's spec: they go
 * after the claim's record at unprepare, and at start those of claims no record holds.
 */
export class PassthroughState extends DeviceState {
  private readonly listeners = new Set<() => void>();

  constructor(
    machine: Machine,
    nvml: Nvml,
    devices: readonly GpuDevices[],
    checkpoint: CheckpointStore,
    private readonly o: PrepareOptions,
  ) {
    super(machine, nvml, devices, checkpoint, o);
  }

  /** Names of the devices of completed claims. */
  preparedDevices(): Set<string> {
    return new Set(
      this.checkpoint
        .all()
        .filter(([, c]) => c.state === 'PrepareCompleted')
        .flatMap(([, c]) => c.devices.map((d) => d.deviceName)),
    );
  }

  /** Called after every prepare and unprepare, whether it succeeded or not; returns the unsubscribe. */
  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  override restore(): Restored {
    const out = super.restore();
    const held = new Set(this.held());
    out.swept.cdiSpecs += removeMetadataSpecs(this.o.cdiRoot, this.o.driverName, (uid) => held.has(uid));
    return out;
  }

  override async prepare(claim: ResourceClaim): Promise<PreparedDevice[]> {
    try {
      return await super.prepare(claim);
    } finally {
      this.changed();
    }
  }

  override async unprepare(uid: string): Promise<void> {
    try {
      await super.unprepare(uid);
      removeMetadataSpecs(this.o.cdiRoot, this.o.driverName, (other) => other !== uid);
    } finally {
      this.changed();
    }
  }

  private changed(): void {
    for (const l of this.listeners) l();
  }
}
