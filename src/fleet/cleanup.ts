import { FakegpuError } from '../errors.js';
import { apiFailure, askingApi } from '../kube/gpufault/api.js';
import { listEvery, type ClusterApi, type ListQuery, type Page } from '../kube/api.js';
import { ApiError } from '../kube/client.js';
import { fleetDrivers, servesNode, type FleetDrivers, type NodeSelection } from './scope.js';

/**
 * `fleet --delete-slices`, run by the chart after `helm uninstall`: the running fleet leaves its slices in
 * place when it stops, so that a restart causes no churn, and its KWOK nodes have no kubelet to remove
 * them as it does a deregistered plugin's. Only slices of nodes a fleet of the same flags serves, under
 * its drivers, are deleted: a real node's own plugin publishes under the same driver name.
 */

export interface CleanupOptions extends NodeSelection, FleetDrivers {
  api: ClusterApi;
  /** Deletes in flight at once. */
  concurrency: number;
}

export interface CleanupResult {
  nodes: number;
  deleted: number;
}

const FIELD = '--delete-slices';

/** A page with only what is kept of it: thousands of dynamic-MIG slices are never held whole. */
async function mapped<T, U>(page: Promise<Page<T>>, f: (x: T) => U | undefined): Promise<Page<U>> {
  const p = await page;
  return { ...p, items: p.items.map(f).filter((x): x is U => x !== undefined) };
}

export async function deleteFleetSlices(o: CleanupOptions): Promise<CleanupResult> {
  const nodes = new Set(
    await askingApi(FIELD, 'listing nodes', () =>
      listEvery<string>((q: ListQuery) =>
        mapped(o.api.listNodes({ ...q, labelSelector: o.nodeSelector }), (n) =>
          servesNode(n) ? n.metadata?.name : undefined,
        ),
      ),
    ),
  );
  const names: string[] = [];
  for (const driver of fleetDrivers(o))
    names.push(
      ...(await askingApi(FIELD, `listing the ResourceSlices of driver ${driver}`, () =>
        listEvery<string>((q: ListQuery) =>
          mapped(o.api.listSlices({ ...q, fieldSelector: `spec.driver=${driver}` }), (s) =>
            nodes.has(s.spec.nodeName) ? s.metadata.name : undefined,
          ),
        ),
      )),
    );
  let deleted = 0;
  let next = 0;
  let failed = false;
  const worker = async (): Promise<void> => {
    // The first failure stops the others taking more: the command ends on it, the Job retries it all.
    while (!failed && next < names.length) {
      const name = names[next++] ?? '';
      try {
        await o.api.deleteSlice(name);
        deleted++;
      } catch (e) {
        if (e instanceof ApiError && e.code === 404) continue; // already gone (its node's, with it)
        failed = true;
        throw new FakegpuError(FIELD, `deleting ResourceSlice ${name}: ${apiFailure(e)}`);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(o.concurrency, names.length)) }, worker));
  return { nodes: nodes.size, deleted };
}
