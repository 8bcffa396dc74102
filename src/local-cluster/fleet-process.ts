import { join } from 'node:path';
import type { Toolchain } from './build.js';
import type { Layout } from './config.js';
import { env } from './components.js';
import { installDeviceClasses } from './deviceclasses.js';
import { httpOk, waitFor } from './probe.js';
import { startDaemon, type Started } from './process.js';
import { REPO_ROOT } from '../process/repo.js';
import { KWOK_DEFAULT_PROFILE, type State } from './state.js';

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

/** The fleet as a host process, like the plugin: it publishes the KWOK nodes' slices. */
export async function startFleet(
  l: Layout,
  t: Toolchain,
  s: State,
  log: (line: string) => void,
): Promise<Started> {
  log('starting fakegpu-fleet');
  installDeviceClasses(l, t);
  const fleet = startDaemon(
    l.run,
    l.logs,
    'fakegpu-fleet',
    process.execPath,
    fleetArgs(l, s, { http: FLEET_HTTP, dcgm: FLEET_DCGM }),
    { ...env(t), ...FLEET_MALLOC_ENV },
  );
  await waitFor('its /readyz', fleet, () => httpOk(`http://${FLEET_HTTP}/readyz`), 120_000);
  return fleet;
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
  ];
}
