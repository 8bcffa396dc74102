import { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { loadKubeconfigInto } from '../../kube/client.js';
import { fencedObjects } from '../../kube/fence.js';
import { Elected, type ElectionOptions } from '../../kube/lease.js';
import { KubeObjects, type ObjectApi } from '../../kube/objects.js';
import { serveProbes } from '../../process/probe-server.js';
import type { Running } from '../../process/shutdown.js';
import { ComputeDomainController } from './controller.js';
import type { DaemonSetOptions } from './objects.js';

/** What `fakegpu compute-domain-controller` runs, its flags checked. */
export interface ControllerRunOptions extends DaemonSetOptions {
  kubeconfig?: string | undefined;
  /** The API server; default: the kubeconfig's. Tests give an in-memory one. */
  api?: ObjectApi | undefined;
  /** `/healthz` and `/readyz`; '' for none. */
  httpEndpoint: string;
  log: Logger;
  periodMs?: number | undefined;
  /** Reconcile only while holding this Lease (kept through `api`); absent: always. */
  leaderElection?: Omit<ElectionOptions, 'api'> | undefined;
}

export interface RunningController extends Running {
  /** The probe server's port (the one the system chose for port 0); null without one. */
  probePort: number | null;
  /** Whether it holds the lease and reconciles now (always, without election). */
  leading(): boolean;
}

/**
 * The controller and its probes, live and ready at once: each pass is level-triggered and a failed one
 * is retried the next period, so there is no first pass to wait for, and a standby is ready as a
 * standby (a rollout's new pod waits on it before the old one hands the lease over). Each term of
 * leadership runs a controller of its own.
 */
export async function runComputeDomainController(o: ControllerRunOptions): Promise<RunningController> {
  const api = o.api ?? new KubeObjects(loadKubeconfigInto(new KubeConfig(), o.kubeconfig));
  const probes = o.httpEndpoint ? await serveProbes({ endpoint: o.httpEndpoint }) : null;
  probes?.started();
  const elected: Elected = new Elected({
    election: o.leaderElection ? { ...o.leaderElection, api } : undefined,
    log: o.log,
    lead: () => {
      const controller = new ComputeDomainController({
        // Nothing of a term is written after it: a slow API server can outlast the renew deadline.
        api: fencedObjects(api, () => elected.leadingUntil()),
        namespace: o.namespace,
        image: o.image,
        imagePullPolicy: o.imagePullPolicy,
        log: o.log,
        periodMs: o.periodMs,
      });
      controller.start();
      o.log.info({ namespace: o.namespace, image: o.image }, 'reconciling ComputeDomains');
      return controller;
    },
  });
  elected.start();
  return {
    probePort: probes?.port ?? null,
    leading: () => elected.leading,
    async stop() {
      await elected.stop();
      await probes?.close();
    },
  };
}
