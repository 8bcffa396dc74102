/**
 * bench/faults: a fault on a share of a KWOK fleet's GPUs, from the GpuFault's creation to every taint
 * published, against a ceiling measured in the same run on the same cluster.
 *
 *   1. Ceiling: a minimal client PUTs exactly the tainted slices the fault calls for (computed here, with
 *      the fleet's own rules, from slices listed beforehand), over raw keep-alive HTTPS, many in flight.
 *   2. Fleet: a `fakegpu fleet` process, as users run it, serving every node; the benchmark creates the
 *      GpuFault and watches the slices until every expected taint is there.
 *
 * Both are timed by the same watch of the slices and alternate for `--rounds` rounds (3); medians are
 * compared. Between rounds the fault is removed and the fleet brings every slice back untainted.
 *
 * Usage: npm run bench:faults -- --nodes 1000 [--fraction 0.01] [--seed 1] [--rounds 3] [--keep] [--json <file>]
 */
import { KubeConfig } from '@kubernetes/client-node';
import { Command } from 'commander';
import { intFlag } from '../src/cli/options.js';
import { cacheRoot } from '../src/local-cluster/build.js';
import { clusterDown, FLEET_HTTP } from '../src/local-cluster/cluster.js';
import { join } from 'node:path';
import { DEFAULT_RELEASE } from '../src/model/device/release.js';
import { FakegpuError, show } from '../src/errors.js';
import { hitsOn, nvmlFaultList } from '../src/model/fault/apply.js';
import { GPUFAULTS_PATH, parseGpuFault } from '../src/model/fault/resource.js';
import { expectedTaints } from '../src/model/health/expected.js';
import { gpuSkeleton } from '../src/model/health/gpus.js';
import { ignoredXids } from '../src/model/health/taints.js';
import { KubeApi } from '../src/kube/api.js';
import type { DeviceTaint, ResourceSlice } from '../src/kube/types/resource.js';
import { ResumableWatch } from '../src/kube/watch.js';
import { resolveProfile } from '../src/process/profile-file.js';
import { modelNode } from '../src/model/render.js';
import { DRIVER_NAME } from '../src/model/slice/build.js';
import {
  get,
  inParallel,
  kwokNodes,
  logger,
  metric,
  Raw,
  SLICES_PATH,
  startFleet,
  stopFleet,
  until,
  checked as checkedFlag,
  hardware,
  median,
  onKwokCluster,
  resultPath,
  writeResult,
} from './support.js';

const opts = new Command('bench:faults')
  .option('--nodes <n>', 'KWOK nodes (dgx-h100, 8 GPUs each)', '1000')
  .option('--fraction <f>', 'share of the GPUs the fault hits', '0.01')
  .option('--seed <n>', "the fault's seed", '1')
  .option('--ceiling-in-flight <n>', 'requests in flight of the ceiling client', '64')
  .option('--rounds <n>', 'ceiling and fleet runs, alternating; medians are compared', '3')
  .option('--keep', 'leave the cluster running afterwards')
  .option('--json <file>', 'where the JSON result goes (default: <cache>/bench-results/faults-<time>.json)')
  .parse(process.argv.slice(3), { from: 'user' })
  .opts<{
    nodes: string;
    fraction: string;
    seed: string;
    ceilingInFlight: string;
    rounds: string;
    keep?: boolean;
    json?: string;
  }>();

const log = logger('bench/faults');
const checked = <T>(parse: () => T): T => checkedFlag('bench/faults', parse);
const N = checked(() => intFlag(opts.nodes, '--nodes', 1, 20000));
const ROUNDS = checked(() => intFlag(opts.rounds, '--rounds', 1, 10));
const IN_FLIGHT = checked(() => intFlag(opts.ceilingInFlight, '--ceiling-in-flight', 1, 1000));
const SEED = checked(() => intFlag(opts.seed, '--seed', 0, 2 ** 32 - 1));
const FRACTION = checked(() => {
  const x = Number(opts.fraction);
  if (opts.fraction.trim() === '' || !(x > 0 && x <= 1))
    throw new FakegpuError('--fraction', `${show(opts.fraction)} is not a number in (0, 1]`);
  return opts.fraction.trim();
});
const PROFILE = 'dgx-h100';
const DIR = join(cacheRoot(), 'bench-faults-cluster');
const f = (n: number, d = 2): string => n.toFixed(d);

const FAULT = {
  apiVersion: 'fakegpu.dev/v1alpha1',
  kind: 'GpuFault',
  metadata: { name: 'bench-xid' },
  spec: {
    nodeSelector: { matchLabels: { type: 'kwok' } },
    fraction: FRACTION,
    seed: SEED,
    fault: { type: 'Xid', xid: 79 },
  },
};

interface Stored extends ResourceSlice {
  metadata: ResourceSlice['metadata'] & { name: string; resourceVersion?: string };
}

/** Device keys (`node/device`) with an XID 79 taint, by slice name, kept by a watch. */
class TaintWatch {
  private readonly bySlice = new Map<string, Set<string>>();
  private readonly watch: ResumableWatch;
  private waiter: { want: Set<string>; done: () => void } | null = null;

  constructor(kc: KubeConfig, items: readonly Stored[], rv: string) {
    for (const s of items) this.note(s);
    this.watch = new ResumableWatch(
      new KubeApi(kc),
      SLICES_PATH,
      { fieldSelector: `spec.driver=${DRIVER_NAME}` },
      rv,
      {
        event: (type, obj) => {
          const s = obj as Stored;
          if (type === 'DELETED') this.bySlice.delete(s.metadata.name);
          else this.note(s);
          this.check();
        },
        expired: () => {
          throw new FakegpuError('bench/faults', 'the slice watch expired; run again');
        },
      },
    );
  }

  private note(s: Stored): void {
    const keys = new Set(
      (s.spec.devices ?? [])
        .filter((d) => d.taints?.some((t) => t.key === 'gpu.nvidia.com/xid' && t.value === '79'))
        .map((d) => `${s.spec.nodeName}/${d.name}`),
    );
    this.bySlice.set(s.metadata.name, keys);
  }

  tainted(): Set<string> {
    return new Set([...this.bySlice.values()].flatMap((s) => [...s]));
  }

  private check(): void {
    const w = this.waiter;
    if (!w) return;
    const now = this.tainted();
    if (now.size === w.want.size && [...w.want].every((k) => now.has(k))) {
      this.waiter = null;
      w.done();
    }
  }

  /** Resolves once exactly `want` is tainted. */
  until(want: Set<string>, timeoutMs: number): Promise<void> {
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => {
        this.waiter = null;
        reject(new FakegpuError('bench/faults', `timed out: ${this.tainted().size} of ${want.size} taints`));
      }, timeoutMs);
      this.waiter = {
        want,
        done: () => {
          clearTimeout(t);
          resolve();
        },
      };
      this.check();
    });
  }

  stop(): void {
    this.watch.stop();
  }
}

async function listSlices(raw: Raw): Promise<{ items: Stored[]; rv: string }> {
  const items: Stored[] = [];
  let cont = '';
  let rv: string;
  do {
    const page = JSON.parse(
      await raw.ok(
        'GET',
        `${SLICES_PATH}?limit=500&fieldSelector=spec.driver%3D${DRIVER_NAME}${cont ? `&continue=${encodeURIComponent(cont)}` : ''}`,
      ),
    ) as { items: Stored[]; metadata: { continue?: string; resourceVersion: string } };
    items.push(...page.items);
    cont = page.metadata.continue ?? '';
    rv = page.metadata.resourceVersion;
  } while (cont);
  return { items, rv };
}

interface Round {
  ceilingS: number;
  fleetS: number;
  fleetMetricS: number;
}

async function run(
  kubeconfig: string,
): Promise<{ gpus: number; hits: number; nodesHit: number; rounds: Round[] }> {
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfig);
  const raw = await Raw.of(kc, IN_FLIGHT);
  const nodes = await kwokNodes(raw);
  if (nodes.length !== N)
    throw new FakegpuError('bench/faults', `expected ${N} KWOK nodes, found ${nodes.length}`);
  const model = modelNode(resolveProfile(PROFILE), {
    nodeName: 'fakegpu-bench-template',
    dynamicMig: false,
    driverName: DRIVER_NAME,
    kubernetesVersion: { major: 1, minor: 37, patch: 0 },
    release: DEFAULT_RELEASE,
  });
  const skeleton = gpuSkeleton(model.machine, model.devices);
  const fault = parseGpuFault({
    ...FAULT,
    metadata: { name: 'bench-xid', creationTimestamp: '2026-01-01T00:00:00Z' },
  });
  // The taints the fault calls for, by the fleet's own rules, computed here once.
  const want = new Map<string, Map<string, DeviceTaint[]>>();
  for (const n of nodes) {
    const gpus = skeleton.gpus(n.name);
    const hits = hitsOn([fault], { name: n.name, labels: { type: 'kwok' } }, gpus, new Date());
    const t = expectedTaints(gpus, nvmlFaultList(hits), ignoredXids(''));
    if (t.size > 0) want.set(n.name, t);
  }
  const wantKeys = new Set([...want].flatMap(([node, t]) => [...t.keys()].map((d) => `${node}/${d}`)));
  log(`the fault hits ${wantKeys.size} of ${N * 8} GPUs on ${want.size} nodes`);

  const rounds: Round[] = [];
  let fleet = startFleet(kubeconfig, [`--profile=${PROFILE}`], { dynamicMig: false, log });
  const converged = async (): Promise<boolean> => {
    if (fleet.exitCode !== null) throw new FakegpuError('bench/faults', 'the fleet exited');
    return (await get(`http://${FLEET_HTTP}/readyz`)).status === 200;
  };
  try {
    log(`the fleet publishes ${N} nodes`);
    await until('the fleet to publish every node', 900_000, converged);
    for (let round = 1; round <= ROUNDS; round++) {
      // Ceiling, with no fleet to put the slices back: the same tainted slices, PUT as fast as this API
      // server takes them.
      await stopFleet(fleet);
      let { items, rv } = await listSlices(raw);
      let w = new TaintWatch(kc, items, rv);
      const bodies = items
        .filter((s) => s.spec.devices?.some((d) => want.get(s.spec.nodeName)?.has(d.name)))
        .map((s) => {
          const t = want.get(s.spec.nodeName);
          const { resourceVersion: _rv, ...metadata } = s.metadata;
          const devices = (s.spec.devices ?? []).map((d) => {
            const taints = t?.get(d.name);
            return taints ? { ...d, taints } : d;
          });
          return {
            name: s.metadata.name,
            body: JSON.stringify({ ...s, metadata, spec: { ...s.spec, devices } }),
          };
        });
      let t0 = performance.now();
      await inParallel(bodies, IN_FLIGHT, async (b) => {
        await raw.ok('PUT', `${SLICES_PATH}/${b.name}`, b.body);
      });
      await w.until(wantKeys, 60_000);
      const ceilingS = (performance.now() - t0) / 1000;
      w.stop();
      log(`round ${round}/${ROUNDS}, ceiling: ${bodies.length} slices in ${f(ceilingS, 3)} s`);

      // The fleet, started again, puts back what is not its own; then the GpuFault is created and
      // timed to every taint published.
      ({ items, rv } = await listSlices(raw));
      w = new TaintWatch(kc, items, rv);
      fleet = startFleet(kubeconfig, [`--profile=${PROFILE}`], { dynamicMig: false, log });
      await w.until(new Set(), 300_000);
      w.stop();
      await until('the fleet converged again', 300_000, converged);
      ({ items, rv } = await listSlices(raw));
      w = new TaintWatch(kc, items, rv);
      t0 = performance.now();
      await raw.ok('POST', GPUFAULTS_PATH, JSON.stringify(FAULT));
      await w.until(wantKeys, 120_000);
      const fleetS = (performance.now() - t0) / 1000;
      w.stop();
      await until('the fleet to report the fault published', 60_000, async () => {
        const m = (await get(`http://${FLEET_HTTP}/metrics`)).text;
        return metric(m, 'fakegpu_fleet_fault_publish_seconds_count') >= 1;
      });
      const m = (await get(`http://${FLEET_HTTP}/metrics`)).text;
      rounds.push({ ceilingS, fleetS, fleetMetricS: metric(m, 'fakegpu_fleet_fault_publish_seconds_sum') });
      log(`round ${round}/${ROUNDS}, fleet: ${f(fleetS, 3)} s from create to every taint`);
      // Repaired: the fleet's nodes come back untainted.
      ({ items, rv } = await listSlices(raw));
      w = new TaintWatch(kc, items, rv);
      await raw.ok('DELETE', `${GPUFAULTS_PATH}/bench-xid`);
      await w.until(new Set(), 120_000);
      w.stop();
      await until('the fleet converged again', 120_000, converged);
    }
  } finally {
    await raw.send('DELETE', `${GPUFAULTS_PATH}/bench-xid`).catch(() => undefined);
    await stopFleet(fleet);
  }
  return { gpus: N * 8, hits: wantKeys.size, nodesHit: want.size, rounds };
}

const started = new Date();
log(`starting the cluster with ${N} KWOK nodes of ${PROFILE}`);
await clusterDown({ dir: DIR, purge: true, log });
const r = await onKwokCluster(
  { dir: DIR, kwokNodes: N, kwokProfile: PROFILE, keep: opts.keep === true, log },
  run,
);
const ceilingS = median(r.rounds.map((x) => x.ceilingS));
const fleetS = median(r.rounds.map((x) => x.fleetS));
const jsonPath = resultPath('faults', started, opts.json);
writeResult(jsonPath, {
  bench: 'faults',
  started: started.toISOString(),
  hardware: hardware(),
  config: {
    nodes: N,
    profile: PROFILE,
    fraction: Number(FRACTION),
    seed: SEED,
    rounds: ROUNDS,
    ceilingInFlight: IN_FLIGHT,
  },
  gpus: r.gpus,
  hits: r.hits,
  nodesHit: r.nodesHit,
  rounds: r.rounds,
  ceilingS,
  fleetS,
  ratio: ceilingS / fleetS,
});
log(`JSON result: ${jsonPath}`);
console.log(
  `bench/faults: ${N} KWOK nodes of ${PROFILE}, ${r.gpus} GPUs; XID 79 on ${r.hits} of them (fraction ${FRACTION}, seed ${SEED}) on ${r.nodesHit} nodes; median of ${ROUNDS} round(s)\n`,
);
console.log('| every taint published | seconds | rounds | vs ceiling |\n|---|---|---|---|');
console.log(
  `| ceiling: the tainted slices PUT over raw HTTPS, ${IN_FLIGHT} in flight | ${f(ceilingS, 3)} | ${r.rounds.map((x) => f(x.ceilingS, 3)).join(', ')} | 1.00x |`,
);
console.log(
  `| fakegpu fleet: GpuFault created → every taint seen by a watch | ${f(fleetS, 3)} | ${r.rounds.map((x) => f(x.fleetS, 3)).join(', ')} | ${f(fleetS / ceilingS)}x |`,
);
console.log(
  `| (the fleet's own fakegpu_fleet_fault_publish_seconds: seen → all written) | ${f(median(r.rounds.map((x) => x.fleetMetricS)), 3)} | | |`,
);
console.log(
  `\nfaults: N=${N} gpus=${r.hits} publish=${f(fleetS, 3)}s ceiling=${f(ceilingS, 3)}s ratio=${f(ceilingS / fleetS)}`,
);
