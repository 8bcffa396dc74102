import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { binaryQuantity, mibQuantity } from '../src/k8s/quantity.js';
import { formatSemver, parseLenientVersion } from '../src/k8s/version.js';

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
