import { FakegpuError, show } from '../../errors.js';
import { GPUFAULT_CRD, nameOf, type NewGpuFault } from '../../model/fault/resource.js';
import { KubeApi, listEvery } from '../api.js';
import { ApiError, type ApiClient } from '../client.js';
import { apiFailure, KubeFaultApi, type FaultApi } from './api.js';

/**
 * What `fakegpu fault` asks of the API server. Each failure is the command's one line, naming the flag
 * or the request that failed, so the user sees which of several requests it was.
 */

/**
 * `run`'s failure as one line; a 404 on GpuFaults means the CRD is missing, so the line says how to
 * install it.
 */
async function asking<T>(what: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (e) {
    if (e instanceof FakegpuError) throw e;
    if (e instanceof ApiError && e.code === 404 && what.includes('GpuFaults'))
      throw new FakegpuError(
        what,
        `the GpuFault CRD (${GPUFAULT_CRD}) is not installed: kubectl apply -f deploy/crds/gpufault.yaml`,
      );
    throw new FakegpuError(what, apiFailure(e));
  }
}

/** Every GpuFault, unparsed: `checkGpuFault` decides what each is. `what` names the command asking. */
export function listFaults(api: FaultApi, what: string): Promise<unknown[]> {
  return asking(`${what}: listing GpuFaults`, () => listEvery<unknown>((q) => api.listFaults(q)));
}

/**
 * Creates `fault` and answers its name (the API server's, for a `generateName`). A fault for a node the
 * cluster lacks would wait unseen, so `nodeName` is looked up first.
 */
export async function injectFault(
  http: ApiClient,
  fault: NewGpuFault,
  nodeName: string | undefined,
): Promise<string> {
  if (nodeName !== undefined) {
    await asking('--node-name', async () => {
      try {
        await new KubeApi(http).readNode(nodeName);
      } catch (e) {
        if (e instanceof ApiError && e.code === 404)
          throw new FakegpuError('--node-name', `there is no node ${show(nodeName)} in the cluster`);
        throw e;
      }
    });
  }
  const created = await asking('fault inject', () => new KubeFaultApi(http).createFault(fault));
  return created.name;
}

/** The GpuFaults `fault clear` deletes: these names, every one, or those whose nodeName is this node. */
export type FaultsToClear = { names: string[] } | { all: true } | { nodeName: string };

/** Deletes the faults `which` picks and answers their names. */
export async function clearFaults(api: FaultApi, which: FaultsToClear): Promise<string[]> {
  const all = await listFaults(api, 'fault clear');
  const present = new Map(all.map((o) => [nameOf(o), o]));
  let doomed: string[];
  if ('names' in which) {
    // All or nothing: a typo in one name deletes none.
    const missing = which.names.filter((n) => !present.has(n));
    if (missing.length)
      throw new FakegpuError('fault clear', `no GpuFault ${missing.map((n) => show(n)).join(', ')}`);
    doomed = [...new Set(which.names)];
  } else if ('all' in which) doomed = [...present.keys()];
  else
    doomed = [...present]
      .filter(([, o]) => (o as { spec?: { nodeName?: unknown } }).spec?.nodeName === which.nodeName)
      .map(([n]) => n);
  for (const n of doomed)
    await asking(`fault clear ${n}`, async () => {
      try {
        await api.deleteFault(n);
      } catch (e) {
        // Gone meanwhile: what was asked for holds.
        if (!(e instanceof ApiError && e.code === 404)) throw e;
      }
    });
  return doomed;
}
