import type { Device, ResourceSlice } from '../../kube/types/resource.js';
import { sliceGenerateName } from '../slice/build.js';

/**
 * The slice NVIDIA's compute-domain kubelet plugin publishes on each node: one pool named after the
 * node, one slice, the IMEX channel a workload claims (`channel-0`; the plugin enumerates 2048 channels
 * and publishes only the first) and the daemon device the IMEX daemon's pod claims (`daemon-0`, not
 * published when the host manages IMEX itself). Facts: compute-domains.md §3.
 */

export const COMPUTE_DOMAIN_DRIVER = 'compute-domain.nvidia.com';
export const CHANNEL_CLASS = 'compute-domain-default-channel.nvidia.com';
export const DAEMON_CLASS = 'compute-domain-daemon.nvidia.com';

export interface ComputeDomainSliceOptions {
  nodeName: string;
  /** `imex.mode=hostManaged`: no daemon device. */
  hostManaged?: boolean;
}

function device(type: 'channel' | 'daemon', id: number): Device {
  return { name: `${type}-${id}`, attributes: { id: { int: id }, type: { string: type } } };
}

export function computeDomainSlices(o: ComputeDomainSliceOptions): ResourceSlice[] {
  const devices = [device('channel', 0), ...(o.hostManaged ? [] : [device('daemon', 0)])];
  return [
    {
      apiVersion: 'resource.k8s.io/v1',
      kind: 'ResourceSlice',
      metadata: {
        generateName: sliceGenerateName(0, 1, {
          nodeName: o.nodeName,
          driverName: COMPUTE_DOMAIN_DRIVER,
          indexedNames: true,
        }),
      },
      spec: {
        driver: COMPUTE_DOMAIN_DRIVER,
        pool: { name: o.nodeName, generation: 1, resourceSliceCount: 1 },
        nodeName: o.nodeName,
        devices,
      },
    },
  ];
}
