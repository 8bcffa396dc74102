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

  it('the read of a node taken over waits its turn in the token bucket, and is not sent once fenced', async () => {
    const api = new FakeApi();
    let turns = 0;
    const limiter = new RateLimiter(0, 1);
    limiter.take = () => {
      turns++;
      return Promise.resolve();
    };
    let mine = true;
    const writer = new SliceWriter(api, new SliceIndex(), limiter, { writes: 0, requests: 0 }, () => mine);
    assert.deepEqual(await writer.slicesOf('node-0'), []);
    assert.equal(turns, 1);
    assert.equal(api.count('listSlices'), 1);
    mine = false;
    await assert.rejects(writer.slicesOf('node-0'));
    assert.equal(api.count('listSlices'), 1, 'nothing sent for a node no longer ours');
  });
});
