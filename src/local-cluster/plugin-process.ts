import { join } from 'node:path';
import type { Toolchain } from './build.js';
import type { Layout } from './config.js';
import { env } from './components.js';
import { installDeviceClasses } from './deviceclasses.js';
import { httpOk, pluginSlicesPublished, waitFor } from './probe.js';
import { startDaemon } from './process.js';
import { REPO_ROOT } from '../process/repo.js';
import type { State } from './state.js';

export { clusterGates, PLUGIN_FEATURE_GATES } from './state.js';
import { clusterGates } from './state.js';
export const PLUGIN_HTTP = '127.0.0.1:51516';
/** The node plugin's GPU metrics, on dcgm-exporter's port. */
export const PLUGIN_DCGM = '127.0.0.1:9400';
/** As in the Helm chart: a node label that picks the node's machine, read when the plugin starts. */
export const PROFILE_LABEL = 'fakegpu.dev/profile';
/** fakegpu's node plugin as a host process: ready once registered with the kubelet and its slices published. */
export async function startPlugin(
  l: Layout,
  t: Toolchain,
  s: State,
  log: (line: string) => void,
): Promise<void> {
  installDeviceClasses(l, t);
  log(`starting fakegpu-plugin (${s.profile ?? ''}${s.dynamicMig ? ', dynamic MIG' : ''})`);
  const plugin = startDaemon(l.run, l.logs, 'fakegpu-plugin', process.execPath, pluginArgs(l, s), env(t));
  await waitFor(
    'the kubelet to accept its registration',
    plugin,
    () => httpOk(`http://${PLUGIN_HTTP}/readyz`),
    60_000,
  );
  await waitFor('its ResourceSlices published', plugin, pluginSlicesPublished(l, t, s.nodeName), 60_000);
}

/** The plugin's command line for this cluster: the chart gets the same as values (`helmValues`). */
export function pluginArgs(l: Layout, s: State): string[] {
  return [
    join(REPO_ROOT, 'bin', 'fakegpu.js'),
    'plugin',
    `--node-name=${s.nodeName}`,
    `--profile=${s.profile ?? ''}`,
    `--kubelet-plugins-dir=${join(l.kubeletRoot, 'plugins')}`,
    `--kubelet-registrar-dir=${join(l.kubeletRoot, 'plugins_registry')}`,
    `--cdi-root=${l.cdiDir}`,
    `--state-dir=${join(l.dir, 'plugin')}`,
    `--kubeconfig=${l.adminKubeconfig}`,
    `--http-endpoint=${PLUGIN_HTTP}`,
    `--dcgm-endpoint=${PLUGIN_DCGM}`,
    `--feature-gates=${clusterGates(s)}`,
    ...(s.consumableShares ? [`--consumable-shares=${s.consumableShares}`] : []),
    ...(s.healthService ? ['--health-service'] : []),
    `--profile-label=${PROFILE_LABEL}`,
    // No GPU Feature Discovery here: the plugin sets the clique label in its place.
    ...(s.computeDomains ? ['--gpu-clique-label'] : []),
    ...(s.dynamicMig ? ['--dynamic-mig'] : []),
    `--nic-numa-attribute=${s.nicNumaAttribute ?? 'dranet'}`,
    ...(s.nics === false ? ['--no-nics'] : []),
  ];
}
