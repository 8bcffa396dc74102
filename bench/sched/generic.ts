/**
 * The generic phase's devices, as ClusterLoader2's KWOK DRA driver writes them: one slice per node,
 * pool = node, devices without attributes, a DeviceClass selecting the driver, a plain one-device claim.
 */
import type { Node } from '../support.js';
import { BENCH_LABEL } from './objects.js';

export const GENERIC_DRIVER = 'cl2-gpu.kwok.x-k8s.io';

export const GENERIC_CLAIM = {
  devices: { requests: [{ name: 'gpu', exactly: { deviceClassName: GENERIC_DRIVER } }] },
};

export const GENERIC_CLASS = {
  apiVersion: 'resource.k8s.io/v1',
  kind: 'DeviceClass',
  metadata: { name: GENERIC_DRIVER, labels: { [BENCH_LABEL]: 'sched' } },
  spec: { selectors: [{ cel: { expression: `device.driver == '${GENERIC_DRIVER}'` } }] },
};

/** Node `n`'s slice of `gpus` devices; the node owns it, so a deleted node takes it along. */
export function genericSlice(n: Node, gpus: number): string {
  return JSON.stringify({
    apiVersion: 'resource.k8s.io/v1',
    kind: 'ResourceSlice',
    metadata: {
      generateName: 'cl2-gpu-',
      labels: { [BENCH_LABEL]: 'sched' },
      ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: n.name, uid: n.uid, controller: true }],
    },
    spec: {
      driver: GENERIC_DRIVER,
      nodeName: n.name,
      pool: { name: n.name, generation: 1, resourceSliceCount: 1 },
      devices: Array.from({ length: gpus }, (_, i) => ({ name: `gpu-${i}` })),
    },
  });
}
