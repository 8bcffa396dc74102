import { ApiError, type ApiClient } from '../../kube/client.js';
import { forEachPage, listPage, METADATA_LIST, NODES_PATH, SLICES_PATH } from '../../kube/api.js';
import { CLAIMS_PATH } from '../../kube/types/claim.js';
import { PODS_PATH } from '../../kube/dcgm-sources.js';
import type { Scorecard } from '../../model/scorecard/figures.js';
import type { DeviceTaintRuleView, SliceView } from '../../model/scorecard/inventory.js';
import { scorecardClaim, scorecardNode, scorecardPod } from '../../model/scorecard/reduce.js';
import { ScoreTally } from '../../model/scorecard/tally.js';

const TAINT_RULES_PATH = '/apis/resource.k8s.io/v1/devicetaintrules';
const JSON_TYPE = 'application/json';
/**
 * Items a page of the large lists: a DGX node's slices are 25 kB (627 kB with dynamic MIG, in nine
 * slices), a pod a few kB; a page is all of them that is held at once.
 */
const SLICE_PAGE = 250;
const POD_PAGE = 250;

/**
 * The cluster's scorecard, each page folded as it arrives and let go: DeviceTaintRules first (only where
 * the API server serves them), then claims (each reduced to its results) and nodes (as metadata, each
 * reduced to the labels the scorecard reads), then slices and pods (an evicted pod reduced to its node).
 * What is held is the scorecard's tally (ScoreTally), never a listed slice or pod past its page.
 */
export async function clusterScorecard(
  http: Pick<ApiClient, 'send'>,
  poolLabel?: string,
): Promise<Scorecard> {
  const pages = (path: string, each: (item: unknown) => void, accept = JSON_TYPE, limit = 500) =>
    forEachPage<unknown>(
      (q) => listPage<unknown>(http, path, q, accept),
      (items) => {
        for (const x of items) each(x);
      },
      { limit },
    );
  const taintRules: DeviceTaintRuleView[] = [];
  await pages(TAINT_RULES_PATH, (r) => taintRules.push(r as DeviceTaintRuleView)).catch((e: unknown) => {
    if (!(e instanceof ApiError && e.code === 404)) throw e;
  });
  const tally = new ScoreTally({ taintRules });
  await Promise.all([
    pages(CLAIMS_PATH, (c) => {
      const r = scorecardClaim(c);
      if (r) tally.addClaim(r);
    }),
    pages(
      NODES_PATH,
      (n) => {
        tally.addNode(scorecardNode(n, poolLabel));
      },
      METADATA_LIST,
    ),
  ]);
  await Promise.all([
    pages(
      SLICES_PATH,
      (s) => {
        tally.addSlice(s as SliceView);
      },
      JSON_TYPE,
      SLICE_PAGE,
    ),
    pages(
      PODS_PATH,
      (p) => {
        const r = scorecardPod(p);
        if (r) tally.addPod(r);
      },
      JSON_TYPE,
      POD_PAGE,
    ),
  ]);
  return tally.finish(poolLabel);
}
