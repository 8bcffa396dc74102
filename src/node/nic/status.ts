import type { Logger } from 'pino';
import type { NicHardware } from '../../model/hardware/machine.js';
import { nicDeviceName } from '../../model/nic/attributes.js';
import { nicClaimStatus, nicLink, type NicLink } from '../../model/nic/status.js';
import type { ClaimStatusApi } from '../../kube/claim-status.js';
import type { ResourceClaim } from '../../kube/types/claim.js';

/**
 * The plugin's side of a NIC claim's status: once a claim is prepared, its `status.devices` are applied
 * as DRANET does once the pod's sandbox is up (the kubelet starts it right after prepare). Off the
 * prepare's path: the write is started and not awaited, bounded by the client's 3 s deadline, and a
 * failure is logged only, as DRANET's goroutine does; the prepare's answer never waits for it.
 */

export interface NicStatusOptions {
  driverName: string;
  nodeName: string;
  /** The machine's node name, which derived MACs came from. */
  machineNode: string;
  api: ClaimStatusApi;
  log: Logger;
  now?: () => Date;
}

/** Answers the write's promise, for tests; callers drop it. */
export type NicStatusWriter = (claim: ResourceClaim) => Promise<void>;

export function nicStatusWriter(nics: readonly NicHardware[], o: NicStatusOptions): NicStatusWriter {
  const links = new Map<string, NicLink>();
  for (const n of nics) if (!n.primary) links.set(nicDeviceName(n), nicLink(n, o.machineNode, o.nodeName));
  return async (claim) => {
    const ref = `${claim.metadata.namespace}/${claim.metadata.name}`;
    const { apply, errors } = nicClaimStatus(claim, {
      driver: o.driverName,
      pool: o.nodeName,
      link: (d) => links.get(d),
      now: (o.now ?? (() => new Date()))(),
    });
    if (errors.length > 0)
      o.log.warn({ claim: ref, errors }, 'claim status not written: DRANET refuses its config');
    if (!apply) return;
    try {
      await o.api.applyStatus(claim.metadata.namespace, claim.metadata.name, apply, {
        fieldManager: o.driverName,
        force: true,
      });
    } catch (e) {
      o.log.error(
        { claim: ref, err: e instanceof Error ? e.message : String(e) },
        'Failed to update status for claim',
      );
    }
  };
}
