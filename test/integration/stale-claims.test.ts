import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Exports } from '../../src/local-cluster/cluster.js';
import { CheckpointStore } from '../../src/node/checkpoint/checkpoint.js';
import { runPlugin } from '../../src/node/plugin/run.js';
import { eventually, kubectl, mustKubectl, testCluster } from '../support/cluster.js';
import { gpuClaim, NODE, nodeState, pluginOptions } from '../support/node-state.js';

/**
 * The plugin started on a checkpoint holding a claim the real API server no longer has. The sequence
 * that left one here: a claim prepared by the plugin run as a host process (its state in
 * `<dir>/plugin`), `cluster up --helm` in the same directory (the chart's plugin keeps its state under
 * the kubelet's plugins folder), the pod deleted there (the kubelet's unprepare reaches the chart's
 * plugin, which never held it), then `cluster up` as host processes again: the first plugin's checkpoint
 * still held the claim, and a new pod on its GPU waited with "already allocated to different claim".
 */

const claimObject = (name: string): string =>
  JSON.stringify({
    apiVersion: 'resource.k8s.io/v1',
    kind: 'ResourceClaim',
    metadata: { name, namespace: 'default' },
    spec: { devices: { requests: [{ name: 'gpu', exactly: { deviceClassName: 'gpu.nvidia.com' } }] } },
  });

describe('stale claims on the real API server', () => {
  let e: Exports;
  before(async () => {
    e = await testCluster();
  });
  after(() => {
    kubectl(e, [
      'delete',
      'resourceclaim',
      '-n',
      'default',
      '--ignore-not-found',
      'stale-live',
      'stale-gone',
    ]);
    kubectl(e, [
      'delete',
      'resourceslice',
      '--field-selector',
      `spec.nodeName=${NODE}`,
      '--ignore-not-found',
    ]);
  });

  it("frees the devices of a claim the API server no longer has, and keeps a live claim's", async () => {
    const uidOf = (name: string): string => {
      mustKubectl(e, ['create', '-f', '-'], claimObject(name));
      return mustKubectl(e, [
        'get',
        'resourceclaim',
        '-n',
        'default',
        name,
        '-o',
        'jsonpath={.metadata.uid}',
      ]);
    };
    const live = uidOf('stale-live');
    const gone = uidOf('stale-gone');
    const root = mkdtempSync(join(tmpdir(), 'fakegpu-stale-it-'));
    const { state } = nodeState(root, 'dgx-h100', false);
    await state.prepare({
      ...gpuClaim(live, ['gpu-0']),
      metadata: { name: 'stale-live', namespace: 'default', uid: live },
    });
    await state.prepare({
      ...gpuClaim(gone, ['gpu-1']),
      metadata: { name: 'stale-gone', namespace: 'default', uid: gone },
    });
    // Its kubelet unprepare went to another plugin: the API server forgets it, the checkpoint does not.
    mustKubectl(e, ['delete', 'resourceclaim', '-n', 'default', 'stale-gone', '--wait']);

    const plugin = await runPlugin(pluginOptions(root, e.KUBECONFIG));
    try {
      const held = (): string[] =>
        new CheckpointStore(join(root, 'state', 'checkpoint.json')).all().map(([uid]) => uid);
      await eventually(
        'the stale claim unprepared',
        () => (held().includes(gone) ? undefined : true),
        30_000,
      );
      assert.deepEqual(held(), [live], 'the live claim stays prepared');
      assert.ok(!existsSync(join(root, 'state', 'claims', gone)), 'its views are gone');
      assert.deepEqual(
        readdirSync(join(root, 'cdi')).filter((f) => f.includes(gone)),
        [],
        'its CDI spec is gone',
      );
      assert.ok(existsSync(join(root, 'state', 'claims', live)), "the live claim's views stay");
    } finally {
      await plugin.stop();
    }
  });
});
