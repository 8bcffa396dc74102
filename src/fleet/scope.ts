import { COMPUTE_DOMAIN_DRIVER } from '../model/compute-domain/slice.js';
import type { Meta } from '../kube/api.js';
import { KWOK_ANNOTATION } from '../kube/kwok.js';

/**
 * What a fleet owns: the nodes it serves and the drivers it writes their slices under. The running fleet
 * and `fleet --delete-slices` both ask here, so the cleanup removes exactly what a fleet of the same
 * flags publishes and nothing of another publisher's.
 *
 * Only KWOK-managed nodes (the `kwok.x-k8s.io/node` annotation) are ever the fleet's, whatever
 * `--node-selector` says: a KWOK node has no kubelet, so no plugin can register there, and a node
 * that is not KWOK's may run one (the profile label is that plugin's per-node override). Two writers
 * of one node's slices would rewrite each other's forever; the plugin's registration is not visible
 * in the API without a permission the fleet does not have, KWOK's annotation is.
 */

export interface NodeSelection {
  /** A label selector the API server applies, among KWOK's nodes; none: every KWOK node. */
  nodeSelector?: string | undefined;
}

export interface FleetDrivers {
  driverName: string;
  nics?: { driverName: string } | undefined;
  computeDomains: boolean;
}

/** Whether the fleet serves a node its node list (labelled by `nodeSelector`, if any) returned. */
export function servesNode(n: Meta): boolean {
  return n.metadata?.annotations?.[KWOK_ANNOTATION] !== undefined;
}

/** Every driver whose slices the fleet writes, the GPU driver first. */
export function fleetDrivers(o: FleetDrivers): string[] {
  return [
    o.driverName,
    ...(o.nics ? [o.nics.driverName] : []),
    ...(o.computeDomains ? [COMPUTE_DOMAIN_DRIVER] : []),
  ];
}
