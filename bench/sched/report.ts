/** The run's result: the JSON document, the markdown table and the last line, which scripts read. */
import { scorecardLine } from '../scorecard.js';
import { describeClaim } from './claims.js';
import type { Config } from './config.js';
import { GENERIC_DRIVER } from './generic.js';
import type { Phase, Results } from './phases.js';
import type { Part } from './stats.js';

/** `n` to `d` decimals; n/a where a phase had no pods to time. */
export const f = (n: number, d = 2): string => (Number.isFinite(n) ? n.toFixed(d) : 'n/a');

export interface Run {
  cfg: Config;
  results: Results;
  hardware: string;
  started: Date;
}

/** Faithful fill pods/s over generic fill pods/s. */
const ratio = (r: Results): number => r.faithful.work.fill.podsPerS / r.generic.work.fill.podsPerS;

export function resultJson({ cfg, results: r, hardware, started }: Run): unknown {
  return {
    bench: 'sched',
    startedAt: started.toISOString(),
    hardware,
    cluster: cfg.kubeconfig !== undefined ? 'existing' : 'own',
    nodeSelector: cfg.selector,
    nodes: r.nodes,
    profile: cfg.profile,
    variant: cfg.variant,
    dynamicMig: cfg.dynamicMig,
    ...(cfg.variant === 'mig' ? { migProfile: cfg.migProfile } : {}),
    fill: cfg.fill,
    fillQps: cfg.fillQps,
    churnSeconds: cfg.churnS,
    churnQps: cfg.churnQps,
    churnRuntimeS: cfg.churnRuntimeS,
    phases: { faithful: r.faithful, generic: r.generic },
    ratio: ratio(r),
  };
}

/** What the bench prints on stdout, a line per element: the table, the ratios, then the last line. */
export function report(run: Run): string[] {
  const { cfg, results: r, hardware } = run;
  const fa = r.faithful.work;
  const ge = r.generic.work;
  const fill = `fill ${f(cfg.fill * 100, 0)}% ${cfg.fillQps > 0 ? `at ${cfg.fillQps} pods/s` : 'unpaced'}`;
  const churnText =
    cfg.churnS > 0
      ? `churn ${cfg.churnS} s at ${cfg.churnQps} pods/s, ${cfg.churnRuntimeS} s each`
      : 'no churn';
  const out = [
    `bench/sched: ${r.nodes} KWOK nodes of ${cfg.profile}${cfg.dynamicMig ? ' (dynamic MIG)' : ''}; variant ${cfg.variant}: ${describeClaim(cfg.variant, cfg.shape, cfg.migProfile)}; ${fill}, ${churnText}; ${hardware}\n`,
    '| phase | slices | capacity (claims) | pods | created in s | all Running s | pods/s | startup p50 s | p90 s | p99 s | scheduled p50 s | p99 s |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|',
  ];
  const row = (name: string, p: Phase, x: Part | null): void => {
    if (!x) return;
    out.push(
      `| ${name} | ${p.slices} | ${p.capacity} | ${x.pods} | ${f(x.createdS)} | ${f(x.seconds)} | ${f(x.podsPerS)} | ${f(x.startup.p50, 3)} | ${f(x.startup.p90, 3)} | ${f(x.startup.p99, 3)} | ${f(x.scheduled.p50, 3)} | ${f(x.scheduled.p99, 3)} |`,
    );
  };
  row(`NVIDIA-faithful (${cfg.variant}) fill`, r.faithful, fa.fill);
  row(`NVIDIA-faithful (${cfg.variant}) churn`, r.faithful, fa.churn);
  row(`generic (${GENERIC_DRIVER}) fill`, r.generic, ge.fill);
  row(`generic (${GENERIC_DRIVER}) churn`, r.generic, ge.churn);
  out.push(`\n| faithful / generic | value |\n|---|---|`);
  out.push(`| fill pods/s | ${f(ratio(r))} |`);
  out.push(`| fill startup p50 | ${f(fa.fill.startup.p50 / ge.fill.startup.p50)} |`);
  if (fa.churn && ge.churn) {
    out.push(`| churn startup p50 | ${f(fa.churn.startup.p50 / ge.churn.startup.p50)} |`);
    out.push(`| churn startup p99 | ${f(fa.churn.startup.p99 / ge.churn.startup.p99)} |`);
  }
  out.push(
    `| slices published in (fleet from start; generic: the bench's POSTs) | ${f(r.faithful.publishS)} s / ${f(r.generic.publishS)} s |`,
  );
  const late = fa.fill.late + (fa.churn?.late ?? 0) + ge.fill.late + (ge.churn?.late ?? 0);
  if (late > 0)
    out.push(`\n(${late} pods were seen Running only by a relist; their startup times are late.)`);
  if (r.faithful.scorecard) out.push(`\n${scorecardLine('faithful', r.faithful.scorecard)}`);
  out.push(`\n${lastLine(r)}`);
  return out;
}

/** The one line scripts compare across runs. */
export function lastLine(r: Results): string {
  const fa = r.faithful.work;
  const ge = r.generic.work;
  return `sched: N=${r.nodes} fill_pods_per_s=${f(fa.fill.podsPerS)} churn_p50=${f(fa.churn?.startup.p50 ?? Number.NaN, 3)} churn_p99=${f(fa.churn?.startup.p99 ?? Number.NaN, 3)} generic_fill_pods_per_s=${f(ge.fill.podsPerS)} ratio=${f(ratio(r))}`;
}
