/**
 * Where Karpenter's scheduling simulation and the real scheduler disagreed about a bench's pods: what
 * an autoscaler's developers need from a scale test (issue: Karpenter's DRA allocator against the
 * scheduler on the same slices).
 */

export interface KarpenterEvent {
  reason?: string;
  message?: string;
  source?: { component?: string };
  involvedObject?: { name?: string };
  lastTimestamp?: string;
  eventTime?: string;
}

export interface Nominations {
  /** Pods Karpenter nominated for a node. */
  nominated: number;
  /**
   * Each disagreement on whether a pod fits, one line: nominated but not running, or refused by
   * Karpenter and run by the scheduler.
   */
  mismatches: string[];
  examples: string[];
  /** Nominated for one node and run on another that fits as well: a choice, not a disagreement. */
  elsewhere: number;
}

/**
 * A pod Karpenter nominated for a node (its latest `Nominated` event, "Pod should schedule on:
 * nodeclaim/…, node/…", pkg/controllers/provisioning/scheduling/events.go) that the scheduler has not
 * run, and a pod Karpenter found no room for (its `FailedScheduling`) that the scheduler placed anyway.
 * `podNode` names each of the bench's pods with its node, '' while it is not running.
 */
export function judgeNominations(
  events: readonly KarpenterEvent[],
  nodeOfClaim: ReadonlyMap<string, string>,
  podNode: ReadonlyMap<string, string>,
): Nominations {
  const latest = new Map<string, { at: string; node: string }>();
  /** Each refused pod with Karpenter's words: a limit reached is not the allocator's verdict. */
  const refused = new Map<string, string>();
  for (const ev of events) {
    if (ev.source?.component !== 'karpenter') continue;
    const pod = ev.involvedObject?.name ?? '';
    if (!podNode.has(pod)) continue;
    if (ev.reason === 'FailedScheduling') refused.set(pod, (ev.message ?? '').slice(0, 160));
    if (ev.reason !== 'Nominated') continue;
    const at = ev.lastTimestamp ?? ev.eventTime ?? '';
    const msg = ev.message ?? '';
    const claim = /nodeclaim\/([^,\s]+)/.exec(msg)?.[1];
    const node = /(?:^|[\s,:])node\/([^,\s]+)/.exec(msg)?.[1] ?? nodeOfClaim.get(claim ?? '') ?? '';
    if ((latest.get(pod)?.at ?? '') <= at) latest.set(pod, { at, node });
  }
  const out: string[] = [];
  let elsewhere = 0;
  for (const [pod, n] of latest) {
    const ran = podNode.get(pod) ?? '';
    if (ran === '') out.push(`${pod}: Karpenter ${n.node || 'a new node'}, the scheduler none`);
    else if (n.node !== '' && n.node !== ran) elsewhere++;
  }
  for (const [pod, why] of refused) {
    const ran = podNode.get(pod) ?? '';
    if (!latest.has(pod) && ran !== '')
      out.push(`${pod}: Karpenter found no room${why ? ` (${why})` : ''}, the scheduler ${ran}`);
  }
  return { nominated: latest.size, mismatches: out, examples: out.slice(0, 3), elsewhere };
}
