/**
 * bench/computedomains: NVIDIA's ComputeDomains at rack scale on the local real control plane (etcd,
 * kube-apiserver, kube-scheduler, kube-controller-manager, KWOK), with fakegpu's emulated
 * ComputeDomain controller (started by `cluster up` for GB200) and a `fakegpu fleet` process, as users
 * run it, playing the compute-domain node side of every KWOK node.
 *
 *   1. The cluster: `--racks` NVL72 racks of 18 KWOK nodes of oci-bm.gpu.gb200.4 (`fakegpu.dev/rack`
 *      per 18 nodes, so one NVLink clique per rack).
 *   2. Memory without ComputeDomains: the fleet with `--no-compute-domains`, every node published, its
 *      resident memory some seconds after (V8 gives back a burst's garbage late).
 *   3. The fleet again with ComputeDomains (its slices' channel and daemon devices, node labels, the
 *      IMEX daemons' clique entries), every node published and labelled with its clique.
 *   4. Each round, first the baseline: the same work for the Kubernetes stack without ComputeDomains
 *      (per rack 18 pods with a channel claim and 18 with a daemon claim, from plain templates, on the
 *      rack's nodes), timed to every pod Running; then everything is deleted and awaited.
 *   5. Then the domains: one ComputeDomain per rack (numNodes 18) and, as soon as the controller has made its
 *      channel claim template, 18 pods with one channel claim each, pinned to the rack's clique; timed
 *      from the first create to every domain Ready with 18 nodes and every pod Running (lists polled
 *      every second). The fleet's memory is taken again once that is done. Between rounds everything
 *      is deleted and the cleanup (claims, templates, DaemonSets, daemon pods, cliques, node labels)
 *      awaited. The ratio of the medians (domains / baseline) is fakegpu's cost over the stack's own.
 *
 * Usage: npm run bench:computedomains -- --racks 50 [--rounds 1] [--in-flight 32] [--keep]
 */
import type { ChildProcess } from 'node:child_process';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { KubeConfig } from '@kubernetes/client-node';
import { Command } from 'commander';
import { intFlag } from '../src/cli/options.js';
import { cacheRoot } from '../src/local-cluster/build.js';
import { clusterDown, FLEET_HTTP } from '../src/local-cluster/cluster.js';
import { CD_CONTROLLER_HTTP } from '../src/local-cluster/compute-domain-process.js';
import { TEST_IMAGE } from '../src/local-cluster/image.js';
import {
  CD_GROUP_VERSION,
  cliquesPath,
  DEFAULT_DRIVER_NAMESPACE,
  DOMAIN_LABEL,
  GPU_CLIQUE_LABEL,
  MAX_NODES_PER_IMEX_DOMAIN,
  podsPath,
} from '../src/model/compute-domain/resource.js';
import { CHANNEL_CLASS, DAEMON_CLASS } from '../src/model/compute-domain/slice.js';
import { FakegpuError } from '../src/errors.js';
import {
  get,
  inParallel,
  kwokNodes,
  logger,
  METADATA_LIST,
  Raw,
  seconds,
  startFleet,
  stopFleet,
  until,
  checked as checkedFlag,
  median,
  onKwokCluster,
  listAll,
  procStatusKb,
} from './support.js';

const opts = new Command('bench:computedomains')
  .option('--racks <n>', 'NVL72 racks of 18 KWOK GB200 nodes; one ComputeDomain of 18 pods each', '50')
  .option('--rounds <n>', 'create, wait for Ready, delete; the median is reported', '1')
  .option('--in-flight <n>', 'racks whose domain and pods are created at once', '32')
  .option('--keep', 'leave the cluster running afterwards')
  // process.argv: node, scripts/bench.mjs, the benchmark's name, then its flags.
  .parse(process.argv.slice(3), { from: 'user' })
  .opts<{ racks: string; rounds: string; inFlight: string; keep?: boolean }>();

const log = logger('bench/computedomains');
const checked = <T>(parse: () => T): T => checkedFlag('bench/computedomains', parse);
const RACKS = checked(() => intFlag(opts.racks, '--racks', 1, 1000));
const ROUNDS = checked(() => intFlag(opts.rounds, '--rounds', 1, 10));
const IN_FLIGHT = checked(() => intFlag(opts.inFlight, '--in-flight', 1, 1000));
const PER_RACK = MAX_NODES_PER_IMEX_DOMAIN;
const NODES = RACKS * PER_RACK;
const PODS = NODES;
const PROFILE = 'oci-bm.gpu.gb200.4';
const DIR = join(cacheRoot(), 'bench-computedomains-cluster');
const NS = 'default';
/** On every domain and pod this benchmark creates. */
const BENCH_LABEL = 'fakegpu.dev/bench';
const SEL = encodeURIComponent(`${BENCH_LABEL}=computedomains`);
const HAS_DOMAIN = encodeURIComponent(DOMAIN_LABEL);
const CDS_PATH = `/apis/${CD_GROUP_VERSION}/namespaces/${NS}/computedomains`;
const RCTS_PATH = `/apis/resource.k8s.io/v1/namespaces/${NS}/resourceclaimtemplates`;
const POLL_MS = 1000;
/** A round fails once nothing has moved for this long (a larger run may take as long as it needs). */
const STALL_MS = 180_000;
const SETTLE_MS = 20_000;
const f = (n: number, d = 2): string => n.toFixed(d);

interface Listed {
  metadata: { name: string; labels?: Record<string, string> };
}
interface Domain extends Listed {
  status?: { status?: string; nodes?: unknown[] };
}
interface Pod extends Listed {
  spec?: { nodeName?: string };
  status?: { phase?: string };
}

const count = async (raw: Raw, path: string, query = ''): Promise<number> =>
  (await listAll<Listed>(raw, path, query, METADATA_LIST)).length;

/** Polls `check` every `periodMs` (lists of hundreds of objects, not the 50 ms of `until`). */
async function poll(what: string, timeoutMs: number, periodMs: number, check: () => Promise<boolean>) {
  const t0 = Date.now();
  while (!(await check())) {
    if (Date.now() - t0 > timeoutMs) throw new FakegpuError('bench/computedomains', `timed out: ${what}`);
    await sleep(periodMs);
  }
}

/** The fleet's RSS once it is done, as bench/fleet takes it: after V8's memory reducer has run. */
async function settledRssKiB(p: ChildProcess): Promise<number> {
  await sleep(SETTLE_MS);
  if (p.exitCode !== null) throw new FakegpuError('bench/computedomains', 'the fleet exited');
  return procStatusKb(p.pid ?? 0)('VmRSS');
}

async function converged(fleet: ChildProcess, what: string): Promise<void> {
  await until(what, 900_000, async () => {
    if (fleet.exitCode !== null) throw new FakegpuError('bench/computedomains', 'the fleet exited');
    return (await get(`http://${FLEET_HTTP}/readyz`)).status === 200;
  });
}

/** The racks' cliques, each with its 18 nodes, once the fleet has labelled every node (GFD's label). */
async function cliques(raw: Raw, fleet: ChildProcess): Promise<string[]> {
  let groups = new Map<string, string[]>();
  await poll(`every KWOK node labelled ${GPU_CLIQUE_LABEL}`, 300_000, POLL_MS, async () => {
    if (fleet.exitCode !== null) throw new FakegpuError('bench/computedomains', 'the fleet exited');
    const nodes = await listAll<Listed>(raw, '/api/v1/nodes', 'labelSelector=type%3Dkwok', METADATA_LIST);
    groups = new Map();
    let labelled = 0;
    for (const n of nodes) {
      const c = n.metadata.labels?.[GPU_CLIQUE_LABEL];
      if (c === undefined) continue;
      labelled++;
      groups.set(c, [...(groups.get(c) ?? []), n.metadata.name]);
    }
    return labelled === NODES;
  });
  const sizes = [...groups.values()].map((g) => g.length);
  if (groups.size !== RACKS || sizes.some((s) => s !== PER_RACK))
    throw new FakegpuError(
      'bench/computedomains',
      `expected ${RACKS} cliques of ${PER_RACK} nodes, found ${groups.size} (sizes ${[...new Set(sizes)].join(', ')})`,
    );
  const index = (name: string): number => Number(name.slice(name.lastIndexOf('-') + 1));
  // Domain i on rack i: cliques in the order of their nodes.
  return [...groups]
    .sort(([, a], [, b]) => Math.min(...a.map(index)) - Math.min(...b.map(index)))
    .map(([c]) => c);
}

const domainName = (rack: number): string => `bench-cd-${rack}`;

function computeDomain(rack: number): string {
  const name = domainName(rack);
  return JSON.stringify({
    apiVersion: CD_GROUP_VERSION,
    kind: 'ComputeDomain',
    metadata: { name, namespace: NS, labels: { [BENCH_LABEL]: 'computedomains' } },
    spec: { numNodes: PER_RACK, channel: { resourceClaimTemplate: { name: `${name}-channel` } } },
  });
}

function pod(rack: number, k: number, clique: string): string {
  const name = domainName(rack);
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: `${name}-${k}`, namespace: NS, labels: { [BENCH_LABEL]: 'computedomains' } },
    spec: {
      nodeSelector: { [GPU_CLIQUE_LABEL]: clique },
      tolerations: [{ operator: 'Exists' }],
      resourceClaims: [{ name: 'channel', resourceClaimTemplateName: `${name}-channel` }],
      // KWOK never runs it.
      containers: [{ name: 'c', image: TEST_IMAGE, resources: { claims: [{ name: 'channel' }] } }],
    },
  });
}

const baseName = (rack: number): string => `bench-base-${rack}`;

/** The baseline's two templates of a rack: the same channel and daemon devices, with no domain behind them. */
function baseTemplates(rack: number): string[] {
  return (['channel', 'daemon'] as const).map((kind) =>
    JSON.stringify({
      apiVersion: 'resource.k8s.io/v1',
      kind: 'ResourceClaimTemplate',
      metadata: {
        name: `${baseName(rack)}-${kind}`,
        namespace: NS,
        labels: { [BENCH_LABEL]: 'computedomains' },
      },
      spec: {
        spec: {
          devices: {
            requests: [
              { name: kind, exactly: { deviceClassName: kind === 'channel' ? CHANNEL_CLASS : DAEMON_CLASS } },
            ],
          },
        },
      },
    }),
  );
}

/** A baseline pod: what a domain's workload pod or IMEX daemon pod asks of the scheduler, without the domain. */
function basePod(rack: number, k: number, clique: string, kind: 'channel' | 'daemon'): string {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: `${baseName(rack)}-${kind}-${k}`,
      namespace: NS,
      labels: { [BENCH_LABEL]: 'computedomains', 'fakegpu.dev/bench-part': 'baseline' },
    },
    spec: {
      nodeSelector: { [GPU_CLIQUE_LABEL]: clique },
      tolerations: [{ operator: 'Exists' }],
      resourceClaims: [{ name: kind, resourceClaimTemplateName: `${baseName(rack)}-${kind}` }],
      containers: [{ name: 'c', image: TEST_IMAGE, resources: { claims: [{ name: kind }] } }],
    },
  });
}

/**
 * The baseline, in the same cluster and fleet: per rack the 18 workload pods and the 18 daemon pods a
 * domain brings, each with its channel or daemon claim from a template, but no ComputeDomain: what the
 * scheduler, the claim controller and KWOK must do anyway. Seconds from the first create to every pod
 * Running.
 */
async function baseline(raw: Raw, racks: string[], r: number): Promise<number> {
  log(`round ${r}/${ROUNDS}, baseline: ${2 * PODS} pods with channel and daemon claims, no domains`);
  const t0 = performance.now();
  await inParallel(racks, IN_FLIGHT, async (clique, rack) => {
    for (const t of baseTemplates(rack)) await raw.ok('POST', RCTS_PATH, t);
    for (let k = 0; k < PER_RACK; k++)
      for (const kind of ['channel', 'daemon'] as const)
        await raw.ok('POST', podsPath(NS), basePod(rack, k, clique, kind));
  });
  const sel = `labelSelector=${encodeURIComponent('fakegpu.dev/bench-part=baseline')}`;
  let last = '';
  await poll('the baseline pods Running', 1_200_000, POLL_MS, async () => {
    const pods = await listAll<Pod>(raw, podsPath(NS), sel);
    const running = pods.filter((p) => p.status?.phase === 'Running').length;
    const line = `baseline pods Running ${running}/${2 * PODS}`;
    if (line !== last) log(`round ${r}/${ROUNDS}, ${f(seconds(t0), 1)} s: ${line}`);
    last = line;
    return running === 2 * PODS;
  });
  const s = seconds(t0);
  log(`round ${r}/${ROUNDS}, baseline: every pod Running after ${f(s)} s`);
  return s;
}

interface Progress {
  ready: number;
  cdNodes: number;
  bound: number;
  running: number;
}

async function progress(raw: Raw): Promise<Progress> {
  const [domains, pods] = await Promise.all([
    listAll<Domain>(raw, CDS_PATH, `labelSelector=${SEL}`),
    listAll<Pod>(raw, podsPath(NS), `labelSelector=${SEL}`),
  ]);
  return {
    ready: domains.filter((d) => d.status?.status === 'Ready' && (d.status.nodes?.length ?? 0) === PER_RACK)
      .length,
    cdNodes: domains.reduce((k, d) => k + (d.status?.nodes?.length ?? 0), 0),
    bound: pods.filter((p) => p.spec?.nodeName).length,
    running: pods.filter((p) => p.status?.phase === 'Running').length,
  };
}

const show = (p: Progress): string =>
  `domains Ready ${p.ready}/${RACKS} (${p.cdNodes}/${NODES} nodes in their status), pods bound ${p.bound}/${PODS}, Running ${p.running}/${PODS}`;

/**
 * One round: every domain created and, once its channel template is there, its 18 pods; seconds from
 * the first create to every domain Ready with 18 nodes and every pod Running.
 */
async function round(
  raw: Raw,
  fleet: ChildProcess,
  racks: string[],
  r: number,
): Promise<{ createdS: number; readyS: number }> {
  log(`round ${r}/${ROUNDS}: ${RACKS} ComputeDomains and ${PODS} pods, ${IN_FLIGHT} racks at once`);
  const t0 = performance.now();
  // Set by the creating side, read by the polling loop.
  const c: { createdS: number; failed: Error | null } = { createdS: 0, failed: null };
  const created = inParallel(racks, IN_FLIGHT, async (clique, rack) => {
    await raw.ok('POST', CDS_PATH, computeDomain(rack));
    // The controller makes the channel template within its 2 s period; pods created before it would
    // wait out the claim controller's backoff instead.
    await poll(
      `the channel template of ${domainName(rack)}`,
      120_000,
      100,
      async () => (await raw.send('GET', `${RCTS_PATH}/${domainName(rack)}-channel`)).status === 200,
    );
    for (let k = 0; k < PER_RACK; k++) await raw.ok('POST', podsPath(NS), pod(rack, k, clique));
  }).then(
    () => {
      c.createdS = seconds(t0);
      log(`round ${r}/${ROUNDS}: all created after ${f(c.createdS)} s`);
    },
    // Reported by the loop below, which would otherwise wait for a stall.
    (e: unknown) => {
      c.failed = e instanceof Error ? e : new Error(String(e));
    },
  );
  let last = '';
  let moved = Date.now();
  let done = false;
  while (!done) {
    if (fleet.exitCode !== null) throw new FakegpuError('bench/computedomains', 'the fleet exited');
    if (c.failed) throw c.failed;
    const p = await progress(raw);
    const line = show(p);
    if (line !== last) {
      log(`round ${r}/${ROUNDS}, ${f(seconds(t0), 1)} s: ${line}`);
      last = line;
      moved = Date.now();
    } else if (Date.now() - moved > STALL_MS) {
      throw new FakegpuError(
        'bench/computedomains',
        `nothing moved for ${STALL_MS / 1000} s: ${line} (with --keep, the controller's log stays in ${join(DIR, 'logs')})`,
      );
    }
    done = c.createdS > 0 && p.ready === RACKS && p.running === PODS;
    if (!done) await sleep(POLL_MS);
  }
  const readyS = seconds(t0);
  await created;
  log(`round ${r}/${ROUNDS}: every domain Ready and every pod Running after ${f(readyS)} s`);
  return { createdS: c.createdS, readyS };
}

/** Everything of a round deleted and gone: pods and their claims, domains and what the controller made. */
async function cleanup(raw: Raw): Promise<void> {
  log('deleting the pods and ComputeDomains');
  await raw.ok('DELETE', `${podsPath(NS)}?labelSelector=${SEL}`);
  await raw.ok('DELETE', `${CDS_PATH}?labelSelector=${SEL}`);
  await raw.ok('DELETE', `${RCTS_PATH}?labelSelector=${SEL}`);
  let last = '';
  await poll('the cleanup', 600_000, POLL_MS, async () => {
    const left: [string, number][] = [
      ['pods', await count(raw, podsPath(NS), `labelSelector=${SEL}`)],
      ['claims', await count(raw, `/apis/resource.k8s.io/v1/namespaces/${NS}/resourceclaims`)],
      ['domains', await count(raw, CDS_PATH, `labelSelector=${SEL}`)],
      [
        'templates',
        await count(raw, '/apis/resource.k8s.io/v1/resourceclaimtemplates', `labelSelector=${HAS_DOMAIN}`),
      ],
      ['daemon pods', await count(raw, podsPath(DEFAULT_DRIVER_NAMESPACE), `labelSelector=${HAS_DOMAIN}`)],
      ['cliques', await count(raw, cliquesPath(DEFAULT_DRIVER_NAMESPACE))],
      ['labelled nodes', await count(raw, '/api/v1/nodes', `labelSelector=${HAS_DOMAIN}`)],
    ];
    const line = left.map(([k, n]) => `${k} ${n}`).join(', ');
    if (line !== last) log(`left: ${line}`);
    last = line;
    return left.every(([, n]) => n === 0);
  });
}

interface Results {
  withoutKiB: number;
  idleKiB: number;
  withKiB: number[];
  rounds: { createdS: number; readyS: number; baselineS: number }[];
}

async function run(kubeconfig: string): Promise<Results> {
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfig);
  const raw = await Raw.of(kc, Math.max(IN_FLIGHT, 8));
  const nodes = await kwokNodes(raw);
  if (nodes.length !== NODES)
    throw new FakegpuError('bench/computedomains', `expected ${NODES} KWOK nodes, found ${nodes.length}`);
  if ((await get(`http://${CD_CONTROLLER_HTTP}/healthz`)).status !== 200)
    throw new FakegpuError(
      'bench/computedomains',
      `the ComputeDomain controller does not answer on ${CD_CONTROLLER_HTTP}; cluster up starts it for ${PROFILE}`,
    );

  log(`fleet without ComputeDomains: publishing ${NODES} nodes`);
  let fleet = startFleet(kubeconfig, [`--profile=${PROFILE}`, '--no-compute-domains'], {
    dynamicMig: false,
    log,
  });
  try {
    await converged(fleet, 'the fleet (no ComputeDomains) to publish every node');
    const withoutKiB = await settledRssKiB(fleet);
    log(`fleet without ComputeDomains: RSS ${f(withoutKiB / 1024, 1)} MiB`);
    await stopFleet(fleet);

    log(`fleet with ComputeDomains: publishing ${NODES} nodes`);
    fleet = startFleet(kubeconfig, [`--profile=${PROFILE}`], { dynamicMig: false, log });
    await converged(fleet, 'the fleet (ComputeDomains) to publish every node');
    const racks = await cliques(raw, fleet);
    log(`${RACKS} cliques of ${PER_RACK} nodes labelled`);
    const idleKiB = await settledRssKiB(fleet);
    log(`fleet with ComputeDomains, none created: RSS ${f(idleKiB / 1024, 1)} MiB`);

    const rounds: Results['rounds'] = [];
    const withKiB: number[] = [];
    for (let r = 1; r <= ROUNDS; r++) {
      const baselineS = await baseline(raw, racks, r);
      await cleanup(raw);
      rounds.push({ ...(await round(raw, fleet, racks, r)), baselineS });
      withKiB.push(await settledRssKiB(fleet));
      log(`round ${r}/${ROUNDS}: fleet RSS ${f((withKiB.at(-1) ?? 0) / 1024, 1)} MiB`);
      if (r < ROUNDS) await cleanup(raw);
    }
    return { withoutKiB, idleKiB, withKiB, rounds };
  } finally {
    await stopFleet(fleet);
  }
}

const cpu = cpus();
const hardware = `${cpu[0]?.model.trim() ?? 'unknown CPU'}, ${cpu.length} cores, ${f(totalmem() / 2 ** 30, 0)} GiB`;
log(`${hardware}; starting the cluster with ${NODES} KWOK nodes of ${PROFILE} (${RACKS} racks)`);
await clusterDown({ dir: DIR, purge: true, log });
const r = await onKwokCluster(
  { dir: DIR, kwokNodes: NODES, kwokProfile: PROFILE, keep: opts.keep === true, log },
  run,
);

const spread = (xs: readonly number[], d = 2): string =>
  xs.length > 1 ? `${f(Math.min(...xs), d)} – ${f(Math.max(...xs), d)}` : '';
const readyS = median(r.rounds.map((x) => x.readyS));
const baselineS = median(r.rounds.map((x) => x.baselineS));
const createdS = median(r.rounds.map((x) => x.createdS));
const withKiB = median(r.withKiB);
const perNode = withKiB / NODES;
const withoutPerNode = r.withoutKiB / NODES;
console.log(
  `bench/computedomains: ${NODES} KWOK nodes of ${PROFILE} in ${RACKS} NVL72 racks; ${RACKS} ComputeDomains of ${PER_RACK} pods; median of ${ROUNDS} round(s); ${hardware}\n`,
);
console.log('| ComputeDomains | seconds | range |\n|---|---|---|');
console.log(
  `| every domain and its pods created (${IN_FLIGHT} racks at once) | ${f(createdS)} | ${spread(r.rounds.map((x) => x.createdS))} |`,
);
console.log(
  `| every domain Ready (${PER_RACK} nodes) and every pod Running | ${f(readyS)} | ${spread(r.rounds.map((x) => x.readyS))} |`,
);
console.log(
  `| baseline: the same ${2 * PODS} pods with channel and daemon claims, no domains | ${f(baselineS)} | ${spread(r.rounds.map((x) => x.baselineS))} |`,
);
console.log(`\n| fleet memory, ${SETTLE_MS / 1000} s after | RSS MiB | per node KiB |\n|---|---|---|`);
console.log(
  `| --no-compute-domains, every node published | ${f(r.withoutKiB / 1024, 1)} | ${f(withoutPerNode, 1)} |`,
);
console.log(`| ComputeDomains on, none created | ${f(r.idleKiB / 1024, 1)} | ${f(r.idleKiB / NODES, 1)} |`);
console.log(
  `| ${RACKS} domains Ready, ${PODS} pods Running (median of rounds) | ${f(withKiB / 1024, 1)} | ${f(perNode, 1)} |`,
);
console.log(
  `\ncd-rss: nodes=${NODES} without=${f(withoutPerNode, 1)} with=${f(perNode, 1)} growth=${f(perNode - withoutPerNode, 1)} ratio=${f(withKiB / r.withoutKiB)}`,
);
console.log(`cd-ratio: domains=${f(readyS)}s baseline=${f(baselineS)}s ratio=${f(readyS / baselineS)}`);
console.log(
  `cd: racks=${RACKS} domains=${RACKS} ready=${f(readyS)}s pods=${PODS} rss_per_node=${f(perNode, 1)}`,
);
