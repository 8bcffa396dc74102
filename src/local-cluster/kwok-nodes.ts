import { MAX_NODES_PER_IMEX_DOMAIN, RACK_LABEL } from '../model/compute-domain/resource.js';
import { FakegpuError } from '../errors.js';
import { loadPools, type Pools } from '../fleet/pools.js';
import { needsComputeDomains } from './compute-domain-process.js';
import { KWOK_ANNOTATION } from '../kube/kwok.js';
import { isProfileFile } from '../model/profile/load.js';
import type { Toolchain } from './build.js';
import type { Layout } from './config.js';
import { fleetsPublishing, type Publishing } from './fleet-process.js';
import { kubectl, kubectlAsync } from './kubectl.js';
import { PROFILE_LABEL } from './plugin-process.js';
import { waitFor } from './probe.js';
import { readPid, type Started } from './process.js';
import type { ApiClient } from '../kube/client.js';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { KWOK_DEFAULT_PROFILE, type State } from './state.js';
import { kwokControllersOf, partitioned } from './kwok-partition.js';
import { Progress } from '../process/progress.js';

/** The names `cluster up --kwok-nodes` gives its nodes: `kwok-gpu-<i>`. */
export const KWOK_NODE_PREFIX = 'kwok-gpu-';

/** The simulated nodes, as KWOK's docs describe them, each labelled with its machine when that is a preset. */
export async function createKwokNodes(
  l: Layout,
  t: Toolchain,
  s: State,
  log: (line: string) => void,
  kwok: Started,
  /** Whether the fleet has published every node it serves, and how many so far; by default its /readyz. */
  fleetPublishing: (total: number) => Promise<Publishing> = (total) => fleetsPublishing(s, total),
): Promise<void> {
  const n = s.kwokNodes ?? 0;
  const fleet = s.kwokFleet !== false;
  let nodes: KwokNodeSpec[];
  if (s.kwokPools) {
    log(`creating ${n} KWOK node(s) of the pools in ${s.kwokPools}`);
    nodes = poolNodes(loadPools(s.kwokPools, '--kwok-pools'));
  } else {
    const profile = s.kwokProfile ?? KWOK_DEFAULT_PROFILE;
    log(`creating ${n} KWOK node(s) of ${profile}`);
    // With --helm the chart's fleet.profile is their machine, so that helm upgrade can change it.
    const labelled = !isProfileFile(profile) && s.helm !== true;
    // NVL72: 18 trays of 4 GPUs share one NVLink domain (a 72x1 rack, or a 36x2 rack pair).
    const perRack = s.computeDomains && needsComputeDomains([profile]) ? MAX_NODES_PER_IMEX_DOMAIN : 0;
    nodes = Array.from({ length: n }, (_, i) => ({
      name: `${KWOK_NODE_PREFIX}${i}`,
      labels: {
        ...(labelled ? { [PROFILE_LABEL]: profile } : {}),
        ...(perRack > 0 ? { [RACK_LABEL]: `nvl72-${Math.floor(i / perRack)}` } : {}),
      },
      taints: [],
    }));
  }
  // Each node's KWOK controller, by creation order, the pools' nodes as much as --kwok-nodes'.
  nodes = partitioned(nodes, kwokControllersOf(s));
  // Nodes of an earlier run that this one has are reset (--force-conflicts takes back labels changed since).
  removeKwokNodesBut(l, t, new Set(nodes.map((x) => x.name)));
  const t0 = performance.now();
  const applied = new Progress({ what: 'KWOK nodes applied', total: nodes.length, log });
  await applyNodes(l, t, nodes, (k) => {
    applied.update(k);
  });
  const s0 = (performance.now() - t0) / 1000;
  if (n > 0) log(`applied ${n} KWOK node(s) in ${s0.toFixed(1)} s (${(n / s0).toFixed(0)}/s)`);
  const ready = new Progress({ what: 'KWOK nodes Ready', total: n, log });
  let published = null as Progress | null;
  let allReady = false;
  await waitFor(
    fleet ? `${n} KWOK node(s) Ready and their slices published` : `${n} KWOK node(s) Ready`,
    kwok,
    async () => {
      if (!allReady) {
        // The API server's table (STATUS `Ready`, or `Ready,SchedulingDisabled`), not every node's JSON
        // decoded by kubectl: 3.3 s instead of 7.9 s a look at 10,000 nodes, and it grows with N.
        const table = kubectl(l, t.bin, ['get', 'nodes', '-l', 'type=kwok', '--no-headers']).out;
        const count = readyRows(table);
        ready.update(count);
        if (count < n) return false;
        allReady = true;
        ready.finish();
        // Timed from here: its rate and time left are of publishing, not of the nodes' Ready.
        published = new Progress({ what: "KWOK nodes' slices published", total: n, log });
      }
      if (!fleet) return true;
      const p = await fleetPublishing(n);
      if (p.ready) return true;
      if (p.published !== null) published?.update(p.published);
      return false;
    },
    Math.max(120_000, n * 200),
  );
  if (fleet && n > 0 && published) {
    published.update(n);
    published.finish();
  }
  if (n > 0) await waitUntilSchedulable(l, n, log);
}

/**
 * A cluster directory keeps its etcd across down and up, so KWOK nodes an earlier run made outlive it:
 * those this run does not have are removed, also when it has none (left, their slices would draw pods).
 */
export function removeKwokNodesBut(l: Layout, t: Toolchain, keep: ReadonlySet<string>): void {
  const old = kubectl(l, t.bin, ['get', 'nodes', '-l', 'type=kwok', '-o', 'name']).out.split('\n');
  const extra = old.filter((x) => x.startsWith('node/') && !keep.has(x.slice('node/'.length)));
  if (extra.length > 0) kubectl(l, t.bin, ['delete', '--wait=false', ...extra]);
}

/** The taint the API server puts on every new node, until the node lifecycle controller sees it Ready. */
export const NOT_READY_TAINT = 'node.kubernetes.io/not-ready';

/**
 * Ready is not schedulable: the API server taints each new node `node.kubernetes.io/not-ready` (the
 * TaintNodesByCondition admission plugin) and the controller manager lifts it, one PATCH a node, eight
 * at a time. At 50,000 nodes it lagged the nodes' creation by tens of thousands, and its PATCHes (23–59
 * a second) ran on through whatever came next: a bench's phases, a scheduler's pods.
 */
async function waitUntilSchedulable(l: Layout, n: number, log: (line: string) => void): Promise<void> {
  const manager: Started = {
    name: 'kube-controller-manager',
    pid: readPid(l.run, 'kube-controller-manager') ?? 0,
    log: join(l.logs, 'kube-controller-manager.log'),
  };
  // Loaded here, not with the module: every other command of cluster up goes through kubectl.
  const [{ KubeConfig }, { clientOf, loadKubeconfigInto }, api] = await Promise.all([
    import('@kubernetes/client-node'),
    import('../kube/client.js'),
    import('../kube/api.js'),
  ]);
  const http = clientOf(loadKubeconfigInto(new KubeConfig(), l.adminKubeconfig));
  const look = (): Promise<number> => countTainted(api, http, NOT_READY_TAINT);
  const t0 = performance.now();
  let last: Look | undefined;
  log(`waiting for the controller manager to lift ${NOT_READY_TAINT} from ${n} KWOK node(s)`);
  const lifted = new Progress({ what: `${NOT_READY_TAINT} lifted`, total: n, log });
  await waitFor(
    `${NOT_READY_TAINT} lifted from ${n} KWOK node(s)`,
    manager,
    async () => {
      const now = { at: performance.now(), tainted: await look() };
      lifted.update(n - now.tainted);
      if (now.tainted === 0) return true;
      await sleep(nextLookMs(last, now));
      last = now;
      return false;
    },
    Math.max(120_000, n * 30),
  );
  log(`${n} KWOK node(s) schedulable after ${((performance.now() - t0) / 1000).toFixed(1)} s more`);
}

interface Look {
  at: number;
  tainted: number;
}

/**
 * When to look again. A look reads every node (4 kB each, 200 MB at 50,000): looking every few seconds
 * took a share of the API server the controller manager's PATCHes were waiting for. So the next look
 * comes about halfway to when the rate seen says the last taint goes, between 5 s and a minute.
 */
export function nextLookMs(before: Look | undefined, now: Look): number {
  if (before === undefined) return 5000;
  const perMs = (before.tainted - now.tainted) / (now.at - before.at);
  if (!(perMs > 0)) return 30_000;
  return Math.min(60_000, Math.max(5000, now.tainted / perMs / 2));
}

/** KWOK nodes with the taint, read a page at a time so that 50,000 nodes are never held at once. */
export async function countTainted(
  api: Pick<typeof import('../kube/api.js'), 'listPage' | 'NODES_PATH'>,
  http: Pick<ApiClient, 'send'>,
  key: string,
): Promise<number> {
  let tainted = 0;
  let next: string | undefined;
  do {
    const page = await api.listPage<{ spec?: { taints?: { key: string }[] } }>(
      http,
      api.NODES_PATH,
      { labelSelector: 'type=kwok', limit: 500, continue: next },
      'application/json',
    );
    tainted += page.items.filter((x) => x.spec?.taints?.some((t) => t.key === key) === true).length;
    next = page.continue;
  } while (next !== undefined);
  return tainted;
}

/** Batches of nodes per kubectl, and kubectls at once: one kubectl applies its objects one request after another. */
const BATCH = 250;
const APPLIERS = 8;

/** Applies the nodes in batches, `APPLIERS` kubectls at once: 50,000 nodes one batch at a time took most of an hour. */
async function applyNodes(
  l: Layout,
  t: Toolchain,
  nodes: readonly KwokNodeSpec[],
  progress: (applied: number) => void,
): Promise<void> {
  let next = 0;
  let applied = 0;
  const failed: string[] = [];
  const worker = async (): Promise<void> => {
    while (failed.length === 0 && next < nodes.length) {
      const items = nodes.slice(next, next + BATCH).map(kwokNode);
      next += BATCH;
      const r = await kubectlAsync(
        l,
        t.bin,
        ['apply', '--server-side', '--force-conflicts', '-f', '-'],
        JSON.stringify({ apiVersion: 'v1', kind: 'List', items }),
      );
      if (r.code !== 0) failed.push(r.err.trim());
      else progress((applied += items.length));
    }
  };
  await Promise.all(Array.from({ length: APPLIERS }, worker));
  if (failed[0] !== undefined)
    throw new FakegpuError('cluster up', `creating KWOK nodes failed: ${failed[0]}`);
}

/** How many rows of `kubectl get nodes --no-headers` are Ready nodes. */
export function readyRows(table: string): number {
  return table.split('\n').filter((row) => /^Ready(,|$)/.test(row.trim().split(/\s+/)[1] ?? '')).length;
}

export interface KwokNodeSpec {
  name: string;
  labels: Record<string, string>;
  taints: { key: string; value?: string; effect: string }[];
}

/** The nodes a FleetPools file lists, each with its pool's label, labels and taints. */
export function poolNodes(pools: Pools): KwokNodeSpec[] {
  const out: KwokNodeSpec[] = [];
  for (const [pool, m] of pools.byName) {
    const spec = m.nodes;
    if (!spec) continue;
    const names = spec.names ?? Array.from({ length: spec.count ?? 0 }, (_, i) => `${pool}-${i}`);
    for (const name of names)
      out.push({ name, labels: { ...spec.labels, [pools.label]: pool }, taints: spec.taints ?? [] });
  }
  return out;
}

/** A KWOK node as KWOK's docs describe it, with the labels and taints of its machine or pool. */
export function kwokNode(n: KwokNodeSpec): unknown {
  const kwokTaint = { key: KWOK_ANNOTATION, value: 'fake', effect: 'NoSchedule' };
  // A captured KWOK node brings KWOK's own taint with it: it is not given twice.
  const taints = [
    kwokTaint,
    ...n.taints.filter((t) => !(t.key === kwokTaint.key && t.effect === kwokTaint.effect)),
  ];
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name: n.name,
      annotations: { [KWOK_ANNOTATION]: 'fake', 'node.alpha.kubernetes.io/ttl': '0' },
      labels: {
        ...n.labels,
        type: 'kwok',
        'kubernetes.io/hostname': n.name,
        'kubernetes.io/os': 'linux',
        'kubernetes.io/arch': 'amd64',
      },
    },
    spec: { taints },
    status: {
      allocatable: { cpu: '128', memory: '2Ti', pods: '110' },
      capacity: { cpu: '128', memory: '2Ti', pods: '110' },
    },
  };
}
