import { GPU_CLIQUE_LABEL, RACK_LABEL } from '../compute-domain/resource.js';
import { claimQuality, type ClaimQuality } from './claims.js';
import { gpuStates, type GpuState } from './gpus.js';
import { allocatedClaims, type ClusterView, type DeviceEntry, evicted, inventory } from './inventory.js';

/**
 * How well GPU work is placed, in one scope (the cluster, a node pool, a rack). Definitions and formulas:
 * docs/scorecard.md; each field's comment is its short form.
 */
export interface Figures {
  /** Nodes with at least one GPU published. */
  nodes: number;
  gpus: number;
  /** GPUs any claim holds a device of (the whole GPU, a MIG device, a share). */
  allocated: number;
  /** GPUs neither allocated nor tainted. */
  free: number;
  /** GPUs with a NoSchedule or NoExecute taint on any of their devices, allocated or not. */
  tainted: number;
  /** Nodes with GPUs allocated and none free; with some of each; with none allocated. */
  nodesFull: number;
  nodesPartial: number;
  nodesEmpty: number;
  /** Free GPUs on partly used nodes, and their share of all free GPUs (0 when none is free). */
  strandedGpus: number;
  fragmentation: number;
  /** On GPUs in partial MIG use: free memory slices, and those no free MIG device can take whole. */
  migFreeSlices: number;
  migStrandedSlices: number;
  gpuNicClaims: number;
  gpuNicAligned: number;
  multiGpuClaims: number;
  multiGpuCrossNuma: number;
  /** ComputeDomains with allocated channels, and those whose channels span more than one clique. */
  computeDomains: number;
  computeDomainsSplit: number;
  /** Allocated claims holding a tainted device. */
  claimsOnTainted: number;
  /** Pods evicted (status reason Evicted, or a DisruptionTarget condition) and still listed. */
  podsEvicted: number;
}

export interface Scorecard {
  cluster: Figures;
  /** By the first pool label any node has (`poolLabel`), then by rack (`fakegpu.dev/rack`). */
  pools: Record<string, Figures>;
  racks: Record<string, Figures>;
  poolLabel: string | null;
}

/** Node labels that name a node pool, most specific first: fakegpu's, Karpenter's, the clouds'. */
export const POOL_LABELS = [
  'fakegpu.dev/pool',
  'karpenter.sh/nodepool',
  'cloud.google.com/gke-nodepool',
  'eks.amazonaws.com/nodegroup',
  'kubernetes.azure.com/agentpool',
  'oci.oraclecloud.com/node-pool-id',
] as const;

export function emptyFigures(): Figures {
  return {
    nodes: 0,
    gpus: 0,
    allocated: 0,
    free: 0,
    tainted: 0,
    nodesFull: 0,
    nodesPartial: 0,
    nodesEmpty: 0,
    strandedGpus: 0,
    fragmentation: 0,
    migFreeSlices: 0,
    migStrandedSlices: 0,
    gpuNicClaims: 0,
    gpuNicAligned: 0,
    multiGpuClaims: 0,
    multiGpuCrossNuma: 0,
    computeDomains: 0,
    computeDomainsSplit: 0,
    claimsOnTainted: 0,
    podsEvicted: 0,
  };
}

/** The scorecard of a cluster: pure, so that the report, the metrics and a test compute the same. */
export function score(v: ClusterView, poolLabelOverride?: string): Scorecard {
  return scoreWithGpus(v, poolLabelOverride).scorecard;
}

/** The scorecard, and the state of each physical GPU it counted, by `node/uuid` (the fleet's picture). */
export function scoreWithGpus(
  v: ClusterView,
  poolLabelOverride?: string,
): { scorecard: Scorecard; gpus: ReadonlyMap<string, GpuState> } {
  const devices = inventory(v);
  const claims = allocatedClaims(v, devices);
  const held = new Set<DeviceEntry>(claims.flatMap((c) => c.held));
  const gpus = gpuStates(devices.values(), held);
  const qualities = claims.map((c) => claimQuality(c.claim, c.held));
  const labels = new Map(v.nodes.map((n) => [n.metadata.name, n.metadata.labels ?? {}]));
  const poolLabel =
    poolLabelOverride ?? POOL_LABELS.find((l) => v.nodes.some((n) => l in (n.metadata.labels ?? {}))) ?? null;
  const scopes = new Scopes(labels, poolLabel);
  for (const [node, states] of byNode(gpus)) addNode(scopes.of(node), states);
  for (const q of qualities) addClaim(scopes.of(q.node), q);
  for (const p of v.pods) if (evicted(p)) for (const f of scopes.of(p.spec?.nodeName ?? '')) f.podsEvicted++;
  addDomains(scopes, qualities, labels);
  for (const f of scopes.all()) f.fragmentation = f.free === 0 ? 0 : round(f.strandedGpus / f.free);
  return {
    scorecard: { cluster: scopes.cluster, pools: scopes.pools, racks: scopes.racks, poolLabel },
    gpus,
  };
}

/** The figures a node counts in: the cluster's, its pool's, its rack's. */
class Scopes {
  readonly cluster = emptyFigures();
  readonly pools: Record<string, Figures> = {};
  readonly racks: Record<string, Figures> = {};

  constructor(
    private readonly labels: ReadonlyMap<string, Readonly<Record<string, string>>>,
    private readonly poolLabel: string | null,
  ) {}

  of(node: string): Figures[] {
    const l = this.labels.get(node) ?? {};
    const out = [this.cluster];
    const pool = this.poolLabel === null ? undefined : l[this.poolLabel];
    if (pool !== undefined) out.push((this.pools[pool] ??= emptyFigures()));
    const rack = l[RACK_LABEL];
    if (rack !== undefined) out.push((this.racks[rack] ??= emptyFigures()));
    return out;
  }

  *all(): Generator<Figures> {
    yield this.cluster;
    yield* Object.values(this.pools);
    yield* Object.values(this.racks);
  }
}

function byNode(gpus: ReadonlyMap<string, GpuState>): Map<string, GpuState[]> {
  const out = new Map<string, GpuState[]>();
  for (const g of gpus.values()) {
    const l = out.get(g.node);
    if (l) l.push(g);
    else out.set(g.node, [g]);
  }
  return out;
}

function addNode(into: readonly Figures[], states: readonly GpuState[]): void {
  const allocated = states.filter((g) => g.allocated).length;
  const free = states.filter((g) => !g.allocated && !g.tainted).length;
  for (const f of into) {
    f.nodes++;
    f.gpus += states.length;
    f.allocated += allocated;
    f.free += free;
    f.tainted += states.filter((g) => g.tainted).length;
    if (allocated === 0) f.nodesEmpty++;
    else if (free === 0) f.nodesFull++;
    else {
      f.nodesPartial++;
      f.strandedGpus += free;
    }
    for (const g of states) {
      f.migFreeSlices += g.migFreeSlices;
      f.migStrandedSlices += g.migStrandedSlices;
    }
  }
}

function addClaim(into: readonly Figures[], q: ClaimQuality): void {
  for (const f of into) {
    if (q.gpuNic) f.gpuNicClaims++;
    if (q.gpuNicAligned) f.gpuNicAligned++;
    if (q.multiGpu) f.multiGpuClaims++;
    if (q.crossNuma) f.multiGpuCrossNuma++;
    if (q.onTainted) f.claimsOnTainted++;
  }
}

/** A domain counts where its first channel is; it is split when its channels' nodes are in two cliques. */
function addDomains(
  scopes: Scopes,
  qualities: readonly ClaimQuality[],
  labels: ReadonlyMap<string, Readonly<Record<string, string>>>,
): void {
  const nodes = new Map<string, string[]>();
  for (const q of qualities) {
    if (q.domain === null) continue;
    const l = nodes.get(q.domain);
    if (l) l.push(q.node);
    else nodes.set(q.domain, [q.node]);
  }
  for (const on of nodes.values()) {
    const cliques = new Set(on.map((n) => labels.get(n)?.[GPU_CLIQUE_LABEL] ?? ''));
    for (const f of scopes.of(on[0] ?? '')) {
      f.computeDomains++;
      if (cliques.size > 1) f.computeDomainsSplit++;
    }
  }
}

const round = (x: number): number => Math.round(x * 1000) / 1000;
