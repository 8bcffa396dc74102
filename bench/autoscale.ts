/**
 * bench/autoscale: an autoscaler buying GPU nodes for pending pods, end to end on the local real control
 * plane: Karpenter's KWOK provider (built from its module by `cluster up --with karpenter`) launches KWOK
 * nodes of a GPU instance type. With `--claims`, each pod's only GPU request is a ResourceClaim: Karpenter's
 * DRA allocator places it on the type's templates, fakegpu's fleet publishes the node's slices and the
 * scheduler allocates the claim from them. Without, pods ask `nvidia.com/gpu`, which Karpenter's nodes
 * offer as a device plugin would (`--karpenter-gpus extended-resource`), and the fleet serves none of them.
 *
 *   1. The cluster with Karpenter and the fleet, and a NodePool of one instance type (consolidation
 *      held off for the run).
 *   2. `--pods` pods asking for every GPU of the type and three quarters of its CPUs (`--pod-cpu`), created
 *      at once (32 in flight).
 *   3. Until every pod is Running (pods polled every 250 ms): when each Karpenter node and its GPU slice
 *      first arrive on watches of nodes and slices, when each pod runs. `running` is from the first create to the last pod Running;
 *      `publish_share` is the pods' summed time between their node appearing and its slice appearing
 *      (what the fleet adds) over their summed time from the first create to Running; `sim` is the time
 *      Karpenter's own metrics say its scheduling simulations took (karpenter_scheduler_scheduling_duration_seconds).
 *
 * Usage: npm run bench:autoscale -- --pods 200 [--claims] [--instance-type p5.48xlarge] [--pod-cpu n] [--keep] [--json file]
 */
import { copyFileSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { KubeConfig, Watch } from '@kubernetes/client-node';
import { Command } from 'commander';
import { intFlag } from '../src/cli/options.js';
import { cacheRoot } from '../src/local-cluster/build.js';
import { clusterDown, clusterUp } from '../src/local-cluster/cluster.js';
import { KARPENTER_METRICS, kwokNodePool } from '../src/local-cluster/karpenter-process.js';
import { judgeNominations, type KarpenterEvent, type Nominations } from './nominations.js';
import { parseExposition, sumBy } from './apiserver-metrics.js';
import { scorecardLine, scorecardOf } from './scorecard.js';
import { FakegpuError } from '../src/errors.js';
import { presetForInstanceType } from '../src/model/preset/index.js';
import { gpuCount } from '../src/model/preset/machine-spec.js';
import { DRIVER_NAME } from '../src/model/slice/build.js';
import {
  checked as checkedFlag,
  listAll,
  hardware,
  inParallel,
  logger,
  progress,
  Raw,
  resultPath,
  seconds,
  SLICES_PATH,
  writeResult,
} from './support.js';

const opts = new Command('bench:autoscale')
  .option('--pods <n>', 'pending pods, each asking for every GPU of one node', '200')
  .option('--instance-type <type>', 'the NodePool’s only instance type (one with a preset)', 'p5.48xlarge')
  .option('--claims', "each pod's GPUs as a ResourceClaim, placed by Karpenter's DRA allocator")
  .option(
    '--pod-cpu <n>',
    "CPUs each pod requests (default: three quarters of the type's vCPUs, as a pod of all its GPUs would; 0: none)",
  )
  .option(
    '--no-nics',
    "leave the type's NICs out of its slices and Karpenter's templates (the pods claim GPUs only)",
  )
  .option('--keep', 'leave the cluster running afterwards')
  .option('--json <file>', 'where the JSON result goes (default: the cache’s bench-results/)')
  .parse(process.argv.slice(3), { from: 'user' })
  .opts<{
    pods: string;
    instanceType: string;
    claims?: boolean;
    podCpu?: string;
    nics: boolean;
    keep?: boolean;
    json?: string;
  }>();

const log = logger('bench/autoscale');
const checked = <T>(parse: () => T): T => checkedFlag('bench/autoscale', parse);
const PODS = checked(() => intFlag(opts.pods, '--pods', 1, 5000));
const PRESET = checked(() => presetForInstanceType(opts.instanceType, '--instance-type'));
const GPUS = gpuCount(PRESET.spec.gpus);
const VCPUS = PRESET.instance?.vcpus ?? 1;
/**
 * A pod of every GPU asks for most of the node's CPUs too. Without, Karpenter's DRA allocator has no
 * cheap check that turns a full node away and simulates each pending pod on every node: at 1,000 pods it
 * stalled (bench/README.md); pods asking `nvidia.com/gpu` are turned away by their resources.
 */
const POD_CPU =
  opts.podCpu === undefined
    ? Math.floor((VCPUS * 3) / 4)
    : checked(() => intFlag(opts.podCpu ?? '', '--pod-cpu', 0, VCPUS));
const DIR = join(cacheRoot(), 'bench-autoscale-cluster');
const POOL = 'bench-autoscale';
const LABEL = 'fakegpu.dev/bench=autoscale';
const POLL_MS = 250;
/** The run fails once nothing has moved for this long. */
const STALL_MS = 300_000;

interface Meta {
  metadata: { name: string; labels?: Record<string, string> };
}
interface Pod extends Meta {
  spec?: { nodeName?: string };
  status?: { phase?: string };
}
interface Slice extends Meta {
  spec?: { nodeName?: string };
}

const started = new Date();
const MODE = opts.claims === true ? 'claims' : 'extended-resource';
// A run stopped half-way leaves its NodePool, pods and nodes in the directory's etcd: start from none.
await clusterDown({ dir: DIR, purge: true, log });
const e = await clusterUp({
  dir: DIR,
  nodeName: 'fakegpu-bench-host',
  with: ['karpenter'],
  karpenterGpus: MODE === 'claims' ? 'dra' : 'extended-resource',
  ...(opts.nics ? {} : { nics: false }),
  log,
});
try {
  const kc = new KubeConfig();
  kc.loadFromFile(e.KUBECONFIG);
  const raw = await Raw.of(kc, 32);
  await raw.ok(
    'POST',
    '/apis/karpenter.sh/v1/nodepools',
    JSON.stringify(
      // Nothing may be taken away while the run measures.
      // Room for a node per pod: a pool at its limit is Karpenter's refusal, not its allocator's.
      kwokNodePool(
        POOL,
        [opts.instanceType],
        { consolidationPolicy: 'WhenEmpty', consolidateAfter: '1h' },
        PODS * VCPUS,
      ),
    ),
  );
  if (MODE === 'claims')
    await raw.ok(
      'POST',
      '/apis/resource.k8s.io/v1/namespaces/default/resourceclaimtemplates',
      JSON.stringify({
        apiVersion: 'resource.k8s.io/v1',
        kind: 'ResourceClaimTemplate',
        metadata: { name: 'autoscale' },
        spec: {
          spec: {
            devices: { requests: [{ name: 'gpus', exactly: { deviceClassName: DRIVER_NAME, count: GPUS } }] },
          },
        },
      }),
    );
  log(
    `${PODS} pods of ${GPUS} GPUs and ${POD_CPU} CPUs on ${opts.instanceType} (${PRESET.name}); ${hardware()}`,
  );
  const nodeSeen = new Map<string, number>();
  const sliceSeen = new Map<string, number>();
  const runningAt = new Map<string, number>();
  const podNode = new Map<string, string>();
  const watch = new Watch(kc);
  const watches = await Promise.all([
    watch.watch(
      '/api/v1/nodes',
      { labelSelector: `karpenter.sh/nodepool=${POOL}` },
      (type: string, n: Meta) => {
        if (type === 'ADDED' && !nodeSeen.has(n.metadata.name))
          nodeSeen.set(n.metadata.name, performance.now());
      },
      () => undefined,
    ),
    watch.watch(
      SLICES_PATH,
      { fieldSelector: `spec.driver=${DRIVER_NAME}` },
      (type: string, x: Slice) => {
        const node = x.spec?.nodeName;
        if (type === 'ADDED' && node !== undefined && !sliceSeen.has(node))
          sliceSeen.set(node, performance.now());
      },
      () => undefined,
    ),
  ]);
  const t0 = performance.now();
  await inParallel(
    Array.from({ length: PODS }, (_, i) => i),
    32,
    async (i) => {
      await raw.ok(
        'POST',
        '/api/v1/namespaces/default/pods',
        JSON.stringify({
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { name: `autoscale-${i}`, labels: { 'fakegpu.dev/bench': 'autoscale' } },
          spec: {
            terminationGracePeriodSeconds: 0,
            ...(MODE === 'claims'
              ? { resourceClaims: [{ name: 'gpus', resourceClaimTemplateName: 'autoscale' }] }
              : {}),
            containers: [
              {
                name: 'train',
                image: 'registry.invalid/train:1',
                resources: {
                  ...(POD_CPU > 0 ? { requests: { cpu: String(POD_CPU) } } : {}),
                  ...(MODE === 'claims' ? {} : { limits: { 'nvidia.com/gpu': String(GPUS) } }),
                },
              },
            ],
          },
        }),
      );
    },
  );
  const stop = progress('pods Running', PODS, () => runningAt.size, log);
  let moved = performance.now();
  try {
    while (runningAt.size < PODS) {
      const now = performance.now();
      const before = nodeSeen.size + sliceSeen.size + runningAt.size;
      const pods = await listAll<Pod>(
        raw,
        '/api/v1/namespaces/default/pods',
        `labelSelector=${encodeURIComponent(LABEL)}`,
      );
      for (const p of pods) {
        if (p.status?.phase === 'Running' && !runningAt.has(p.metadata.name)) {
          runningAt.set(p.metadata.name, now);
          podNode.set(p.metadata.name, p.spec?.nodeName ?? '');
        }
      }
      if (nodeSeen.size + sliceSeen.size + runningAt.size > before) moved = now;
      else if (now - moved > STALL_MS)
        throw new FakegpuError(
          'bench/autoscale',
          `stalled: ${runningAt.size}/${PODS} pods Running, ${nodeSeen.size} nodes, ${sliceSeen.size} with slices`,
        );
      await sleep(POLL_MS);
    }
  } finally {
    stop();
    for (const w of watches) w.abort();
  }
  const running = seconds(t0);
  let publish = 0;
  let total = 0;
  for (const [pod, at] of runningAt) {
    const node = podNode.get(pod) ?? '';
    const n = nodeSeen.get(node);
    const s = sliceSeen.get(node);
    if (n !== undefined && s !== undefined) publish += Math.max(0, s - n);
    total += at - t0;
  }
  const share = total > 0 ? publish / total : 0;
  const sim = await simulationSeconds();
  const judged = await mismatches(raw, podNode);
  // Counted from a list at the end: the watch's count is only what it saw (it is not resumed).
  const nodes = (
    await listAll<Meta>(
      raw,
      '/api/v1/nodes',
      `labelSelector=${encodeURIComponent(`karpenter.sh/nodepool=${POOL}`)}`,
    )
  ).length;
  if (nodes !== nodeSeen.size) log(`the node watch saw ${nodeSeen.size} of the ${nodes} nodes launched`);
  // NVIDIA's GPUs only: in the extended-resource mode Karpenter's nodes publish none.
  const card = await scorecardOf(kc);
  const result = {
    bench: 'autoscale',
    started: started.toISOString(),
    hardware: hardware(),
    instanceType: opts.instanceType,
    pods: PODS,
    podCpu: POD_CPU,
    nodes,
    mode: MODE,
    runningSeconds: running,
    simulationSeconds: sim,
    nominated: judged.nominated,
    mismatches: judged.mismatches,
    mismatchExamples: judged.examples,
    nominatedElsewhere: judged.elsewhere,
    publishShare: share,
    pollMs: POLL_MS,
    scorecard: card,
  };
  writeResult(resultPath('autoscale', started, opts.json), result);
  log(`the fleet's share of the pods' wait (node seen to its GPU slice seen): ${share.toFixed(3)}`);
  log(
    `Karpenter nominated ${judged.nominated} of ${PODS} pods, ${judged.elsewhere} of them run on another node that fit as well; where it and the scheduler disagreed: ${judged.examples.join('; ') || 'nowhere'}`,
  );
  log(scorecardLine(MODE, card));
  process.stdout.write(
    `autoscale: mode=${MODE} pods=${PODS} nodes=${nodes} running=${running.toFixed(2)}s sim=${sim.toFixed(2)}s mismatches=${judged.mismatches.length}\n`,
  );
} finally {
  // Karpenter's log goes with the result, stalled or not: the purge below takes the cluster's logs.
  const kept = `${resultPath('autoscale', started, opts.json)}.karpenter.log`;
  try {
    mkdirSync(dirname(kept), { recursive: true });
    copyFileSync(join(DIR, 'logs', 'karpenter.log'), kept);
    log(`Karpenter's log: ${kept}`);
  } catch (err) {
    log(`Karpenter's log not kept: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (!opts.keep) await clusterDown({ dir: DIR, purge: true, log });
}

/** Karpenter's own time in scheduling simulations (provisioning and disruption alike), from its /metrics. */
async function simulationSeconds(): Promise<number> {
  const r = await fetch(`http://127.0.0.1:${KARPENTER_METRICS}/metrics`);
  const m = sumBy(
    parseExposition(await r.text()),
    'karpenter_scheduler_scheduling_duration_seconds_sum',
    {},
    [],
  );
  return m.get('') ?? 0;
}

/** Karpenter's view of the bench's pods against where they ran (nominations.ts). */
async function mismatches(raw: Raw, podNode: ReadonlyMap<string, string>): Promise<Nominations> {
  const events = await listAll<KarpenterEvent>(raw, '/api/v1/namespaces/default/events', '');
  const claims = await listAll<{ metadata: { name: string }; status?: { nodeName?: string } }>(
    raw,
    '/apis/karpenter.sh/v1/nodeclaims',
    '',
  );
  return judgeNominations(
    events,
    new Map(claims.map((c) => [c.metadata.name, c.status?.nodeName ?? ''])),
    podNode,
  );
}
