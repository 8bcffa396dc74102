import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { ApiClient, ApiError } from '../../src/kube/client.js';
import { decodeObject, decodeWatchEvent, MAX_FRAME, ProtobufError } from '../../src/kube/protobuf.js';
import { REPO_ROOT } from '../../src/process/repo.js';
import { ResumableWatch } from '../../src/kube/watch.js';
import { watchBodyReader } from '../../src/kube/watch-stream.js';
import { loopback, until } from '../support/http.js';

const fixture = (name: string): Buffer =>
  readFileSync(join(REPO_ROOT, 'test', 'fixtures', 'protobuf-watch', name));
const STREAM = 'application/vnd.kubernetes.protobuf;stream=watch';

/** Every event a body gives, fed in the chunks given. */
function events(chunks: Buffer[], contentType = STREAM): [string, unknown][] {
  const got: [string, unknown][] = [];
  const read = watchBodyReader(contentType, (t, o) => got.push([t, o]));
  for (const c of chunks) read(c);
  return got;
}

const meta = (o: unknown): Record<string, unknown> => (o as { metadata: Record<string, unknown> }).metadata;

/** A protobuf writer for what no recording holds: fields in any order, unknown ones, fixed sizes. */
const varint = (n: number): number[] => {
  const out: number[] = [];
  for (; n >= 0x80; n = Math.floor(n / 128)) out.push((n % 128) | 0x80);
  out.push(n);
  return out;
};
const bytes = (no: number, body: Buffer | string): Buffer => {
  const b = typeof body === 'string' ? Buffer.from(body) : body;
  return Buffer.concat([Buffer.from(varint(no * 8 + 2)), Buffer.from(varint(b.length)), b]);
};
const num = (no: number, n: number): Buffer => Buffer.from([...varint(no * 8), ...varint(n)]);
const object = (kind: string, raw: Buffer): Buffer =>
  Buffer.concat([
    Buffer.from('k8s\0', 'latin1'),
    bytes(1, Buffer.concat([bytes(1, 'resource.k8s.io/v1'), bytes(2, kind)])),
    bytes(2, raw),
    bytes(3, ''),
    bytes(4, ''),
  ]);
const frame = (type: string, obj: Buffer): Buffer => {
  const e = Buffer.concat([bytes(1, type), bytes(2, bytes(1, obj))]);
  const len = Buffer.alloc(4);
  len.writeUInt32BE(e.length);
  return Buffer.concat([len, e]);
};

describe('a protobuf watch, as the API server sends it', () => {
  it("reads a real slice watch: each event's type, name, resourceVersion and Node owner", () => {
    const got = events([fixture('slices.watch')]);
    assert.deepEqual(
      got.map(([t, o]) => `${t} ${String(meta(o)['name'])} ${String(meta(o)['resourceVersion'])}`),
      [
        'ADDED 00000-gpu.nvidia.com-kwok-gpu-0-lpvp6 1480',
        'ADDED 00000-gpu.nvidia.com-kwok-gpu-1-jff8v 1755',
        'ADDED 00000-gpu.nvidia.com-kwok-gpu-2-szrq9 1490',
        'BOOKMARK  1792',
        'DELETED 00000-gpu.nvidia.com-kwok-gpu-2-szrq9 1796',
        'BOOKMARK  1807',
        'BOOKMARK  1807',
      ],
    );
    assert.deepEqual(meta(got[0]?.[1])['ownerReferences'], [
      {
        apiVersion: 'v1',
        kind: 'Node',
        name: 'kwok-gpu-0',
        uid: '0caceeb5-eefd-4cc9-a430-761d78f8daf3',
        controller: true,
      },
    ]);
    assert.deepEqual(meta(got[3]?.[1])['annotations'], { 'k8s.io/initial-events-end': 'true' });
  });

  it('gives the same events however the body is cut into chunks', () => {
    const body = fixture('slices.watch');
    const whole = events([body]);
    for (let at = 0; at <= body.length; at += 7)
      assert.deepEqual(events([body.subarray(0, at), body.subarray(at)]), whole, `cut at ${at}`);
    assert.deepEqual(events([...body].map((b) => Buffer.from([b]))), whole, 'one byte a chunk');
  });

  it("reads a real node watch's labels and annotations, and the MODIFIED of a label", () => {
    const got = events([fixture('nodes.watch')]);
    assert.deepEqual(
      got.map(([t]) => t),
      ['ADDED', 'ADDED', 'BOOKMARK', 'MODIFIED', 'BOOKMARK', 'BOOKMARK'],
    );
    const labelled = meta(got[3]?.[1]);
    assert.equal(labelled['name'], 'kwok-gpu-1');
    assert.equal((labelled['labels'] as Record<string, string>)['fakegpu.dev/test'], 'yes');
    assert.equal((labelled['labels'] as Record<string, string>)['type'], 'kwok');
    assert.equal((labelled['annotations'] as Record<string, string>)['kwok.x-k8s.io/node'], 'fake');
  });

  it('reads a 410 inside the stream as a Status with its code', () => {
    assert.deepEqual(events([fixture('expired.watch')]), [
      [
        'ERROR',
        { kind: 'Status', code: 410, reason: 'Expired', message: 'too old resource version: 1 (1533)' },
      ],
    ]);
  });

  it('reads the Status of a refused request (a protobuf body, not JSON)', () => {
    const s = decodeObject(fixture('bad-selector.status'));
    assert.deepEqual(s, {
      kind: 'Status',
      code: 400,
      reason: 'BadRequest',
      message: 'field label not supported for resource.k8s.io/v1, Kind=ResourceSlice: spec.bogus',
    });
  });

  it('skips what it does not read: managedFields (a two-byte tag), fixed-size fields, the spec', () => {
    const objectMeta = Buffer.concat([
      bytes(17, bytes(1, 'fakegpu')),
      Buffer.from([...varint(20 * 8 + 1), 1, 2, 3, 4, 5, 6, 7, 8]),
      Buffer.from([...varint(21 * 8 + 5), 1, 2, 3, 4]),
      num(7, 300),
      bytes(6, '42'),
      bytes(9, num(1, 1_700_000_000)),
      bytes(1, 'n'.repeat(200)),
    ]);
    const slice = Buffer.concat([bytes(2, Buffer.alloc(20_000, 0x41)), bytes(1, objectMeta)]);
    const got = events([frame('MODIFIED', object('ResourceSlice', slice))]);
    assert.deepEqual(got, [
      [
        'MODIFIED',
        {
          metadata: {
            resourceVersion: '42',
            deletionTimestamp: '2023-11-14T22:13:20Z',
            name: 'n'.repeat(200),
          },
        },
      ],
    ]);
  });

  it('refuses a corrupt stream in one line: an oversize frame, an object without its envelope, a cut field', () => {
    const huge = Buffer.alloc(4);
    huge.writeUInt32BE(MAX_FRAME + 1);
    assert.throws(() => events([huge]), /a watch frame of 16777217 bytes \(at most 16777216\)/);
    const bare = Buffer.concat([bytes(1, 'ADDED'), bytes(2, bytes(1, 'not an object'))]);
    assert.throws(() => decodeWatchEvent(bare), /without the k8s protobuf envelope/);
    assert.throws(() => decodeWatchEvent(Buffer.from([0x0a, 0x09, 0x41])), ProtobufError);
    assert.throws(
      () => decodeObject(Buffer.concat([Buffer.from('k8s\0', 'latin1'), bytes(2, ''), bytes(3, 'gzip')])),
      /content encoding gzip/,
    );
  });

  it('still reads a JSON watch, a character cut between chunks included', () => {
    const body = Buffer.from(
      `${JSON.stringify({ type: 'ADDED', object: { metadata: { name: 'gpu-é' } } })}\n`,
    );
    const at = body.indexOf(Buffer.from('é')) + 1;
    assert.deepEqual(events([body.subarray(0, at), body.subarray(at)], 'application/json'), [
      ['ADDED', { metadata: { name: 'gpu-é' } }],
    ]);
  });
});

describe('the API client over a protobuf watch', () => {
  it('streams the events, chunk by chunk, and a refusal comes back as the Status message', async () => {
    const s = await loopback((req, res) => {
      if (req.url?.includes('bogus')) {
        res.writeHead(400, { 'content-type': 'application/vnd.kubernetes.protobuf' });
        res.end(fixture('bad-selector.status'));
        return;
      }
      res.writeHead(200, { 'content-type': STREAM });
      const body = fixture('slices.watch');
      for (let at = 0; at < body.length; at += 1000) res.write(body.subarray(at, at + 1000));
      res.end();
    });
    try {
      const c = new ApiClient(s.kc);
      const got: string[] = [];
      const ended = await new Promise((resolve) => {
        c.watch('/apis/resource.k8s.io/v1/resourceslices', {}, 'application/vnd.kubernetes.protobuf', {
          event: (t) => got.push(t),
          done: resolve,
        });
      });
      assert.equal(ended, null);
      assert.deepEqual(got, ['ADDED', 'ADDED', 'ADDED', 'BOOKMARK', 'DELETED', 'BOOKMARK', 'BOOKMARK']);
      const refused = await new Promise((resolve) => {
        c.watch('/apis/resource.k8s.io/v1/resourceslices', { fieldSelector: 'spec.bogus=1' }, 'x', {
          event: () => undefined,
          done: resolve,
        });
      });
      assert.ok(refused instanceof ApiError);
      assert.equal(refused.code, 400);
      assert.match(refused.message, /HTTP 400: BadRequest: field label not supported .*spec\.bogus$/);
    } finally {
      await s.close();
    }
  });

  it('a resumable watch told 410 in protobuf relists', async () => {
    const s = await loopback((_req, res) => {
      res.writeHead(200, { 'content-type': STREAM });
      res.end(fixture('expired.watch'));
    });
    let expired = 0;
    const w = new ResumableWatch(s.kc, '/apis/resource.k8s.io/v1/resourceslices', {}, '1', {
      event: () => undefined,
      expired: () => expired++,
    });
    try {
      await until('the watch expired', () => expired === 1);
    } finally {
      w.stop();
      await s.close();
    }
  });
});
