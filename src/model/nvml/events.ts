import type { NvmlFault } from './state.js';
import {
  NO_INSTANCE,
  NVML_EVENT,
  NVML_RETURN,
  type NvmlDevice,
  NvmlError,
  type NvmlEventData,
  type NvmlEventSet,
} from './types.js';

/**
 * NVML's event sets over injected faults. A fault is hardware state, so it reaches every set registered
 * for its GPU: when it is injected and again when a set registers later (a restarted plugin on a GPU that
 * is still broken sees its errors again). A lost GPU makes `wait` fail with GPU_IS_LOST once per set, as
 * the first call after the GPU fell off the bus does; events queue until someone waits.
 */

type Pending = { kind: 'event'; data: NvmlEventData } | { kind: 'lost' };

interface Waiter {
  resolve: (e: NvmlEventData) => void;
  reject: (e: NvmlError) => void;
  timer: NodeJS.Timeout;
}

export class MockEventSet implements NvmlEventSet {
  private readonly queue: Pending[] = [];
  private readonly waiters: Waiter[] = [];
  /** GPU UUID → the event mask registered for it. */
  readonly masks = new Map<string, number>();
  freed = false;

  constructor(private readonly onFree: (set: MockEventSet) => void) {}

  /** Delivers what a fault makes NVML report on `device` to this set, if it registered for it. */
  deliver(device: NvmlDevice, fault: NvmlFault): void {
    const mask = this.masks.get(device.getUUID());
    if (mask === undefined || this.freed) return;
    const p = pendingFor(device, fault, mask);
    if (!p) return;
    const w = this.waiters.shift();
    if (!w) {
      this.queue.push(p);
      return;
    }
    clearTimeout(w.timer);
    settle(p, w);
  }

  wait(timeoutMs: number): Promise<NvmlEventData> {
    if (this.freed)
      return Promise.reject(new NvmlError(NVML_RETURN.ERROR_INVALID_ARGUMENT, 'event set freed'));
    return new Promise((resolve, reject) => {
      const next = this.queue.shift();
      if (next) {
        settle(next, { resolve, reject });
        return;
      }
      const w: Waiter = {
        resolve,
        reject,
        timer: setTimeout(() => {
          this.waiters.splice(this.waiters.indexOf(w), 1);
          reject(new NvmlError(NVML_RETURN.ERROR_TIMEOUT, 'no event'));
        }, timeoutMs),
      };
      this.waiters.push(w);
    });
  }

  free(): void {
    if (this.freed) return;
    this.freed = true;
    for (const w of this.waiters.splice(0)) {
      clearTimeout(w.timer);
      w.reject(new NvmlError(NVML_RETURN.ERROR_TIMEOUT, 'event set freed'));
    }
    this.queue.length = 0;
    this.onFree(this);
  }
}

function settle(p: Pending, w: Pick<Waiter, 'resolve' | 'reject'>): void {
  if (p.kind === 'lost') w.reject(new NvmlError(NVML_RETURN.ERROR_GPU_IS_LOST, 'GPU is lost'));
  else w.resolve(p.data);
}

function pendingFor(device: NvmlDevice, fault: NvmlFault, mask: number): Pending | null {
  const event = (eventType: number, eventData: number, gi = NO_INSTANCE, ci = NO_INSTANCE): Pending | null =>
    (mask & eventType) === 0
      ? null
      : { kind: 'event', data: { device, eventType, eventData, gpuInstanceId: gi, computeInstanceId: ci } };
  switch (fault.kind) {
    case 'xid':
      return event(NVML_EVENT.XID_CRITICAL_ERROR, fault.xid, fault.gpuInstanceId, fault.computeInstanceId);
    case 'ecc':
      return event(fault.bits === 1 ? NVML_EVENT.SINGLE_BIT_ECC_ERROR : NVML_EVENT.DOUBLE_BIT_ECC_ERROR, 0);
    case 'lost':
      return { kind: 'lost' };
    case 'unmonitored':
      return null;
  }
}

/** Every event type the mock can raise. */
export const SUPPORTED_EVENTS =
  NVML_EVENT.XID_CRITICAL_ERROR | NVML_EVENT.SINGLE_BIT_ECC_ERROR | NVML_EVENT.DOUBLE_BIT_ECC_ERROR;

/** Faults are equal when they say the same thing; the order they were injected in does not matter. */
export function faultKey(f: NvmlFault): string {
  return JSON.stringify([
    f.source,
    f.kind,
    f.kind === 'xid' ? [f.xid, f.gpuInstanceId ?? null, f.computeInstanceId ?? null] : null,
    f.kind === 'ecc' ? [f.bits, f.count] : null,
  ]);
}

/** Volatile ECC counts the injected faults add up to. */
export function eccCount(faults: readonly NvmlFault[], bits: 1 | 2): number {
  return faults.reduce((n, f) => n + (f.kind === 'ecc' && f.bits === bits ? f.count : 0), 0);
}
