import * as grpc from '@grpc/grpc-js';
import type { DeviceHealth } from '../../model/health/report.js';

/**
 * The kubelet's device health stream (KEP-4680, `DRAResourceHealth.NodeWatchResources`), served on the
 * DRA socket. The kubelet forgets a device's health 30 s after the last message that listed it and
 * drops everything it knows about the driver when the stream ends, so each message carries the
 * complete list and the list is re-sent well within that window even when nothing changed.
 */

export type { HealthState } from '../../model/health/report.js';

export interface DeviceHealthReport extends DeviceHealth {
  poolName: string;
  /** per-device staleness override, seconds; absent: kubelet default */
  timeoutSeconds?: number;
}

export interface HealthSource {
  current(): DeviceHealthReport[];
  /** returns an unsubscribe function */
  subscribe(listener: () => void): () => void;
}

/** Paths of the service in `dra-health-v1.proto` and `dra-health-v1alpha1.proto`, for the proto loader. */
export const HEALTH_V1 = ['v1', 'DRAResourceHealth'];
export const HEALTH_V1ALPHA1 = ['v1alpha1', 'DRAResourceHealth'];

/**
 * What registration advertises, newest first as the kubelet's own helper does. A 1.37 kubelet streams
 * only from a plugin that lists one of these and takes the first it knows of its own list (v1, then
 * v1alpha1); the DRAPlugin choice skips strings it does not know, so older kubelets are not confused.
 */
export const HEALTH_SERVICES = ['v1.DRAResourceHealth', 'v1alpha1.DRAResourceHealth'] as const;

/** Half the kubelet's default 30 s staleness timeout: one lost beat still leaves time for the next. */
export const DEFAULT_HEARTBEAT_MS = 15_000;

/** The kubelet's (and the pod API's) limit on a health message, in bytes as Go counts a string. */
export const MESSAGE_MAX_BYTES = 1024;

/** Wire form of one device, as the proto loader takes it (enum by name, int64 as a number). */
export interface DeviceHealthWire {
  device: { poolName: string; deviceName: string };
  health: 'UNKNOWN' | 'HEALTHY' | 'UNHEALTHY';
  lastUpdatedTime: number;
  healthCheckTimeoutSeconds: number;
  message: string;
}

export interface NodeWatchResourcesWire {
  devices: DeviceHealthWire[];
}

const WIRE_HEALTH = { Unknown: 'UNKNOWN', Healthy: 'HEALTHY', Unhealthy: 'UNHEALTHY' } as const;

/**
 * Cuts a message the way the kubelet does (first 1021 bytes, then "..."), except that the cut moves back
 * to the start of a character it would split: Go slices bytes, and a split character is not valid UTF-8.
 */
export function truncateMessage(message: string): string {
  const bytes = Buffer.from(message, 'utf8');
  if (bytes.length <= MESSAGE_MAX_BYTES) return message;
  let end = MESSAGE_MAX_BYTES - 3;
  // Continuation bytes are 10xxxxxx: the character at `end` started earlier.
  while (end > 0 && ((bytes[end] ?? 0) & 0xc0) === 0x80) end--;
  return `${bytes.subarray(0, end).toString('utf8')}...`;
}

/** Whole seconds, never shorter than asked; 0 (the kubelet's default) for none or a useless value. */
function timeoutSeconds(s: number | undefined): number {
  return s !== undefined && Number.isFinite(s) && s > 0 ? Math.ceil(s) : 0;
}

/** One stream message: every device the source knows, stamped `now` (unix seconds). */
export function healthResponse(reports: readonly DeviceHealthReport[], now: number): NodeWatchResourcesWire {
  return {
    devices: reports.map((r) => ({
      device: { poolName: r.poolName, deviceName: r.deviceName },
      health: WIRE_HEALTH[r.health],
      lastUpdatedTime: now,
      healthCheckTimeoutSeconds: timeoutSeconds(r.timeoutSeconds),
      message: truncateMessage(r.message),
    })),
  };
}

/**
 * How long a stream may stay quiet: the configured beat, or less when a device asked for a staleness
 * timeout so short that the beat would let its report lapse.
 */
function beatFor(wire: NodeWatchResourcesWire, heartbeatMs: number): number {
  let ms = heartbeatMs;
  for (const d of wire.devices)
    if (d.healthCheckTimeoutSeconds > 0) ms = Math.min(ms, (d.healthCheckTimeoutSeconds * 1000) / 2);
  return Math.max(1, ms);
}

export interface HealthServiceOptions {
  /** Longest gap between two messages on a stream; default {@link DEFAULT_HEARTBEAT_MS}. */
  heartbeatMs?: number;
}

export interface HealthService {
  /** Handlers for `addService` with either version's definition; both versions share them. */
  implementation: grpc.UntypedServiceImplementation;
  /** Ends every open stream with OK and answers later calls the same way, so the server can shut down. */
  close(): void;
}

type Stream = grpc.ServerWritableStream<unknown, NodeWatchResourcesWire>;

export function healthService(source: HealthSource, o: HealthServiceOptions = {}): HealthService {
  const heartbeatMs = o.heartbeatMs ?? DEFAULT_HEARTBEAT_MS;
  if (!(heartbeatMs > 0)) throw new Error(`heartbeatMs must be positive, got ${heartbeatMs}`);
  const open = new Set<() => void>();
  let closed = false;

  const NodeWatchResources = (call: Stream): void => {
    if (closed) {
      call.end();
      return;
    }
    let timer: NodeJS.Timeout | undefined;
    // A client that stops reading would otherwise queue a message per beat and change; every message
    // is complete, so one pending flag stands for all that were held back.
    let writable = true;
    let pending = false;
    let done = false;

    const send = (): void => {
      if (done) return;
      clearTimeout(timer);
      let wire: NodeWatchResourcesWire;
      try {
        wire = healthResponse(source.current(), Math.floor(Date.now() / 1000));
      } catch (e) {
        // An error status makes the kubelet drop the driver's health and retry in 5 s; a throw here
        // would instead land in the source's notify or in a timer.
        finish();
        call.emit('error', {
          code: grpc.status.INTERNAL,
          details: `device health: ${e instanceof Error ? e.message : String(e)}`,
        });
        return;
      }
      timer = setTimeout(send, beatFor(wire, heartbeatMs));
      if (!writable) {
        pending = true;
        return;
      }
      writable = call.write(wire);
    };
    const onDrain = (): void => {
      writable = true;
      if (pending) {
        pending = false;
        send();
      }
    };
    const subscription = { unsubscribe: (): void => undefined };
    const finish = (): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      subscription.unsubscribe();
      call.off('drain', onDrain);
      open.delete(end);
    };
    const end = (): void => {
      finish();
      call.end();
    };
    open.add(end);
    call.on('drain', onDrain);
    call.once('cancelled', finish);
    call.once('finish', finish);
    call.once('error', finish);
    subscription.unsubscribe = source.subscribe(send);
    // A stream that ended while subscribing (a source that notifies at once and fails) stays ended.
    if (open.has(end)) send();
    else subscription.unsubscribe();
  };

  return {
    implementation: { NodeWatchResources },
    close() {
      closed = true;
      for (const end of [...open]) end();
    },
  };
}
