/** The bench's pods: what it posts, and what it records of each until it runs. */
import { BENCH_LABEL } from './objects.js';

/** Long-running fill pods, or short-lived churn pods. */
export type Kind = 'fill' | 'churn';

export interface PodRec {
  kind: Kind;
  /** performance.now() just before the POST. */
  created: number;
  /** First seen with a node. */
  bound?: number;
  /** First seen Running. */
  running?: number;
  /** Ready's lastTransitionTime − creationTimestamp, in the API's whole seconds. */
  serverS?: number;
  /** Seen Running only by a relist after the watch expired: its time is late. */
  late?: boolean;
}

/** A pod with one claim from `template`, placed by `placement` (see placement.ts). */
export function podBody(
  name: string,
  template: string,
  kind: Kind,
  placement: Record<string, unknown>,
): string {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, labels: { [BENCH_LABEL]: 'sched', 'fakegpu.dev/bench-pod': kind } },
    spec: {
      ...placement,
      tolerations: [{ operator: 'Exists' }],
      resourceClaims: [{ name: 'gpu', resourceClaimTemplateName: template }],
      // KWOK never runs it.
      containers: [
        { name: 'c', image: 'registry.k8s.io/pause:3.10', resources: { claims: [{ name: 'gpu' }] } },
      ],
    },
  });
}
