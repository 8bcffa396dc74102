/**
 * What `fakegpu report` costs on a large cluster (issue 50): the command as users run it, against a
 * ceiling run in the same bench, the cluster listed whole and scored in one call (what the report did
 * before it folded each page as it arrived). Each in its own process; its peak resident memory (VmHWM,
 * read from /proc until it exits) and its wall time; and whether both gave the same scorecard.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { fileURLToPath } from 'node:url';
import { REPO_ROOT } from '../src/local-cluster/cluster.js';
import { FakegpuError } from '../src/errors.js';

export interface ProcessCost {
  rssPeakMiB: number;
  tookS: number;
}

export interface ReportCost {
  report: ProcessCost;
  /** Null past WHOLE_MAX_NODES. */
  whole: ProcessCost | null;
  /** The two scorecards are the same (null: no ceiling run). */
  same: boolean | null;
}

/**
 * The ceiling holds every slice at once: about 25 kB of JSON per DGX node, several times that parsed.
 * Past this many nodes it would need gigabytes beside a control plane that already holds 18 of this
 * machine's 24 GiB at 50,000 nodes (bench/README.md), so it is not run there.
 */
export const WHOLE_MAX_NODES = 20_000;

/** A process's output, its peak RSS and its wall time. */
async function costOf(args: string[]): Promise<ProcessCost & { out: string }> {
  const t0 = performance.now();
  const p = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  p.stdout.on('data', (b: Buffer) => (out += b.toString()));
  p.stderr.on('data', (b: Buffer) => (err += b.toString()));
  let hwmKiB = 0;
  const poll = setInterval(() => {
    try {
      const m = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${p.pid ?? 0}/status`, 'utf8'));
      hwmKiB = Math.max(hwmKiB, Number(m?.[1] ?? 0));
    } catch {
      // Gone: the last reading stands.
    }
  }, 20);
  const code = await new Promise<number | null>((res) => p.on('close', res));
  clearInterval(poll);
  if (code !== 0)
    throw new FakegpuError(
      'bench/report-cost',
      `${args.slice(1).join(' ')}: exit ${code}: ${err.trim().split('\n').at(-1) ?? ''}`,
    );
  return { out, rssPeakMiB: hwmKiB / 1024, tookS: (performance.now() - t0) / 1000 };
}

export async function reportCost(kubeconfig: string, nodes: number): Promise<ReportCost> {
  const whole =
    nodes <= WHOLE_MAX_NODES ? await costOf([fileURLToPath(import.meta.url), '--whole', kubeconfig]) : null;
  const bin = join(REPO_ROOT, 'bin', 'fakegpu.js');
  const report = await costOf([bin, 'report', '-o', 'json', '--kubeconfig', kubeconfig]);
  return {
    report: { rssPeakMiB: report.rssPeakMiB, tookS: report.tookS },
    whole: whole ? { rssPeakMiB: whole.rssPeakMiB, tookS: whole.tookS } : null,
    same: whole ? isDeepStrictEqual(JSON.parse(report.out), JSON.parse(whole.out)) : null,
  };
}

export function reportLine(n: number, c: ReportCost): string {
  const whole = c.whole
    ? ` whole_rss_peak=${c.whole.rssPeakMiB.toFixed(1)}MiB whole_took=${c.whole.tookS.toFixed(1)}s same=${String(c.same)}`
    : '';
  return `report: N=${n} rss_peak=${c.report.rssPeakMiB.toFixed(1)}MiB took=${c.report.tookS.toFixed(1)}s${whole}`;
}

// The ceiling: every slice, claim, pod and node listed and held at once, then scored.
if (process.argv[2] === '--whole') {
  const { KubeConfig } = await import('@kubernetes/client-node');
  const { clientOf, ApiError } = await import('../src/kube/client.js');
  const { listEvery, listPage, METADATA_LIST, NODES_PATH, SLICES_PATH } = await import('../src/kube/api.js');
  const { CLAIMS_PATH } = await import('../src/kube/types/claim.js');
  const { PODS_PATH } = await import('../src/kube/dcgm-sources.js');
  const { score } = await import('../src/model/scorecard/score.js');
  const kc = new KubeConfig();
  kc.loadFromFile(process.argv[3] ?? '');
  const http = clientOf(kc);
  const all = <T>(path: string, accept = 'application/json'): Promise<T[]> =>
    listEvery<T>((q) => listPage<T>(http, path, q, accept));
  const [nodes, slices, claims, pods, taintRules] = await Promise.all([
    all<never>(NODES_PATH, METADATA_LIST),
    all<never>(SLICES_PATH),
    all<never>(CLAIMS_PATH),
    all<never>(PODS_PATH),
    all<never>('/apis/resource.k8s.io/v1/devicetaintrules').catch((e: unknown) => {
      if (e instanceof ApiError && e.code === 404) return [];
      throw e;
    }),
  ]);
  process.stdout.write(`${JSON.stringify(score({ nodes, slices, claims, pods, taintRules }))}\n`);
}
