import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { pino } from 'pino';
import { apiFailure, KubeFaultApi, MERGE_PATCH } from '../../src/kube/gpufault/api.js';
import { GPUFAULTS_PATH, type GpuFault } from '../../src/model/fault/resource.js';
import { nodeStatusPatch } from '../../src/model/fault/status.js';
import { FaultWatcher, type FaultWatcherOptions } from '../../src/kube/gpufault/watcher.js';
import { ApiClient, ApiError } from '../../src/kube/client.js';
import { FakeFaultApi } from '../support/fake-faults.js';
import { loopback, until } from '../support/http.js';

const good = (name: string, extra: object = {}): Record<string, unknown> => ({
  apiVersion: 'fakegpu.dev/v1alpha1',
  kind: 'GpuFault',
  metadata: { name },
  spec: { nodeName: 'n1', fault: { type: 'Xid', xid: 79 }, ...extra },
});

describe('the GpuFault API adapter', () => {
  it('lists, creates, deletes, patches the status as a merge patch, and watches, by the CRD’s path', async () => {
    const seen: { line: string; type?: string; body: string }[] = [];
    const s = await loopback((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        seen.push({ line: `${req.method ?? ''} ${req.url ?? ''}`, type: req.headers['content-type'], body });
        if (req.method === 'GET' && req.url?.includes('watch=true')) {
          res.writeHead(200).end(`${JSON.stringify({ type: 'ADDED', object: good('w') })}\n`);
          return;
        }
        if (req.method === 'GET') {
          res.writeHead(200).end(JSON.stringify({ items: [good('a')], metadata: { resourceVersion: '7' } }));
          return;
        }
        res
          .writeHead(req.method === 'POST' ? 201 : 200)
          .end(
            '{"kind":"GpuFault","apiVersion":"fakegpu.dev/v1alpha1","metadata":{"name":"xid-79-n1-abcde","resourceVersion":"8"}}',
          );
      });
    });
    try {
      const api = new KubeFaultApi(new ApiClient(s.kc));
      const page = await api.listFaults({ limit: 500 });
      assert.deepEqual(page, { items: [good('a')], resourceVersion: '7', continue: undefined });
      const created = await api.createFault({
        apiVersion: 'fakegpu.dev/v1alpha1',
        kind: 'GpuFault',
        metadata: { generateName: 'xid-79-n1-' },
        spec: { nodeName: 'n1', fault: { type: 'Xid', xid: 79 } },
      });
      assert.equal(created.name, 'xid-79-n1-abcde');
      await api.deleteFault('f');
      await api.patchFaultStatus('f', nodeStatusPatch('n1', null));
      const events: string[] = [];
      const stop = api.watch(GPUFAULTS_PATH, { resourceVersion: '7' }, 'application/json', {
        event: (type) => events.push(type),
        done: () => undefined,
      });
      await until('the watch event', () => events.length === 1);
      stop();
      assert.deepEqual(
        seen.map((x) => x.line.replace(/\?.*watch=true.*/, '?watch')),
        [
          `GET ${GPUFAULTS_PATH}?limit=500`,
          `POST ${GPUFAULTS_PATH}`,
          `DELETE ${GPUFAULTS_PATH}/f`,
          `PATCH ${GPUFAULTS_PATH}/f/status`,
          `GET ${GPUFAULTS_PATH}?watch`,
        ],
      );
      const [, post, del, patch] = seen;
      assert.ok(post && del && patch);
      assert.equal(post.type, 'application/json');
      const sent = JSON.parse(post.body) as { metadata: { generateName: string } };
      assert.equal(sent.metadata.generateName, 'xid-79-n1-');
      assert.equal(patch.type, MERGE_PATCH);
      assert.deepEqual(JSON.parse(patch.body), { status: { nodes: { n1: null }, writers: { n1: null } } });
      assert.equal(del.type, undefined, 'no body, no content type');
    } finally {
      await s.close();
    }
  });

  it('words an API failure as the API server’s own message, in one line', () => {
    const status = JSON.stringify({
      kind: 'Status',
      status: 'Failure',
      message:
        'GpuFault.fakegpu.dev "f" is invalid: spec: Invalid value: "object": give exactly one of nodeName and nodeSelector',
      code: 422,
    });
    assert.equal(
      apiFailure(new ApiError(422, `POST /apis/x: HTTP 422: ${status}`)),
      'HTTP 422: GpuFault.fakegpu.dev "f" is invalid: spec: Invalid value: "object": give exactly one of nodeName and nodeSelector',
    );
    // The client keeps 500 bytes of the body: a message cut there still reads.
    assert.equal(
      apiFailure(new ApiError(422, 'POST /x: HTTP 422: {"message":"cut \\"here')),
      'HTTP 422: cut "here',
    );
    assert.equal(
      apiFailure(new ApiError(0, 'GET /x: no answer within 10 ms')),
      'GET /x: no answer within 10 ms',
    );
    assert.equal(
      apiFailure(new Error('connect ECONNREFUSED 127.0.0.1:6443\n  at …')),
      'connect ECONNREFUSED 127.0.0.1:6443',
    );
  });
});

/** A watcher over the fake, recording what it reports. */
function watcher(
  api: FakeFaultApi,
  o: Partial<FaultWatcherOptions> = {},
): {
  w: FaultWatcher;
  changes: string[][];
  invalid: string[];
  statuses: string[];
  logs: string[];
} {
  const changes: string[][] = [];
  const invalid: string[] = [];
  const statuses: string[] = [];
  const logs: string[] = [];
  const w = new FaultWatcher({
    api,
    onChange: (fs: GpuFault[]) => changes.push(fs.map((f) => f.metadata.name)),
    onInvalid: (name, why) => invalid.push(`${name}: ${why}`),
    onStatus: (f) => statuses.push(f.metadata.name),
    log: pino({ level: 'info' }, { write: (l: string) => logs.push(l) }),
    debounceMs: 20,
    random: () => 0,
    ...o,
  });
  w.start();
  return { w, changes, invalid, statuses, logs };
}

describe('the fault watcher', () => {
  it('reports the faults after the first list (none too), once per burst of changes, not for a status write', async () => {
    const api = new FakeFaultApi();
    const t = watcher(api);
    try {
      await until('the first report', () => t.changes.length === 1);
      assert.deepEqual(t.changes, [[]]);
      api.put(good('b'));
      api.put(good('a'));
      await until('the burst', () => t.changes.length === 2);
      await sleep(60);
      assert.deepEqual(t.changes, [[], ['a', 'b']], 'two creates, one report');
      await api.patchFaultStatus('a', nodeStatusPatch('n1', { devices: [], observedGeneration: 1 }));
      await until('the status event', () => t.statuses.length === 1);
      await sleep(60);
      assert.equal(t.changes.length, 2, 'a status write is no change');
      assert.deepEqual(t.statuses, ['a']);
      assert.deepEqual(
        t.w.current().map((f) => f.status?.nodes?.['n1']?.observedGeneration),
        [1, undefined],
        'the stored object has the new status',
      );
      api.remove('b');
      await until('the delete', () => t.changes.length === 3);
      assert.deepEqual(t.changes[2], ['a']);
    } finally {
      t.w.stop();
    }
  });

  it('reports an invalid fault once (not again after a status write), ignores it, and takes it once fixed', async () => {
    const api = new FakeFaultApi();
    api.put(good('ok'));
    api.put(good('bad', { fault: { type: 'Xid', xid: 0 } }));
    const t = watcher(api);
    try {
      await until('the first report', () => t.changes.length === 1);
      assert.deepEqual(t.changes, [['ok']]);
      assert.deepEqual(t.invalid, ['bad: spec.fault.xid: Too small: expected number to be >=1 (got 0)']);
      await api.patchFaultStatus('bad', { status: { hits: 0 } });
      await sleep(60);
      assert.equal(t.invalid.length, 1, 'reported once');
      assert.deepEqual(t.logs.filter((l) => l.includes('GpuFault ignored')).length, 1, 'logged once');
      // A looser CRD would let the spec change: the new generation is read again.
      api.put(good('bad'));
      await until('the fixed fault', () => t.changes.length === 2);
      assert.deepEqual(t.changes[1], ['bad', 'ok']);
      // Valid, then invalid: dropped.
      api.put(good('ok', { fault: { type: 'Xid' } }));
      await until('the fault dropped', () => t.changes.length === 3);
      assert.deepEqual(t.changes[2], ['bad']);
      assert.equal(
        t.invalid[1],
        'ok: spec.fault.xid: xid is required with type Xid and allowed only with it (got nothing)',
      );
    } finally {
      t.w.stop();
    }
  });

  it('relists after 410 Gone and goes on from the new list', async () => {
    const api = new FakeFaultApi();
    api.put(good('a'));
    const t = watcher(api);
    try {
      await until('the first report', () => t.changes.length === 1);
      await until('the watch', () => api.openWatches === 1);
      api.expire();
      api.put(good('b'));
      await until('b after the relist', () => t.changes.at(-1)?.join() === 'a,b');
      assert.equal(api.count('listFaults'), 2);
      api.put(good('c'));
      await until('c through the new watch', () => t.changes.at(-1)?.join() === 'a,b,c');
    } finally {
      t.w.stop();
    }
  });

  it('without the CRD, reports no faults once, logs once and looks again slowly; reads the faults once it is installed', async () => {
    const api = new FakeFaultApi();
    api.installed = false;
    const t = watcher(api, { absentRetryMs: 40 });
    try {
      await until('three tries', () => api.count('listFaults') >= 3);
      const absent = t.logs.filter((l) => l.includes('GpuFault CRD not installed'));
      assert.equal(absent.length, 1, 'logged once');
      assert.deepEqual(t.changes, [[]], 'reported once, as a first list: no faults');
      api.installed = true;
      api.put(good('a'));
      await until('the fault', () => t.changes.length === 2);
      assert.deepEqual(t.changes, [[], ['a']]);
      assert.ok(t.logs.some((l) => l.includes('GpuFault CRD found')));
    } finally {
      t.w.stop();
    }
  });

  it('forgets every fault when the CRD is deleted under it, and waits for it again', async () => {
    const api = new FakeFaultApi();
    api.put(good('a'));
    const t = watcher(api, { absentRetryMs: 40 });
    try {
      await until('the first report', () => t.changes.length === 1);
      await until('the watch', () => api.openWatches === 1);
      api.uninstall();
      await until('the faults gone', () => t.changes.at(-1)?.length === 0);
      await until('a look for the CRD', () => t.logs.some((l) => l.includes('GpuFault CRD not installed')));
      api.installed = true;
      api.put(good('b'));
      await until('b', () => t.changes.at(-1)?.join() === 'b');
    } finally {
      t.w.stop();
    }
  });

  it('retries a failed list with backoff', async () => {
    const api = new FakeFaultApi();
    api.fail('listFaults', 2);
    api.put(good('a'));
    const t = watcher(api);
    try {
      await until('the fault', () => t.changes.length === 1);
      assert.equal(api.count('listFaults'), 3);
      assert.equal(t.logs.filter((l) => l.includes('listing GpuFaults failed')).length, 2);
    } finally {
      t.w.stop();
    }
  });

  it('reports again when a fault starts and when it is repaired, without an event', async () => {
    const api = new FakeFaultApi();
    const iso = (ms: number): string => new Date(ms).toISOString();
    const now = Date.now();
    api.put(good('a', { start: iso(now + 150), repair: iso(now + 300) }));
    const t = watcher(api);
    try {
      await until('the first report', () => t.changes.length === 1);
      await until('the start', () => t.changes.length === 2, 2000);
      assert.ok(Date.now() >= now + 150);
      await until('the repair', () => t.changes.length === 3, 2000);
      assert.ok(Date.now() >= now + 300);
      await sleep(100);
      assert.equal(t.changes.length, 3, 'nothing after the repair');
      assert.equal(api.count('listFaults'), 1);
    } finally {
      t.w.stop();
    }
  });

  it('stops: no report after stop, no watch left open', async () => {
    const api = new FakeFaultApi();
    const t = watcher(api);
    await until('the first report', () => t.changes.length === 1);
    await until('the watch', () => api.openWatches === 1);
    t.w.stop();
    api.put(good('a'));
    await sleep(60);
    assert.equal(api.openWatches, 0);
    assert.deepEqual(t.changes, [[]]);
  });
});
