import type { Machine } from '../model/hardware/machine.js';
import type { NvmlFault } from '../model/nvml/state.js';
import type { Logger } from 'pino';
import type { FeatureGates } from '../model/feature-gates/gates.js';
import type { ConsumableShares } from '../model/device/consumable-shares.js';
import type { DriverRelease } from '../model/device/release.js';
import { FakegpuError } from '../errors.js';
import type { FaultApi } from '../kube/gpufault/api.js';
import { ignoredXids } from '../model/health/taints.js';
import {
  KubeApi,
  METADATA,
  NODES_PATH,
  SLICES_PATH,
  type ClusterApi,
  type ListQuery,
  type Meta,
  type StoredSlice,
} from '../kube/api.js';
import { ListWatch } from '../kube/list-watch.js';
import { ApiError, clientOf, type PooledKubeConfig } from '../kube/client.js';
import { formatSemver, type Semver } from '../kube/types/version.js';
import { resolveProfile } from '../process/profile-file.js';
import { gateMessage, probeGates, type GatedField } from '../kube/publish/gates.js';
import { INSTANCE_TYPE_LABEL } from '../model/preset/index.js';
import { renderSlices, type NicRenderOptions } from '../model/render.js';
import { reportBadProfile } from './events.js';
import { SliceIndex } from './index.js';
import { memoryReducingGc, MemorySettler } from './settle.js';
import { Machines, type DriverDevices } from './machines.js';
import { taintDevices } from './health.js';
import type { Pools } from './pools.js';
import { RateLimiter, SliceWriter, WorkQueue } from './reconciler.js';
import { FleetFaults, type FaultedNode } from './faults.js';
import { FleetComputeDomains } from './compute-domains.js';
import { FleetNicStatus, nicLinkOn, pendingNicClaims, type FleetNicStatusOptions } from './nic-status.js';
import { KubeClaimStatus } from '../kube/claim-status.js';
import { fleetDrivers, servesNode } from './scope.js';
import { KubeObjects, type ObjectApi } from '../kube/objects.js';
import type { FleetShards } from './shards.js';

/**
 * One process publishing the slices of many nodes that have no kubelet plugin (KWOK's simulated nodes):
 * the same slices `fakegpu plugin` publishes, stamped per node from its profile's template (rendered
 * once, `machines.ts`) and sent as text, without client-side object copies. It keeps only a key per
 * slice in memory (`index.ts`), never the objects, so thousands of nodes cost little; writes go through
 * a bounded worker pool and a token bucket, failures back off per node (`reconciler.ts`), and a node
 * whose slices already match costs no write at all (so a restart causes no churn). This file wires
 * them to the lists and watches of nodes and slices.
 */

export interface FleetOptions {
  /** The collection run after bursts of work; default V8's memory-reducing one, where exposed. */
  collect?: (() => void) | null;
  /** Label selector among the KWOK-managed nodes to serve (`scope.ts`: no other node is ever served). */
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
  /** NVIDIA's gates, resolved; absent: the release's defaults. */
  gates?: FeatureGates | undefined;
  /** `--consumable-shares`, checked against the gates; absent: disabled. */
  consumableShares?: ConsumableShares | undefined;
  nics?: NicRenderOptions | undefined;
  /** Nodes reconciled at once. */
  concurrency: number;
  /** Client-side write rate limit (requests per second, burst); 0 disables it. */
  qps: number;
  burst: number;
  log: Logger;
  /** The API server; default: the kubeconfig's client (its pool, its request timeout). */
  api?: ClusterApi | undefined;
  /** The backoffs' random source, for tests. */
  random?: (() => number) | undefined;
  /** GpuFaults to apply to the nodes' slices; absent: none. */
  faults?: FaultApi | undefined;
  /** XIDs NVIDIA's monitor taints with effect None. */
  ignoredXids?: ReadonlySet<number> | undefined;
  onFaultApplied?: ((devices: number) => void) | undefined;
  onFaultPublished?: ((seconds: number) => void) | undefined;
  /** NVIDIA's ComputeDomain node side for nodes with NVLink fabric; absent: off. */
  computeDomains?: { namespace: string; api?: ObjectApi | undefined; periodMs?: number } | undefined;
  /**
   * Which served nodes this replica writes, when the fleet is sharded between replicas (`run.ts`); every
   * node watched is still known, so that a shard taken over is written without listing again.
   */
  owner?: Pick<FleetShards, 'shardOf' | 'holds' | 'heldUntil' | 'faultShards'> | undefined;
  /**
   * When this term of leadership ends if not renewed (monotonic ms, `Elected.leadingUntil`): no slice
   * request goes out after it, and one in flight is aborted then. Absent: no term, no end.
   */
  leadingUntil?: (() => number) | undefined;
  /** DRANET's claim status for NIC claims (with `nics`); default: the kubeconfig's, unless `api` is given. */
  nicStatus?: Pick<FleetNicStatusOptions, 'api' | 'claims' | 'periodMs' | 'now'> | undefined;
}

interface NodeState extends FaultedNode {
  uid: string;
  /** The node's shard, hashed once: `owns()` runs for every node on every pass and scrape. */
  shard: number;
}

/** Counters since start; `snapshot()` adds the current sizes. */
export interface FleetCounters {
  writes: number;
  requests: number;
  errors: number;
  /** Watch events received: the echo of the fleet's own writes is work too. */
  events: number;
  /** GPU metrics scrapes served: each leaves megabytes of text behind. */
  scrapes: number;
}

export interface FleetStats extends FleetCounters {
  nodes: number;
  /** Nodes this replica writes: all of them, unless the fleet is sharded. */
  owned: number;
  pending: number;
  slices: number;
}

/** A proxied cluster is refused before anything starts: the pooled agents connect directly. */
export function checkNoProxy(kc: PooledKubeConfig): void {
  if (kc.getCurrentCluster()?.proxyUrl)
    throw new FakegpuError(
      '--kubeconfig',
      'a cluster reached through proxy-url is not supported by the fleet',
    );
}

export class Fleet {
  private readonly api: ClusterApi;
  private readonly nodes = new Map<string, NodeState>();
  /** Served nodes per shard when sharded, so that the owned count is a sum over shards, not a walk of nodes. */
  private readonly perShard: number[];
  /** Nodes no longer served whose slices are still to be deleted. */
  private readonly leaving = new Set<string>();
  /** Nodes whose bad profile has been reported; again only after they publish once. */
  private readonly reported = new Set<string>();
  private readonly index = new SliceIndex();
  private readonly queue: WorkQueue;
  private readonly writer: SliceWriter;
  private readonly machines: Machines;
  private readonly faults: FleetFaults | null;
  private readonly domains: FleetComputeDomains | null;
  private readonly nicStatus: FleetNicStatus | null;
  /** Nodes, then each driver's slices: listed and relisted together, since one is judged against the other. */
  private readonly lw: ListWatch;
  /** The nodes the list under way has seen; the others are gone once it is whole. */
  private seen = new Set<string>();
  private readonly drivers: string[];
  private stopped = false;
  private listed = false;
  private everListed = false;
  /**
   * The first list only: every driver's slices are in, so each node can be judged as its page comes
   * rather than after the last (at 50,000 nodes the node list takes ~5 s). A relist waits for both.
   */
  private early = false;
  /** Drivers whose slices the list under way has in full, and which list that is. */
  private slicesListed = 0;
  private listGeneration = 0;
  /** The API server's version and the gated fields it drops, learnt once before any node is rendered. */
  private serverKnown: Promise<void> | null = null;
  private startedAt = 0;
  /** Milliseconds from `start()` to the first moment every node was published; null until then. */
  firstConvergedMs: number | null = null;
  /** Asked for alongside the first lists; no node is rendered before it is in. */
  private version: Promise<Semver> = Promise.resolve({ major: 1, minor: 37, patch: 0 });
  readonly stats: FleetCounters = { writes: 0, requests: 0, errors: 0, events: 0, scrapes: 0 };
  readonly settler: MemorySettler;

  constructor(
    kc: PooledKubeConfig,
    private readonly o: FleetOptions,
  ) {
    checkNoProxy(kc);
    this.api = o.api ?? new KubeApi(kc);
    this.settler = new MemorySettler({
      // A scrape counts as a burst of its own: its garbage goes once the fleet is quiet again.
      activity: () => this.stats.requests + this.stats.events + this.stats.scrapes * 1000,
      collect: o.collect === undefined ? memoryReducingGc() : o.collect,
    });
    this.drivers = fleetDrivers({ ...o, computeDomains: o.computeDomains !== undefined });
    this.perShard = new Array<number>(o.owner?.faultShards.count ?? 0).fill(0);
    this.machines = new Machines({ ...o, computeDomains: o.computeDomains !== undefined });
    this.domains = o.computeDomains
      ? new FleetComputeDomains({
          api: o.computeDomains.api ?? new KubeObjects(clientOf(kc)),
          http: o.computeDomains.api ? undefined : clientOf(kc),
          namespace: o.computeDomains.namespace,
          periodMs: o.computeDomains.periodMs,
          log: o.log,
          view: {
            cliqueOf: (node) => {
              const st = this.owns(node) ? this.nodes.get(node) : undefined;
              return st ? this.machines.clique(node, st) : undefined;
            },
            labels: (node) => this.nodes.get(node)?.labels,
            nodes: () => this.ownedNames(),
          },
        })
      : null;
    this.nicStatus = this.nicStatusOf(kc);
    this.faults = o.faults
      ? new FleetFaults({
          api: o.faults,
          machines: this.machines,
          release: o.release,
          ignoredXids: o.ignoredXids ?? ignoredXids(''),
          selection: o.nodeSelector,
          shards: o.owner?.faultShards,
          random: o.random,
          nodes: () => this.ownedNodes(),
          nodeExists: async (name) => {
            try {
              await this.api.readNode(name);
              return true;
            } catch (e) {
              if (e instanceof ApiError && e.code === 404) return false;
              throw e;
            }
          },
          enqueue: (node) => {
            this.queue.add(node);
          },
          log: o.log,
          onApplied: o.onFaultApplied,
          onPublished: o.onFaultPublished,
        })
      : null;
    this.writer = new SliceWriter(this.api, this.index, new RateLimiter(o.qps, o.burst), this.stats, (node) =>
      this.writableUntil(node),
    );
    this.queue = new WorkQueue({
      concurrency: o.concurrency,
      work: (node) => this.reconcile(node),
      ready: () => this.listed || this.early,
      failed: (node, err, retryInMs) => {
        this.stats.errors++;
        this.o.log.warn(
          { node, err: err instanceof Error ? err.message : String(err), retryInMs },
          'publishing failed',
        );
      },
      settled: () => {
        this.noteConverged();
      },
      mine: (node) => this.owns(node),
      random: o.random,
    });
    this.lw = this.listWatch();
  }

  /**
   * The served nodes' machines, for their GPU metrics: each node with its profile's machine and the
   * NVML faults its GpuFaults give it (none under dynamic MIG, which the health monitor refuses).
   */
  *servedMachines(): Generator<{
    node: string;
    machine: Machine;
    dynamicMig: boolean;
    faults: { uuid: string; fault: NvmlFault }[];
  }> {
    for (const [node, st] of this.nodes) {
      if (!this.owns(node)) continue;
      const hw = this.machines.hardware(st);
      if (hw) yield { node, ...hw, faults: this.faults?.nvmlFaultsOf(node) ?? [] };
    }
  }

  /**
   * Each node this replica writes, with its labels, its machine's devices by driver and the taints its
   * faults give them: what the scorecard and the fleet's page read, without rendering any node.
   */
  *servedDevices(): Generator<{
    node: string;
    labels: Readonly<Record<string, string>>;
    /** As published: the faults' taints on them, where the API server keeps taints. */
    slices: readonly DriverDevices[];
    /** The devices a fault hits, tainted or (release 25.12) left out. */
    faulted: ReadonlySet<string>;
  }> {
    const none: ReadonlySet<string> = new Set();
    for (const [node, st] of this.nodes) {
      if (!this.owns(node)) continue;
      const slices = this.machines.devicesOf(st);
      if (!slices) continue;
      const taints = this.machines.gatesOff.has('taints') ? undefined : this.faults?.taintsOf(node);
      if (taints === undefined || taints.size === 0) {
        yield { node, labels: st.labels, slices, faulted: none };
        continue;
      }
      yield {
        node,
        labels: st.labels,
        slices: slices.map((s) => ({
          driver: s.driver,
          devices: taintDevices(s.devices, taints, this.o.release),
        })),
        faulted: new Set([...taints].filter(([, t]) => t.length > 0).map(([d]) => d)),
      };
    }
  }

  /** Lists nodes and slices, then watches both; returns once the first reconcile of every node is queued. */
  async start(): Promise<void> {
    this.startedAt = performance.now();
    this.stats.requests++;
    await this.lw.start();
    if (this.stopped) return;
    this.settler.start();
    this.faults?.start();
    this.domains?.start();
    this.nicStatus?.start();
    this.o.log.info(
      {
        nodes: this.nodes.size,
        slices: this.index.size,
        ms: Math.round(performance.now() - this.startedAt),
      },
      'listed nodes and slices',
    );
  }

  /**
   * Stops at once; resolves when the passes in flight have ended (each at its next request, or at its
   * request's deadline) and the compute-domain side's, if any: a leader releases its Lease only after.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    this.settler.stop();
    this.faults?.stop();
    const passes = this.queue.stop();
    this.lw.stop();
    await passes;
    await this.domains?.stop();
    await this.nicStatus?.stop();
  }

  /** Whether this replica writes the node now: always, unless the fleet is sharded. */
  owns(node: string): boolean {
    const owner = this.o.owner;
    if (!owner) return true;
    return owner.holds(this.shardOfNode(node));
  }

  /** Until when (monotonic ms) the node's slices may be written: the end of the term, or of its shard's hold. */
  private writableUntil(node: string): number {
    if (this.stopped) return 0;
    const term = this.o.leadingUntil?.() ?? Infinity;
    const owner = this.o.owner;
    return owner ? Math.min(term, owner.heldUntil(this.shardOfNode(node))) : term;
  }

  private *ownedNodes(): Generator<[string, NodeState]> {
    for (const e of this.nodes) if (this.owns(e[0])) yield e;
  }

  private *ownedNames(): Generator<string> {
    for (const [name] of this.ownedNodes()) yield name;
  }

  /** Nodes that became this replica's (a shard taken): each is judged against the slices known. */
  resync(shard: number): void {
    for (const [name, st] of this.nodes)
      if (st.shard === shard) {
        this.faults?.refresh(name, st);
        this.queue.add(name);
      }
    for (const name of this.leaving) if (this.shardOfNode(name) === shard) this.queue.add(name);
    // The shard's fault status entries are this replica's to write now, whatever changed meanwhile.
    this.faults?.rewriteAll();
  }

  /** A shard no longer this replica's: resolves once nothing more is sent for its nodes. */
  async disown(shard: number): Promise<void> {
    for (const [name, st] of this.nodes) if (st.shard === shard) this.faults?.removed(name);
    await this.queue.disown((name) => this.shardOfNode(name) === shard);
  }

  /** Scraped four times a scrape: a sum over the shards held, not a walk of every node. */
  private ownedCount(): number {
    const owner = this.o.owner;
    if (!owner) return this.nodes.size;
    let n = 0;
    this.perShard.forEach((count, k) => {
      if (owner.holds(k)) n += count;
    });
    return n;
  }

  private shardOfNode(name: string): number {
    return this.nodes.get(name)?.shard ?? this.o.owner?.shardOf(name) ?? 0;
  }

  /** The NIC claims' status writer, where NICs are published and an API to write to is known. */
  private nicStatusOf(kc: PooledKubeConfig): FleetNicStatus | null {
    const { nics, log } = this.o;
    const given = this.o.nicStatus;
    if (!nics || (!given && this.o.api)) return null;
    return new FleetNicStatus({
      driverName: nics.driverName,
      api: given?.api ?? new KubeClaimStatus(kc),
      claims: given?.claims ?? pendingNicClaims(clientOf(kc), nics.driverName, log),
      periodMs: given?.periodMs,
      now: given?.now,
      log,
      link: (node, device) => {
        const st = this.owns(node) ? this.nodes.get(node) : undefined;
        return nicLinkOn(st ? this.machines.hardware(st)?.machine : undefined, node, device);
      },
    });
  }

  /** True once every selected node's slices match and nothing is queued or in flight. */
  converged(): boolean {
    return this.listed && this.queue.idle();
  }

  snapshot(): FleetStats {
    return {
      ...this.stats,
      nodes: this.nodes.size,
      owned: this.ownedCount(),
      pending: this.queue.pending,
      slices: this.index.size,
    };
  }

  private selected(n: Meta): boolean {
    return servesNode(n);
  }

  /**
   * Nodes as metadata (labels and annotations are all the fleet reads of a node; KWOK's heartbeats would
   * otherwise bring every node's whole status), then each driver's slices. The first lists are retried
   * until the API server answers: the fleet's pod can start before the cluster's network reaches it (a
   * Service not yet proxied), and a supervisor's restarts would only add a crash loop's backoff to that.
   */
  private listWatch(): ListWatch {
    const counted = <T>(list: Promise<T>): Promise<T> => {
      this.stats.requests++;
      return list;
    };
    return new ListWatch({
      source: this.api,
      what: 'nodes and slices',
      log: this.o.log,
      random: this.o.random,
      opened: () => {
        this.stats.requests++;
      },
      collections: [
        {
          path: NODES_PATH,
          labelSelector: this.o.nodeSelector,
          accept: METADATA,
          list: (q) => counted(this.api.listNodes(q)),
          page: (items) => {
            for (const n of items as Meta[]) this.listedNode(n);
          },
          event: (t, o) => {
            this.onNode(t, o);
          },
        },
        ...this.drivers.map((d) => ({
          path: SLICES_PATH,
          fieldSelector: `spec.driver=${d}`,
          accept: METADATA,
          list: (q: ListQuery) => counted(this.api.listSlices(q)),
          page: (items: unknown[]) => {
            for (const sl of items as StoredSlice[]) this.index.recordStored(sl);
          },
          event: (t: string, o: unknown) => {
            this.onSlice(d, t, o);
          },
          listed: () => {
            if (++this.slicesListed === this.drivers.length) this.slicesIn();
          },
        })),
      ],
      listing: () => {
        // No reconcile may start before both lists are in: a node judged against an empty slice cache
        // would get its slices created twice.
        this.listed = false;
        this.early = false;
        this.slicesListed = 0;
        this.listGeneration++;
        this.index.clear();
        this.seen = new Set();
        if (this.everListed) return;
        // Asked alongside the first lists; until awaited, a failure must not end the process as unhandled.
        this.version = this.api.version();
        this.version.catch(() => undefined);
      },
      listed: () => this.takeLists(),
    });
  }

  private listedNode(n: Meta): void {
    if (!n.metadata?.name || !this.selected(n)) return;
    this.seen.add(n.metadata.name);
    this.upsertNode(n);
  }

  /** Both lists are in: nodes gone meanwhile leave, and every node is judged against the slices listed. */
  private async takeLists(): Promise<void> {
    for (const name of [...this.nodes.keys()]) if (!this.seen.has(name)) this.removeNode(name);
    await this.learnServer();
    // Judged early, every node was queued as its page came (all are new on a first list).
    const queued = this.early;
    this.everListed = true;
    this.listed = true;
    this.early = false;
    for (const name of queued ? this.leaving : [...this.nodes.keys(), ...this.leaving]) this.queue.add(name);
    this.queue.pump();
    this.noteConverged();
    // Slices of nodes deleted while we were away are the garbage collector's (their owner is the Node);
    // any other slice of the driver may be another publisher's (a node plugin, a second fleet): leave it.
  }

  /** A first list's slices are whole: nodes are judged from now on, as their pages come. */
  private slicesIn(): void {
    if (this.everListed) return;
    const gen = this.listGeneration;
    // A failure here fails nothing: takeLists asks again, and its throw relists.
    this.learnServer().then(
      () => {
        if (gen !== this.listGeneration || this.listed || this.stopped) return;
        this.early = true;
        this.queue.pump();
      },
      () => undefined,
    );
  }

  private learnServer(): Promise<void> {
    this.serverKnown ??= this.version
      .then(async (v) => {
        this.machines.kubernetesVersion = v;
        this.machines.gatesOff = await this.probeGates(v);
      })
      .catch((e: unknown) => {
        this.serverKnown = null;
        throw e;
      });
    return this.serverKnown;
  }

  /**
   * Once per fleet: which gated fields this API server drops, learnt from a dry run of a DGX H100 with
   * dynamic MIG, a probe taint and the fleet's consumable shares (the server is the same for every node).
   */
  private async probeGates(version: Semver): Promise<Set<GatedField>> {
    let off: Set<GatedField>;
    try {
      const probe = renderSlices(resolveProfile('dgx-h100'), {
        nodeName: 'fakegpu-gate-probe',
        dynamicMig: true,
        driverName: this.o.driverName,
        kubernetesVersion: version,
        release: this.o.release,
        gates: this.o.gates,
        consumableShares: this.o.consumableShares,
      }).items;
      off = await probeGates(this.api, probe);
    } catch {
      return new Set();
    }
    if (off.size > 0) this.o.log.warn({ dropped: [...off] }, gateMessage([...off], formatSemver(version)));
    return off;
  }

  private upsertNode(n: Meta): void {
    const name = n.metadata?.name ?? '';
    // The most specific answer wins: the node's own profile label, then its pool, then its instance
    // type (what an autoscaler sets), then the default.
    const labels = n.metadata?.labels ?? {};
    const label = labels[this.o.profileLabel];
    const pool = label === undefined && this.o.pools ? (labels[this.o.pools.label] ?? null) : null;
    const instanceType = label === undefined && pool === null ? (labels[INSTANCE_TYPE_LABEL] ?? null) : null;
    const profile =
      label ?? (pool === null && instanceType === null ? (this.o.defaultProfile ?? null) : null);
    const prev = this.nodes.get(name);
    const uid = n.metadata?.uid ?? '';
    const shard = prev?.shard ?? this.o.owner?.shardOf(name) ?? 0;
    const st = { uid, profile, pool, instanceType, labels, shard };
    if (!prev && this.o.owner) this.perShard[shard] = (this.perShard[shard] ?? 0) + 1;
    this.nodes.set(name, st);
    this.leaving.delete(name);
    if (
      !prev ||
      prev.profile !== profile ||
      prev.pool !== pool ||
      prev.instanceType !== instanceType ||
      prev.uid !== uid ||
      prev.labels[this.machines.rackLabel] !== labels[this.machines.rackLabel]
    )
      this.queue.add(name);
    if (this.owns(name)) this.faults?.refresh(name, st);
  }

  /**
   * A node deleted or no longer selected: its slices are deleted by its next pass, retried like any
   * other until the API server confirms them gone.
   */
  private removeNode(name: string): void {
    const st = this.nodes.get(name);
    if (st && this.o.owner) this.perShard[st.shard] = (this.perShard[st.shard] ?? 1) - 1;
    this.nodes.delete(name);
    this.faults?.removed(name);
    this.reported.delete(name);
    // Known to every replica, written by the one holding its shard (the queue drops the others'): if
    // that one goes before its pass, the next holder still knows the slices are to go.
    this.leaving.add(name);
    this.queue.add(name);
  }

  private onNode(type: string, obj: unknown): void {
    this.stats.events++;
    const n = obj as Meta;
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
    this.stats.events++;
    const m = (obj as Meta).metadata;
    const name = m?.name;
    if (!name) return;
    const before = this.index.get(name);
    if (type !== 'DELETED' && before?.rv !== undefined && before.rv === m.resourceVersion) return;
    // A slice not yet known is attributed by its owner: the Node, on every slice a driver publishes.
    const node =
      before?.node ?? m.ownerReferences?.find((r) => r.kind === 'Node' && r.apiVersion === 'v1')?.name;
    if (type === 'DELETED') this.index.forget(name);
    if (node === undefined) return;
    if (
      type === 'DELETED' &&
      this.leaving.has(node) &&
      this.drivers.every((d) => this.index.of(node, d).length === 0)
    )
      this.leaving.delete(node);
    // Slices of nodes not served are kept too, as the list keeps them: a node selected later then has
    // its pool replaced, not published a second time beside it.
    if (type !== 'DELETED')
      this.index.record(name, {
        node,
        driver,
        key: '',
        generation: before?.generation ?? 0,
        rv: m.resourceVersion,
      });
    // Also while the node is being reconciled: the event may be of our own write, whose answer has not
    // come yet (the pass after finds everything in place), or of a change that pass did not see.
    if (this.nodes.has(node) || this.leaving.has(node)) this.queue.add(node);
  }

  /**
   * A slice whose content is unknown (its watch event, metadata only, came from another writer: a
   * replica that held the node's shard before, or someone else) is read before it is judged: one read of
   * the node's slices, not a write of each, when they already match, as after every shard handover.
   */
  private async learnUnknown(node: string): Promise<void> {
    if (!this.drivers.some((d) => this.index.of(node, d).some((s) => s.key === ''))) return;
    for (const sl of await this.writer.slicesOf(node)) {
      const known = sl.metadata.name ? this.index.get(sl.metadata.name) : undefined;
      // Only what the list can tell better than the watch: an unknown key of the very version listed (a
      // newer event since stays unknown, and is read or written by the next pass).
      if (
        !this.drivers.includes(sl.spec.driver) ||
        (known && (known.key !== '' || known.rv !== sl.metadata.resourceVersion))
      )
        continue;
      this.index.recordStored(sl);
    }
  }

  private noteConverged(): void {
    if (this.firstConvergedMs !== null || !this.converged()) return;
    this.firstConvergedMs = performance.now() - this.startedAt;
  }

  private async reconcile(node: string): Promise<void> {
    if (!this.owns(node)) return;
    const st = this.nodes.get(node);
    if (!st) {
      // Removed: its slices go, every one of them, before the node is forgotten.
      if (!this.leaving.has(node)) return;
      for (const driver of this.drivers) await this.writer.reconcile(node, '', driver, []);
      this.leaving.delete(node);
      return;
    }
    const want = this.machines.desired(node, st, this.faults?.taintsOf(node));
    if (want instanceof FakegpuError) {
      if (!this.reported.has(node)) {
        this.reported.add(node);
        this.stats.requests++;
        await reportBadProfile(this.api, this.o.log, { name: node, ...st }, want);
      }
      return;
    }
    await this.learnUnknown(node);
    for (const driver of this.drivers)
      await this.writer.reconcile(
        node,
        st.uid,
        driver,
        want.filter((s) => s.driver === driver),
      );
    this.faults?.written(node);
    this.reported.delete(node);
  }
}
