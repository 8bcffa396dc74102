/**
 * bench/scorecard-cost: what the fleet's scorecard costs the fleet (issue 50), in fresh processes that
 * each hold the fleet's own state for N nodes of a preset (each node its own labels, the machine's
 * devices shared, as `Machines` shares them) and the allocated claims its informer would hold:
 *
 *   - ceiling ("whole"): the cluster handed over whole and scored in one synchronous call, as the fleet
 *     did before (one walk: 2.9 s and +374 MiB at 50,000 nodes);
 *   - the fleet's scorecard (`FleetScorecard.current()`), node by node between turns of the event loop.
 *
 * Each gives the longest the event loop waited (a 1 ms timer's longest gap, and Node's event-loop delay
 * histogram), the resident memory it added at its peak, and its wall time; medians over rounds.
 *
 * Usage: npm run bench:scorecard -- [--nodes 50000] [--profile dgx-h100] [--dynamic-mig] [--fill 0.5]
 *        [--rounds 3] [--json <file>]
 */
import { spawnSync } from 'node:child_process';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { Command } from 'commander';
import { intFlag } from '../src/cli/options.js';
import { FakegpuError } from '../src/errors.js';
import { FleetScorecard, type Source } from '../src/fleet/scorecard.js';
import type { ResourceClaim } from '../src/kube/types/claim.js';
import { stringOf, type Device } from '../src/kube/types/resource.js';
import { RACK_LABEL } from '../src/model/compute-domain/resource.js';
import { DEFAULT_RELEASE } from '../src/model/device/release.js';
import { renderSlices } from '../src/model/render.js';
import type { PodView, SliceView } from '../src/model/scorecard/inventory.js';
import { score } from '../src/model/scorecard/score.js';
import { DRIVER_NAME } from '../src/model/slice/build.js';
import { resolveProfile } from '../src/process/profile-file.js';
import { checked, fillFlag, hardware, median, resultPath, writeResult } from './support.js';

interface Cost {
  pauseMaxMs: number;
  rssDeltaMiB: number;
  tookS: number;
}

const MODES = ['whole', 'fleet'] as const;
type Mode = (typeof MODES)[number];

/** One measurement in this process: the fleet's state built, collected, then scored once in `mode`. */
async function measure(
  mode: Mode,
  n: number,
  profile: string,
  dynamicMig: boolean,
  fill: number,
): Promise<Cost> {
  const slices = renderSlices(resolveProfile(profile), {
    nodeName: 'fakegpu-scorecard-node',
    dynamicMig,
    driverName: DRIVER_NAME,
    kubernetesVersion: { major: 1, minor: 37, patch: 0 },
    release: DEFAULT_RELEASE,
  }).items.map((s) => ({ driver: s.spec.driver, devices: s.spec.devices ?? ([] as Device[]) }));
  const gpuNames = slices
    .filter((s) => s.driver === DRIVER_NAME)
    .flatMap((s) => s.devices.filter((d) => stringOf(d.attributes?.type) === 'gpu').map((d) => d.name));
  const name = (i: number): string => `kwok-gpu-${i}`;
  const labels = Array.from({ length: n }, (_, i) => ({
    type: 'kwok',
    'kubernetes.io/hostname': name(i),
    'fakegpu.dev/profile': profile,
    [RACK_LABEL]: `rack-${Math.floor(i / 32)}`,
  }));
  const claims: ResourceClaim[] = [];
  const allocated = Math.floor(n * gpuNames.length * fill);
  for (let k = 0; k < allocated; k++) {
    const node = name(Math.floor(k / gpuNames.length));
    claims.push({
      metadata: { name: `gpu-${k}`, namespace: 'bench', uid: `uid-${k}` },
      status: {
        allocation: {
          devices: {
            results: [
              {
                request: 'gpu',
                driver: DRIVER_NAME,
                pool: node,
                device: gpuNames[k % gpuNames.length] ?? '',
              },
            ],
          },
        },
      },
    });
  }
  const none: ReadonlySet<string> = new Set();
  // In the order the API server lists them (kwok-gpu-0, -1, -10, -100, …), as a fleet holds its nodes.
  const order = Array.from({ length: n }, (_, i) => i).sort((a, b) => (name(a) < name(b) ? -1 : 1));
  const fleet = {
    *servedDevices() {
      for (const i of order) yield { node: name(i), labels: labels[i] ?? {}, slices, faulted: none };
    },
  };
  const source = <T>(items: T[]): Source<T> => ({
    start: () => undefined,
    stop: () => undefined,
    snapshot: () => items,
  });
  // A serving fleet's young generation is in use long before its first scrape (its lists, its writes);
  // this process's is made so too, so that what is measured is what the scorecard adds to such a fleet.
  let churn: unknown[] = [];
  for (let i = 0; i < 2_000_000; i++) churn = i % 1000 === 0 ? [] : [churn, { i }];
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  gc?.();
  const rss0 = process.memoryUsage.rss();
  let peak = rss0;
  let gap = 0;
  let last = performance.now();
  const tick = setInterval(() => {
    const t = performance.now();
    gap = Math.max(gap, t - last);
    last = t;
    peak = Math.max(peak, process.memoryUsage.rss());
  }, 1);
  const delay = monitorEventLoopDelay({ resolution: 1 });
  delay.enable();
  // Let the timer start, so that its first gap is the work's.
  await new Promise((res) => setTimeout(res, 20));
  const t0 = performance.now();
  last = t0;
  let gpus: number;
  if (mode === 'fleet') {
    const picture = await new FleetScorecard(fleet, {
      claims: source(claims),
      pods: source<PodView>([]),
    }).current();
    gpus = picture?.scorecard.cluster.gpus ?? 0;
  } else {
    const sliceViews: SliceView[] = [];
    const nodes = [];
    for (const x of fleet.servedDevices()) {
      nodes.push({ metadata: { name: x.node, labels: x.labels } });
      for (const s of x.slices)
        sliceViews.push({
          spec: { driver: s.driver, nodeName: x.node, pool: { name: x.node }, devices: s.devices },
        });
    }
    gpus = score({ nodes, slices: sliceViews, claims, pods: [] }).cluster.gpus;
  }
  const tookS = (performance.now() - t0) / 1000;
  // The last turn's gap, had the timer not fired since.
  gap = Math.max(gap, performance.now() - last);
  peak = Math.max(peak, process.memoryUsage.rss());
  clearInterval(tick);
  delay.disable();
  if (gpus !== n * gpuNames.length)
    throw new FakegpuError('bench/scorecard-cost', `${gpus} GPUs scored, expected ${n * gpuNames.length}`);
  return { pauseMaxMs: Math.max(gap, delay.max / 1e6), rssDeltaMiB: (peak - rss0) / 2 ** 20, tookS };
}

if (process.argv[2] === '--measure') {
  const [mode, n, profile, dyn, fill] = process.argv.slice(3);
  const c = await measure(mode as Mode, Number(n), profile ?? 'dgx-h100', dyn === 'dynamic', Number(fill));
  process.stdout.write(`${JSON.stringify(c)}\n`);
  process.exit(0);
}

const opts = new Command('bench:scorecard')
  .option('--nodes <n>', 'nodes the fleet serves', '50000')
  .option('--profile <preset>', 'machine of every node', 'dgx-h100')
  .option('--dynamic-mig', 'publish every MIG partition')
  .option('--fill <fraction>', 'share of the GPUs allocated, one claim each', '0.5')
  .option('--rounds <n>', 'rounds, each measuring both in fresh processes; medians are compared', '3')
  .option(
    '--json <file>',
    'where the JSON result goes (default: <cache>/bench-results/scorecard-<time>.json)',
  )
  .parse(process.argv.slice(3), { from: 'user' })
  .opts<{
    nodes: string;
    profile: string;
    dynamicMig?: boolean;
    fill: string;
    rounds: string;
    json?: string;
  }>();
const N = checked('bench/scorecard-cost', () => intFlag(opts.nodes, '--nodes', 1, 200000));
const ROUNDS = checked('bench/scorecard-cost', () => intFlag(opts.rounds, '--rounds', 1, 20));
const FILL = checked('bench/scorecard-cost', () => fillFlag(opts.fill));
const started = new Date();
const machine = hardware();
process.stderr.write(`bench/scorecard-cost: ${machine}\n`);
const runs: Record<Mode, Cost[]> = { whole: [], fleet: [] };
const self = fileURLToPath(import.meta.url);
for (let round = 1; round <= ROUNDS; round++)
  for (const mode of MODES) {
    const r = spawnSync(
      process.execPath,
      [
        '--expose-gc',
        self,
        '--measure',
        mode,
        String(N),
        opts.profile,
        opts.dynamicMig ? 'dynamic' : 'plain',
        String(FILL),
      ],
      { encoding: 'utf8', maxBuffer: 1 << 20 },
    );
    if (r.status !== 0)
      throw new FakegpuError(
        'bench/scorecard-cost',
        `the ${mode} measurement failed: ${r.stderr.trim().split('\n').at(-1) ?? ''}`,
      );
    const c = JSON.parse(r.stdout) as Cost;
    runs[mode].push(c);
    process.stderr.write(
      `bench/scorecard-cost: round ${round}/${ROUNDS}, ${mode}: pause ${c.pauseMaxMs.toFixed(1)} ms, +${c.rssDeltaMiB.toFixed(1)} MiB, ${c.tookS.toFixed(2)} s\n`,
    );
  }
const med = (m: Mode, k: keyof Cost): number => median(runs[m].map((c) => c[k]));
const f = (x: number, d = 1): string => x.toFixed(d);
console.log(
  `bench/scorecard-cost: ${N} nodes of ${opts.profile}${opts.dynamicMig ? ' (dynamic MIG)' : ''}, ${f(FILL * 100, 0)}% of GPUs allocated; median of ${ROUNDS} round(s); ${machine}\n`,
);
console.log('| first scorecard | longest event-loop pause ms | RSS added at peak MiB | took s |');
console.log('|---|---|---|---|');
console.log(
  `| ceiling: the cluster whole, one synchronous walk | ${f(med('whole', 'pauseMaxMs'))} | ${f(med('whole', 'rssDeltaMiB'))} | ${f(med('whole', 'tookS'), 2)} |`,
);
console.log(
  `| the fleet's scorecard, node by node in turns | ${f(med('fleet', 'pauseMaxMs'))} | ${f(med('fleet', 'rssDeltaMiB'))} | ${f(med('fleet', 'tookS'), 2)} |`,
);
const line = `scorecard: N=${N} pause_max_ms=${f(med('fleet', 'pauseMaxMs'))} rss_delta=${f(med('fleet', 'rssDeltaMiB'))}MiB took=${f(med('fleet', 'tookS'), 2)}s whole_pause_ms=${f(med('whole', 'pauseMaxMs'))} whole_rss_delta=${f(med('whole', 'rssDeltaMiB'))}MiB`;
const jsonPath = resultPath('scorecard', started, opts.json);
writeResult(jsonPath, {
  bench: 'scorecard-cost',
  started: started.toISOString(),
  hardware: machine,
  config: {
    nodes: N,
    profile: opts.profile,
    dynamicMig: opts.dynamicMig === true,
    fill: FILL,
    rounds: ROUNDS,
  },
  runs,
  line,
});
process.stderr.write(`bench/scorecard-cost: JSON result: ${jsonPath}\n`);
console.log(`\n${line}`);
