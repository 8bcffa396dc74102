import type { ResourceClaim } from '../../kube/types/claim.js';
import type { PreparedDevice } from '../checkpoint/checkpoint.js';
import { DeviceState } from './state.js';

/**
 * The GPU driver's state with NVIDIA's sibling rule (PassthroughSupport): after a prepare or an
 * unprepare the slice is published again, without the other-type sibling of every prepared GPU or VFIO
 * device (`withoutSiblings`). Which devices are prepared is read from the checkpoint, so a restart,
 * even a kill -9 between the checkpoint and the publish, publishes what the checkpoint says.
 */
export class SiblingAwareState extends DeviceState {
  private readonly listeners = new Set<() => void>();

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
    } finally {
      this.changed();
    }
  }

  private changed(): void {
    for (const l of this.listeners) l();
  }
}
