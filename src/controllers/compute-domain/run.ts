import { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { loadKubeconfigInto } from '../../kube/client.js';
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
}

export interface RunningController extends Running {
  /** The probe server's port (the one the system chose for port 0); null without one. */
  probePort: number | null;
}

/**
 * The controller and its probes. Ready as soon as it runs: each pass is level-triggered and a failed one
 * is retried the next period, so there is no first pass to wait for.
 */
export async function runComputeDomainController(o: ControllerRunOptions): Promise<RunningController> {
  const api = o.api ?? new KubeObjects(loadKubeconfigInto(new KubeConfig(), o.kubeconfig));
  const probes = o.httpEndpoint ? await serveProbes({ endpoint: o.httpEndpoint }) : null;
  const controller = new ComputeDomainController({
    api,
    namespace: o.namespace,
    image: o.image,
    imagePullPolicy: o.imagePullPolicy,
    log: o.log,
    periodMs: o.periodMs,
  });
  controller.start();
  o.log.info({ namespace: o.namespace, image: o.image }, 'reconciling ComputeDomains');
  probes?.started();
  return {
    probePort: probes?.port ?? null,
    async stop() {
      await controller.stop();
      await probes?.close();
    },
  };
}
