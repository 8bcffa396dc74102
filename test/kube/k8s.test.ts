import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { binaryQuantity, mibQuantity } from '../../src/kube/types/quantity.js';
import { formatSemver, parseLenientVersion } from '../../src/kube/types/version.js';
import { fullJitter } from '../../src/kube/backoff.js';
import {
  ApiClient,
  ApiError,
  transientListError,
  WATCH_TIMEOUT_S,
  writtenRef,
} from '../../src/kube/client.js';
import { KubeApi, LIST_ATTEMPTS, listPage } from '../../src/kube/api.js';
import { ResumableWatch, type WatchHandlers } from '../../src/kube/watch.js';
import { loopback, until } from '../support/http.js';

describe('quantities', () => {
  it('print as the API server canonicalises BinarySI integers', () => {
    assert.equal(mibQuantity(40960), '40Gi');
    assert.equal(mibQuantity(15360), '15Gi');
    assert.equal(mibQuantity(81559), '81559Mi');
    assert.equal(mibQuantity(284208), '284208Mi');
    assert.equal(binaryQuantity(85520809984n), '81559Mi');
    assert.equal(binaryQuantity(98), '98');
    assert.equal(binaryQuantity(0), '0');
    assert.equal(binaryQuantity(1023), '1023');
    assert.equal(binaryQuantity(1024), '1Ki');
    assert.equal(binaryQuantity(1536), '1536');
  });
});

describe('versions', () => {
  it('normalise like Masterminds semver: leading zeros dropped, missing parts zero', () => {
    const n = (s: string): string => formatSemver(parseLenientVersion(s, 'v'));
    assert.equal(n('580.95.05'), '580.95.5');
    assert.equal(n('580.126.09'), '580.126.9');
    assert.equal(n('8.0'), '8.0.0');
    assert.equal(n('13'), '13.0.0');
  });
  it('reject what is not a version, naming the field', () => {
    assert.throws(() => parseLenientVersion('latest', '--driver-version'), {
      message:
        '--driver-version: "latest" is not a version; expected numbers separated by dots, e.g. "580.126.20"',
    });
  });
});

describe('what a write answered', () => {
  // The head of kube-apiserver 1.37's answer to a ResourceSlice create, as captured from the local cluster.
  const head =
    '{"kind":"ResourceSlice","apiVersion":"resource.k8s.io/v1","metadata":{"name":"00000-gpu.nvidia.com-kwok-gpu-0-cbhxv","generateName":"00000-gpu.nvidia.com-kwok-gpu-0-","uid":"cb988e79-9e54-4b7f-95f8-2614584a0c59","resourceVersion":"22036","generation":1,"creationTimestamp":"2026-11-30T12:42:31Z","managedFields":[{"manager":"fakegpu","operation":"Update"}]},"spec":{"driver":"gpu.nvidia.com","pool":{"name":"kwok-gpu-0","generation":1,"resourceSliceCount":1},"nodeName":"kwok-gpu-0"}}';

  it('reads name and resourceVersion from the head of the server’s JSON', () => {
    assert.deepEqual(writtenRef(head), {
      name: '00000-gpu.nvidia.com-kwok-gpu-0-cbhxv',
      resourceVersion: '22036',
    });
  });

  it('parses the whole answer when its fields come in another order', () => {
    const reordered = JSON.stringify({ metadata: { uid: 'u', resourceVersion: '7', name: 'x' }, kind: 'K' });
    assert.deepEqual(writtenRef(reordered), { name: 'x', resourceVersion: '7' });
  });
});

describe('backoff', () => {
  const p = { baseMs: 100, capMs: 1000 };
  it('draws between 0 and min(cap, base·2^attempt): full jitter', () => {
    const cases: [attempt: number, draw: number, ms: number][] = [
      [1, 0, 0],
      [1, 0.5, 100],
      [2, 0.5, 200],
      [3, 0.999, 799],
      [4, 0.5, 500], // capped
      [5000, 0.5, 500], // no overflow to Infinity or NaN
    ];
    for (const [attempt, draw, ms] of cases)
      assert.equal(
        fullJitter(attempt, p, () => draw),
        ms,
      );
  });
  it('spreads retries that failed together', () => {
    const draws = new Set(Array.from({ length: 100 }, () => fullJitter(3, p)));
    assert.ok(draws.size > 50, `100 nodes retrying drew only ${draws.size} distinct delays`);
  });
});

describe('the API client', () => {
  it('fails a request the server never answers, after its deadline', async () => {
    const s = await loopback(() => undefined);
    try {
      const t0 = Date.now();
      await assert.rejects(new ApiClient(s.kc, { timeoutMs: 150 }).send('GET', '/version'), (e: unknown) => {
        assert.ok(e instanceof ApiError);
        assert.equal(e.code, 0);
        assert.match(e.message, /^GET \/version: no answer within 150 ms$/);
        return true;
      });
      assert.ok(Date.now() - t0 < 2000);
    } finally {
      await s.close();
    }
  });

  it('fails a request whose answer stalls half-way, after its deadline', async () => {
    const s = await loopback((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"kind":');
    });
    try {
      await assert.rejects(new ApiClient(s.kc, { timeoutMs: 150 }).send('GET', '/version'), {
        message: 'GET /version: no answer within 150 ms',
      });
    } finally {
      await s.close();
    }
  });

  it('asks a slice write back as metadata only, and reads the written name and version from it', async () => {
    const seen: string[] = [];
    const s = await loopback((req, res) => {
      seen.push(`${req.method} ${req.headers.accept}`);
      res
        .writeHead(201, { 'content-type': 'application/json' })
        .end(
          '{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"n-gpu.nvidia.com-abcde","generateName":"n-gpu.nvidia.com-","uid":"u","resourceVersion":"42","generation":1}}',
        );
    });
    try {
      const api = new KubeApi(s.kc);
      assert.deepEqual(await api.createSlice('{}'), {
        name: 'n-gpu.nvidia.com-abcde',
        resourceVersion: '42',
      });
      await api.replaceSlice('n-gpu.nvidia.com-abcde', '{}');
      const accept = 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1, application/json';
      assert.deepEqual(seen, [`POST ${accept}`, `PUT ${accept}`]);
    } finally {
      await s.close();
    }
  });

  it('rejects any answer but 2xx with its status', async () => {
    const s = await loopback((req, res) => {
      const code = Number(/\/(\d+)$/.exec(req.url ?? '')?.[1]);
      res.writeHead(code).end(`{"code":${code}}`);
    });
    try {
      const c = new ApiClient(s.kc);
      for (const code of [409, 410, 500])
        await assert.rejects(
          c.send('PUT', `/x/${code}`, '{}'),
          (e: unknown) => e instanceof ApiError && e.code === code,
        );
    } finally {
      await s.close();
    }
  });

  it('reaches an API server at an IPv6 address, as a pod on an IPv6 cluster is told it', async () => {
    const s = await loopback((_req, res) => {
      res.writeHead(200).end('{"major":"1","minor":"37","gitVersion":"v1.37.2"}');
    }, '::1');
    try {
      assert.match(await new ApiClient(s.kc).send('GET', '/version'), /v1\.37\.2/);
    } finally {
      await s.close();
    }
  });

  it('sends a DELETE its body (the preconditions), so the next request on the connection is not garbage', async () => {
    const seen: string[] = [];
    const s = await loopback((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString('utf8')));
      req.on('end', () => {
        seen.push(`${req.method ?? ''} ${body}`);
        res.writeHead(404, { 'content-type': 'application/json' }).end('{"kind":"Status","code":404}');
      });
    });
    try {
      const api = new KubeApi(s.kc);
      for (const name of ['a', 'b', 'c'])
        await assert.rejects(
          api.deleteSlice(name, '7'),
          (e: unknown) => e instanceof ApiError && e.code === 404,
        );
      assert.deepEqual(
        seen,
        ['a', 'b', 'c'].map(
          () => 'DELETE {"apiVersion":"v1","kind":"DeleteOptions","preconditions":{"resourceVersion":"7"}}',
        ),
      );
    } finally {
      await s.close();
    }
  });

  it('a watch stopped while it is still being opened ends quietly, not the process', async () => {
    const s = await loopback(() => undefined);
    try {
      const ended: unknown[] = [];
      const stop = new ApiClient(s.kc).watch('/api/v1/nodes', {}, 'application/json', {
        event: () => undefined,
        done: (e) => ended.push(e),
      });
      stop();
      // The request made after the stop is destroyed; its "socket hang up" must have a listener, or it
      // ends this process (the test runner reports it against this test).
      await sleep(200);
      assert.deepEqual(ended, [], 'a stopped watch reports nothing');
      assert.equal(s.requests.length <= 1, true);
    } finally {
      await s.close();
    }
  });

  it('gives up a watch on which nothing comes', async () => {
    const s = await loopback((_req, res) => {
      res.writeHead(200).flushHeaders();
    });
    try {
      const err = await new Promise((resolve) => {
        new ApiClient(s.kc, { watchIdleMs: 150 }).watch('/api/v1/nodes', {}, 'application/json', {
          event: () => undefined,
          done: resolve,
        });
      });
      assert.ok(err instanceof ApiError);
      assert.match(err.message, /nothing received for 150 ms/);
    } finally {
      await s.close();
    }
  });
});

describe('the resumable watch', () => {
  const line = (type: string, obj: object): string => `${JSON.stringify({ type, object: obj })}\n`;
  const handlers = (): WatchHandlers & { log: string[] } => {
    const log: string[] = [];
    return {
      log,
      event: (type, obj) => log.push(`${type} ${(obj as { metadata: { name: string } }).metadata.name}`),
      expired: () => log.push('expired'),
      failed: (e) => log.push(`failed ${(e as ApiError).code}`),
    };
  };

  it('resumes from the last resourceVersion after the server ends it, asking for a bounded watch', async () => {
    let n = 0;
    const s = await loopback((_req, res) => {
      res.writeHead(200);
      if (n++ === 0)
        res.end(
          line('ADDED', { metadata: { name: 'a', resourceVersion: '5' } }) +
            line('BOOKMARK', { metadata: { resourceVersion: '9' } }),
        );
    });
    const h = handlers();
    const w = new ResumableWatch(s.kc, '/api/v1/nodes', { labelSelector: 'x=y' }, '3', h);
    try {
      await until('the second request', () => s.requests.length === 2);
      const q = (i: number): URLSearchParams =>
        new URL(`http://x${s.requests[i]?.split(' ')[1] ?? ''}`).searchParams;
      assert.equal(q(0).get('resourceVersion'), '3');
      assert.equal(q(1).get('resourceVersion'), '9', 'from the bookmark');
      assert.equal(q(1).get('labelSelector'), 'x=y');
      assert.equal(q(1).get('allowWatchBookmarks'), 'true');
      assert.equal(q(1).get('timeoutSeconds'), String(WATCH_TIMEOUT_S));
      assert.deepEqual(h.log, ['ADDED a']);
    } finally {
      w.stop();
      await s.close();
    }
  });

  it('reports 410 Gone, as a status or as an ERROR event, as expired and does not retry on its own', async () => {
    for (const gone of ['status', 'event']) {
      const s = await loopback((_req, res) => {
        if (gone === 'status') res.writeHead(410).end('{}');
        else res.writeHead(200).end(line('ERROR', { code: 410, metadata: {} }));
      });
      const h = handlers();
      const w = new ResumableWatch(s.kc, '/api/v1/nodes', {}, '3', h, 'application/json', () => 0);
      try {
        await until('expired', () => h.log.includes('expired'));
        await sleep(50);
        assert.deepEqual(h.log, ['expired']);
        assert.equal(s.requests.length, 1);
      } finally {
        w.stop();
        await s.close();
      }
    }
  });

  it('backs off after an ERROR event other than 410, though the stream then ends cleanly', async () => {
    let n = 0;
    const s = await loopback((_req, res) => {
      if (n++ === 0) res.writeHead(200).end(line('ERROR', { code: 500, metadata: {} }));
      else res.writeHead(200).write(line('ADDED', { metadata: { name: 'c', resourceVersion: '4' } }));
    });
    const h = handlers();
    const w = new ResumableWatch(s.kc, '/api/v1/nodes', {}, '3', h, 'application/json', () => 0);
    try {
      await until('the event after the error', () => h.log.includes('ADDED c'));
      assert.deepEqual(h.log, ['failed 500', 'ADDED c']);
    } finally {
      w.stop();
      await s.close();
    }
  });

  it('retries after a server error, and after a silent server, from the same resourceVersion', async () => {
    let n = 0;
    const s = await loopback((_req, res) => {
      n++;
      if (n === 1) res.writeHead(500).end('{}');
      else if (n === 2)
        res.writeHead(200).flushHeaders(); // and nothing more
      else res.writeHead(200).write(line('ADDED', { metadata: { name: 'b', resourceVersion: '8' } }));
    });
    const h = handlers();
    const source = new ApiClient(s.kc, { watchIdleMs: 150 });
    const w = new ResumableWatch(source, '/api/v1/nodes', {}, '3', h, 'application/json', () => 0);
    try {
      await until('the event after two failures', () => h.log.includes('ADDED b'));
      assert.deepEqual(h.log, ['failed 500', 'failed 0', 'ADDED b']);
      assert.ok(s.requests.every((r) => r.includes('resourceVersion=3')));
    } finally {
      w.stop();
      await s.close();
    }
  });
});

describe('a list page the API server cannot serve yet', () => {
  const lagging = new ApiError(
    504,
    'GET /apis/resource.k8s.io/v1/resourceslices?limit=500&continue=x: HTTP 504: {"kind":"Status","message":"Timeout: Too large resource version: 9137, current: 9023","reason":"Timeout","code":504}',
  );
  function sender(answers: (string | ApiError)[]) {
    const calls: string[] = [];
    return {
      calls,
      send: (_m: string, path: string): Promise<string> => {
        calls.push(path);
        const a = answers.shift();
        if (a === undefined) throw new Error('no more answers');
        return a instanceof ApiError ? Promise.reject(a) : Promise.resolve(a);
      },
    };
  }

  it('is asked again after a backoff while the watch cache lags (504 "Too large resource version") or 429', async () => {
    const s = sender([
      lagging,
      new ApiError(429, 'HTTP 429: Too many requests'),
      '{"items":[{"a":1}],"metadata":{"resourceVersion":"9140"}}',
    ]);
    const page = await listPage(
      s,
      '/apis/resource.k8s.io/v1/resourceslices',
      { limit: 500, continue: 'x' },
      'application/json',
      () => 0,
    );
    assert.deepEqual(page, { items: [{ a: 1 }], resourceVersion: '9140', continue: undefined });
    assert.equal(s.calls.length, 3);
    assert.ok(
      s.calls.every((c) => c.includes('continue=x')),
      'the same page each time',
    );
  });

  it('gives up after a bounded number of attempts, and at once on an answer that means no', async () => {
    const s = sender(Array.from({ length: LIST_ATTEMPTS }, () => lagging));
    await assert.rejects(
      listPage(s, '/x', {}, 'application/json', () => 0),
      /Too large resource version/,
    );
    assert.equal(s.calls.length, LIST_ATTEMPTS);
    const gone = sender([new ApiError(410, 'HTTP 410: Expired'), '{"items":[]}']);
    await assert.rejects(
      listPage(gone, '/x', {}, 'application/json', () => 0),
      /410/,
    );
    assert.equal(gone.calls.length, 1);
    assert.equal(transientListError(504, 'Timeout: request did not complete'), false);
  });
});
