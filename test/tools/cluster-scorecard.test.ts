import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { clientOf } from '../../src/kube/client.js';
import type { ResourceClaim } from '../../src/kube/types/claim.js';
import type { ClusterView } from '../../src/model/scorecard/inventory.js';
import { score } from '../../src/model/scorecard/score.js';
import { clusterScorecard } from '../../src/tools/report/cluster-view.js';
import { loopback } from '../support/http.js';
import { render } from '../support/render.js';

/**
 * `fakegpu report`'s listing (issue 50): each page folded as it arrives, slices and pods in small pages,
 * claims before slices; against a loopback server that pages by `limit` and `continue` as the API server does.
 */
const claim = (name: string, pool: string, device: string): ResourceClaim => ({
  metadata: { name, namespace: 'default', uid: name },
  status: {
    allocation: { devices: { results: [{ request: 'r', driver: 'gpu.nvidia.com', pool, device }] } },
  },
});

const NODES = 150;
const names = Array.from({ length: NODES }, (_, i) => `node-${i}`);
const view: ClusterView = {
  nodes: names.map((name, i) => ({ metadata: { name, labels: { 'fakegpu.dev/rack': `r${i % 3}` } } })),
  slices: names.flatMap((node) => render('dgx-h100', { node, nics: true }).items),
  claims: names.map((n, i) => claim(`c${i}`, n, `gpu-${i % 8}`)),
  pods: names.flatMap((n, i) => [
    {
      metadata: { name: `evicted-${i}`, namespace: 'default', uid: `e${i}` },
      spec: { nodeName: n, containers: [{ name: 'big', image: 'x'.repeat(1000) }] },
      status: { reason: 'Evicted' },
    },
    {
      metadata: { name: `running-${i}`, namespace: 'default', uid: `r${i}` },
      spec: { nodeName: n },
      status: { phase: 'Running' },
    },
  ]),
};

describe("fakegpu report's listing", () => {
  let server: Awaited<ReturnType<typeof loopback>>;
  const pages: { path: string; items: number }[] = [];
  before(async () => {
    const lists: Record<string, readonly unknown[]> = {
      '/api/v1/nodes': view.nodes,
      '/apis/resource.k8s.io/v1/resourceslices': view.slices,
      '/apis/resource.k8s.io/v1/resourceclaims': view.claims,
      '/api/v1/pods': view.pods,
    };
    server = await loopback((req, res) => {
      const u = new URL(req.url ?? '', 'http://x');
      const all = lists[u.pathname];
      if (!all) {
        res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ code: 404 }));
        return;
      }
      const from = Number(u.searchParams.get('continue') ?? 0);
      const limit = Number(u.searchParams.get('limit') ?? all.length);
      const items = all.slice(from, from + limit);
      pages.push({ path: u.pathname, items: items.length });
      const next = from + limit < all.length ? String(from + limit) : undefined;
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(
          JSON.stringify({ items, metadata: { resourceVersion: '7', ...(next ? { continue: next } : {}) } }),
        );
    });
  });
  after(() => server.close());

  it('gives the scorecard of the cluster whole, slices and pods in pages of at most 250, claims before slices', async () => {
    const got = await clusterScorecard(clientOf(server.kc));
    assert.deepEqual(got, score(view));
    assert.equal(got.cluster.podsEvicted, NODES);
    assert.equal(got.cluster.allocated, NODES);
    const of = (path: string) => pages.filter((p) => p.path === path);
    const slices = of('/apis/resource.k8s.io/v1/resourceslices');
    assert.ok(slices.length >= 2, `${slices.length} pages of slices`);
    for (const p of [...slices, ...of('/api/v1/pods')]) assert.ok(p.items <= 250, `${p.path}: ${p.items}`);
    const firstSlice = pages.findIndex((p) => p.path === '/apis/resource.k8s.io/v1/resourceslices');
    const lastClaim = pages.findLastIndex((p) => p.path === '/apis/resource.k8s.io/v1/resourceclaims');
    assert.ok(lastClaim < firstSlice, 'every claim is in before the first slice');
  });
});
