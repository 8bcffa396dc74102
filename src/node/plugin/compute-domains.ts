import { join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { CheckpointStore } from '../checkpoint/checkpoint.js';
import { ComputeDomainClaims } from '../compute-domain/claims.js';
import { DaemonStandIn } from '../imex-daemon/daemon.js';
import { GPU_CLIQUE_LABEL } from '../../model/compute-domain/resource.js';
import { COMPUTE_DOMAIN_DRIVER } from '../../model/compute-domain/slice.js';
import type { ResourceSlice } from '../../kube/types/resource.js';
import { nodeClique } from '../../model/device/clique.js';
import { KubeObjects } from '../../kube/objects.js';
import type { Nvml } from '../../model/nvml/types.js';
import type { Driver } from './run.js';

export interface ComputeDomainNodeOptions {
  /** The driver's namespace (cliques, daemon pods). */
  namespace: string;
  /** Set `nvidia.com/gpu.clique` on the node, as NVIDIA's gpuCliqueLabelEnabled does; removed at stop. */
  gpuCliqueLabel: boolean;
}

/**
 * NVIDIA's compute-domain kubelet plugin on this node: its slice (`channel-0`, `daemon-0`), its claims
 * (own checkpoint and state under `<plugins dir>/compute-domain.nvidia.com`), the node's clique read
 * from NVML as the real plugin reads it, and the IMEX daemon's entries for daemon pods on this node.
 */
export function computeDomainNode(
  nvml: Nvml,
  o: ComputeDomainNodeOptions & {
    nodeName: string;
    /** The node's slice, as `renderComputeDomainSlices` decides it for the machine. */
    slices: ResourceSlice[];
    kc: KubeConfig;
    cdiRoot: string;
    kubeletPluginsDir: string;
    /** v0.5.0's domainID check (the release table's `domainIDChecks`). */
    checkDomainID: boolean;
    resetCheckpoint: boolean;
    log: Logger;
  },
): { driver: Driver; start(): Promise<void>; stop(): Promise<void> } {
  const clique = nodeClique(nvml);
  const api = new KubeObjects(o.kc);
  const pluginDir = join(o.kubeletPluginsDir, COMPUTE_DOMAIN_DRIVER);
  const checkpoint = new CheckpointStore(join(pluginDir, 'checkpoint.json'), o.resetCheckpoint);
  const state = new ComputeDomainClaims(checkpoint, {
    nodeName: o.nodeName,
    clique,
    namespace: o.namespace,
    api,
    cdiRoot: o.cdiRoot,
    stateDir: pluginDir,
    pluginDir,
    checkDomainID: o.checkDomainID,
  });
  const daemon = new DaemonStandIn({
    api,
    namespace: o.namespace,
    cliqueOf: (node) => (node === o.nodeName ? (clique ?? '') : undefined),
    log: o.log,
  });
  const nodePath = `/api/v1/nodes/${o.nodeName}`;
  const label = async (value: string | null) => {
    try {
      await api.patch(nodePath, { metadata: { labels: { [GPU_CLIQUE_LABEL]: value } } });
    } catch (e) {
      o.log.warn(
        { err: e instanceof Error ? e.message : String(e) },
        `cannot set the node label ${GPU_CLIQUE_LABEL}`,
      );
    }
  };
  o.log.info({ clique }, 'serving ComputeDomains');
  return {
    driver: {
      name: COMPUTE_DOMAIN_DRIVER,
      checkpoint,
      state,
      slices: () => o.slices,
    },
    async start() {
      if (o.gpuCliqueLabel && clique) await label(clique);
      daemon.start();
    },
    async stop() {
      await daemon.stop();
      if (o.gpuCliqueLabel && clique) await label(null);
    },
  };
}
