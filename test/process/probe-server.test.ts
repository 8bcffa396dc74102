import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { createServer, get as httpGet } from 'node:http';
import { Counter, Gauge, Registry } from 'prom-client';
import { FakegpuError } from '../../src/errors.js';
import { listenOn, serveProbes } from '../../src/process/probe-server.js';
import { boundedStop, nextStopSignal, runUntilStopped } from '../../src/process/shutdown.js';
import { FakeHost, probe as get, takenEndpoint } from '../support/process.js';

const silent = pino({ level: 'silent' });

describe('probe server', () => {
  it('answers /healthz, /readyz and /metrics once started, 503 "starting" before, 404 otherwise', async () => {
    const reg = new Registry();
    new Counter({ name: 'fakegpu_test_total', help: 'a test counter', registers: [reg] }).inc(3);
    let ready = false;
    const s = await serveProbes({
      endpoint: '127.0.0.1:0',
      ready: () => ready,
      notReady: 'publishing',
      metrics: reg,
    });
    try {
      assert.deepEqual(await get(s.port, '/healthz'), {
        status: 503,
        text: 'starting\n',
        type: 'text/plain',
      });
      assert.deepEqual(await get(s.port, '/readyz'), { status: 503, text: 'starting\n', type: 'text/plain' });
      s.started();
      assert.deepEqual(await get(s.port, '/healthz'), { status: 200, text: 'ok\n', type: 'text/plain' });
      assert.deepEqual(await get(s.port, '/readyz'), {
        status: 503,
        text: 'publishing\n',
        type: 'text/plain',
      });
      ready = true;
      assert.deepEqual(await get(s.port, '/readyz'), { status: 200, text: 'ok\n', type: 'text/plain' });
      ready = false;
      assert.equal((await get(s.port, '/readyz')).status, 503);
      const m = await get(s.port, '/metrics');
      assert.equal(m.status, 200);
      assert.equal(m.type, reg.contentType);
      assert.match(m.text, /^fakegpu_test_total 3$/m);
      assert.equal((await get(s.port, '/')).status, 404);
      assert.equal((await get(s.port, '/health')).status, 404);
    } finally {
      await s.close();
    }
  });

  it('on loopback answers only requests for localhost: another Host (DNS rebinding) gets 421', async () => {
    const s = await serveProbes({ endpoint: '127.0.0.1:0', routes: { '/ui/state': (_q, r) => r.end('{}') } });
    s.started();
    const ask = (host: string): Promise<{ status: number; text: string }> =>
      new Promise((resolve, reject) => {
        httpGet({ host: '127.0.0.1', port: s.port, path: '/ui/state', headers: { host } }, (res) => {
          let text = '';
          res.on('data', (c: Buffer) => (text += c.toString()));
          res.on('end', () => {
            resolve({ status: res.statusCode ?? 0, text });
          });
        }).on('error', reject);
      });
    try {
      assert.deepEqual(await ask(`evil.example:${String(s.port)}`), {
        status: 421,
        text: 'this server answers only for localhost\n',
      });
      assert.equal((await ask('evil.example')).status, 421);
      for (const ok of [`127.0.0.1:${String(s.port)}`, `localhost:${String(s.port)}`, '[::1]', '127.0.0.2'])
        assert.deepEqual(await ask(ok), { status: 200, text: '{}' }, ok);
    } finally {
      await s.close();
    }
    const open = await serveProbes({ endpoint: '0.0.0.0:0', routes: { '/x': (_q, r) => r.end('x') } });
    try {
      open.started();
      const r = await new Promise<number>((resolve, reject) => {
        httpGet({ host: '127.0.0.1', port: open.port, path: '/x', headers: { host: '10.0.0.5' } }, (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        }).on('error', reject);
      });
      assert.equal(r, 200, 'a server on all addresses answers by any name (probes come by pod IP)');
    } finally {
      await open.close();
    }
  });

  it('answers a page of its routes, GET only; a page that throws is a 500, and the server lives on', async () => {
    const s = await serveProbes({
      endpoint: '127.0.0.1:0',
      routes: {
        '/page': (_req, res) => {
          res.writeHead(200, { 'content-type': 'text/plain' }).end('page\n');
        },
        '/broken': () => {
          throw new Error('no picture');
        },
      },
    });
    try {
      s.started();
      assert.deepEqual(await get(s.port, '/page'), { status: 200, text: 'page\n', type: 'text/plain' });
      assert.equal((await get(s.port, '/broken')).status, 500);
      assert.equal((await get(s.port, '/healthz')).status, 200);
      const post = await fetch(`http://127.0.0.1:${String(s.port)}/page`, { method: 'POST' });
      assert.equal(post.status, 404);
    } finally {
      await s.close();
    }
  });

  it('is ready by default, and has no /metrics without a registry', async () => {
    const s = await serveProbes({ endpoint: '127.0.0.1:0' });
    try {
      s.started();
      assert.deepEqual(await get(s.port, '/readyz'), { status: 200, text: 'ok\n', type: 'text/plain' });
      assert.equal((await get(s.port, '/metrics')).status, 404);
    } finally {
      await s.close();
    }
  });

  it('a port already in use is one line naming the flag and the endpoint', async () => {
    const taken = await takenEndpoint();
    const endpoint = taken.endpoint;
    try {
      await assert.rejects(serveProbes({ endpoint }), (e: unknown) => {
        assert.ok(e instanceof FakegpuError);
        assert.equal(
          e.message,
          `--http-endpoint: cannot listen on "${endpoint}": the address is already in use (another process listens there)`,
        );
        assert.doesNotMatch(e.message, /\n/);
        return true;
      });
      await assert.rejects(
        serveProbes({ endpoint, flag: '--dcgm-endpoint' }),
        /^FakegpuError: --dcgm-endpoint: /,
      );
    } finally {
      await taken.close();
    }
  });
});

describe('shutdown', () => {
  it('stops on the first of SIGTERM, SIGINT and SIGHUP, and then listens no more', async () => {
    for (const s of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) {
      const host = new FakeHost();
      const next = nextStopSignal(host);
      assert.equal(host.listenerCount(s), 1);
      host.emit(s);
      assert.equal(await next, s);
      for (const other of ['SIGTERM', 'SIGINT', 'SIGHUP']) assert.equal(host.listenerCount(other), 0);
    }
  });

  it('runs the stop on a signal, logs "stopping" with it, and exits with the status the CLI sets', async () => {
    const host = new FakeHost();
    const lines: unknown[] = [];
    const log = pino({ level: 'info' }, { write: (l: string) => lines.push(JSON.parse(l)) });
    let stopped = 0;
    const done = runUntilStopped(
      () =>
        Promise.resolve({
          stop: () => {
            stopped++;
            return Promise.resolve();
          },
        }),
      { log, host },
    );
    await new Promise((r) => setImmediate(r));
    host.emit('SIGTERM');
    await done;
    assert.equal(stopped, 1);
    assert.ok(
      lines.some(
        (l) =>
          typeof l === 'object' &&
          l !== null &&
          'msg' in l &&
          l.msg === 'stopping' &&
          'signal' in l &&
          l.signal === 'SIGTERM',
      ),
    );
    await new Promise((r) => setTimeout(r, 300));
    assert.deepEqual(host.exits, [undefined]);
  });

  it('a stop past its bound exits 1; a start that throws is rethrown', async () => {
    const host = new FakeHost();
    const done = runUntilStopped(() => Promise.resolve({ stop: () => new Promise<void>(() => undefined) }), {
      log: silent,
      host,
      boundMs: 20,
    });
    await new Promise((r) => setImmediate(r));
    host.emit('SIGINT');
    await done;
    assert.deepEqual(host.exits, [1]);
    await assert.rejects(
      runUntilStopped(() => Promise.reject(new FakegpuError('--x', 'bad')), {
        log: silent,
        host: new FakeHost(),
      }),
      /--x: bad/,
    );
    assert.equal(await boundedStop(() => Promise.reject(new Error('boom')), silent, 1000), true);
  });

  it('a promise rejected unhandled is one log line, then the stop runs and the process exits 1', () => {
    const child = join(dirname(fileURLToPath(import.meta.url)), '..', 'support', 'reject-child.js');
    const r = spawnSync(process.execPath, [child], { encoding: 'utf8', timeout: 60_000 });
    const lines = r.stdout
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { msg?: string; err?: string })
      .map((l) => [l.msg, l.err]);
    // One comparison of everything the child did, so that a failure shows all of it.
    assert.deepEqual(
      { lines, stderr: r.stderr, status: r.status, error: r.error?.message },
      {
        lines: [
          ['unhandled rejection', 'the disk is gone'],
          ['stopping after an unhandled rejection', undefined],
          ['stopped', undefined],
        ],
        stderr: '',
        status: 1,
        error: undefined,
      },
    );
  });
});

describe('probe server: scrapes of /metrics, server errors', () => {
  it('/metrics: two scrapes at once, a third 429 with Retry-After; a registry that fails is a 500 and a log line', async () => {
    const reg = new Registry();
    let release: () => void = () => undefined;
    let gate = new Promise<void>((r) => {
      release = r;
    });
    let broken = false;
    new Gauge({
      name: 'fakegpu_test_slow',
      help: 'a gauge read slowly',
      registers: [reg],
      async collect() {
        await gate;
        if (broken) throw new Error('the gauge broke');
        this.set(1);
      },
    });
    const lines: { msg?: string; err?: string }[] = [];
    const log = pino(
      { level: 'info' },
      { write: (l: string) => lines.push(JSON.parse(l) as { msg?: string }) },
    );
    const s = await serveProbes({ endpoint: '127.0.0.1:0', metrics: reg, log });
    try {
      const two = [get(s.port, '/metrics'), get(s.port, '/metrics')];
      while (s.scrapesInFlight() < 2) await new Promise((r) => setTimeout(r, 5));
      const r = await fetch(`http://127.0.0.1:${String(s.port)}/metrics`, {
        signal: AbortSignal.timeout(5000),
      });
      assert.equal(r.status, 429);
      assert.equal(r.headers.get('retry-after'), '5');
      await r.text();
      release();
      for (const m of await Promise.all(two)) assert.match(m.text, /^fakegpu_test_slow 1$/m);
      broken = true;
      gate = Promise.resolve();
      assert.equal((await get(s.port, '/metrics')).status, 500);
      assert.ok(lines.some((l) => l.msg === 'scrape failed' && l.err === 'the gauge broke'));
      assert.equal(s.scrapesInFlight(), 0);
    } finally {
      await s.close();
    }
  });

  it('a server error after listening is a log line, not the end of the process', async () => {
    const lines: { msg?: string; err?: string }[] = [];
    const log = pino(
      { level: 'info' },
      { write: (l: string) => lines.push(JSON.parse(l) as { msg?: string }) },
    );
    const server = createServer();
    await listenOn(server, '127.0.0.1:0', '--http-endpoint', log);
    try {
      // What libuv reports when an accept fails, e.g. with too many open files.
      server.emit('error', new Error('accept EMFILE'));
      assert.ok(lines.some((l) => l.msg === 'HTTP server error' && l.err === 'accept EMFILE'));
    } finally {
      await new Promise((r) => server.close(r));
    }
  });
});
