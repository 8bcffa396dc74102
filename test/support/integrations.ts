import { join } from 'node:path';
import { cacheRoot } from '../../src/local-cluster/build.js';
import type { Exports } from '../../src/local-cluster/cluster.js';
import { sharedCluster } from './cluster.js';

/** `npm run e2e:integrations`: the upstream projects that sit on top of fake GPUs, run for real. */
export const INTEGRATIONS_CLUSTER_DIR =
  process.env['FAKEGPU_E2E_INTEGRATIONS_CLUSTER_DIR'] ?? join(cacheRoot(), 'e2e-integrations-cluster');
export const INTEGRATIONS_NODE = 'fakegpu-integrations-node';

/**
 * DGX H100 KWOK nodes for Kueue's jobs, one to spare so the ninth 8-GPU job waits on quota, not on nodes;
 * KWOK's taint keeps other pods (Karpenter's) off them.
 */
export const INTEGRATIONS_KWOK_NODES = 9;

/** No GPUs on the real node: every GPU comes from a KWOK node the fleet serves, with dynamic MIG. */
export function integrationsCluster(): Promise<Exports> {
  return sharedCluster({
    dir: INTEGRATIONS_CLUSTER_DIR,
    nodeName: INTEGRATIONS_NODE,
    kwokNodes: INTEGRATIONS_KWOK_NODES,
    // Every MIG partition on the fleet's nodes, and in Karpenter's templates (`scripts/e2e-integrations.mjs`).
    dynamicMig: true,
    with: ['karpenter', 'kueue'],
  });
}

/**
 * A one-pod Job in Kueue's LocalQueue `queue`, its GPUs a claim from `template`: KWOK completes the pod
 * after `runFor` (at once without it). `pod` adds to the pod: labels, and spec fields such as where it may run.
 */
export function queuedJob(o: {
  name: string;
  queue: string;
  template: string;
  runFor: string;
  pod?: { labels?: Record<string, string>; spec?: Record<string, unknown> };
}): unknown {
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name: o.name, namespace: 'default', labels: { 'kueue.x-k8s.io/queue-name': o.queue } },
    spec: {
      parallelism: 1,
      completions: 1,
      backoffLimit: 0,
      template: {
        metadata: {
          ...(o.pod?.labels ? { labels: o.pod.labels } : {}),
          annotations: { 'pod-complete.stage.kwok.x-k8s.io/delay': o.runFor },
        },
        spec: {
          restartPolicy: 'Never',
          ...o.pod?.spec,
          resourceClaims: [{ name: 'gpus', resourceClaimTemplateName: o.template }],
          containers: [
            { name: 'train', image: 'registry.invalid/train:1', resources: { claims: [{ name: 'gpus' }] } },
          ],
        },
      },
    },
  };
}
