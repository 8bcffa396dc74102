import type { Logger } from 'pino';
import type { PreparedDevice } from '../checkpoint/checkpoint.js';
import type { ApiClient } from '../../kube/client.js';
import type { ClaimRef, DraHandlers, PrepareResponse, UnprepareResponse } from '../kubelet/grpc.js';
import { checkClaimUid, claimPath, claimString, type ResourceClaim } from '../../kube/types/claim.js';
import { PrepareError } from '../prepare/node.js';
import type { PluginMetrics } from './metrics.js';

/**
 * The DRA gRPC calls of one driver. Prepare reads the claim from the API server; unprepare needs only
 * the checkpoint, so it works while the API server is away. Every UID is checked before it names
 * anything.
 */

export interface ClaimState {
  prepare(claim: ResourceClaim): Promise<PreparedDevice[]>;
  unprepare(uid: string): Promise<void>;
}

export interface HandlerContext {
  driver: string;
  /** Reads claims, each request with its deadline. */
  claims: ApiClient;
  metrics: PluginMetrics;
  log: Logger;
  /** Claims prepared by every driver of the node, for the gauge. */
  preparedCount(): number;
  /** Told of each claim prepared, after the answer is made; must not throw nor hold it up. */
  prepared?: ((claim: ResourceClaim) => void) | undefined;
}

async function readClaim(api: ApiClient, ref: ClaimRef): Promise<ResourceClaim> {
  const c = JSON.parse(await api.send('GET', claimPath(ref.namespace, ref.name))) as ResourceClaim;
  if (c.metadata.uid !== ref.uid) {
    throw new PrepareError(
      `error preparing devices for claim ${claimString(ref)}: claim ${ref.namespace}/${ref.name} got replaced`,
    );
  }
  return c;
}

export function draHandlers(st: ClaimState, x: HandlerContext): DraHandlers {
  const { driver, metrics: m, log } = x;
  // NVIDIA's plugins log each kubelet call from verbosity 6 (`--v`), pino's debug here.
  const timed = async <T>(method: string, refs: ClaimRef[], fn: () => Promise<T>): Promise<T> => {
    // Checked first: the claims' names are built only when they will be written, not on every call.
    if (log.isLevelEnabled('debug'))
      log.debug(
        { driver, method, claims: refs.map((r) => `${r.namespace}/${r.name}:${r.uid}`) },
        'kubelet call',
      );
    const end = m.latency.startTimer({ method });
    try {
      return await fn();
    } finally {
      end();
    }
  };
  return {
    prepare: (refs) =>
      timed('NodePrepareResources', refs, async () => {
        const out: PrepareResponse['claims'] = {};
        await Promise.all(
          refs.map(async (ref) => {
            try {
              const bad = checkClaimUid(ref.uid);
              if (bad)
                throw new PrepareError(
                  `error preparing devices for claim ${ref.namespace}/${ref.name}: ${bad}`,
                );
              const claim = await readClaim(x.claims, ref);
              const devices = await st.prepare(claim);
              x.prepared?.(claim);
              out[ref.uid] = {
                devices: devices.map(({ requestNames, poolName, deviceName, cdiDeviceIds }) => ({
                  requestNames,
                  poolName,
                  deviceName,
                  cdiDeviceIds,
                })),
                error: '',
              };
              m.requests.inc({ method: 'NodePrepareResources', result: 'success' });
              log.info(
                {
                  driver,
                  claim: `${ref.namespace}/${ref.name}`,
                  uid: ref.uid,
                  devices: devices.map((d) => d.deviceName),
                },
                'prepared claim',
              );
            } catch (e) {
              const msg = e instanceof Error ? e.message : String(e);
              const error =
                e instanceof PrepareError
                  ? msg
                  : `error preparing devices for claim ${claimString(ref)}: ${msg}`;
              out[ref.uid] = { devices: [], error };
              m.requests.inc({ method: 'NodePrepareResources', result: 'error' });
              log.warn(
                { driver, claim: `${ref.namespace}/${ref.name}`, uid: ref.uid, error },
                'prepare failed',
              );
            }
          }),
        );
        m.prepared.set(x.preparedCount());
        return { claims: out };
      }),
    unprepare: (refs) =>
      timed('NodeUnprepareResources', refs, async () => {
        const out: UnprepareResponse['claims'] = {};
        for (const ref of refs) {
          try {
            await st.unprepare(ref.uid);
            out[ref.uid] = { error: '' };
            m.requests.inc({ method: 'NodeUnprepareResources', result: 'success' });
            log.info({ driver, claim: `${ref.namespace}/${ref.name}`, uid: ref.uid }, 'unprepared claim');
          } catch (e) {
            const msg = e instanceof Error ? e.message : String(e);
            out[ref.uid] = {
              error: `error unpreparing devices for claim ${claimString(ref)}: ${msg}`,
            };
            m.requests.inc({ method: 'NodeUnprepareResources', result: 'error' });
            log.warn(
              { driver, claim: `${ref.namespace}/${ref.name}`, uid: ref.uid, error: msg },
              'unprepare failed',
            );
          }
        }
        m.prepared.set(x.preparedCount());
        return { claims: out };
      }),
  };
}
