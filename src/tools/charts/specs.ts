import type { FaultsResult, FleetResult, Results, SchedResult } from './results.js';

/**
 * Vega-Lite specifications of the benchmark charts, from the committed results: plain data in, plain JSON
 * out, so a chart changes exactly when a result or this file does.
 */

export type Spec = Record<string, unknown>;

export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? (s[m] ?? NaN) : ((s[m - 1] ?? NaN) + (s[m] ?? NaN)) / 2;
}

const WIDTH = 460;
const HEIGHT = 220;
const day = (iso: string): string => iso.slice(0, 10);

/** Where and when: the hardware and the dates of the runs, under each title. */
function subtitle(runs: readonly { hardware: string; date: string }[]): string {
  const dates = [...new Set(runs.map((r) => r.date))].sort();
  const hw = [...new Set(runs.map((r) => r.hardware))].join('; ');
  const when = dates.length > 1 ? `${dates[0] ?? ''} to ${dates.at(-1) ?? ''}` : (dates[0] ?? '');
  return `${hw}; ${when}`;
}

function chart(title: string, sub: string, body: Spec): Spec {
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: { text: title, subtitle: sub, anchor: 'start' },
    width: WIDTH,
    height: HEIGHT,
    background: 'white',
    config: { font: 'sans-serif', axis: { labelFontSize: 11, titleFontSize: 12 } },
    ...body,
  };
}

const nodesAxis = {
  field: 'nodes',
  type: 'quantitative',
  scale: { type: 'log' },
  title: 'KWOK nodes (dgx-h100, 8 GPUs each)',
};
const plainFleet = (rs: readonly FleetResult[]): FleetResult[] =>
  rs.filter((r) => !r.config.dynamicMig && r.config.profile === 'dgx-h100');
const fleetRuns = (rs: readonly FleetResult[]): { hardware: string; date: string }[] =>
  rs.map((r) => ({ hardware: r.hardware, date: day(r.started) }));

/** Seconds to publish every node, the fleet against the raw-POST ceiling of the same run, by N. */
export function fleetPublish(results: readonly FleetResult[]): Spec {
  const rs = plainFleet(results);
  const values = rs.flatMap((r) => [
    { nodes: r.config.nodes, what: 'ceiling: raw POSTs, 64 in flight', seconds: median(r.rounds.ceilings) },
    { nodes: r.config.nodes, what: 'fakegpu fleet', seconds: median(r.rounds.fleets.map((f) => f.s)) },
  ]);
  return chart('bench:fleet: every node published', subtitle(fleetRuns(rs)), {
    data: { values },
    mark: { type: 'line', point: true },
    encoding: {
      x: nodesAxis,
      y: {
        field: 'seconds',
        type: 'quantitative',
        scale: { type: 'log' },
        title: 'seconds (median of rounds)',
      },
      color: { field: 'what', type: 'nominal', title: null, legend: { orient: 'top-left', labelLimit: 300 } },
    },
  });
}

/** Ceiling over fleet per run: 1 is as fast as the API server takes the same objects. */
export function fleetRatio(results: readonly FleetResult[]): Spec {
  const rs = plainFleet(results);
  const values = rs.map((r) => ({
    nodes: r.config.nodes,
    ratio: median(r.rounds.ceilings) / median(r.rounds.fleets.map((f) => f.s)),
  }));
  return chart('bench:fleet: ceiling / fleet, each run', subtitle(fleetRuns(rs)), {
    layer: [
      {
        data: { values },
        mark: { type: 'point', filled: true, size: 60 },
        encoding: {
          x: nodesAxis,
          y: {
            field: 'ratio',
            type: 'quantitative',
            scale: { domain: [0, 1.2] },
            title: 'ratio (1 = the ceiling)',
          },
        },
      },
      {
        data: { values: [{ bar: 0.9 }] },
        mark: { type: 'rule', strokeDash: [4, 4], color: 'gray' },
        encoding: { y: { field: 'bar', type: 'quantitative' } },
      },
    ],
  });
}

/** The fleet's resident memory per node served: serving against idle, medians of the rounds. */
export function fleetMemory(results: readonly FleetResult[]): Spec {
  const rs = plainFleet(results);
  const values = rs.map((r) => ({
    nodes: r.config.nodes,
    kib: (median(r.rounds.servingKiB) - median(r.rounds.idleKiB)) / r.config.nodes,
  }));
  return chart('bench:fleet: resident memory per node served', subtitle(fleetRuns(rs)), {
    data: { values },
    mark: { type: 'line', point: true },
    encoding: {
      x: nodesAxis,
      y: { field: 'kib', type: 'quantitative', title: 'KiB per node (serving − idle RSS)' },
    },
  });
}

/** Pod startup percentiles per phase of the newest bench:sched run at each node count. */
export function schedStartup(results: readonly SchedResult[]): Spec {
  const newest = new Map<number, SchedResult>();
  for (const r of results) {
    const had = newest.get(r.nodes);
    if (!had || had.startedAt < r.startedAt) newest.set(r.nodes, r);
  }
  const rs = [...newest.values()].filter((r) => r.variant === 'plain');
  const values = rs.flatMap((r) => {
    const parts: [string, { startup: { p50: number; p90: number; p99: number } } | null][] = [
      ['faithful fill', r.phases.faithful.work.fill],
      ['faithful churn', r.phases.faithful.work.churn],
      ['generic fill', r.phases.generic?.work.fill ?? null],
      ['generic churn', r.phases.generic?.work.churn ?? null],
    ];
    return parts.flatMap(([phase, p]) =>
      p === null
        ? []
        : (['p50', 'p90', 'p99'] as const).map((q) => ({
            nodes: `${r.nodes} nodes`,
            phase,
            percentile: q,
            seconds: p.startup[q],
          })),
    );
  });
  const counts = rs.map((r) => r.nodes.toLocaleString('en-US')).join(', ');
  return chart(
    `bench:sched: pod startup, POST to Running (${counts} KWOK nodes)`,
    subtitle(rs.map((r) => ({ hardware: r.hardware, date: day(r.startedAt) }))),
    {
      data: { values },
      mark: 'bar',
      encoding: {
        x: { field: 'phase', type: 'nominal', title: null, sort: null, axis: { labelAngle: 0 } },
        xOffset: { field: 'percentile', type: 'nominal' },
        y: { field: 'seconds', type: 'quantitative', title: 'seconds' },
        color: { field: 'percentile', type: 'nominal', legend: { orient: 'top-left' } },
        ...(rs.length > 1
          ? {
              row: {
                field: 'nodes',
                type: 'nominal',
                title: null,
                sort: [...rs].sort((a, b) => a.nodes - b.nodes).map((r) => `${r.nodes} nodes`),
              },
            }
          : {}),
      },
    },
  );
}

/** GpuFault to every taint seen, each round, the fleet against the raw-PUT ceiling of the same run. */
export function faultsTaint(results: readonly FaultsResult[]): Spec {
  const newest = [...results].sort((a, b) => a.started.localeCompare(b.started)).at(-1);
  const values = (newest?.rounds ?? []).flatMap((x, i) => [
    { round: i + 1, what: 'ceiling: tainted slices PUT', seconds: x.ceilingS },
    { round: i + 1, what: 'fakegpu fleet: GpuFault → taints', seconds: x.fleetS },
  ]);
  const title = newest
    ? `bench:faults: XID 79 on ${newest.hits} GPUs of ${newest.config.nodes} nodes, to every taint seen`
    : 'bench:faults';
  return chart(title, newest ? subtitle([{ hardware: newest.hardware, date: day(newest.started) }]) : '', {
    data: { values },
    mark: 'bar',
    encoding: {
      x: { field: 'round', type: 'ordinal', title: 'round' },
      xOffset: { field: 'what', type: 'nominal' },
      y: { field: 'seconds', type: 'quantitative', title: 'seconds' },
      color: { field: 'what', type: 'nominal', title: null, legend: { orient: 'top', labelLimit: 300 } },
    },
  });
}

/** Each chart by its file name under bench/charts/. */
export function chartSpecs(r: Results): Record<string, Spec> {
  return {
    'fleet-publish.svg': fleetPublish(r.fleet),
    'fleet-ratio.svg': fleetRatio(r.fleet),
    'fleet-memory.svg': fleetMemory(r.fleet),
    'sched-startup.svg': schedStartup(r.sched),
    'faults-taint.svg': faultsTaint(r.faults),
  };
}
