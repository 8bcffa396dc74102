import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { Gauge, Registry } from 'prom-client';
import type { Fleet } from '../../src/fleet/fleet.js';
import { FleetScorecard, type Source } from '../../src/fleet/scorecard.js';
import { scorecardClaim, scorecardPod } from '../../src/model/scorecard/reduce.js';
import { PER_GPU_NODES, uiRoutes, uiState } from '../../src/fleet/ui.js';
import { KWOK_ANNOTATION } from '../../src/kube/kwok.js';
import type { ResourceClaim } from '../../src/kube/types/claim.js';
import type { ResourceSlice } from '../../src/kube/types/resource.js';
import { RACK_LABEL } from '../../src/model/compute-domain/resource.js';
import type { PodView } from '../../src/model/scorecard/inventory.js';
import { score } from '../../src/model/scorecard/score.js';
import { DRIVER_NAME } from '../../src/model/slice/build.js';
import { scorecardGauges } from '../../src/process/scorecard-metrics.js';
import { FakeApi } from '../support/fake-api.js';
import { testFleet } from '../support/fleet.js';
import { until } from '../support/http.js';
import { render } from '../support/render.js';

const source = <T>(items: T[] | undefined): Source<T> => ({
  start: () => undefined,
  stop: () => undefined,
  snapshot: () => items,
});

/** A node's devices: one GPU. */
const ONE_GPU = [
  { driver: DRIVER_NAME, devices: [{ name: 'gpu-0', attributes: { uuid: { string: 'G0' } } }] },
];

function claim(name: string, node: string, devices: string[]): ResourceClaim {
  return {
    metadata: { name, namespace: 'default', uid: `uid-${name}` },
    status: {
      allocation: {
        devices: {
          results: devices.map((device) => ({ request: 'gpu', driver: DRIVER_NAME, pool: node, device })),
        },
      },
    },
  };
}

describe("the fleet's scorecard", () => {
  const fleets: Fleet[] = [];
  after(async () => {
    for (const f of fleets) await f.stop();
  });

  it('equals the scorecard of the slices it published, the claims and the pods, as `fakegpu report` computes it', async () => {
    const api = new FakeApi();
    const labels = [{ [RACK_LABEL]: 'r1' }, { [RACK_LABEL]: 'r1' }, { [RACK_LABEL]: 'r2' }];
    labels.forEach((l, i) => {
      api.putNode(`node-${i}`, l, { [KWOK_ANNOTATION]: 'fake' });
    });
    const fleet = testFleet(api);
    fleets.push(fleet);
    await fleet.start();
    await until('converged', () => fleet.converged() && api.slices.size > 0);
    const claims = [
      claim('one', 'node-0', ['gpu-0']),
      claim('two', 'node-1', ['gpu-0', 'gpu-7']),
      claim('all', 'node-2', ['gpu-0', 'gpu-1', 'gpu-2', 'gpu-3', 'gpu-4', 'gpu-5', 'gpu-6', 'gpu-7']),
    ];
    const pods: PodView[] = [
      {
        metadata: { name: 'p', namespace: 'default', uid: 'p' },
        spec: { nodeName: 'node-1' },
        status: { reason: 'Evicted' },
      },
    ];
    const sc = new FleetScorecard(fleet, { claims: source(claims), pods: source(pods) });
    const picture = await sc.current();
    assert.ok(picture);
    const published = [...api.slices.values()] as ResourceSlice[];
    const want = score({
      nodes: labels.map((l, i) => ({ metadata: { name: `node-${i}`, labels: l } })),
      slices: published,
      claims,
      pods,
    });
    assert.deepEqual(picture.scorecard, want);
    assert.equal(want.cluster.allocated, 11);
    assert.equal(want.cluster.nodesFull, 1);
    assert.equal(want.cluster.multiGpuCrossNuma, 2, 'gpu-0 and gpu-7 sit on two NUMA nodes');
    assert.equal(want.cluster.podsEvicted, 1);
    assert.deepEqual(
      picture.nodes.map((n) => [n.name, n.group, n.gpus.filter((g) => g === 'allocated').length]),
      [
        ['node-0', 'r1', 1],
        ['node-1', 'r1', 2],
        ['node-2', 'r2', 8],
      ],
    );
  });

  it('shows a GPU whose devices a fault taints as faulted, and is worked out again only after maxAgeMs', async () => {
    let t = 0;
    let taint = false;
    const gpu = (
      i: number,
    ): ResourceSlice['spec']['devices'] extends (infer D)[] | undefined ? D : never => ({
      name: `gpu-${i}`,
      attributes: { uuid: { string: `GPU-${i}` }, type: { string: 'gpu' } },
    });
    const xid = { key: 'gpu.nvidia.com/xid', value: '79', effect: 'NoSchedule' as const };
    const fake: Pick<Fleet, 'servedDevices'> = {
      *servedDevices() {
        yield {
          node: 'n',
          labels: {},
          slices: [{ driver: DRIVER_NAME, devices: [gpu(0), taint ? { ...gpu(1), taints: [xid] } : gpu(1)] }],
          faulted: new Set(taint ? ['gpu-1'] : []),
        };
      },
    };
    const sc = new FleetScorecard(
      fake,
      { claims: source([claim('c', 'n', ['gpu-0'])]), pods: source([]) },
      { now: () => t, maxAgeMs: 1000 },
    );
    assert.deepEqual((await sc.current())?.nodes[0]?.gpus, ['allocated', 'free']);
    taint = true;
    t = 999;
    assert.deepEqual(sc.picture()?.nodes[0]?.gpus, ['allocated', 'free'], 'cached');
    assert.deepEqual((await sc.next())?.nodes[0]?.gpus, ['allocated', 'free'], 'none begun');
    t = 1000;
    assert.deepEqual((await sc.next())?.nodes[0]?.gpus, ['allocated', 'faulted']);
    assert.equal(sc.picture()?.scorecard.cluster.tainted, 1);
  });

  it('is not shown before claims and pods are first listed', async () => {
    const sc = new FleetScorecard({ *servedDevices() {} }, { claims: source(undefined), pods: source([]) });
    assert.equal(sc.picture(), null);
    assert.equal(await sc.current(), null);
  });

  it('logs work that fails, keeps the last picture, and tries again only after maxAgeMs (issue 50)', async () => {
    let t = 0;
    let broken = false;
    const warned: string[] = [];
    const fake: Pick<Fleet, 'servedDevices'> = {
      *servedDevices() {
        if (broken) throw new Error('a bug in a build');
        yield {
          node: 'n',
          labels: {},
          slices: ONE_GPU,
          faulted: new Set<string>(),
        };
      },
    };
    const sc = new FleetScorecard(
      fake,
      { claims: source([]), pods: source([]) },
      {
        now: () => t,
        maxAgeMs: 1000,
        log: {
          warn: (_o, m) => {
            warned.push(m);
          },
        },
      },
    );
    const first = await sc.current();
    assert.ok(first);
    broken = true;
    t = 1000;
    assert.equal(await sc.current(), first, 'the last picture while the next is worked out');
    assert.equal(await sc.next(), first, 'and after it failed');
    assert.deepEqual(warned, ['scorecard: not worked out']);
    t = 1500;
    assert.equal(await sc.next(), first);
    assert.equal(warned.length, 1, 'not tried again before maxAgeMs');
    broken = false;
    t = 2000;
    const again = await sc.next();
    assert.notEqual(again, first);
    assert.equal(again?.scorecard.cluster.gpus, 1);
  });

  it('counts a node the walk meets twice (deleted and added again meanwhile) once', async () => {
    const node = {
      node: 'n',
      labels: {},
      slices: ONE_GPU,
      faulted: new Set<string>(),
    };
    const sc = new FleetScorecard(
      {
        *servedDevices() {
          yield node;
          yield node;
        },
      },
      { claims: source([]), pods: source([]) },
    );
    const p = await sc.current();
    assert.ok(p);
    assert.equal(p.nodes.length, 1);
    assert.equal(p.scorecard.cluster.gpus, 1);
  });

  it('waits for the first list of claims and pods before its first picture, as a first scrape does', async () => {
    const listing: { items?: ResourceClaim[] } = {};
    let listedNow: () => void = () => undefined;
    const listed = new Promise<void>((r) => (listedNow = r));
    const fake: Pick<Fleet, 'servedDevices'> = {
      *servedDevices() {
        yield {
          node: 'n',
          labels: {},
          slices: ONE_GPU,
          faulted: new Set<string>(),
        };
      },
    };
    const claims: Source<ResourceClaim> = {
      ...source<ResourceClaim>(undefined),
      snapshot: () => listing.items,
      listed: () => listed,
    };
    const sc = new FleetScorecard(fake, { claims, pods: source([]) });
    const first = sc.current();
    assert.equal(sc.picture(), null);
    listing.items = [claim('c', 'n', ['gpu-0'])];
    listedNow();
    assert.equal((await first)?.scorecard.cluster.allocated, 1);
  });

  it('is worked out in turns of the event loop, the last picture served meanwhile (issue 50)', async () => {
    const devices = render('dgx-h100', { node: 'template', dynamicMig: true }).items.map((s) => ({
      driver: s.spec.driver,
      devices: s.spec.devices ?? [],
    }));
    const N = 400;
    const fake: Pick<Fleet, 'servedDevices'> = {
      *servedDevices() {
        for (let i = 0; i < N; i++)
          yield { node: `n-${i}`, labels: {}, slices: devices, faulted: new Set<string>() };
      },
    };
    const claims = Array.from({ length: N }, (_, i) => claim(`c${i}`, `n-${i}`, ['gpu-0']));
    let t = 0;
    const sc = new FleetScorecard(
      fake,
      { claims: source(claims), pods: source([]) },
      { turnMs: 2, now: () => t, maxAgeMs: 1000 },
    );
    let turns = 0;
    const tick = setInterval(() => turns++, 1);
    const picture = await sc.current();
    clearInterval(tick);
    assert.ok(picture);
    assert.equal(picture.nodes.length, N);
    assert.equal(picture.scorecard.cluster.allocated, N);
    // How long each turn is, bench:scorecard measures; here, that the loop turned while it was worked out.
    assert.ok(turns >= 3, `the event loop turned ${turns} times while it was worked out`);
    t = 60_000;
    assert.equal(sc.picture(), picture, 'the last, while the next is worked out');
    const next = await sc.next();
    assert.notEqual(next, picture);
    assert.equal(next?.at, new Date(60_000).toISOString());
  });

  it('keeps only allocated claims (with a ComputeDomain channel’s domain) and evicted pods', () => {
    assert.equal(scorecardClaim({ metadata: { name: 'x' }, status: {} }), null);
    const c = scorecardClaim({
      metadata: { name: 'x', namespace: 'n', uid: 'u', labels: { big: 'label' } },
      status: {
        allocation: {
          devices: {
            results: [{ request: 'r', driver: 'd', pool: 'p', device: 'dev' }],
            config: [
              {
                source: 'FromClass',
                opaque: { driver: 'compute-domain.nvidia.com', parameters: { domainID: 'D' } },
              },
              { source: 'FromClaim', opaque: { driver: 'gpu.nvidia.com', parameters: { sharing: {} } } },
            ],
          },
        },
        reservedFor: [{ resource: 'pods', name: 'p', uid: 'u' }],
      },
    });
    assert.deepEqual(
      c?.status?.allocation?.devices?.config?.map((x) => x.opaque?.parameters),
      [{ domainID: 'D' }],
    );
    assert.equal(JSON.stringify(c).includes('big'), false);
    assert.equal(scorecardPod({ metadata: { name: 'p', namespace: 'n', uid: 'u' }, status: {} }), null);
    assert.ok(
      scorecardPod({
        metadata: { name: 'p', namespace: 'n', uid: 'u' },
        spec: { nodeName: 'x' },
        status: { conditions: [{ type: 'DisruptionTarget', status: 'True' }] },
      }),
    );
  });
});

describe("the fleet's page state and scorecard metrics", () => {
  const picture = (nodes: number) => ({
    at: '2026-12-04T00:00:00.000Z',
    scorecard: score({ nodes: [], slices: [], claims: [], pods: [] }),
    nodes: Array.from({ length: nodes }, (_, i) => ({
      name: `kwok-gpu-${i}`,
      group: '',
      gpus: ['allocated', 'free', 'free', 'faulted'] as ('allocated' | 'free' | 'faulted')[],
    })),
  });

  it('gives each GPU up to PER_GPU_NODES nodes, then one bar per group of nodes', () => {
    const small = uiState(picture(3));
    assert.deepEqual(small.nodes?.[0], { name: 'kwok-gpu-0', group: '', gpus: 'affx' });
    assert.deepEqual(small.totals, { free: 6, allocated: 3, mig: 0, tainted: 0, faulted: 3, nodes: 3 });
    const big = uiState(picture(PER_GPU_NODES + 1));
    assert.equal(big.nodes, undefined);
    assert.ok(big.groups);
    assert.equal(big.groups.length, Math.ceil((PER_GPU_NODES + 1) / 100));
    assert.deepEqual(big.groups[0], {
      name: 'nodes 1–100',
      nodes: 100,
      counts: { free: 200, allocated: 100, mig: 0, tainted: 0, faulted: 100 },
    });
    assert.ok(JSON.stringify(big).length < JSON.stringify(uiState(picture(PER_GPU_NODES))).length);
  });

  it('past 2,000 groups puts the rest in one bar, every GPU still counted', () => {
    const p = picture(PER_GPU_NODES + 500);
    p.nodes.forEach((n, i) => (n.group = `rack-${String(i)}`));
    const s = uiState(p);
    assert.ok(s.groups);
    assert.equal(s.groups.length, 2000);
    assert.deepEqual(s.groups.at(-1)?.nodes, 501);
    assert.equal(
      s.groups.reduce((n, g) => n + Object.values(g.counts).reduce((a, b) => a + b, 0), 0),
      (PER_GPU_NODES + 500) * 4,
    );
  });

  it('answers /ui with the page and /ui/state 503 until the fleet has a picture', async () => {
    let answered: { code: number; body: string } | null = null;
    const res = {
      writeHead(code: number) {
        return {
          end(body: string) {
            answered = { code, body };
          },
        };
      },
    };
    const routes = uiRoutes(() => Promise.resolve(null));
    routes['/ui/state']?.({} as never, res as never);
    await until('answered', () => answered !== null);
    assert.deepEqual(answered, { code: 503, body: 'starting\n' });
    routes['/ui']?.({} as never, res as never);
    assert.match((answered as { body: string } | null)?.body ?? '', /<title>fakegpu fleet<\/title>/);
  });

  it('exports each figure per scope, the cluster with an empty name', async () => {
    const reg = new Registry();
    const s = score({
      nodes: [{ metadata: { name: 'n', labels: { [RACK_LABEL]: 'r9' } } }],
      slices: [
        {
          spec: {
            driver: DRIVER_NAME,
            nodeName: 'n',
            pool: { name: 'n' },
            devices: [{ name: 'gpu-0', attributes: { uuid: { string: 'GPU-0' } } }],
          },
        },
      ],
      claims: [],
      pods: [],
    });
    scorecardGauges(reg, () => s);
    const text = await reg.metrics();
    assert.match(text, /^fakegpu_scorecard_gpus\{scope="cluster",name=""\} 1$/m);
    assert.match(text, /^fakegpu_scorecard_gpus_free\{scope="rack",name="r9"\} 1$/m);
    assert.match(text, /^fakegpu_scorecard_fragmentation_ratio\{scope="cluster",name=""\} 0$/m);
  });

  it('waits for a scorecard being worked out at most its wait, then answers the scrape without it', async () => {
    const reg = new Registry();
    new Gauge({ name: 'other', help: 'h', registers: [reg] }).set(7);
    scorecardGauges(reg, () => new Promise(() => undefined), 50);
    const t0 = performance.now();
    const text = await reg.metrics();
    assert.ok(performance.now() - t0 < 5000);
    assert.doesNotMatch(text, /^fakegpu_scorecard_gpus\{/m);
    assert.match(text, /^other 7$/m);
  });
});
