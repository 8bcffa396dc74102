import type { State } from './state.js';

/**
 * KWOK nodes split between several KWOK controllers (`cluster up --kwok-controllers K`), as Karpenter's
 * scale tests split theirs (`kwok-partition`, hack/install-kwok.sh of 2024): KWOK's own advice is about
 * 1,000 nodes per controller (kubernetes-sigs/kwok#1122). Node i is in partition i mod K, by a label
 * set when `cluster up` creates it, and controller k manages the nodes of partition k alone.
 */

export const KWOK_PARTITION_LABEL = 'fakegpu.dev/kwok-partition';

/** 64 controllers of ~1,500 nodes each hold `cluster up`'s 100,000; more would only be processes. */
export const MAX_KWOK_CONTROLLERS = 64;

/** How many KWOK controllers the cluster runs; absent in state files from before the option: one. */
export function kwokControllersOf(s: Pick<State, 'kwokControllers'> | null): number {
  return s?.kwokControllers ?? 1;
}

/** The partition label of the `index`th node created; none with one controller, which manages all. */
export function partitionLabel(index: number, controllers: number): Record<string, string> {
  return controllers > 1 ? { [KWOK_PARTITION_LABEL]: String(index % controllers) } : {};
}

/** The nodes with their partition labels, by creation order: the pools' nodes as much as --kwok-nodes'. */
export function partitioned<T extends { labels: Record<string, string> }>(
  nodes: T[],
  controllers: number,
): T[] {
  return nodes.map((x, i) => ({ ...x, labels: { ...x.labels, ...partitionLabel(i, controllers) } }));
}

/**
 * The process of partition `p`: the first keeps the component's own name, so `status`, `restart kwok`
 * and the pid file of a one-controller cluster stay as they were.
 */
export function kwokProcessName(p: number): string {
  return p === 0 ? 'kwok' : `kwok-${p}`;
}

/** The pid files of the controllers beyond the first: `kwok-<p>`. */
export const EXTRA_KWOK_PROCESS = /^kwok-([1-9]\d*)$/;

/**
 * The selector that narrows controller `p` to its partition. KWOK sends a label selector to the API
 * server, so each controller lists and watches only its own nodes (its annotation selector, which
 * every KWOK node matches, is applied after).
 */
export function partitionArgs(p: number, controllers: number): string[] {
  return controllers > 1 ? [`--manage-nodes-with-label-selector=${KWOK_PARTITION_LABEL}=${p}`] : [];
}
