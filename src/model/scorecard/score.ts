import type { Scorecard } from './figures.js';
import type { ClusterView } from './inventory.js';
import { ScoreTally } from './tally.js';

export { emptyFigures, POOL_LABELS, type Figures, type Scorecard } from './figures.js';

/** The scorecard of a cluster held whole: pure, so that a test, the plugin and the report compute the same. */
export function score(v: ClusterView, poolLabelOverride?: string): Scorecard {
  const t = new ScoreTally({
    ...(v.gpuDriver ? { gpuDriver: v.gpuDriver } : {}),
    ...(v.taintRules ? { taintRules: v.taintRules } : {}),
  });
  for (const c of v.claims) t.addClaim(c);
  for (const n of v.nodes) t.addNode(n);
  for (const s of v.slices) t.addSlice(s);
  for (const p of v.pods) t.addPod(p);
  return t.finish(poolLabelOverride);
}
