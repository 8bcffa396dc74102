import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { binaryQuantity, mibQuantity } from '../src/k8s/quantity.js';
import { formatSemver, parseLenientVersion } from '../src/k8s/version.js';
import { fullJitter } from '../src/k8s/backoff.js';
import { writtenRef } from '../src/k8s/client.js';

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
