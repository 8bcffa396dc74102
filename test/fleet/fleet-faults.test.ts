import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import { DEFAULT_RELEASE, type DriverRelease } from '../../src/model/device/release.js';
import { Fleet } from '../../src/fleet/fleet.js';
import { KWOK_ANNOTATION } from '../../src/kube/kwok.js';
import type { DeviceTaint } from '../../src/kube/types/resource.js';
import { FakeApi } from '../support/fake-api.js';
import { testFleet } from '../support/fleet.js';
import { FakeFaultApi, faultObject as fault } from '../support/fake-faults.js';
import { until } from '../support/http.js';
import type { FleetOptions } from '../../src/fleet/fleet.js';
import { LISTED_NODES } from '../../src/model/fault/status.js';
import { recordingLog } from '../support/log.js';
import { FleetScorecard, type Source } from '../../src/fleet/scorecard.js';
import { score } from '../../src/model/scorecard/score.js';
import type { ResourceSlice } from '../../src/kube/types/resource.js';

const listed = <T>(items: T[]): Source<T> => ({
  start: () => undefined,
  stop: () => undefined,
  snapshot: () => items,
});

/** Faults across the fleet's nodes against in-memory API servers: taints on slices, status, repair. */
const KWOK = { [KWOK_ANNOTATION]: 'fake' };
let fleets: Fleet[] = [];

afterEach(async () => {
  await Promise.all(fleets.map((f) => f.stop()));
  fleets = [];
});

function setup(nodes: number, release: DriverRelease = DEFAULT_RELEASE, extra: Partial<FleetOptions> = {}) {
  const api = new FakeApi();
  for (let i = 0; i < nodes; i++)
    api.putNode(`node-${i}`, { type: 'kwok', rack: i % 2 === 0 ? 'even' : 'odd' }, KWOK);
  const faults = new FakeFaultApi();
  const published: number[] = [];
  let applied = 0;
  const fleet = testFleet(api, {
    release,
    concurrency: 4,
    faults,
    onFaultApplied: (n) => {
      applied += n;
    },
    onFaultPublished: (s) => published.push(s),
    ...extra,
  });
  fleets.push(fleet);
  const taints = (): Map<string, DeviceTaint[]> => {
    const out = new Map<string, DeviceTaint[]>();
    for (const s of api.slices.values())
      for (const d of s.spec.devices ?? []) if (d.taints) out.set(`${s.spec.nodeName}/${d.name}`, d.taints);
    return out;
  };
  const devices = (): string[] =>
    [...api.slices.values()].flatMap((s) =>
      (s.spec.devices ?? []).map((d) => `${s.spec.nodeName}/${d.name}`),
    );
  return { api, faults, fleet, taints, devices, published, applied: () => applied };
}

/** The hits the fleet reported in the fault's status, as node/device. */
function reported(faults: FakeFaultApi, name: string): string[] {
  const o = faults.objects.get(name) as
    { status?: { nodes?: Record<string, { devices: { name: string; publishedAt: string }[] }> } } | undefined;
  return Object.entries(o?.status?.nodes ?? {})
    .flatMap(([n, e]) => e.devices.map((d) => `${n}/${d.name}`))
    .sort();
}

describe('faults on the fleet', () => {
  it('a seeded fraction of GPUs across nodes: exactly those tainted, the status names them, a repair removes them', async () => {
    const s = setup(40);
    await s.fleet.start();
    await until('converged', () => s.fleet.converged() && s.api.slices.size === 40);
    const writes = s.api.count('replaceSlice');
    s.faults.put(
      fault('xid', {
        nodeSelector: { matchLabels: { type: 'kwok' } },
        fraction: '0.1',
        seed: 3,
        fault: { type: 'Xid', xid: 79 },
      }),
    );
    await until('the status', () => reported(s.faults, 'xid').length > 0 && s.fleet.converged());
    await until('every hit reported', () => reported(s.faults, 'xid').length === s.taints().size);
    const tainted = [...s.taints().keys()].sort();
    assert.ok(tainted.length >= 10 && tainted.length <= 60, `${tainted.length} of 320 GPUs`);
    assert.deepEqual(reported(s.faults, 'xid'), tainted);
    for (const t of s.taints().values())
      assert.deepEqual(t, [{ key: 'gpu.nvidia.com/xid', value: '79', effect: 'NoSchedule' }]);
    const nodesHit = new Set(tainted.map((d) => d.split('/')[0])).size;
    assert.equal(s.api.count('replaceSlice') - writes, nodesHit, 'only the faulted nodes are written');
    assert.equal(s.applied(), tainted.length);
    await until('the publish time observed', () => s.published.length === 1);

    s.faults.remove('xid');
    await until('taints gone', () => s.taints().size === 0 && s.fleet.converged());
  });

  for (const release of [DEFAULT_RELEASE, '25.12'] as const)
    it(`the scorecard of a faulted fleet equals score() of its published slices (release ${release})`, async () => {
      const s = setup(6, release);
      await s.fleet.start();
      await until('converged', () => s.fleet.converged() && s.api.slices.size === 6);
      s.faults.put(
        fault('xid', { nodeName: 'node-2', devices: ['gpu-1', 'gpu-4'], fault: { type: 'Xid', xid: 79 } }),
      );
      const changed = (): boolean =>
        [...s.api.slices.values()].some(
          (x) =>
            x.spec.nodeName === 'node-2' &&
            !(x.spec.devices ?? []).some((d) => d.name === 'gpu-1' && !d.taints),
        );
      await until('node-2 published with its fault', () => changed() && s.fleet.converged());
      const sc = new FleetScorecard(s.fleet, { claims: listed([]), pods: listed([]) });
      const got = await sc.current();
      assert.ok(got);
      const want = score({
        nodes: Array.from({ length: 6 }, (_, i) => ({
          metadata: { name: `node-${i}`, labels: { type: 'kwok', rack: i % 2 === 0 ? 'even' : 'odd' } },
        })),
        slices: [...s.api.slices.values()] as ResourceSlice[],
        claims: [],
        pods: [],
      });
      assert.deepEqual(got.scorecard, want);
      // 25.12 leaves failed GPUs out of the slice; the others taint them.
      assert.equal(want.cluster.gpus, release === '25.12' ? 46 : 48);
      assert.equal(want.cluster.tainted, release === '25.12' ? 0 : 2);
      const cells = got.nodes.find((n) => n.name === 'node-2')?.gpus ?? [];
      assert.equal(cells.filter((c) => c === 'faulted').length, release === '25.12' ? 0 : 2);
    });

  it('GPU lost taints the whole node; an unknown device is said in the status message', async () => {
    const s = setup(3);
    await s.fleet.start();
    await until('converged', () => s.fleet.converged() && s.api.slices.size === 3);
    s.faults.put(
      fault('lost', { nodeName: 'node-1', devices: ['gpu-2', 'gpu-9'], fault: { type: 'GpuLost' } }),
    );
    await until('node-1 tainted', () => s.taints().size === 8);
    assert.ok([...s.taints().keys()].every((k) => k.startsWith('node-1/')));
    await until('the status', () => reported(s.faults, 'lost').length === 1);
    const o = s.faults.objects.get('lost') as {
      status: { nodes: Record<string, { message?: string; devices: { taint?: DeviceTaint }[] }> };
    };
    assert.equal(o.status.nodes['node-1']?.message, 'not on this node: gpu-9');
    assert.deepEqual(o.status.nodes['node-1'].devices[0]?.taint, {
      key: 'gpu.nvidia.com/gpu-lost',
      effect: 'NoSchedule',
    });
  });

  it('release 25.12: failed GPUs leave the slice, ignorable XIDs change nothing', async () => {
    const s = setup(2, '25.12');
    await s.fleet.start();
    await until('converged', () => s.fleet.converged() && s.api.slices.size === 2);
    s.faults.put(fault('xid48', { nodeName: 'node-0', indexes: [1], fault: { type: 'Xid', xid: 48 } }));
    s.faults.put(fault('xid13', { nodeName: 'node-0', indexes: [2], fault: { type: 'Xid', xid: 13 } }));
    await until('gpu-1 gone', () => s.devices().filter((d) => d.startsWith('node-0/')).length === 7);
    assert.ok(!s.devices().includes('node-0/gpu-1'));
    assert.equal(s.taints().size, 0);
    await until('the status', () => reported(s.faults, 'xid48').length === 1);
  });

  it('a node that gains the selected label gets the fault; one that loses it is repaired', async () => {
    const s = setup(2);
    await s.fleet.start();
    await until('converged', () => s.fleet.converged() && s.api.slices.size === 2);
    s.faults.put(
      fault('rack', {
        nodeSelector: { matchLabels: { rack: 'broken' } },
        count: 1,
        fault: { type: 'Xid', xid: 94 },
      }),
    );
    s.api.putNode('node-1', { type: 'kwok', rack: 'broken' }, KWOK);
    await until(
      'node-1 tainted',
      () => s.taints().size === 1 && [...s.taints().keys()][0]?.startsWith('node-1/') === true,
    );
    await until('listed and counted', () => reported(s.faults, 'rack').length === 1);
    s.api.putNode('node-1', { type: 'kwok', rack: 'odd' }, KWOK);
    await until('repaired', () => s.taints().size === 0);
    // The fleet's entry and counts go with it.
    const status = () =>
      (s.faults.objects.get('rack') as { status?: { nodes?: object; writers?: object; hits?: number } })
        .status;
    await until(
      'the status emptied',
      () =>
        Object.keys(status()?.nodes ?? {}).length === 0 &&
        Object.keys(status()?.writers ?? {}).length === 0 &&
        status()?.hits === 0,
    );
  });

  it('a fault on more nodes than it lists: its counts over all of them, the first nodes listed, the rest counted', async () => {
    const n = LISTED_NODES + 20;
    const s = setup(n);
    await s.fleet.start();
    await until('converged', () => s.fleet.converged() && s.api.slices.size === n);
    s.faults.put(
      fault('all', {
        nodeSelector: { matchLabels: { type: 'kwok' } },
        count: 2,
        fault: { type: 'Xid', xid: 79 },
      }),
    );
    type Status = {
      nodes?: Record<string, unknown>;
      writers?: Record<string, { nodes: number; devices: number; unlistedNodes?: number }>;
      hits?: number;
      nodesHit?: number;
      unlistedNodes?: number;
    };
    const status = (): Status =>
      (s.faults.objects.get('all') as { status?: Status } | undefined)?.status ?? {};
    await until('the totals', () => status().nodesHit === n && s.fleet.converged(), 60_000);
    assert.equal(s.taints().size, 2 * n);
    assert.deepEqual(status().writers, { 'fleet:all': { nodes: n, devices: 2 * n, unlistedNodes: 20 } });
    assert.deepEqual([status().hits, status().unlistedNodes], [2 * n, 20]);
    assert.equal(Object.keys(status().nodes ?? {}).length, LISTED_NODES);

    s.faults.remove('all');
    await until('taints gone', () => s.taints().size === 0 && s.fleet.converged());
  });

  it('a rejected status patch is tried again later after each failure, up to a cap', async () => {
    const { log, lines } = recordingLog();
    // A thousandth of each ceiling: 2 ms for the first retry, doubling, capped at 60 ms (a minute).
    const s = setup(2, DEFAULT_RELEASE, { log, random: () => 0.001 });
    await s.fleet.start();
    await until('converged', () => s.fleet.converged() && s.api.slices.size === 2);
    s.faults.fail('patchFaultStatus', 8);
    s.faults.put(fault('xid', { nodeName: 'node-0', indexes: [1], fault: { type: 'Xid', xid: 79 } }));
    await until(
      'the status, once the API server takes it',
      () => reported(s.faults, 'xid').length === 1,
      30_000,
    );
    const delays = lines
      .filter((l) => l.msg === 'writing the fault status failed; again later')
      .map((l) => l.retryInMs);
    assert.deepEqual(delays, [2, 4, 8, 16, 32, 60, 60, 60]);
  });
});

describe('a fault naming a node that does not exist', () => {
  it('gets Accepted=False, NodeNotFound, from the fleet', async () => {
    const s = setup(1);
    await s.fleet.start();
    s.faults.put(fault('nowhere', { nodeName: 'node-zz', fault: { type: 'GpuLost' } }));
    await until('the condition', () => {
      const o = s.faults.objects.get('nowhere') as {
        status?: { conditions?: { reason: string; message: string }[] };
      };
      const c = o.status?.conditions?.[0];
      return c?.reason === 'NodeNotFound' && c.message === 'node node-zz does not exist';
    });
  });
});
