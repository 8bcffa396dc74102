import { CustomObjectsApi, type V1ObjectMeta } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { DriverRelease } from '../device/release.js';
import { FakegpuError, oneOf, show } from '../errors.js';
import { ApiError, serverVersion, type PooledKubeConfig } from '../k8s/client.js';
import { KWOK_ANNOTATION } from '../k8s/kwok.js';
import { ResumableWatch } from '../k8s/watch.js';
import {
  planPool,
  SLICES,
  specKey,
  type NodeOwner,
  type PoolPlan,
  type PublishedSlice,
  type StoredSlice,
} from '../publish/pool.js';
import { resolveProfile, type ResolvedProfile } from '../profile/load.js';
import type { Semver } from '../k8s/version.js';
import { renderSlices, type NicRenderOptions } from '../render.js';
import type { Pools } from './pools.js';
import { nodeSlices, SliceTemplate, type NodeSlice } from './template.js';

/**
 * One process publishing the slices of many nodes that have no kubelet plugin (KWOK's simulated nodes):
 * the same slices `fakegpu plugin` publishes, stamped per node from its profile's template (rendered
 * once) and sent as text, without client-side object copies. It keeps only a key per slice in memory,
 * never the objects, so thousands of nodes cost little; writes go through a
 * bounded worker pool and a token bucket, failures back off per node, and a node whose slices already
 * match costs no write at all (so a restart causes no churn).
 */

const PAGE = 500;
/** What the fleet reads of a Node: watched in full, listed as metadata only. */
type NodeMeta = { metadata?: V1ObjectMeta };
const METADATA_LIST = 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1';
const METADATA = 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1';
const SLICES_PATH = `/apis/${SLICES.group}/${SLICES.version}/${SLICES.plural}`;

export interface FleetOptions {
  /** Label selector for the nodes to serve; default: nodes KWOK manages (annotation) or carrying the profile label. */
  nodeSelector?: string | undefined;
  /** A node label whose value names the node's profile (preset or file). */
  profileLabel: string;
  /** Machines by node pool, for nodes with the pools' label but not the profile label. */
  pools?: Pools | undefined;
  /** The profile of selected nodes with neither label; none: such nodes are skipped. */
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
  /** From the profile label, else (with no pool) the default profile. */
  profile: string | null;
  /** From the pools' label, when the profile label is absent. */
  pool: string | null;
  /** Last failure count, for backoff. */
  failures: number;
}

interface SliceState {
  node: string;
  driver: string;
  key: string;
  generation: number;
  /** Its resourceVersion when recorded: the watch event of our own write then costs nothing. */
  rv: string | undefined;
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
  private readonly nodes = new Map<string, NodeState>();
  private readonly slices = new Map<string, SliceState>();
  /** Slice names by node, so a node's reconcile looks at its own slices, not all N nodes'. */
  private readonly slicesOf = new Map<string, Set<string>>();
  private readonly queue = new Set<string>();
  private readonly active = new Set<string>();
  private readonly limiter: RateLimiter;
  private readonly profiles = new Map<string, ResolvedProfile | FakegpuError>();
  /** By profile, then dynamic MIG on/off; null: the profile has no template, its nodes are rendered. */
  private readonly templates = new Map<ResolvedProfile, Map<boolean, SliceTemplate | null>>();
  /** The node watch, then one slice watch per driver. */
  private watches: ResumableWatch[] = [];
  /** resourceVersions of the last lists: nodes, then each driver's slices; watches start there. */
  private listRvs: string[] = [];
  private readonly drivers: string[];
  private stopped = false;
  private listed = false;
  private relisting: Promise<void> | null = null;
  private startedAt = 0;
  /** Milliseconds from `start()` to the first moment every node was published; null until then. */
  firstConvergedMs: number | null = null;
  /** The API server's version decides the slice layout under dynamic MIG, as in the node plugin. */
  private kubernetesVersion: Semver = { major: 1, minor: 37, patch: 0 };
  /** Asked for alongside the first lists; no node is rendered before it is in. */
  private version: Promise<Semver> = Promise.resolve(this.kubernetesVersion);
  readonly stats: FleetCounters = { writes: 0, requests: 0, errors: 0 };

  constructor(
    private readonly kc: PooledKubeConfig,
    private readonly o: FleetOptions,
  ) {
    if (kc.getCurrentCluster()?.proxyUrl)
      throw new FakegpuError(
        '--kubeconfig',
        'a cluster reached through proxy-url is not supported by the fleet',
      );
    this.api = kc.makeApiClient(CustomObjectsApi);
    this.limiter = new RateLimiter(o.qps, o.burst);
    this.drivers = [o.driverName, ...(o.nics ? [o.nics.driverName] : [])];
  }

  /** Lists nodes and slices, then watches both; returns once the first reconcile of every node is queued. */
  async start(): Promise<void> {
    this.startedAt = performance.now();
    this.stats.requests++;
    this.version = serverVersion(this.kc);
    await this.relist();
    this.o.log.info(
      {
        nodes: this.nodes.size,
        slices: this.slices.size,
        ms: Math.round(performance.now() - this.startedAt),
      },
      'listed nodes and slices',
    );
    const rvs = (i: number): string => this.listRvs[i] ?? '';
    this.watches = [
      this.watchOf(
        '/api/v1/nodes',
        this.o.nodeSelector ? { labelSelector: this.o.nodeSelector } : {},
        rvs(0),
        (t, o) => {
          this.onNode(t, o);
        },
      ),
      ...this.drivers.map((d, i) =>
        this.watchOf(
          '/apis/resource.k8s.io/v1/resourceslices',
          { fieldSelector: `spec.driver=${d}` },
          rvs(i + 1),
          (t, o) => {
            this.onSlice(d, t, o);
          },
          METADATA,
        ),
      ),
    ];
  }

  stop(): void {
    this.stopped = true;
    for (const w of this.watches) w.stop();
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

  private selected(n: NodeMeta): boolean {
    if (this.o.nodeSelector) return true; // the server applied it
    const m = n.metadata;
    return m?.annotations?.[KWOK_ANNOTATION] !== undefined || m?.labels?.[this.o.profileLabel] !== undefined;
  }

  /** One relist at a time: several watches can expire together (etcd compacted past them all). */
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
    this.slices.clear();
    this.slicesOf.clear();
    // Both lists at once; each is taken in by page, so dynamic MIG slices (~30 kB each) are never all held.
    const [nodes, ...sliceRvs] = await Promise.all([
      this.listNodes(),
      ...this.drivers.map((d) => this.listSlices(d)),
    ]);
    for (const name of [...this.nodes.keys()]) if (!nodes.seen.has(name)) this.removeNode(name);
    this.listRvs = [nodes.rv, ...sliceRvs];
    this.kubernetesVersion = await this.version;
    this.listed = true;
    for (const name of this.nodes.keys()) this.enqueue(name);
    this.pump();
    this.noteConverged();
    // Slices of nodes deleted while we were away are the garbage collector's (their owner is the Node);
    // any other slice of the driver may be another publisher's (a node plugin, a second fleet): leave it.
  }

  private async listNodes(): Promise<{ seen: Set<string>; rv: string }> {
    const seen = new Set<string>();
    let rv: string;
    let cont: string | undefined;
    do {
      this.stats.requests++;
      const q = new URLSearchParams({ limit: String(PAGE) });
      if (this.o.nodeSelector) q.set('labelSelector', this.o.nodeSelector);
      if (cont) q.set('continue', cont);
      // Metadata is all the fleet reads of a node; a KWOK node's status would be four fifths of the list.
      const page = JSON.parse(
        await this.kc.send('GET', `/api/v1/nodes?${q.toString()}`, undefined, METADATA_LIST),
      ) as {
        items: NodeMeta[] | null;
        metadata?: { continue?: string; resourceVersion?: string };
      };
      rv = page.metadata?.resourceVersion ?? '';
      // An empty PartialObjectMetadataList has `items: null`.
      for (const n of page.items ?? []) {
        if (n.metadata?.name && this.selected(n)) {
          seen.add(n.metadata.name);
          this.upsertNode(n);
        }
      }
      cont = page.metadata?.continue || undefined;
    } while (cont);
    return { seen, rv };
  }

  /** Records the driver's slices; answers the list's resourceVersion. */
  private async listSlices(driver: string): Promise<string> {
    let rv: string;
    let cont: string | undefined;
    do {
      this.stats.requests++;
      const page = (await this.api.listClusterCustomObject({
        ...SLICES,
        fieldSelector: `spec.driver=${driver}`,
        limit: PAGE,
        _continue: cont,
      })) as { items: StoredSlice[]; metadata?: { continue?: string; resourceVersion?: string } };
      rv = page.metadata?.resourceVersion ?? '';
      for (const s of page.items) this.recordSlice(s);
      cont = page.metadata?.continue || undefined;
    } while (cont);
    return rv;
  }

  private upsertNode(n: NodeMeta): void {
    const name = n.metadata?.name ?? '';
    // The most specific answer wins: the node's own profile label, then its pool, then the default.
    const labels = n.metadata?.labels ?? {};
    const label = labels[this.o.profileLabel];
    const pool = label === undefined && this.o.pools ? (labels[this.o.pools.label] ?? null) : null;
    const profile = label ?? (pool === null ? (this.o.defaultProfile ?? null) : null);
    const prev = this.nodes.get(name);
    const uid = n.metadata?.uid ?? '';
    this.nodes.set(name, { uid, profile, pool, failures: prev?.failures ?? 0 });
    if (!prev || prev.profile !== profile || prev.pool !== pool || prev.uid !== uid) this.enqueue(name);
  }

  private removeNode(name: string): void {
    this.nodes.delete(name);
    this.queue.delete(name);
    for (const sname of [...(this.slicesOf.get(name) ?? [])])
      void this.deleteSlice(sname).catch(() => undefined);
  }

  /** A slice as listed or watched. */
  private recordSlice(s: StoredSlice): void {
    const name = s.metadata.name;
    if (!name) return;
    this.record(name, {
      node: s.spec.nodeName,
      driver: s.spec.driver,
      key: specKey(s.spec),
      generation: s.spec.pool.generation,
      rv: s.metadata.resourceVersion,
    });
  }

  private record(name: string, state: SliceState): void {
    this.forgetSlice(name);
    this.slices.set(name, state);
    let names = this.slicesOf.get(state.node);
    if (!names) this.slicesOf.set(state.node, (names = new Set()));
    names.add(name);
  }

  private forgetSlice(name: string): void {
    const old = this.slices.get(name);
    if (!old) return;
    this.slices.delete(name);
    const names = this.slicesOf.get(old.node);
    names?.delete(name);
    if (names?.size === 0) this.slicesOf.delete(old.node);
  }

  private onNode(type: string, obj: unknown): void {
    const n = obj as NodeMeta;
    const name = n.metadata?.name;
    if (!name) return;
    if (type === 'DELETED' || !this.selected(n)) {
      if (this.nodes.has(name)) this.removeNode(name);
    } else this.upsertNode(n);
  }

  /**
   * Slices are watched as metadata: the fleet's own writes come back as events, and under dynamic MIG
   * each carries 30 kB of spec that would be parsed only to be dropped. A slice someone else changed is
   * known to differ, not how: its key is cleared, so its node's next pass writes it again.
   */
  private onSlice(driver: string, type: string, obj: unknown): void {
    const m = (obj as { metadata?: V1ObjectMeta }).metadata;
    const name = m?.name;
    if (!name) return;
    const before = this.slices.get(name);
    if (type !== 'DELETED' && before?.rv !== undefined && before.rv === m.resourceVersion) return;
    // A slice not yet known is attributed by its owner: the Node, on every slice a driver publishes.
    const node =
      before?.node ?? m.ownerReferences?.find((r) => r.kind === 'Node' && r.apiVersion === 'v1')?.name;
    if (type === 'DELETED') this.forgetSlice(name);
    if (node === undefined) return;
    // Slices of nodes not served are kept too, as the list keeps them: a node selected later then has
    // its pool replaced, not published a second time beside it.
    if (type !== 'DELETED')
      this.record(name, {
        node,
        driver,
        key: '',
        generation: before?.generation ?? 0,
        rv: m.resourceVersion,
      });
    // Also while the node is being reconciled: the event may be of our own write, whose answer has not
    // come yet (the pass after finds everything in place), or of a change that pass did not see.
    if (this.nodes.has(node)) this.enqueue(node);
  }

  private watchOf(
    path: string,
    query: Record<string, string>,
    rv: string,
    event: (type: string, obj: unknown) => void,
    accept?: string,
  ): ResumableWatch {
    return new ResumableWatch(
      this.kc,
      path,
      query,
      rv,
      {
        event,
        opened: () => {
          this.stats.requests++;
        },
        failed: (err) => {
          this.o.log.warn(
            { path, err: err instanceof Error ? err.message : String(err) },
            'watch failed; resuming',
          );
        },
        expired: () => {
          this.o.log.info({ path }, 'watch expired; relisting');
          this.relistAndResume();
        },
      },
      accept,
    );
  }

  /** After a watch expired: list again, then every watch resumes from the new lists. */
  private relistAndResume(): void {
    if (this.stopped) return;
    this.relist()
      .then(() => {
        for (const [i, w] of this.watches.entries()) w.restart(this.listRvs[i] ?? '');
      })
      .catch((e: unknown) => {
        this.o.log.warn({ err: e instanceof Error ? e.message : String(e) }, 'relist failed; retrying');
        setTimeout(() => {
          this.relistAndResume();
        }, 2000);
      });
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
        this.noteConverged();
      });
    }
  }

  private noteConverged(): void {
    if (this.firstConvergedMs !== null || !this.converged()) return;
    this.firstConvergedMs = performance.now() - this.startedAt;
    // The first publish is the burst of this process's life; left to V8's heuristics its garbage stays
    // resident for an unpredictable while. One full collection (with --expose-gc, as the cluster, the
    // benchmark and the chart run the fleet) settles it at the size the fleet then keeps.
    const gc: unknown = (globalThis as { gc?: unknown }).gc;
    if (typeof gc === 'function')
      setImmediate(() => {
        (gc as () => void)();
      });
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

  /** The node's machine and whether it runs dynamic MIG; null: the node has none. */
  private machineOf(st: NodeState): { profile: ResolvedProfile; dynamicMig: boolean } | FakegpuError | null {
    if (st.pool !== null && this.o.pools) {
      const m = this.o.pools.byName.get(st.pool);
      if (!m)
        return new FakegpuError(
          `node label ${this.o.pools.label}`,
          `unknown pool ${show(st.pool)}; pools: ${oneOf([...this.o.pools.byName.keys()])}`,
        );
      return { profile: m.profile, dynamicMig: m.dynamicMig ?? this.o.dynamicMig };
    }
    if (st.profile === null) return null;
    const profile = this.profileOf(st.profile);
    return profile instanceof FakegpuError ? profile : { profile, dynamicMig: this.o.dynamicMig };
  }

  private desired(node: string, st: NodeState): NodeSlice[] | FakegpuError {
    const m = this.machineOf(st);
    if (m === null) return [];
    if (m instanceof FakegpuError) return m;
    const opts = {
      dynamicMig: m.dynamicMig,
      driverName: this.o.driverName,
      kubernetesVersion: this.kubernetesVersion,
      release: this.o.release,
      nics: this.o.nics,
    };
    try {
      let byMode = this.templates.get(m.profile);
      if (!byMode) this.templates.set(m.profile, (byMode = new Map<boolean, SliceTemplate | null>()));
      let t = byMode.get(m.dynamicMig);
      if (t === undefined) {
        t = SliceTemplate.make(m.profile, opts);
        byMode.set(m.dynamicMig, t);
        if (!t)
          this.o.log.info(
            { profile: m.profile.name },
            'no slice template for the profile; rendering each node',
          );
      }
      return t ? t.node(node) : nodeSlices(renderSlices(m.profile, { ...opts, nodeName: node }).items);
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
          want.filter((s) => s.driver === driver),
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
    want: NodeSlice[],
  ): Promise<void> {
    const existing: PublishedSlice[] = [];
    for (const name of this.slicesOf.get(node) ?? []) {
      const x = this.slices.get(name);
      if (x?.driver === driver) existing.push({ name, key: x.key, generation: x.generation });
    }
    const plan = planPool(existing, want, driver, node);
    if (!plan) return;
    const owner: NodeOwner = { apiVersion: 'v1', kind: 'Node', name: node, uid: st.uid, controller: true };
    for (const w of plan.writes) {
      await this.limiter.take();
      this.stats.requests++;
      const ref = await this.writeSlice(w, plan.generation, owner);
      // The API server stores the spec as sent (the restart test holds it to that), so its key is known.
      this.record(ref.name, {
        node,
        driver,
        key: w.desired.key,
        generation: plan.generation,
        rv: ref.resourceVersion,
      });
      this.stats.writes++;
    }
    for (const name of plan.deletes) await this.deleteSlice(name);
  }

  /** Creates or replaces one slice from the template's text; an update replaces it whatever its version. */
  private async writeSlice(
    w: PoolPlan<NodeSlice>['writes'][number],
    generation: number,
    owner: NodeOwner,
  ): Promise<{ name: string; resourceVersion: string }> {
    const { desired: d, existing } = w;
    const metadata = existing
      ? { name: existing.name, ownerReferences: [owner] }
      : { generateName: d.generateName, ownerReferences: [owner] };
    const body = `{"apiVersion":"resource.k8s.io/v1","kind":"ResourceSlice","metadata":${JSON.stringify(metadata)},"spec":${d.spec(generation)}}`;
    return existing
      ? await this.kc.write('PUT', `${SLICES_PATH}/${existing.name}`, body)
      : await this.kc.write('POST', SLICES_PATH, body);
  }

  private async deleteSlice(name: string): Promise<void> {
    await this.limiter.take();
    this.stats.requests++;
    this.stats.writes++;
    this.forgetSlice(name);
    try {
      await this.kc.send('DELETE', `${SLICES_PATH}/${name}`);
    } catch (e) {
      if (!(e instanceof ApiError && e.code === 404)) throw e;
    }
  }

  /** An unknown preset on one node: an event on that node and a log line; other nodes go on. */
  private async badProfile(node: string, st: NodeState, err: FakegpuError): Promise<void> {
    this.o.log.error(
      { node, profile: st.profile, pool: st.pool, err: err.message },
      'cannot render the node’s profile',
    );
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
