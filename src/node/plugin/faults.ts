import type { Logger } from 'pino';
import type { DriverRelease } from '../../model/device/release.js';
import { hitsOn, nvmlFaultsOf, outcome, targetName, type NodeHit } from '../../model/fault/apply.js';
import { apiFailure, STATUS_BACKOFF, type FaultApi } from '../../kube/gpufault/api.js';
import { fullJitter } from '../../kube/backoff.js';
import type { DeviceFaultStatus, GpuFault, NodeFaultStatus } from '../../model/fault/resource.js';
import {
  apiTime,
  entryUnchanged,
  invalidPatch,
  nodeStatusPatch,
  summaryPatch,
  type StatusPatch,
} from '../../model/fault/status.js';
import { FaultWatcher } from '../../kube/gpufault/watcher.js';
import type { NodeGpu } from '../../model/health/gpus.js';
import type { DeviceTaint, ResourceSlice } from '../../kube/types/resource.js';
import type { MockNvml } from '../../model/nvml/mock.js';
import type { HardwareFault } from '../../model/nvml/state.js';
import type { NodeHealth } from './health.js';

/**
 * Injected faults reach this node where real ones would: the GpuFaults that hit it become hardware
 * faults in the mock NVML (persisted, so a restart finds a broken GPU broken), whose events NVIDIA's
 * monitor then turns into taints. A fault deleted or past its repair time is repaired hardware: NVML
 * stops reporting it, and, as with NVIDIA's driver, its taints stay until the plugin restarts. Each
 * fault's status says which devices it hit here and when the slices first showed it.
 */

/** How long the monitor waits for the first GpuFault list at start. */
export const FIRST_SYNC_WAIT_MS = 10_000;

export interface NodeFaultsOptions {
  nodeName: string;
  api: FaultApi;
  /** The node's labels, for faults with a node selector. */
  nodeLabels: () => Promise<Record<string, string>>;
  nvml: MockNvml;
  gpus: readonly NodeGpu[];
  health: NodeHealth;
  /** Rewrites what running containers see of their devices. */
  refreshFiles: () => Promise<void>;
  release: DriverRelease;
  log: Logger;
  now?: () => Date;
  /** The backoff's random source, for tests. */
  random?: () => number;
}

export class NodeFaults {
  private readonly watcher: FaultWatcher;
  private hits: NodeHit[] = [];
  private labels: Record<string, string> = {};
  /** GpuFaults with hardware faults in NVML now; at start, those a previous run left there. */
  private sources: Set<string>;
  /** When a device first showed a fault's outcome, by fault UID, device and outcome. */
  private readonly shownAt = new Map<string, string>();
  private lastSlices: readonly ResourceSlice[] = [];
  private applying: Promise<void> = Promise.resolve();
  private readonly now: () => Date;
  /** Status patches rejected in a row, and the report that will try them again. */
  private failures = 0;
  private retry: NodeJS.Timeout | undefined;
  private stopped = false;
  private markSynced: () => void = () => undefined;
  /** Settles once the first list of GpuFaults is in NVML. */
  readonly synced = new Promise<void>((resolve) => {
    this.markSynced = resolve;
  });

  constructor(private readonly o: NodeFaultsOptions) {
    this.now = o.now ?? (() => new Date());
    this.sources = new Set(o.gpus.flatMap((g) => o.nvml.faults(g.uuid).map((f) => f.source)));
    this.watcher = new FaultWatcher({
      api: o.api,
      log: o.log,
      onChange: (faults) => {
        // A failed apply (a disk error writing NVML's state or the views) is logged and the chain goes
        // on: the next change applies the whole list again. Rejected, it would skip every later apply
        // and end the process as an unhandled rejection.
        this.applying = this.applying
          .then(() => this.apply(faults))
          .catch((e: unknown) => {
            o.log.error({ err: e instanceof Error ? e.message : String(e) }, 'applying GpuFaults failed');
          })
          .finally(() => {
            this.markSynced();
          });
      },
      onStatus: () => {
        void this.report();
      },
      onInvalid: (name, why, obj) => {
        const p = invalidPatch(obj, why, this.now());
        if (p) void this.patch(name, p);
      },
    });
  }

  start(): void {
    this.watcher.start();
  }

  stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retry);
    this.watcher.stop();
    this.markSynced();
    return this.applying;
  }

  /**
   * Starts the watcher, then NVIDIA's monitor once NVML holds what the API says: a fault deleted while
   * the plugin was down is hardware repaired before this start, and a monitor that read the previous
   * run's faults first would keep their taints until the next restart. An API server that does not
   * answer in `waitMs` leaves the previous run's faults as the truth.
   */
  async startWithHealth(waitMs = FIRST_SYNC_WAIT_MS): Promise<void> {
    this.start();
    let timer: NodeJS.Timeout | undefined;
    const waited = await Promise.race([
      this.synced.then(() => true),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => {
          resolve(false);
        }, waitMs);
      }),
    ]);
    clearTimeout(timer);
    if (!waited)
      this.o.log.warn(
        { waitedMs: waitMs },
        'no GpuFault list yet; monitoring with the faults the previous run left in NVML',
      );
    this.o.health.start();
  }

  /** After every publish: the slices the pool now equals. */
  published(slices: readonly ResourceSlice[]): void {
    this.lastSlices = slices;
    void this.report();
  }

  private async apply(faults: GpuFault[]): Promise<void> {
    try {
      this.labels = await this.o.nodeLabels();
    } catch (e) {
      this.o.log.warn({ err: apiFailure(e) }, 'reading the node labels failed; using the last ones');
    }
    const { nodeName, nvml, gpus } = this.o;
    this.hits = hitsOn(faults, { name: nodeName, labels: this.labels }, gpus, this.now());
    const byFault = nvmlFaultsOf(this.hits);
    let changed = false;
    let unmonitored = false;
    for (const source of new Set([...this.sources, ...byFault.keys()])) {
      const wanted = byFault.get(source) ?? new Map<string, HardwareFault[]>();
      if (!nvml.setFaults(source, wanted)) continue;
      changed = true;
      unmonitored ||= [...wanted.values()].some((l) => l.some((f) => f.kind === 'unmonitored'));
      this.o.log.info(
        { fault: source, gpus: wanted.size },
        wanted.size > 0 ? 'fault injected into NVML' : 'fault repaired',
      );
    }
    this.sources = new Set(byFault.keys());
    // NVIDIA registers events once; a GPU that stopped reporting them is found by registering again.
    if (unmonitored) this.o.health.reregister();
    if (changed) await this.o.refreshFiles();
    await this.report();
  }

  /** Writes each fault's entry for this node where it changed. */
  private async report(): Promise<void> {
    const node = this.o.nodeName;
    const taints = new Map<string, readonly DeviceTaint[] | undefined>();
    for (const s of this.lastSlices) for (const d of s.spec.devices ?? []) taints.set(d.name, d.taints);
    const published = this.lastSlices.length > 0;
    const entries = new Map<string, NodeFaultStatus | null>();
    const shown = new Set<string>();
    for (const h of this.hits) {
      const devices: DeviceFaultStatus[] = [];
      for (const t of h.targets) {
        const name = targetName(t);
        const o = published
          ? outcome(h.fault.spec.fault.type, taints.get(name), taints.has(name), this.o.release)
          : null;
        if (o === null) continue;
        const key = `${h.fault.metadata.uid ?? h.fault.metadata.name}/${name}/${JSON.stringify(o)}`;
        const at = this.shownAt.get(key) ?? apiTime(this.now());
        this.shownAt.set(key, at);
        shown.add(key);
        devices.push({ name, ...o, publishedAt: at });
      }
      const message = h.unknown.length > 0 ? `not on node ${node}: ${h.unknown.join(', ')}` : undefined;
      entries.set(h.fault.metadata.name, {
        devices,
        ...(message ? { message } : {}),
        observedGeneration: h.fault.metadata.generation ?? 0,
      });
    }
    // Times of what the slices no longer show (faults deleted, devices retainted) are not kept forever.
    if (published) for (const k of this.shownAt.keys()) if (!shown.has(k)) this.shownAt.delete(k);
    for (const f of this.watcher.current()) {
      const next = entries.get(f.metadata.name) ?? null;
      if (!entryUnchanged(f, node, next)) await this.patch(f.metadata.name, nodeStatusPatch(node, next));
      const summary = summaryPatch(f, (n) => n === node);
      if (summary) await this.patch(f.metadata.name, summary);
    }
  }

  private async patch(name: string, p: StatusPatch): Promise<void> {
    try {
      await this.o.api.patchFaultStatus(name, p);
      this.failures = 0;
    } catch (e) {
      this.failures++;
      this.o.log.warn(
        { fault: name, err: apiFailure(e), failures: this.failures, retryInMs: this.retryLater() },
        'writing the fault status failed; again later',
      );
    }
  }

  /**
   * A report again after a backoff (unless a change or publish comes first): what was rejected is
   * written from the objects as they are then, later after each failure in a row.
   */
  private retryLater(): number | undefined {
    if (this.retry !== undefined || this.stopped) return undefined;
    const ms = fullJitter(this.failures, STATUS_BACKOFF, this.o.random);
    this.retry = setTimeout(() => {
      this.retry = undefined;
      void this.report();
    }, ms);
    this.retry.unref();
    return ms;
  }
}
