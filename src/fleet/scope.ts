import { COMPUTE_DOMAIN_DRIVER } from '../model/compute-domain/slice.js';
import type { Meta } from '../kube/api.js';
import { KWOK_ANNOTATION } from '../kube/kwok.js';

/**
 * What a fleet owns: the nodes it serves and the drivers it writes their slices under. The running fleet
 * and `fleet --delete-slices` both ask here, so the cleanup removes exactly what a fleet of the same
 * flags publishes and nothing of another publisher's.
 */

export interface NodeSelection {
  /** A label selector the API server applies; none: KWOK's nodes and nodes with the profile label. */
  nodeSelector?: string | undefined;
  profileLabel: string;
}

export interface FleetDrivers {
  driverName: string;
  nics?: { driverName: string } | undefined;
  computeDomains: boolean;
}

/** Whether the fleet serves a node its node list (labelled by `nodeSelector`, if any) returned. */
export function servesNode(o: NodeSelection, n: Meta): boolean {
  if (o.nodeSelector) return true; // the server applied it
  const m = n.metadata;
  return m?.annotations?.[KWOK_ANNOTATION] !== undefined || m?.labels?.[o.profileLabel] !== undefined;
}

/** Every driver whose slices the fleet writes, the GPU driver first. */
export function fleetDrivers(o: FleetDrivers): string[] {
  return [
    o.driverName,
    ...(o.nics ? [o.nics.driverName] : []),
    ...(o.computeDomains ? [COMPUTE_DOMAIN_DRIVER] : []),
  ];
}
