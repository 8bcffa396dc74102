import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { SliceIndex } from '../../src/fleet/index.js';
import { RateLimiter, SliceWriter } from '../../src/fleet/reconciler.js';
import { nodeSlices } from '../../src/fleet/template.js';
import { ApiError } from '../../src/kube/client.js';
import { KWOK_ANNOTATION } from '../../src/kube/kwok.js';
import { FakeApi } from '../support/fake-api.js';
import { testFleet } from '../support/fleet.js';
import { render } from '../support/render.js';

/**
 * One writer per slice: a fleet that stops leading sends nothing after that, not even the rest of a pass
 * in flight, and a write the server gets late, after another writer's, is refused rather than applied.
 */
describe('the fleet fences its writes', () => {
  it('a pass in flight when the fleet stops sends nothing more, and no queued node starts', async () => {
    const api = new FakeApi();
    for (const n of ['node-0', 'node-1']) api.putNode(n, {}, { [KWOK_ANNOTATION]: 'fake' });
    // Dynamic MIG: nine slices per node, written one after another.
    const f = testFleet(api, { dynamicMig: true, concurrency: 1 });
    api.before('createSlice', () => {
      void f.stop();
    });
    await f.start();
    await sleep(300);
    assert.equal(api.count('createSlice'), 1, 'only the create already sent');
    assert.equal(api.slices.size, 1);
  });

  it('a replace or delete names the version last seen: after another writer, 409, not applied', async () => {
    const api = new FakeApi();
    const [first] = nodeSlices(render('dgx-h100', { node: 'node-0' }).items);
    assert.ok(first);
    const index = new SliceIndex();
    const writer = new SliceWriter(api, index, new RateLimiter(0, 1), { writes: 0, requests: 0 });
    await writer.reconcile('node-0', 'uid-0', first.driver, [first]);
    const [name = ''] = [...api.slices.keys()];
    // Someone else writes it; the fleet's watch has not told it yet, and its key says it must change.
    api.touchSlice(name);
    index.record(name, { ...(index.get(name) ?? assert.fail('not indexed')), key: '' });
    await assert.rejects(writer.reconcile('node-0', 'uid-0', first.driver, [first]), (e: unknown) => {
      assert.ok(e instanceof ApiError && e.code === 409, String(e));
      return true;
    });
    await assert.rejects(writer.reconcile('node-0', 'uid-0', first.driver, []), (e: unknown) => {
      assert.ok(e instanceof ApiError && e.code === 409, String(e));
      return true;
    });
    assert.ok(api.slices.has(name), 'the stale delete was refused');
  });

  it('a create names its slice: a late create by another writer conflicts instead of doubling the pool', async () => {
    const api = new FakeApi();
    const slices = nodeSlices(render('dgx-h100', { node: 'node-0' }).items);
    const driver = slices[0]?.driver ?? assert.fail('no slice');
    const old = new SliceWriter(api, new SliceIndex(), new RateLimiter(0, 1), { writes: 0, requests: 0 });
    await old.reconcile('node-0', 'uid-0', driver, slices);
    const names = [...api.slices.keys()].sort();
    // A new leader that has not seen them yet plans creates too: each lands on the same name, 409.
    const next = new SliceWriter(api, new SliceIndex(), new RateLimiter(0, 1), { writes: 0, requests: 0 });
    await assert.rejects(next.reconcile('node-0', 'uid-0', driver, slices), (e: unknown) => {
      assert.ok(e instanceof ApiError && e.code === 409, String(e));
      return true;
    });
    assert.deepEqual([...api.slices.keys()].sort(), names, 'no second slice in the pool');
    // Shaped as the API server names a generateName: the base, then five of its letters.
    for (const n of names)
      assert.match(n, /^[0-9a-f]{5}-gpu\.nvidia\.com-node-0-[bcdfghjklmnpqrstvwxz2456789]{5}$/);
  });

  it('named slices: every slice of a pool its own name (release 25.12 names carry no index), a long node read back as its own', async () => {
    for (const [node, release] of [
      ['node-0', '25.12'],
      ['gke-prod-cluster-a3-highgpu-pool-1a2b3c4d-x9k2', '0.5'],
    ] as const) {
      const api = new FakeApi();
      const slices = nodeSlices(render('dgx-h100', { node, dynamicMig: true, release }).items);
      assert.ok(slices.length > 1, `${release}: several slices`);
      const driver = slices[0]?.driver ?? assert.fail('no slice');
      const index = new SliceIndex();
      const writer = new SliceWriter(api, index, new RateLimiter(0, 1), { writes: 0, requests: 0 });
      await writer.reconcile(node, 'uid-0', driver, slices);
      assert.equal(api.slices.size, slices.length, `${release}: the whole pool, no 409 among its own`);
      // Its own slices are read back as its own: a second pass at most reorders a 25.12 pool (matched in
      // name order), a third has nothing to write.
      await writer.reconcile(node, 'uid-0', driver, slices);
      const writes = api.count('createSlice') + api.count('replaceSlice') + api.count('deleteSlice');
      await writer.reconcile(node, 'uid-0', driver, slices);
      assert.equal(
        api.count('createSlice') + api.count('replaceSlice') + api.count('deleteSlice'),
        writes,
        `${node}: read back as its own`,
      );
      assert.equal(api.slices.size, slices.length);
    }
  });

  it("stop resolves only once the pass in flight has ended: a leader hands its Lease over after its writes' answers", async () => {
    const api = new FakeApi();
    api.putNode('node-0', {}, { [KWOK_ANNOTATION]: 'fake' });
    const f = testFleet(api, { dynamicMig: true, concurrency: 1 });
    let landed = 0;
    let stopped = 0;
    const create = api.createSlice.bind(api);
    api.createSlice = async (body: string) => {
      if (stopped === 0) void f.stop().then(() => (stopped = performance.now()));
      await sleep(300);
      const r = await create(body);
      landed = performance.now();
      return r;
    };
    await f.start();
    await sleep(600);
    assert.ok(landed > 0 && stopped > 0);
    assert.ok(
      stopped >= landed,
      `stop resolved ${(landed - stopped).toFixed(0)} ms before the create landed`,
    );
  });

  it('each request gets only what is left of the term as its deadline, and none is sent after it', async () => {
    const api = new FakeApi();
    const deadlines: (number | undefined)[] = [];
    const create = api.createSlice.bind(api);
    api.createSlice = (body: string, timeoutMs?: number) => {
      deadlines.push(timeoutMs);
      return create(body);
    };
    let clock = 1000;
    const until = 1250;
    const [first] = nodeSlices(render('dgx-h100', { node: 'node-0' }).items);
    assert.ok(first);
    const writer = new SliceWriter(
      api,
      new SliceIndex(),
      new RateLimiter(0, 1),
      { writes: 0, requests: 0 },
      () => until,
      () => clock,
    );
    await writer.reconcile('node-0', 'uid-0', first.driver, [first]);
    assert.deepEqual(deadlines, [250], 'the term had 250 ms left: the request may take no longer');
    clock = until;
    await assert.rejects(
      writer.reconcile('node-1', 'uid-1', first.driver, [first]),
      /no longer this fleet's/,
    );
    assert.equal(deadlines.length, 1, 'nothing sent once the term is over');
  });

  it('the read of a node taken over waits its turn in the token bucket, and is not sent once fenced', async () => {
    const api = new FakeApi();
    let turns = 0;
    const limiter = new RateLimiter(0, 1);
    limiter.take = () => {
      turns++;
      return Promise.resolve();
    };
    let mine = true;
    const writer = new SliceWriter(api, new SliceIndex(), limiter, { writes: 0, requests: 0 }, () =>
      mine ? Infinity : 0,
    );
    assert.deepEqual(await writer.slicesOf('node-0'), []);
    assert.equal(turns, 1);
    assert.equal(api.count('listSlices'), 1);
    mine = false;
    await assert.rejects(writer.slicesOf('node-0'));
    assert.equal(api.count('listSlices'), 1, 'nothing sent for a node no longer ours');
  });
});
