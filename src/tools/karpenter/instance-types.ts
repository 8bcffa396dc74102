import { INSTANCE_TYPES } from '../../model/preset/index.js';
import { gpuCount } from '../../model/preset/machine-spec.js';
import type { GpuOffer } from './gpu-offer.js';

/**
 * The instance types Karpenter's KWOK provider launches, in the file it reads (`INSTANCE_TYPES_FILE_PATH`,
 * a JSON list of `InstanceTypeOptions`): every preset with an instance type, its cloud's sizes and price.
 * Its GPUs are offered one way, never both, as on a real node (device plugin or DRA driver): as
 * `nvidia.com/gpu` capacity (`extended-resource`, for a Karpenter that ignores DRA requests), or only
 * in the slices the fleet publishes and Karpenter is told of by templates (`dra`). A KWOK node's
 * capacity is its type's, so a type with both would have its GPUs allocated twice.
 */

/** Karpenter's own KWOK zones (its built-in instance types offer these four). */
export const KWOK_ZONES = ['test-zone-a', 'test-zone-b', 'test-zone-c', 'test-zone-d'] as const;

interface Requirement {
  key: string;
  operator: 'In';
  values: string[];
}

/** Field names as the provider's Go structs read them (an offering embeds `cloudprovider.Offering`). */
export interface KwokInstanceType {
  name: string;
  architecture: 'amd64' | 'arm64';
  operatingSystems: ['linux'];
  resources: Record<string, string>;
  offerings: { Price: number; Available: boolean; Requirements: Requirement[] }[];
}

export function kwokInstanceTypes(offer: GpuOffer): KwokInstanceType[] {
  return [...INSTANCE_TYPES].flatMap(([name, p]) => {
    const i = p.instance;
    if (i === undefined) return [];
    return [
      {
        name,
        architecture: i.architecture,
        operatingSystems: ['linux'],
        resources: {
          cpu: String(i.vcpus),
          memory: `${i.memoryMiB}Mi`,
          pods: String(i.maxPods),
          ...(offer === 'extended-resource' ? { 'nvidia.com/gpu': String(gpuCount(p.spec.gpus)) } : {}),
        },
        offerings: KWOK_ZONES.map((zone) => ({
          Price: i.pricePerHour,
          Available: true,
          Requirements: [
            { key: 'karpenter.sh/capacity-type', operator: 'In', values: ['on-demand'] },
            { key: 'topology.kubernetes.io/zone', operator: 'In', values: [zone] },
          ],
        })),
      },
    ];
  });
}
