import { ApiError, type ApiClient } from '../../kube/client.js';
import { listEvery, listPage, METADATA_LIST, NODES_PATH, SLICES_PATH } from '../../kube/api.js';
import { CLAIMS_PATH, type ResourceClaim } from '../../kube/types/claim.js';
import { PODS_PATH } from '../../kube/dcgm-sources.js';
import type { ResourceSlice } from '../../kube/types/resource.js';
import type { ClusterView, DeviceTaintRuleView, NodeView, PodView } from '../../model/scorecard/inventory.js';

const TAINT_RULES_PATH = '/apis/resource.k8s.io/v1/devicetaintrules';
const JSON_TYPE = 'application/json';

/**
 * What the scorecard reads, listed page by page: nodes as metadata (labels are all it reads of them),
 * every slice, claim and pod. DeviceTaintRules only where the API server serves them.
 */
export async function listClusterView(http: Pick<ApiClient, 'send'>): Promise<ClusterView> {
  const all = <T>(path: string, accept = JSON_TYPE): Promise<T[]> =>
    listEvery<T>((q) => listPage<T>(http, path, q, accept));
  const [nodes, slices, claims, pods, taintRules] = await Promise.all([
    all<NodeView>(NODES_PATH, METADATA_LIST),
    all<ResourceSlice>(SLICES_PATH),
    all<ResourceClaim>(CLAIMS_PATH),
    all<PodView>(PODS_PATH),
    all<DeviceTaintRuleView>(TAINT_RULES_PATH).catch((e: unknown) => {
      if (e instanceof ApiError && e.code === 404) return [];
      throw e;
    }),
  ]);
  return { nodes, slices, claims, pods, taintRules };
}
