import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decodeConfig } from '../../src/model/opaque-config/nvidia.js';

const on = { TimeSlicingSettings: true, MPSSupport: true };
const off = { TimeSlicingSettings: false, MPSSupport: false };
const gpu = (sharing: unknown): unknown => ({
  apiVersion: 'resource.nvidia.com/v1beta1',
  kind: 'GpuConfig',
  sharing,
});

describe("NVIDIA's opaque config API", () => {
  it('decodes time-slicing with its default interval', () => {
    assert.deepEqual(decodeConfig(gpu({ strategy: 'TimeSlicing' }), on), {
      kind: 'GpuConfig',
      sharing: { strategy: 'TimeSlicing', timeSlicingConfig: { interval: 'Default' } },
    });
    assert.deepEqual(
      decodeConfig(gpu({ strategy: 'TimeSlicing', timeSlicingConfig: { interval: 'Long' } }), on).sharing,
      {
        strategy: 'TimeSlicing',
        timeSlicingConfig: { interval: 'Long' },
      },
    );
  });

  it('decodes MPS and normalises memory limits to MiB', () => {
    const c = decodeConfig(
      gpu({
        strategy: 'MPS',
        mpsConfig: {
          defaultActiveThreadPercentage: 50,
          defaultPinnedDeviceMemoryLimit: '2Gi',
          defaultPerDevicePinnedMemoryLimit: { '0': '512Mi' },
        },
      }),
      on,
    );
    assert.deepEqual(c.sharing?.mpsConfig, {
      defaultActiveThreadPercentage: 50,
      defaultPinnedDeviceMemoryLimit: '2048M',
      defaultPerDevicePinnedMemoryLimit: { '0': '512M' },
    });
    assert.deepEqual(
      decodeConfig({ apiVersion: 'resource.nvidia.com/v1beta1', kind: 'MigDeviceConfig' }, off),
      { kind: 'MigDeviceConfig' },
    );
  });

  const bad: [string, unknown, string, typeof on?][] = [
    [
      'unknown strategy',
      gpu({ strategy: 'Sometimes' }),
      'unknown GPU sharing strategy: Sometimes, supported GPU sharing strategies: TimeSlicing, MPS',
    ],
    [
      'bad interval',
      gpu({ strategy: 'TimeSlicing', timeSlicingConfig: { interval: 'Forever' } }),
      'unknown time-slice interval: Forever, supported time-slice intervals: Default, Short, Medium, Long',
    ],
    [
      'negative threads',
      gpu({ strategy: 'MPS', mpsConfig: { defaultActiveThreadPercentage: -1 } }),
      'active thread percentage must not be negative',
    ],
    [
      'too many threads',
      gpu({ strategy: 'MPS', mpsConfig: { defaultActiveThreadPercentage: 101 } }),
      'active thread percentage must not be greater than 100',
    ],
    [
      'MPS config with time-slicing',
      gpu({ strategy: 'TimeSlicing', mpsConfig: {} }),
      "cannot use MpsConfig with the 'TimeSlicing' strategy",
    ],
    [
      'time-slicing config with MPS',
      gpu({ strategy: 'MPS', timeSlicingConfig: {} }),
      "cannot use TimeSlicingConfig with the 'MPS' strategy",
    ],
    [
      'limit too low',
      gpu({ strategy: 'MPS', mpsConfig: { defaultPinnedDeviceMemoryLimit: '1Ki' } }),
      'invalid limit: value set too low: "1Ki": must be at least 1Mi',
    ],
    [
      'unknown field',
      gpu({ strategy: 'MPS', colour: 'green' }),
      'error decoding config parameters: strict decoding error: unknown field "sharing.colour"',
    ],
    [
      'unknown kind',
      { apiVersion: 'resource.nvidia.com/v1beta1', kind: 'TpuConfig' },
      'error decoding config parameters: no kind "TpuConfig" is registered for version "resource.nvidia.com/v1beta1"',
    ],
    [
      'time-slicing on MIG',
      {
        apiVersion: 'resource.nvidia.com/v1beta1',
        kind: 'MigDeviceConfig',
        sharing: { strategy: 'TimeSlicing', timeSlicingConfig: {} },
      },
      'error decoding config parameters: strict decoding error: unknown field "sharing.timeSlicingConfig"',
    ],
    [
      'gate off',
      gpu({ strategy: 'TimeSlicing' }),
      '"TimeSlicing" is selected as the GPU sharing strategy, but the "TimeSlicingSettings" feature gate is not enabled',
      off,
    ],
    [
      'MPS gate off',
      gpu({ strategy: 'MPS' }),
      '"MPS" is selected as the GPU sharing strategy, but the "MPSSupport" feature gate is not enabled',
      off,
    ],
  ];
  for (const [name, input, message, gates] of bad) {
    it(`rejects ${name} with the driver's words`, () => {
      assert.throws(() => decodeConfig(input, gates ?? on), { message });
    });
  }
});
