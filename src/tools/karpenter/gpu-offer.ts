/**
 * How a node's GPUs are offered to the scheduler and to Karpenter: as the extended resource
 * `nvidia.com/gpu` (a device plugin's way), or as DRA devices only. Never both on one node: a GPU offered
 * twice is allocated twice. Apart from instance-types.ts so that the CLI reads it without the presets.
 */
export type GpuOffer = 'extended-resource' | 'dra';
export const GPU_OFFERS: readonly GpuOffer[] = ['dra', 'extended-resource'];
