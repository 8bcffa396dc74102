import type { ResourceClaim } from '../../kube/types/claim.js';
import { COMPUTE_DOMAIN_DRIVER } from '../compute-domain/slice.js';
import { DRANET } from '../nic/attributes.js';

/** A device an allocated claim holds, as the claim's figures read it. */
export interface HeldDevice {
  driver: string;
  node: string;
  /** `node/uuid` of the physical GPU it is on; null for any other device (a NIC, a channel). */
  gpu: string | null;
  pcieRoot: string | undefined;
  numa: number | undefined;
  tainted: boolean;
}

/** What one allocated claim says about placement quality; each figure counts claims. */
export interface ClaimQuality {
  /** The node its first device is on: where the claim is counted per pool and rack. */
  node: string;
  gpuNic: boolean;
  /** Its GPUs and NICs all under one PCIe root. */
  gpuNicAligned: boolean;
  /** Devices on two or more physical GPUs. */
  multiGpu: boolean;
  /** Those GPUs on more than one NUMA node, of those that say theirs (a VM's GPUs often say none). */
  crossNuma: boolean;
  onTainted: boolean;
  /** The ComputeDomain a channel claim joins its pods to, from its opaque config. */
  domain: string | null;
}

export function claimQuality(claim: ResourceClaim, held: readonly HeldDevice[]): ClaimQuality {
  // Most claims hold one device; at 400,000 claims the general case's sets are most of the scorecard's garbage.
  if (held.length === 1 && held[0]) {
    const h = held[0];
    return {
      node: h.node,
      gpuNic: false,
      gpuNicAligned: false,
      multiGpu: false,
      crossNuma: false,
      onTainted: h.tainted,
      domain: h.driver === COMPUTE_DOMAIN_DRIVER ? domainOf(claim) : null,
    };
  }
  const gpus = held.filter((e) => e.gpu !== null);
  const nics = held.filter((e) => e.driver === DRANET);
  const gpuNic = gpus.length > 0 && nics.length > 0;
  const roots = new Set([...gpus, ...nics].map((e) => e.pcieRoot ?? ''));
  const physical = new Set(gpus.map((e) => e.gpu));
  const numa = new Set(gpus.flatMap((e) => e.numa ?? []));
  return {
    node: held[0]?.node ?? '',
    gpuNic,
    gpuNicAligned: gpuNic && roots.size === 1 && !roots.has(''),
    multiGpu: physical.size > 1,
    crossNuma: physical.size > 1 && numa.size > 1,
    onTainted: held.some((e) => e.tainted),
    domain: held.some((e) => e.driver === COMPUTE_DOMAIN_DRIVER) ? domainOf(claim) : null,
  };
}

/** NVIDIA's ComputeDomainChannelConfig (resource.nvidia.com/v1beta1) names the domain by its UID. */
function domainOf(claim: ResourceClaim): string | null {
  for (const c of claim.status?.allocation?.devices?.config ?? []) {
    const p = c.opaque?.parameters;
    if (p !== null && typeof p === 'object' && 'domainID' in p && typeof p.domainID === 'string')
      return p.domainID;
  }
  return null;
}
