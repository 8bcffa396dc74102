import { MAX_NODES_PER_IMEX_DOMAIN, RACK_LABEL } from '../compute-domain/resource.js';
import { FakegpuError } from '../errors.js';
import { needsComputeDomains } from './compute-domain-process.js';
import { KWOK_ANNOTATION } from '../k8s/kwok.js';
import { isProfileFile } from '../profile/load.js';
import type { Toolchain } from './build.js';
import type { Layout } from './config.js';
import { FLEET_HTTP } from './fleet-process.js';
import { kubectl } from './kubectl.js';
import { PROFILE_LABEL } from './plugin-process.js';
import { httpOk, waitFor } from './probe.js';
import type { Started } from './process.js';
import { KWOK_DEFAULT_PROFILE, type State } from './state.js';

const KWOK_PREFIX = 'kwok-gpu-';

/** The simulated nodes, as KWOK's docs describe them, each labelled with its machine when that is a preset. */
export async function createKwokNodes(
  l: Layout,
  t: Toolchain,
  s: State,
  log: (line: string) => void,
  kwok: Started,
): Promise<void> {
  const n = s.kwokNodes ?? 0;
  const profile = s.kwokProfile ?? KWOK_DEFAULT_PROFILE;
  const fleet = s.kwokFleet !== false;
  log(`creating ${n} KWOK node(s) of ${profile}`);
  const labelled = !isProfileFile(profile);
  // NVL72: 18 trays of 4 GPUs share one NVLink domain (a 72x1 rack, or a 36x2 rack pair).
  const perRack = s.computeDomains && needsComputeDomains([profile]) ? MAX_NODES_PER_IMEX_DOMAIN : 0;
  // A cluster directory keeps its etcd across down and up: nodes of an earlier run are ours to reset
  // (--force-conflicts takes back labels changed since) or, beyond this run's count, to remove.
  const old = kubectl(l, t.bin, ['get', 'nodes', '-l', 'type=kwok', '-o', 'name']).out.split('\n');
  const extra = old.filter((x) => {
    const i = Number(x.slice(`node/${KWOK_PREFIX}`.length));
    return x.startsWith(`node/${KWOK_PREFIX}`) && (!Number.isInteger(i) || i >= n);
  });
  if (extra.length > 0) kubectl(l, t.bin, ['delete', '--wait=false', ...extra]);
  for (let from = 0; from < n; from += 500) {
    const items = Array.from({ length: Math.min(500, n - from) }, (_, k) =>
      kwokNode(from + k, labelled ? profile : null, perRack),
    );
    const r = kubectl(
      l,
      t.bin,
      ['apply', '--server-side', '--force-conflicts', '-f', '-'],
      JSON.stringify({ apiVersion: 'v1', kind: 'List', items }),
    );
    if (r.code !== 0) throw new FakegpuError('cluster up', `creating KWOK nodes failed: ${r.err.trim()}`);
  }
  await waitFor(
    fleet ? `${n} KWOK node(s) Ready and their slices published` : `${n} KWOK node(s) Ready`,
    kwok,
    async () => {
      // The API server's table (STATUS `Ready`, or `Ready,SchedulingDisabled`), not every node's JSON
      // decoded by kubectl: 3.3 s instead of 7.9 s a look at 10,000 nodes, and it grows with N.
      const ready = kubectl(l, t.bin, ['get', 'nodes', '-l', 'type=kwok', '--no-headers']);
      const count = readyRows(ready.out);
      return count === n && (!fleet || (await httpOk(`http://${FLEET_HTTP}/readyz`)));
    },
    Math.max(120_000, n * 200),
  );
}

/** How many rows of `kubectl get nodes --no-headers` are Ready nodes. */
export function readyRows(table: string): number {
  return table.split('\n').filter((row) => /^Ready(,|$)/.test(row.trim().split(/\s+/)[1] ?? '')).length;
}

/** Node `i`; with `perRack`, labelled with its NVLink domain (`nvl72-<i / perRack>`). */
export function kwokNode(i: number, profile: string | null, perRack = 0): unknown {
  const name = `${KWOK_PREFIX}${i}`;
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name,
      annotations: { [KWOK_ANNOTATION]: 'fake', 'node.alpha.kubernetes.io/ttl': '0' },
      labels: {
        type: 'kwok',
        'kubernetes.io/hostname': name,
        'kubernetes.io/os': 'linux',
        'kubernetes.io/arch': 'amd64',
        ...(profile ? { [PROFILE_LABEL]: profile } : {}),
        ...(perRack > 0 ? { [RACK_LABEL]: `nvl72-${Math.floor(i / perRack)}` } : {}),
      },
    },
    spec: { taints: [{ key: KWOK_ANNOTATION, value: 'fake', effect: 'NoSchedule' }] },
    status: {
      allocatable: { cpu: '128', memory: '2Ti', pods: '110' },
      capacity: { cpu: '128', memory: '2Ti', pods: '110' },
    },
  };
}
