import type { Logger } from 'pino';
import { Registry } from 'prom-client';
import { KubeApi, type ClusterApi } from '../kube/api.js';
import { clientOf, loadKubeconfigInto, PooledKubeConfig } from '../kube/client.js';
import { KubeFaultApi } from '../kube/gpufault/api.js';
import type { Style } from '../model/dcgm/exposition.js';
import { serveDcgm, type DcgmServer } from '../process/dcgm-server.js';
import { serveProbes, type ProbeServer } from '../process/probe-server.js';
import type { Running } from '../process/shutdown.js';
import { FleetDcgm } from './dcgm.js';
import { Fleet, type FleetOptions } from './fleet.js';
import { faultMetrics, fleetGauges } from './metrics.js';

/** What `fakegpu fleet` serves and how, its flags checked. */
export interface FleetRunOptions extends Pick<
  FleetOptions,
  | 'nodeSelector'
  | 'profileLabel'
  | 'defaultProfile'
  | 'pools'
  | 'dynamicMig'
  | 'driverName'
  | 'release'
  | 'nics'
  | 'concurrency'
  | 'qps'
  | 'burst'
  | 'ignoredXids'
> {
  kubeconfig?: string | undefined;
  /** Deadline of each API request, watches excepted. */
  requestTimeoutMs: number;
  /** Apply GpuFaults to the served nodes' slices. */
  faults: boolean;
  /** NVIDIA's compute-domain node side, its daemons in this namespace; absent: off. */
  computeDomains?: { namespace: string } | undefined;
  /** `/healthz`, `/readyz` (every node published) and `/metrics`; '' for none. */
  httpEndpoint: string;
  /** dcgm-exporter's endpoint for every served node; absent: no GPU metrics. */
  dcgmEndpoint?: string | undefined;
  dcgmStyle?: Style | undefined;
  log: Logger;
  /** The API server; default: the kubeconfig's. Tests give an in-memory one. */
  api?: ClusterApi | undefined;
}

export interface RunningFleet extends Running {
  /** The probe server's port (the one the system chose for port 0); null without one. */
  probePort: number | null;
}

/** One keep-alive connection per worker, instead of a TLS handshake per write. */
export function fleetKubeConfig(
  kubeconfig: string | undefined,
  concurrency: number,
  timeoutMs: number,
): PooledKubeConfig {
  return loadKubeconfigInto(new PooledKubeConfig(concurrency, { timeoutMs }), kubeconfig);
}

/**
 * The fleet, its faults and compute-domain side (inside `Fleet`), its GPU metrics and its probes. The
 * probe server listens first, so that a kubelet probing during the first lists hears `starting` rather
 * than nothing.
 */
export async function runFleet(o: FleetRunOptions): Promise<RunningFleet> {
  const kc = fleetKubeConfig(o.kubeconfig, o.concurrency, o.requestTimeoutMs);
  const reg = new Registry();
  const fleet = new Fleet(kc, {
    nodeSelector: o.nodeSelector,
    profileLabel: o.profileLabel,
    defaultProfile: o.defaultProfile,
    pools: o.pools,
    dynamicMig: o.dynamicMig,
    driverName: o.driverName,
    release: o.release,
    nics: o.nics,
    concurrency: o.concurrency,
    qps: o.qps,
    burst: o.burst,
    log: o.log,
    api: o.api,
    faults: o.faults ? new KubeFaultApi(kc) : undefined,
    ignoredXids: o.ignoredXids,
    computeDomains: o.computeDomains,
    ...faultMetrics(reg),
  });
  fleetGauges(reg, fleet);
  const probes = o.httpEndpoint
    ? await serveProbes({
        endpoint: o.httpEndpoint,
        ready: () => fleet.converged(),
        notReady: 'publishing',
        metrics: reg,
        log: o.log,
      })
    : null;
  try {
    return await startFleet(o, { kc, fleet, probes });
  } catch (e) {
    await fleet.stop();
    await probes?.close();
    throw e;
  }
}

async function startFleet(
  o: FleetRunOptions,
  c: { kc: PooledKubeConfig; fleet: Fleet; probes: ProbeServer | null },
): Promise<RunningFleet> {
  const { fleet, probes } = c;
  await fleet.start();
  o.log.info({ nodes: fleet.snapshot().nodes }, 'fleet started');
  const dcgm = o.dcgmEndpoint
    ? new FleetDcgm(fleet, {
        http: clientOf(c.kc),
        api: o.api ?? new KubeApi(c.kc),
        log: o.log,
        driverName: o.driverName,
        style: o.dcgmStyle,
      })
    : null;
  dcgm?.start();
  let dcgmServer: DcgmServer | null = null;
  try {
    if (dcgm && o.dcgmEndpoint) dcgmServer = await serveDcgm(o.dcgmEndpoint, () => dcgm.exposition(), o.log);
  } catch (e) {
    dcgm?.stop();
    throw e;
  }
  probes?.started();
  return {
    probePort: probes?.port ?? null,
    async stop() {
      await fleet.stop();
      dcgm?.stop();
      await dcgmServer?.close();
      await probes?.close();
    },
  };
}
