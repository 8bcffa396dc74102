import type { Logger } from 'pino';
import type { GpuDevices } from '../../model/device/allocatable.js';
import type { DriverRelease } from '../../model/device/release.js';
import { HealthMonitor } from '../../model/health/monitor.js';
import { deviceHealth, type DeviceHealth } from '../../model/health/report.js';
import { applyTaints, type DeviceTaints } from '../../model/health/taints.js';
import type { Nvml } from '../../model/nvml/types.js';

/**
 * The node's device health: NVIDIA's monitor when its gate is on, else nothing ever tainted. Whoever
 * publishes slices or health reports subscribes to its changes.
 */
export class NodeHealth {
  private readonly monitor: HealthMonitor | null;
  private readonly listeners = new Set<() => void>();

  constructor(
    nvml: Nvml,
    private readonly gpus: readonly GpuDevices[],
    private readonly o: {
      enabled: boolean;
      release: DriverRelease;
      ignoredXids: ReadonlySet<number>;
      log: Logger;
    },
  ) {
    this.monitor = o.enabled
      ? new HealthMonitor(nvml, gpus, {
          ignoredXids: o.ignoredXids,
          log: (msg, fields) => {
            o.log.warn(fields ?? {}, msg);
          },
          onChange: () => {
            for (const l of this.listeners) l();
          },
        })
      : null;
  }

  start(): void {
    this.monitor?.start();
  }

  /** Registers NVML events again: a GPU that stopped reporting them is marked unmonitored. */
  reregister(): void {
    this.monitor?.reregister();
  }

  stop(): Promise<void> {
    return this.monitor?.stop() ?? Promise.resolve();
  }

  taints(): DeviceTaints {
    return this.monitor?.current() ?? new Map();
  }

  /** The devices as they are published now: tainted, or for release 25.12 without the failed ones. */
  devices(): GpuDevices[] {
    return applyTaints(this.gpus, this.taints(), this.o.release);
  }

  /** Every published device's health for the kubelet. */
  reports(): DeviceHealth[] {
    const devices = this.gpus.flatMap((g) =>
      g.devices.map((d, i) => {
        const h = g.handles[i];
        return {
          name: d.name,
          monitored: h?.type !== 'partition',
          type: h?.type === 'partition' ? 'dynamic MIG' : (h?.type ?? 'gpu'),
        };
      }),
    );
    return deviceHealth(devices, this.taints());
  }

  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
