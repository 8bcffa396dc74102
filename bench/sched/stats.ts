/** A phase's pods summed up: throughput and the percentiles of their startup. */
import type { Kind, PodRec } from './pod.js';

export interface Stats {
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

/** Nearest-rank percentiles, in seconds. */
export function stats(xs: number[]): Stats {
  const s = [...xs].sort((a, b) => a - b);
  const p = (pct: number): number => s[Math.max(0, Math.ceil((pct / 100) * s.length) - 1)] ?? Number.NaN;
  return { p50: p(50), p90: p(90), p99: p(99), max: s.at(-1) ?? Number.NaN };
}

export interface Part {
  pods: number;
  /** Seconds from the first create to the last. */
  createdS: number;
  /** Seconds from the first create to the last pod Running. */
  seconds: number;
  podsPerS: number;
  /** Creation (the bench's POST) → seen Running by the watch. */
  startup: Stats;
  /** Creation → seen bound to a node. */
  scheduled: Stats;
  /** creationTimestamp → Ready's lastTransitionTime, as the API stores them (whole seconds). */
  serverStartup: Stats;
  /** Pods seen Running only by a relist (their times are late). */
  late: number;
}

/** The pods of `kind` among `all`, whose first was created at `t0` and last `createdS` later. */
export function part(all: Iterable<PodRec>, kind: Kind, t0: number, createdS: number): Part {
  const recs = [...all].filter((r) => r.kind === kind);
  const last = recs.reduce((m, r) => Math.max(m, r.running ?? t0), t0);
  const s = (last - t0) / 1000;
  return {
    pods: recs.length,
    createdS,
    seconds: s,
    podsPerS: recs.length / s,
    startup: stats(recs.map((r) => ((r.running ?? Number.NaN) - r.created) / 1000)),
    scheduled: stats(recs.map((r) => ((r.bound ?? r.running ?? Number.NaN) - r.created) / 1000)),
    serverStartup: stats(recs.flatMap((r) => (r.serverS === undefined ? [] : [r.serverS]))),
    late: recs.filter((r) => r.late).length,
  };
}
