import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { MemorySettler } from '../../src/fleet/settle.js';

describe("the fleet's memory settler", () => {
  function settler(minActivity = 10) {
    let activity = 0;
    let now = 0;
    let collected = 0;
    const s = new MemorySettler({
      activity: () => activity,
      collect: () => {
        collected++;
      },
      minActivity,
      quietMs: 2000,
      now: () => now,
    });
    return {
      s,
      work: (n: number) => (activity += n),
      wait: (ms: number) => (now += ms),
      collected: () => collected,
    };
  }

  it('collects once a burst is followed by a quiet spell, and not again until the next burst', () => {
    const t = settler();
    t.work(500);
    t.s.tick();
    t.wait(1000);
    t.s.tick();
    assert.equal(t.collected(), 0, 'quiet for 1 s only');
    t.wait(1500);
    t.s.tick();
    assert.equal(t.collected(), 1);
    t.wait(10_000);
    t.s.tick();
    assert.equal(t.collected(), 1, 'nothing happened since');
    t.work(500);
    t.s.tick();
    t.wait(2500);
    t.s.tick();
    assert.equal(t.collected(), 2);
  });

  it('waits while work goes on, and skips a quiet spell after too little work', () => {
    const t = settler(1000);
    for (let i = 0; i < 10; i++) {
      t.work(50);
      t.wait(1000);
      t.s.tick();
    }
    assert.equal(t.collected(), 0, 'busy at every look');
    t.wait(5000);
    t.s.tick();
    assert.equal(t.collected(), 0, '500 requests and events are not a burst');
    t.work(600);
    t.s.tick();
    t.wait(5000);
    t.s.tick();
    assert.equal(t.collected(), 1);
  });

  it('counts a trickle of work as quiet: a large cluster always has some', () => {
    const t = settler();
    t.work(500);
    t.s.tick();
    for (let i = 0; i < 6; i++) {
      t.work(3);
      t.wait(500);
      t.s.tick();
    }
    assert.equal(t.collected(), 1);
    for (let i = 0; i < 1000; i++) {
      t.work(3);
      t.wait(500);
      t.s.tick();
    }
    assert.equal(t.collected(), 1, 'a trickle alone is never a burst to collect after');
  });

  it('does nothing without a collection to run', () => {
    const s = new MemorySettler({ activity: () => 1e6, collect: null });
    s.start();
    s.tick();
    s.tick();
    assert.equal(s.collections, 0);
    s.stop();
  });

  it('collects for real and compacts: garbage leaves the heap, and so do the pages live objects were spread over', () => {
    // Its own process, started as the fleet is; an options object passed to gc() collected nothing, and
    // a plain full collection kept fragmented pages.
    const settle = fileURLToPath(new URL('../../src/fleet/settle.js', import.meta.url));
    const script = `
      import v8 from 'node:v8';
      const { memoryReducingGc } = await import(${JSON.stringify(settle)});
      const old = () => v8.getHeapSpaceStatistics().find((s) => s.space_name === 'old_space');
      // Every 20th object lives on, the rest is garbage: the live ones end up on every page.
      globalThis.kept = [];
      let batch = [];
      for (let i = 0; i < 1e6; i++) {
        const o = { s: 'x'.repeat(40) + i, a: [i] };
        if (i % 20 === 0) kept.push(o);
        batch.push(o);
        if (batch.length > 1e5) batch = [];
      }
      batch = null;
      await new Promise((r) => setTimeout(r, 50));
      const before = old();
      memoryReducingGc()();
      const after = old();
      console.log(JSON.stringify({ before: before.space_size, used: after.space_used_size, size: after.space_size }));
    `;
    const r = spawnSync(
      process.execPath,
      ['--expose-gc', '--max-semi-space-size=1', '--input-type=module', '-e', script],
      {
        encoding: 'utf8',
        timeout: 30_000,
      },
    );
    assert.equal(r.status, 0, r.stderr);
    const { before, used, size } = JSON.parse(r.stdout) as { before: number; used: number; size: number };
    // There was something to give back: old space far larger than what lives in it (a plain full
    // collection leaves it so: 85 MiB for 15 MiB live) ...
    assert.ok(before > used * 3, `old space ${before} bytes before, ${used} live`);
    // ... and compacted, what old space keeps is close to what lives in it.
    assert.ok(size < used * 1.5 + 4 * 2 ** 20, `old space ${size} bytes for ${used} live`);
  });

  it('does nothing where gc is not exposed', async () => {
    const { memoryReducingGc } = await import('../../src/fleet/settle.js');
    assert.equal(typeof (globalThis as { gc?: unknown }).gc === 'function', memoryReducingGc() !== null);
  });
});
