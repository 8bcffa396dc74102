import { join } from 'node:path';
import type { Toolchain } from './build.js';
import type { Layout } from './config.js';
import { env } from './components.js';
import { installDeviceClasses } from './deviceclasses.js';
import { httpOk, waitFor } from './probe.js';
import { argsOf, forgetPid, isAlive, readPid, startDaemon, type Started } from './process.js';
import { stopAndFree } from './stop.js';
import { REPO_ROOT } from '../process/repo.js';
import { KWOK_DEFAULT_PROFILE, MAX_FLEET_REPLICAS, type State } from './state.js';
import { karpenterFleet } from './karpenter-process.js';

export const FLEET_HTTP = '127.0.0.1:51517';
/** The fleet's GPU metrics, beside the node plugin's port. */
export const FLEET_DCGM = '127.0.0.1:9401';
/**
 * How the fleet's Node runs, here, in the benchmark and in the chart: its garbage (rendered slices,
 * responses, watch events) dies young, and 1 MiB semi-spaces instead of V8's 16 MiB keep its resident
 * memory near its live data; `gc()` lets it collect once after its first publish (see `Fleet`).
 */
export const FLEET_NODE_FLAGS = ['--max-semi-space-size=1', '--expose-gc'];
/**
 * glibc malloc settings for the fleet: each write's TLS and HTTP buffers come from malloc, and with an
 * arena per thread and its own trim threshold glibc keeps their high-water mark resident for good.
 * Two arenas and a fixed 128 KiB threshold give it back (about a third of the fleet's growth at
 * N=1000 in bench/fleet). Other C libraries ignore them.
 */
export const FLEET_MALLOC_ENV = { MALLOC_ARENA_MAX: '2', MALLOC_TRIM_THRESHOLD_: '131072' } as const;

/**
 * Shards of a sharded fleet here, as in the chart: 60 splits evenly between 1 to 6 replicas, and a
 * Lease each is little to list every 2 s.
 */
export const FLEET_SHARDS = 60;

/** Replica r's process name and ports: replica 0 is the fleet of an unsharded cluster. */
export function fleetReplica(r: number): { name: string; http: string; dcgm: string } {
  if (r === 0) return { name: 'fakegpu-fleet', http: FLEET_HTTP, dcgm: FLEET_DCGM };
  return {
    name: `fakegpu-fleet-${String(r)}`,
    http: `127.0.0.1:${String(51527 + r)}`,
    dcgm: `127.0.0.1:${String(9401 + r)}`,
  };
}

/** Whether every replica has published the nodes of its shards, and how many of all it has so far. */
export interface Publishing {
  ready: boolean;
  /** Of all the nodes; null while a replica says neither `ok` nor how far it is. */
  published: number | null;
}

/**
 * One look at each replica's /readyz: `ok` once it has published all of its own nodes, else
 * `publishing 1200/25000 nodes`. Published is `total` less what each replica still has to publish.
 */
export async function fleetsPublishing(s: State, total: number): Promise<Publishing> {
  const said = await Promise.all(
    Array.from(
      { length: s.fleetReplicas ?? 1 },
      async (_, r): Promise<{ ok: boolean; left: number | null }> => {
        try {
          const res = await fetch(`http://${fleetReplica(r).http}/readyz`, {
            signal: AbortSignal.timeout(2000),
          });
          const text = await res.text();
          if (res.ok) return { ok: true, left: 0 };
          const m = /^publishing (\d+)\/(\d+) nodes/.exec(text);
          return { ok: false, left: m ? Math.max(0, Number(m[2]) - Number(m[1])) : null };
        } catch {
          return { ok: false, left: null };
        }
      },
    ),
  );
  const left = said.map((x) => x.left);
  return {
    ready: said.every((x) => x.ok),
    published: left.includes(null)
      ? null
      : Math.max(0, total - left.reduce<number>((a, x) => a + (x ?? 0), 0)),
  };
}

/**
 * The fleet as host processes, like the plugin: it publishes the KWOK nodes' slices; with
 * `--fleet-replicas`, several that split the nodes by shard Leases (`fleet --shards`).
 */
export async function startFleet(
  l: Layout,
  t: Toolchain,
  s: State,
  log: (line: string) => void,
): Promise<Started> {
  installDeviceClasses(l, t);
  const started: Started[] = [];
  for (let r = 0; r < (s.fleetReplicas ?? 1); r++) {
    const rep = fleetReplica(r);
    log(`starting ${rep.name}`);
    started.push(
      startDaemon(l.run, l.logs, rep.name, process.execPath, fleetArgs(l, s, rep), {
        ...env(t),
        ...FLEET_MALLOC_ENV,
      }),
    );
  }
  for (const [r, fleet] of started.entries())
    await waitFor(
      `${fleetReplica(r).name}'s /readyz`,
      fleet,
      () => httpOk(`http://${fleetReplica(r).http}/readyz`),
      120_000,
    );
  return started[0] as Started;
}

/** Stops the replicas beyond the first (the first is the `fakegpu-fleet` component). */
export async function stopFleetReplicas(l: Layout, log: (line: string) => void): Promise<string[]> {
  const left: string[] = [];
  for (let r = 1; r < MAX_FLEET_REPLICAS; r++) {
    const { name } = fleetReplica(r);
    const pid = readPid(l.run, name);
    if (pid === null) continue;
    if (isAlive(pid) && argsOf(pid).some((x) => x.endsWith('/bin/fakegpu.js'))) {
      log(`stopping ${name} (pid ${String(pid)})`);
      left.push(...(await stopAndFree(name, pid)));
    }
    forgetPid(l.run, name);
  }
  return left;
}

/** The fleet's command line here; another replica (the fleet's chaos suite) differs only in its ports. */
export function fleetArgs(l: Layout, s: State, ports: { http: string; dcgm?: string }): string[] {
  return [
    ...FLEET_NODE_FLAGS,
    join(REPO_ROOT, 'bin', 'fakegpu.js'),
    'fleet',
    `--kubeconfig=${l.adminKubeconfig}`,
    ...(s.kwokPools ? [`--pools=${s.kwokPools}`] : [`--profile=${s.kwokProfile ?? KWOK_DEFAULT_PROFILE}`]),
    `--http-endpoint=${ports.http}`,
    ...(ports.dcgm ? [`--dcgm-endpoint=${ports.dcgm}`] : []),
    ...(s.dynamicMig ? ['--dynamic-mig'] : []),
    ...(s.pluginGates ? [`--feature-gates=${s.pluginGates}`] : []),
    ...(s.consumableShares ? [`--consumable-shares=${s.consumableShares}`] : []),
    ...((s.fleetReplicas ?? 1) > 1 ? [`--shards=${String(FLEET_SHARDS)}`] : []),
    ...karpenterArgs(s),
  ];
}

function karpenterArgs(s: State): string[] {
  const k = karpenterFleet(s);
  return [...(k.nics ? ['--nics'] : []), ...(k.nodeSelector ? [`--node-selector=${k.nodeSelector}`] : [])];
}
