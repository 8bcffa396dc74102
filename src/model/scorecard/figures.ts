import { RACK_LABEL } from '../compute-domain/resource.js';

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

/** The figures a node counts in: the cluster's, its pool's, its rack's. */
export class Scopes {
  readonly cluster = emptyFigures();
  readonly pools: Record<string, Figures> = {};
  readonly racks: Record<string, Figures> = {};

  constructor(
    private readonly labels: ReadonlyMap<string, Readonly<Record<string, string>>>,
    private readonly poolLabel: string | null,
  ) {}

  private readonly scratch: Figures[] = [];

  /**
   * The scopes the node is in: the cluster, its pool, its rack. The same array each call, to be read
   * before the next: 50,000 nodes would otherwise make 50,000 arrays each time the fleet scores them.
   */
  of(node: string): readonly Figures[] {
    const l = this.labels.get(node) ?? {};
    const out = this.scratch;
    out.length = 0;
    out.push(this.cluster);
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

export const round = (x: number): number => Math.round(x * 1000) / 1000;
