import type { Logger } from 'pino';
import type { ApiClient } from '../kube/client.js';
import { PODS_PATH } from '../kube/dcgm-sources.js';
import { Informer } from '../kube/informer.js';
import { CLAIMS_PATH, type ResourceClaim } from '../kube/types/claim.js';
import { RACK_LABEL } from '../model/compute-domain/resource.js';
import type { Scorecard } from '../model/scorecard/figures.js';
import type { GpuState } from '../model/scorecard/gpus.js';
import type { Device } from '../kube/types/resource.js';
import { physicalGpu, type PodView } from '../model/scorecard/inventory.js';
import { scorecardClaim, scorecardPod } from '../model/scorecard/reduce.js';
import { ScoreTally } from '../model/scorecard/tally.js';
import { within } from '../process/scorecard-metrics.js';
import type { Fleet } from './fleet.js';
import { naturalCompare, sortInTurns, Turns } from './turns.js';

/**
 * The scorecard of the nodes the fleet writes (docs/scorecard.md), and the picture of their GPUs its page
 * draws: from what the fleet already knows (each node's machine and the taints of its faults) and two
 * informers, of allocated claims and of evicted pods, reduced to what the scorecard reads. Nothing is
 * listed until the first time it is asked for (a scrape, the page). It is worked out node by node, in
 * turns of at most `TURN_MS` between which the event loop runs (Lease renewals, writes, probes), and
 * while it is, the last picture is served: at 50,000 nodes it walks 400,000 GPUs, at 10,000 dynamic-MIG
 * nodes two million devices, and done in one go that took seconds and hundreds of MiB (issue 50).
 */

/** How long the scorecard works before the event loop turns again. */
export const TURN_MS = 10;

/** How long the first caller waits for claims and pods to be listed. */
export const FIRST_LIST_WAIT_MS = 5000;

/** A GPU's state on the page, the first that holds: faulted, tainted, MIG-partitioned, allocated, free. */
export type GpuCell = 'faulted' | 'tainted' | 'mig' | 'allocated' | 'free';

export interface PictureNode {
  name: string;
  /** `fakegpu.dev/rack`, else the scorecard's pool label, else ''. */
  group: string;
  gpus: readonly GpuCell[];
}

export interface FleetPicture {
  /** When it was worked out (ISO 8601). */
  at: string;
  scorecard: Scorecard;
  /** Sorted by group, then name. */
  nodes: PictureNode[];
}

/** Where work that failed is told. */
type Warn = { warn(obj: object, msg: string): void };

/** What an informer gives the scorecard. */
export type Source<T> = Pick<Informer<T>, 'start' | 'stop' | 'snapshot'> &
  Partial<Pick<Informer<T>, 'listed' | 'isSynced'>>;

const synced = <T>(s: Source<T>): boolean => s.isSynced?.() ?? s.snapshot() !== undefined;

export class FleetScorecard {
  private readonly claims: Source<ResourceClaim>;
  private readonly pods: Source<PodView>;
  private last: { at: number; picture: FleetPicture; busyMs: number } | null = null;
  private building: Promise<FleetPicture | null> | null = null;
  private failedAt: number | null = null;
  private started = false;
  private waited = false;
  private stopped = false;
  private readonly now: () => number;
  private readonly maxAgeMs: number;
  private readonly turnMs: number;
  private readonly gpuDriver: string | undefined;
  private readonly log: Warn | undefined;

  constructor(
    private readonly fleet: Pick<Fleet, 'servedDevices'>,
    sources: { claims: Source<ResourceClaim>; pods: Source<PodView> },
    o: {
      maxAgeMs?: number;
      now?: () => number;
      gpuDriver?: string;
      turnMs?: number;
      log?: Warn;
    } = {},
  ) {
    this.gpuDriver = o.gpuDriver;
    this.claims = sources.claims;
    this.pods = sources.pods;
    this.maxAgeMs = o.maxAgeMs ?? 5000;
    this.turnMs = o.turnMs ?? TURN_MS;
    this.now = o.now ?? Date.now;
    this.log = o.log;
  }

  /** Its claims and pods from informers of the API server's. */
  static of(
    fleet: Pick<Fleet, 'servedDevices'>,
    http: ApiClient,
    log: Logger,
    gpuDriver: string,
  ): FleetScorecard {
    return new FleetScorecard(
      fleet,
      {
        claims: new Informer(http, CLAIMS_PATH, {}, scorecardClaim, log),
        pods: new Informer(http, PODS_PATH, {}, scorecardPod, log),
      },
      { gpuDriver, log },
    );
  }

  stop(): void {
    this.stopped = true;
    this.claims.stop();
    this.pods.stop();
  }

  /**
   * The last picture, null before the first is worked out; a newer one is begun once it is `maxAgeMs`
   * old (or 20 times as long as its work took, where that is longer: at most 5% of the fleet's time).
   */
  picture(): FleetPicture | null {
    void this.refresh();
    return this.lastPicture();
  }

  /**
   * The last picture; before the first, the first once it is worked out. Only the first caller waits
   * for claims and pods to be listed, and at most FIRST_LIST_WAIT_MS: a list that cannot be had (its
   * permission missing) leaves later callers answered at once, without a picture.
   */
  async current(): Promise<FleetPicture | null> {
    let next = this.refresh();
    if (this.last) return this.last.picture;
    if (next === null && !this.stopped && !this.waited) {
      this.waited = true;
      const lists = Promise.all([this.claims.listed?.(), this.pods.listed?.()]).then(() => true);
      await within(lists, FIRST_LIST_WAIT_MS, false);
      next = this.refresh();
    }
    // Another caller's work may have ended meanwhile.
    return (await next) ?? this.lastPicture();
  }

  /** The picture being worked out, once it is; else the last (tests, and a caller that must see a change). */
  async next(): Promise<FleetPicture | null> {
    return (await (this.refresh() ?? this.building)) ?? this.lastPicture();
  }

  private lastPicture(): FleetPicture | null {
    return this.last?.picture ?? null;
  }

  /**
   * The work under way, or begun now where the last picture is old enough; null where none is. Work that
   * fails is logged and tried again no sooner than `maxAgeMs` later; the last picture stays meanwhile.
   */
  private refresh(): Promise<FleetPicture | null> | null {
    if (!this.started) {
      this.started = true;
      this.claims.start();
      this.pods.start();
    }
    if (this.building) return this.building;
    if (this.stopped || !synced(this.claims) || !synced(this.pods)) return null;
    const now = this.now();
    if (this.failedAt !== null && now - this.failedAt < this.maxAgeMs) return null;
    if (this.last && now - this.last.at < Math.max(this.maxAgeMs, 20 * this.last.busyMs)) return null;
    this.building = this.work(new Date(now))
      .then(
        (p) => {
          this.failedAt = null;
          return p;
        },
        (e: unknown) => {
          this.failedAt = now;
          this.log?.warn({ err: e instanceof Error ? e.message : String(e) }, 'scorecard: not worked out');
          return null;
        },
      )
      .finally(() => {
        this.building = null;
      });
    return this.building;
  }

  /** Claims first, then node by node, each node's GPUs worked out as it is read, then the pods. */
  private async work(at: Date): Promise<FleetPicture | null> {
    const turns = new Turns(this.turnMs);
    const tally = new ScoreTally(this.gpuDriver ? { gpuDriver: this.gpuDriver } : {});
    for (const c of this.claims.snapshot() ?? []) {
      tally.addClaim(c);
      if (turns.due()) await turns.pause();
      if (this.stopped) return null;
    }
    const nodes: PictureNode[] = [];
    /** Each node's labels, by its place in `nodes`: its group, where it has no rack, is its pool's. */
    const labelsOf: Readonly<Record<string, string>>[] = [];
    const served = new Set<string>();
    for (const { node, labels, slices, faulted } of this.fleet.servedDevices()) {
      if (this.stopped) return null;
      // A node deleted and added again while the walk pauses comes round again: counted once.
      if (served.has(node)) continue;
      served.add(node);
      tally.addNode({ metadata: { name: node, labels } });
      for (const { driver, devices } of slices) tally.addDevices(driver, node, node, devices);
      const gpus = cellsOf(tally.closeNode(node), faultedGpus(slices, faulted));
      if (gpus.length > 0) {
        nodes.push({ name: node, group: labels[RACK_LABEL] ?? '', gpus });
        labelsOf.push(labels);
      }
      if (turns.due()) await turns.pause();
    }
    for (const p of this.pods.snapshot() ?? []) if (served.has(p.spec?.nodeName ?? '')) tally.addPod(p);
    const steps = tally.finishing();
    let step = steps.next();
    for (; !step.done; step = steps.next()) {
      if (turns.due()) await turns.pause();
      if (this.stopped) return null;
    }
    const scorecard = step.value;
    const poolLabel = scorecard.poolLabel;
    if (poolLabel)
      nodes.forEach((n, i) => {
        const labels = labelsOf[i] ?? {};
        if (labels[RACK_LABEL] === undefined) n.group = labels[poolLabel] ?? '';
      });
    const sorted = await sortInTurns(
      nodes,
      (a, b) => naturalCompare(a.group, b.group) || naturalCompare(a.name, b.name),
      turns,
    );
    if (this.stopped) return null;
    const picture: FleetPicture = { at: at.toISOString(), scorecard, nodes: sorted };
    this.last = { at: at.getTime(), picture, busyMs: turns.worked() };
    return picture;
  }
}

/** The node's names of the GPUs a fault hits. */
function faultedGpus(
  slices: readonly { devices: readonly Device[] }[],
  faulted: ReadonlySet<string>,
): ReadonlySet<string> {
  if (faulted.size === 0) return faulted;
  const out = new Set<string>();
  for (const { devices } of slices)
    for (const d of devices) {
      const gpu = faulted.has(d.name) ? physicalGpu(d) : undefined;
      if (gpu !== undefined) out.add(gpu);
    }
  return out;
}

/** A node's cells: shared by every node whose GPUs' states it shares, where no fault hits it. */
const CELLS = new WeakMap<ReadonlyMap<string, GpuState>, readonly GpuCell[]>();

function cellsOf(states: ReadonlyMap<string, GpuState>, hit: ReadonlySet<string>): readonly GpuCell[] {
  const shared = hit.size === 0 ? CELLS.get(states) : undefined;
  if (shared) return shared;
  const out: GpuCell[] = [];
  for (const [gpu, g] of states) out.push(cellOf(g, hit.has(gpu)));
  if (hit.size === 0) CELLS.set(states, Object.freeze(out));
  return out;
}

function cellOf(g: GpuState, faulted: boolean): GpuCell {
  if (faulted) return 'faulted';
  if (g.tainted) return 'tainted';
  if (g.mig) return 'mig';
  return g.allocated ? 'allocated' : 'free';
}
