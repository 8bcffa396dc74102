/**
 * bench/fleet: `fakegpu fleet` at scale on the local real control plane (etcd, kube-apiserver,
 * kube-scheduler, kube-controller-manager, KWOK), against a ceiling measured in the same run.
 *
 *   1. Ceiling: a minimal client posts the very slice objects the fleet would write, stamped from the
 *      profile's template as the fleet stamps them, over raw keep-alive HTTPS with many requests in
 *      flight: as fast as this API server takes them.
 *   2. Fleet: a `fakegpu fleet` process, as users run it, from start to every node published; its own
 *      metrics give the API requests it made. Its memory is measured against an idle fleet (a selector
 *      that matches no node) started the same way, so the per-node figure is growth, not Node's baseline.
 *   3. Scheduling: pods with one-GPU claims until the GPUs are `--fill` full; pods bound per second.
 *
 * Ceiling and fleet alternate for `--rounds` rounds (3) and their medians are compared: on a small
 * shared machine one run of either swings by a fifth.
 *
 * Usage: npm run bench:fleet -- --nodes 1000 [--dynamic-mig] [--profile dgx-h100] [--fill 0.9] [--rounds 3]
 *        [--json <file>]: a JSON result goes there (default: <cache>/bench-results/fleet-<time>.json).
 *        [--apiserver-profiles]: the API server's allocations and a CPU profile of each phase are kept
 *        beside the result (`<result>-profiles/`), with each round's fleet log.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { KubeConfig } from '@kubernetes/client-node';
import { Command } from 'commander';
import { intFlag } from '../src/cli/options.js';
import { cacheRoot } from '../src/local-cluster/build.js';
import { clusterDown, FLEET_DCGM, FLEET_HTTP } from '../src/local-cluster/cluster.js';
import { DEFAULT_RELEASE } from '../src/model/device/release.js';
import { FakegpuError } from '../src/errors.js';
import { KWOK_ANNOTATION } from '../src/kube/kwok.js';
import type { DeviceAttribute, ResourceSlice } from '../src/kube/types/resource.js';
import { ResumableWatch } from '../src/kube/watch.js';
import { serverVersion } from '../src/kube/client.js';
import { resolveProfile } from '../src/process/profile-file.js';
import { renderSlices } from '../src/model/render.js';
import { nodeSlices, SliceTemplate } from '../src/fleet/template.js';
import { DRIVER_NAME } from '../src/model/slice/build.js';
import { replicaLine, replicaRuns, type ReplicaRun } from './fleet-replicas.js';
import { reportCost, reportLine, WHOLE_MAX_NODES, type ReportCost } from './report-cost.js';
import { SHARDED_BY_LABEL } from '../src/kube/sharding/exclusion.js';
import { ApiserverPhases, type ApiserverPhase } from './apiserver-metrics.js';
import { loopThreadTimes } from './machine-cpu.js';
import {
  deleteAllSlices,
  postCeiling,
  get,
  inParallel,
  kwokNodes,
  logger,
  metric,
  Raw,
  seconds,
  sliceNames,
  startFleet,
  stopFleet,
  SCRAPE_EVERY_MS,
  until,
  type Node,
  checked as checkedFlag,
  fillFlag,
  longGcs,
  controlPlaneMemory,
  procStatusKb,
  showControlPlaneMemory,
  hardware,
  progress,
  resultPath,
  writeResult,
  median,
  onKwokCluster,
} from './support.js';

const opts = new Command('bench:fleet')
  .option('--nodes <n>', 'KWOK nodes', '100')
  .option('--profile <preset>', 'machine of every node', 'dgx-h100')
  .option('--dynamic-mig', 'publish every MIG partition')
  .option('--fill <fraction>', 'schedule one-GPU pods until this share of the GPUs is taken (0: skip)', '0.9')
  .option('--ceiling-in-flight <n>', 'requests in flight of the ceiling client', '64')
  .option('--rounds <n>', 'ceiling and fleet runs, alternating; medians are compared', '3')
  .option(
    '--fleet-concurrency <n,...>',
    "the serving fleet's --concurrency, round by round from the list (default: the fleet's own)",
  )
  .option('--kwok-controllers <k>', 'KWOK controllers the nodes are split between (cluster up)', '1')
  .option('--keep', 'leave the cluster running afterwards')
  .option(
    '--replicas <list>',
    'instead of the rounds: the nodes published by each count of sharded fleet replicas in turn, e.g. 1,2,4',
  )
  .option(
    '--kubeconfig <file>',
    "with --replicas: an existing cluster's KWOK nodes instead of the bench's own cluster (no fleet may serve them)",
  )
  .option('--json <file>', 'where the JSON result goes (default: <cache>/bench-results/fleet-<time>.json)')
  .option(
    '--apiserver-profiles',
    "keep the API server's allocation and CPU profiles of every phase beside the result, and each fleet's log",
  )
  // process.argv: node, scripts/bench.mjs, the benchmark's name, then its flags.
  .parse(process.argv.slice(3), { from: 'user' })
  .opts<{
    nodes: string;
    profile: string;
    dynamicMig?: boolean;
    fill: string;
    ceilingInFlight: string;
    rounds: string;
    fleetConcurrency?: string;
    kwokControllers: string;
    keep?: boolean;
    json?: string;
    replicas?: string;
    kubeconfig?: string;
    apiserverProfiles?: boolean;
  }>();

const checked = <T>(parse: () => T): T => checkedFlag('bench/fleet', parse);
const EXISTING = opts.kubeconfig === undefined ? null : resolve(opts.kubeconfig);
/** With --kubeconfig and no --nodes, every KWOK node the cluster has. */
const NODES_GIVEN = process.argv.slice(3).some((a) => a === '--nodes' || a.startsWith('--nodes='));
const N = checked(() => intFlag(opts.nodes, '--nodes', 1, 100000));
const ROUNDS = checked(() => intFlag(opts.rounds, '--rounds', 1, 10));
const IN_FLIGHT = checked(() => intFlag(opts.ceilingInFlight, '--ceiling-in-flight', 1, 1000));
const FLEET_CONCURRENCY = (opts.fleetConcurrency?.split(',') ?? []).map((x) =>
  checked(() => intFlag(x.trim(), '--fleet-concurrency', 1, 1000)),
);
/** Round `round`'s fleet concurrency: the list's, in turn; null: the fleet's default. */
const concurrencyOf = (round: number): number | null =>
  FLEET_CONCURRENCY.length === 0 ? null : (FLEET_CONCURRENCY[(round - 1) % FLEET_CONCURRENCY.length] ?? null);
const KWOK_CONTROLLERS = checked(() => intFlag(opts.kwokControllers, '--kwok-controllers', 1, 64));
const FILL = checked(() => fillFlag(opts.fill));
const dynamicMig = opts.dynamicMig === true;
const REPLICAS =
  opts.replicas === undefined
    ? null
    : checked(() => (opts.replicas ?? '').split(',').map((x) => intFlag(x.trim(), '--replicas', 1, 8)));
const profile = checked(() => resolveProfile(opts.profile, '--profile'));
const DIR = join(cacheRoot(), 'bench-fleet-cluster');
const NS = 'fakegpu-bench';
const SETTLE_MS = 20_000;
const QUIET_MS = 8_000;
const SETTLE_MAX_MS = 240_000;

const log = logger('bench/fleet');
const f = (n: number, d = 2): string => n.toFixed(d);

/** A slice body as the fleet posts it for a node with an empty pool: owned by the Node. */
function body(generateName: string, spec: string, node: Node): string {
  const owner = { apiVersion: 'v1', kind: 'Node', name: node.name, uid: node.uid, controller: true };
  return `{"apiVersion":"resource.k8s.io/v1","kind":"ResourceSlice","metadata":${JSON.stringify({ generateName, ownerReferences: [owner] })},"spec":${spec}}`;
}

function isGpu(a: DeviceAttribute | undefined): boolean {
  return a !== undefined && 'string' in a && a.string === 'gpu';
}

/**
 * The fleet's RSS once it is done. Ready is not done: the watch echo of its own writes can arrive for
 * many seconds after the last write, and every event is garbage until the settler's collection after
 * the fleet falls quiet. A figure taken at a fixed time after ready counted that garbage in some rounds
 * and not in others, so the wait ends once the fleet's requests and watch events have stopped for
 * QUIET_MS (at least SETTLE_MS after ready, at most SETTLE_MAX_MS). Idle and serving fleets alike.
 */
async function settledRssKiB(p: ChildProcess, what: string): Promise<number> {
  const t0 = performance.now();
  const activity = async (): Promise<number> => {
    const m = (await get(`http://${FLEET_HTTP}/metrics`)).text;
    return metric(m, 'fakegpu_fleet_api_requests') + metric(m, 'fakegpu_fleet_watch_events');
  };
  const first = await activity();
  let last = first;
  let quietSince = t0;
  const deltas: number[] = [];
  for (;;) {
    await sleep(2_000);
    const n = await activity();
    const now = performance.now();
    // A node's heartbeat or a reopened watch is a trickle, as the settler counts it.
    if (n - last > 20) quietSince = now;
    deltas.push(n - last);
    last = n;
    const waited = now - t0;
    if (waited >= SETTLE_MS && now - quietSince >= QUIET_MS) break;
    if (waited >= SETTLE_MAX_MS) {
      log(`${what}: still busy ${f(waited / 1000, 0)} s after ready; measured as it is`);
      break;
    }
  }
  log(
    `${what}: quiet after ${f((quietSince - t0) / 1000, 0)} s; requests and watch events since ready, per 2 s: ${deltas.join(' ')}`,
  );
  return procStatusKb(p.pid ?? 0)('VmRSS');
}

/**
 * Where the fleet's memory is, from its own metrics: V8's heap spaces (size reserved, MiB) and what
 * lives outside the heap. RSS alone cannot tell a grown young generation from retained state.
 */
async function memoryBreakdown(pid: number): Promise<string> {
  const kb = procStatusKb(pid);
  const text = (await get(`http://${FLEET_HTTP}/metrics`)).text;
  const spaces = [
    ...text.matchAll(/^fakegpu_fleet_nodejs_heap_space_size_(total|used)_bytes\{space="(\w+)"\} (\S+)$/gm),
  ];
  const mib = (b: number) => f(b / 2 ** 20, 1);
  const parts = ['new', 'old', 'code', 'large_object', 'map'].map((space) => {
    const total = Number(spaces.find((m) => m[1] === 'total' && m[2] === space)?.[3] ?? 0);
    const used = Number(spaces.find((m) => m[1] === 'used' && m[2] === space)?.[3] ?? 0);
    return `${space} ${mib(total)} (${mib(used)} used)`;
  });
  const external = metric(text, 'fakegpu_fleet_nodejs_external_memory_bytes');
  const collections = metric(text, 'fakegpu_fleet_memory_collections');
  return `RSS MiB: anon ${mib(kb('RssAnon') * 1024)}, file ${mib(kb('RssFile') * 1024)}; heap MiB: ${parts.join(', ')}; external ${mib(external)}; settling collections ${collections}`;
}

/**
 * A scrape that saw the fleet's event loop held past 100 ms: when (seconds from spawn), how long, whether
 * the scorecard was out yet (a delay of the fleet's start, its lists, tells apart from one of the
 * scorecard), and what the loop's thread did in the scrape's window (the time since the scrape before,
 * which the delay lies in): ran on a core, or waited in the run queue for one.
 */
interface LongPause {
  atS: number;
  ms: number;
  scorecard: boolean;
  windowMs: number;
  ranMs: number;
  waitedMs: number;
}

/**
 * The long delays, each with its thread's times, and of them: those longer than the thread ran in their
 * window (not its own code alone, which runs all along), and of those, the ones whose unrun part the
 * thread spent waiting in the run queue (the machine's cores given to others); the rest were off a core
 * without queueing: a sleep of the thread's own (a collector's helpers, synchronous I/O, page faults).
 */
function longPausesLine(ps: readonly LongPause[]): string {
  const each = ps.map(
    (p) =>
      `${p.ms} ms at ${f(p.atS, 1)} s${p.scorecard ? '' : ' (no scorecard yet)'} [in ${f(p.windowMs, 0)} ms: ran ${f(p.ranMs, 0)}, waited for a core ${f(p.waitedMs, 0)}]`,
  );
  const known = ps.filter((p) => !Number.isNaN(p.ranMs));
  const notOwn = known.filter((p) => p.ranMs < p.ms);
  const queued = notOwn.filter((p) => p.waitedMs >= p.ms - p.ranMs);
  return `event-loop delays past 100 ms: ${each.join(', ')}; of ${known.length}, ${notOwn.length} longer than the loop's thread ran around them, ${queued.length} of those with the rest spent waiting for a core`;
}

interface Results {
  slices: number;
  devices: number;
  gpus: number;
  renderS: number;
  /** Seconds, one per round. */
  ceilings: number[];
  fleets: {
    s: number;
    wallS: number;
    requests: number;
    writes: number;
    concurrency: number | null;
    /** The fleet's longest event-loop delay over the scrapes of its phase, and its scorecard's GPUs as scraped. */
    pauseMaxMs: number;
    scorecardGpus: number;
    /** Scrapes that saw a delay past 100 ms. */
    longPauses: LongPause[];
  }[];
  report: ReportCost;
  /** KiB, one per round. */
  idleKiB: number[];
  servingKiB: number[];
  /** MiB, after the last round's fleet published. */
  controlPlane: ReturnType<typeof controlPlaneMemory>;
  pods: number;
  createdS: number;
  boundS: number;
  dcgm: DcgmCost | null;
  /** The API server's own view of each round's ceiling and fleet phases. */
  apiserver: { ceiling: ApiserverPhase[]; fleet: ApiserverPhase[] };
}

interface DcgmCost {
  series: number;
  /** Series with a pod's labels: allocated GPUs, found through claims and pods. */
  attributed: number;
  bytes: number;
  /** Seconds, one per scrape. */
  scrapesS: number[];
  /** RSS before the first scrape, after the last, and once the fleet settled after it, KiB. */
  rssBeforeKiB: number;
  rssAfterKiB: number;
  rssSettledKiB: number;
}

const SCRAPES = 5;
const DCGM_MAX_NODES = 5000;

/**
 * What serving dcgm-exporter's metrics of every node costs the fleet: scrapes one after another, as a
 * Prometheus with several replicas or a short interval would, timed from request to the last byte.
 */
async function dcgmCost(p: ChildProcess): Promise<DcgmCost> {
  const rss = () => procStatusKb(p.pid ?? 0)('VmRSS');
  const rssBeforeKiB = rss();
  const scrapesS: number[] = [];
  let text = '';
  for (let i = 0; i < SCRAPES; i++) {
    const t0 = performance.now();
    const r = await get(`http://${FLEET_DCGM}/metrics`);
    scrapesS.push(seconds(t0));
    if (r.status !== 200) throw new FakegpuError('bench/fleet', `dcgm scrape: HTTP ${r.status}`);
    text = r.text;
  }
  const rssAfterKiB = rss();
  // The fleet's settler collects once it has been quiet for 2 s after the burst.
  await sleep(6_000);
  const lines = text.split('\n').filter((l) => l !== '' && !l.startsWith('#'));
  return {
    series: lines.length,
    attributed: lines.filter((l) => l.includes(',pod="')).length,
    bytes: Buffer.byteLength(text),
    scrapesS,
    rssBeforeKiB,
    rssAfterKiB,
    rssSettledKiB: rss(),
  };
}

/** The cluster's KWOK nodes and, for each, the bodies of the slices the fleet would write. */
interface Setup {
  kc: KubeConfig;
  raw: Raw;
  nodes: Node[];
  nodeBodies: (n: Node) => string[];
  slices: number;
  renderS: number;
  devices: number;
  gpus: number;
}

async function setUp(kubeconfig: string): Promise<Setup> {
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfig);
  const raw = await Raw.of(kc, IN_FLIGHT);
  const nodes = await kwokNodes(raw);
  if ((EXISTING === null || NODES_GIVEN) && nodes.length !== N)
    throw new FakegpuError(
      'bench/fleet',
      `expected ${N} KWOK nodes, found ${nodes.length}${EXISTING ? ' (with --kubeconfig, leave --nodes out to use them all)' : ''}`,
    );
  if (nodes.length === 0)
    throw new FakegpuError('bench/fleet', 'no KWOK node (label type=kwok) in the cluster');
  if (EXISTING && (await sliceNames(raw, nodes.slice(0, 1))).length > 0)
    throw new FakegpuError(
      'bench/fleet',
      `KWOK node ${nodes[0]?.name ?? ''} already has slices: a fleet serves these nodes (stop it, e.g. helm upgrade --set fleet.enabled=false), or a killed run of this bench left them`,
    );
  const version = await serverVersion(kc);
  const render = (name: string): ResourceSlice[] =>
    renderSlices(profile, {
      nodeName: name,
      dynamicMig,
      driverName: DRIVER_NAME,
      kubernetesVersion: version,
      release: DEFAULT_RELEASE,
    }).items;

  // Each node's bodies are stamped from the profile's template (as the fleet stamps them) when its
  // posts go out: holding 90,000 dynamic-MIG bodies took 2.6 GB of this 24 GiB machine, which the API
  // server needed. Rendering every body once is timed apart.
  const template = SliceTemplate.make(profile, {
    dynamicMig,
    driverName: DRIVER_NAME,
    kubernetesVersion: version,
    release: DEFAULT_RELEASE,
  });
  const nodeBodies = (n: Node): string[] =>
    (template ? template.node(n.name) : nodeSlices(render(n.name))).map((x) =>
      body(x.generateName, x.spec(1), n),
    );
  log(`rendering ${N} nodes' slices once, for the time it takes`);
  const t0 = performance.now();
  let slices = 0;
  for (const n of nodes) slices += nodeBodies(n).length;
  const renderS = seconds(t0);
  const sample = render(nodes[0]?.name ?? '');
  const devices = sample.reduce((k, s) => k + (s.spec.devices?.length ?? 0), 0) * N;
  const gpus =
    sample.reduce(
      (k, s) => k + (s.spec.devices ?? []).filter((d) => isGpu(d.attributes?.['type'])).length,
      0,
    ) * N;
  return { kc, raw, nodes, nodeBodies, slices, renderS, devices, gpus };
}

async function run(kubeconfig: string): Promise<Results> {
  const { kc, raw, nodes, nodeBodies, slices, renderS, devices, gpus } = await setUp(kubeconfig);

  // Rounds alternate the ceiling and the fleet, so a slow spell of this shared machine hits both; the
  // medians are compared. Each round also measures an idle fleet and the serving one: a single
  // resident-memory figure swings by several MiB with GC timing. The last round's fleet stays up for
  // the scheduling phase.
  const ceilings: number[] = [];
  const fleets: Results['fleets'] = [];
  const idleKiB: number[] = [];
  const servingKiB: number[] = [];
  const profileDir = opts.apiserverProfiles ? `${jsonPath.replace(/\.json$/, '')}-profiles` : null;
  if (profileDir) mkdirSync(profileDir, { recursive: true });
  const phases = new ApiserverPhases(
    raw,
    log,
    profileDir === null ? undefined : { dir: profileDir, cpuAfterS: 60, cpuS: 30 },
  );
  const apiserver: Results['apiserver'] = { ceiling: [], fleet: [] };
  for (let round = 1; ; round++) {
    // Before the idle fleet, not after it: an idle fleet still lists and indexes every slice of its
    // driver, so the previous round's 10,000 slices made round 1's idle figure 95 MiB and later
    // rounds' 147–149 MiB, and the median per-node figure meaningless.
    await deleteAllSlices(raw, IN_FLIGHT, log);
    log(`round ${round}/${ROUNDS}, fleet, idle: a selector that matches no node, no slices`);
    const idle = startFleet(kubeconfig, ['--node-selector=fakegpu.dev/bench=none'], { dynamicMig, log });
    await until(
      'the idle fleet ready',
      60_000,
      async () => (await get(`http://${FLEET_HTTP}/readyz`)).status === 200,
    );
    idleKiB.push(await settledRssKiB(idle, `round ${round}/${ROUNDS}, idle fleet`));
    log(`round ${round}/${ROUNDS}, idle fleet ${await memoryBreakdown(idle.pid ?? 0)}`);
    await stopFleet(idle);

    log(`round ${round}/${ROUNDS}, ceiling: posting ${slices} slices, ${IN_FLIGHT} in flight`);
    await phases.start(`r${round}-ceiling`);
    const t0 = performance.now();
    await postCeiling(raw, nodes, nodeBodies, {
      inFlight: IN_FLIGHT,
      total: slices,
      what: `round ${round}/${ROUNDS}, ceiling`,
      log,
    });
    ceilings.push(seconds(t0));
    log(`round ${round}/${ROUNDS}, ceiling: ${f(seconds(t0))} s`);
    apiserver.ceiling.push(await phases.end(`round ${round}/${ROUNDS}, ceiling`));
    log(`round ${round}/${ROUNDS}, control plane MiB: ${showControlPlaneMemory(controlPlaneMemory())}`);
    await deleteAllSlices(raw, IN_FLIGHT, log);

    log(`round ${round}/${ROUNDS}, fleet: publishing ${N} nodes`);
    await phases.start(`r${round}-fleet`);
    const t1 = performance.now();
    const concurrency = concurrencyOf(round);
    const fleet = startFleet(kubeconfig, concurrency === null ? [] : [`--concurrency=${concurrency}`], {
      dynamicMig,
      log,
      ...(profileDir === null ? {} : { logFile: join(profileDir, `r${round}-fleet.log`) }),
    });
    // Nodes published: served and not pending, by the fleet's own gauges.
    // Every scrape of the phase reads the scorecard too (its gauges are in the same registry), as a
    // Prometheus would: the fleet's event-loop delay, reset at each scrape, is kept at its longest.
    let pauseMaxMs = 0;
    let scorecardGpus = Number.NaN;
    const longPauses: LongPause[] = [];
    // The loop's thread as the kernel saw it at the last scrape: what it ran and waited since tells
    // whether a long delay was the fleet's own work or the machine's cores given to others.
    let lastTimes = loopThreadTimes(fleet.pid ?? 0);
    let lastAt = performance.now();
    const scraped = (m: string): string => {
      const times = loopThreadTimes(fleet.pid ?? 0);
      const at = performance.now();
      const ms = 1000 * (metric(m, 'fakegpu_fleet_nodejs_eventloop_lag_max_seconds') || 0);
      pauseMaxMs = Math.max(pauseMaxMs, ms);
      const g = metric(m, 'fakegpu_scorecard_gpus\\{scope="cluster",name=""\\}');
      if (!Number.isNaN(g)) scorecardGpus = g;
      if (ms > 100 && longPauses.length < 50)
        longPauses.push({
          atS: Math.round(seconds(t1) * 10) / 10,
          ms: Math.round(ms),
          scorecard: !Number.isNaN(g),
          windowMs: at - lastAt,
          ranMs: times && lastTimes ? times.ranMs - lastTimes.ranMs : Number.NaN,
          waitedMs: times && lastTimes ? times.waitedMs - lastTimes.waitedMs : Number.NaN,
        });
      lastTimes = times;
      lastAt = at;
      return m;
    };
    const publishProgress = progress(
      `round ${round}/${ROUNDS}, fleet, nodes published`,
      N,
      async () => {
        const m = scraped((await get(`http://${FLEET_HTTP}/metrics`)).text);
        return metric(m, 'fakegpu_fleet_nodes') - metric(m, 'fakegpu_fleet_pending_nodes');
      },
      log,
    );
    try {
      // A bench measures, it does not judge: the fleet gets four times this round's ceiling (at least 15
      // minutes) before the round is called failed, so a slow spell of a shared machine still yields a number.
      const limitMs = Math.max(900_000, 4 * 1000 * (ceilings.at(-1) ?? 0));
      // Ready alone is not published: a fleet that does not lead is ready (src/fleet/run.ts), and so is
      // one whose first Lease request a busy API server has not answered yet.
      await until(
        'the fleet to publish every node',
        limitMs,
        async () => {
          if (fleet.exitCode !== null) throw new FakegpuError('bench/fleet', 'the fleet exited');
          if ((await get(`http://${FLEET_HTTP}/readyz`)).status !== 200) return false;
          return (
            metric(
              scraped((await get(`http://${FLEET_HTTP}/metrics`)).text),
              'fakegpu_fleet_first_published_seconds',
            ) >= 0
          );
        },
        SCRAPE_EVERY_MS,
      );
      publishProgress();
      const wallS = seconds(t1);
      apiserver.fleet.push(await phases.end(`round ${round}/${ROUNDS}, fleet`));
      const metrics = scraped((await get(`http://${FLEET_HTTP}/metrics`)).text);
      const published = (await sliceNames(raw)).length;
      if (published !== slices)
        throw new FakegpuError('bench/fleet', `the fleet published ${published} slices, expected ${slices}`);
      const s = metric(metrics, 'fakegpu_fleet_first_published_seconds');
      fleets.push({
        s,
        wallS,
        requests: metric(metrics, 'fakegpu_fleet_api_requests'),
        writes: metric(metrics, 'fakegpu_fleet_writes'),
        concurrency,
        pauseMaxMs,
        scorecardGpus,
        longPauses,
      });
      log(
        `round ${round}/${ROUNDS}, fleet: ${f(s)} s from start, ${f(wallS)} s from spawn, concurrency ${concurrency ?? 'default'}; ratio to this round's ceiling ${f((ceilings.at(-1) ?? 0) / s)}; scraped: longest event-loop delay ${f(pauseMaxMs, 0)} ms, scorecard ${scorecardGpus} GPUs`,
      );
      if (longPauses.length > 0) log(`round ${round}/${ROUNDS}, fleet: ${longPausesLine(longPauses)}`);
      // Whether those were the collector's: its pauses past 100 ms, by kind, since the fleet started.
      const gcs = Object.entries(longGcs(metrics, 'fakegpu_fleet_'));
      log(
        `round ${round}/${ROUNDS}, fleet: garbage collections past 100 ms: ${gcs.map(([k, n]) => `${k} ${n}`).join(', ') || 'none recorded'}`,
      );
      servingKiB.push(await settledRssKiB(fleet, `round ${round}/${ROUNDS}, serving fleet`));
      const controlPlane = controlPlaneMemory();
      log(`round ${round}/${ROUNDS}, control plane MiB: ${showControlPlaneMemory(controlPlane)}`);
      log(`round ${round}/${ROUNDS}, serving fleet ${await memoryBreakdown(fleet.pid ?? 0)}`);
      log(
        `round ${round}/${ROUNDS}, RSS: idle ${f((idleKiB.at(-1) ?? 0) / 1024, 1)} MiB, serving ${f((servingKiB.at(-1) ?? 0) / 1024, 1)} MiB`,
      );
      if (round < ROUNDS) continue;
      const sched =
        FILL > 0 ? await schedule(kc, raw, Math.floor(gpus * FILL)) : { pods: 0, createdS: 0, boundS: 0 };
      // After scheduling, so that the claims' GPUs carry their pods' labels. Past DCGM_MAX_NODES one
      // exposition is 25 series of tens of thousands of GPUs, more than one Prometheus target carries.
      const dcgm = N <= DCGM_MAX_NODES ? await dcgmCost(fleet) : null;
      if (dcgm)
        log(
          `dcgm: ${dcgm.series} series (${dcgm.attributed} with a pod), ${f(dcgm.bytes / 2 ** 20, 1)} MiB per scrape, scrapes ${dcgm.scrapesS.map((x) => f(x)).join(' ')} s`,
        );
      else log(`dcgm: not scraped above ${DCGM_MAX_NODES} nodes`);
      log('report: `fakegpu report` against the cluster listed whole');
      const report = await reportCost(kubeconfig, N);
      log(reportLine(N, report));
      return {
        report,
        dcgm,
        slices,
        devices,
        gpus,
        renderS,
        ceilings,
        fleets,
        idleKiB,
        servingKiB,
        controlPlane,
        ...sched,
        apiserver,
      };
    } finally {
      publishProgress();
      await stopFleet(fleet);
    }
  }
}

/** Pods with one-GPU claims on the KWOK nodes; the real scheduler allocates and binds them. */
async function schedule(
  kc: KubeConfig,
  raw: Raw,
  pods: number,
): Promise<{ pods: number; createdS: number; boundS: number }> {
  await raw.ok('POST', '/api/v1/namespaces', JSON.stringify({ metadata: { name: NS } }));
  await until('the namespace’s service account', 60_000, async () => {
    return (await raw.send('GET', `/api/v1/namespaces/${NS}/serviceaccounts/default`)).status === 200;
  });
  const bound = new Set<string>();
  const end = { finished: false };
  let done: () => void = () => undefined;
  const allBound = new Promise<void>((r) => (done = r));
  // Resumes where the server ended it (this process is busy posting, and a slow reader gets cut off).
  const watch = new ResumableWatch(kc, `/api/v1/namespaces/${NS}/pods`, {}, '', {
    event: (_type, obj) => {
      const p = obj as { metadata?: { name?: string }; spec?: { nodeName?: string } };
      if (p.spec?.nodeName && p.metadata?.name) bound.add(p.metadata.name);
      if (bound.size >= pods) done();
    },
    expired: () => {
      watch.restart('');
    },
  });
  log(`scheduling ${pods} pods, each with a one-GPU claim`);
  const t0 = performance.now();
  let createdS = 0;
  try {
    const created = inParallel(
      Array.from({ length: pods }, (_, i) => i),
      IN_FLIGHT,
      async (i) => {
        await raw.ok(
          'POST',
          `/apis/resource.k8s.io/v1/namespaces/${NS}/resourceclaims`,
          JSON.stringify({
            apiVersion: 'resource.k8s.io/v1',
            kind: 'ResourceClaim',
            metadata: { name: `gpu-${i}` },
            spec: { devices: { requests: [{ name: 'gpu', exactly: { deviceClassName: DRIVER_NAME } }] } },
          }),
        );
        await raw.ok(
          'POST',
          `/api/v1/namespaces/${NS}/pods`,
          JSON.stringify({
            apiVersion: 'v1',
            kind: 'Pod',
            metadata: { name: `pod-${i}` },
            spec: {
              nodeSelector: { type: 'kwok' },
              tolerations: [{ key: KWOK_ANNOTATION, operator: 'Exists', effect: 'NoSchedule' }],
              resourceClaims: [{ name: 'gpu', resourceClaimName: `gpu-${i}` }],
              containers: [
                { name: 'c', image: 'registry.k8s.io/pause:3.10', resources: { claims: [{ name: 'gpu' }] } },
              ],
            },
          }),
        );
      },
    ).then(() => {
      createdS = seconds(t0);
    });
    await created;
    // Fails on a stall, not on a total: a larger run may take as long as it needs while pods still bind.
    const stalled = (async (): Promise<never> => {
      let last = -1;
      while (!end.finished) {
        if (bound.size === last)
          throw new FakegpuError('bench/fleet', `only ${bound.size} of ${pods} pods bound; none for 60 s`);
        last = bound.size;
        await sleep(60_000);
      }
      return new Promise<never>(() => undefined);
    })();
    await Promise.race([allBound, stalled]);
    return { pods, createdS, boundS: seconds(t0) };
  } finally {
    end.finished = true;
    watch.stop();
  }
}

/** What the replica runs leave on an existing cluster removed: their slices and the shards' Leases. */
async function leaveExisting(raw: Raw, nodes: readonly Node[]): Promise<void> {
  log('cleanup: deleting the slices of the KWOK nodes and the shard Leases the bench made');
  await deleteAllSlices(raw, IN_FLIGHT, log, nodes).catch((e: unknown) => {
    log(`cleanup: ${e instanceof Error ? e.message : String(e)}`);
  });
  const selector = encodeURIComponent(`${SHARDED_BY_LABEL}=fakegpu-fleet`);
  const r = await raw.send(
    'DELETE',
    `/apis/coordination.k8s.io/v1/namespaces/kube-system/leases?labelSelector=${selector}`,
  );
  if (r.status >= 300) log(`cleanup: deleting the shard Leases: HTTP ${r.status}`);
}

if (EXISTING && !REPLICAS)
  checked(() => {
    throw new FakegpuError(
      '--kubeconfig',
      "runs only with --replicas: the rounds also measure the local control plane's processes",
    );
  });
const started = new Date();
const jsonPath = resultPath('fleet', started, opts.json);
const machine = hardware();
log(machine);
if (REPLICAS) {
  const onReplicas = async (kubeconfig: string): Promise<{ n: number; runs: ReplicaRun[] }> => {
    const su = await setUp(kubeconfig);
    try {
      const runs = await replicaRuns({
        ...su,
        kubeconfig,
        inFlight: IN_FLIGHT,
        counts: REPLICAS,
        dynamicMig,
        log,
      });
      return { n: su.nodes.length, runs };
    } finally {
      // An existing cluster gets back what it had: no slices on its KWOK nodes, no shard Leases.
      if (EXISTING) await leaveExisting(su.raw, su.nodes);
    }
  };
  let out: { n: number; runs: ReplicaRun[] };
  if (EXISTING) {
    log(`an existing cluster (${EXISTING}): its KWOK nodes`);
    out = await onReplicas(EXISTING);
  } else {
    log(`starting the cluster with ${N} KWOK nodes of ${opts.profile}`);
    await clusterDown({ dir: DIR, purge: true, log });
    out = await onKwokCluster(
      { dir: DIR, kwokNodes: N, kwokProfile: opts.profile, keep: opts.keep === true, log },
      onReplicas,
    );
  }
  for (const x of out.runs) console.log(replicaLine(out.n, x));
  writeResult(jsonPath, {
    bench: 'fleet-replicas',
    started,
    machine,
    cluster: EXISTING ? 'existing (--kubeconfig)' : 'local',
    nodes: out.n,
    profile: opts.profile,
    runs: out.runs,
  });
  process.exit(0);
}
log(`starting the cluster with ${N} KWOK nodes of ${opts.profile}`);
await clusterDown({ dir: DIR, purge: true, log });
const r = await onKwokCluster(
  {
    dir: DIR,
    kwokNodes: N,
    kwokControllers: KWOK_CONTROLLERS,
    kwokProfile: opts.profile,
    keep: opts.keep === true,
    log,
  },
  run,
);

const mode = dynamicMig ? 'dynamic MIG' : 'plain';
const spread = (xs: readonly number[], d = 2): string =>
  xs.length > 1 ? `${f(Math.min(...xs), d)} – ${f(Math.max(...xs), d)}` : '';
const idleKiB = median(r.idleKiB);
const servingKiB = median(r.servingKiB);
const perNode = (servingKiB - idleKiB) / N;
const ceilingS = median(r.ceilings);
const fleetS = median(r.fleets.map((x) => x.s));
const wallS = median(r.fleets.map((x) => x.wallS));
const last = r.fleets[r.fleets.length - 1];
console.log(
  `bench/fleet: ${N} KWOK nodes of ${opts.profile} (${mode}): ${r.slices} slices, ${r.devices} devices, ${r.gpus} GPUs; median of ${ROUNDS} round(s)\n`,
);
console.log('| publish every node | seconds | range | slices/s | API requests | vs ceiling |');
console.log('|---|---|---|---|---|---|');
console.log(
  `| ceiling: pre-serialized POSTs, raw HTTPS, ${IN_FLIGHT} in flight | ${f(ceilingS)} | ${spread(r.ceilings)} | ${f(r.slices / ceilingS, 0)} | ${r.slices} | 1.00x |`,
);
console.log(
  `| fakegpu fleet, from start (lists, render, writes) | ${f(fleetS)} | ${spread(r.fleets.map((x) => x.s))} | ${f(r.slices / fleetS, 0)} | ${last?.requests ?? 0} (${last?.writes ?? 0} writes) | ${f(fleetS / ceilingS)}x |`,
);
console.log(
  `| fakegpu fleet, from process spawn | ${f(wallS)} | ${spread(r.fleets.map((x) => x.wallS))} | | | ${f(wallS / ceilingS)}x |`,
);
console.log(`| (rendering all slices once, in this process) | ${f(r.renderS)} | | | | |`);
console.log('\n| fleet memory (median of rounds) | RSS MiB | range |\n|---|---|---|');
console.log(
  `| idle (selector matches no node), settled after ready | ${f(idleKiB / 1024, 1)} | ${spread(
    r.idleKiB.map((k) => k / 1024),
    1,
  )} |`,
);
console.log(
  `| serving ${N} nodes, settled after all published | ${f(servingKiB / 1024, 1)} | ${spread(
    r.servingKiB.map((k) => k / 1024),
    1,
  )} |`,
);
console.log(`| per node | ${f(perNode, 1)} KiB | |`);
const sched = r.pods > 0 ? r.pods / r.boundS : 0;
if (r.pods > 0) {
  console.log('\n| scheduling (kube-scheduler, one-GPU claims) | value |\n|---|---|');
  console.log(`| pods (${f(FILL * 100, 0)}% of ${r.gpus} GPUs) | ${r.pods} |`);
  console.log(`| claims and pods created in | ${f(r.createdS)} s |`);
  console.log(`| all bound after | ${f(r.boundS)} s |`);
  console.log(`| scheduled pods/s | ${f(sched, 1)} |`);
}
const scrapeS = r.dcgm ? median(r.dcgm.scrapesS) : null;
if (r.dcgm) {
  console.log('\n| dcgm-exporter metrics of every node (after scheduling) | value |\n|---|---|');
  console.log(`| series (of them with a pod's labels) | ${r.dcgm.series} (${r.dcgm.attributed}) |`);
  console.log(`| exposition size | ${f(r.dcgm.bytes / 2 ** 20, 1)} MiB |`);
  console.log(`| scrape, median of ${SCRAPES} | ${f(scrapeS ?? 0, 3)} s (${spread(r.dcgm.scrapesS, 3)}) |`);
  console.log(
    `| fleet RSS before the first scrape → after the last → 6 s later | ${f(r.dcgm.rssBeforeKiB / 1024, 1)} → ${f(r.dcgm.rssAfterKiB / 1024, 1)} → ${f(r.dcgm.rssSettledKiB / 1024, 1)} MiB |`,
  );
}
const pauseMaxMs = Math.max(...r.fleets.map((x) => x.pauseMaxMs));
console.log(
  '\n| scraped during the fleet phases (its /metrics, the scorecard among them) | value |\n|---|---|',
);
console.log(`| the fleet's longest event-loop delay, any round | ${f(pauseMaxMs, 0)} ms |`);
console.log(
  `| the scorecard's GPUs at the last scrape, last round | ${last?.scorecardGpus ?? Number.NaN} of ${r.gpus} |`,
);
console.log('\n| `fakegpu report` of the cluster | peak RSS MiB | seconds |\n|---|---|---|');
console.log(
  r.report.whole
    ? `| ceiling: listed whole, then scored | ${f(r.report.whole.rssPeakMiB, 1)} | ${f(r.report.whole.tookS, 1)} |`
    : `| ceiling: listed whole, then scored | not run past ${WHOLE_MAX_NODES} nodes | |`,
);
console.log(
  `| fakegpu report, each page folded as it arrives | ${f(r.report.report.rssPeakMiB, 1)} | ${f(r.report.report.tookS, 1)} |`,
);
const line = `fleet: N=${N} publish=${f(fleetS)}s ceiling=${f(ceilingS)}s ratio=${f(ceilingS / fleetS)} rss_per_node=${f(perNode, 1)} sched=${f(sched, 1)} pause_max_ms=${f(pauseMaxMs, 0)}`;
writeResult(jsonPath, {
  bench: 'fleet',
  started: started.toISOString(),
  hardware: machine,
  config: {
    nodes: N,
    profile: opts.profile,
    dynamicMig,
    rounds: ROUNDS,
    fill: FILL,
    ceilingInFlight: IN_FLIGHT,
    fleetConcurrency: FLEET_CONCURRENCY,
    kwokControllers: KWOK_CONTROLLERS,
  },
  rounds: r,
  medians: { ceilingS, fleetS, wallS, idleKiB, servingKiB, rssPerNodeKiB: perNode, ratio: ceilingS / fleetS },
  scheduledPodsPerS: sched,
  dcgm: r.dcgm ? { ...r.dcgm, scrapeMedianS: scrapeS } : null,
  line,
  reportLine: reportLine(N, r.report),
});
log(`JSON result: ${jsonPath}`);
console.log(`\n${line}\n${reportLine(N, r.report)}`);
