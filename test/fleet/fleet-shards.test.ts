import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { pino } from 'pino';
import type { Fleet } from '../../src/fleet/fleet.js';
import { FleetShards } from '../../src/fleet/shards.js';
import { KWOK_ANNOTATION } from '../../src/kube/kwok.js';
import { FakeApi } from '../support/fake-api.js';
import { FakeObjects } from '../support/fake-objects.js';
import { testFleet } from '../support/fleet.js';
import { until } from '../support/http.js';
import { FakeFaultApi, faultObject } from '../support/fake-faults.js';

/**
 * Two fleet replicas sharding forty nodes through Leases in the in-memory stores (short real timers):
 * every node published once, by its shard's holder, and a replica that leaves hands its nodes to the
 * other without a single write (the other already knows their slices).
 */

const NODES = 40;

describe('a sharded fleet', () => {
  const running: { fleet: Fleet; shards: FleetShards }[] = [];
  afterEach(async () => {
    for (const r of running.splice(0)) {
      await r.shards.stop();
      await r.fleet.stop();
    }
  });

  function replica(
    api: FakeApi,
    leases: FakeObjects,
    name: string,
    faults?: FakeFaultApi,
  ): { fleet: Fleet; shards: FleetShards; hashed: Map<string, number> } {
    let n = 0;
    const shards = new FleetShards(
      {
        api: leases,
        namespace: 'fakegpu',
        name: 'fakegpu-fleet',
        shards: 8,
        identity: () => `${name}_${String(n++)}`,
        leaseDurationMs: 600,
        renewDeadlineMs: 400,
        retryPeriodMs: 60,
      },
      pino({ level: 'silent' }),
    );
    // Counts each node's hash: at 100,000 nodes a hash on every ownership check blocks the loop.
    const hashed = new Map<string, number>();
    const shardOf = shards.shardOf.bind(shards);
    shards.shardOf = (node) => {
      hashed.set(node, (hashed.get(node) ?? 0) + 1);
      return shardOf(node);
    };
    const fleet = testFleet(api, { owner: shards, faults });
    const r = { fleet, shards, hashed };
    running.push(r);
    return r;
  }

  it('publishes every node once, each by the replica holding its shard, and hands over without writes', async () => {
    const api = new FakeApi();
    for (let i = 0; i < NODES; i++) api.putNode(`node-${String(i)}`, {}, { [KWOK_ANNOTATION]: 'fake' });
    const leases = new FakeObjects();
    const a = replica(api, leases, 'a');
    const b = replica(api, leases, 'b');
    for (const r of [a, b]) {
      await r.fleet.start();
      r.shards.start(r.fleet);
    }
    await until(
      'both replicas hold shards and every node is published',
      () =>
        a.shards.state().held === 4 &&
        b.shards.state().held === 4 &&
        a.fleet.converged() &&
        b.fleet.converged() &&
        api.slices.size === NODES,
      10_000,
    );
    // A scrape reads the owned count four times: a look at each shard, not at each node.
    let looks = 0;
    const holds = a.shards.holds.bind(a.shards);
    a.shards.holds = (k) => {
      looks++;
      return holds(k);
    };
    a.fleet.snapshot();
    a.shards.holds = holds;
    assert.ok(looks <= 8, `one look per shard, not per node: ${String(looks)}`);
    const owned = [a, b].map((r) => r.fleet.snapshot().owned);
    assert.equal(
      owned.reduce((x, y) => x + y, 0),
      NODES,
      `each node owned once: ${owned.join('+')}`,
    );
    assert.ok(owned.every((x) => x > 0));
    assert.equal(api.count('createSlice'), NODES, 'one create per node, none twice');
    const writes = api.count('createSlice') + api.count('replaceSlice') + api.count('deleteSlice');
    await a.shards.stop();
    await a.fleet.stop();
    running.splice(running.indexOf(a), 1);
    await until('b holds every shard', () => b.shards.state().held === 8 && b.fleet.converged(), 10_000);
    assert.equal(b.fleet.snapshot().owned, NODES);
    assert.equal(
      api.count('createSlice') + api.count('replaceSlice') + api.count('deleteSlice'),
      writes,
      'a handover writes nothing',
    );
    assert.equal(api.slices.size, NODES);
    for (const r of [a, b]) {
      assert.equal(r.hashed.size, NODES);
      assert.deepEqual(
        [...r.hashed].filter(([, times]) => times > 1),
        [],
        'each node hashed once, when it was first seen',
      );
    }
  });

  it("a fault's status: one writer per shard, its counts written by the shard's holder, the same after a handover", async () => {
    const api = new FakeApi();
    for (let i = 0; i < NODES; i++)
      api.putNode(`node-${String(i)}`, { type: 'kwok' }, { [KWOK_ANNOTATION]: 'fake' });
    const leases = new FakeObjects();
    const faults = new FakeFaultApi();
    const a = replica(api, leases, 'a', faults);
    const b = replica(api, leases, 'b', faults);
    for (const r of [a, b]) {
      await r.fleet.start();
      r.shards.start(r.fleet);
    }
    await until(
      'both publish',
      () => a.shards.state().held === 4 && b.shards.state().held === 4 && api.slices.size === NODES,
      10_000,
    );
    faults.put(
      faultObject('xid', {
        nodeSelector: { matchLabels: { type: 'kwok' } },
        fault: { type: 'Xid', xid: 79 },
      }),
    );
    type Status = {
      status?: {
        nodesHit?: number;
        hits?: number;
        writers?: Record<string, { nodes: number; devices: number }>;
      };
    };
    const status = (): Status['status'] => (faults.objects.get('xid') as Status | undefined)?.status;
    const counted = (): number => Object.values(status()?.writers ?? {}).reduce((n, w) => n + w.nodes, 0);
    await until('every node counted once', () => counted() === NODES && status()?.nodesHit === NODES, 10_000);
    const writers = Object.keys(status()?.writers ?? {});
    assert.equal(writers.length, 8, `a writer per shard: ${writers.join(', ')}`);
    assert.ok(writers.every((w) => /#[0-7]$/.test(w)));
    await a.shards.stop();
    await a.fleet.stop();
    running.splice(running.indexOf(a), 1);
    await until('b holds every shard', () => b.shards.state().held === 8 && b.fleet.converged(), 10_000);
    faults.put(
      faultObject('xid', {
        nodeSelector: { matchLabels: { type: 'kwok' } },
        fault: { type: 'Xid', xid: 79 },
      }),
    );
    await sleep(1500);
    assert.equal(counted(), NODES, 'still each node once');
    assert.equal(status()?.nodesHit, NODES);
  });

  it("after replicas or the shard count changed, the old shape's writer entries are removed, so totals count each node once", async () => {
    const api = new FakeApi();
    for (let i = 0; i < NODES; i++)
      api.putNode(`node-${String(i)}`, { type: 'kwok' }, { [KWOK_ANNOTATION]: 'fake' });
    const faults = new FakeFaultApi();
    // Written before: by the single leader (`fleet:all`) and by a fleet of 16 shards (`#12`).
    faults.put({
      ...faultObject('xid', {
        nodeSelector: { matchLabels: { type: 'kwok' } },
        fault: { type: 'Xid', xid: 79 },
      }),
      status: {
        writers: {
          'fleet:all': { nodes: NODES, devices: 8 * NODES },
          'fleet:all#12': { nodes: 3, devices: 24 },
          'node-x': { nodes: 1, devices: 8 },
        },
        nodes: { 'node-0': { devices: [], observedGeneration: 1, message: 'old' } },
      },
    });
    const leases = new FakeObjects();
    const a = replica(api, leases, 'a', faults);
    await a.fleet.start();
    a.shards.start(a.fleet);
    type Status = {
      status?: { nodesHit?: number; writers?: Record<string, { nodes: number }>; nodes?: object };
    };
    const status = (): Status['status'] => (faults.objects.get('xid') as Status | undefined)?.status;
    await until(
      'every node counted once',
      () => a.shards.state().held === 8 && status()?.nodesHit === NODES + 1,
      10_000,
    );
    const writers = Object.keys(status()?.writers ?? {}).sort();
    assert.deepEqual(
      writers.filter((w) => w.startsWith('fleet:')),
      Array.from({ length: 8 }, (_, k) => `fleet:all#${String(k)}`).sort(),
      'only the present shards',
    );
    assert.ok(writers.includes('node-x'), "a plugin's entry is not the fleet's to remove");
  });
});
