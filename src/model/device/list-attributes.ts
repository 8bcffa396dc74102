import { STD } from './attributes.js';
import type { GpuDevices } from './allocatable.js';

/**
 * NVIDIA's DRAListTypeAttributes: `resource.kubernetes.io/numaNode` as a list (`ints`) instead of an int,
 * on every device that has it (v0.5.0 `cmd/gpu-kubelet-plugin/numa.go`, Kubernetes' deviceattribute
 * library). The library lists the device's node, then the nodes of the same socket at the smallest
 * SLIT distance; fakegpu's machines have one NUMA node per socket (none describes sub-NUMA clustering),
 * so the list is the node alone, as v0.5.0 publishes it on such a machine.
 */
export function listNumaNodes(gpus: GpuDevices[]): GpuDevices[] {
  return gpus.map((g) => ({
    ...g,
    devices: g.devices.map((d) => {
      const a = d.attributes?.[STD.numaNode];
      if (!a || !('int' in a)) return d;
      return { ...d, attributes: { ...d.attributes, [STD.numaNode]: { ints: [a.int] } } };
    }),
  }));
}
