/**
 * The scheduler scorecard (`fakegpu report`, docs/scorecard.md) at the end of a bench's phase: one
 * line, so that two schedulers, or two settings, compare by one command.
 */
import type { KubeConfig } from '@kubernetes/client-node';
import { clientOf } from '../src/kube/client.js';
import type { Scorecard } from '../src/model/scorecard/score.js';
import { clusterScorecard } from '../src/tools/report/cluster-view.js';

export async function scorecardOf(kc: KubeConfig): Promise<Scorecard> {
  return clusterScorecard(clientOf(kc));
}

/**
 * The fleet's own scorecard (its page's state, `http://<endpoint>/ui/state`) against the API's, asked
 * again until they agree or `ms` pass (pods still coming and going move both): the figures that differ,
 * `fleet/API`, or none.
 */
export async function fleetDiffers(endpoint: string, kc: KubeConfig, ms = 60_000): Promise<string[]> {
  const deadline = Date.now() + ms;
  for (;;) {
    const want = (await scorecardOf(kc)).cluster;
    const r = await fetch(`http://${endpoint}/ui/state`, { signal: AbortSignal.timeout(10_000) }).catch(
      () => null,
    );
    const got = r?.ok ? ((await r.json()) as { scorecard: Scorecard }).scorecard.cluster : null;
    const differ = (Object.keys(want) as (keyof typeof want)[])
      .filter((k) => got?.[k] !== want[k])
      .map((k) => `${k} ${String(got?.[k])}/${String(want[k])}`);
    if (differ.length === 0 || Date.now() > deadline) return differ;
    await new Promise((res) => setTimeout(res, 2000));
  }
}

export function scorecardLine(phase: string, s: Scorecard): string {
  const c = s.cluster;
  const part = (n: number, of: number): string => `${n}/${of}`;
  return [
    `scorecard ${phase}:`,
    `nodes=${c.nodes} gpus=${c.gpus} allocated=${c.allocated} free=${c.free} tainted=${c.tainted}`,
    `full=${c.nodesFull} partial=${c.nodesPartial} empty=${c.nodesEmpty}`,
    `stranded=${c.strandedGpus} fragmentation=${c.fragmentation.toFixed(3)}`,
    `mig_stranded=${part(c.migStrandedSlices, c.migFreeSlices)}`,
    `gpu_nic_aligned=${part(c.gpuNicAligned, c.gpuNicClaims)}`,
    `cross_numa=${part(c.multiGpuCrossNuma, c.multiGpuClaims)}`,
    `cd_split=${part(c.computeDomainsSplit, c.computeDomains)}`,
    `on_tainted=${c.claimsOnTainted} evicted=${c.podsEvicted}`,
  ].join(' ');
}
