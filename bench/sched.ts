/**
 * bench/sched: what NVIDIA-faithful slices cost the real kube-scheduler, in the shape of ClusterLoader2's
 * DRA test (kubernetes/perf-tests clusterloader2/testing/dra): on N KWOK nodes, fill the devices to
 * `--fill` (90%) with long-running one-device claim pods created at `--fill-qps` (20), then churn
 * short-lived pods at `--churn-qps` (5) for `--churn-seconds` (60), each deleted `--churn-runtime` (30) s
 * after it runs (KWOK's stages here complete Job pods at once, never after a while, so the bench deletes
 * them itself, which frees their claims as a Job's end does). Each pod has one claim from a
 * ResourceClaimTemplate, as CL2's Jobs do.
 *
 *   1. NVIDIA-faithful: a `fakegpu fleet` process, as users run it, publishes gpu.nvidia.com slices for
 *      every node (`--profile`, dgx-h100: 8 GPUs; with `--dynamic-mig` every MIG partition, counters
 *      included); the claims are of `--variant`:
 *        plain            one device of DeviceClass gpu.nvidia.com
 *        cel              the same with a CEL selector on productName and the memory capacity
 *        first-available  firstAvailable: a GPU of another product first (none there), then any GPU
 *        mig              one `--mig-profile` partition of DeviceClass mig.nvidia.com (implies --dynamic-mig)
 *        nic-aligned      a GPU and an RDMA NIC (fleet --nics) with matchAttribute pcieRoot
 *   2. Generic, in the same run on the same nodes: the fleet stopped and its slices deleted, the bench
 *      publishes what ClusterLoader2's KWOK DRA driver writes: driver cl2-gpu.kwok.x-k8s.io, one slice per
 *      node, pool = node, as many devices as the profile has GPUs (8) and no attributes; a DeviceClass
 *      selecting that driver; the same workload with a plain one-device claim.
 *
 * Each phase reports throughput (pods Running per second, from the first create to the last pod Running)
 * and pod startup p50/p90/p99 (as CL2's PodStartupLatency: from creation to the pod seen Running by a
 * watch; here from the bench's POST, in milliseconds, rather than the whole-second creationTimestamp).
 * The ratio is faithful fill pods/s over generic fill pods/s. "Fill" counts what one node can grant at
 * once: GPUs, GPU+NIC pairs under one root, or with `--variant mig` partitions of `--mig-profile`
 * (1g.10gb: 7 per GPU, so 7x the generic phase's pods). At a paced `--fill-qps` both phases may simply
 * keep up (ratio ~1: the startup latencies then tell the cost); `--fill-qps 0` creates as fast as
 * `--in-flight` allows and measures what the scheduler sustains. kube-controller-manager makes each
 * pod's claim from its template at its client's rate (20 requests/s by default, two writes a pod), which
 * bounds both phases alike. Between phases the bench deletes the pods and takes their claims away itself
 * (finalizers off), rather than wait minutes for the controller.
 *
 * `--kubeconfig <file>` runs against an existing cluster (KWOK installed, nodes present) instead of the
 * bench's own: the nodes are those `--node-selector` picks (type=kwok), none may be served by another
 * fleet or plugin, and everything the bench made is removed afterwards.
 *
 * Progress goes to stderr, a markdown table to stdout and a JSON result to `--json` (default:
 * `<cache>/bench-results/sched-<timestamp>.json`, the cache being $FAKEGPU_CACHE or ~/.cache/fakegpu).
 *
 * Usage: npm run bench:sched -- --nodes 500 [--variant plain|cel|first-available|mig|nic-aligned]
 *        [--dynamic-mig] [--mig-profile 1g.10gb] [--fill 0.9] [--fill-qps 20] [--churn-seconds 60]
 *        [--churn-qps 5] [--churn-runtime 30] [--kubeconfig <file> --node-selector type=kwok]
 *        [--json <file>] [--keep]
 */
import { join, resolve } from 'node:path';
import { Command } from 'commander';
import { intFlag } from '../src/cli/options.js';
import { cacheRoot } from '../src/local-cluster/build.js';
import { FakegpuError, show } from '../src/errors.js';
import { resolveProfile } from '../src/process/profile-file.js';
import { type Variant, VARIANTS } from './sched/claims.js';
import { type Config, log } from './sched/config.js';
import { onCluster } from './sched/cluster.js';
import { placement, requirements } from './sched/placement.js';
import { report, resultJson } from './sched/report.js';
import { nodeShape } from './sched/shape.js';
import { checked as checkedFlag, hardware, resultPath, writeResult } from './support.js';

const cmd = new Command('bench:sched')
  .option('--nodes <n>', 'KWOK nodes (with --kubeconfig: every node --node-selector picks)', '500')
  .option('--profile <preset>', 'machine of every node', 'dgx-h100')
  .option('--variant <v>', `claim shape of the NVIDIA-faithful phase: ${VARIANTS.join(', ')}`, 'plain')
  .option(
    '--dynamic-mig',
    'the fleet publishes every MIG partition (shared counters); implied by --variant mig',
  )
  .option('--mig-profile <name>', 'MIG partition each pod asks for with --variant mig', '1g.10gb')
  .option('--fill <fraction>', "fill this share of the nodes' devices with long-running pods", '0.9')
  .option('--fill-qps <n>', 'fill pods created per second (0: as fast as --in-flight allows)', '20')
  .option('--churn-seconds <s>', 'create short-lived pods for this long after the fill (0: no churn)', '60')
  .option('--churn-qps <n>', 'short-lived pods created per second', '5')
  .option('--churn-runtime <s>', 'a short-lived pod is deleted this long after it runs', '30')
  .option('--in-flight <n>', 'API requests of the bench in flight at most', '32')
  .option('--kubeconfig <file>', 'run against this existing cluster (KWOK installed, nodes present)')
  .option('--node-selector <labels>', 'with --kubeconfig: the nodes to use (a label selector)', 'type=kwok')
  .option('--json <file>', 'where the JSON result goes (default: <cache>/bench-results/sched-<time>.json)')
  .option('--keep', "leave the bench's own cluster running afterwards")
  // process.argv: node, scripts/bench.mjs, the benchmark's name, then its flags.
  .parse(process.argv.slice(3), { from: 'user' });
const opts = cmd.opts<{
  nodes: string;
  profile: string;
  variant: string;
  dynamicMig?: boolean;
  migProfile: string;
  fill: string;
  fillQps: string;
  churnSeconds: string;
  churnQps: string;
  churnRuntime: string;
  inFlight: string;
  kubeconfig?: string;
  nodeSelector: string;
  json?: string;
  keep?: boolean;
}>();

const checked = <T>(parse: () => T): T => checkedFlag('bench/sched', parse);
const nodes = checked(() => intFlag(opts.nodes, '--nodes', 1, 20000));
const variant = checked((): Variant => {
  const v = VARIANTS.find((x) => x === opts.variant);
  if (!v) throw new FakegpuError('--variant', `${show(opts.variant)} is not one of ${VARIANTS.join(', ')}`);
  return v;
});
const dynamicMig = opts.dynamicMig === true || variant === 'mig';
const fill = checked(() => {
  const x = Number(opts.fill);
  if (opts.fill.trim() === '' || !(x > 0 && x <= 1))
    throw new FakegpuError('--fill', `${show(opts.fill)} is not a number in (0, 1]`);
  return x;
});
const fillQps = checked(() => intFlag(opts.fillQps, '--fill-qps', 0, 10000));
const churnS = checked(() => intFlag(opts.churnSeconds, '--churn-seconds', 0, 86400));
const churnQps = checked(() => intFlag(opts.churnQps, '--churn-qps', 1, 10000));
const churnRuntimeS = checked(() => intFlag(opts.churnRuntime, '--churn-runtime', 0, 86400));
const inFlight = checked(() => intFlag(opts.inFlight, '--in-flight', 1, 1000));
const selector = opts.nodeSelector.trim();

const started = new Date();
const jsonPath = resultPath('sched', started, opts.json);
const machine = hardware();

const cfg: Config = {
  nodes,
  nodesGiven: cmd.getOptionValueSource('nodes') === 'cli',
  profile: opts.profile,
  variant,
  dynamicMig,
  migProfile: opts.migProfile,
  fill,
  fillQps,
  churnS,
  churnQps,
  churnRuntimeS,
  inFlight,
  kubeconfig: opts.kubeconfig === undefined ? undefined : resolve(opts.kubeconfig),
  selector,
  shape: checked(() =>
    nodeShape(resolveProfile(opts.profile, '--profile'), {
      name: opts.profile,
      variant,
      dynamicMig,
      migProfile: opts.migProfile,
    }),
  ),
  placement: placement(checked(() => requirements(selector))),
  dir: join(cacheRoot(), 'bench-sched-cluster'),
  keep: opts.keep === true,
};

log(machine);
const run = { cfg, results: await onCluster(cfg), hardware: machine, started };
writeResult(jsonPath, resultJson(run));
log(`JSON result: ${jsonPath}`);
for (const line of report(run)) console.log(line);
