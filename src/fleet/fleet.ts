import { CoreV1Api, CustomObjectsApi, type KubeConfig, type V1Node, Watch } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { DriverRelease } from '../device/release.js';
import { FakegpuError } from '../errors.js';
import type { ResourceSlice } from '../k8s/resource.js';
import {
  planPool,
  SLICES,
  specKey,
  writeSlice,
  type PublishedSlice,
  type StoredSlice,
} from '../publish/pool.js';
import { resolveProfile, type ResolvedProfile } from '../profile/load.js';
import type { Semver } from '../k8s/version.js';
import { serverVersion } from '../plugin/run.js';
import { renderSlices, type NicRenderOptions } from '../render.js';

/**
 * One process publishing the slices of many nodes that have no kubelet plugin (KWOK's simulated nodes):
 * the same slices `fakegpu plugin` publishes, rendered per node from its profile. It keeps only a key
 * per slice in memory, never the objects, so thousands of nodes cost little; writes go through a
 * bounded worker pool and a token bucket, failures back off per node, and a node whose slices already
 * match costs no write at all (so a restart causes no churn).
 */

const PAGE = 500;

export const KWOK_ANNOTATION = 'kwok.x-k8s.io/node';

export interface FleetOptions {
  /** Label selector for the nodes to serve; default: nodes KWOK manages (annotation) or carrying the profile label. */
  nodeSelector?: string | undefined;
  /** A node label whose value names the node's profile (preset or file). */
  profileLabel: string;
  /** The profile of selected nodes without the label; none: such nodes are skipped. */
  defaultProfile?: string | undefined;
  dynamicMig: boolean;
  driverName: string;
  release: DriverRelease;
  nics?: NicRenderOptions | undefined;
  /** Nodes reconciled at once. */
  concurrency: number;
  /** Client-side write rate limit (requests per second, burst); 0 disables it. */
  qps: number;
  burst: number;
  log: Logger;
}

interface NodeState {
  uid: string;
  profile: string | null;
  /** Last failure count, for backoff. */
  failures: number;
}

interface SliceState {
  node: string;
  driver: string;
  key: string;
  generation: number;
}

/** Token bucket: `take()` resolves when a request may go out. */
class RateLimiter {
  private tokens: number;
  private last = Date.now();
  constructor(
    private readonly qps: number,
    private readonly burst: number,
  ) {
    this.tokens = burst;
  }
  async take(): Promise<void> {
    if (this.qps <= 0) return;
    for (;;) {
      const now = Date.now();
      this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) / 1000) * this.qps);
      this.last = now;
      if (this.tokens >= 1) {
        this.tokens -= 1;
        return;
      }
      await new Promise((r) => setTimeout(r, Math.ceil(((1 - this.tokens) / this.qps) * 1000)));
    }
  }
}

/** Counters since start; `snapshot()` adds the current sizes. */
export interface FleetCounters {
  writes: number;
  requests: number;
  errors: number;
}

export interface FleetStats extends FleetCounters {
  nodes: number;
  pending: number;
  slices: number;
}

export class Fleet {
  private readonly api: CustomObjectsApi;
  private readonly core: CoreV1Api;
  private readonly nodes = new Map<string, NodeState>();
  private readonly slices = new Map<string, SliceState>();
  private readonly queue = new Set<string>();
  private readonly active = new Set<string>();
  private readonly limiter: RateLimiter;
  private readonly profiles = new Map<string, ResolvedProfile | FakegpuError>();
  private readonly aborts: (() => void)[] = [];
  private readonly drivers: string[];
  private stopped = false;
  private listed = false;
  private relisting: Promise<void> | null = null;
  /** The API server's version decides the slice layout under dynamic MIG, as in the node plugin. */
  private kubernetesVersion: Semver = { major: 1, minor: 37, patch: 0 };
  readonly stats: FleetCounters = { writes: 0, requests: 0, errors: 0 };

  constructor(
    private readonly kc: KubeConfig,
    private readonly o: FleetOptions,
  ) {
    this.api = kc.makeApiClient(CustomObjectsApi);
    this.core = kc.makeApiClient(CoreV1Api);
    this.limiter = new RateLimiter(o.qps, o.burst);
    this.drivers = [o.driverName, ...(o.nics ? [o.nics.driverName] : [])];
  }

  /** Lists nodes and slices, then watches both; returns once the first reconcile of every node is queued. */
  async start(): Promise<void> {
    this.stats.requests++;
    this.kubernetesVersion = await serverVersion(this.kc);
    await this.relist();
    void this.watchNodes();
    for (const d of this.drivers) void this.watchSlices(d);
  }

  /** A read TypeScript cannot see change across an await. */
  private isStopped(): boolean {
    return this.stopped;
  }

  stop(): void {
    this.stopped = true;
    for (const a of this.aborts) a();
  }

  /** True once every selected node's slices match and nothing is queued or in flight. */
  converged(): boolean {
    return this.listed && this.queue.size === 0 && this.active.size === 0;
  }

  snapshot(): FleetStats {
    return {
      ...this.stats,
      nodes: this.nodes.size,
      pending: this.queue.size + this.active.size,
      slices: this.slices.size,
    };
  }

  private selected(n: V1Node): boolean {
    if (this.o.nodeSelector) return true; // the server applied it
    const m = n.metadata;
    return m?.annotations?.[KWOK_ANNOTATION] !== undefined || m?.labels?.[this.o.profileLabel] !== undefined;
  }

  /** One relist at a time: both watches end together when the API server restarts. */
  private relist(): Promise<void> {
    this.relisting ??= this.relistNow().finally(() => {
      this.relisting = null;
    });
    return this.relisting;
  }

  private async relistNow(): Promise<void> {
    // No reconcile may start before both lists are in: a node judged against an empty slice cache
    // would get its slices created twice.
    this.listed = false;
    let cont: string | undefined;
    const seen = new Set<string>();
    do {
      this.stats.requests++;
      const page = await this.core.listNode({
        limit: PAGE,
        _continue: cont,
        labelSelector: this.o.nodeSelector,
      });
      for (const n of page.items) {
        if (n.metadata?.name && this.selected(n)) {
          seen.add(n.metadata.name);
          this.upsertNode(n);
        }
      }
      cont = page.metadata?._continue || undefined;
    } while (cont);
    for (const name of [...this.nodes.keys()]) if (!seen.has(name)) this.removeNode(name);
    this.slices.clear();
    for (const driver of this.drivers) {
      cont = undefined;
      do {
        this.stats.requests++;
        const page = (await this.api.listClusterCustomObject({
          ...SLICES,
          fieldSelector: `spec.driver=${driver}`,
          limit: PAGE,
          _continue: cont,
        })) as { items: StoredSlice[]; metadata?: { continue?: string } };
        for (const s of page.items) this.recordSlice(s);
        cont = page.metadata?.continue || undefined;
      } while (cont);
    }
    this.listed = true;
    for (const name of this.nodes.keys()) this.enqueue(name);
    this.pump();
    // Slices of nodes that no longer exist (deleted while we were away): remove them.
    for (const [name, s] of this.slices)
      if (!this.nodes.has(s.node)) void this.deleteSlice(name).catch(() => undefined);
  }

  private upsertNode(n: V1Node): void {
    const name = n.metadata?.name ?? '';
    const profile = n.metadata?.labels?.[this.o.profileLabel] ?? this.o.defaultProfile ?? null;
    const prev = this.nodes.get(name);
    this.nodes.set(name, { uid: n.metadata?.uid ?? '', profile, failures: prev?.failures ?? 0 });
    if (!prev || prev.profile !== profile || prev.uid !== (n.metadata?.uid ?? '')) this.enqueue(name);
  }

  private removeNode(name: string): void {
    this.nodes.delete(name);
    this.queue.delete(name);
    for (const [sname, s] of this.slices) {
      if (s.node === name) void this.deleteSlice(sname).catch(() => undefined);
    }
  }

  private recordSlice(s: StoredSlice): void {
    const name = s.metadata.name;
    if (!name) return;
    this.slices.set(name, {
      node: s.spec.nodeName,
      driver: s.spec.driver,
      key: specKey(s.spec),
      generation: s.spec.pool.generation,
    });
  }

  private async watchNodes(): Promise<void> {
    await this.watch(
      '/api/v1/nodes',
      this.o.nodeSelector ? { labelSelector: this.o.nodeSelector } : {},
      (type, obj) => {
        const n = obj as V1Node;
        const name = n.metadata?.name;
        if (!name) return;
        if (type === 'DELETED' || !this.selected(n)) {
          if (this.nodes.has(name)) this.removeNode(name);
        } else this.upsertNode(n);
      },
    );
  }

  private async watchSlices(driver: string): Promise<void> {
    await this.watch(
      '/apis/resource.k8s.io/v1/resourceslices',
      { fieldSelector: `spec.driver=${driver}` },
      (type, obj) => {
        const s = obj as StoredSlice;
        const name = s.metadata.name;
        if (!name) return;
        const before = this.slices.get(name);
        if (type === 'DELETED') this.slices.delete(name);
        else this.recordSlice(s);
        // Someone else changed or deleted a slice of ours: put it back. Our own writes match what we hold.
        const after = this.slices.get(name);
        if (
          this.nodes.has(s.spec.nodeName) &&
          before?.key !== after?.key &&
          !this.active.has(s.spec.nodeName)
        )
          this.enqueue(s.spec.nodeName);
      },
    );
  }

  /** A watch that relists and resyncs when it ends (timeout, API server restart), so nothing is missed. */
  private async watch(
    path: string,
    query: Record<string, string>,
    on: (type: string, obj: unknown) => void,
  ): Promise<void> {
    if (this.stopped) return;
    const w = new Watch(this.kc);
    const again = (): void => {
      if (this.stopped) return;
      setTimeout(() => {
        void this.relist()
          .catch((e: unknown) => {
            this.o.log.warn({ err: e instanceof Error ? e.message : String(e) }, 'relist failed');
          })
          .finally(() => void this.watch(path, query, on));
      }, 1000);
    };
    try {
      this.stats.requests++;
      const req = await w.watch(path, query, on, (err: unknown) => {
        if (err)
          this.o.log.warn(
            { path, err: err instanceof Error ? err.message : JSON.stringify(err) },
            'watch ended',
          );
        again();
      });
      this.aborts.push(() => {
        req.abort();
      });
      if (this.isStopped()) req.abort();
    } catch (e) {
      this.o.log.warn({ path, err: e instanceof Error ? e.message : String(e) }, 'watch failed; retrying');
      again();
    }
  }

  private enqueue(node: string): void {
    if (this.stopped) return;
    this.queue.add(node);
    this.pump();
  }

  private pump(): void {
    if (!this.listed) return;
    for (const next of this.queue) {
      if (this.active.size >= this.o.concurrency) return;
      // A node being reconciled stays queued: it goes again once the pass in flight is done.
      if (this.active.has(next)) continue;
      this.queue.delete(next);
      this.active.add(next);
      void this.reconcile(next).finally(() => {
        this.active.delete(next);
        this.pump();
      });
    }
  }

  private profileOf(ref: string): ResolvedProfile | FakegpuError {
    let p = this.profiles.get(ref);
    if (!p) {
      try {
        p = resolveProfile(ref, `node label ${this.o.profileLabel}`);
      } catch (e) {
        p = e instanceof FakegpuError ? e : new FakegpuError(ref, String(e));
      }
      this.profiles.set(ref, p);
    }
    return p;
  }

  private desired(node: string, st: NodeState): ResourceSlice[] | FakegpuError {
    if (st.profile === null) return [];
    const profile = this.profileOf(st.profile);
    if (profile instanceof FakegpuError) return profile;
    try {
      return renderSlices(profile, {
        nodeName: node,
        dynamicMig: this.o.dynamicMig,
        driverName: this.o.driverName,
        kubernetesVersion: this.kubernetesVersion,
        release: this.o.release,
        nics: this.o.nics,
      }).items;
    } catch (e) {
      return e instanceof FakegpuError ? e : new FakegpuError(node, String(e));
    }
  }

  private async reconcile(node: string): Promise<void> {
    const st = this.nodes.get(node);
    if (!st) return;
    const want = this.desired(node, st);
    if (want instanceof FakegpuError) {
      if (st.failures === 0) await this.badProfile(node, st, want);
      st.failures++;
      return;
    }
    try {
      for (const driver of this.drivers)
        await this.reconcileDriver(
          node,
          st,
          driver,
          want.filter((s) => s.spec.driver === driver),
        );
      st.failures = 0;
    } catch (e) {
      st.failures++;
      this.stats.errors++;
      const delay = Math.min(30_000, 250 * 2 ** Math.min(st.failures, 7));
      this.o.log.warn(
        { node, err: e instanceof Error ? e.message : String(e), retryInMs: delay },
        'publishing failed',
      );
      setTimeout(() => {
        this.enqueue(node);
      }, delay);
    }
  }

  private async reconcileDriver(
    node: string,
    st: NodeState,
    driver: string,
    want: ResourceSlice[],
  ): Promise<void> {
    const existing: PublishedSlice[] = [];
    for (const [name, x] of this.slices)
      if (x.node === node && x.driver === driver)
        existing.push({ name, key: x.key, generation: x.generation });
    const plan = planPool(existing, want, driver, node);
    if (!plan) return;
    const owner = { apiVersion: 'v1', kind: 'Node', name: node, uid: st.uid, controller: true };
    for (const w of plan.writes) {
      await this.limiter.take();
      this.stats.requests++;
      this.recordSlice(await writeSlice(this.api, w, plan.generation, owner));
      this.stats.writes++;
    }
    for (const name of plan.deletes) await this.deleteSlice(name);
  }

  private async deleteSlice(name: string): Promise<void> {
    await this.limiter.take();
    this.stats.requests++;
    this.stats.writes++;
    this.slices.delete(name);
    try {
      await this.api.deleteClusterCustomObject({ ...SLICES, name });
    } catch (e) {
      if ((e as { code?: number }).code !== 404) throw e;
    }
  }

  /** An unknown preset on one node: an event on that node and a log line; other nodes go on. */
  private async badProfile(node: string, st: NodeState, err: FakegpuError): Promise<void> {
    this.o.log.error({ node, profile: st.profile, err: err.message }, 'cannot render the node’s profile');
    try {
      this.stats.requests++;
      // events.k8s.io/v1 through the generic client: plain objects, as for slices.
      await this.api.createNamespacedCustomObject({
        group: 'events.k8s.io',
        version: 'v1',
        plural: 'events',
        namespace: 'default',
        body: {
          apiVersion: 'events.k8s.io/v1',
          kind: 'Event',
          // events.k8s.io names need no generateName suffix rules; a timestamp keeps them unique per node.
          metadata: { name: `${node}.${Date.now().toString(16)}` },
          regarding: { kind: 'Node', name: node, uid: st.uid, apiVersion: 'v1' },
          reason: 'FakegpuProfileInvalid',
          action: 'PublishResourceSlices',
          note: err.message,
          type: 'Warning',
          reportingController: 'fakegpu.dev/fleet',
          reportingInstance: 'fakegpu-fleet',
          eventTime: new Date().toISOString().replace('Z', '000Z'),
        },
      });
    } catch (e) {
      this.o.log.warn(
        { node, err: e instanceof Error ? e.message : String(e) },
        'could not record the event',
      );
    }
  }
}
