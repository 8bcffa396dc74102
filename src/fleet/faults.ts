import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import type { DriverRelease } from '../model/device/release.js';
import { activeOn, hitsOn, nvmlFaultList, outcome, targetName, type NodeHit } from '../model/fault/apply.js';
import { apiFailure, STATUS_BACKOFF, type FaultApi } from '../kube/gpufault/api.js';
import { fullJitter } from '../kube/backoff.js';
import type { DeviceFaultStatus, GpuFault, NodeFaultStatus } from '../model/fault/resource.js';
import {
  apiTime,
  fleetWriter,
  LISTED_DEVICES,
  LISTED_NODES,
  invalidPatch,
  nodesStatusPatch,
  summaryPatch,
  type StatusPatch,
} from '../model/fault/status.js';
import { FaultWatcher } from '../kube/gpufault/watcher.js';
import { expectedTaints } from '../model/health/expected.js';
import { removedIn2512, type DeviceTaints } from '../model/health/taints.js';
import type { NvmlFault } from '../model/nvml/state.js';
import type { Machines, NodeMachine } from './machines.js';

/**
 * Faults on the fleet's nodes. No plugin runs there, so no NVML either: each node's taints are what
 * NVIDIA's monitor would end with (`expectedTaints`), applied to the node's slices by its next
 * reconcile, which writes only the faulted nodes. Unlike a node plugin, which keeps taints until it
 * restarts, a repaired fault here is a node whose plugin restarted on repaired hardware: its taints go.
 * Each fault's status gets one patch for all the fleet's nodes it hit, after their slices are written:
 * the fleet's counts over all of them, and the entries of the first few (`nodesStatusPatch`).
 */

export interface FaultedNode extends NodeMachine {
  labels: Record<string, string>;
}

export interface FleetFaultsOptions {
  api: FaultApi;
  machines: Machines;
  release: DriverRelease;
  ignoredXids: ReadonlySet<number>;
  /** The nodes served now. */
  nodes: () => Iterable<[string, FaultedNode]>;
  /** Whether a node exists in the cluster, for faults naming one the fleet does not serve. */
  nodeExists?: (name: string) => Promise<boolean>;
  /** The node's slices must be written again. */
  enqueue: (node: string) => void;
  log: Logger;
  /** Devices hit, once per fault and device, and seconds from a fault seen to all its nodes written. */
  onApplied?: (devices: number) => void;
  onPublished?: (seconds: number) => void;
  now?: () => Date;
  flushMs?: number;
  /**
   * The fleet's node selector, if any: two fleets serving different nodes are two writers of the
   * status; the same fleet restarted is the same one.
   */
  selection?: string | undefined;
  /** The backoff's random source, for tests. */
  random?: (() => number) | undefined;
  /**
   * A sharded fleet: each shard is a status writer of its own (`<writer>#<shard>`), written by whichever
   * replica holds the shard, so that a shard handed over is written on by its new holder, counts and
   * all, and no two replicas write one entry.
   */
  shards?: { count: number; of(node: string): number; held(): number[] } | undefined;
}

interface NodeFaults {
  hits: NodeHit[];
  taints: DeviceTaints;
  /** The taints as text, to tell a change. */
  key: string;
  /** When slices with these taints were written; null until then. */
  writtenAt: string | null;
  /** The same, as `performance.now()`, for the publish time. */
  writtenMs: number;
}

export class FleetFaults {
  private readonly watcher: FaultWatcher;
  private faults: GpuFault[] = [];
  private readonly byNode = new Map<string, NodeFaults>();
  /** When the fleet first saw each fault (by UID), until all its nodes are written. */
  private readonly seen = new Map<string, number>();
  private readonly dirty = new Set<string>();
  /** Faults (UID/generation) whose node was looked up, so each is looked up once. */
  private readonly checkedNodes = new Set<string>();
  private flushTimer: NodeJS.Timeout | undefined;
  private readonly now: () => Date;
  private readonly writer: string;
  /** By fault name and writer, the nodes this fleet listed in its status: at most `LISTED_NODES` each. */
  private readonly listed = new Map<string, Set<string>>();
  /** Status patches rejected in a row, for the backoff; 0 after one is taken. */
  private failures = 0;
  private retrying = false;
  private stopped = false;

  constructor(private readonly o: FleetFaultsOptions) {
    this.now = o.now ?? (() => new Date());
    this.writer = fleetWriter(
      o.selection ? createHash('sha256').update(o.selection).digest('hex').slice(0, 12) : undefined,
    );
    this.watcher = new FaultWatcher({
      api: o.api,
      log: o.log,
      // A fault is applied to thousands of nodes at once: waiting for more events to batch gains little.
      debounceMs: 20,
      onChange: (faults) => {
        this.changed(faults);
      },
      onStatus: (f) => {
        const p = summaryPatch(f, (w) => this.writers().includes(w));
        if (p) void this.patch(f.metadata.name, p);
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

  stop(): void {
    this.stopped = true;
    this.watcher.stop();
    clearTimeout(this.flushTimer);
  }

  taintsOf(node: string): DeviceTaints | undefined {
    return this.byNode.get(node)?.taints;
  }

  /** The NVML faults of the node's faulted GPUs, as its plugin's mock NVML would hold them. */
  nvmlFaultsOf(node: string): { uuid: string; fault: NvmlFault }[] {
    const n = this.byNode.get(node);
    return n ? nvmlFaultList(n.hits) : [];
  }

  private changed(faults: GpuFault[]): void {
    this.faults = faults;
    const t = performance.now();
    for (const f of faults) if (!this.seen.has(uid(f))) this.seen.set(uid(f), t);
    const names = new Set(faults.map(uid));
    for (const k of this.seen.keys()) if (!names.has(k)) this.seen.delete(k);
    const live = new Set(faults.map((f) => f.metadata.name));
    for (const k of this.listed.keys()) if (!live.has(k.split('\u0000')[0] ?? '')) this.listed.delete(k);
    for (const f of faults) this.dirty.add(f.metadata.name);
    for (const [name, st] of this.o.nodes()) this.refresh(name, st);
    this.scheduleFlush();
    void this.checkNodes(faults);
  }

  /**
   * A fault naming a node that does not exist would otherwise sit silent (no plugin or fleet serves
   * it): the fleet, which sees every fault, says so in an `Accepted=False` condition.
   */
  private async checkNodes(faults: readonly GpuFault[]): Promise<void> {
    const exists = this.o.nodeExists;
    if (!exists) return;
    const served = new Set([...this.o.nodes()].map(([n]) => n));
    const keyOf = (f: GpuFault): string => `${uid(f)}/${f.metadata.generation ?? 0}`;
    const live = new Set(faults.map(keyOf));
    for (const k of this.checkedNodes) if (!live.has(k)) this.checkedNodes.delete(k);
    for (const f of faults) {
      const node = f.spec.nodeName;
      const key = keyOf(f);
      if (node === undefined || served.has(node) || this.checkedNodes.has(key)) continue;
      this.checkedNodes.add(key);
      try {
        if (await exists(node)) continue;
      } catch (e) {
        this.checkedNodes.delete(key);
        this.o.log.warn(
          { fault: f.metadata.name, err: apiFailure(e) },
          'looking up the node of a fault failed',
        );
        continue;
      }
      const p = invalidPatch(f, `node ${node} does not exist`, this.now(), 'NodeNotFound');
      if (p) await this.patch(f.metadata.name, p);
    }
  }

  /** Recomputes one node's faults (a new node, new labels, changed faults); queues it when they changed. */
  refresh(name: string, st: FaultedNode): void {
    const prev = this.byNode.get(name);
    const node = { name, labels: st.labels };
    const now = this.now();
    if (activeOn(this.faults, node, now).length === 0) {
      if (prev) {
        this.byNode.delete(name);
        this.o.enqueue(name);
        for (const h of prev.hits) this.dirty.add(h.fault.metadata.name);
        // A node that lost the label: no slice write of a faulted node will flush its entry away.
        this.scheduleFlush();
      }
      return;
    }
    const gpus = this.o.machines.gpus(name, st);
    if (!gpus) return;
    const hits = hitsOn(this.faults, node, gpus, now);
    const taints = expectedTaints(gpus, nvmlFaultList(hits), this.o.ignoredXids);
    const key = JSON.stringify([...taints].sort(([a], [b]) => (a < b ? -1 : 1)));
    const same = prev?.key === key;
    this.byNode.set(name, {
      hits,
      taints,
      key,
      writtenAt: same ? prev.writtenAt : null,
      writtenMs: same ? prev.writtenMs : 0,
    });
    if (!same) {
      this.o.enqueue(name);
      this.o.onApplied?.(hits.reduce((n, h) => n + h.targets.length, 0));
    }
  }

  /** Every fault's status written again at the next flush (a shard taken over: its writer is ours now). */
  rewriteAll(): void {
    for (const f of this.faults) this.dirty.add(f.metadata.name);
    if (this.faults.length > 0) this.scheduleFlush();
  }

  /** The node forgotten: its entries are removed with the next flush. */
  removed(name: string): void {
    const prev = this.byNode.get(name);
    if (!prev) return;
    this.byNode.delete(name);
    for (const h of prev.hits) this.dirty.add(h.fault.metadata.name);
    this.scheduleFlush();
  }

  /** The node's slices, with its taints, are on the API server. */
  written(name: string): void {
    const n = this.byNode.get(name);
    if (!n || n.writtenAt !== null) return;
    n.writtenAt = apiTime(this.now());
    n.writtenMs = performance.now();
    for (const h of n.hits) this.dirty.add(h.fault.metadata.name);
    this.scheduleFlush();
  }

  private scheduleFlush(): void {
    if (this.flushTimer) return;
    // Long enough that the status of a fault on many nodes is one patch after their writes, not a
    // patch competing with them.
    this.flushTimer = setTimeout(() => {
      this.flushTimer = undefined;
      void this.flush();
    }, this.o.flushMs ?? 500);
  }

  /** The status writers this replica writes now: one, or one per shard it holds. */
  private writers(): string[] {
    const sh = this.o.shards;
    return sh ? sh.held().map((k) => `${this.writer}#${String(k)}`) : [this.writer];
  }

  private writerOf(node: string): string {
    const sh = this.o.shards;
    return sh ? `${this.writer}#${String(sh.of(node))}` : this.writer;
  }

  /** One status patch per changed fault: each writer's counts and its first nodes' entries. */
  private async flush(): Promise<void> {
    const faults = [...this.dirty];
    this.dirty.clear();
    const served = new Set([...this.o.nodes()].map(([n]) => n));
    for (const name of faults) {
      const f = this.faults.find((x) => x.metadata.name === name);
      if (!f) continue;
      const { byWriter, pending, lastWrittenMs } = this.entriesOf(name);
      const patch = this.patchOf(f, byWriter, served);
      if (!patch || !(await this.patch(name, patch))) continue;
      for (const w of Object.keys(patch.status.writers ?? {}))
        this.listed.set(
          `${name}\u0000${w}`,
          new Set(
            Object.entries(patch.status.nodes ?? {}).flatMap(([n, e]) =>
              e && this.writerOf(n) === w ? [n] : [],
            ),
          ),
        );
      const since = this.seen.get(uid(f));
      if (!pending && since !== undefined) {
        this.seen.delete(uid(f));
        this.o.onPublished?.((lastWrittenMs - since) / 1000);
      }
    }
  }

  /** The fault's entries of this replica's nodes, by writer, and whether some are still unwritten. */
  private entriesOf(name: string): {
    byWriter: Map<string, Map<string, NodeFaultStatus>>;
    pending: boolean;
    lastWrittenMs: number;
  } {
    const byWriter = new Map<string, Map<string, NodeFaultStatus>>();
    let pending = false;
    let lastWrittenMs = 0;
    for (const [node, n] of this.byNode) {
      const h = n.hits.find((x) => x.fault.metadata.name === name);
      if (!h) continue;
      if (n.writtenAt === null) {
        pending = true;
        continue;
      }
      lastWrittenMs = Math.max(lastWrittenMs, n.writtenMs);
      const w = this.writerOf(node);
      let entries = byWriter.get(w);
      if (!entries) byWriter.set(w, (entries = new Map<string, NodeFaultStatus>()));
      entries.set(node, this.entry(h, n, n.writtenAt));
    }
    return { byWriter, pending, lastWrittenMs };
  }

  /**
   * Every writer's patch in one: a writer of this replica with nothing to say and nothing said before
   * is left out; null when none changes the object. With shards, each writer lists its share of the
   * nodes and devices, so the object stays as small as with one writer.
   */
  private patchOf(
    f: GpuFault,
    byWriter: ReadonlyMap<string, ReadonlyMap<string, NodeFaultStatus>>,
    served: ReadonlySet<string>,
  ): StatusPatch | null {
    const n = this.o.shards?.count ?? 1;
    const limits = {
      nodes: Math.max(1, Math.floor(LISTED_NODES / n)),
      devices: Math.max(1, Math.floor(LISTED_DEVICES / n)),
    };
    const out: StatusPatch = { status: { nodes: {}, writers: {} } };
    let any = false;
    for (const w of this.writers()) {
      const p = nodesStatusPatch(w, byWriter.get(w) ?? new Map(), this.listedNow(f, served, w), limits);
      if (!this.changes(f, p, w)) continue;
      any = true;
      Object.assign(out.status.nodes ?? {}, p.status.nodes);
      Object.assign(out.status.writers ?? {}, p.status.writers);
    }
    for (const w of this.staleWriters(f)) {
      any = true;
      (out.status.writers ?? {})[w] = null;
    }
    return any ? out : null;
  }

  /**
   * This fleet's writer entries that its present shape never writes: left by the fleet before
   * `replicas` or `--shards` changed (`fleet:all` beside `fleet:all#0…`), each counted in the totals
   * again. Removed by one replica: the single writer, or the holder of shard 0. The nodes they listed
   * are this fleet's and are removed by the writers of their shards (`listedNow`).
   */
  private staleWriters(f: GpuFault): string[] {
    const sh = this.o.shards;
    if (sh && !sh.held().includes(0)) return [];
    const live = new Set(
      sh ? Array.from({ length: sh.count }, (_, k) => `${this.writer}#${String(k)}`) : [this.writer],
    );
    return Object.keys(f.status?.writers ?? {}).filter(
      (w) => (w === this.writer || w.startsWith(`${this.writer}#`)) && !live.has(w),
    );
  }

  /**
   * This writer's nodes the fault's status may list now: those it listed itself (a node since removed
   * too, and one the object seen here does not show yet), and, after a restart or a shard taken over,
   * those it serves. A plugin's node has a writer entry of its own name.
   */
  private listedNow(f: GpuFault, served: ReadonlySet<string>, w: string): Set<string> {
    const out = new Set(this.listed.get(`${f.metadata.name}\u0000${w}`));
    const writers = f.status?.writers ?? {};
    for (const n of Object.keys(f.status?.nodes ?? {}))
      if (served.has(n) && writers[n] === undefined && this.writerOf(n) === w) out.add(n);
    return out;
  }

  /** Whether the writer's patch would change the object: a fault it never hit needs no write. */
  private changes(f: GpuFault, p: StatusPatch, w: string): boolean {
    const counts = p.status.writers?.[w];
    const nodes = Object.keys(p.status.nodes ?? {});
    return counts !== null || nodes.length > 0 || f.status?.writers?.[w] !== undefined;
  }

  private entry(h: NodeHit, n: NodeFaults, at: string): NodeFaultStatus {
    const devices: DeviceFaultStatus[] = [];
    for (const t of h.targets) {
      const name = targetName(t);
      const taints = n.taints.get(name);
      const present = !(this.o.release === '25.12' && taints && removedIn2512(taints));
      const o = outcome(h.fault.spec.fault.type, taints, present, this.o.release);
      if (o !== null) devices.push({ name, ...o, publishedAt: at });
    }
    return {
      devices,
      ...(h.unknown.length > 0 ? { message: `not on this node: ${h.unknown.join(', ')}` } : {}),
      observedGeneration: h.fault.metadata.generation ?? 0,
    };
  }

  /** Whether the API server took it; a rejected patch is tried again after a backoff. */
  private async patch(name: string, p: StatusPatch): Promise<boolean> {
    try {
      await this.o.api.patchFaultStatus(name, p);
      this.failures = 0;
      return true;
    } catch (e) {
      this.dirty.add(name);
      this.failures++;
      this.o.log.warn(
        { fault: name, err: apiFailure(e), failures: this.failures, retryInMs: this.retryLater() },
        'writing the fault status failed; again later',
      );
      return false;
    }
  }

  /**
   * One retry for all the faults that failed, later after each failure in a row: a patch the API
   * server refuses (too large, invalid) must not be sent again every few seconds forever.
   */
  private retryLater(): number | undefined {
    if (this.retrying || this.stopped) return undefined;
    this.retrying = true;
    const ms = fullJitter(this.failures, STATUS_BACKOFF, this.o.random);
    setTimeout(() => {
      this.retrying = false;
      if (!this.stopped) this.scheduleFlush();
    }, ms).unref();
    return ms;
  }
}

const uid = (f: GpuFault): string => f.metadata.uid ?? f.metadata.name;
