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
});
