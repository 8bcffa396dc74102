import type { Figures, Scorecard } from '../../model/scorecard/score.js';

export const REPORT_HEADER = [
  'SCOPE',
  'NODES',
  'GPUS',
  'ALLOCATED',
  'FREE',
  'TAINTED',
  'FULL',
  'PARTIAL',
  'EMPTY',
  'STRANDED',
  'FRAGMENTATION',
  'MIG-STRANDED',
  'GPU+NIC-ALIGNED',
  'CROSS-NUMA',
  'CD-SPLIT',
  'ON-TAINTED',
  'EVICTED',
] as const;

/** Pools and racks a table lists each, largest first; `-o json` has them all. */
export const MAX_GROUP_ROWS = 40;

const part = (n: number, of: number): string => `${n}/${of}`;

function row(scope: string, f: Figures): string[] {
  return [
    scope,
    String(f.nodes),
    String(f.gpus),
    String(f.allocated),
    String(f.free),
    String(f.tainted),
    String(f.nodesFull),
    String(f.nodesPartial),
    String(f.nodesEmpty),
    String(f.strandedGpus),
    f.fragmentation.toFixed(3),
    part(f.migStrandedSlices, f.migFreeSlices),
    part(f.gpuNicAligned, f.gpuNicClaims),
    part(f.multiGpuCrossNuma, f.multiGpuClaims),
    part(f.computeDomainsSplit, f.computeDomains),
    String(f.claimsOnTainted),
    String(f.podsEvicted),
  ];
}

/** A scope's groups, most GPUs first, then by name; with the count of those left out. */
function groups(prefix: string, m: Record<string, Figures>): { rows: string[][]; left: number } {
  const sorted = Object.entries(m).sort(([a, x], [b, y]) => y.gpus - x.gpus || a.localeCompare(b));
  return {
    rows: sorted.slice(0, MAX_GROUP_ROWS).map(([name, f]) => row(`${prefix}/${name}`, f)),
    left: Math.max(0, sorted.length - MAX_GROUP_ROWS),
  };
}

/** The rows of `fakegpu report`: the cluster, its pools, its racks; and a line for each scope cut short. */
export function reportRows(s: Scorecard): { rows: string[][]; notes: string[] } {
  const pools = groups('pool', s.pools);
  const racks = groups('rack', s.racks);
  const notes: string[] = [];
  if (pools.left > 0) notes.push(`${pools.left} more pool(s) (-o json lists every one)`);
  if (racks.left > 0) notes.push(`${racks.left} more rack(s) (-o json lists every one)`);
  return { rows: [row('cluster', s.cluster), ...pools.rows, ...racks.rows], notes };
}
