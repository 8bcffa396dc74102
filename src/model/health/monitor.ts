import type { GpuDevices } from '../device/allocatable.js';
import type { DeviceTaint } from '../../kube/types/resource.js';
import {
  NVML_EVENT,
  NVML_RETURN,
  type Nvml,
  NvmlError,
  type NvmlEventData,
  type NvmlEventSet,
} from '../nvml/types.js';
import {
  deviceKey,
  GPU_LOST_TAINT,
  monitoredDevices,
  UNMONITORED_TAINT,
  withTaint,
  xidTaint,
  type DeviceTaints,
} from './taints.js';

/**
 * NVIDIA's device health monitor, emulated over NVML: one event set with XID and ECC events of every GPU,
 * waited on in a loop of 5 s timeouts. XIDs taint the device they name; a lost GPU taints every device of
 * the node; a GPU whose events cannot be registered is marked unmonitored. Only XIDs act, ECC events are
 * read and dropped, and nothing is ever untainted: the taints last until the plugin restarts.
 */

const EVENT_MASK =
  NVML_EVENT.XID_CRITICAL_ERROR | NVML_EVENT.DOUBLE_BIT_ECC_ERROR | NVML_EVENT.SINGLE_BIT_ECC_ERROR;
const WAIT_MS = 5000;

export interface MonitorOptions {
  ignoredXids: ReadonlySet<number>;
  /** Called after every change with all taints. */
  onChange: (taints: DeviceTaints) => void;
  log: (msg: string, fields?: Record<string, unknown>) => void;
}

export class HealthMonitor {
  private readonly taints = new Map<string, DeviceTaint[]>();
  private readonly byKey: Map<string, string>;
  private set: NvmlEventSet | null = null;
  private stopped = false;
  private loop: Promise<void> | null = null;

  constructor(
    private readonly nvml: Nvml,
    private readonly gpus: readonly GpuDevices[],
    private readonly o: MonitorOptions,
  ) {
    this.byKey = monitoredDevices(gpus);
  }

  current(): DeviceTaints {
    return this.taints;
  }

  /** Registers every GPU and starts waiting. */
  start(): void {
    if (this.stopped || this.loop) return;
    this.register();
    this.loop = this.run();
  }

  /**
   * A fresh event set for every GPU, as a restarted plugin would register, keeping the taints already
   * set: how a GPU that stopped reporting events after start-up gets noticed.
   */
  reregister(): void {
    if (this.stopped || !this.loop) return;
    this.set?.free();
    this.register();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.set?.free();
    await this.loop;
  }

  private register(): void {
    const set = this.nvml.eventSetCreate();
    this.set = set;
    let changed = false;
    for (const g of this.gpus) {
      try {
        const dev = this.nvml.deviceGetHandleByUUID(g.gpu.uuid);
        dev.registerEvents(EVENT_MASK & dev.getSupportedEventTypes(), set);
      } catch (e) {
        this.o.log('GPU cannot be monitored', { uuid: g.gpu.uuid, err: message(e) });
        for (const d of g.devices) changed = this.add(d.name, UNMONITORED_TAINT) || changed;
      }
    }
    if (changed) this.o.onChange(this.taints);
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      const set = this.set;
      if (!set) return;
      let event: NvmlEventData;
      try {
        event = await set.wait(WAIT_MS);
      } catch (e) {
        // Freeing the set (stop, reregister) ends a wait as a timeout: the loop then looks again.
        if (e instanceof NvmlError && e.code === NVML_RETURN.ERROR_GPU_IS_LOST) this.lost();
        else if (!(e instanceof NvmlError && e.code === NVML_RETURN.ERROR_TIMEOUT))
          this.o.log('waiting for NVML events failed', { err: message(e) });
        continue;
      }
      this.handle(event);
    }
  }

  private handle(e: NvmlEventData): void {
    if (e.eventType !== NVML_EVENT.XID_CRITICAL_ERROR) return;
    let uuid: string;
    try {
      uuid = e.device.getUUID();
    } catch {
      this.lost();
      return;
    }
    const name = this.byKey.get(deviceKey(uuid, e.gpuInstanceId, e.computeInstanceId));
    if (name === undefined) {
      this.o.log('XID for a device not published; ignored', { uuid, xid: e.eventData });
      return;
    }
    this.o.log('XID reported by NVML', { device: name, xid: e.eventData });
    if (this.add(name, xidTaint(e.eventData, this.o.ignoredXids))) this.o.onChange(this.taints);
  }

  private lost(): void {
    let changed = false;
    for (const g of this.gpus)
      for (const d of g.devices) changed = this.add(d.name, GPU_LOST_TAINT) || changed;
    if (changed) {
      this.o.log('a GPU is lost; every device tainted');
      this.o.onChange(this.taints);
    }
  }

  private add(device: string, t: DeviceTaint): boolean {
    const next = withTaint(this.taints.get(device) ?? [], t);
    if (next === null) return false;
    this.taints.set(device, next);
    return true;
  }
}

function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
