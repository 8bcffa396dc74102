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
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { KubeConfig } from '@kubernetes/client-node';
import { Command } from 'commander';
import { parseAllDocuments } from 'yaml';
import { intFlag } from '../src/cli/options.js';
import { cacheRoot } from '../src/cluster/build.js';
import { clusterDown, FLEET_HTTP, NIC_CLASS, REPO_ROOT } from '../src/cluster/cluster.js';
import { DEFAULT_RELEASE } from '../src/device/release.js';
import { STD } from '../src/device/attributes.js';
import { FakegpuError, show } from '../src/errors.js';
import type { Device } from '../src/k8s/resource.js';
import { ResumableWatch } from '../src/k8s/watch.js';
import { DRANET } from '../src/nic/attributes.js';
import { resolveProfile } from '../src/profile/load.js';
import { renderSlices } from '../src/render.js';
import { DRIVER_NAME } from '../src/slice/build.js';
import {
  checked as checkedFlag,
  get,
  inParallel,
  logger,
  METADATA_LIST,
  metric,
  onKwokCluster,
  Raw,
  seconds,
  SLICES_PATH,
  startFleet,
  stopFleet,
  until,
} from './support.js';

const VARIANTS = ['plain', 'cel', 'first-available', 'mig', 'nic-aligned'] as const;
type Variant = (typeof VARIANTS)[number];

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

const log = logger('bench/sched');
const checked = <T>(parse: () => T): T => checkedFlag('bench/sched', parse);
const NODES_FLAG = checked(() => intFlag(opts.nodes, '--nodes', 1, 20000));
const NODES_GIVEN = cmd.getOptionValueSource('nodes') === 'cli';
const VARIANT = checked((): Variant => {
  const v = VARIANTS.find((x) => x === opts.variant);
  if (!v) throw new FakegpuError('--variant', `${show(opts.variant)} is not one of ${VARIANTS.join(', ')}`);
  return v;
});
const DYNAMIC_MIG = opts.dynamicMig === true || VARIANT === 'mig';
const FILL = checked(() => {
  const x = Number(opts.fill);
  if (opts.fill.trim() === '' || !(x > 0 && x <= 1))
    throw new FakegpuError('--fill', `${show(opts.fill)} is not a number in (0, 1]`);
  return x;
});
const FILL_QPS = checked(() => intFlag(opts.fillQps, '--fill-qps', 0, 10000));
const CHURN_S = checked(() => intFlag(opts.churnSeconds, '--churn-seconds', 0, 86400));
const CHURN_QPS = checked(() => intFlag(opts.churnQps, '--churn-qps', 1, 10000));
const CHURN_RUNTIME_S = checked(() => intFlag(opts.churnRuntime, '--churn-runtime', 0, 86400));
const IN_FLIGHT = checked(() => intFlag(opts.inFlight, '--in-flight', 1, 1000));
const EXISTING = opts.kubeconfig !== undefined;
const KUBECONFIG = opts.kubeconfig === undefined ? undefined : resolve(opts.kubeconfig);
const SELECTOR = opts.nodeSelector.trim();
const PROFILE = opts.profile;
const MIG_PROFILE = opts.migProfile;

const DIR = join(cacheRoot(), 'bench-sched-cluster');
const STARTED = new Date();
const JSON_PATH = resolve(
  opts.json ??
    join(cacheRoot(), 'bench-results', `sched-${STARTED.toISOString().replace(/[:.]/g, '-')}.json`),
);
const NS = 'fakegpu-bench-sched';
const BENCH_LABEL = 'fakegpu.dev/bench';
const BENCH_SEL = `labelSelector=${encodeURIComponent(`${BENCH_LABEL}=sched`)}`;
const GENERIC_DRIVER = 'cl2-gpu.kwok.x-k8s.io';
const GPU_CLASS = 'gpu.nvidia.com';
const MIG_CLASS = 'mig.nvidia.com';
const CLASSES_PATH = '/apis/resource.k8s.io/v1/deviceclasses';
const PODS_PATH = `/api/v1/namespaces/${NS}/pods`;
const CLAIMS_PATH = `/apis/resource.k8s.io/v1/namespaces/${NS}/resourceclaims`;
const TEMPLATES_PATH = `/apis/resource.k8s.io/v1/namespaces/${NS}/resourceclaimtemplates`;
const POLL_MS = 250;
const PROGRESS_MS = 5000;
/** A phase fails once every pod is created and none has started running for this long. */
const STALL_MS = 180_000;
/** Between publishing a phase's slices and its first pod. */
const SETTLE_MS = 5000;
const f = (n: number, d = 2): string => (Number.isFinite(n) ? n.toFixed(d) : 'n/a');
const asError = (e: unknown): Error => (e instanceof Error ? e : new Error(String(e)));

const cpu = cpus();
const HARDWARE = `${cpu[0]?.model.trim() ?? 'unknown CPU'}, ${cpu.length} cores, ${f(totalmem() / 2 ** 30, 0)} GiB`;

// ---- What a node of the profile publishes, and so what the claims can take --------------------------

interface Shape {
  gpus: number;
  productName: string;
  /** The GPUs' memory capacity as published (e.g. `81559Mi`); null where NVML reports none. */
  memory: string | null;
  /** Claims of the faithful variant one node can satisfy at once. */
  perNode: number;
}

const attr = (d: Device, key: string): string | undefined => {
  const a = d.attributes?.[key];
  return a && 'string' in a ? a.string : undefined;
};

/** A node of the profile rendered here, as the fleet would publish it. */
function shape(): Shape {
  const slices = renderSlices(resolveProfile(PROFILE, '--profile'), {
    nodeName: 'bench-node',
    dynamicMig: DYNAMIC_MIG,
    driverName: DRIVER_NAME,
    kubernetesVersion: { major: 1, minor: 37, patch: 0 },
    release: DEFAULT_RELEASE,
    nics: VARIANT === 'nic-aligned' ? { driverName: DRANET, standardNumaNode: false } : undefined,
  }).items;
  const gpuDevices = slices.filter((s) => s.spec.driver === DRIVER_NAME).flatMap((s) => s.spec.devices ?? []);
  const gpus = gpuDevices.filter((d) => attr(d, 'type') === 'gpu');
  const first = gpus[0];
  if (!first) throw new FakegpuError('--profile', `${show(PROFILE)} has no GPUs`);
  let perNode = gpus.length;
  if (VARIANT === 'mig') {
    const migs = gpuDevices.filter((d) => attr(d, 'type') === 'mig');
    // Each partition of a profile is one placement; those of one profile never overlap.
    perNode = migs.filter((d) => attr(d, 'profile') === MIG_PROFILE).length;
    if (perNode === 0)
      throw new FakegpuError(
        '--mig-profile',
        `${show(MIG_PROFILE)} is not a MIG partition of ${PROFILE}; it has ${[...new Set(migs.map((d) => attr(d, 'profile')))].join(', ') || 'none'}`,
      );
  } else if (VARIANT === 'nic-aligned') {
    // A GPU and an RDMA NIC under one PCIe root: per root, as many pairs as the scarcer of the two.
    const nics = slices
      .filter((s) => s.spec.driver === DRANET)
      .flatMap((s) => s.spec.devices ?? [])
      .filter((d) => {
        const rdma = d.attributes?.[`${DRANET}/rdma`];
        return rdma !== undefined && 'bool' in rdma && rdma.bool;
      });
    const roots = (ds: Device[]): Map<string, number> => {
      const m = new Map<string, number>();
      for (const d of ds) {
        const r = attr(d, STD.pcieRoot);
        if (r !== undefined) m.set(r, (m.get(r) ?? 0) + 1);
      }
      return m;
    };
    const nicRoots = roots(nics);
    perNode = [...roots(gpus)].reduce((k, [r, n]) => k + Math.min(n, nicRoots.get(r) ?? 0), 0);
    if (perNode === 0)
      throw new FakegpuError(
        '--variant',
        `nic-aligned needs GPUs and RDMA NICs under one PCIe root; ${PROFILE} has none`,
      );
  }
  const mem = first.capacity?.['memory']?.value;
  return { gpus: gpus.length, productName: attr(first, 'productName') ?? '', memory: mem ?? null, perNode };
}

const SHAPE = checked(shape);

// ---- Claims and pods ----------------------------------------------------------------------------------

const q = (s: string): string => JSON.stringify(s);

/** The faithful phase's claim (a ResourceClaimSpec), by variant. */
function faithfulClaim(): unknown {
  const gpu = 'device.attributes["gpu.nvidia.com"]';
  switch (VARIANT) {
    case 'plain':
      return { devices: { requests: [{ name: 'gpu', exactly: { deviceClassName: GPU_CLASS } }] } };
    case 'cel': {
      const memory =
        SHAPE.memory === null
          ? ''
          : ` && device.capacity["gpu.nvidia.com"].memory.compareTo(quantity(${q(SHAPE.memory)})) >= 0`;
      return {
        devices: {
          requests: [
            {
              name: 'gpu',
              exactly: {
                deviceClassName: GPU_CLASS,
                selectors: [
                  { cel: { expression: `${gpu}.productName == ${q(SHAPE.productName)}${memory}` } },
                ],
              },
            },
          ],
        },
      };
    }
    case 'first-available': {
      // A product these nodes do not have first, so the scheduler tries it and falls back.
      const other = SHAPE.productName === 'NVIDIA B200' ? 'NVIDIA H200' : 'NVIDIA B200';
      return {
        devices: {
          requests: [
            {
              name: 'gpu',
              firstAvailable: [
                {
                  name: 'preferred',
                  deviceClassName: GPU_CLASS,
                  selectors: [{ cel: { expression: `${gpu}.productName == ${q(other)}` } }],
                },
                { name: 'any', deviceClassName: GPU_CLASS },
              ],
            },
          ],
        },
      };
    }
    case 'mig':
      return {
        devices: {
          requests: [
            {
              name: 'gpu',
              exactly: {
                deviceClassName: MIG_CLASS,
                selectors: [{ cel: { expression: `${gpu}.profile == ${q(MIG_PROFILE)}` } }],
              },
            },
          ],
        },
      };
    case 'nic-aligned':
      return {
        devices: {
          requests: [
            { name: 'gpu', exactly: { deviceClassName: GPU_CLASS } },
            {
              name: 'nic',
              exactly: {
                deviceClassName: NIC_CLASS,
                selectors: [{ cel: { expression: `device.attributes["${DRANET}"].rdma == true` } }],
              },
            },
          ],
          constraints: [{ requests: ['gpu', 'nic'], matchAttribute: STD.pcieRoot }],
        },
      };
  }
}

const GENERIC_CLAIM = {
  devices: { requests: [{ name: 'gpu', exactly: { deviceClassName: GENERIC_DRIVER } }] },
};

interface Requirement {
  key: string;
  operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';
  values?: string[];
}

/** `--node-selector` as node affinity: `k=v`, `k==v`, `k!=v`, `k`, `!k`, `k in (a,b)`, `k notin (a,b)`. */
function requirements(text: string): Requirement[] {
  if (text === '') return [];
  const parts: string[] = [];
  let depth = 0;
  let cur = '';
  for (const ch of text) {
    if (ch === '(') depth++;
    if (ch === ')') depth--;
    if (ch === ',' && depth === 0) {
      parts.push(cur);
      cur = '';
    } else cur += ch;
  }
  parts.push(cur);
  const key = '([A-Za-z0-9][-A-Za-z0-9_./]*)';
  return parts.map((raw) => {
    const p = raw.trim();
    let m = new RegExp(`^${key}\\s*(==|=|!=)\\s*([-A-Za-z0-9_.]*)$`).exec(p);
    if (m) return { key: m[1] ?? '', operator: m[2] === '!=' ? 'NotIn' : 'In', values: [m[3] ?? ''] };
    m = new RegExp(`^${key}\\s+(in|notin)\\s*\\(([^()]*)\\)$`).exec(p);
    if (m)
      return {
        key: m[1] ?? '',
        operator: m[2] === 'in' ? 'In' : 'NotIn',
        values: (m[3] ?? '').split(',').map((v) => v.trim()),
      };
    m = new RegExp(`^!\\s*${key}$`).exec(p);
    if (m) return { key: m[1] ?? '', operator: 'DoesNotExist' };
    m = new RegExp(`^${key}$`).exec(p);
    if (m) return { key: m[1] ?? '', operator: 'Exists' };
    throw new FakegpuError(
      '--node-selector',
      `${show(raw)} is not a label requirement (k=v, k!=v, k in (a,b), k, !k)`,
    );
  });
}

const REQUIREMENTS = checked(() => requirements(SELECTOR));

/** Where the pods may go: a nodeSelector where the selector is only equalities, node affinity otherwise. */
function placement(): Record<string, unknown> {
  if (REQUIREMENTS.length === 0) return {};
  if (REQUIREMENTS.every((r) => r.operator === 'In' && r.values?.length === 1))
    return { nodeSelector: Object.fromEntries(REQUIREMENTS.map((r) => [r.key, r.values?.[0] ?? ''])) };
  return {
    affinity: {
      nodeAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: {
          nodeSelectorTerms: [{ matchExpressions: REQUIREMENTS }],
        },
      },
    },
  };
}

const PLACEMENT = placement();

function podBody(name: string, template: string, kind: Kind): string {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, labels: { [BENCH_LABEL]: 'sched', 'fakegpu.dev/bench-pod': kind } },
    spec: {
      ...PLACEMENT,
      tolerations: [{ operator: 'Exists' }],
      resourceClaims: [{ name: 'gpu', resourceClaimTemplateName: template }],
      // KWOK never runs it.
      containers: [
        { name: 'c', image: 'registry.k8s.io/pause:3.10', resources: { claims: [{ name: 'gpu' }] } },
      ],
    },
  });
}

// ---- Pods, as a watch sees them ----------------------------------------------------------------------

type Kind = 'fill' | 'churn';

interface PodRec {
  kind: Kind;
  /** performance.now() just before the POST. */
  created: number;
  /** First seen with a node. */
  bound?: number;
  /** First seen Running. */
  running?: number;
  /** Ready's lastTransitionTime − creationTimestamp, in the API's whole seconds. */
  serverS?: number;
  /** Seen Running only by a relist after the watch expired: its time is late. */
  late?: boolean;
}

interface PodObj {
  metadata?: { name?: string; creationTimestamp?: string };
  spec?: { nodeName?: string };
  status?: { phase?: string; conditions?: { type?: string; lastTransitionTime?: string }[] };
}

interface Counts {
  created: number;
  bound: number;
  running: number;
}

/** The bench's pods, from one watch of the namespace: when each was bound and seen Running. */
class PodWatch {
  readonly recs = new Map<string, PodRec>();
  readonly counts: Record<Kind, Counts> = {
    fill: { created: 0, bound: 0, running: 0 },
    churn: { created: 0, bound: 0, running: 0 },
  };
  onRunning: ((name: string, r: PodRec) => void) | null = null;
  failed: Error | null = null;
  relists = 0;
  private watch: ResumableWatch | null = null;

  constructor(
    private readonly kc: KubeConfig,
    private readonly raw: Raw,
  ) {}

  async start(): Promise<void> {
    const rv = await this.list(false);
    this.watch = new ResumableWatch(this.kc, PODS_PATH, {}, rv, {
      event: (type, obj) => {
        if (type !== 'DELETED') this.note(obj as PodObj, false);
      },
      expired: () => {
        void this.relist();
      },
    });
  }

  stop(): void {
    this.watch?.stop();
  }

  add(name: string, kind: Kind): void {
    this.recs.set(name, { kind, created: performance.now() });
    this.counts[kind].created++;
  }

  private async relist(): Promise<void> {
    this.relists++;
    log('the pod watch expired (this process read too slowly); relisting, some times will be late');
    try {
      this.watch?.restart(await this.list(true));
    } catch (e) {
      this.failed = asError(e);
    }
  }

  /** Every pod of the namespace, noted when `note`; answers the list's resourceVersion. */
  private async list(note: boolean): Promise<string> {
    let cont = '';
    let rv: string;
    do {
      const page = JSON.parse(
        await this.raw.ok(
          'GET',
          `${PODS_PATH}?limit=500${cont ? `&continue=${encodeURIComponent(cont)}` : ''}`,
        ),
      ) as { items: PodObj[] | null; metadata: { continue?: string; resourceVersion: string } };
      if (note) for (const p of page.items ?? []) this.note(p, true);
      cont = page.metadata.continue ?? '';
      rv = page.metadata.resourceVersion;
    } while (cont);
    return rv;
  }

  private note(p: PodObj, late: boolean): void {
    const name = p.metadata?.name ?? '';
    const r = this.recs.get(name);
    if (!r) return;
    const now = performance.now();
    if (r.bound === undefined && p.spec?.nodeName) {
      r.bound = now;
      this.counts[r.kind].bound++;
    }
    if (r.running === undefined && p.status?.phase === 'Running') {
      r.running = now;
      if (late) r.late = true;
      this.counts[r.kind].running++;
      const ready = p.status.conditions?.find((c) => c.type === 'Ready')?.lastTransitionTime;
      const created = p.metadata?.creationTimestamp;
      if (ready && created) r.serverS = (Date.parse(ready) - Date.parse(created)) / 1000;
      this.onRunning?.(name, r);
    }
  }
}

// ---- Creating pods at a rate --------------------------------------------------------------------------

/** `make(i)` for i < n, started at `qps` per second (0: at once), at most IN_FLIGHT unanswered. */
async function paced(n: number, qps: number, make: (i: number) => Promise<void>): Promise<void> {
  const t0 = performance.now();
  const inflight = new Set<Promise<void>>();
  const state: { failure: { e: unknown } | null } = { failure: null };
  for (let i = 0; i < n && !state.failure; i++) {
    if (qps > 0) {
      const wait = t0 + (i * 1000) / qps - performance.now();
      if (wait > 0) await sleep(wait);
    }
    while (inflight.size >= IN_FLIGHT) await Promise.race(inflight);
    const p: Promise<void> = make(i)
      .catch((e: unknown) => {
        state.failure ??= { e };
      })
      .finally(() => inflight.delete(p));
    inflight.add(p);
  }
  await Promise.all(inflight);
  if (state.failure) throw state.failure.e;
}

// ---- Results ------------------------------------------------------------------------------------------

interface Stats {
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

/** Nearest-rank percentiles, in seconds. */
function stats(xs: number[]): Stats {
  const s = [...xs].sort((a, b) => a - b);
  const p = (pct: number): number => s[Math.max(0, Math.ceil((pct / 100) * s.length) - 1)] ?? Number.NaN;
  return { p50: p(50), p90: p(90), p99: p(99), max: s.at(-1) ?? Number.NaN };
}

interface Part {
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

function part(w: PodWatch, kind: Kind, t0: number, createdS: number): Part {
  const recs = [...w.recs.values()].filter((r) => r.kind === kind);
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

// ---- One phase's workload -----------------------------------------------------------------------------

interface Creating {
  done: boolean;
  failed: Error | null;
  createdS: number;
}

function creating(t0: number, run: Promise<void>): Creating {
  const c: Creating = { done: false, failed: null, createdS: 0 };
  run.then(
    () => {
      c.done = true;
      c.createdS = seconds(t0);
    },
    (e: unknown) => {
      c.failed = asError(e);
    },
  );
  return c;
}

/** Why the first pod of `kind` that is not Running is not: its PodScheduled condition, as the API has it. */
async function stuck(raw: Raw, w: PodWatch, kind: Kind): Promise<string> {
  const name = [...w.recs].find(([, r]) => r.kind === kind && r.running === undefined)?.[0];
  if (!name) return '';
  const r = await raw.send('GET', `${PODS_PATH}/${name}`).catch(() => ({ status: 0, text: '' }));
  let p: { status?: { phase?: string; conditions?: { type?: string; reason?: string; message?: string }[] } };
  try {
    p = JSON.parse(r.text) as typeof p;
  } catch {
    p = {};
  }
  const c = p.status?.conditions?.find((x) => x.type === 'PodScheduled');
  return `; ${name} is ${p.status?.phase ?? `HTTP ${r.status}`}${c ? `, PodScheduled: ${c.reason ?? ''} ${c.message ?? ''}` : ''}`;
}

/** Waits until `total` pods of `kind` are Running, with progress (and an ETA) on stderr. */
async function awaitRunning(
  raw: Raw,
  w: PodWatch,
  kind: Kind,
  total: number,
  what: string,
  t0: number,
  c: Creating,
  qps: number,
  alive: () => void,
): Promise<void> {
  let last = -1;
  let moved = performance.now();
  let logged = 0;
  for (;;) {
    if (c.failed) throw c.failed;
    if (w.failed) throw w.failed;
    alive();
    const n = w.counts[kind];
    if (c.done && n.running >= total) break;
    const now = performance.now();
    if (n.running !== last) {
      last = n.running;
      moved = now;
    } else if (c.done && now - moved > STALL_MS)
      throw new FakegpuError(
        'bench/sched',
        `${what}: ${n.running} of ${total} pods Running, none more for ${STALL_MS / 1000} s${await stuck(raw, w, kind)}`,
      );
    if (now - logged >= PROGRESS_MS) {
      logged = now;
      const elapsed = (now - t0) / 1000;
      const byRate = n.running > 0 ? ((total - n.running) * elapsed) / n.running : Number.NaN;
      const byCreation = qps > 0 ? (total - n.created) / qps : 0;
      log(
        `${what}: ${n.created}/${total} created, ${n.bound} bound, ${n.running} Running; ${f(elapsed, 1)} s, ETA ${Number.isFinite(byRate) ? `${f(Math.max(byRate, byCreation), 0)} s` : '?'}`,
      );
    }
    await sleep(POLL_MS);
  }
  log(`${what}: all ${total} pods Running after ${f(seconds(t0), 1)} s`);
}

interface Workload {
  fill: Part;
  churn: Part | null;
  /** Short-lived pods deleted after their runtime while the churn lasted. */
  churnDeleted: number;
  watchRelists: number;
}

/** Fill, then churn, in the namespace, with claims from `template`; `alive` throws once the fleet is gone. */
async function workload(
  kc: KubeConfig,
  raw: Raw,
  phase: string,
  template: string,
  capacity: number,
  alive: () => void,
): Promise<Workload> {
  const fillPods = Math.floor(capacity * FILL);
  const churnPods = CHURN_S * CHURN_QPS;
  const concurrent = CHURN_QPS * (CHURN_RUNTIME_S + 5);
  if (churnPods > 0 && fillPods + Math.min(concurrent, churnPods) > capacity)
    log(
      `${phase}: warning: ${fillPods} fill pods and about ${Math.min(concurrent, churnPods)} short-lived ones at once exceed ${capacity} devices; churn pods will wait for devices`,
    );
  // The scheduler's informers take in the new slices, class and template before the clock starts.
  await sleep(SETTLE_MS);
  const w = new PodWatch(kc, raw);
  await w.start();
  const timers = new Set<NodeJS.Timeout>();
  let churnDeleted = 0;
  try {
    const post = async (name: string, kind: Kind): Promise<void> => {
      w.add(name, kind);
      await raw.ok('POST', PODS_PATH, podBody(name, template, kind));
    };
    const what = `${phase} fill (${FILL_QPS > 0 ? `${FILL_QPS} pods/s` : 'unpaced'})`;
    log(`${what}: ${fillPods} long-running pods, ${f(FILL * 100, 0)}% of ${capacity} devices`);
    const t0 = performance.now();
    const c = creating(
      t0,
      paced(fillPods, FILL_QPS, (i) => post(`${phase}-fill-${i}`, 'fill')),
    );
    await awaitRunning(raw, w, 'fill', fillPods, what, t0, c, FILL_QPS, alive);
    const fill = part(w, 'fill', t0, c.createdS);

    let churn: Part | null = null;
    if (churnPods > 0) {
      w.onRunning = (name, r) => {
        if (r.kind !== 'churn') return;
        const t = setTimeout(() => {
          timers.delete(t);
          churnDeleted++;
          void raw.send('DELETE', `${PODS_PATH}/${name}`).catch(() => undefined);
        }, CHURN_RUNTIME_S * 1000);
        timers.add(t);
      };
      const whatChurn = `${phase} churn (${CHURN_QPS} pods/s for ${CHURN_S} s, ${CHURN_RUNTIME_S} s each)`;
      log(`${whatChurn}: ${churnPods} short-lived pods`);
      const t1 = performance.now();
      const cc = creating(
        t1,
        paced(churnPods, CHURN_QPS, (i) => post(`${phase}-churn-${i}`, 'churn')),
      );
      await awaitRunning(raw, w, 'churn', churnPods, whatChurn, t1, cc, CHURN_QPS, alive);
      churn = part(w, 'churn', t1, cc.createdS);
    }
    return { fill, churn, churnDeleted, watchRelists: w.relists };
  } finally {
    for (const t of timers) clearTimeout(t);
    w.stop();
  }
}

// ---- Cluster objects ----------------------------------------------------------------------------------

/** Names of every object of a collection (metadata only), in pages; `query` without the leading `?`. */
async function names(raw: Raw, path: string, query = ''): Promise<string[]> {
  const out: string[] = [];
  let cont = '';
  do {
    const page = JSON.parse(
      await raw.ok(
        'GET',
        `${path}?limit=500${query ? `&${query}` : ''}${cont ? `&continue=${encodeURIComponent(cont)}` : ''}`,
        undefined,
        METADATA_LIST,
      ),
      // An empty PartialObjectMetadataList has `items: null`.
    ) as { items: { metadata: { name: string } }[] | null; metadata?: { continue?: string } };
    out.push(...(page.items ?? []).map((x) => x.metadata.name));
    cont = page.metadata?.continue ?? '';
  } while (cont);
  return out;
}

async function del(raw: Raw, path: string): Promise<void> {
  const r = await raw.send('DELETE', path);
  if (r.status >= 300 && r.status !== 404)
    throw new Error(`DELETE ${path}: HTTP ${r.status}: ${r.text.slice(0, 300)}`);
}

async function poll(what: string, timeoutMs: number, check: () => Promise<boolean>): Promise<void> {
  const t0 = Date.now();
  while (!(await check())) {
    if (Date.now() - t0 > timeoutMs) throw new FakegpuError('bench/sched', `timed out: ${what}`);
    await sleep(1000);
  }
}

interface Node {
  name: string;
  uid: string;
}

async function selectedNodes(raw: Raw): Promise<Node[]> {
  const nodes: Node[] = [];
  let cont = '';
  do {
    const page = JSON.parse(
      await raw.ok(
        'GET',
        `/api/v1/nodes?limit=500${SELECTOR ? `&labelSelector=${encodeURIComponent(SELECTOR)}` : ''}${cont ? `&continue=${encodeURIComponent(cont)}` : ''}`,
        undefined,
        METADATA_LIST,
      ),
    ) as { items: { metadata: { name: string; uid: string } }[] | null; metadata?: { continue?: string } };
    nodes.push(...(page.items ?? []).map((n) => ({ name: n.metadata.name, uid: n.metadata.uid })));
    cont = page.metadata?.continue ?? '';
  } while (cont);
  return nodes;
}

const slicesOf = (driver: string, node: string, labelled: boolean): string =>
  `fieldSelector=${encodeURIComponent(`spec.driver=${driver},spec.nodeName=${node}`)}${labelled ? `&${BENCH_SEL}` : ''}`;

/** Deletes `driver`'s slices of these nodes (only the bench's own with `labelled`) and waits until none is left. */
async function deleteSlices(raw: Raw, nodes: Node[], driver: string, labelled: boolean): Promise<void> {
  for (let round = 0; round < 5; round++) {
    let left = 0;
    await inParallel(nodes, IN_FLIGHT, async (n) => {
      const ns = await names(raw, SLICES_PATH, slicesOf(driver, n.name, labelled));
      left += ns.length;
      for (const s of ns) await del(raw, `${SLICES_PATH}/${s}`);
    });
    if (left === 0) return;
    log(`deleted ${left} ${driver} slices`);
  }
  throw new FakegpuError('bench/sched', `could not delete the ${driver} slices`);
}

/** The namespace's pods, claims and templates deleted and gone (claims' finalizers taken off, not awaited). */
async function cleanupNamespace(raw: Raw): Promise<void> {
  const pods = await names(raw, PODS_PATH);
  if (pods.length > 0) log(`deleting ${pods.length} pods`);
  await inParallel(pods, IN_FLIGHT, (p) => del(raw, `${PODS_PATH}/${p}?gracePeriodSeconds=0`));
  await poll('the pods deleted', 600_000, async () => (await names(raw, PODS_PATH)).length === 0);
  // kube-controller-manager frees claims at its client's rate (20 requests/s by default), minutes for
  // thousands: the bench takes the pods' claims away itself; nothing is left to run on them.
  const claims = await names(raw, CLAIMS_PATH);
  if (claims.length > 0) log(`deleting ${claims.length} claims`);
  await inParallel(claims, IN_FLIGHT, async (c) => {
    await del(raw, `${CLAIMS_PATH}/${c}`);
    const r = await raw.send(
      'PATCH',
      `${CLAIMS_PATH}/${c}`,
      JSON.stringify({ metadata: { finalizers: null } }),
      'application/json',
      'application/merge-patch+json',
    );
    if (r.status >= 300 && r.status !== 404)
      throw new Error(`PATCH claim ${c}: HTTP ${r.status}: ${r.text.slice(0, 300)}`);
  });
  await poll('the claims deleted', 600_000, async () => (await names(raw, CLAIMS_PATH)).length === 0);
  for (const t of await names(raw, TEMPLATES_PATH)) await del(raw, `${TEMPLATES_PATH}/${t}`);
}

async function ensureNamespace(raw: Raw): Promise<void> {
  // An earlier run's namespace may still be going away.
  await poll(`namespace ${NS} gone or active`, 600_000, async () => {
    const g = await raw.send('GET', `/api/v1/namespaces/${NS}`);
    return (
      g.status === 404 || (JSON.parse(g.text) as { status?: { phase?: string } }).status?.phase === 'Active'
    );
  });
  const r = await raw.send(
    'POST',
    '/api/v1/namespaces',
    JSON.stringify({ metadata: { name: NS, labels: { [BENCH_LABEL]: 'sched' } } }),
  );
  if (r.status >= 300 && r.status !== 409)
    throw new Error(`creating namespace ${NS}: HTTP ${r.status}: ${r.text.slice(0, 300)}`);
  await until('the namespace’s service account', 60_000, async () => {
    return (await raw.send('GET', `/api/v1/namespaces/${NS}/serviceaccounts/default`)).status === 200;
  });
}

async function createTemplate(raw: Raw, name: string, spec: unknown): Promise<void> {
  await raw.ok(
    'POST',
    TEMPLATES_PATH,
    JSON.stringify({
      apiVersion: 'resource.k8s.io/v1',
      kind: 'ResourceClaimTemplate',
      metadata: { name, labels: { [BENCH_LABEL]: 'sched' } },
      spec: { spec },
    }),
  );
}

/**
 * The DeviceClasses the variant's claims name, created from deploy/deviceclasses.yaml where the cluster
 * lacks them (`cluster up` installs them; an existing cluster may not have them). Answers those created.
 */
async function ensureClasses(raw: Raw, wanted: string[]): Promise<string[]> {
  const docs = parseAllDocuments(readFileSync(join(REPO_ROOT, 'deploy', 'deviceclasses.yaml'), 'utf8')).map(
    (d) => d.toJS() as { metadata?: { name?: string } } | null,
  );
  const created: string[] = [];
  for (const name of wanted) {
    if ((await raw.send('GET', `${CLASSES_PATH}/${name}`)).status === 200) continue;
    const doc = docs.find((d) => d?.metadata?.name === name);
    if (!doc)
      throw new FakegpuError('bench/sched', `DeviceClass ${name} is not in deploy/deviceclasses.yaml`);
    log(`creating DeviceClass ${name} (deploy/deviceclasses.yaml)`);
    await raw.ok('POST', CLASSES_PATH, JSON.stringify(doc));
    created.push(name);
  }
  return created;
}

/** What ClusterLoader2's KWOK DRA driver writes for a node: one slice, pool = node, devices without attributes. */
function genericSlice(n: Node): string {
  return JSON.stringify({
    apiVersion: 'resource.k8s.io/v1',
    kind: 'ResourceSlice',
    metadata: {
      generateName: 'cl2-gpu-',
      labels: { [BENCH_LABEL]: 'sched' },
      ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: n.name, uid: n.uid, controller: true }],
    },
    spec: {
      driver: GENERIC_DRIVER,
      nodeName: n.name,
      pool: { name: n.name, generation: 1, resourceSliceCount: 1 },
      devices: Array.from({ length: SHAPE.gpus }, (_, i) => ({ name: `gpu-${i}` })),
    },
  });
}

const GENERIC_CLASS = {
  apiVersion: 'resource.k8s.io/v1',
  kind: 'DeviceClass',
  metadata: { name: GENERIC_DRIVER, labels: { [BENCH_LABEL]: 'sched' } },
  spec: { selectors: [{ cel: { expression: `device.driver == '${GENERIC_DRIVER}'` } }] },
};

// ---- The run ------------------------------------------------------------------------------------------

interface Phase {
  driver: string;
  deviceClass: string;
  claim: unknown;
  devicesPerNode: number;
  capacity: number;
  slices: number;
  /** Seconds from the fleet's start (or the first generic POST) to every node published. */
  publishS: number;
  work: Workload;
}

interface Results {
  nodes: number;
  faithful: Phase;
  generic: Phase;
}

function faithfulClass(): string {
  return VARIANT === 'mig' ? MIG_CLASS : GPU_CLASS;
}

async function run(kubeconfig: string): Promise<Results> {
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfig);
  const raw = await Raw.of(kc, IN_FLIGHT + 4);
  const nodes = await selectedNodes(raw);
  if (nodes.length === 0)
    throw new FakegpuError('bench/sched', `no node matches --node-selector ${show(SELECTOR)}`);
  if ((!EXISTING || NODES_GIVEN) && nodes.length !== NODES_FLAG)
    throw new FakegpuError(
      'bench/sched',
      `expected ${NODES_FLAG} nodes matching ${show(SELECTOR)}, found ${nodes.length}${EXISTING ? ' (with --kubeconfig, leave --nodes out to use them all)' : ''}`,
    );
  const N = nodes.length;
  const first = nodes[0] as Node;
  const drivers = [DRIVER_NAME, ...(VARIANT === 'nic-aligned' ? [DRANET] : [])];
  // Another fleet or plugin serving these nodes would fight this bench's: refused, on the first node.
  // Generic slices the bench itself left (it labels its own) are deleted below.
  for (const d of [...drivers, GENERIC_DRIVER]) {
    const all = await names(raw, SLICES_PATH, slicesOf(d, first.name, false));
    const ours = d === GENERIC_DRIVER ? await names(raw, SLICES_PATH, slicesOf(d, first.name, true)) : [];
    if (all.length > ours.length)
      throw new FakegpuError(
        'bench/sched',
        `node ${first.name} already has ${d} slices: another driver serves the selected nodes (or a killed run of this bench left them: kubectl delete resourceslices --field-selector spec.driver=${d}); stop it or choose other nodes with --node-selector`,
      );
  }

  const createdClasses: string[] = [];
  let createdGenericClass = false;
  let fleet: ChildProcess | null = null;
  let fleetSlices = false;
  try {
    createdClasses.push(
      ...(await ensureClasses(raw, VARIANT === 'nic-aligned' ? [GPU_CLASS, NIC_CLASS] : [faithfulClass()])),
    );
    await ensureNamespace(raw);
    await cleanupNamespace(raw);
    await deleteSlices(raw, nodes, GENERIC_DRIVER, true);

    // 1. NVIDIA-faithful: the fleet's slices.
    log(
      `faithful: the fleet publishes ${N} nodes of ${PROFILE}${DYNAMIC_MIG ? ' with dynamic MIG' : ''}${VARIANT === 'nic-aligned' ? ' with NICs' : ''}`,
    );
    const t0 = performance.now();
    fleetSlices = true;
    const f0 = startFleet(
      kubeconfig,
      [
        `--profile=${PROFILE}`,
        ...(SELECTOR ? [`--node-selector=${SELECTOR}`] : []),
        ...(VARIANT === 'nic-aligned' ? ['--nics'] : []),
      ],
      { dynamicMig: DYNAMIC_MIG, log },
    );
    fleet = f0;
    const alive = (): void => {
      if (f0.exitCode !== null) throw new FakegpuError('bench/sched', 'the fleet exited');
    };
    await until('the fleet to publish every node', Math.max(900_000, N * 500), async () => {
      alive();
      return (await get(`http://${FLEET_HTTP}/readyz`)).status === 200;
    });
    const publishS = seconds(t0);
    const m = (await get(`http://${FLEET_HTTP}/metrics`)).text;
    const served = metric(m, 'fakegpu_fleet_nodes');
    if (served !== N)
      throw new FakegpuError('bench/sched', `the fleet serves ${served} nodes, expected the ${N} selected`);
    const slices = metric(m, 'fakegpu_fleet_slices');
    log(`faithful: ${slices} slices published in ${f(publishS)} s`);
    await createTemplate(raw, 'sched-faithful', faithfulClaim());
    const capacity = N * SHAPE.perNode;
    const faithfulWork = await workload(kc, raw, 'faithful', 'sched-faithful', capacity, alive);
    await cleanupNamespace(raw);
    await stopFleet(f0);
    fleet = null;
    log('faithful: fleet stopped; deleting its slices');
    for (const d of drivers) await deleteSlices(raw, nodes, d, false);
    fleetSlices = false;
    const faithful: Phase = {
      driver: DRIVER_NAME,
      deviceClass: faithfulClass(),
      claim: faithfulClaim(),
      devicesPerNode: SHAPE.perNode,
      capacity,
      slices,
      publishS,
      work: faithfulWork,
    };

    // 2. Generic: ClusterLoader2's slices, posted by the bench.
    const r = await raw.send('POST', CLASSES_PATH, JSON.stringify(GENERIC_CLASS));
    if (r.status >= 300 && r.status !== 409)
      throw new Error(`creating DeviceClass ${GENERIC_DRIVER}: HTTP ${r.status}`);
    createdGenericClass = r.status < 300;
    log(`generic: posting ${N} ${GENERIC_DRIVER} slices of ${SHAPE.gpus} devices without attributes`);
    const t1 = performance.now();
    await inParallel(nodes, IN_FLIGHT, async (n) => {
      await raw.ok('POST', SLICES_PATH, genericSlice(n));
    });
    const genericPublishS = seconds(t1);
    await createTemplate(raw, 'sched-generic', GENERIC_CLAIM);
    const genericWork = await workload(kc, raw, 'generic', 'sched-generic', N * SHAPE.gpus, () => undefined);
    await cleanupNamespace(raw);
    return {
      nodes: N,
      faithful,
      generic: {
        driver: GENERIC_DRIVER,
        deviceClass: GENERIC_DRIVER,
        claim: GENERIC_CLAIM,
        devicesPerNode: SHAPE.gpus,
        capacity: N * SHAPE.gpus,
        slices: N,
        publishS: genericPublishS,
        work: genericWork,
      },
    };
  } finally {
    if (fleet) await stopFleet(fleet);
    // The bench's own cluster is purged (or kept, to be looked at); an existing one gets back what it had.
    if (EXISTING) {
      const step = async (what: string, fn: () => Promise<void>): Promise<void> => {
        try {
          await fn();
        } catch (e) {
          log(`cleanup: ${what} failed: ${e instanceof Error ? e.message : String(e)}`);
        }
      };
      log('cleanup: removing what the bench made');
      await step('the namespace', async () => {
        await cleanupNamespace(raw);
        await del(raw, `/api/v1/namespaces/${NS}`);
      });
      await step('the generic slices', () => deleteSlices(raw, nodes, GENERIC_DRIVER, true));
      if (fleetSlices)
        for (const d of drivers) await step(`the ${d} slices`, () => deleteSlices(raw, nodes, d, false));
      for (const c of [...(createdGenericClass ? [GENERIC_DRIVER] : []), ...createdClasses])
        await step(`DeviceClass ${c}`, () => del(raw, `${CLASSES_PATH}/${c}`));
    }
  }
}

// ---- Main ---------------------------------------------------------------------------------------------

log(HARDWARE);
let r: Results;
if (KUBECONFIG !== undefined) {
  log(`an existing cluster (${KUBECONFIG}), nodes ${show(SELECTOR)}`);
  r = await run(KUBECONFIG);
} else {
  log(`starting the cluster with ${NODES_FLAG} KWOK nodes of ${PROFILE}`);
  await clusterDown({ dir: DIR, purge: true, log });
  r = await onKwokCluster(
    { dir: DIR, kwokNodes: NODES_FLAG, kwokProfile: PROFILE, keep: opts.keep === true, log },
    run,
  );
}

const N = r.nodes;
const fa = r.faithful.work;
const ge = r.generic.work;
const ratio = fa.fill.podsPerS / ge.fill.podsPerS;
const shapeLine: Record<Variant, string> = {
  plain: `one device of DeviceClass ${GPU_CLASS}`,
  cel: `one device of ${GPU_CLASS} with CEL on productName${SHAPE.memory === null ? '' : ' and memory'}`,
  'first-available': `firstAvailable: another product's GPU, then any of ${GPU_CLASS}`,
  mig: `one ${MIG_PROFILE} partition of ${MIG_CLASS} (counters)`,
  'nic-aligned': `a GPU of ${GPU_CLASS} and an RDMA NIC of ${NIC_CLASS}, matchAttribute ${STD.pcieRoot}`,
};
const result = {
  bench: 'sched',
  startedAt: STARTED.toISOString(),
  hardware: HARDWARE,
  cluster: EXISTING ? 'existing' : 'own',
  nodeSelector: SELECTOR,
  nodes: N,
  profile: PROFILE,
  variant: VARIANT,
  dynamicMig: DYNAMIC_MIG,
  ...(VARIANT === 'mig' ? { migProfile: MIG_PROFILE } : {}),
  fill: FILL,
  fillQps: FILL_QPS,
  churnSeconds: CHURN_S,
  churnQps: CHURN_QPS,
  churnRuntimeS: CHURN_RUNTIME_S,
  phases: { faithful: r.faithful, generic: r.generic },
  ratio,
};
mkdirSync(dirname(JSON_PATH), { recursive: true });
writeFileSync(JSON_PATH, `${JSON.stringify(result, null, 2)}\n`);
log(`JSON result: ${JSON_PATH}`);

const fill = `fill ${f(FILL * 100, 0)}% ${FILL_QPS > 0 ? `at ${FILL_QPS} pods/s` : 'unpaced'}`;
const churnText =
  CHURN_S > 0 ? `churn ${CHURN_S} s at ${CHURN_QPS} pods/s, ${CHURN_RUNTIME_S} s each` : 'no churn';
console.log(
  `bench/sched: ${N} KWOK nodes of ${PROFILE}${DYNAMIC_MIG ? ' (dynamic MIG)' : ''}; variant ${VARIANT}: ${shapeLine[VARIANT]}; ${fill}, ${churnText}; ${HARDWARE}\n`,
);
console.log(
  '| phase | slices | capacity (claims) | pods | created in s | all Running s | pods/s | startup p50 s | p90 s | p99 s | scheduled p50 s | p99 s |',
);
console.log('|---|---|---|---|---|---|---|---|---|---|---|---|');
const row = (name: string, p: Phase, x: Part | null): void => {
  if (!x) return;
  console.log(
    `| ${name} | ${p.slices} | ${p.capacity} | ${x.pods} | ${f(x.createdS)} | ${f(x.seconds)} | ${f(x.podsPerS)} | ${f(x.startup.p50, 3)} | ${f(x.startup.p90, 3)} | ${f(x.startup.p99, 3)} | ${f(x.scheduled.p50, 3)} | ${f(x.scheduled.p99, 3)} |`,
  );
};
row(`NVIDIA-faithful (${VARIANT}) fill`, r.faithful, fa.fill);
row(`NVIDIA-faithful (${VARIANT}) churn`, r.faithful, fa.churn);
row(`generic (${GENERIC_DRIVER}) fill`, r.generic, ge.fill);
row(`generic (${GENERIC_DRIVER}) churn`, r.generic, ge.churn);
console.log(`\n| faithful / generic | value |\n|---|---|`);
console.log(`| fill pods/s | ${f(ratio)} |`);
console.log(`| fill startup p50 | ${f(fa.fill.startup.p50 / ge.fill.startup.p50)} |`);
if (fa.churn && ge.churn) {
  console.log(`| churn startup p50 | ${f(fa.churn.startup.p50 / ge.churn.startup.p50)} |`);
  console.log(`| churn startup p99 | ${f(fa.churn.startup.p99 / ge.churn.startup.p99)} |`);
}
console.log(
  `| slices published in (fleet from start; generic: the bench's POSTs) | ${f(r.faithful.publishS)} s / ${f(r.generic.publishS)} s |`,
);
const late = fa.fill.late + (fa.churn?.late ?? 0) + ge.fill.late + (ge.churn?.late ?? 0);
if (late > 0)
  console.log(`\n(${late} pods were seen Running only by a relist; their startup times are late.)`);
console.log(
  `\nsched: N=${N} fill_pods_per_s=${f(fa.fill.podsPerS)} churn_p50=${f(fa.churn?.startup.p50 ?? Number.NaN, 3)} churn_p99=${f(fa.churn?.startup.p99 ?? Number.NaN, 3)} generic_fill_pods_per_s=${f(ge.fill.podsPerS)} ratio=${f(ratio)}`,
);
