import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { parseGates } from '../src/cli/plugin.js';
import { clusterRestart } from '../src/cluster/cluster.js';
import { splitEndpoint } from '../src/net/endpoint.js';
import { slicesFromFile } from '../src/plugin/run.js';

/** The plugin's and the cluster's own inputs: each refused with the field, the value and what is allowed. */
describe('plugin and cluster inputs', () => {
  const dir = mkdtempSync(join(tmpdir(), 'fakegpu-input-'));
  const file = (name: string, text: string): string => {
    const p = join(dir, name);
    writeFileSync(p, text);
    return p;
  };

  it('--feature-gates: NVIDIA gate names with true or false', () => {
    assert.deepEqual(parseGates('TimeSlicingSettings=true, MPSSupport=false'), {
      TimeSlicingSettings: true,
      MPSSupport: false,
    });
    assert.throws(() => parseGates('Turbo=true'), {
      message: '--feature-gates: unknown feature gate "Turbo"; fakegpu knows TimeSlicingSettings, MPSSupport',
    });
    assert.throws(() => parseGates('MPSSupport=yes'), {
      message: '--feature-gates: "MPSSupport=yes": the value must be true or false',
    });
  });

  it('--http-endpoint: host:port', () => {
    assert.deepEqual(splitEndpoint(':51516'), ['0.0.0.0', 51516]);
    assert.throws(() => splitEndpoint('localhost'), {
      message: '--http-endpoint: "localhost" is not host:port, e.g. "127.0.0.1:51516" or ":51516"',
    });
  });

  it('--slices-file: captured slices republished for this node, other objects refused', () => {
    const slices = slicesFromFile(
      file(
        'ok.yaml',
        'apiVersion: v1\nkind: List\nitems:\n- apiVersion: resource.k8s.io/v1\n  kind: ResourceSlice\n  spec: {driver: x, nodeName: old, pool: {name: old, generation: 7, resourceSliceCount: 1}, devices: [{name: gpu-0}]}\n',
      ),
      'n1',
      'gpu.nvidia.com',
    );
    assert.deepEqual(slices[0]?.spec, {
      driver: 'gpu.nvidia.com',
      nodeName: 'n1',
      pool: { name: 'n1', generation: 1, resourceSliceCount: 1 },
      devices: [{ name: 'gpu-0' }],
    });
    assert.equal(slices[0].metadata.generateName, '00000-gpu.nvidia.com-n1-');
    const empty = file('empty.yaml', 'apiVersion: v1\nkind: List\nitems: []\n');
    assert.throws(() => slicesFromFile(empty, 'n1', 'gpu.nvidia.com'), {
      message: `--slices-file: ${empty} holds no ResourceSlice`,
    });
    const pod = file('pod.yaml', 'apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n');
    assert.throws(() => slicesFromFile(pod, 'n1', 'gpu.nvidia.com'), {
      message: `--slices-file: ${pod}: item 0 is a Pod, not a ResourceSlice`,
    });
  });

  it('cluster restart: needs a cluster', async () => {
    const none = join(dir, 'no-cluster');
    await assert.rejects(
      clusterRestart(none, 'kubelet', () => undefined),
      {
        message: `cluster restart: no cluster in ${none}; run "fakegpu cluster up" first`,
      },
    );
  });
});
