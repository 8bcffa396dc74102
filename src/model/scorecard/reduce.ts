import type { ListedClaim, ResourceClaim } from '../../kube/types/claim.js';
import { GPU_CLIQUE_LABEL, RACK_LABEL } from '../compute-domain/resource.js';
import { POOL_LABELS } from './figures.js';
import { evicted, type NodeView, type PodView } from './inventory.js';

/**
 * Listed objects reduced, each as it arrives, to what the scorecard reads of it: what `fakegpu report`
 * and the fleet's informers keep, so that neither holds a full pod, claim or node.
 */

/** An allocated claim as the scorecard reads it: its results and a ComputeDomain channel's domain. */
export function scorecardClaim(obj: unknown): ResourceClaim | null {
  const c = obj as ListedClaim;
  const results = c.status?.allocation?.devices?.results ?? [];
  if (results.length === 0) return null;
  const config = (c.status?.allocation?.devices?.config ?? []).flatMap((x) => {
    const p = x.opaque?.parameters as { domainID?: unknown } | undefined;
    return typeof p?.domainID === 'string'
      ? [
          {
            source: 'FromClaim' as const,
            opaque: { driver: x.opaque?.driver ?? '', parameters: { domainID: p.domainID } },
          },
        ]
      : [];
  });
  return {
    metadata: {
      name: c.metadata?.name ?? '',
      namespace: c.metadata?.namespace ?? '',
      uid: c.metadata?.uid ?? '',
    },
    status: {
      allocation: {
        devices: {
          results: results.map((r) => ({
            request: r.request ?? '',
            driver: r.driver ?? '',
            pool: r.pool ?? '',
            device: r.device ?? '',
          })),
          config,
        },
      },
    },
  };
}

/** An evicted pod as the scorecard counts it; any other pod is not kept. */
export function scorecardPod(obj: unknown): PodView | null {
  const p = obj as PodView;
  if (!evicted(p)) return null;
  return {
    metadata: { name: p.metadata.name, namespace: p.metadata.namespace, uid: p.metadata.uid },
    spec: { nodeName: p.spec?.nodeName ?? '' },
    status: { reason: 'Evicted' },
  };
}

/** A node's name and the labels the scorecard reads: a pool's (`poolLabel`, else any of POOL_LABELS), rack, clique. */
export function scorecardNode(obj: unknown, poolLabel?: string): NodeView {
  const m = (obj as { metadata?: { name?: string; labels?: Record<string, string> } }).metadata;
  const labels: Record<string, string> = {};
  for (const k of [...(poolLabel === undefined ? POOL_LABELS : [poolLabel]), RACK_LABEL, GPU_CLIQUE_LABEL]) {
    const v = m?.labels?.[k];
    if (v !== undefined) labels[k] = v;
  }
  return { metadata: { name: m?.name ?? '', labels } };
}
