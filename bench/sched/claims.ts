/** The claims of the NVIDIA-faithful phase: one ResourceClaimSpec per `--variant`, and its DeviceClasses. */
import { NIC_CLASS } from '../../src/local-cluster/cluster.js';
import { STD } from '../../src/model/device/attributes.js';
import { DRANET } from '../../src/model/nic/attributes.js';
import type { Shape } from './shape.js';

export const VARIANTS = ['plain', 'cel', 'first-available', 'mig', 'nic-aligned'] as const;
export type Variant = (typeof VARIANTS)[number];

export const GPU_CLASS = 'gpu.nvidia.com';
export const MIG_CLASS = 'mig.nvidia.com';

const q = (s: string): string => JSON.stringify(s);

/** The class the claim's GPU request names. */
export function faithfulClass(variant: Variant): string {
  return variant === 'mig' ? MIG_CLASS : GPU_CLASS;
}

/** Every class the variant's claim names: the cluster must have them before the first pod. */
export function faithfulClasses(variant: Variant): string[] {
  return variant === 'nic-aligned' ? [GPU_CLASS, NIC_CLASS] : [faithfulClass(variant)];
}

export function faithfulClaim(variant: Variant, shape: Shape, migProfile: string): unknown {
  const gpu = 'device.attributes["gpu.nvidia.com"]';
  switch (variant) {
    case 'plain':
      return { devices: { requests: [{ name: 'gpu', exactly: { deviceClassName: GPU_CLASS } }] } };
    case 'cel': {
      const memory =
        shape.memory === null
          ? ''
          : ` && device.capacity["gpu.nvidia.com"].memory.compareTo(quantity(${q(shape.memory)})) >= 0`;
      return {
        devices: {
          requests: [
            {
              name: 'gpu',
              exactly: {
                deviceClassName: GPU_CLASS,
                selectors: [
                  { cel: { expression: `${gpu}.productName == ${q(shape.productName)}${memory}` } },
                ],
              },
            },
          ],
        },
      };
    }
    case 'first-available': {
      // A product these nodes do not have first, so the scheduler tries it and falls back.
      const other = shape.productName === 'NVIDIA B200' ? 'NVIDIA H200' : 'NVIDIA B200';
      return {
        devices: {
          requests: [
            {
              name: 'gpu',
              firstAvailable: [
                {
                  name: 'preferred',
                  deviceClassName: GPU_CLASS,
                  selectors: [{ cel: { expression: `${gpu}.productName == ${q(other)}` } }],
                },
                { name: 'any', deviceClassName: GPU_CLASS },
              ],
            },
          ],
        },
      };
    }
    case 'mig':
      return {
        devices: {
          requests: [
            {
              name: 'gpu',
              exactly: {
                deviceClassName: MIG_CLASS,
                selectors: [{ cel: { expression: `${gpu}.profile == ${q(migProfile)}` } }],
              },
            },
          ],
        },
      };
    case 'nic-aligned':
      return {
        devices: {
          requests: [
            { name: 'gpu', exactly: { deviceClassName: GPU_CLASS } },
            {
              name: 'nic',
              exactly: {
                deviceClassName: NIC_CLASS,
                selectors: [{ cel: { expression: `device.attributes["${DRANET}"].rdma == true` } }],
              },
            },
          ],
          constraints: [{ requests: ['gpu', 'nic'], matchAttribute: STD.pcieRoot }],
        },
      };
  }
}

/** The claim in words, for the report's first line. */
export function describeClaim(variant: Variant, shape: Shape, migProfile: string): string {
  const line: Record<Variant, string> = {
    plain: `one device of DeviceClass ${GPU_CLASS}`,
    cel: `one device of ${GPU_CLASS} with CEL on productName${shape.memory === null ? '' : ' and memory'}`,
    'first-available': `firstAvailable: another product's GPU, then any of ${GPU_CLASS}`,
    mig: `one ${migProfile} partition of ${MIG_CLASS} (counters)`,
    'nic-aligned': `a GPU of ${GPU_CLASS} and an RDMA NIC of ${NIC_CLASS}, matchAttribute ${STD.pcieRoot}`,
  };
  return line[variant];
}
