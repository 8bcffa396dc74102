import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { cacheRoot } from '../../src/local-cluster/build.js';
import type { Exports } from '../../src/local-cluster/cluster.js';
import type { ResourceClaim } from '../../src/kube/types/claim.js';
import type { ResourceSlice } from '../../src/kube/types/resource.js';
import type { NodeView, PodView } from '../../src/model/scorecard/inventory.js';
import { score, type Figures, type Scorecard } from '../../src/model/scorecard/score.js';
import { REPO_ROOT } from '../../src/process/repo.js';
import type { GpuCell } from '../../src/fleet/scorecard.js';
import { uiRoutes } from '../../src/fleet/ui.js';
import { dumpDom, screenshot } from '../support/browser.js';
import { eventually, kubectl, mustKubectl } from '../support/cluster.js';
import { apply, claimTemplate, deviceRequest, faultsCluster, podManifest } from '../support/e2e.js';

/**
 * The fleet's page in a real headless browser (Debian's chromium) on the faults cluster's 1,000 KWOK
 * nodes: after a workload of one- and two-GPU claims, the counts and the scorecard it shows equal what
 * this test computes from the API objects; a fault injected on one node turns that node's eight cells
 * faulted; a screenshot is kept.
 */

const SCREENSHOT = join(cacheRoot(), 'e2e-artifacts', 'fleet-ui.png');
const FAULT_NODE = 'kwok-gpu-11';
const ONE = 40;
const TWO = 10;

interface List<T> {
  items: T[];
}

/** The scorecard of the KWOK nodes, from the API objects as kubectl lists them. */
function scorecardOfKwokNodes(e: Exports): Scorecard {
  const get = <T>(what: string): T[] =>
    (JSON.parse(mustKubectl(e, ['get', what, '-A', '-o', 'json'])) as List<T>).items;
  const nodes = get<NodeView>('nodes').filter((n) => n.metadata.labels?.['type'] === 'kwok');
  const kwok = new Set(nodes.map((n) => n.metadata.name));
  return score({
    nodes,
    slices: get<ResourceSlice>('resourceslices').filter((s) => kwok.has(s.spec.nodeName)),
    claims: get<ResourceClaim>('resourceclaims'),
    pods: get<PodView>('pods').filter((p) => kwok.has(p.spec?.nodeName ?? '')),
  });
}

interface PageState {
  totals: Record<string, number>;
  scorecard: Scorecard;
}

async function pageState(e: Exports): Promise<PageState | null> {
  const r = await fetch(new URL('/ui/state', e.FAKEGPU_FLEET_UI));
  return r.ok ? ((await r.json()) as PageState) : null;
}

/** The page as drawn: its script's own text (which holds the markup it writes) left out. */
const drawn = (dom: string): string => dom.replace(/<script>[\s\S]*?<\/script>/g, '');

/** What the page shows once its script ran: each count and figure, and each node's cells. */
function shown(page: string): {
  counts: Record<string, number>;
  figures: Record<string, number>;
  cells: Map<string, string[]>;
} {
  const dom = drawn(page);
  const counts = Object.fromEntries(
    [...dom.matchAll(/id="count-([a-z]+)">(\d+)</g)].map((m) => [m[1] ?? '', Number(m[2])]),
  );
  const figures = Object.fromEntries(
    [...dom.matchAll(/id="score-([A-Za-z]+)">([\d.]+)</g)].map((m) => [m[1] ?? '', Number(m[2])]),
  );
  const cells = new Map<string, string[]>();
  for (const g of dom.matchAll(/<g data-node="([^"]+)">(.*?)<\/g>/g))
    cells.set(
      g[1] ?? '',
      [...(g[2] ?? '').matchAll(/data-state="([a-zA-Z-]+)"/g)].map((m) => m[1] ?? ''),
    );
  return { counts, figures, cells };
}

function fakegpu(e: Exports, ...args: string[]): void {
  const r = spawnSync(process.execPath, [join(REPO_ROOT, 'bin', 'fakegpu.js'), ...args], {
    encoding: 'utf8',
    env: { ...process.env, KUBECONFIG: e.KUBECONFIG },
  });
  assert.equal(r.status, 0, `fakegpu ${args.join(' ')}: ${r.stderr}`);
}

const onKwok = (p: unknown): unknown => {
  const spec = (p as { spec: Record<string, unknown> }).spec;
  spec['tolerations'] = [{ key: 'kwok.x-k8s.io/node', operator: 'Exists', effect: 'NoSchedule' }];
  spec['nodeSelector'] = { type: 'kwok' };
  return p;
};

describe("the fleet's page in a headless browser", () => {
  let e: Exports;
  const pods = [
    ...Array.from({ length: ONE }, (_, i) => ({ name: `ui-one-${i}`, template: 'ui-one' })),
    ...Array.from({ length: TWO }, (_, i) => ({ name: `ui-two-${i}`, template: 'ui-two' })),
  ];
  before(async () => {
    e = await faultsCluster();
    assert.ok(e.FAKEGPU_FLEET_UI, 'cluster up gives the page');
    fakegpu(e, 'fault', 'clear', '--all');
  });
  after(() => {
    kubectl(e, ['delete', 'gpufault', 'ui-xid', '--ignore-not-found']);
    kubectl(e, ['delete', 'pods', ...pods.map((p) => p.name), '--ignore-not-found', '--wait=true']);
    kubectl(e, ['delete', 'resourceclaimtemplates', 'ui-one', 'ui-two', '--ignore-not-found']);
  });

  it('shows the counts and scorecard the API objects give, and a fault turns its node faulted', async () => {
    apply(
      e,
      claimTemplate('ui-one', [deviceRequest('gpu', 'gpu.nvidia.com', 1)]),
      claimTemplate('ui-two', [deviceRequest('gpu', 'gpu.nvidia.com', 2)]),
      ...pods.map((p) =>
        onKwok(
          podManifest(e, {
            name: p.name,
            claims: [{ name: 'gpu', template: p.template }],
            containers: [{ name: 'main', claims: [{ name: 'gpu' }], command: 'sleep 3600' }],
          }),
        ),
      ),
    );
    await eventually(
      `${pods.length} pods Running`,
      () => {
        const phases = mustKubectl(e, [
          'get',
          'pods',
          ...pods.map((p) => p.name),
          '-o',
          'jsonpath={.items[*].status.phase}',
        ]).split(' ');
        return phases.filter((x) => x === 'Running').length === pods.length ? true : undefined;
      },
      180_000,
    );
    const want = scorecardOfKwokNodes(e);
    assert.equal(want.cluster.allocated, ONE + 2 * TWO, 'the workload holds 60 GPUs');
    assert.equal(want.cluster.nodes, 1000);
    // The fleet's informers and its 5 s cache: the state it serves catches up.
    for (let deadline = Date.now() + 60_000; ;) {
      const s = await pageState(e);
      if (s && JSON.stringify(s.scorecard.cluster) === JSON.stringify(want.cluster)) break;
      if (Date.now() > deadline)
        assert.fail(
          `the fleet's state ${JSON.stringify(s?.scorecard.cluster)} is not ${JSON.stringify(want.cluster)}`,
        );
      await new Promise((r) => setTimeout(r, 1000));
    }
    const page = shown(await dumpDom(e.FAKEGPU_FLEET_UI ?? ''));
    const c = want.cluster;
    assert.equal(c.tainted, 0, 'no fault is left from another test');
    assert.deepEqual(page.counts, { free: c.free, allocated: c.allocated, mig: 0, tainted: 0, faulted: 0 });
    for (const [k, v] of Object.entries(c) as [keyof Figures, number][])
      assert.equal(page.figures[k], v, `the page's ${k}`);
    assert.equal(page.cells.size, 1000, 'a cell group per node');
    const states = [...page.cells.values()].flat();
    assert.equal(states.length, c.gpus);
    assert.equal(states.filter((s) => s === 'allocated').length, c.allocated);

    fakegpu(
      e,
      'fault',
      'inject',
      '--name',
      'ui-xid',
      '--node-name',
      FAULT_NODE,
      '--count',
      '8',
      '--xid',
      '79',
    );
    for (let deadline = Date.now() + 90_000; ;) {
      const cells = shown(await dumpDom(e.FAKEGPU_FLEET_UI ?? '')).cells.get(FAULT_NODE) ?? [];
      if (cells.length === 8 && cells.every((x) => x === 'faulted')) break;
      if (Date.now() > deadline) assert.fail(`${FAULT_NODE}'s cells on the page: ${cells.join(', ')}`);
      await new Promise((r) => setTimeout(r, 2000));
    }
    // The fault's taints as the fleet published them, counted alike by the fleet and from the API.
    for (let deadline = Date.now() + 60_000; ;) {
      const api = scorecardOfKwokNodes(e).cluster;
      const s = await pageState(e);
      if (api.tainted === 8 && JSON.stringify(s?.scorecard.cluster) === JSON.stringify(api)) break;
      if (Date.now() > deadline)
        assert.fail(
          `after the fault the fleet's ${JSON.stringify(s?.scorecard.cluster)} is not ${JSON.stringify(api)}`,
        );
      await new Promise((r) => setTimeout(r, 1000));
    }
    await screenshot(e.FAKEGPU_FLEET_UI ?? '', SCREENSHOT);
    process.stderr.write(`fakegpu: the page's screenshot: ${SCREENSHOT}\n`);
  });

  it('stays a page of one bar per rack at 10,000 nodes, the counts whole', async () => {
    // The page's own state for a fleet of 10,000 nodes in 556 racks, served as the fleet serves it.
    const states: GpuCell[] = ['free', 'allocated', 'mig', 'faulted'];
    const nodes = Array.from({ length: 10_000 }, (_, i) => ({
      name: `kwok-gpu-${i}`,
      group: `rack-${String(Math.floor(i / 18)).padStart(3, '0')}`,
      gpus: Array.from({ length: 8 }, (_, j) => states[(i + j) % 4] ?? 'free'),
    }));
    const routes = uiRoutes(() => ({
      at: new Date().toISOString(),
      scorecard: score({ nodes: [], slices: [], claims: [], pods: [] }),
      nodes,
    }));
    const server = createServer((req, res) => {
      const route = routes[(req.url ?? '').split('?')[0] ?? ''];
      if (route) route(req, res);
      else res.writeHead(404).end();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const { port } = server.address() as AddressInfo;
      const dom = drawn(await dumpDom(`http://127.0.0.1:${String(port)}/ui`));
      const racks = [...dom.matchAll(/<div class="group" data-group="(rack-\d+)">/g)].length;
      assert.equal(racks, 556);
      assert.equal([...dom.matchAll(/<g data-node=/g)].length, 0, 'no cell per GPU');
      const counted = [...dom.matchAll(/data-state="([a-z]+)" data-count="(\d+)"/g)].reduce(
        (n, m) => n + Number(m[2]),
        0,
      );
      assert.equal(counted, 80_000);
      assert.equal(shown(dom).counts['faulted'], 20_000);
    } finally {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });
});
