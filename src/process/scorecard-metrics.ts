import { Gauge, type Registry } from 'prom-client';
import type { Figures, Scorecard } from '../model/scorecard/score.js';

/**
 * The scorecard (docs/scorecard.md) as Prometheus gauges, one per figure, labelled `scope` (`cluster`,
 * `pool`, `rack`) and `name` (the pool's or rack's; empty for the cluster). Read at each scrape from
 * `read`; at most `MAX_SCOPES` pools and racks each, those with the most GPUs, so a fleet of thousands of
 * racks does not make thousands of series per figure.
 */

export const MAX_SCOPES = 50;

/** Metric name (after `fakegpu_scorecard_`) and help of each figure. */
export const SCORECARD_METRICS: readonly (readonly [keyof Figures, string, string])[] = [
  ['nodes', 'nodes', 'nodes with at least one GPU published'],
  ['gpus', 'gpus', 'physical GPUs published'],
  ['allocated', 'gpus_allocated', 'GPUs any claim holds a device of'],
  ['free', 'gpus_free', 'GPUs neither allocated nor tainted'],
  ['tainted', 'gpus_tainted', 'GPUs with a NoSchedule or NoExecute taint on a device'],
  ['nodesFull', 'nodes_full', 'nodes with GPUs allocated and none free'],
  ['nodesPartial', 'nodes_partial', 'nodes with GPUs allocated and some free'],
  ['nodesEmpty', 'nodes_empty', 'nodes with no GPU allocated'],
  ['strandedGpus', 'gpus_stranded', 'free GPUs on partly used nodes'],
  ['fragmentation', 'fragmentation_ratio', 'stranded GPUs over free GPUs (0 when none is free)'],
  ['migFreeSlices', 'mig_free_slices', 'free MIG memory slices on GPUs in partial MIG use'],
  ['migStrandedSlices', 'mig_stranded_slices', 'free MIG memory slices no free MIG device can take whole'],
  ['gpuNicClaims', 'gpu_nic_claims', 'allocated claims with GPUs and NICs'],
  ['gpuNicAligned', 'gpu_nic_claims_aligned', 'GPU+NIC claims with all devices under one PCIe root'],
  ['multiGpuClaims', 'multi_gpu_claims', 'allocated claims on two or more GPUs'],
  ['multiGpuCrossNuma', 'multi_gpu_claims_cross_numa', 'multi-GPU claims across NUMA nodes'],
  ['computeDomains', 'compute_domains', 'ComputeDomains with allocated channels'],
  ['computeDomainsSplit', 'compute_domains_split', 'ComputeDomains whose channels span cliques'],
  ['claimsOnTainted', 'claims_on_tainted_devices', 'allocated claims holding a tainted device'],
  ['podsEvicted', 'pods_evicted', 'pods evicted and still listed'],
];

/** The scopes a scrape shows: the cluster, then the largest pools and racks. */
export function scopesOf(s: Scorecard): { scope: string; name: string; f: Figures }[] {
  const top = (r: Record<string, Figures>): [string, Figures][] =>
    Object.entries(r)
      .sort(([an, a], [bn, b]) => b.gpus - a.gpus || an.localeCompare(bn))
      .slice(0, MAX_SCOPES);
  return [
    { scope: 'cluster', name: '', f: s.cluster },
    ...top(s.pools).map(([name, f]) => ({ scope: 'pool', name, f })),
    ...top(s.racks).map(([name, f]) => ({ scope: 'rack', name, f })),
  ];
}

/** How long a scrape waits for a scorecard still being worked out; past it, its gauges are empty. */
export const SCRAPE_WAIT_MS = 5000;

/**
 * The gauges, read from `read` once per scrape (the first gauge collected asks, the others reuse it). A
 * fleet's scorecard is worked out between turns of the event loop, so the read may be a promise: only a
 * first scrape waits for it, at most SCRAPE_WAIT_MS; a failed read leaves the gauges empty and the rest of
 * the scrape answers.
 */
export function scorecardGauges(
  reg: Registry,
  read: () => Scorecard | null | Promise<Scorecard | null>,
  waitMs = SCRAPE_WAIT_MS,
): void {
  let scraped: { at: number; s: Promise<Scorecard | null> } | null = null;
  const current = (): Promise<Scorecard | null> => {
    const now = Date.now();
    if (scraped === null || now - scraped.at > 1000)
      scraped = { at: now, s: within(Promise.resolve().then(read), waitMs, null) };
    return scraped.s;
  };
  for (const [figure, name, help] of SCORECARD_METRICS)
    new Gauge({
      name: `fakegpu_scorecard_${name}`,
      help,
      labelNames: ['scope', 'name'],
      registers: [reg],
      async collect() {
        const s = await current();
        this.reset();
        if (s) for (const x of scopesOf(s)) this.set({ scope: x.scope, name: x.name }, x.f[figure]);
      },
    });
}

/** What `p` settles to within `ms`, else `otherwise`; a rejection is `otherwise` too. */
export async function within<T>(p: Promise<T>, ms: number, otherwise: T): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([p, new Promise<T>((res) => (timer = setTimeout(res, ms, otherwise)))]);
  } catch {
    return otherwise;
  } finally {
    clearTimeout(timer);
  }
}
