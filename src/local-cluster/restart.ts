import { FakegpuError } from '../errors.js';
import type { Toolchain } from './build.js';
import { layout, PORTS } from './config.js';
import { startComponent } from './components.js';
import { startComputeDomainController } from './compute-domain-process.js';
import { startFleet } from './fleet-process.js';
import { startPlugin } from './plugin-process.js';
import { apiserverReady, httpOk, waitFor } from './probe.js';
import { etcdClientTls } from './credentials.js';
import { HELM_NAMESPACE } from './helm-chart.js';
import { kwokRuns, readState, type Restartable } from './state.js';
import { stopComponent } from './stop.js';
import { startExtraKwokControllers, stopExtraKwokControllers } from './kwok-controllers.js';
import { refuseUntrustedToolchain } from './trust.js';

export { RESTARTABLE, type Restartable } from './state.js';

/**
 * Stops one component and starts it again with the same configuration, as a crash and a supervisor
 * would: pods, claims and the other components are left alone.
 */
export async function clusterRestart(
  dir: string,
  name: Restartable,
  log: (line: string) => void,
): Promise<void> {
  const l = layout(dir);
  const s = readState(l);
  if (!s) throw new FakegpuError('cluster restart', `no cluster in ${dir}; run "fakegpu cluster up" first`);
  if (name === 'fakegpu-plugin' && s.profile === null) {
    throw new FakegpuError(
      'cluster restart',
      'this cluster runs no node plugin (it was started without --profile)',
    );
  }
  if (s.helm && name.startsWith('fakegpu-'))
    throw new FakegpuError(
      'cluster restart',
      `this cluster runs ${name} as a pod of its Helm chart; delete the pod (kubectl -n ${HELM_NAMESPACE} delete pod <name>) and its controller starts another`,
    );
  const t: Toolchain = { bin: s.bin, cniBin: s.cniBin };
  refuseUntrustedToolchain(t);
  // KWOK's controllers are one component: each partition's goes and comes back with the first.
  const left = [
    ...(name === 'kwok' ? await stopExtraKwokControllers(l, log) : []),
    ...(await stopComponent(l, name, log)),
  ];
  if (left.length > 0) throw new FakegpuError('cluster restart', left.join('; '));
  if (name === 'fakegpu-plugin') {
    await startPlugin(l, t, s, log);
    return;
  }
  if (name === 'fakegpu-compute-domain-controller') {
    if (!s.computeDomains)
      throw new FakegpuError(
        'cluster restart',
        'this cluster runs no ComputeDomain controller (no machine with NVLink fabric)',
      );
    await startComputeDomainController(l, t, s, log);
    return;
  }
  if (name === 'fakegpu-fleet') {
    if (!kwokRuns(s) || s.kwokFleet === false)
      throw new FakegpuError('cluster restart', 'this cluster runs no fleet (no KWOK nodes, or --no-fleet)');
    await startFleet(l, t, s, log);
    return;
  }
  const started = startComponent(l, t, s, name, log);
  // kwok serves no health endpoint here; the nodes it keeps Ready show that it works.
  if (name === 'kwok') {
    startExtraKwokControllers(l, t, s, log);
    return;
  }
  if (name === 'etcd') {
    await waitFor(
      'etcd /health',
      started,
      () => httpOk(`https://127.0.0.1:${PORTS.etcdClient}/health`, etcdClientTls(l)),
      60_000,
    );
    return;
  }
  if (name === 'kube-apiserver') {
    await waitFor('/readyz', started, apiserverReady(l), 120_000);
    return;
  }
  const port =
    name === 'kubelet'
      ? PORTS.kubeletHealthz
      : name === 'kube-scheduler'
        ? PORTS.scheduler
        : PORTS.controllerManager;
  const url = name === 'kubelet' ? `http://127.0.0.1:${port}/healthz` : `https://127.0.0.1:${port}/healthz`;
  await waitFor('/healthz', started, () => httpOk(url, 'insecure'), 60_000);
}
