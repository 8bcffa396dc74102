import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { request, type IncomingMessage } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { pino } from 'pino';
import { DcgmExporter } from '../../src/model/dcgm/exporter.js';
import { serveDcgm, type DcgmServer } from '../../src/process/dcgm-server.js';
import { RETRY_AFTER_S } from '../../src/process/scrape-stream.js';
import { syntheticFleet } from '../support/dcgm-fleet.js';

/**
 * Scrapes of a large fleet's GPU metrics against the real HTTP server on loopback: many at once, one
 * that never reads, one that leaves half-way, one that reads slowly; what the server holds meanwhile.
 */

/** 1,600 nodes, 12,800 GPUs (some MIG, some held by pods): about 78 MiB of text per scrape. */
const NODES = 1600;
const { nodes, attribution } = syntheticFleet(NODES);
// A still clock: every scrape is the same text (energy counters do not move), so each can be checked.
const exporter = new DcgmExporter({ now: () => 0 });
const full = exporter.render(nodes, attribution);
const FULL_SHA = createHash('sha256').update(full).digest('hex');
const FULL_BYTES = Buffer.byteLength(full);

const lines: { msg?: string }[] = [];
const log = pino({ level: 'info' }, { write: (l: string) => lines.push(JSON.parse(l) as { msg?: string }) });

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** A GET whose response is handed over at its head, unread: the caller decides how it is read. */
function get(port: number): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    request({ host: '127.0.0.1', port, path: '/metrics', agent: false }, resolve).on('error', reject).end();
  });
}

/** Reads the body to its end: its length and hash, or how it ended early. */
function drain(res: IncomingMessage): Promise<{ bytes: number; sha: string; cut: boolean }> {
  return new Promise((resolve) => {
    const h = createHash('sha256');
    let bytes = 0;
    res.on('data', (b: Buffer) => {
      bytes += b.length;
      h.update(b);
    });
    res.on('end', () => {
      resolve({ bytes, sha: h.digest('hex'), cut: false });
    });
    res.on('error', () => {
      resolve({ bytes, sha: '', cut: true });
    });
    res.on('aborted', () => {
      resolve({ bytes, sha: '', cut: true });
    });
  });
}

async function until(what: string, check: () => boolean, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe(`scrapes of ${String(NODES)} nodes' GPU metrics: concurrent, slow, abandoned`, () => {
  let server: DcgmServer;
  before(async () => {
    server = await serveDcgm('127.0.0.1:0', () => exporter.exposition(nodes, attribution), log, {
      limits: { maxConcurrent: 2, stallTimeoutMs: 500 },
    });
  });
  after(async () => {
    await server.close();
  });

  it('two at once get the whole text, byte for byte; four more meanwhile get 429 with Retry-After', async () => {
    const first = await Promise.all([get(server.port), get(server.port)]);
    assert.deepEqual(
      first.map((r) => r.statusCode),
      [200, 200],
    );
    const more = await Promise.all([1, 2, 3, 4].map(() => get(server.port)));
    for (const r of more) {
      assert.equal(r.statusCode, 429);
      assert.equal(r.headers['retry-after'], String(RETRY_AFTER_S));
      r.resume();
    }
    const bodies = await Promise.all(first.map(drain));
    for (const b of bodies) assert.deepEqual(b, { bytes: FULL_BYTES, sha: FULL_SHA, cut: false });
    await until('no scrape in flight', () => server.scrapesInFlight() === 0);
    assert.equal((await drain(await get(server.port))).sha, FULL_SHA, 'a slot is free again');
  });

  it('a client that reads nothing is cut after the stall timeout, its slot freed', async () => {
    const cutBefore = lines.filter(
      (l) => l.msg === 'scrape client took nothing in time; response cut',
    ).length;
    const res = await get(server.port);
    res.pause();
    const t0 = Date.now();
    await until('the stalled scrape cut', () => server.scrapesInFlight() === 0);
    const tookMs = Date.now() - t0;
    assert.ok(tookMs < 15_000, `cut after ${String(tookMs)} ms`);
    const cut = lines.filter((l) => l.msg === 'scrape client took nothing in time; response cut').length;
    assert.equal(cut, cutBefore + 1);
    const body = await drain(res.resume());
    assert.ok(body.cut || body.bytes < FULL_BYTES, 'the body is short');
  });

  it('two clients that take a little now and then are cut at the overall deadline, /metrics open again', async () => {
    const slow = await serveDcgm('127.0.0.1:0', () => exporter.exposition(nodes, attribution), log, {
      limits: { maxConcurrent: 2, stallTimeoutMs: 5000, deadlineMs: 1500 },
    });
    try {
      const before = lines.filter((l) => l.msg === 'scrape not taken whole in time; response cut').length;
      const both = [await get(slow.port), await get(slow.port)];
      // Each takes a chunk every 200 ms: never stalled for the 5 s stall timeout.
      for (const res of both)
        res.on('data', () => {
          res.pause();
          setTimeout(() => res.resume(), 200);
        });
      const third = await get(slow.port);
      assert.equal(third.statusCode, 429, 'both slots held');
      third.resume();
      await until('both cut at the deadline', () => slow.scrapesInFlight() === 0, 10_000);
      const cut = lines.filter((l) => l.msg === 'scrape not taken whole in time; response cut').length;
      assert.equal(cut, before + 2);
      // What the kernel still holds of the cut bodies is not read at 200 ms a chunk.
      for (const res of both) res.destroy();
      const next = await get(slow.port);
      assert.equal(next.statusCode, 200, 'a slot is free again');
      next.destroy();
    } finally {
      await slow.close();
    }
  });

  it('a client that leaves mid-body frees its scrape at once, not after a timeout', async () => {
    const res = await get(server.port);
    await new Promise<void>((resolve) => {
      let bytes = 0;
      res.on('data', (b: Buffer) => {
        bytes += b.length;
        if (bytes < 1 << 20) return;
        res.destroy();
        resolve();
      });
    });
    // Well before the 500 ms stall timeout could have freed it: the close itself ends the scrape.
    const t0 = Date.now();
    await until('the abandoned scrape freed', () => server.scrapesInFlight() === 0, 400);
    assert.ok(Date.now() - t0 < 400);
  });

  it("a slow reader's scrape holds far less heap than its text", async () => {
    gc();
    const base = process.memoryUsage().heapUsed;
    let peak = 0;
    const res = await get(server.port);
    const body = new Promise<{ bytes: number; sha: string }>((resolve) => {
      const h = createHash('sha256');
      let bytes = 0;
      let sinceSample = 0;
      res.on('data', (b: Buffer) => {
        bytes += b.length;
        sinceSample += b.length;
        h.update(b);
        if (sinceSample < 4 << 20) return;
        // Every 4 MiB: pause a while (the server waits on drain) and weigh what is live.
        sinceSample = 0;
        res.pause();
        setTimeout(() => {
          gc();
          peak = Math.max(peak, process.memoryUsage().heapUsed - base);
          res.resume();
        }, 20);
      });
      res.on('end', () => {
        resolve({ bytes, sha: h.digest('hex') });
      });
    });
    assert.deepEqual(await body, { bytes: FULL_BYTES, sha: FULL_SHA });
    // What a scrape keeps is each row's label text and values, about a twelfth of its text (6 MiB here).
    // A quarter leaves room for the sockets' buffers and a collector's timing; keeping every row as
    // objects, as the renderer before did, grew it by 30 MiB, and the text itself would be all of it.
    assert.ok(
      peak < FULL_BYTES / 4,
      `heap grew ${String(Math.round(peak / 2 ** 20))} MiB for ${String(Math.round(FULL_BYTES / 2 ** 20))} MiB of text`,
    );
  });

  it('the event loop is never held long while a scrape is made and sent', async () => {
    const delay = monitorEventLoopDelay({ resolution: 5 });
    delay.enable();
    const body = await drain(await get(server.port));
    delay.disable();
    assert.deepEqual(body, { bytes: FULL_BYTES, sha: FULL_SHA, cut: false });
    const maxMs = delay.max / 1e6;
    // A piece is 64 rows walked or 64 KiB written, a few milliseconds; the rest is the collector's
    // pauses and a loaded machine's scheduling. Walking every node at once, as
    // the renderer before did, held it over 500 ms here.
    assert.ok(maxMs < 150, `the event loop was held ${String(Math.round(maxMs))} ms`);
  });
});
