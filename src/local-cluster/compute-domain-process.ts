import { join } from 'node:path';
import { DEFAULT_DRIVER_NAMESPACE } from '../model/compute-domain/resource.js';
import { resolveProfile } from '../process/profile-file.js';
import { hasNvlinkFabric } from '../model/render.js';
import type { Toolchain } from './build.js';
import type { Layout } from './config.js';
import { env } from './components.js';
import { DAEMON_IMAGE } from './image.js';
import { applyObjects } from './kubectl.js';
import { httpOk, waitFor } from './probe.js';
import { startDaemon, type Started } from './process.js';
import { REPO_ROOT } from '../process/repo.js';
import type { State } from './state.js';

export const CD_CONTROLLER_HTTP = '127.0.0.1:51518';

/** Whether the cluster's machines (the local node's, the KWOK nodes') include one with NVLink fabric. */
export function needsComputeDomains(profiles: readonly (string | null | undefined)[]): boolean {
  return profiles.some((p) => typeof p === 'string' && hasNvlinkFabric(resolveProfile(p)));
}

/**
 * NVIDIA's ComputeDomain controller, emulated, as a host process beside the plugin; the driver's
 * namespace it and the IMEX daemons use is created first.
 */
export async function startComputeDomainController(
  l: Layout,
  t: Toolchain,
  _s: State,
  log: (line: string) => void,
): Promise<Started> {
  applyObjects(
    l,
    t.bin,
    [{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: DEFAULT_DRIVER_NAMESPACE } }],
    `creating namespace ${DEFAULT_DRIVER_NAMESPACE}`,
  );
  log('starting fakegpu-compute-domain-controller');
  const p = startDaemon(
    l.run,
    l.logs,
    'fakegpu-compute-domain-controller',
    process.execPath,
    [
      join(REPO_ROOT, 'bin', 'fakegpu.js'),
      'compute-domain-controller',
      `--kubeconfig=${l.adminKubeconfig}`,
      `--driver-namespace=${DEFAULT_DRIVER_NAMESPACE}`,
      `--daemon-image=${DAEMON_IMAGE}`,
      `--http-endpoint=${CD_CONTROLLER_HTTP}`,
    ],
    env(t),
  );
  await waitFor('its /healthz', p, () => httpOk(`http://${CD_CONTROLLER_HTTP}/healthz`), 60_000);
  return p;
}
