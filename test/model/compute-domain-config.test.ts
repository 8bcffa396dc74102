import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decodeComputeDomainConfig } from '../../src/model/opaque-config/compute-domain.js';

const V = 'resource.nvidia.com/v1beta1';

/** The compute-domain driver's opaque configs, decoded strictly with the driver's messages. */
describe('ComputeDomainChannelConfig and ComputeDomainDaemonConfig', () => {
  it('decodes what the controller writes into its claim templates', () => {
    assert.deepEqual(
      decodeComputeDomainConfig({
        apiVersion: V,
        kind: 'ComputeDomainChannelConfig',
        domainID: 'uid-1',
        allocationMode: 'All',
      }),
      { kind: 'ComputeDomainChannelConfig', domainID: 'uid-1', allocationMode: 'All' },
    );
    assert.deepEqual(
      decodeComputeDomainConfig({ apiVersion: V, kind: 'ComputeDomainChannelConfig', domainID: 'uid-1' }),
      { kind: 'ComputeDomainChannelConfig', domainID: 'uid-1', allocationMode: '' },
    );
    assert.deepEqual(
      decodeComputeDomainConfig({ apiVersion: V, kind: 'ComputeDomainDaemonConfig', domainID: 'uid-2' }),
      {
        kind: 'ComputeDomainDaemonConfig',
        domainID: 'uid-2',
      },
    );
  });

  it('refuses each bad config with the driver’s words', () => {
    const bad: [unknown, string][] = [
      [{ apiVersion: V, kind: 'ComputeDomainChannelConfig' }, 'domainID cannot be empty'],
      [{ apiVersion: V, kind: 'ComputeDomainDaemonConfig', domainID: '' }, 'domainID cannot be empty'],
      [
        { apiVersion: V, kind: 'ComputeDomainDaemonConfig', domainID: 'x', allocationMode: 'All' },
        'error decoding config parameters: strict decoding error: unknown field "allocationMode"',
      ],
      [
        { apiVersion: V, kind: 'ComputeDomainChannelConfig', domainID: 7 },
        'error decoding config parameters: json: cannot unmarshal number into Go struct field ComputeDomainChannelConfig.domainID of type string',
      ],
      [
        { apiVersion: V, kind: 'GpuConfig' },
        'error decoding config parameters: no kind "GpuConfig" is registered for version "resource.nvidia.com/v1beta1"',
      ],
      [
        { apiVersion: 'resource.nvidia.com/v1', kind: 'ComputeDomainChannelConfig' },
        'error decoding config parameters: no kind "ComputeDomainChannelConfig" is registered for version "resource.nvidia.com/v1"',
      ],
    ];
    for (const [params, message] of bad) assert.throws(() => decodeComputeDomainConfig(params), { message });
  });

  it("refuses a domainID that is no path segment or no label value, in v0.5.0's words (PR #1368)", () => {
    const rule =
      "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
    const cases: [string, string][] = [
      ['..', `domainID ".." is not a valid single path component: may not be '..'`],
      [
        '../x%y',
        `domainID "../x%y" is not a valid single path component: may not contain '/', may not contain '%'`,
      ],
      ['a b', `domainID must be a valid label value: ${rule}`],
      ['a'.repeat(64), 'domainID must be a valid label value: must be no more than 63 characters'],
      ['-x'.repeat(40), `domainID must be a valid label value: must be no more than 63 characters; ${rule}`],
    ];
    for (const [domainID, message] of cases) {
      for (const kind of ['ComputeDomainChannelConfig', 'ComputeDomainDaemonConfig'])
        assert.throws(() => decodeComputeDomainConfig({ apiVersion: V, kind, domainID }), { message });
      // Releases before v0.5.0 take it as it is.
      assert.equal(
        decodeComputeDomainConfig({ apiVersion: V, kind: 'ComputeDomainDaemonConfig', domainID }, false)
          .domainID,
        domainID,
      );
    }
    const uid = '2b7a7c64-5f3e-4bb4-9a1c-0d3c5d6e7f80';
    assert.equal(
      decodeComputeDomainConfig({ apiVersion: V, kind: 'ComputeDomainDaemonConfig', domainID: uid }).domainID,
      uid,
    );
  });
});
