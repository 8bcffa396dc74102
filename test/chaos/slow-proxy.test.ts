import assert from 'node:assert/strict';
import { connect, createServer, type Server } from 'node:net';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { SlowProxy } from './slow-proxy.js';

/** A server that counts the bytes it is sent. */
async function sink(): Promise<{ server: Server; port: number; got: () => number }> {
  let n = 0;
  const server = createServer((s) => {
    s.on('data', (b: Buffer) => (n += b.length));
    s.on('error', () => undefined);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const a = server.address();
  return { server, port: typeof a === 'object' && a ? a.port : 0, got: () => n };
}

/** Holds the event loop, as a busy process does: timers and socket events fall due together. */
function busy(ms: number): void {
  const end = Date.now() + ms;
  while (Date.now() < end);
}

describe("the chaos suite's slow proxy", () => {
  it('passes what it delays, and drops what a client closed before it fell due, even on a busy loop', async () => {
    const s = await sink();
    // random() = 0: 'slow' delays every chunk 50 ms.
    const proxy = new SlowProxy({ host: '127.0.0.1', port: s.port }, () => 0);
    const port = await proxy.listen();
    try {
      proxy.set('slow');
      const kept = connect(port, '127.0.0.1');
      await new Promise((r) => kept.once('connect', r));
      kept.write('kept');
      await sleep(300);
      assert.equal(s.got(), 4, 'a delayed request arrives');

      const aborted = connect(port, '127.0.0.1');
      await new Promise((r) => aborted.once('connect', r));
      aborted.write('late');
      await sleep(10);
      // The client gives up; its bytes fall due while the proxy's loop is held, beside its close.
      aborted.destroy();
      busy(120);
      await sleep(300);
      assert.equal(s.got(), 4, 'a request whose client closed first never reaches the server');
      kept.destroy();
    } finally {
      proxy.close();
      s.server.close();
    }
  });
});
