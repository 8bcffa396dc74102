import type { IncomingMessage, ServerResponse } from 'node:http';
import { SCRAPE_WAIT_MS, within } from '../process/scorecard-metrics.js';
import { UI_PAGE } from './ui-page.js';
import type { FleetPicture, GpuCell } from './scorecard.js';

/**
 * The fleet's page (`/ui` on its HTTP endpoint): racks × nodes × GPUs coloured by state beside the
 * scorecard, redrawn from `/ui/state` every two seconds without reloading. Up to `PER_GPU_NODES` nodes
 * each GPU is a cell; past that each group (rack, pool, or run of nodes) is one bar of its GPUs' states,
 * so the page and its state stay small at 10,000 nodes and beyond.
 */

export const PER_GPU_NODES = 2000;
/** Groups shown past PER_GPU_NODES, and nodes to a group where no rack or pool label gives one. */
const MAX_GROUPS = 2000;
const RUN = 100;
const REST = 'the other racks and pools';

const LETTER: Record<GpuCell, string> = { free: 'f', allocated: 'a', mig: 'm', tainted: 't', faulted: 'x' };

export type Counts = Record<GpuCell, number>;

export interface UiState {
  at: string;
  scorecard: FleetPicture['scorecard'];
  totals: Counts & { nodes: number };
  /** Per GPU: each node's GPUs as one letter each (f a m t x), by group. */
  nodes?: { name: string; group: string; gpus: string }[];
  /** Per group, past PER_GPU_NODES nodes. */
  groups?: { name: string; nodes: number; counts: Counts }[];
}

const zero = (): Counts => ({ free: 0, allocated: 0, mig: 0, tainted: 0, faulted: 0 });

export function uiState(p: FleetPicture): UiState {
  const totals = { ...zero(), nodes: p.nodes.length };
  for (const n of p.nodes) for (const g of n.gpus) totals[g]++;
  const base = { at: p.at, scorecard: p.scorecard, totals };
  if (p.nodes.length <= PER_GPU_NODES)
    return {
      ...base,
      nodes: p.nodes.map((n) => ({
        name: n.name,
        group: n.group,
        gpus: n.gpus.map((g) => LETTER[g]).join(''),
      })),
    };
  const groups = new Map<string, { nodes: number; counts: Counts }>();
  p.nodes.forEach((n, i) => {
    const name = n.group || `nodes ${Math.floor(i / RUN) * RUN + 1}–${Math.floor(i / RUN) * RUN + RUN}`;
    // Past MAX_GROUPS the rest share one bar, so the totals and the bars still agree.
    const key = groups.has(name) || groups.size < MAX_GROUPS - 1 ? name : REST;
    let g = groups.get(key);
    if (!g) groups.set(key, (g = { nodes: 0, counts: zero() }));
    g.nodes++;
    for (const s of n.gpus) g.counts[s]++;
  });
  return { ...base, groups: [...groups].map(([name, g]) => ({ name, ...g })) };
}

/** `/ui` and `/ui/state`; the state waits for the first picture, and is 503 until the fleet's first list. */
export function uiRoutes(
  picture: () => FleetPicture | null | Promise<FleetPicture | null>,
): Record<string, (req: IncomingMessage, res: ServerResponse) => void> {
  return {
    '/ui': (_req, res) => {
      res
        .writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' })
        .end(UI_PAGE);
    },
    '/ui/state': (_req, res) => {
      // A first view waits for the first picture, as long as a first scrape would; then it is 503.
      void within(Promise.resolve().then(picture), SCRAPE_WAIT_MS, null)
        .then((p) => {
          if (p === null) res.writeHead(503, { 'content-type': 'text/plain' }).end('starting\n');
          else
            res
              .writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' })
              .end(JSON.stringify(uiState(p)));
        })
        .catch(() => {
          if (!res.headersSent)
            res.writeHead(500, { 'content-type': 'text/plain' }).end('scorecard failed\n');
        });
    },
  };
}
