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
